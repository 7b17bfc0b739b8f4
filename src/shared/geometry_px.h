/*
 * Per-pixel arithmetic of the affine warp (rotate, warp_affine) and of grid_mask, shared
 * by the CPU operators (geometry.c, occlusion.c) and the CUDA kernels
 * (src/cuda/geometry.cu), so that both backends compute the same coordinates, taps and
 * weights by construction (see geometry.h for the conventions).
 *
 * Common subset of C11 and C++: STK_HD is `static inline` on the host and
 * `static inline __host__ __device__` under nvcc. Every double and float step that must
 * round as on the CPU goes through STK_DMUL / STK_DADD / ... (gpu_common.h), which are
 * plain operators on the host and the explicitly rounded intrinsics on the device (nvcc
 * would otherwise fuse a * b + c into one fma; the x86-64 baseline the CPU library is
 * built for has none). Given the same inputs, the device then produces bit-identical
 * coordinates, weights and float sums.
 */
#ifndef STOKER_OPS_GEOMETRY_PX_H
#define STOKER_OPS_GEOMETRY_PX_H

#include "gpu_common.h"

#if defined(__CUDA_ARCH__)
#define STK_FSUB(a, b) __fsub_rn((a), (b))
#define STK_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define STK_FSUB(a, b) ((a) - (b))
#define STK_DDIV(a, b) ((a) / (b))
#endif

/* ---------------------------------------------------------------------------------- */
/* Affine warp                                                                        */
/* ---------------------------------------------------------------------------------- */

/* Keeps a coordinate (NaN included) within `margin` pixels of an axis of n pixels so it
 * converts to an integer safely; beyond that every tap is outside and the result is the
 * same. */
STK_HD double stk_warp_tame(double v, long long n, double margin) {
  if (!(v > -margin)) return -margin;
  if (!(v < (double)n + margin)) return (double)n + margin;
  return v;
}

/* floor() of a tamed coordinate without a libm call. */
STK_HD long long stk_warp_floor(double v) {
  long long i = (long long)v;
  return i - (v < (double)i);
}

/* Source edge coordinates of the centre of the first pixel of output row y: (sx, sy) =
 * m * (0.5, y + 0.5). Pixel x of the row is at stk_warp_step(sx, m[0], x), ... */
STK_HD void stk_warp_row_origin(const double m[6], long long y, double *sx, double *sy) {
  double yc = STK_DADD((double)y, 0.5);
  *sx = STK_DADD(STK_DADD(STK_DMUL(m[0], 0.5), STK_DMUL(m[1], yc)), m[2]);
  *sy = STK_DADD(STK_DADD(STK_DMUL(m[3], 0.5), STK_DMUL(m[4], yc)), m[5]);
}

/* start + step * i: the coordinate of pixel i of a row. */
STK_HD double stk_warp_step(double start, double step, long long i) {
  return STK_DADD(start, STK_DMUL(step, (double)i));
}

/* nearest: the source pixel holding the point (x, y) (edge coordinates); may be outside. */
STK_HD void stk_warp_nearest(double x, double y, long long w, long long h, long long *xi,
                             long long *yi) {
  *xi = stk_warp_floor(stk_warp_tame(x, w, 2.0));
  *yi = stk_warp_floor(stk_warp_tame(y, h, 2.0));
}

/* linear: top-left tap (x0, y0) of the 2x2 neighbourhood of the point and the weights of
 * the right / lower taps. */
STK_HD void stk_warp_linear_setup(double x, double y, long long w, long long h, long long *x0,
                                  long long *y0, float *ax, float *ay) {
  double u = stk_warp_tame(STK_DSUB(x, 0.5), w, 3.0);
  double v = stk_warp_tame(STK_DSUB(y, 0.5), h, 3.0);
  *x0 = stk_warp_floor(u);
  *y0 = stk_warp_floor(v);
  *ax = (float)STK_DSUB(u, (double)*x0);
  *ay = (float)STK_DSUB(v, (double)*y0);
}

/* a + (b - a) * t in float32, rounded step by step. */
STK_HD float stk_warp_lerp(float a, float b, float t) {
  return STK_FADD(a, STK_FMUL(STK_FSUB(b, a), t));
}

/* Bilinear value from the four taps (top-left, top-right, bottom-left, bottom-right). */
STK_HD float stk_warp_bilinear(float tl, float tr, float bl, float br, float ax, float ay) {
  float t = stk_warp_lerp(tl, tr, ax), b = stk_warp_lerp(bl, br, ax);
  return stk_warp_lerp(t, b, ay);
}

/* Keys' cubic (a = -0.5) at offset d, as resample.h's filter, rounded step by step. */
STK_HD double stk_warp_keys(double d) {
  const double a = -0.5;
  double x = fabs(d);
  if (x < 1.0)
    return STK_DADD(STK_DMUL(STK_DMUL(STK_DSUB(STK_DMUL(a + 2.0, x), a + 3.0), x), x), 1.0);
  if (x < 2.0)
    return STK_DSUB(STK_DMUL(STK_DADD(STK_DMUL(STK_DSUB(STK_DMUL(a, x), 5.0 * a), x), 8.0 * a), x),
                    4.0 * a);
  return 0.0;
}

/* cubic: top-left tap (x0, y0) of the 4x4 neighbourhood and the float weights. */
STK_HD void stk_warp_cubic_setup(double x, double y, long long w, long long h, long long *x0,
                                 long long *y0, float wx[4], float wy[4]) {
  double u = stk_warp_tame(STK_DSUB(x, 0.5), w, 4.0);
  double v = stk_warp_tame(STK_DSUB(y, 0.5), h, 4.0);
  *x0 = stk_warp_floor(u) - 1;
  *y0 = stk_warp_floor(v) - 1;
  for (int k = 0; k < 4; k++) {
    wx[k] = (float)stk_warp_keys(STK_DSUB(u, (double)(*x0 + k)));
    wy[k] = (float)stk_warp_keys(STK_DSUB(v, (double)(*y0 + k)));
  }
}

/* One step of a cubic sum: acc + w * v in float32 (no fused multiply-add). */
STK_HD float stk_warp_mac(float acc, float w, float v) { return STK_FADD(acc, STK_FMUL(w, v)); }

/* ---------------------------------------------------------------------------------- */
/* grid_mask                                                                          */
/* ---------------------------------------------------------------------------------- */

/* Whether pixel (x, y) is kept: with u = (x ca - y sa - sx) / tile and v = (x sa + y ca -
 * sy) / tile (ca, sa: cos and sin of the angle), kept when frac(u) >= ratio or frac(v) >=
 * ratio. Float64, each step rounded. */
STK_HD int stk_grid_keep(long long x, long long y, double ca, double sa, double sx, double sy,
                         double tile, double ratio) {
  double fx = (double)x, fy = (double)y;
  double u = STK_DDIV(STK_DSUB(STK_DSUB(STK_DMUL(fx, ca), STK_DMUL(fy, sa)), sx), tile);
  double v = STK_DDIV(STK_DSUB(STK_DADD(STK_DMUL(fx, sa), STK_DMUL(fy, ca)), sy), tile);
  return STK_DSUB(u, floor(u)) >= ratio || STK_DSUB(v, floor(v)) >= ratio;
}

#endif /* STOKER_OPS_GEOMETRY_PX_H */
