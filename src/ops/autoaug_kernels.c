/* One automatic-augmentation operation on a uint8 image (and on its mask and boxes for
 * the geometric ones), by calling the colour, filter and warp kernels of the operator
 * files. Shared by auto_augment.apply (a whole per-sample sequence) and
 * auto_augment.augment (one operation with a per-sample parameter), so both compute the
 * same bytes. */
#include "autoaug_kernels.h"
#include "autoaug_fast.h"
#include "../shared/autoaug_pixel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "color.h"
#include "filters.h"
#include "geometry.h"

bool stk__aa_fast = true;

/* ---------------------------------------------------------------------------------- */
/* Geometry                                                                           */
/* ---------------------------------------------------------------------------------- */

/* Rounds each element to float32: transforms.* hand warp_affine float32 matrices, and
 * the fused path must invert exactly what the operator-by-operator path inverts. */
static void round_f32(double m[6]) {
  for (int i = 0; i < 6; i++) m[i] = (double)(float)m[i];
}

stk_status stk__aa_matrix(stk__aa_op op, stk__aa_convention conv, const double p[2], int64_t h,
                          int64_t w, double m[6]) {
  double f[6] = {1, 0, 0, 0, 1, 0};
  switch (op) {
    case STK__AA_SHEAR_X:
    case STK__AA_SHEAR_Y: /* [[1, sx], [sy, 1]] */
      f[1] = p[0], f[3] = p[1];
      break;
    case STK__AA_TRANSLATE_X:
    case STK__AA_TRANSLATE_Y:
      /* torchvision's inverse map reads the input at x - t; DALI's forward map moves
       * the input by +t: the same picture */
      f[2] = conv == STK__AA_TORCHVISION ? -p[0] : p[0];
      f[5] = conv == STK__AA_TORCHVISION ? -p[1] : p[1];
      break;
    case STK__AA_ROTATE:
      stk__rotate_matrix(p[0], h, w, h, w, m);
      return STK_OK;
    default:
      return STK_FAIL(STK_ERR_INTERNAL, "%s is not geometric", stk__aa_op_name(op));
  }
  /* torchvision's matrices map output to input (PIL's transform data, (1, level, 0, 0,
   * 1, 0) for ShearX); DALI's transforms.* map input to output and warp_affine inverts
   * them (inverse_map=False). */
  if (conv == STK__AA_TORCHVISION) {
    memcpy(m, f, sizeof f);
    return STK_OK;
  }
  round_f32(f);
  if (!stk__affine_invert(f, m))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: the matrix [%g, %g, %g, %g, %g, %g] cannot "
                    "be inverted",
                    stk__aa_op_name(op), f[0], f[1], f[2], f[3], f[4], f[5]);
  return STK_OK;
}

stk_status stk__aa_warp(const stk__image *src, const stk__image *dst, const double m[6],
                        stk__interp interp, bool constant, const float *fill, float *row) {
  if (stk__aa_fast && stk__aa_fast_warp(src, dst, m, interp, constant, fill, row)) return STK_OK;
  stk__warp_params wp = {{m[0], m[1], m[2], m[3], m[4], m[5]}, interp, constant, fill};
  return stk__warp_affine(src, dst, &wp, row);
}

/* Maps (x, y) by the 2x3 matrix f. */
static void map_point(const double f[6], double x, double y, double *ox, double *oy) {
  *ox = f[0] * x + f[1] * y + f[2];
  *oy = f[3] * x + f[4] * y + f[5];
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

stk_status stk__aa_boxes(float *boxes, int64_t count, const double m[6], int64_t h, int64_t w,
                         bool normalized) {
  double f[6];
  if (!stk__affine_invert(m, f))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "the warp cannot be inverted for the boxes");
  double sx = normalized ? (double)w : 1.0, sy = normalized ? (double)h : 1.0;
  for (int64_t i = 0; i < count; i++) {
    float *b = boxes + 4 * i;
    double xs[2] = {b[0] * sx, b[2] * sx}, ys[2] = {b[1] * sy, b[3] * sy};
    double lo_x = INFINITY, lo_y = INFINITY, hi_x = -INFINITY, hi_y = -INFINITY;
    for (int k = 0; k < 4; k++) { /* the box enclosing the four moved corners */
      double x, y;
      map_point(f, xs[k & 1], ys[k >> 1], &x, &y);
      lo_x = fmin(lo_x, x), hi_x = fmax(hi_x, x), lo_y = fmin(lo_y, y), hi_y = fmax(hi_y, y);
    }
    b[0] = (float)(clampd(lo_x, 0, (double)w) / sx),
    b[2] = (float)(clampd(hi_x, 0, (double)w) / sx);
    b[1] = (float)(clampd(lo_y, 0, (double)h) / sy),
    b[3] = (float)(clampd(hi_y, 0, (double)h) / sy);
  }
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* Colour                                                                             */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  double mul, add;
} linear_ctx;

