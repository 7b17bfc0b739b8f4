/*
 * The per-element maths of audio_resample and nonsilent_region (src/ops/audio_resample.c,
 * src/ops/audio_signal.c), C11 and CUDA C++ at once (STK_AHD), so the GPU kernels
 * (src/cuda/audio.cu) run the arithmetic the CPU tests check:
 * - the resampler's Hann-windowed sinc, read from a table with linear interpolation, and
 *   the input range each output sample reads;
 * - nonsilent_region's moving mean power, a running sum restarted every reset_interval
 *   samples. A restarted segment depends on nothing before it, so the GPU gives each
 *   segment a thread and still gets the CPU's values to the last bit: the squares are
 *   rounded before they are added (no fused multiply-add on the device either).
 * A signal is read as float32 (`xf`, the GPU's input) or float64 (`xd`, the CPU's): one of
 * the two is NULL; float32 to float64 is exact, so both give the same sums.
 */
#ifndef STOKER_SHARED_AUDIO_SIGNAL_MATH_H
#define STOKER_SHARED_AUDIO_SIGNAL_MATH_H

#include <math.h>
#include <stdint.h>

#include "audio_math.h"

/* ---- audio_resample ---- */

/* Table entries per zero crossing of the windowed sinc. */
#define STK_RESAMPLE_PER_LOBE 512

/* Entries of the table of a kernel with `lobes` zero crossings on each side: x in
 * [0, lobes] every 1 / STK_RESAMPLE_PER_LOBE, one more for the interpolation. */
STK_AHD int64_t stk_resample_table_len(int lobes) {
  return (int64_t)lobes * STK_RESAMPLE_PER_LOBE + 2;
}

/* Entry i: sinc(x) (sin(pi x) / (pi x)) times a Hann window reaching 0 at |x| = lobes. */
STK_AHD float stk_resample_table_entry(int64_t i, int lobes) {
  double x = (double)i / STK_RESAMPLE_PER_LOBE;
  double sinc = i == 0 ? 1.0 : sin(STK_AUDIO_PI * x) / (STK_AUDIO_PI * x);
  double w = x >= lobes ? 0.0 : 0.5 * (1.0 + cos(STK_AUDIO_PI * x / lobes));
  return (float)(sinc * w);
}

/* The kernel at x (|x| < lobes), interpolated linearly between table entries. */
STK_AHD double stk_resample_kernel_at(const float *table, double x) {
  double p = fabs(x) * STK_RESAMPLE_PER_LOBE;
  int64_t i = (int64_t)p;
  double f = p - (double)i;
  return table[i] + (table[i + 1] - table[i]) * f;
}

/* The geometry of one resampling: input samples per output sample, the cut-off relative
 * to the input's Nyquist frequency (the lower of the two), and the kernel's reach in
 * input samples. */
typedef struct {
  double step, fc, reach;
} stk_resample_geom;

STK_AHD stk_resample_geom stk_resample_geometry(double in_rate, double out_rate, int lobes) {
  stk_resample_geom g;
  g.step = in_rate / out_rate;
  g.fc = g.step > 1.0 ? 1.0 / g.step : 1.0;
  g.reach = lobes / g.fc;
  return g;
}

/* The input samples [*lo, *hi] that output sample j of a signal of n samples reads (an
 * empty range when *lo > *hi). */
STK_AHD void stk_resample_range(const stk_resample_geom *g, int64_t j, int64_t n, int64_t *lo,
                                int64_t *hi) {
  double p = (double)j * g->step;
  *lo = (int64_t)ceil(p - g->reach);
  *hi = (int64_t)floor(p + g->reach);
  if (*lo < 0) *lo = 0;
  if (*hi > n - 1) *hi = n - 1;
}

/* The weight of input sample i in output sample j (0 outside the kernel). */
STK_AHD double stk_resample_weight(const stk_resample_geom *g, const float *table, int lobes,
                                   int64_t j, int64_t i) {
  double d = ((double)j * g->step - (double)i) * g->fc;
  if (fabs(d) >= lobes) return 0.0;
  return g->fc * stk_resample_kernel_at(table, d);
}

/* ---- nonsilent_region: the moving mean power ---- */

/* x[i]^2, rounded to float64 (never fused into the addition that follows). */
STK_AHD double stk_mms_square(const float *xf, const double *xd, int64_t i) {
  double v = xf ? (double)xf[i] : xd[i];
#ifdef __CUDA_ARCH__
  return __dmul_rn(v, v);
#else
  return v * v;
#endif
}

STK_AHD double stk_mms_add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

/* The length of the segments (reset <= 0: one segment, the whole signal of n samples). */
STK_AHD int64_t stk_mms_segment_len(int64_t n, int64_t reset) { return reset > 0 ? reset : n; }

/* The running sum at the start of the segment beginning at sample s: the window's
 * samples before s (max(s - window + 1, 0) .. s - 1), summed from scratch. */
STK_AHD double stk_mms_start(const float *xf, const double *xd, int64_t s, int64_t window) {
  double sum = 0.0;
  for (int64_t j = s - window + 1 > 0 ? s - window + 1 : 0; j < s; j++)
    sum = stk_mms_add(sum, stk_mms_square(xf, xd, j));
  return sum;
}

/* One step at sample i of the segment beginning at s: adds x[i]^2, drops the sample
 * leaving the window (except at the segment's start, whose sum was just made exact) and
 * returns the mean power of the window ending at i (zeros before the signal). */
STK_AHD double stk_mms_step(const float *xf, const double *xd, int64_t i, int64_t s, int64_t window,
                            double *sum) {
  *sum = stk_mms_add(*sum, stk_mms_square(xf, xd, i));
  if (i > s && i - window >= 0) *sum = stk_mms_add(*sum, -stk_mms_square(xf, xd, i - window));
  return *sum / (double)window;
}

#endif /* STOKER_SHARED_AUDIO_SIGNAL_MATH_H */
