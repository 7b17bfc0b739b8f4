/*
 * Colour operators with DALI's definitions: brightness, contrast, brightness_contrast,
 * hsv, hue, saturation, color_twist, color_space_conversion, and stoker's grayscale.
 *
 * brightness / contrast / saturation also carry a `pil` flag that switches them to
 * Pillow's ImageEnhance definitions (Brightness, Contrast, Color), which automatic
 * augmentation policies (AutoAugment, RandAugment, TrivialAugment) are written against;
 * those kernels live in color_pil.c.
 *
 * All numeric arguments may be fed per sample. Inputs are HWC (or HW) images of uint8,
 * int16, int32, float16 or float32; integer outputs are rounded half away from zero and
 * saturated.
 */
#include <float.h>
#include <string.h>

#include "color.h"
#include "color_gpu.h"

/* ---------------------------------------------------------------------------------- */
/* Type ranges                                                                        */
/* ---------------------------------------------------------------------------------- */

bool stk__dtype_is_float(stk_dtype d) {
  return d == STK_DTYPE_FLOAT16 || d == STK_DTYPE_FLOAT32 || d == STK_DTYPE_FLOAT64;
}

double stk__dtype_full_range(stk_dtype d) {
  switch (d) {
    case STK_DTYPE_UINT8:
      return 255.0;
    case STK_DTYPE_INT8:
      return 127.0;
    case STK_DTYPE_UINT16:
      return 65535.0;
    case STK_DTYPE_INT16:
      return 32767.0;
    case STK_DTYPE_UINT32:
      return 4294967295.0;
    case STK_DTYPE_INT32:
      return 2147483647.0;
    case STK_DTYPE_UINT64:
      return 18446744073709551615.0;
    case STK_DTYPE_INT64:
      return 9223372036854775807.0;
    default:
      return 1.0;
  }
}

double stk__dtype_half_range(stk_dtype d) {
  if (stk__dtype_is_float(d) || d == STK_DTYPE_BOOL) return 0.5;
  size_t bits = 8 * stk_dtype_size(d);
  bool is_signed =
      d == STK_DTYPE_INT8 || d == STK_DTYPE_INT16 || d == STK_DTYPE_INT32 || d == STK_DTYPE_INT64;
  return ldexp(1.0, (int)(bits - 1 - (is_signed ? 1 : 0)));
}

/* ---------------------------------------------------------------------------------- */
/* Point maps and affine maps                                                         */
/* ---------------------------------------------------------------------------------- */

void stk__to_f64(double *dst, const void *src, stk_dtype dtype, size_t n) {
  if (dtype == STK_DTYPE_UINT8) {
    for (size_t i = 0; i < n; i++) dst[i] = ((const uint8_t *)src)[i];
  } else if (dtype == STK_DTYPE_FLOAT32) {
    for (size_t i = 0; i < n; i++) dst[i] = ((const float *)src)[i];
  } else {
    stk__convert(dst, STK_DTYPE_FLOAT64, src, dtype, n);
  }
}

void stk__from_f64(void *dst, stk_dtype dtype, const double *src, size_t n) {
  if (dtype == STK_DTYPE_UINT8) {
    uint8_t *d = dst;
    for (size_t i = 0; i < n; i++) {
      double x = src[i];
      d[i] = !(x > 0.0) ? 0 : x >= 254.5 ? 255 : (uint8_t)(x + 0.5);
    }
  } else if (dtype == STK_DTYPE_FLOAT32) {
    for (size_t i = 0; i < n; i++) ((float *)dst)[i] = (float)src[i];
  } else {
    stk__convert(dst, dtype, src, STK_DTYPE_FLOAT64, n);
  }
}

static bool same_geometry(const stk__image *a, const stk__image *b) {
  return a->h == b->h && a->w == b->w && a->c == b->c;
}

size_t stk__point_map_scratch(const stk__image *src, const stk__image *dst) {
  if (src->dtype == STK_DTYPE_UINT8)
    return (size_t)src->c * 256 * (sizeof(double) + stk_dtype_size(dst->dtype));
  return (size_t)(src->w * src->c) * sizeof(double);
}

void stk__apply_lut_u8(const stk__image *src, const stk__image *dst, const uint8_t *lut) {
  const uint8_t *s = src->data;
  uint8_t *d = dst->data;
  size_t pixels = (size_t)(src->h * src->w);
  if (src->c == 3) { /* the common case, unrolled */
    for (size_t i = 0; i < pixels; i++, s += 3, d += 3) {
      d[0] = lut[s[0]], d[1] = lut[256 + s[1]], d[2] = lut[512 + s[2]];
    }
    return;
  }
  int64_t c = src->c;
  for (size_t i = 0; i < pixels; i++, s += c, d += c)
    for (int64_t k = 0; k < c; k++) d[k] = lut[k * 256 + s[k]];
}

/* Gathers table entries of `esize` bytes: dst element = typed[c * 256 + src element]. */
static void gather_typed(const stk__image *src, const stk__image *dst, const uint8_t *typed) {
  size_t es = stk_dtype_size(dst->dtype);
  const uint8_t *s = src->data;
  uint8_t *d = dst->data;
  size_t pixels = (size_t)(src->h * src->w), c = (size_t)src->c;
  for (size_t i = 0; i < pixels; i++, s += c)
    for (size_t k = 0; k < c; k++, d += es) memcpy(d, typed + (k * 256 + s[k]) * es, es);
}

stk_status stk__point_map(const stk__image *src, const stk__image *dst, stk__point_fn f,
                          const void *ctx, void *scratch, size_t scratch_size) {
  if (!same_geometry(src, dst))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "input and output shapes differ");
  if (scratch_size < stk__point_map_scratch(src, dst))
    return STK_FAIL(STK_ERR_INTERNAL, "scratch too small");
  double *tab = scratch;
  if (src->dtype == STK_DTYPE_UINT8) {
    size_t n = (size_t)src->c * 256;
    for (int64_t c = 0; c < src->c; c++)
      for (int v = 0; v < 256; v++) tab[c * 256 + v] = f((double)v, c, ctx);
    uint8_t *typed = (uint8_t *)(tab + n);
    stk__convert(typed, dst->dtype, tab, STK_DTYPE_FLOAT64, n);
    if (dst->dtype == STK_DTYPE_UINT8)
      stk__apply_lut_u8(src, dst, typed);
    else
      gather_typed(src, dst, typed);
    return STK_OK;
  }
  size_t row = (size_t)(src->w * src->c);
  size_t sbytes = row * stk_dtype_size(src->dtype), dbytes = row * stk_dtype_size(dst->dtype);
  for (int64_t y = 0; y < src->h; y++) {
    stk__to_f64(tab, (const char *)src->data + y * sbytes, src->dtype, row);
    for (size_t i = 0; i < row; i += (size_t)src->c)
      for (int64_t c = 0; c < src->c; c++) tab[i + c] = f(tab[i + c], c, ctx);
    stk__from_f64((char *)dst->data + y * dbytes, dst->dtype, tab, row);
  }
  return STK_OK;
}

size_t stk__affine_scratch(const stk__image *src, const stk__image *dst) {
  size_t tables = src->dtype == STK_DTYPE_UINT8 ? (size_t)(src->c * dst->c) * 256 : 0;
  return (size_t)(src->w * (src->c + dst->c)) * sizeof(double) + tables * sizeof(double);
}

