/*
 * The real-input DFT behind power_spectrum and spectrogram: |X_k|^2 or |X_k| for
 * k = 0 .. n/2 of n real samples. Radix-2 iterative FFT when n is a power of two, a
 * direct DFT over a cosine/sine table otherwise (any n, O(n^2)); float64 throughout so
 * both agree with NumPy's rfft to float32 precision.
 */
#ifndef STOKER_OPS_AUDIO_FFT_H
#define STOKER_OPS_AUDIO_FFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int64_t n;
  int pow2;
  double *cos_t, *sin_t; /* n entries: cos(2 pi j / n), sin(2 pi j / n) */
  int64_t *bitrev;       /* pow2 only */
} stk__rfft_plan;

/* Makes a plan for n >= 1 points; false when out of memory. */
bool stk__rfft_plan_init(stk__rfft_plan *p, int64_t n);
void stk__rfft_plan_free(stk__rfft_plan *p);
/* Scratch doubles that stk__rfft_spectrum needs for this plan. */
size_t stk__rfft_scratch_doubles(const stk__rfft_plan *p);
/* in: n real samples; out: n/2 + 1 values, |X_k|^power (power 1 or 2), written with
 * stride `out_stride` (in elements). */
void stk__rfft_spectrum(const stk__rfft_plan *p, const double *in, int power, float *out,
                        int64_t out_stride, double *scratch);

#endif /* STOKER_OPS_AUDIO_FFT_H */