static double linear_fn(double x, int64_t c, const void *ctx) {
  const linear_ctx *k = ctx;
  return k->add + k->mul * x;
}

/* DALI's brightness / contrast as the colour operators compute them for uint8 (color.c's
 * brightness_contrast_apply: out = shift * 255 + nb * cc * (1 - c) + nb * c * in, with
 * nb = b * 255 / 255), evaluated once per value through a table. */
static stk_status dali_linear(const stk__image *src, const stk__image *dst, double b, double c,
                              double cc, stk__aa_scratch_fn scratch, void *sctx) {
  double nb = b * 255.0 / 255.0;
  linear_ctx k = {nb * c, 0.0 * 255.0 + nb * cc * (1.0 - c)};
  size_t bytes = stk__point_map_scratch(src, dst);
  void *mem = scratch(sctx, bytes);
  if (!mem) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no scratch memory");
  return stk__point_map(src, dst, linear_fn, &k, mem, bytes);
}

/* DALI's saturation: the YIQ matrix with hue 0 and value 1 (color.c's twist_apply). */
static stk_status dali_saturation(const stk__image *src, const stk__image *dst, double sat,
                                  stk__aa_scratch_fn scratch, void *sctx) {
  if (src->c != 3) {
    memcpy(dst->data, src->data, (size_t)(src->h * src->w * src->c));
    return STK_OK;
  }
  stk__affine_color a = {.cin = 3, .cout = 3};
  stk__hsv_matrix(0.0, sat, 1.0, false, a.m);
  if (stk__aa_fast && stk__aa_fast_affine3(src, dst, a.m, a.off)) return STK_OK;
  size_t bytes = stk__affine_scratch(src, dst);
  void *mem = scratch(sctx, bytes);
  if (!mem) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no scratch memory");
  return stk__affine_apply(src, dst, &a, mem, bytes);
}

bool stk__aa_dali_sharp_kernel(double s, const double *k9, float k[9]) {
  bool identity = true;
  for (int i = 0; i < 9; i++) {
    float blur = (float)(i == 4 ? 5 : 1) / 13.0f, delta = i == 4 ? 1.0f : 0.0f;
    float sf = (float)s;
    k[i] = k9 ? (float)k9[i] : (-sf) * blur + (1.0f + sf) * delta;
    identity &= k[i] == delta;
  }
  return identity;
}

/* DALI's sharpness: experimental.filter with the 3x3 kernel (1 + s) delta - s blur
 * (blur = [[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13, all float32 as DALI's mag_to_param
 * computes it), border reflect_101, rounded. `k9` overrides the kernel. */
static stk_status dali_sharpness(const stk__image *src, const stk__image *dst, double s,
                                 const double *k9, stk__aa_scratch_fn scratch, void *sctx) {
  float k[9];
  size_t n = (size_t)(src->h * src->w * src->c);
  if (stk__aa_dali_sharp_kernel(s, k9,
                                k)) { /* the filter would copy (its separable path for a delta) */
    memcpy(dst->data, src->data, n);
    return STK_OK;
  }
  stk__conv_geom g = {src->h, src->w, 3, 3, 1, 1, STK__BORDER_REFLECT_101, 0.0f};
  size_t need = stk__conv_scratch_size(src, &g);
  void *mem = need ? scratch(sctx, need) : NULL;
  float *acc = scratch(sctx, n * sizeof(float));
  if (!mem || !acc) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no scratch memory for sharpness");
  if (!(stk__aa_fast && stk__aa_fast_conv3x3(src, k, acc)))
    STK_TRY(stk__conv2d(src, acc, &g, k, false, mem, need));
  stk__convert(dst->data, STK_DTYPE_UINT8, acc, STK_DTYPE_FLOAT32, n);
  return STK_OK;
}

typedef enum { LUT_POSTERIZE, LUT_SOLARIZE, LUT_SOLARIZE_ADD, LUT_INVERT } lut_kind;

/* Point operations on uint8 as one table for all channels. */
static void point_lut(const stk__image *src, const stk__image *dst, lut_kind kind, double p) {
  uint8_t lut[3 * 256];
  for (int v = 0; v < 256; v++) {
    int out = v;
    switch (kind) {
      case LUT_POSTERIZE:
        out = v & (int)p;
        break;
      case LUT_SOLARIZE:
        out = (double)v < p ? v : 255 - v;
        break;
      case LUT_SOLARIZE_ADD:
        out = v < 128 ? (int)clampd(v + p, 0, 255) : v;
        break;
      case LUT_INVERT:
        out = 255 - v;
        break;
    }
    lut[v] = lut[256 + v] = lut[512 + v] = (uint8_t)out;
  }
  if (src->c == 3) {
    stk__apply_lut_u8(src, dst, lut);
    return;
  }
  const uint8_t *s = src->data;
  uint8_t *d = dst->data;
  for (size_t i = 0, n = (size_t)(src->h * src->w * src->c); i < n; i++) d[i] = lut[s[i]];
}