/* One row: out[x * co + o] = off[o] + sum_j m[o][j] * in[x * ci + j], summed in j order. */
static void affine_row(const double *in, double *out, size_t w, const stk__affine_color *a) {
  size_t ci = (size_t)a->cin, co = (size_t)a->cout;
  for (size_t x = 0; x < w; x++) {
    const double *p = in + x * ci;
    for (size_t o = 0; o < co; o++) {
      out[x * co + o] = stk_color_affine1(a->m + o * ci, a->off[o], p, (int)ci);
    }
  }
}

/* The same for uint8 input through tables t[(o * ci + j) * 256 + v] = m[o][j] * v. */
static void affine_row_u8(const uint8_t *in, double *out, size_t w, const stk__affine_color *a,
                          const double *t) {
  size_t ci = (size_t)a->cin, co = (size_t)a->cout;
  if (ci == 3 && co == 3) {
    for (size_t x = 0; x < w; x++, in += 3, out += 3) {
      out[0] = a->off[0] + t[in[0]] + t[256 + in[1]] + t[512 + in[2]];
      out[1] = a->off[1] + t[768 + in[0]] + t[1024 + in[1]] + t[1280 + in[2]];
      out[2] = a->off[2] + t[1536 + in[0]] + t[1792 + in[1]] + t[2048 + in[2]];
    }
    return;
  }
  for (size_t x = 0; x < w; x++) {
    const uint8_t *p = in + x * ci;
    for (size_t o = 0; o < co; o++) {
      double acc = a->off[o];
      for (size_t j = 0; j < ci; j++) acc += t[(o * ci + j) * 256 + p[j]];
      out[x * co + o] = acc;
    }
  }
}

stk_status stk__affine_apply(const stk__image *src, const stk__image *dst,
                             const stk__affine_color *a, void *scratch, size_t scratch_size) {
  if (src->h != dst->h || src->w != dst->w || src->c != a->cin || dst->c != a->cout)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "image shapes do not fit the colour map "
                    "(%lld -> %lld channels, map %d -> %d)",
                    (long long)src->c, (long long)dst->c, a->cin, a->cout);
  if (scratch_size < stk__affine_scratch(src, dst))
    return STK_FAIL(STK_ERR_INTERNAL, "scratch too small");
  size_t w = (size_t)src->w, ci = (size_t)a->cin, co = (size_t)a->cout;
  double *in = scratch, *out = in + w * ci, *tables = out + w * co;
  bool u8 = src->dtype == STK_DTYPE_UINT8;
  if (u8)
    for (size_t k = 0; k < ci * co; k++)
      for (int v = 0; v < 256; v++) tables[k * 256 + (size_t)v] = a->m[k] * (double)v;
  size_t sbytes = w * ci * stk_dtype_size(src->dtype), dbytes = w * co * stk_dtype_size(dst->dtype);
  for (int64_t y = 0; y < src->h; y++) {
    const char *row = (const char *)src->data + y * sbytes;
    if (u8) {
      affine_row_u8((const uint8_t *)row, out, w, a, tables);
    } else {
      stk__to_f64(in, row, src->dtype, w * ci);
      affine_row(in, out, w, a);
    }
    stk__from_f64((char *)dst->data + y * dbytes, dst->dtype, out, w * co);
  }
  return STK_OK;
}

double stk__image_mean_luma(const stk__image *img) {
  size_t c = (size_t)img->c, row = (size_t)img->w * c, es = stk_dtype_size(img->dtype);
  double sums[3] = {0, 0, 0}, buf[256];
  for (int64_t y = 0; y < img->h; y++) {
    const char *p = (const char *)img->data + (size_t)y * row * es;
    for (size_t i = 0; i < row;) { /* in pieces of whole pixels */
      size_t n = row - i < 255 - 255 % c ? row - i : 255 - 255 % c;
      stk__to_f64(buf, p + i * es, img->dtype, n);
      for (size_t k = 0; k < n; k++) sums[c == 3 ? k % 3 : 0] += buf[k];
      i += n;
    }
  }
  double n = (double)(img->h * img->w) * (c == 3 ? 1.0 : (double)c);
  if (n == 0) return 0.0;
  if (c != 3) return sums[0] / n;
  return (0.299 * sums[0] + 0.587 * sums[1] + 0.114 * sums[2]) / n;
}

/* ---------------------------------------------------------------------------------- */
/* DALI's YIQ-based hue / saturation / value matrix                                   */
/* ---------------------------------------------------------------------------------- */

static void mat3_mul(const double a[9], const double b[9], double out[9]) {
  double r[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      r[i * 3 + j] = a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j];
  memcpy(out, r, sizeof r);
}

