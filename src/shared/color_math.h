/*
 * Per-element arithmetic of the colour operators, shared by the CPU kernels (color.c,
 * color_pil.c) and the CUDA kernels (src/cuda/color.cu), so both backends compute the
 * same values by construction. Written in the common subset of C11 and C++; every
 * function is STK_HD (__host__ __device__ under nvcc). Double and float steps that must
 * round like the CPU use STK_DMUL / STK_DADD / STK_FMUL / STK_FADD (no fused multiply-add
 * on the device; see gpu_common.h).
 */
#ifndef STOKER_OPS_COLOR_MATH_H
#define STOKER_OPS_COLOR_MATH_H

#include <math.h>
#include <stdint.h>

#include "gpu_common.h"

/* Keeps the 256-step table loops rolled on the device (they run once per sample and
 * channel; unrolled, they would inflate the registers of the kernel that calls them). */
#ifdef __CUDA_ARCH__ /* the device pass only (the host compiler knows no such pragma) */
#define STK_NOUNROLL _Pragma("unroll 1")
#else
#define STK_NOUNROLL
#endif

/* ---- conversions of a computed double to the output type ---- */

/* stk__from_f64's uint8 rule (rows of doubles): + 0.5, truncate, saturate, NaN -> 0. */
STK_HD uint8_t stk_color_u8_rows(double x) {
  return !(x > 0.0) ? (uint8_t)0 : x >= 254.5 ? (uint8_t)255 : (uint8_t)(x + 0.5);
}

/* stk__convert's integer rule: round half away from zero, saturate, NaN -> 0. */
STK_HD double stk_color_round_sat(double v, double lo, double hi) {
  double r = v != v ? 0.0 : round(v);
  return r <= lo ? lo : r >= hi ? hi : r;
}

/* ---- point functions (one element value x) ---- */

STK_HD double stk_color_linear(double x, double mul, double add) {
  return STK_DADD(add, STK_DMUL(mul, x));
}
STK_HD double stk_color_invert(double x, double max) { return STK_DSUB(max, x); }
STK_HD double stk_color_solarize(double x, double threshold, double max) {
  return x >= threshold ? STK_DSUB(max, x) : x;
}
STK_HD double stk_color_solarize_add(double x, double threshold, double shift, double max) {
  if (x >= threshold) return x;
  double v = STK_DADD(x, shift);
  return v < 0.0 ? 0.0 : v > max ? max : v;
}
STK_HD uint8_t stk_color_posterize_mask(int bits) { return (uint8_t)(0xFF00u >> bits); }

/* The additive term of brightness_contrast for centre cc: shift_full + nb * cc * (1 - c)
 * (nb: the brightness rescaled to the output range; shift_full: shift * full range). */
STK_HD double stk_color_bc_add(double shift_full, double nb, double cc, double c) {
  return STK_DADD(shift_full, STK_DMUL(STK_DMUL(nb, cc), STK_DSUB(1.0, c)));
}

/* The mean luma from per-channel sums (stk__image_mean_luma): c == 3 weights the three
 * sums; otherwise sums[0] is the sum of all `count` elements. `pixels`: h * w. */
STK_HD double stk_color_mean_luma(const double *sums, double pixels, int c) {
  double n = c == 3 ? pixels : STK_DMUL(pixels, (double)c);
  if (n == 0) return 0.0;
  if (c != 3) return sums[0] / n;
  double l = STK_DADD(STK_DADD(STK_DMUL(0.299, sums[0]), STK_DMUL(0.587, sums[1])),
                      STK_DMUL(0.114, sums[2]));
  return l / n;
}

/* ---- affine colour maps: out[o] = off[o] + sum_j m[o][j] * in[j], summed in j order ---- */

STK_HD double stk_color_affine1(const double *m_row, double off, const double *in, int cin) {
  double acc = off;
  for (int j = 0; j < cin; j++) acc = STK_DADD(acc, STK_DMUL(m_row[j], in[j]));
  return acc;
}

/* ---- Pillow's arithmetic ---- */

/* PIL's "L" conversion: (19595 R + 38470 G + 7471 B + 2^15) >> 16 (ITU-R 601-2 luma). */
STK_HD uint8_t stk_color_pil_luma(uint8_t r, uint8_t g, uint8_t b) {
  return (uint8_t)(((uint32_t)r * 19595u + (uint32_t)g * 38470u + (uint32_t)b * 7471u + 0x8000u) >>
                   16);
}

/* One element of Image.blend(a, b, alpha): a + alpha * (b - a) in float32; interpolation
 * truncates, extrapolation clamps and truncates. */
STK_HD uint8_t stk_color_blend1(uint8_t a, uint8_t b, float alpha) {
  float t = STK_FADD((float)a, STK_FMUL(alpha, (float)((int)b - (int)a)));
  if (alpha >= 0.0f && alpha <= 1.0f) return (uint8_t)t;
  return t <= 0.0f ? (uint8_t)0 : t >= 255.0f ? (uint8_t)255 : (uint8_t)t;
}

