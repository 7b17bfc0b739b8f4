/* The GPU entry points of the audio operators: spectrogram, mel_filter_bank, mfcc,
 * to_decibels, preemphasis_filter, audio_resample, nonsilent_region. Launched through gpu_api.h's
 * launch() (ids and typed launchers in gpu_kernels.h); implemented in src/cuda/audio.cu. The same
 * conventions as gpu_api.h: every function returns 0 or a stk_status with the message in err,
 * queues its work on `stream` and never synchronises. Inputs and outputs are dense float32 device
 * tensors; the coefficients (filter banks, DCT matrices, windows, DFT twiddles) are computed on the
 * host by the CPU operators' own functions (src/shared/audio_math.h) and passed as host arrays,
 * uploaded with the descriptors. Sums are in float64 like the CPU's. */
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

/* audio_resample: `channels` interleaved channels of n frames into out_n frames at the
 * rates' ratio (src/shared/audio_signal_math.h: output frame j reads input frames around
 * j * in_rate / out_rate through the windowed sinc). */
typedef struct {
  const float *src;
  float *dst;
  int64_t n, out_n, channels;
  double in_rate, out_rate;
} stk_gpu_resample_audio_sample;

/* The batch's windowed sinc (quality is per operator): `lobes` zero crossings, its
 * table (stk_resample_table_len(lobes) floats, host) made by the CPU's function. */
typedef struct {
  int lobes;
  const float *table;
} stk_gpu_resample_audio_args;

/* nonsilent_region: the moving mean power of windows of `window` samples (restarted every
 * `reset` samples; <= 0: never) against ref * factor, where ref > 0 is the reference power
 * or, when 0, the maximum of the moving mean power, and factor = 10^(cutoff_db / 10)
 * (computed on the host, as the CPU does). Writes the region's first sample and length
 * (0, 0 when all is silent) to two device int32 scalars. */
typedef struct {
  const float *src;
  int32_t *begin, *length;
  int64_t n, window, reset;
  double ref, factor;
} stk_gpu_nonsilent_sample;

/* The kernels (all without batch arguments but audio_resample):
 * - audio_matrix: mel_filter_bank / mfcc, a matrix along one axis of each sample;
 * - audio_preemph: preemphasis_filter;
 * - audio_decibels: to_decibels;
 * - audio_spectrogram: the DFT tables (cos, sin of 2 pi j / nfft, nfft each) of every
 *   sample's nfft are computed on the host, as the CPU's FFT plan does;
 * - audio_resample: one thread per output value;
 * - audio_nonsilent: one thread per reset segment of a sample (the running sum is
 *   sequential), twice: the segments' maxima, then the first and last samples at or
 *   above the threshold.
 */
#define STK_GPU_KERNELS_AUDIO(X)                                                                \
  X(AUDIO_MATRIX, audio_matrix, stk_gpu_audio_matrix_sample, stk_gpu_no_args)                   \
  X(AUDIO_PREEMPH, audio_preemph, stk_gpu_preemph_sample, stk_gpu_no_args)                      \
  X(AUDIO_DECIBELS, audio_decibels, stk_gpu_decibels_sample, stk_gpu_no_args)                   \
  X(AUDIO_SPECTROGRAM, audio_spectrogram, stk_gpu_spectrogram_sample, stk_gpu_no_args)          \
  X(AUDIO_RESAMPLE, audio_resample, stk_gpu_resample_audio_sample, stk_gpu_resample_audio_args) \
  X(AUDIO_NONSILENT, audio_nonsilent, stk_gpu_nonsilent_sample, stk_gpu_no_args)

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_API_AUDIO_H */
