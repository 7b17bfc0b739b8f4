/*
 * Colour kernels behind the colour operators (color.c: DALI-defined operators;
 * color_pil.c: Pillow-defined ones) and the argument helpers they share with the
 * occlusion and noise operators.
 *
 * The kernels are pure functions of their arguments (no executor accessors), so the C
 * tests call them directly. Images are dense HWC (stk__image); the uint8 paths are the
 * fast ones, other dtypes go through rows of doubles converted with stk__convert
 * (integers: round half away from zero, then saturate).
 */
#ifndef STOKER_OPS_COLOR_H
#define STOKER_OPS_COLOR_H

#include <math.h>

#include "../shared/color_math.h"
#include "image_util.h"

/* ---------------------------------------------------------------------------------- */
/* Type ranges (DALI's conventions)                                                   */
/* ---------------------------------------------------------------------------------- */

/* The value of "full intensity": the type's maximum for integers, 1 for floats. */
double stk__dtype_full_range(stk_dtype dtype);
/* The middle grey: 2^(bits - 1 - signed) for integers (128 for uint8), 0.5 for floats. */
double stk__dtype_half_range(stk_dtype dtype);
/* True for float16/32/64. */
bool stk__dtype_is_float(stk_dtype dtype);

/* Rows of doubles from / to any dtype, with fast paths for uint8 and float32. To
 * integers: round half away from zero and saturate (NaN -> 0), as stk__convert. */
void stk__to_f64(double *dst, const void *src, stk_dtype dtype, size_t n);
void stk__from_f64(void *dst, stk_dtype dtype, const double *src, size_t n);

/* ---------------------------------------------------------------------------------- */
/* Point operations and affine colour transforms                                     */
/* ---------------------------------------------------------------------------------- */

/* A function of one element value `x` in channel `c`. */
typedef double (*stk__point_fn)(double x, int64_t c, const void *ctx);

/* Scratch bytes stk__point_map needs. */
size_t stk__point_map_scratch(const stk__image *src, const stk__image *dst);
/* dst[y, x, c] = convert(f(src[y, x, c], c)). Same h, w, c; any dtypes. uint8 input goes
 * through a table of 256 values per channel, so f is evaluated 256 * c times. */
stk_status stk__point_map(const stk__image *src, const stk__image *dst, stk__point_fn f,
                          const void *ctx, void *scratch, size_t scratch_size);

/* A per-channel table applied to uint8 images: dst[.., c] = lut[c * 256 + src[.., c]].
 * src and dst are uint8 with the same shape (may be the same buffer). */
void stk__apply_lut_u8(const stk__image *src, const stk__image *dst, const uint8_t *lut);

/* out = m * in + off per pixel, computed in float64: m has cout rows of cin values. */
typedef struct {
  int cin, cout; /* 1 or 3 each */
  double m[9];
  double off[3];
} stk__affine_color;

size_t stk__affine_scratch(const stk__image *src, const stk__image *dst);
/* src->c == a->cin, dst->c == a->cout, same h and w; any dtypes. uint8 input reads
 * tables of m * v (same float64 arithmetic as the general path, just cached). */
stk_status stk__affine_apply(const stk__image *src, const stk__image *dst,
                             const stk__affine_color *a, void *scratch, size_t scratch_size);

/* DALI's hue / saturation / value transform for RGB: Yiq2Rgb * H(hue) * S(sat) * V(value)
 * * Rgb2Yiq with DALI's YIQ matrices (an approximation of HSV in RGB). `bgr` conjugates
 * it for BGR images. hue in degrees. */
void stk__hsv_matrix(double hue_deg, double saturation, double value, bool bgr, double m[9]);

/* The mean luma of an image in float64: 0.299 R + 0.587 G + 0.114 B averaged over the
 * pixels for 3 channels, the mean of all elements otherwise (any dtype). The centre of
 * DALI's AutoAugment contrast. */
double stk__image_mean_luma(const stk__image *img);

/* Colour spaces of color_space_conversion. */
typedef enum { STK__CS_RGB, STK__CS_BGR, STK__CS_GRAY, STK__CS_YCBCR } stk__colorspace;
#define STK__CS_CHOICES "RGB|BGR|GRAY|YCbCr"
bool stk__colorspace_parse(const char *name, stk__colorspace *out);
int stk__colorspace_channels(stk__colorspace cs);
/* The affine map of DALI's color_space_conversion for a value range of `dtype`: GRAY is
 * full-range BT.601 luma (0.299, 0.587, 0.114); YCbCr is ITU-R BT.601 with footroom and
 * headroom (Y in 16..235, Cb/Cr centred at 128 for uint8; 0.0625 and 0.5 for floats). */
