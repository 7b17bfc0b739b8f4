/*
 * Per-box and per-point arithmetic of bb_flip, bbox_paste and coord_flip, in a form the
 * CUDA kernels can share with the CPU operators (src/ops/boxes.c): STK_HD functions of
 * one box or point, float32 throughout, every product and sum through the explicitly
 * rounded STK_F* macros so the device cannot fuse them into an fma.
 */
#ifndef STOKER_SHARED_BOX_MATH_H
#define STOKER_SHARED_BOX_MATH_H

#include "gpu_common.h"

#ifndef __CUDACC__
#include <math.h>
#endif

#ifndef __cplusplus
#include <stdbool.h>
#endif

#if defined(__CUDA_ARCH__)
#define STK_BFSUB(a, b) __fsub_rn((a), (b))
#else
#define STK_BFSUB(a, b) ((a) - (b))
#endif

/* Mirrors one relative box in place along x when `h`, along y when `v`: [l, r] ->
 * [1 - r, 1 - l]. Boxes [x, y, w, h] go through ltrb and back, on both axes, flipped or
 * not (DALI's rounding: w becomes (x + w) - x). */
STK_HD void stk__bb_flip_one(float *b, bool ltrb, bool h, bool v) {
  if (!ltrb) b[2] = STK_FADD(b[0], b[2]), b[3] = STK_FADD(b[1], b[3]);
  for (int a = 0; a < 2; a++) {
    if (!(a == 0 ? h : v)) continue;
    float lo = b[a], hi = b[a + 2];
    b[a] = STK_BFSUB(1.0f, hi), b[a + 2] = STK_BFSUB(1.0f, lo);
  }
  if (!ltrb) b[2] = STK_BFSUB(b[2], b[0]), b[3] = STK_BFSUB(b[3], b[1]);
}

/* The offsets of a paste at (px, py) into a canvas `ratio` times larger: p * (1 - 1 / ratio)
 * in double, rounded once (DALI's rounding). */
STK_HD void stk__bbox_paste_offsets(double ratio, double px, double py, float off[2]) {
  double margin = STK_DSUB(1.0, 1.0 / ratio);
  off[0] = (float)STK_DMUL(px, margin), off[1] = (float)STK_DMUL(py, margin);
}

/* Moves one relative box into the canvas: coordinates c * (1 / ratio) + offset, sizes
 * s * (1 / ratio), in float. */
STK_HD void stk__bbox_paste_one(float *b, bool ltrb, float inv_ratio, const float off[2]) {
  for (int k = 0; k < 4; k++) {
    float c = STK_FMUL(b[k], inv_ratio);
    b[k] = (k < 2 || ltrb) ? STK_FADD(c, off[k & 1]) : c;
  }
}

typedef struct {
  bool flip[3];    /* x, y, z */
  float center[3]; /* x, y, z */
} stk__coord_flip_spec;

/* Mirrors one point of d coordinates, axes[k] the axis of coordinate k. */
STK_HD void stk__coord_flip_one(float *p, int d, const int *axes, const stk__coord_flip_spec *f) {
  for (int k = 0; k < d; k++)
    if (f->flip[axes[k]]) p[k] = STK_BFSUB(STK_FMUL(2.0f, f->center[axes[k]]), p[k]);
}

/* The most coordinates coord_transform takes in or gives out. */
#define STK__CT_MAX_DIM 16

/* coord_transform of one point: y[i] = (m[i][0] x[0] + ... + m[i][d-1] x[d-1]) + t[i], in
 * float32 in that order (m row-major, o x d). */
STK_HD void stk__coord_transform_one(const float *m, const float *t, int o, int d, const float *x,
                                     float *y) {
  for (int i = 0; i < o; i++) {
    float acc = 0.0f;
    for (int j = 0; j < d; j++) acc = STK_FADD(acc, STK_FMUL(m[i * d + j], x[j]));
    y[i] = STK_FADD(acc, t[i]);
  }
}

/* ---- box_encoder ---- */

typedef struct {
  float criteria, scale, means[4], stds[4];
  int offset; /* non-zero: normalised offsets instead of [cx, cy, w, h] */
} stk__box_encoding;

STK_HD float stk__box_area(const float *b) {
  float w = STK_BFSUB(b[2], b[0]), h = STK_BFSUB(b[3], b[1]);
  return w > 0 && h > 0 ? STK_FMUL(w, h) : 0.0f;
}

/* Intersection over union of two ltrb boxes (0 when disjoint or degenerate). */
STK_HD float stk__box_iou(const float *a, const float *b) {
  float l = fmaxf(a[0], b[0]), t = fmaxf(a[1], b[1]);
  float r = fminf(a[2], b[2]), bt = fminf(a[3], b[3]);
  if (r <= l || bt <= t) return 0.0f;
  float inter = STK_FMUL(STK_BFSUB(r, l), STK_BFSUB(bt, t));
  float uni = STK_BFSUB(STK_FADD(stk__box_area(a), stk__box_area(b)), inter);
  return uni > 0 ? inter / uni : 0.0f;
}

/* [cx, cy, w, h] of an ltrb box, each value times `s`. */
STK_HD void stk__box_center(const float *b, float s, float *out) {
  out[0] = STK_FMUL(STK_FMUL(0.5f, STK_FADD(b[0], b[2])), s);
  out[1] = STK_FMUL(STK_FMUL(0.5f, STK_FADD(b[1], b[3])), s);
  out[2] = STK_FMUL(STK_BFSUB(b[2], b[0]), s), out[3] = STK_FMUL(STK_BFSUB(b[3], b[1]), s);
}

/* One anchor's output: the matched box (or, unmatched, the anchor) as [cx, cy, w, h], or
 * its offsets from the anchor (all zero when unmatched). logf may differ by an ulp
 * between host and device. */
STK_HD void stk__box_encode(const stk__box_encoding *e, const float *box, const float *anchor,
                            bool matched, float *out) {
  if (!e->offset) {
    stk__box_center(matched ? box : anchor, 1.0f, out);
    return;
  }
  if (!matched) {
    for (int k = 0; k < 4; k++) out[k] = 0.0f;
    return;
  }
  float b[4], a[4];
  stk__box_center(box, e->scale, b);
  stk__box_center(anchor, e->scale, a);
  float v[4] = {STK_BFSUB(b[0], a[0]) / a[2], STK_BFSUB(b[1], a[1]) / a[3], logf(b[2] / a[2]),
                logf(b[3] / a[3])};
  for (int k = 0; k < 4; k++) out[k] = STK_BFSUB(v[k], e->means[k]) / e->stds[k];
}

#endif /* STOKER_SHARED_BOX_MATH_H */