/* ImageFilter.SMOOTH at an interior element: kernel [[1 1 1] [1 5 1] [1 1 1]] / 13 in
 * float32, rows summed in Pillow's order (below, centre, above), rounded by the 0.5 start
 * and truncation. `p` points at the element; `row` and `px` are the strides. Pillow
 * divides the integer kernel by its scale in double and stores floats: k1 = (float)(1 /
 * 13), k5 = (float)(5 / 13). */
STK_HD uint8_t stk_color_smooth_at(const uint8_t *p, long row, long px) {
  const float k1 = (float)(1.0 / 13.0), k5 = (float)(5.0 / 13.0);
  const uint8_t *b = p + row, *a = p - row;
  float ss = 0.5f;
  ss = STK_FADD(ss, STK_FADD(STK_FADD(STK_FMUL((float)b[-px], k1), STK_FMUL((float)b[0], k1)),
                             STK_FMUL((float)b[px], k1)));
  ss = STK_FADD(ss, STK_FADD(STK_FADD(STK_FMUL((float)p[-px], k1), STK_FMUL((float)p[0], k5)),
                             STK_FMUL((float)p[px], k1)));
  ss = STK_FADD(ss, STK_FADD(STK_FADD(STK_FMUL((float)a[-px], k1), STK_FMUL((float)a[0], k1)),
                             STK_FMUL((float)a[px], k1)));
  ss = ss < 0.0f ? 0.0f : ss > 255.0f ? 255.0f : ss;
  return (uint8_t)ss;
}

/* ---- tables built from one channel's histogram (256 counts) ---- */

STK_HD void stk_color_identity_lut(uint8_t *lut) {
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) lut[v] = (uint8_t)v;
}

/* ImageOps.equalize's table. */
STK_HD void stk_color_pil_equalize_lut(const uint64_t *hist, uint8_t *lut) {
  uint64_t total = 0, last = 0;
  int nonzero = 0;
  STK_NOUNROLL
  for (int v = 0; v < 256; v++)
    if (hist[v]) total += hist[v], last = hist[v], nonzero++;
  uint64_t step = nonzero > 1 ? (total - last) / 255 : 0;
  if (step == 0) {
    stk_color_identity_lut(lut);
    return;
  }
  uint64_t n = step / 2;
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) {
    uint64_t q = n / step;
    lut[v] = (uint8_t)(q > 255 ? 255 : q); /* Pillow's point() clips to 8 bits */
    n += hist[v];
  }
}

/* OpenCV's equalizeHist table (DALI's experimental.equalize). */
STK_HD void stk_color_cv_equalize_lut(const uint64_t *hist, uint8_t *lut) {
  uint64_t total = 0;
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) total += hist[v];
  int first = 0;
  while (first < 256 && hist[first] == 0) first++;
  if (first == 256 || hist[first] == total) {
    stk_color_identity_lut(lut);
    return;
  }
  double scale = 255.0 / (double)(total - hist[first]);
  uint64_t cdf = 0;
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) {
    cdf += hist[v];
    double x = v < first ? 0.0 : STK_DMUL((double)(cdf - hist[first]), scale);
    lut[v] = (uint8_t)(x >= 255.0 ? 255 : floor(x + 0.5));
  }
}

/* Removes `cut` pixels from one end of a histogram, as ImageOps.autocontrast does. */
STK_HD void stk_color_cut_histogram(uint64_t *h, uint64_t cut, int from_top) {
  STK_NOUNROLL
  for (int i = 0; i < 256 && cut > 0; i++) {
    int v = from_top ? 255 - i : i;
    if (cut > h[v]) {
      cut -= h[v];
      h[v] = 0;
    } else {
      h[v] -= cut;
      cut = 0;
    }
  }
}

/* ImageOps.autocontrast's table: `h` (modified) is the channel's histogram. */
STK_HD void stk_color_autocontrast_lut(uint64_t *h, double cutoff_lo, double cutoff_hi,
                                       uint8_t *lut) {
  uint64_t n = 0;
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) n += h[v];
  if (cutoff_lo > 0)
    stk_color_cut_histogram(h, (uint64_t)floor(STK_DMUL((double)n, cutoff_lo) / 100.0), 0);
  if (cutoff_hi > 0)
    stk_color_cut_histogram(h, (uint64_t)floor(STK_DMUL((double)n, cutoff_hi) / 100.0), 1);
  int lo = 0, hi = 255;
  while (lo < 255 && h[lo] == 0) lo++;
  while (hi > 0 && h[hi] == 0) hi--;
  if (hi <= lo) {
    stk_color_identity_lut(lut);
    return;
  }
  double scale = 255.0 / (double)(hi - lo), offset = STK_DMUL((double)-lo, scale);
  STK_NOUNROLL
  for (int v = 0; v < 256; v++) {
    double x = trunc(STK_DADD(STK_DMUL((double)v, scale), offset));
    lut[v] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
  }
}

#endif /* STOKER_OPS_COLOR_MATH_H */
