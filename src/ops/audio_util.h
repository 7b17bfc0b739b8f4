/* Helpers shared by the audio operators (audio_*.c). */
#ifndef STOKER_OPS_AUDIO_UTIL_H
#define STOKER_OPS_AUDIO_UTIL_H

#include "image_util.h"

/* The largest FFT the operators accept (their plans and frames are O(nfft) memory). */
#define STK__AUDIO_MAX_NFFT (1 << 22)

/* The number of elements of a tensor. */
static inline int64_t stk__audio_numel(const stk__tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* The input's elements as float64 in scratch memory (any numeric type). */
static inline stk_status stk__audio_doubles(const stk__node *node, stk__sample *s,
                                            const stk__tensor *in, const double **out) {
  if (!stk__dtype_valid(in->dtype) || in->dtype == STK_DTYPE_BOOL)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "needs a numeric input");
  int64_t n = stk__audio_numel(in);
  if (in->dtype == STK_DTYPE_FLOAT64) {
    *out = in->data;
    return STK_OK;
  }
  double *d = stk__scratch(s, sizeof(double) * (size_t)(n ? n : 1));
  if (!d) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  if (in->dtype == STK_DTYPE_FLOAT32) {
    /* the decoders' and spectral operators' output: blocks of 8 that the compiler
     * vectorises at -O2 (stk__convert goes element by element through a dispatch) */
    const float *f = in->data;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; l++) d[i + l] = f[i + l];
    for (; i < n; i++) d[i] = f[i];
  } else {
    stk__convert(d, STK_DTYPE_FLOAT64, in->data, in->dtype, (size_t)n);
  }
  *out = d;
  return STK_OK;
}

#endif /* STOKER_OPS_AUDIO_UTIL_H */