void stk__colorspace_affine(stk__colorspace from, stk__colorspace to, stk_dtype dtype,
                            stk__affine_color *out);

/* ---------------------------------------------------------------------------------- */
/* Pillow's definitions (uint8 only), exact to Pillow's integer and float32 arithmetic  */
/* ---------------------------------------------------------------------------------- */

/* PIL's "L" conversion: (19595 R + 38470 G + 7471 B + 2^15) >> 16 (ITU-R 601-2 luma). */
static inline uint8_t stk__pil_luma(uint8_t r, uint8_t g, uint8_t b) {
  return stk_color_pil_luma(r, g, b);
}
/* Image.blend(a, b, alpha) for n bytes: a + alpha * (b - a) in float32, truncated; values
 * outside [0, 255] clamped when alpha is outside [0, 1]. */
void stk__pil_blend(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t n, float alpha);
/* ImageEnhance.Brightness / Color / Contrast / Sharpness with `factor` (the float32
 * value Pillow passes to Image.blend). src and dst are uint8 with the same shape; dst
 * must not alias src. Color needs 3 channels (1 channel: a copy); Contrast centres on the
 * luma of 3-channel images and on the channel itself otherwise. */
void stk__pil_brightness(const stk__image *src, const stk__image *dst, float factor);
void stk__pil_color(const stk__image *src, const stk__image *dst, float factor);
void stk__pil_contrast(const stk__image *src, const stk__image *dst, float factor);
void stk__pil_sharpness(const stk__image *src, const stk__image *dst, float factor);
/* The centre ImageEnhance.Contrast uses: int(mean(luma) + 0.5). */
int stk__pil_contrast_center(const stk__image *src);

/* Per-channel histograms of a uint8 image: hist[c * 256 + v]. */
void stk__histograms_u8(const stk__image *src, uint64_t *hist);
/* ImageOps.equalize's table for one channel histogram. */
void stk__pil_equalize_lut(const uint64_t *hist, uint8_t *lut);
/* OpenCV's equalizeHist table (DALI's experimental.equalize): scale the cumulative
 * histogram minus its first non-zero value to 0..255, rounded; a single-valued channel
 * is kept as is. */
void stk__cv_equalize_lut(const uint64_t *hist, uint8_t *lut);
/* ImageOps.autocontrast's table for one channel: cut `cutoff_lo` / `cutoff_hi` percent of
 * pixels from the ends, then stretch lo..hi to 0..255 with truncation. */
void stk__pil_autocontrast_lut(const uint64_t *hist, double cutoff_lo, double cutoff_hi,
                               uint8_t *lut);

/* ---------------------------------------------------------------------------------- */
/* Argument helpers (operator files only)                                             */
/* ---------------------------------------------------------------------------------- */

/* Reads a float argument of this sample and checks that it is finite and in [lo, hi]
 * (fed values are not range-checked at build time). */
static inline stk_status stk__float_arg_in(const stk__node *node, const stk__sample *s, int arg,
                                           const char *name, double lo, double hi, double *out) {
  double v = stk__arg_float(node, s, arg);
  *out = v;
  if (!(v >= lo && v <= hi))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "argument '%s' = %g is out of range [%g, %g]", name, v, lo, hi);
  return STK_OK;
}

/* The output dtype: the `dtype` argument, or the input's type when it is "". Only
 * uint8, int16, int32, float16 and float32 (the types DALI's colour operators have). */
static inline stk_status stk__color_out_dtype(const stk__node *node, const stk__sample *s, int arg,
                                              stk_dtype in, stk_dtype *out) {
  STK_TRY(stk__dtype_or_same(node, arg, "dtype", in, out));
  if (*out != STK_DTYPE_UINT8 && *out != STK_DTYPE_INT16 && *out != STK_DTYPE_INT32 &&
      *out != STK_DTYPE_FLOAT16 && *out != STK_DTYPE_FLOAT32)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "output type %s is not supported (uint8, "
                      "int16, int32, float16 or float32)",
                      stk_dtype_name(*out));
  return STK_OK;
}
#define STK__COLOR_DTYPE_CHOICES "|uint8|int16|int32|float16|half|float32|float"

#endif /* STOKER_OPS_COLOR_H */