void stk__hsv_matrix(double hue_deg, double saturation, double value, bool bgr, double m[9]) {
  /* The NTSC YIQ matrices as DALI states them (the inverse is rounded to 3 digits). */
  static const double rgb2yiq[9] = {0.299,  0.587, 0.114,  0.596, -0.274,
                                    -0.321, 0.211, -0.523, 0.311};
  static const double yiq2rgb[9] = {1, 0.956, 0.621, 1, -0.272, -0.647, 1, -1.107, 1.705};
  double h = hue_deg * M_PI / 180.0, ch = cos(h), sh = sin(h);
  /* hue rotates the IQ plane; saturation scales it; value scales everything */
  double hsv[9] = {value,
                   0,
                   0,
                   0,
                   value * saturation * ch,
                   value * saturation * sh,
                   0,
                   -value * saturation * sh,
                   value * saturation * ch};
  mat3_mul(yiq2rgb, hsv, m);
  mat3_mul(m, rgb2yiq, m);
  if (bgr) { /* P m P with P swapping channels 0 and 2 */
    double t[9];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) t[i * 3 + j] = m[(2 - i) * 3 + (2 - j)];
    memcpy(m, t, sizeof t);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Colour spaces (DALI's color_space_conversion)                                     */
/* ---------------------------------------------------------------------------------- */

bool stk__colorspace_parse(const char *name, stk__colorspace *out) {
  static const char *const names[] = {"RGB", "BGR", "GRAY", "YCbCr"};
  for (int i = 0; i < 4; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (stk__colorspace)i;
      return true;
    }
  return false;
}

int stk__colorspace_channels(stk__colorspace cs) { return cs == STK__CS_GRAY ? 1 : 3; }

/* BT.601 luma weights; the chroma formulas below follow from them. */
#define KR 0.299
#define KB 0.114
#define KG (1.0 - KR - KB)

/* Full-range RGB -> (Y, Cb, Cr) rows, then scaled to BT.601's 219 / 224 code ranges. */
static void rgb_to_ycbcr_rows(double u, double m[9], double off[3]) {
  const double ys = 219.0 / 255.0, cs = 224.0 / 255.0;
  double rows[9] = {KR,
                    KG,
                    KB,
                    -0.5 * KR / (1 - KB),
                    -0.5 * KG / (1 - KB),
                    0.5,
                    0.5,
                    -0.5 * KG / (1 - KR),
                    -0.5 * KB / (1 - KR)};
  for (int j = 0; j < 3; j++)
    m[j] = ys * rows[j], m[3 + j] = cs * rows[3 + j], m[6 + j] = cs * rows[6 + j];
  off[0] = 0.0625 * u, off[1] = 0.5 * u, off[2] = 0.5 * u;
}

static void ycbcr_to_rgb_rows(double u, double m[9], double off[3]) {
  const double ys = 255.0 / 219.0, cs = 255.0 / 224.0;
  double cr_r = 2 * (1 - KR), cb_b = 2 * (1 - KB);
  double cb_g = -cb_b * KB / KG, cr_g = -cr_r * KR / KG;
  double rows[9] = {ys, 0, cs * cr_r, ys, cs * cb_g, cs * cr_g, ys, cs * cb_b, 0};
  memcpy(m, rows, sizeof rows);
  for (int i = 0; i < 3; i++)
    off[i] = -(m[i * 3] * 0.0625 * u + (m[i * 3 + 1] + m[i * 3 + 2]) * 0.5 * u);
}

/* Swaps the roles of channels 0 and 2 on the input side (columns) of an affine map. */
static void swap_in_rb(stk__affine_color *a) {
  for (int o = 0; o < a->cout; o++) {
    double t = a->m[o * 3];
    a->m[o * 3] = a->m[o * 3 + 2], a->m[o * 3 + 2] = t;
  }
}

/* Swaps output rows 0 and 2. */
static void swap_out_rb(stk__affine_color *a) {
  for (int j = 0; j < a->cin; j++) {
    double t = a->m[j];
    a->m[j] = a->m[2 * a->cin + j], a->m[2 * a->cin + j] = t;
  }
  double t = a->off[0];
  a->off[0] = a->off[2], a->off[2] = t;
}

void stk__colorspace_affine(stk__colorspace from, stk__colorspace to, stk_dtype dtype,
                            stk__affine_color *a) {
  /* Biases are in units of 2^bits for integers (16 and 128 for uint8), 1 for floats. */
  double u = stk__dtype_is_float(dtype) ? 1.0 : 2.0 * stk__dtype_half_range(dtype);
  memset(a, 0, sizeof *a);
  a->cin = stk__colorspace_channels(from), a->cout = stk__colorspace_channels(to);
  bool from_bgr = from == STK__CS_BGR, to_bgr = to == STK__CS_BGR;
  stk__colorspace f = from_bgr ? STK__CS_RGB : from, t = to_bgr ? STK__CS_RGB : to;
  if (f == t) { /* identity (RGB <-> BGR is fixed up by the swaps below) */
    for (int i = 0; i < a->cin; i++) a->m[i * a->cin + i] = 1.0;
  } else if (f == STK__CS_RGB && t == STK__CS_GRAY) {
    a->m[0] = KR, a->m[1] = KG, a->m[2] = KB;
  } else if (f == STK__CS_RGB && t == STK__CS_YCBCR) {
    rgb_to_ycbcr_rows(u, a->m, a->off);
  } else if (f == STK__CS_GRAY && t == STK__CS_RGB) {
    a->m[0] = a->m[1] = a->m[2] = 1.0;
  } else if (f == STK__CS_GRAY && t == STK__CS_YCBCR) {
    a->m[0] = 219.0 / 255.0, a->off[0] = 0.0625 * u, a->off[1] = a->off[2] = 0.5 * u;
  } else if (f == STK__CS_YCBCR && t == STK__CS_RGB) {
    ycbcr_to_rgb_rows(u, a->m, a->off);
  } else { /* YCbCr -> GRAY: expand Y from 16..235 to the full range */
    a->m[0] = 255.0 / 219.0, a->off[0] = -255.0 / 219.0 * 0.0625 * u;
  }
  if (from_bgr && a->cin == 3) swap_in_rb(a);
  if (to_bgr && a->cout == 3) swap_out_rb(a);
}

/* ---------------------------------------------------------------------------------- */
/* Operator plumbing                                                                  */
/* ---------------------------------------------------------------------------------- */

static const stk_dtype color_in_types[] = {STK_DTYPE_UINT8, STK_DTYPE_INT16, STK_DTYPE_INT32,
                                           STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT32};
#define N_COLOR_IN_TYPES 5

static const stk_port_schema image_in[] = {{"input", "HWC image (or HW)"}};
static const stk_port_schema image_out[] = {{"output", "the adjusted image"}};

/* Reads the input image and makes an output of the same shape and `dtype_arg`'s type. */
static stk_status open_images(stk__node *node, stk__sample *s, int dtype_arg, int channels,
                              stk__image *src, stk__image *dst) {
  STK_TRY(stk__image_input(node, s, 0, color_in_types, N_COLOR_IN_TYPES, src));
  if (channels && src->c != channels)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects %d channels, got %lld", channels,
                      (long long)src->c);
  *dst = *src;
  if (dtype_arg >= 0) STK_TRY(stk__color_out_dtype(node, s, dtype_arg, src->dtype, &dst->dtype));
  return stk__image_output(s, stk__input(s, 0)->ndim, dst);
}

static void *sample_scratch(stk__node *node, stk__sample *s, size_t bytes, stk_status *st) {
  void *p = stk__scratch(s, bytes ? bytes : 1);
  *st = p ? STK_OK
          : STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory (%zu bytes)", bytes);
  return p;
}

/* The `pil` variants work on uint8 only and keep the type. */
static stk_status check_pil_types(stk__node *node, stk__sample *s, stk_dtype in, stk_dtype out) {
  if (in != STK_DTYPE_UINT8 || out != STK_DTYPE_UINT8)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "pil=true needs uint8 input and output "
                      "(got %s -> %s)",
                      stk_dtype_name(in), stk_dtype_name(out));
  return STK_OK;
}

static stk_status check_pil(stk__node *node, stk__sample *s, const stk__image *src,
                            const stk__image *dst) {
  return check_pil_types(node, s, src->dtype, dst->dtype);
}

/* ---- GPU plans (color_gpu.h): the same arguments and terms as the CPU paths ---- */

typedef struct {
  double mul, add;
} linear_ctx;

static double linear_fn(double x, int64_t c, const void *ctx) {
  const linear_ctx *k = ctx;
  return stk_color_linear(x, k->mul, k->add);
}

/* brightness_contrast's map for one sample: the CPU's table for uint8 input, else the
 * same float64 map elementwise. */
static stk_status bc_plan(stk__node *node, stk__sample *s, const stk__cg_in *in, stk__cg_plan *pl,
                          int dtype_arg, double b, double shift, double c, bool has_cc, double cc) {
  STK_TRY(stk__color_out_dtype(node, s, dtype_arg, in->dtype, &pl->out_dtype));
  if (!has_cc) cc = stk__dtype_half_range(in->dtype);
  double nb = b * stk__dtype_full_range(pl->out_dtype) / stk__dtype_full_range(in->dtype);
  linear_ctx k = {nb * c,
                  stk_color_bc_add(shift * stk__dtype_full_range(pl->out_dtype), nb, cc, c)};
  if (in->dtype == STK_DTYPE_UINT8) {
    pl->kind = STK__CG_LUT;
    stk__point_lut(linear_fn, &k, in->c, pl->out_dtype, pl->lut);
  } else {
    pl->kind = STK__CG_POINT;
    pl->point_op = STK_GPU_CLR_LINEAR;
    pl->p[0] = k.mul, pl->p[1] = k.add;
  }
  return STK_OK;
}

/* Contrast around the image's mean luma: the sums are taken on the device. */
static stk_status mean_contrast_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                     stk__cg_plan *pl, int dtype_arg, double c) {
  STK_TRY(stk__color_out_dtype(node, s, dtype_arg, in->dtype, &pl->out_dtype));
  double nb = 1.0 * stk__dtype_full_range(pl->out_dtype) / stk__dtype_full_range(in->dtype);
  pl->kind = STK__CG_STATS;
  pl->mode = STK_GPU_CLR_MEAN_CONTRAST;
  pl->p[0] = nb * c, pl->p[1] = nb, pl->p[2] = 0.0 * stk__dtype_full_range(pl->out_dtype),
  pl->p[3] = c;
  return STK_OK;
}

