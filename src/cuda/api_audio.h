/* The GPU entry points of the audio operators: spectrogram, mel_filter_bank, mfcc,
 * to_decibels, preemphasis_filter. Launched through gpu_api.h's launch() (ids and typed launchers
 * in gpu_kernels.h); implemented in src/cuda/audio.cu. The same conventions as gpu_api.h: every
 * function returns 0 or a stk_status with the message in err, queues its work on `stream` and never
 * synchronises. Inputs and outputs are dense float32 device tensors; the coefficients (filter
 * banks, DCT matrices, windows, DFT twiddles) are computed on the host by the CPU operators' own
 * functions (src/shared/audio_math.h) and passed as host arrays, uploaded with the descriptors.
 * Sums are in float64 like the CPU's. */
#ifndef STOKER_CUDA_API_AUDIO_H
#define STOKER_CUDA_API_AUDIO_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[o, m, i] = sum_k weights[m * len + k] * in[o, k, i] (mel_filter_bank, mfcc). */
typedef struct {
  const float *src;
  float *dst;
  int64_t outer, len, inner, rows;
  const double *weights; /* host, rows x len */
} stk_gpu_audio_matrix_sample;

/* y[t] = x[t] - coeff * x[t-1]; x[-1] = `prev` (the border value chosen on the host). */
typedef struct {
  const float *src;
  float *dst;
  int64_t count;
  double coeff;
  int border; /* 0 zero, 1 clamp (x[0]), 2 reflect (x[1]) */
} stk_gpu_preemph_sample;

/* multiplier * log10(max(x / ref, min_ratio)); ref <= 0: the sample's maximum. */
typedef struct {
  const float *src;
  float *dst;
  int64_t count;
  double multiplier, ref, min_ratio;
} stk_gpu_decibels_sample;

/* |DFT|^power of frames of a 1-D signal: frame f covers padded samples
 * [f * step, f * step + wl), the signal padded on the left by `pad` (reflect or zeros),
 * multiplied by window, zero-padded to nfft; bins 0 .. nfft/2. Output "ft"
 * ([bins, frames]) or "tf". */
typedef struct {
  const float *src;
  float *dst;
  int64_t n, nfft, wl, step, frames, pad;
  int reflect, power, tf;
  const double *window; /* host, wl values */
} stk_gpu_spectrogram_sample;

/* The kernels (all without batch arguments):
 * - audio_matrix: mel_filter_bank / mfcc, a matrix along one axis of each sample;
 * - audio_preemph: preemphasis_filter;
 * - audio_decibels: to_decibels;
 * - audio_spectrogram: the DFT tables (cos, sin of 2 pi j / nfft, nfft each) of every
 *   sample's nfft are computed on the host, as the CPU's FFT plan does.
 */
#define STK_GPU_KERNELS_AUDIO(X)                                              \
  X(AUDIO_MATRIX, audio_matrix, stk_gpu_audio_matrix_sample, stk_gpu_no_args) \
  X(AUDIO_PREEMPH, audio_preemph, stk_gpu_preemph_sample, stk_gpu_no_args)    \
  X(AUDIO_DECIBELS, audio_decibels, stk_gpu_decibels_sample, stk_gpu_no_args) \
  X(AUDIO_SPECTROGRAM, audio_spectrogram, stk_gpu_spectrogram_sample, stk_gpu_no_args)

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_API_AUDIO_H */