/* Equalize / auto-contrast: a table per channel from the channel's histogram. */
static stk_status histogram_op(const stk__image *src, const stk__image *dst, stk__aa_op op,
                               stk__aa_convention conv, stk__aa_scratch_fn scratch, void *sctx) {
  size_t c = (size_t)src->c;
  uint64_t *hist = scratch(sctx, c * 256 * sizeof(uint64_t));
  uint8_t *lut = scratch(sctx, c * 256);
  if (!hist || !lut) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no scratch memory");
  if (!(stk__aa_fast && stk__aa_fast_histograms3(src, hist))) stk__histograms_u8(src, hist);
  for (size_t k = 0; k < c; k++) {
    uint64_t *h = hist + k * 256;
    uint8_t *l = lut + k * 256;
    if (op == STK__AA_EQUALIZE)
      (conv == STK__AA_TORCHVISION ? stk__pil_equalize_lut : stk__cv_equalize_lut)(h, l);
    else if (conv == STK__AA_TORCHVISION)
      stk__pil_autocontrast_lut(h, 0.0, 0.0, l);
    else
      stk_aa_dali_autocontrast_lut(h, l); /* shared with the GPU */
  }
  stk__apply_lut_u8(src, dst, lut);
  return STK_OK;
}

stk_status stk__aa_color(stk__aa_op op, stk__aa_convention conv, const double *p, int np,
                         const stk__image *src, const stk__image *dst, stk__aa_scratch_fn scratch,
                         void *sctx) {
  bool tv = conv == STK__AA_TORCHVISION;
  double v = np > 0 ? p[0] : 0.0;
  switch (op) {
    case STK__AA_IDENTITY:
      memcpy(dst->data, src->data, (size_t)(src->h * src->w * src->c));
      return STK_OK;
    case STK__AA_BRIGHTNESS:
      if (tv)
        stk__pil_brightness(src, dst, (float)v);
      else
        return dali_linear(src, dst, v, 1.0, 128.0, scratch, sctx);
      return STK_OK;
    case STK__AA_CONTRAST:
      if (tv)
        stk__pil_contrast(src, dst, (float)v);
      else
        return dali_linear(src, dst, 1.0, v,
                           stk__aa_fast ? stk__aa_fast_mean_luma(src) : stk__image_mean_luma(src),
                           scratch, sctx);
      return STK_OK;
    case STK__AA_COLOR:
      if (tv && !(stk__aa_fast && stk__aa_fast_pil_color(src, dst, (float)v)))
        stk__pil_color(src, dst, (float)v);
      else if (!tv)
        return dali_saturation(src, dst, v, scratch, sctx);
      return STK_OK;
    case STK__AA_SHARPNESS:
      if (tv && !(stk__aa_fast && stk__aa_fast_pil_sharpness(src, dst, (float)v)))
        stk__pil_sharpness(src, dst, (float)v);
      else if (!tv)
        return dali_sharpness(src, dst, v, np == 9 ? p : NULL, scratch, sctx);
      return STK_OK;
    case STK__AA_POSTERIZE: {
      /* DALI's parameter is the mask, torchvision's the bits kept */
      int mask = tv ? (int)(uint8_t)(0xFF00u >> (int)clampd(v, 0, 8)) : (int)clampd(v, 0, 255);
      point_lut(src, dst, LUT_POSTERIZE, mask);
      return STK_OK;
    }
    case STK__AA_SOLARIZE:
      point_lut(src, dst, LUT_SOLARIZE, v);
      return STK_OK;
    case STK__AA_SOLARIZE_ADD:
      point_lut(src, dst, LUT_SOLARIZE_ADD, v);
      return STK_OK;
    case STK__AA_INVERT:
      point_lut(src, dst, LUT_INVERT, 0);
      return STK_OK;
    case STK__AA_EQUALIZE:
    case STK__AA_AUTO_CONTRAST:
      return histogram_op(src, dst, op, conv, scratch, sctx);
    default:
      return STK_FAIL(STK_ERR_INTERNAL, "%s is not a colour operation", stk__aa_op_name(op));
  }
}

/* ---------------------------------------------------------------------------------- */
/* GPU program steps                                                                  */
/* ---------------------------------------------------------------------------------- */