/* A Pillow blend with a constant (brightness): a table. */
static stk_status pil_const_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                 stk__cg_plan *pl, int dtype_arg, uint8_t degenerate, float alpha) {
  STK_TRY(stk__color_out_dtype(node, s, dtype_arg, in->dtype, &pl->out_dtype));
  STK_TRY(check_pil_types(node, s, in->dtype, pl->out_dtype));
  pl->kind = STK__CG_LUT;
  uint8_t *lut = pl->lut;
  for (int v = 0; v < 256; v++) lut[v] = stk_color_blend1(degenerate, (uint8_t)v, alpha);
  for (int k = 1; k < in->c; k++) memcpy(lut + k * 256, lut, 256);
  return STK_OK;
}

static stk_status gpu_channels(stk__node *node, stk__sample *s, const stk__cg_in *in,
                               int channels) {
  if (in->c != channels)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects %d channels, got %d", channels,
                      in->c);
  return STK_OK;
}

/* ---- brightness / contrast / brightness_contrast ---- */

/* out = shift * range_out + b * (cc + c * (in - cc)), with b rescaled by range_out /
 * range_in so that e.g. uint8 -> float32 maps 255 to 1.0 (DALI's normalisation). */
static stk_status brightness_contrast_apply(stk__node *node, stk__sample *s, int dtype_arg,
                                            double b, double shift, double c, bool has_cc,
                                            double cc) {
  stk__image src, dst;
  STK_TRY(open_images(node, s, dtype_arg, 0, &src, &dst));
  if (!has_cc) cc = stk__dtype_half_range(src.dtype);
  double nb = b * stk__dtype_full_range(dst.dtype) / stk__dtype_full_range(src.dtype);
  linear_ctx k = {nb * c, stk_color_bc_add(shift * stk__dtype_full_range(dst.dtype), nb, cc, c)};
  stk_status st;
  size_t bytes = stk__point_map_scratch(&src, &dst);
  void *scratch = sample_scratch(node, s, bytes, &st);
  if (!scratch) return st;
  return stk__sample_wrap(stk__point_map(&src, &dst, linear_fn, &k, scratch, bytes), node, s);
}

#define FINITE -DBL_MAX, DBL_MAX
#define DTYPE_ARG                                                                  \
  {                                                                                \
    "dtype", STK_ARG_STRING, 0, "\"\"", 0, 0, STK__COLOR_DTYPE_CHOICES,            \
        "output type: \"\" (the input's), uint8, int16, int32, float16 or float32" \
  }

enum { B_BRIGHTNESS, B_SHIFT, B_DTYPE, B_PIL, BRIGHTNESS_ARGS_COUNT_ };
static const stk_arg_schema brightness_args[] = {
    [B_BRIGHTNESS] = {.name = "brightness",
                      .type = STK_ARG_FLOAT,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .default_text = "1.0",
                      .doc = "multiplier; 1 keeps the image"},
    [B_SHIFT] =
        {.name = "brightness_shift",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "0.0",
         .doc =
             "added after scaling, in units of the output type's full range (255 for uint8, 1 for "
             "floats)"},
    [B_DTYPE] = DTYPE_ARG,
    [B_PIL] =
        {.name = "pil",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc = "Pillow's ImageEnhance.Brightness instead: Image.blend(black, image, brightness), "
                "computed in float32 and truncated (uint8 only; brightness_shift must stay 0)"},
};
STK__CHECK_ARGS(brightness_args, BRIGHTNESS_ARGS_COUNT_);

static stk_status brightness_run(stk__node *node, stk__sample *s) {
  double b, shift;
  STK_TRY(stk__float_arg_in(node, s, B_BRIGHTNESS, "brightness", FINITE, &b));
  STK_TRY(stk__float_arg_in(node, s, B_SHIFT, "brightness_shift", FINITE, &shift));
  if (!stk__arg_bool(node, s, B_PIL))
    return brightness_contrast_apply(node, s, B_DTYPE, b, shift, 1.0, false, 0.0);
  if (shift != 0.0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "brightness_shift = %g cannot be used with pil=true", shift);
  stk__image src, dst;
  STK_TRY(open_images(node, s, B_DTYPE, 0, &src, &dst));
  STK_TRY(check_pil(node, s, &src, &dst));
  stk__pil_brightness(&src, &dst, (float)b);
  return STK_OK;
}

static stk_status brightness_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                  stk__cg_plan *pl) {
  double b, shift;
  STK_TRY(stk__float_arg_in(node, s, B_BRIGHTNESS, "brightness", FINITE, &b));
  STK_TRY(stk__float_arg_in(node, s, B_SHIFT, "brightness_shift", FINITE, &shift));
  if (!stk__arg_bool(node, s, B_PIL))
    return bc_plan(node, s, in, pl, B_DTYPE, b, shift, 1.0, false, 0.0);
  if (shift != 0.0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "brightness_shift = %g cannot be used with pil=true", shift);
  return pil_const_plan(node, s, in, pl, B_DTYPE, 0, (float)b);
}

static stk_status brightness_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, brightness_plan);
}

static const stk_op_schema brightness_schema = {
    .name = "brightness",
    .doc =
        "Scales the brightness (DALI's brightness): out = brightness * in + brightness_shift * "
        "full_range, where full_range is the output type's maximum (255 for uint8) or 1 for "
        "floats; a uint8 -> float output is normalised to [0, 1]. With pil=true, Pillow's "
        "ImageEnhance.Brightness (truncating blend with black) as AutoAugment uses it.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof brightness_args / sizeof brightness_args[0],
    .args = brightness_args,
    .gpu_check =
        "b = random.uniform(range=[0.0, 2.0])\n"
        "s = random.uniform(range=[-0.2, 0.2])\n"
        "return brightness(IN, brightness=b, brightness_shift=s, device=@)",
};
const stk__op_def stk__op_brightness = {
    .schema = &brightness_schema,
    .run_sample = brightness_run,
    .run_gpu = brightness_run_gpu,
};

enum { C_CONTRAST, C_CENTER, C_DTYPE, C_PIL, C_MEAN, CONTRAST_ARGS_COUNT_ };
static const stk_arg_schema contrast_args[] = {
    [C_CONTRAST] = {.name = "contrast",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "1.0",
                    .doc = "multiplier of the distance to contrast_center; 0 gives a uniform grey"},
    [C_CENTER] =
        {.name = "contrast_center",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc = "the value kept by the contrast change, in input units; default: half the input "
                "type's range (128 for uint8, 0.5 for floats). May be fed per sample"},
    [C_DTYPE] = DTYPE_ARG,
    [C_PIL] =
        {.name = "pil",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "Pillow's ImageEnhance.Contrast instead: the centre is int(mean(luma) + 0.5) of the "
             "image's ITU-R 601-2 integer luma (its own mean for 1 channel), then Image.blend("
             "centre, image, contrast) truncated (uint8 only)"},
    [C_MEAN] =
        {.name = "mean_center",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "centre on the image's mean luma, 0.299 R + 0.587 G + 0.114 B averaged over the image "
             "in float64 (the mean of all values unless 3 channels), with only the output rounded: "
             "DALI's AutoAugment contrast"},
};
STK__CHECK_ARGS(contrast_args, CONTRAST_ARGS_COUNT_);

