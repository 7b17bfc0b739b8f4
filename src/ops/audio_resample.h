/*
 * Band-limited resampling of audio (audio_resample, decoders.audio, readers.nemo_asr):
 * a Hann-windowed sinc, low-pass at the lower of the two Nyquist frequencies, read from a
 * table with linear interpolation. Output sample j lies at input position j * in / out;
 * samples outside the signal count as zeros.
 */
#ifndef STOKER_OPS_AUDIO_RESAMPLE_H
#define STOKER_OPS_AUDIO_RESAMPLE_H

#include <stdbool.h>
#include <stdint.h>

/* Zero crossings on each side of the kernel for a quality in [0, 100]. */
int stk__audio_lobes(double quality);
/* The output length for n input samples: ceil(n * out_rate / in_rate). */
int64_t stk__audio_resample_length(int64_t n, double in_rate, double out_rate);
/* The windowed-sinc table of a kernel with `lobes` zero crossings (malloc'd; NULL when
 * out of memory): the CPU resampler's and the GPU kernel's. */
float *stk__audio_resample_table(int lobes);
/* Resamples `channels` interleaved channels of n frames (float64) into out_n frames.
 * Returns false when out of memory (the kernel table). */
bool stk__audio_resample(const double *in, int64_t n, int channels, double in_rate, double out_rate,
                         double quality, double *out, int64_t out_n);

#endif /* STOKER_OPS_AUDIO_RESAMPLE_H */
