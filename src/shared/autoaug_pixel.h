/*
 * Per-pixel arithmetic of the automatic-augmentation operations, shared by the CPU
 * fused operator (src/ops/autoaug_kernels.c, color_pil.c) and the GPU program
 * interpreter (src/cuda/autoaug.cu). Written in the common subset of C11 and CUDA C++;
 * every float / double step that the CPU rounds separately goes through STK_FMUL /
 * STK_FADD / STK_DMUL / STK_DADD so nvcc cannot contract it into a fused multiply-add.
 *
 * What is here is exactly what the CPU kernels compute:
 *  - the uint8 stores: float32 -> uint8 as stk__convert's bulk path (v + 0.5f, clamped,
 *    truncated), double -> uint8 as stk__store_double (round half away, saturated);
 *  - Pillow's blend of two values and its luma;
 *  - the table builders of equalize (Pillow, OpenCV) and auto-contrast (Pillow, DALI);
 *  - the affine-warp samplers (nearest, linear, cubic) of geometry.c's warp_affine for
 *    one output pixel, over geometry_px.h's coordinate and weight arithmetic;
 *  - DALI's colour (YIQ saturation) and sharpness (3x3 filter, reflect-101) and Pillow's
 *    sharpness at one element.
 */
#ifndef STOKER_OPS_AUTOAUG_PIXEL_H
#define STOKER_OPS_AUTOAUG_PIXEL_H

#include <math.h>
#include <stdint.h>

#include "gpu_common.h"
#include "color_math.h"
#include "geometry_px.h"

/* ---- stores ---- */

/* stk__convert's float32 -> uint8 (the vectorised path: + 0.5f in float, clamp, trunc). */
STK_HD uint8_t stk_aa_u8_f32(float v) {
  v = STK_FADD(v, 0.5f);
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return (uint8_t)(int32_t)v;
}

/* stk__store_double's double -> uint8: round half away from zero, saturate, NaN -> 0. */
STK_HD uint8_t stk_aa_u8_f64(double v) {
  double r = v != v ? 0.0 : round(v);
  return (uint8_t)(r <= 0.0 ? 0 : r >= 255.0 ? 255 : (int)r);
}

/* ---- Pillow ---- */

/* Pillow's luma, blend and tables are the colour operators' (color_math.h): one
 * definition for the CPU, the colour kernels and this interpreter. */
STK_HD uint8_t stk_aa_pil_luma(uint8_t r, uint8_t g, uint8_t b) {
  return stk_color_pil_luma(r, g, b);
}

STK_HD uint8_t stk_aa_pil_blend(uint8_t a, uint8_t b, float alpha) {
  return stk_color_blend1(a, b, alpha);
}

STK_HD void stk_aa_pil_equalize_lut(const uint64_t *hist, uint8_t *lut) {
  stk_color_pil_equalize_lut(hist, lut);
}

STK_HD void stk_aa_cv_equalize_lut(const uint64_t *hist, uint8_t *lut) {
  stk_color_cv_equalize_lut(hist, lut);
}

/* ImageOps.autocontrast without cutoff (what AutoAugment uses): the histogram is only
 * read when both cutoffs are 0. */
STK_HD void stk_aa_pil_autocontrast_lut(const uint64_t *h, uint8_t *lut) {
  stk_color_autocontrast_lut((uint64_t *)h, 0.0, 0.0, lut);
}

/* DALI's auto_contrast: (x - lo) * (255 / (hi - lo)) in float32, rounded (one value
 * through stk__convert: stk__store_double); a channel with one value is kept. */
STK_HD void stk_aa_dali_autocontrast_lut(const uint64_t *hist, uint8_t *lut) {
  int lo = 0, hi = 255;
  while (lo < 255 && hist[lo] == 0) lo++;
  while (hi > 0 && hist[hi] == 0) hi--;
  float scale = hi > lo ? 255.0f / (float)(hi - lo) : 1.0f;
  int off = hi > lo ? lo : 0;
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) lut[v] = stk_aa_u8_f64((double)STK_FMUL((float)(v - off), scale));
}

/* ---- DALI contrast ---- */

/* stk__image_mean_luma from exact per-channel sums (integers below 2^53 are exact in
 * double whatever the summation order): c == 3 weighs R, G, B; otherwise all channels
 * together (color_math.h's formula). */
STK_HD double stk_aa_mean_luma(const uint64_t *sums, int c, double pixels) {
  double d[3] = {(double)sums[0], c == 3 ? (double)sums[1] : 0.0, c == 3 ? (double)sums[2] : 0.0};
  if (c != 3)
    for (int k = 1; k < c; k++) d[0] += (double)sums[k];
  return stk_color_mean_luma(d, pixels, c);
}

/* DALI's brightness / contrast table entry (autoaug_kernels.c's dali_linear through
 * stk__point_map): add + mul * v in double, rounded as stk__convert does. */
STK_HD uint8_t stk_aa_dali_linear(double b, double c, double cc, int v) {
  double nb = STK_DMUL(b, 255.0) / 255.0;
  double add = stk_color_bc_add(0.0 * 255.0, nb, cc, c);
  return (uint8_t)stk_color_round_sat(stk_color_linear((double)v, STK_DMUL(nb, c), add), 0.0,
                                      255.0);
}

/* DALI's saturation of one RGB pixel by the 3x3 matrix m (stk__affine_apply's uint8
 * path: 0 + m[o][0] r + m[o][1] g + m[o][2] b, each product rounded, left to right). */
