/*
 * The per-element maths of the audio operators (src/ops/audio_*.c): windows, the mel
 * scales, the DCT of mfcc, decibels and the pre-emphasis filter. C11 and CUDA C++ at
 * once (STK_AHD), so a GPU backend computes every coefficient with the functions the CPU
 * tests check against NumPy and DALI.
 *
 * Conventions are librosa's as DALI documents them: the Hann window is periodic with a
 * half-sample offset (DALI's), the mel scale is Slaney's (linear below 1 kHz, logarithmic
 * above) or HTK's, the DCT is unnormalised or orthonormal.
 */
#ifndef STOKER_SHARED_AUDIO_MATH_H
#define STOKER_SHARED_AUDIO_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define STK_AHD static inline __host__ __device__
#else
#define STK_AHD static inline
#endif

#define STK_AUDIO_PI 3.14159265358979323846

/* Element t of DALI's Hann window of n points: 0.5 (1 - cos(2 pi (t + 0.5) / n)). */
STK_AHD double stk_audio_hann(int64_t t, int64_t n) {
  return 0.5 * (1.0 - cos(2.0 * STK_AUDIO_PI * ((double)t + 0.5) / (double)n));
}

/* Slaney's mel scale: linear (200/3 Hz per mel) up to 1 kHz, then logarithmic with a
 * step of ln(6.4) / 27 per mel. */
#define STK_MEL_SLANEY_FSP      (200.0 / 3.0)
#define STK_MEL_SLANEY_MIN_LOG  1000.0
#define STK_MEL_SLANEY_LOG_STEP 0.06875177742094912 /* ln(6.4) / 27 */

STK_AHD double stk_hz_to_mel(double hz, int htk) {
  if (htk) return 2595.0 * log10(1.0 + hz / 700.0);
  const double min_log_mel = STK_MEL_SLANEY_MIN_LOG / STK_MEL_SLANEY_FSP;
  if (hz >= STK_MEL_SLANEY_MIN_LOG)
    return min_log_mel + log(hz / STK_MEL_SLANEY_MIN_LOG) / STK_MEL_SLANEY_LOG_STEP;
  return hz / STK_MEL_SLANEY_FSP;
}

STK_AHD double stk_mel_to_hz(double mel, int htk) {
  if (htk) return 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
  const double min_log_mel = STK_MEL_SLANEY_MIN_LOG / STK_MEL_SLANEY_FSP;
  if (mel >= min_log_mel)
    return STK_MEL_SLANEY_MIN_LOG * exp(STK_MEL_SLANEY_LOG_STEP * (mel - min_log_mel));
  return STK_MEL_SLANEY_FSP * mel;
}

/* Weight of the FFT bin at frequency `f` in the triangular filter with corners lo, mid,
 * hi (Hz); `norm` scales it by 2 / (hi - lo) (Slaney's equal-area normalisation). */
STK_AHD double stk_mel_weight(double f, double lo, double mid, double hi, int norm) {
  double up = (f - lo) / (mid - lo), down = (hi - f) / (hi - mid);
  double w = up < down ? up : down;
  if (!(w > 0.0)) return 0.0;
  return norm ? w * 2.0 / (hi - lo) : w;
}

/* Coefficient (k, n) of the DCT of `len` points: type 2, cos(pi / len (n + 0.5) k), or
 * type 3, x0 / 2 + ..., or type 1; with `ortho` the orthonormal scaling. Types as
 * SciPy's scipy.fftpack.dct defines them (without its factor 2, like DALI). */
STK_AHD double stk_dct_coeff(int type, int64_t k, int64_t n, int64_t len, int ortho) {
  double c;
  if (type == 1) {
    c = cos(STK_AUDIO_PI * (double)(n * k) / (double)(len - 1));
    if (n == 0 || n == len - 1) c *= 0.5;
    if (ortho) {
      c *= sqrt(2.0 / (double)(len - 1));
      if (k == 0 || k == len - 1) c *= sqrt(0.5);
      if (n == 0 || n == len - 1) c *= 2.0 * sqrt(0.5);
    }
    return c;
  }
  if (type == 3) {
    c = cos(STK_AUDIO_PI * ((double)k + 0.5) * (double)n / (double)len);
    if (n == 0) c = ortho ? c : 0.5;
    if (ortho) c *= n == 0 ? sqrt(1.0 / (double)len) : sqrt(2.0 / (double)len);
    return c;
  }
  c = cos(STK_AUDIO_PI / (double)len * ((double)n + 0.5) * (double)k);
  if (ortho) c *= k == 0 ? sqrt(1.0 / (double)len) : sqrt(2.0 / (double)len);
  return c;
}

/* mfcc's liftering factor of coefficient k: 1 + lifter / 2 sin(pi (k + 1) / lifter). */
STK_AHD double stk_lifter(int64_t k, double lifter) {
  if (lifter == 0.0) return 1.0;
  return 1.0 + lifter / 2.0 * sin(STK_AUDIO_PI * ((double)k + 1.0) / lifter);
}

/* to_decibels of one value: multiplier log10(max(x / ref, min_ratio)). */
STK_AHD float stk_to_db(double x, double inv_ref, double min_ratio, double multiplier) {
  double r = x * inv_ref;
  if (!(r > min_ratio)) r = min_ratio;
  return (float)(multiplier * log10(r));
}

/* Index i of a signal of n samples (n >= 1) extended by reflection without repeating the
 * edge sample (NumPy's mode='reflect'); a period of 2 (n - 1) keeps far indices valid. */
STK_AHD int64_t stk_reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

#endif /* STOKER_SHARED_AUDIO_MATH_H */