static stk_status contrast_init(stk__node *node) {
  bool pil = stk__arg_bool(node, NULL, C_PIL), mean = stk__arg_bool(node, NULL, C_MEAN);
  bool cc = stk__arg_given(node, C_CENTER);
  if ((pil && cc) || (mean && cc) || (pil && mean))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "contrast_center, mean_center and pil=true exclude each other (each "
                      "chooses the centre)");
  return STK_OK;
}

static stk_status contrast_run(stk__node *node, stk__sample *s) {
  double c, cc = 0.0;
  STK_TRY(stk__float_arg_in(node, s, C_CONTRAST, "contrast", FINITE, &c));
  bool has_cc = stk__arg_given(node, C_CENTER);
  if (has_cc) STK_TRY(stk__float_arg_in(node, s, C_CENTER, "contrast_center", FINITE, &cc));
  if (stk__arg_bool(node, s, C_MEAN)) {
    stk__image src;
    STK_TRY(stk__image_input(node, s, 0, color_in_types, N_COLOR_IN_TYPES, &src));
    cc = stk__image_mean_luma(&src), has_cc = true;
  }
  if (!stk__arg_bool(node, s, C_PIL))
    return brightness_contrast_apply(node, s, C_DTYPE, 1.0, 0.0, c, has_cc, cc);
  stk__image src, dst;
  STK_TRY(open_images(node, s, C_DTYPE, 0, &src, &dst));
  STK_TRY(check_pil(node, s, &src, &dst));
  stk__pil_contrast(&src, &dst, (float)c);
  return STK_OK;
}

static stk_status contrast_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                stk__cg_plan *pl) {
  double c, cc = 0.0;
  STK_TRY(stk__float_arg_in(node, s, C_CONTRAST, "contrast", FINITE, &c));
  bool has_cc = stk__arg_given(node, C_CENTER);
  if (has_cc) STK_TRY(stk__float_arg_in(node, s, C_CENTER, "contrast_center", FINITE, &cc));
  if (stk__arg_bool(node, s, C_MEAN)) return mean_contrast_plan(node, s, in, pl, C_DTYPE, c);
  if (!stk__arg_bool(node, s, C_PIL))
    return bc_plan(node, s, in, pl, C_DTYPE, 1.0, 0.0, c, has_cc, cc);
  STK_TRY(stk__color_out_dtype(node, s, C_DTYPE, in->dtype, &pl->out_dtype));
  STK_TRY(check_pil_types(node, s, in->dtype, pl->out_dtype));
  pl->kind = STK__CG_STATS; /* the centre is the image's rounded mean luma */
  pl->mode = STK_GPU_CLR_PIL_CONTRAST;
  pl->p[0] = c;
  return STK_OK;
}

static stk_status contrast_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, contrast_plan);
}

static const stk_op_schema contrast_schema = {
    .name = "contrast",
    .doc =
        "Changes the contrast (DALI's contrast): out = contrast_center + contrast * (in - "
        "contrast_center). mean_center=true centres on the image's mean luma (DALI's "
        "AutoAugment contrast); pil=true is Pillow's ImageEnhance.Contrast (blend with the "
        "image's rounded integer mean luma, truncated), which torchvision's AutoAugment uses.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof contrast_args / sizeof contrast_args[0],
    .args = contrast_args,
    .gpu_check =
        "c = random.uniform(range=[0.0, 2.0])\n"
        "return contrast(IN, contrast=c, device=@)",
};
const stk__op_def stk__op_contrast = {
    .schema = &contrast_schema,
    .init = contrast_init,
    .run_sample = contrast_run,
    .run_gpu = contrast_run_gpu,
};

enum { BC_BRIGHTNESS, BC_SHIFT, BC_CONTRAST, BC_CENTER, BC_DTYPE, BC_ARGS_COUNT_ };
static const stk_arg_schema bc_args[] = {
    [BC_BRIGHTNESS] = {.name = "brightness",
                       .type = STK_ARG_FLOAT,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .default_text = "1.0",
                       .doc = "multiplier"},
    [BC_SHIFT] =
        {.name = "brightness_shift",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "0.0",
         .doc = "added, in units of the output type's full range (255 for uint8, 1 for floats)"},
    [BC_CONTRAST] = {.name = "contrast",
                     .type = STK_ARG_FLOAT,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .default_text = "1.0",
                     .doc = "multiplier of the distance to contrast_center"},
    [BC_CENTER] =
        {.name = "contrast_center",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc = "the value kept by the contrast change, in input units; default: half the input "
                "type's range (128 for uint8, 0.5 for floats)"},
    [BC_DTYPE] = DTYPE_ARG,
};
STK__CHECK_ARGS(bc_args, BC_ARGS_COUNT_);

static stk_status bc_run(stk__node *node, stk__sample *s) {
  double b, shift, c, cc = 0.0;
  STK_TRY(stk__float_arg_in(node, s, BC_BRIGHTNESS, "brightness", FINITE, &b));
  STK_TRY(stk__float_arg_in(node, s, BC_SHIFT, "brightness_shift", FINITE, &shift));
  STK_TRY(stk__float_arg_in(node, s, BC_CONTRAST, "contrast", FINITE, &c));
  bool has_cc = stk__arg_given(node, BC_CENTER);
  if (has_cc) STK_TRY(stk__float_arg_in(node, s, BC_CENTER, "contrast_center", FINITE, &cc));
  return brightness_contrast_apply(node, s, BC_DTYPE, b, shift, c, has_cc, cc);
}

static stk_status bc_gpu_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                              stk__cg_plan *pl) {
  double b, shift, c, cc = 0.0;
  STK_TRY(stk__float_arg_in(node, s, BC_BRIGHTNESS, "brightness", FINITE, &b));
  STK_TRY(stk__float_arg_in(node, s, BC_SHIFT, "brightness_shift", FINITE, &shift));
  STK_TRY(stk__float_arg_in(node, s, BC_CONTRAST, "contrast", FINITE, &c));
  bool has_cc = stk__arg_given(node, BC_CENTER);
  if (has_cc) STK_TRY(stk__float_arg_in(node, s, BC_CENTER, "contrast_center", FINITE, &cc));
  return bc_plan(node, s, in, pl, BC_DTYPE, b, shift, c, has_cc, cc);
}

static stk_status bc_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, bc_gpu_plan);
}

static const stk_op_schema bc_schema = {
    .name = "brightness_contrast",
    .doc =
        "Brightness and contrast in one pass (DALI's brightness_contrast): out = "
        "brightness_shift * full_range + brightness * (contrast_center + contrast * (in - "
        "contrast_center)); full_range is 255 for uint8 outputs and 1 for floats.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof bc_args / sizeof bc_args[0],
    .args = bc_args,
    .gpu_check =
        "b = random.uniform(range=[0.5, 1.5])\n"
        "c = random.uniform(range=[0.5, 1.5])\n"
        "return brightness_contrast(IN, brightness=b, contrast=c, device=@)",
};
const stk__op_def stk__op_brightness_contrast = {
    .schema = &bc_schema,
    .run_sample = bc_run,
    .run_gpu = bc_run_gpu,
};

/* ---- hsv / hue / saturation / color_twist ---- */