STK_HD void stk_aa_dali_color(const double *m, const uint8_t *p, uint8_t *out) {
  for (int o = 0; o < 3; o++) {
    double acc = STK_DADD(0.0, STK_DMUL(m[o * 3], (double)p[0]));
    acc = STK_DADD(acc, STK_DMUL(m[o * 3 + 1], (double)p[1]));
    acc = STK_DADD(acc, STK_DMUL(m[o * 3 + 2], (double)p[2]));
    out[o] = stk_aa_u8_f64(acc);
  }
}

/* ---- sharpness ---- */

/* reflect-101 for a 3x3 stencil (offsets of at most one pixel). */
STK_HD int stk_aa_reflect101(int i, int n) {
  if (n == 1) return 0;
  return i < 0 ? -i : i >= n ? 2 * n - 2 - i : i;
}

/* DALI's sharpness at element (y, x, ch) of an h x w x c uint8 image: the 3x3 float32
 * kernel k summed as stk__conv2d does (row-major, zero weights skipped, from 0). */
STK_HD uint8_t stk_aa_dali_sharp(const uint8_t *src, int h, int w, int c, int y, int x, int ch,
                                 const float *k) {
  float acc = 0.0f;
  for (int i = 0; i < 3; i++) {
    int sy = stk_aa_reflect101(y + i - 1, h);
    for (int j = 0; j < 3; j++) {
      float wt = k[i * 3 + j];
      if (wt == 0.0f) continue;
      int sx = stk_aa_reflect101(x + j - 1, w);
      acc = STK_FADD(acc, STK_FMUL(wt, (float)src[((int64_t)sy * w + sx) * c + ch]));
    }
  }
  return stk_aa_u8_f32(acc);
}

/* Pillow's sharpness at element (y, x, ch): ImageFilter.SMOOTH (rows below, centre,
 * above; from 0.5; truncated) blended with the element; the border is the image. */
STK_HD uint8_t stk_aa_pil_sharp(const uint8_t *src, int h, int w, int c, int y, int x, int ch,
                                float factor) {
  const uint8_t *p = src + ((int64_t)y * w + x) * c + ch;
  if (y == 0 || x == 0 || y == h - 1 || x == w - 1) return *p;
  uint8_t smooth = stk_color_smooth_at(p, (long)w * c, (long)c);
  return stk_aa_pil_blend(smooth, *p, factor);
}

/* ---- warps (geometry.c's warp_affine, one output pixel, through geometry_px.h) ---- */

/* Source edge coordinates of output pixel (x, y) under the output -> input matrix m: the
 * row origin stepped x times by (m0, m3), as warp_affine's rows. */
STK_HD void stk_aa_warp_coords(const double *m, int x, int y, double *sx, double *sy) {
  double rx, ry;
  stk_warp_row_origin(m, y, &rx, &ry);
  *sx = stk_warp_step(rx, m[0], x);
  *sy = stk_warp_step(ry, m[3], x);
}

/* Nearest: the index (y * w + x) of the source pixel of output (sx, sy), or -1 for the
 * fill; with !constant the edge pixel. */
STK_HD int64_t stk_aa_warp_nearest(double sx, double sy, int h, int w, int constant) {
  long long xi, yi;
  stk_warp_nearest(sx, sy, w, h, &xi, &yi);
  if (!(xi >= 0 && yi >= 0 && xi < w && yi < h)) {
    if (constant) return -1;
    xi = xi < 0 ? 0 : xi >= w ? w - 1 : xi;
    yi = yi < 0 ? 0 : yi >= h ? h - 1 : yi;
  }
  return (int64_t)yi * w + xi;
}

/* Channel ch of pixel (x, y), which may lie outside: the fill or the clamped edge. */
STK_HD float stk_aa_tap(const uint8_t *src, int h, int w, int c, long long x, long long y, int ch,
                        int constant, const float *fill) {
  if (x < 0 || y < 0 || x >= w || y >= h) {
    if (constant) return fill[ch];
    x = x < 0 ? 0 : x >= w ? w - 1 : x;
    y = y < 0 ? 0 : y >= h ? h - 1 : y;
  }
  return (float)src[((int64_t)y * w + x) * c + ch];
}

/* Linear: channel ch of output (sx, sy) as row_linear computes it (then stored as
 * stk_aa_u8_f32). */
STK_HD float stk_aa_warp_linear(const uint8_t *src, int h, int w, int c, double sx, double sy,
                                int ch, int constant, const float *fill) {
  long long x0, y0;
  float ax, ay;
  stk_warp_linear_setup(sx, sy, w, h, &x0, &y0, &ax, &ay);
  return stk_warp_bilinear(stk_aa_tap(src, h, w, c, x0, y0, ch, constant, fill),
                           stk_aa_tap(src, h, w, c, x0 + 1, y0, ch, constant, fill),
                           stk_aa_tap(src, h, w, c, x0, y0 + 1, ch, constant, fill),
                           stk_aa_tap(src, h, w, c, x0 + 1, y0 + 1, ch, constant, fill), ax, ay);
}

/* Cubic: channel ch of output (sx, sy) as row_cubic computes it (rows of four taps, then
 * the column; float32 multiply-adds rounded step by step). */
STK_HD float stk_aa_warp_cubic(const uint8_t *src, int h, int w, int c, double sx, double sy,
                               int ch, int constant, const float *fill) {
  long long x0, y0;
  float wx[4], wy[4];
  stk_warp_cubic_setup(sx, sy, w, h, &x0, &y0, wx, wy);
  float acc = 0.0f;
  for (int j = 0; j < 4; j++) {
    float r = 0.0f;
    for (int k = 0; k < 4; k++)
      r = stk_warp_mac(r, wx[k], stk_aa_tap(src, h, w, c, x0 + k, y0 + j, ch, constant, fill));
    acc = stk_warp_mac(acc, wy[j], r);
  }
  return acc;
}

#endif /* STOKER_OPS_AUTOAUG_PIXEL_H */
