/* The audio resampler (audio_resample.h). */
#include "audio_resample.h"

#include <math.h>
#include <stdlib.h>

#include "../shared/audio_signal_math.h"

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

float *stk__audio_resample_table(int lobes) {
  int64_t size = stk_resample_table_len(lobes);
  float *t = malloc(sizeof(float) * (size_t)size);
  if (!t) return NULL;
  for (int64_t i = 0; i < size; i++) t[i] = stk_resample_table_entry(i, lobes);
  return t;
}

bool stk__audio_resample(const double *in, int64_t n, int channels, double in_rate, double out_rate,
                         double quality, double *out, int64_t out_n) {
  int lobes = stk__audio_lobes(quality);
  float *table = stk__audio_resample_table(lobes);
  if (!table) return false;
  stk_resample_geom g = stk_resample_geometry(in_rate, out_rate, lobes);
  for (int64_t j = 0; j < out_n; j++) {
    int64_t lo, hi;
    stk_resample_range(&g, j, n, &lo, &hi);
    for (int c = 0; c < channels; c++) out[j * channels + c] = 0.0;
    for (int64_t i = lo; i <= hi; i++) {
      double w = stk_resample_weight(&g, table, lobes, j, i);
      if (w == 0.0) continue;
      for (int c = 0; c < channels; c++) out[j * channels + c] += w * in[i * channels + c];
    }
  }
  free(table);
  return true;
}