/* Applies b * c * HSV(hue, sat, value) plus the contrast offset (half - half * c) * b. */
static stk_status twist_apply(stk__node *node, stk__sample *s, int dtype_arg, bool bgr, double hue,
                              double sat, double value, double b, double c) {
  stk__image src, dst;
  STK_TRY(open_images(node, s, dtype_arg, 3, &src, &dst));
  stk__affine_color a = {.cin = 3, .cout = 3};
  stk__hsv_matrix(hue, sat, value, bgr, a.m);
  for (int i = 0; i < 9; i++) a.m[i] *= b * c;
  double half = stk__dtype_half_range(src.dtype);
  a.off[0] = a.off[1] = a.off[2] = (half - half * c) * b;
  stk_status st;
  size_t bytes = stk__affine_scratch(&src, &dst);
  void *scratch = sample_scratch(node, s, bytes, &st);
  if (!scratch) return st;
  return stk__sample_wrap(stk__affine_apply(&src, &dst, &a, scratch, bytes), node, s);
}

/* The GPU's version of twist_apply: the same matrix and offset, applied per pixel. */
static stk_status twist_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                             stk__cg_plan *pl, int dtype_arg, bool bgr, double hue, double sat,
                             double value, double b, double c) {
  STK_TRY(gpu_channels(node, s, in, 3));
  STK_TRY(stk__color_out_dtype(node, s, dtype_arg, in->dtype, &pl->out_dtype));
  stk__hsv_matrix(hue, sat, value, bgr, pl->m);
  for (int i = 0; i < 9; i++) pl->m[i] *= b * c;
  double half = stk__dtype_half_range(in->dtype);
  pl->off[0] = pl->off[1] = pl->off[2] = (half - half * c) * b;
  pl->kind = STK__CG_PIXEL;
  pl->mode = STK_GPU_CLR_AFFINE;
  return STK_OK;
}

static bool image_type_bgr(const stk__node *node, int arg) {
  return strcmp(stk__arg_string(node, arg), "BGR") == 0;
}

#define IMAGE_TYPE_ARG                                           \
  {                                                              \
    "image_type", STK_ARG_STRING, 0, "\"RGB\"", 0, 0, "RGB|BGR", \
        "channel order of the input and output"                  \
  }
#define HUE_ARG                                                        \
  {                                                                    \
    "hue", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "0.0", 0, 0, NULL,      \
        "hue rotation in degrees (a rotation of the YIQ chroma plane)" \
  }

enum { HSV_HUE, HSV_SAT, HSV_VALUE, HSV_DTYPE, HSV_ARGS_COUNT_ };
static const stk_arg_schema hsv_args[] = {
    [HSV_HUE] = HUE_ARG,
    [HSV_SAT] = {.name = "saturation",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "1.0",
                 .doc = "multiplier of the chroma (I and Q); 0 gives grey"},
    [HSV_VALUE] = {.name = "value",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .default_text = "1.0",
                   .doc = "multiplier of all of YIQ"},
    [HSV_DTYPE] = DTYPE_ARG,
};
STK__CHECK_ARGS(hsv_args, HSV_ARGS_COUNT_);

static stk_status hsv_run(stk__node *node, stk__sample *s) {
  double h, sat, v;
  STK_TRY(stk__float_arg_in(node, s, HSV_HUE, "hue", FINITE, &h));
  STK_TRY(stk__float_arg_in(node, s, HSV_SAT, "saturation", FINITE, &sat));
  STK_TRY(stk__float_arg_in(node, s, HSV_VALUE, "value", FINITE, &v));
  return twist_apply(node, s, HSV_DTYPE, false, h, sat, v, 1.0, 1.0);
}

#define YIQ_DOC                                                                          \
  " As DALI, the change is a linear map in RGB: Yiq2Rgb * H * S * V * Rgb2Yiq with the " \
  "NTSC YIQ matrices (hue rotates the IQ plane, saturation scales it, value scales "     \
  "YIQ). Needs 3 channels."

static stk_status hsv_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                           stk__cg_plan *pl) {
  double h, sat, v;
  STK_TRY(stk__float_arg_in(node, s, HSV_HUE, "hue", FINITE, &h));
  STK_TRY(stk__float_arg_in(node, s, HSV_SAT, "saturation", FINITE, &sat));
  STK_TRY(stk__float_arg_in(node, s, HSV_VALUE, "value", FINITE, &v));
  return twist_plan(node, s, in, pl, HSV_DTYPE, false, h, sat, v, 1.0, 1.0);
}

static stk_status hsv_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, hsv_plan);
}

static const stk_op_schema hsv_schema = {
    .name = "hsv",
    .doc =
        "Adjusts hue (additive, degrees), saturation and value (multiplicative) of RGB images "
        "(DALI's hsv)." YIQ_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof hsv_args / sizeof hsv_args[0],
    .args = hsv_args,
    .gpu_check =
        "# atol=1\n"
        "h = random.uniform(range=[-60.0, 60.0])\n"
        "s = random.uniform(range=[0.3, 1.7])\n"
        "v = random.uniform(range=[0.5, 1.5])\n"
        "return hsv(IN, hue=h, saturation=s, value=v, device=@)",
};
const stk__op_def stk__op_hsv = {
    .schema = &hsv_schema,
    .run_sample = hsv_run,
    .run_gpu = hsv_run_gpu,
};

enum { HUE_HUE, HUE_DTYPE, HUE_IMAGE_TYPE, HUE_ARGS_COUNT_ };
static const stk_arg_schema hue_args[] = {
    [HUE_HUE] = HUE_ARG,
    [HUE_DTYPE] = DTYPE_ARG,
    [HUE_IMAGE_TYPE] = IMAGE_TYPE_ARG,
};
STK__CHECK_ARGS(hue_args, HUE_ARGS_COUNT_);

static stk_status hue_run(stk__node *node, stk__sample *s) {
  double h;
  STK_TRY(stk__float_arg_in(node, s, HUE_HUE, "hue", FINITE, &h));
  return twist_apply(node, s, HUE_DTYPE, image_type_bgr(node, HUE_IMAGE_TYPE), h, 1.0, 1.0, 1.0,
                     1.0);
}

static stk_status hue_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                           stk__cg_plan *pl) {
  double h;
  STK_TRY(stk__float_arg_in(node, s, HUE_HUE, "hue", FINITE, &h));
  return twist_plan(node, s, in, pl, HUE_DTYPE, image_type_bgr(node, HUE_IMAGE_TYPE), h, 1.0, 1.0,
                    1.0, 1.0);
}

static stk_status hue_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, hue_plan);
}

static const stk_op_schema hue_schema = {
    .name = "hue",
    .doc = "Rotates the hue by `hue` degrees (DALI's hue)." YIQ_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof hue_args / sizeof hue_args[0],
    .args = hue_args,
    .gpu_check =
        "# atol=1\n"
        "h = random.uniform(range=[-90.0, 90.0])\n"
        "return hue(IN, hue=h, device=@)",
};
const stk__op_def stk__op_hue = {
    .schema = &hue_schema,
    .run_sample = hue_run,
    .run_gpu = hue_run_gpu,
};

enum { SAT_SAT, SAT_DTYPE, SAT_IMAGE_TYPE, SAT_PIL, SATURATION_ARGS_COUNT_ };
static const stk_arg_schema saturation_args[] = {
    [SAT_SAT] = {.name = "saturation",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "1.0",
                 .doc =
                     "saturation factor: 0 gives grey, 1 keeps the image (>= 0 unless pil=true)"},
    [SAT_DTYPE] = DTYPE_ARG,
    [SAT_IMAGE_TYPE] = IMAGE_TYPE_ARG,
    [SAT_PIL] =
        {.name = "pil",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "Pillow's ImageEnhance.Color instead: Image.blend(luma, image, saturation) with PIL's "
             "integer ITU-R 601-2 luma, truncated (uint8 RGB only)"},
};
STK__CHECK_ARGS(saturation_args, SATURATION_ARGS_COUNT_);