/* Scratch for building a table on the host (a few kilobytes). */
typedef struct {
  _Alignas(16) char buf[16384];
  size_t used;
} bump_arena;

static void *bump_alloc(void *ctx, size_t bytes) {
  bump_arena *a = ctx;
  size_t at = (a->used + 15) & ~(size_t)15;
  if (at + bytes > sizeof a->buf) return NULL;
  a->used = at + bytes;
  return a->buf + at;
}

/* The table of a point operation that depends on its parameter only: the CPU operation
 * itself applied to the ramp 0..255, so the GPU's table holds the CPU's bytes. */
static stk_status ramp_lut(stk__aa_op op, stk__aa_convention conv, double param, uint8_t *lut) {
  uint8_t ramp[256];
  for (int v = 0; v < 256; v++) ramp[v] = (uint8_t)v;
  stk__image src = {ramp, STK_DTYPE_UINT8, 1, 256, 1}, dst = {lut, STK_DTYPE_UINT8, 1, 256, 1};
  bump_arena *arena = malloc(sizeof *arena);
  if (!arena) return STK_ERR_OUT_OF_MEMORY;
  arena->used = 0;
  stk_status st = stk__aa_color(op, conv, &param, 1, &src, &dst, bump_alloc, arena);
  free(arena);
  return st;
}

stk_status stk__aa_gpu_step(stk__aa_op op, stk__aa_convention conv, double param, int64_t h,
                            int64_t w, stk_gpu_aa_step *step, double m[6], uint8_t *lut,
                            bool *uses_lut) {
  double v[2] = {param, 0.0}; /* the parameter vector as apply_one builds it */
  if (op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_Y) v[0] = 0.0, v[1] = param;
  return stk__aa_gpu_step_vec(op, conv, stk__aa_op_is_geometric(op) ? v : &param, 1, h, w, step, m,
                              lut, uses_lut);
}

stk_status stk__aa_gpu_step_vec(stk__aa_op op, stk__aa_convention conv, const double *p, int np,
                                int64_t h, int64_t w, stk_gpu_aa_step *step, double m[6],
                                uint8_t *lut, bool *uses_lut) {
  bool tv = conv == STK__AA_TORCHVISION;
  double param = np > 0 ? p[0] : 0.0; /* what stk__aa_color reads */
  memset(step, 0, sizeof *step);
  step->code = STK_GPU_AA_COPY;
  *uses_lut = false;
  if (stk__aa_op_is_geometric(op)) {
    STK_TRY(stk__aa_matrix(op, conv, p, h, w, m));
    step->code = STK_GPU_AA_WARP;
    for (int i = 0; i < 6; i++) step->p[i] = m[i];
    return STK_OK;
  }
  switch (op) {
    case STK__AA_IDENTITY:
      return STK_OK;
    case STK__AA_BRIGHTNESS:
    case STK__AA_POSTERIZE:
    case STK__AA_SOLARIZE:
    case STK__AA_SOLARIZE_ADD:
    case STK__AA_INVERT:
      step->code = STK_GPU_AA_LUT, *uses_lut = true;
      return ramp_lut(op, conv, param, lut);
    case STK__AA_CONTRAST:
      step->code = tv ? STK_GPU_AA_CONTRAST_PIL : STK_GPU_AA_CONTRAST_DALI, step->p[0] = param;
      return STK_OK;
    case STK__AA_COLOR:
      if (tv)
        step->code = STK_GPU_AA_COLOR_PIL, step->p[0] = param;
      else
        step->code = STK_GPU_AA_COLOR_DALI, stk__hsv_matrix(0.0, param, 1.0, false, step->p);
      return STK_OK;
    case STK__AA_SHARPNESS:
      if (tv) {
        step->code = STK_GPU_AA_SHARP_PIL, step->p[0] = param;
      } else {
        float k[9];
        if (!stk__aa_dali_sharp_kernel(param, np == 9 ? p : NULL,
                                       k)) { /* else a copy, as the CPU */
          step->code = STK_GPU_AA_SHARP_DALI;
          for (int i = 0; i < 9; i++) step->p[i] = k[i];
        }
      }
      return STK_OK;
    case STK__AA_EQUALIZE:
      step->code = tv ? STK_GPU_AA_EQUALIZE_PIL : STK_GPU_AA_EQUALIZE_CV;
      return STK_OK;
    case STK__AA_AUTO_CONTRAST:
      step->code = tv ? STK_GPU_AA_AUTOCONTRAST_PIL : STK_GPU_AA_AUTOCONTRAST_DALI;
      return STK_OK;
    default:
      return STK_FAIL(STK_ERR_INTERNAL, "operation %d", (int)op);
  }
}
