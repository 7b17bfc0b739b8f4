/* The audio resampler (audio_resample.h). */
#include "audio_resample.h"

#include <math.h>
#include <stdlib.h>

#include "../shared/audio_math.h"

#define TABLE_PER_LOBE 512

int stk__audio_lobes(double quality) {
  if (quality < 0) quality = 0;
  if (quality > 100) quality = 100;
  /* 3 lobes at quality 0, 16 at the default 50, 64 at 100 */
  int lobes = (int)lround(0.007 * quality * quality - 0.09 * quality + 3);
  return lobes < 1 ? 1 : lobes;
}

int64_t stk__audio_resample_length(int64_t n, double in_rate, double out_rate) {
  double len = ceil((double)n * out_rate / in_rate - 1e-9);
  return len < 0 ? 0 : (int64_t)len;
}

/* sinc(x) windowed by a Hann window reaching zero at |x| = lobes, sampled every
 * 1 / TABLE_PER_LOBE for x in [0, lobes] (one extra entry for the interpolation). */
static float *kernel_table(int lobes) {
  int64_t size = (int64_t)lobes * TABLE_PER_LOBE + 2;
  float *t = malloc(sizeof(float) * (size_t)size);
  if (!t) return NULL;
  for (int64_t i = 0; i < size; i++) {
    double x = (double)i / TABLE_PER_LOBE;
    double sinc = i == 0 ? 1.0 : sin(STK_AUDIO_PI * x) / (STK_AUDIO_PI * x);
    double w = x >= lobes ? 0.0 : 0.5 * (1.0 + cos(STK_AUDIO_PI * x / lobes));
    t[i] = (float)(sinc * w);
  }
  return t;
}

static double kernel_at(const float *t, double x) {
  double p = fabs(x) * TABLE_PER_LOBE;
  int64_t i = (int64_t)p;
  double f = p - (double)i;
  return t[i] + (t[i + 1] - t[i]) * f;
}

bool stk__audio_resample(const double *in, int64_t n, int channels, double in_rate, double out_rate,
                         double quality, double *out, int64_t out_n) {
  int lobes = stk__audio_lobes(quality);
  float *table = kernel_table(lobes);
  if (!table) return false;
  double step = in_rate / out_rate;          /* input samples per output sample */
  double fc = step > 1.0 ? 1.0 / step : 1.0; /* cut-off relative to the input Nyquist */
  double reach = lobes / fc;
  for (int64_t j = 0; j < out_n; j++) {
    double p = (double)j * step;
    int64_t lo = (int64_t)ceil(p - reach), hi = (int64_t)floor(p + reach);
    if (lo < 0) lo = 0;
    if (hi > n - 1) hi = n - 1;
    for (int c = 0; c < channels; c++) out[j * channels + c] = 0.0;
    for (int64_t i = lo; i <= hi; i++) {
      double d = (p - (double)i) * fc;
      if (fabs(d) >= lobes) continue;
      double w = fc * kernel_at(table, d);
      for (int c = 0; c < channels; c++) out[j * channels + c] += w * in[i * channels + c];
    }
  }
  free(table);
  return true;
}