static stk_status saturation_run(stk__node *node, stk__sample *s) {
  bool pil = stk__arg_bool(node, s, SAT_PIL);
  double sat;
  STK_TRY(stk__float_arg_in(node, s, SAT_SAT, "saturation", pil ? -DBL_MAX : 0.0, DBL_MAX, &sat));
  if (!pil)
    return twist_apply(node, s, SAT_DTYPE, image_type_bgr(node, SAT_IMAGE_TYPE), 0.0, sat, 1.0, 1.0,
                       1.0);
  if (image_type_bgr(node, SAT_IMAGE_TYPE))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "pil=true needs image_type \"RGB\"");
  stk__image src, dst;
  STK_TRY(open_images(node, s, SAT_DTYPE, 3, &src, &dst));
  STK_TRY(check_pil(node, s, &src, &dst));
  stk__pil_color(&src, &dst, (float)sat);
  return STK_OK;
}

static stk_status saturation_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                  stk__cg_plan *pl) {
  bool pil = stk__arg_bool(node, s, SAT_PIL);
  double sat;
  STK_TRY(stk__float_arg_in(node, s, SAT_SAT, "saturation", pil ? -DBL_MAX : 0.0, DBL_MAX, &sat));
  if (!pil)
    return twist_plan(node, s, in, pl, SAT_DTYPE, image_type_bgr(node, SAT_IMAGE_TYPE), 0.0, sat,
                      1.0, 1.0, 1.0);
  if (image_type_bgr(node, SAT_IMAGE_TYPE))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "pil=true needs image_type \"RGB\"");
  STK_TRY(gpu_channels(node, s, in, 3));
  STK_TRY(stk__color_out_dtype(node, s, SAT_DTYPE, in->dtype, &pl->out_dtype));
  STK_TRY(check_pil_types(node, s, in->dtype, pl->out_dtype));
  pl->kind = STK__CG_PIXEL;
  pl->mode = STK_GPU_CLR_PIL_COLOR;
  pl->factor = (float)sat;
  return STK_OK;
}

static stk_status saturation_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, saturation_plan);
}

static const stk_op_schema saturation_schema = {
    .name = "saturation",
    .doc = "Changes the saturation (DALI's saturation)." YIQ_DOC
           " With pil=true, Pillow's "
           "ImageEnhance.Color (truncating blend with the luma image) as AutoAugment uses it.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof saturation_args / sizeof saturation_args[0],
    .args = saturation_args,
    .gpu_check =
        "# atol=1\n"
        "s = random.uniform(range=[0.0, 2.0])\n"
        "return saturation(IN, saturation=s, device=@)",
};
const stk__op_def stk__op_saturation = {
    .schema = &saturation_schema,
    .run_sample = saturation_run,
    .run_gpu = saturation_run_gpu,
};

enum { CT_BRIGHTNESS, CT_CONTRAST, CT_HUE, CT_SAT, CT_DTYPE, CT_IMAGE_TYPE, TWIST_ARGS_COUNT_ };
static const stk_arg_schema twist_args[] = {
    [CT_BRIGHTNESS] = {.name = "brightness",
                       .type = STK_ARG_FLOAT,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .default_text = "1.0",
                       .doc = "brightness factor (>= 0): 0 black, 1 unchanged"},
    [CT_CONTRAST] =
        {.name = "contrast",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "1.0",
         .doc = "contrast factor (>= 0) around half the input type's range: 0 uniform grey"},
    [CT_HUE] = HUE_ARG,
    [CT_SAT] = {.name = "saturation",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "1.0",
                .doc = "saturation factor (>= 0): 0 grey"},
    [CT_DTYPE] = DTYPE_ARG,
    [CT_IMAGE_TYPE] = IMAGE_TYPE_ARG,
};
STK__CHECK_ARGS(twist_args, TWIST_ARGS_COUNT_);

static stk_status twist_run(stk__node *node, stk__sample *s) {
  double b, c, h, sat;
  STK_TRY(stk__float_arg_in(node, s, CT_BRIGHTNESS, "brightness", 0.0, DBL_MAX, &b));
  STK_TRY(stk__float_arg_in(node, s, CT_CONTRAST, "contrast", 0.0, DBL_MAX, &c));
  STK_TRY(stk__float_arg_in(node, s, CT_HUE, "hue", FINITE, &h));
  STK_TRY(stk__float_arg_in(node, s, CT_SAT, "saturation", 0.0, DBL_MAX, &sat));
  return twist_apply(node, s, CT_DTYPE, image_type_bgr(node, CT_IMAGE_TYPE), h, sat, 1.0, b, c);
}

static stk_status twist_gpu_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                 stk__cg_plan *pl) {
  double b, c, h, sat;
  STK_TRY(stk__float_arg_in(node, s, CT_BRIGHTNESS, "brightness", 0.0, DBL_MAX, &b));
  STK_TRY(stk__float_arg_in(node, s, CT_CONTRAST, "contrast", 0.0, DBL_MAX, &c));
  STK_TRY(stk__float_arg_in(node, s, CT_HUE, "hue", FINITE, &h));
  STK_TRY(stk__float_arg_in(node, s, CT_SAT, "saturation", 0.0, DBL_MAX, &sat));
  return twist_plan(node, s, in, pl, CT_DTYPE, image_type_bgr(node, CT_IMAGE_TYPE), h, sat, 1.0, b,
                    c);
}

static stk_status twist_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, color_in_types, N_COLOR_IN_TYPES, twist_gpu_plan);
}

static const stk_op_schema twist_schema = {
    .name = "color_twist",
    .doc =
        "Hue, saturation, brightness and contrast in one linear map (DALI's color_twist): out "
        "= brightness * contrast * HSV(hue, saturation) * in + (half - half * contrast) * "
        "brightness, where half is half the input type's range (128 for uint8, 0.5 for "
        "floats) and HSV is hsv's YIQ-based matrix. Needs 3 channels.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof twist_args / sizeof twist_args[0],
    .args = twist_args,
    .gpu_check =
        "# atol=1\n"
        "b = random.uniform(range=[0.7, 1.3])\n"
        "c = random.uniform(range=[0.7, 1.3])\n"
        "h = random.uniform(range=[-30.0, 30.0])\n"
        "s = random.uniform(range=[0.5, 1.5])\n"
        "return color_twist(IN, brightness=b, contrast=c, hue=h, saturation=s, device=@)",
};
const stk__op_def stk__op_color_twist = {
    .schema = &twist_schema,
    .run_sample = twist_run,
    .run_gpu = twist_run_gpu,
};

/* ---- color_space_conversion ---- */

enum { CS_IMAGE_TYPE, CS_OUTPUT_TYPE, CS_ARGS_COUNT_ };
static const stk_arg_schema cs_args[] = {
    [CS_IMAGE_TYPE] = {.name = "image_type",
                       .type = STK_ARG_STRING,
                       .flags = STK_ARGF_REQUIRED,
                       .choices = STK__CS_CHOICES,
                       .doc = "colour space of the input"},
    [CS_OUTPUT_TYPE] = {.name = "output_type",
                        .type = STK_ARG_STRING,
                        .flags = STK_ARGF_REQUIRED,
                        .choices = STK__CS_CHOICES,
                        .doc = "colour space of the output"},
};
STK__CHECK_ARGS(cs_args, CS_ARGS_COUNT_);

