/* What the box operators share: the input check and the loops over boxes and points of
 * src/shared/box_math.h. */
#ifndef STOKER_OPS_BOX_UTIL_H
#define STOKER_OPS_BOX_UTIL_H

#include <string.h>

#include "../shared/box_math.h"
#include "image_util.h"

/* Checks that `in` holds float32 boxes of `coords` values each ([N, coords], or a flat
 * list of a multiple of coords) and sets *n to their count. */
static inline stk_status stk__box_input(const stk__node *node, const stk__sample *s,
                                        const stk__tensor *in, int coords, int64_t *n) {
  bool ok = in->dtype == STK_DTYPE_FLOAT32 && ((in->ndim == 2 && in->shape[1] == coords) ||
                                               (in->ndim == 1 && in->shape[0] % coords == 0));
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects float32 boxes [N, %d]; got %d dimensions (last %lld) of %s", coords,
                      in->ndim, (long long)(in->ndim ? in->shape[in->ndim - 1] : 0),
                      stk_dtype_name(in->dtype));
  *n = (in->ndim == 2 ? in->shape[0] : in->shape[0] / coords);
  return STK_OK;
}

static inline void stk__bb_flip(const float *in, float *out, int64_t n, bool ltrb, bool h, bool v) {
  memcpy(out, in, (size_t)n * 4 * sizeof *out);
  for (int64_t i = 0; i < n; i++) stk__bb_flip_one(out + 4 * i, ltrb, h, v);
}

static inline void stk__bbox_paste(const float *in, float *out, int64_t n, bool ltrb, double ratio,
                                   double px, double py) {
  float off[2], inv = 1.0f / (float)ratio;
  stk__bbox_paste_offsets(ratio, px, py, off);
  memcpy(out, in, (size_t)n * 4 * sizeof *out);
  for (int64_t i = 0; i < n; i++) stk__bbox_paste_one(out + 4 * i, ltrb, inv, off);
}

static inline void stk__coord_flip(const float *in, float *out, int64_t n, int d, const int *axes,
                                   const stk__coord_flip_spec *f) {
  memcpy(out, in, (size_t)n * (size_t)d * sizeof *out);
  for (int64_t i = 0; i < n; i++) stk__coord_flip_one(out + (size_t)d * i, d, axes, f);
}

#endif /* STOKER_OPS_BOX_UTIL_H */
