/*
 * The real-input DFT behind power_spectrum and spectrogram: |X_k|^2 or |X_k| for
 * k = 0 .. n/2 of n real samples, float64 throughout so that the results agree with
 * NumPy's rfft to float32 precision.
 *
 * STK__RFFT_LANES signals are transformed at once, one per SIMD lane (the frames of a
 * spectrogram, the lines of power_spectrum): every lane does the same scalar operations
 * in the same order, so a signal's result does not depend on its lane, its neighbours or
 * the CPU's vector width. When n is a power of two (n >= 2) the n real samples are one
 * complex FFT of n/2 points (decimation in time: the bit-reversed packing fused with the
 * first two stages, the others two at a time) and a split step; any other n takes a
 * direct DFT over a cosine/sine table (O(n^2)).
 *
 * A plan is read-only once made: threads may share it, each with its own scratch.
 */
#ifndef STOKER_OPS_AUDIO_FFT_H
#define STOKER_OPS_AUDIO_FFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STK__RFFT_LANES 4

typedef struct {
  int64_t n;
  bool fast;             /* n is a power of two >= 2 */
  double *cos_t, *sin_t; /* direct DFT: n entries, cos(2 pi j / n), sin(2 pi j / n) */
  int64_t half;          /* fast: n / 2, the complex FFT's points */
  int32_t *rev;          /* fast: bit reversal of log2(half) bits, half entries */
  double *tw;            /* fast: stage by stage, the twiddles (cos, -sin of 2 pi j / len) of the
                          * butterflies of span len / 2 at offset 2 (len / 2 - 1) */
  double *root;          /* fast: cos, -sin of 2 pi k / n for k = 0 .. half (the split step) */
} stk__rfft_plan;

/* Makes a plan for n >= 1 points; false when out of memory (the plan is then empty). */
bool stk__rfft_plan_init(stk__rfft_plan *p, int64_t n);
/* Frees a plan's tables; a zeroed or freed plan may be freed again. */
void stk__rfft_plan_free(stk__rfft_plan *p);
/* Scratch doubles that stk__rfft_spectra needs for this plan. */
size_t stk__rfft_scratch_doubles(const stk__rfft_plan *p);
/* Interleaves STK__RFFT_LANES signals for stk__rfft_spectra: buf[t * LANES + l] =
 * src[l][t] * window[t] for t < len, 0 for len <= t < n (buf: n x LANES doubles). */
void stk__rfft_load(const stk__rfft_plan *p, const double *const src[STK__RFFT_LANES],
                    const double *window, int64_t len, double *buf);
/* in: n x STK__RFFT_LANES doubles, in[j * STK__RFFT_LANES + l] = sample j of signal l
 * (lanes >= `used` are computed and dropped: fill them with anything finite, zeros say).
 * Writes |X_k|^power (power 1 or 2), k = 0 .. n/2, of signal l < used to
 * out[k * bin_stride + l * lane_stride] as float32. */
void stk__rfft_spectra(const stk__rfft_plan *p, const double *in, int used, int power, float *out,
                       int64_t bin_stride, int64_t lane_stride, double *scratch);

#endif /* STOKER_OPS_AUDIO_FFT_H */