static stk_status cs_run(stk__node *node, stk__sample *s) {
  stk__colorspace from = STK__CS_RGB, to = STK__CS_RGB; /* the schema's choices hold */
  stk__colorspace_parse(stk__arg_string(node, CS_IMAGE_TYPE), &from);
  stk__colorspace_parse(stk__arg_string(node, CS_OUTPUT_TYPE), &to);
  stk__image src, dst;
  static const stk_dtype types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  STK_TRY(stk__image_input(node, s, 0, types, 2, &src));
  if (src.c != stk__colorspace_channels(from))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "image_type %s needs %d channels, "
                      "the input has %lld",
                      stk__arg_string(node, CS_IMAGE_TYPE), stk__colorspace_channels(from),
                      (long long)src.c);
  dst = src;
  dst.c = stk__colorspace_channels(to);
  STK_TRY(stk__image_output(s, 3, &dst));
  stk__affine_color a;
  stk__colorspace_affine(from, to, src.dtype, &a);
  stk_status st;
  size_t bytes = stk__affine_scratch(&src, &dst);
  void *scratch = sample_scratch(node, s, bytes, &st);
  if (!scratch) return st;
  return stk__sample_wrap(stk__affine_apply(&src, &dst, &a, scratch, bytes), node, s);
}

static const stk_dtype u8_f32_types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};

static stk_status cs_plan(stk__node *node, stk__sample *s, const stk__cg_in *in, stk__cg_plan *pl) {
  stk__colorspace from = STK__CS_RGB, to = STK__CS_RGB;
  stk__colorspace_parse(stk__arg_string(node, CS_IMAGE_TYPE), &from);
  stk__colorspace_parse(stk__arg_string(node, CS_OUTPUT_TYPE), &to);
  if (in->c != stk__colorspace_channels(from))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "image_type %s needs %d channels, "
                      "the input has %d",
                      stk__arg_string(node, CS_IMAGE_TYPE), stk__colorspace_channels(from), in->c);
  stk__affine_color a;
  stk__colorspace_affine(from, to, in->dtype, &a);
  pl->kind = STK__CG_PIXEL;
  pl->mode = STK_GPU_CLR_AFFINE;
  pl->out_c = a.cout, pl->out_ndim = 3;
  memcpy(pl->m, a.m, sizeof pl->m);
  memcpy(pl->off, a.off, sizeof pl->off);
  return STK_OK;
}

static stk_status cs_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_f32_types, 2, cs_plan);
}

static const stk_op_schema cs_schema = {
    .name = "color_space_conversion",
    .doc =
        "Converts between RGB, BGR, GRAY and YCbCr (DALI's color_space_conversion; this is "
        "also the way to get a grayscale image with DALI's definition). GRAY is the "
        "full-range BT.601 luma 0.299 R + 0.587 G + 0.114 B (1 channel); YCbCr is ITU-R "
        "BT.601 with Y in 16..235 and chroma centred at 128 (uint8; 0.0625 and 0.5 for "
        "float32 in [0, 1]); GRAY -> RGB replicates. uint8 or float32, HWC; computed in "
        "float64, rounded half away from zero.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof cs_args / sizeof cs_args[0],
    .args = cs_args,
    .gpu_check =
        "# atol=1\n"
        "return color_space_conversion(IN, image_type=\"RGB\", output_type=\"YCbCr\", device=@)",
};
const stk__op_def stk__op_color_space_conversion = {
    .schema = &cs_schema,
    .run_sample = cs_run,
    .run_gpu = cs_run_gpu,
};

/* ---- grayscale (stoker) ---- */

enum { G_CHANNELS, GRAY_ARGS_COUNT_ };
static const stk_arg_schema gray_args[] = {
    [G_CHANNELS] =
        {.name = "num_output_channels",
         .type = STK_ARG_INT,
         .flags = STK_ARGF_RANGE,
         .default_text = "1",
         .min = 1,
         .max = 3,
         .doc = "1, or 3 for the luma replicated into R, G and B (torchvision's Grayscale)"},
};
STK__CHECK_ARGS(gray_args, GRAY_ARGS_COUNT_);

static stk_status gray_init(stk__node *node) {
  int64_t n = stk__arg_int(node, NULL, G_CHANNELS);
  if (n != 1 && n != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "num_output_channels = %lld: must be 1 or 3", (long long)n);
  return STK_OK;
}

static stk_status gray_run(stk__node *node, stk__sample *s) {
  static const stk_dtype types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  stk__image src, dst;
  STK_TRY(stk__image_input(node, s, 0, types, 2, &src));
  if (src.c != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects an RGB image (3 channels), "
                      "got %lld",
                      (long long)src.c);
  dst = src;
  dst.c = stk__arg_int(node, NULL, G_CHANNELS);
  STK_TRY(stk__image_output(s, 3, &dst));
  size_t n = (size_t)(src.h * src.w), co = (size_t)dst.c;
  if (src.dtype == STK_DTYPE_UINT8) { /* Pillow's convert("L"): what torchvision does */
    const uint8_t *p = src.data;
    uint8_t *d = dst.data;
    for (size_t i = 0; i < n; i++, p += 3)
      for (size_t k = 0; k < co; k++) *d++ = stk__pil_luma(p[0], p[1], p[2]);
    return STK_OK;
  }
  const float *p = src.data;
  float *d = dst.data;
  for (size_t i = 0; i < n; i++, p += 3) {
    float l = (float)(KR * p[0] + KG * p[1] + KB * p[2]);
    for (size_t k = 0; k < co; k++) *d++ = l;
  }
  return STK_OK;
}

static stk_status gray_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                            stk__cg_plan *pl) {
  if (in->c != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects an RGB image (3 channels), "
                      "got %d",
                      in->c);
  pl->kind = STK__CG_PIXEL;
  pl->out_c = (int)stk__arg_int(node, NULL, G_CHANNELS), pl->out_ndim = 3;
  if (in->dtype == STK_DTYPE_UINT8) {
    pl->mode = STK_GPU_CLR_PIL_GRAY;
    return STK_OK;
  }
  /* float32: (KR r + KG g) + KB b in float64, as gray_run (0 + x is exact) */
  pl->mode = STK_GPU_CLR_AFFINE;
  for (int o = 0; o < pl->out_c; o++)
    pl->m[o * 3] = KR, pl->m[o * 3 + 1] = KG, pl->m[o * 3 + 2] = KB;
  return STK_OK;
}

static stk_status gray_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_f32_types, 2, gray_plan);
}

static const stk_op_schema gray_schema = {
    .name = "grayscale",
    .doc =
        "Converts RGB to grayscale the way torchvision's Grayscale does on PIL images (a "
        "stoker operator; DALI spells this color_space_conversion(image_type=RGB, "
        "output_type=GRAY)): uint8 uses Pillow's convert(\"L\"), (19595 R + 38470 G + 7471 B + "
        "2^15) >> 16; float32 uses 0.299 R + 0.587 G + 0.114 B.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof gray_args / sizeof gray_args[0],
    .args = gray_args,
    .gpu_check = "return grayscale(IN, num_output_channels=3, device=@)",
};
const stk__op_def stk__op_grayscale = {
    .schema = &gray_schema,
    .init = gray_init,
    .run_sample = gray_run,
    .run_gpu = gray_run_gpu,
};
