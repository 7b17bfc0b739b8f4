/* rotate and warp_affine on the CPU, and the affine warp kernel behind them (see
 * geometry.h for the coordinate and sampling conventions). */
#include "geometry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_util.h"

#define PI 3.14159265358979323846

/* ---------------------------------------------------------------------------------- */
/* Matrices                                                                           */
/* ---------------------------------------------------------------------------------- */

void stk__affine_mul(const double a[6], const double b[6], double out[6]) {
  double r[6] = {
      a[0] * b[0] + a[1] * b[3],        a[0] * b[1] + a[1] * b[4],
      a[0] * b[2] + a[1] * b[5] + a[2], a[3] * b[0] + a[4] * b[3],
      a[3] * b[1] + a[4] * b[4],        a[3] * b[2] + a[4] * b[5] + a[5],
  };
  memcpy(out, r, sizeof r);
}

bool stk__affine_invert(const double m[6], double out[6]) {
  double det = m[0] * m[4] - m[1] * m[3];
  if (!isfinite(det) || det == 0.0) return false;
  double r[6];
  r[0] = m[4] / det, r[1] = -m[1] / det;
  r[3] = -m[3] / det, r[4] = m[0] / det;
  r[2] = -(r[0] * m[2] + r[1] * m[5]);
  r[5] = -(r[3] * m[2] + r[4] * m[5]);
  for (int i = 0; i < 6; i++)
    if (!isfinite(r[i])) return false;
  memcpy(out, r, sizeof r);
  return true;
}

void stk__rotate_canvas(int64_t in_h, int64_t in_w, double angle_deg, int64_t *out_h,
                        int64_t *out_w) {
  double a = angle_deg * (PI / 180.0);
  double c = fabs(cos(a)), s = fabs(sin(a));
  int64_t w = (int64_t)ceil(c * (double)in_w + s * (double)in_h - 0.01);
  int64_t h = (int64_t)ceil(c * (double)in_h + s * (double)in_w - 0.01);
  int64_t pw = (s <= c ? in_w : in_h) % 2, ph = (s <= c ? in_h : in_w) % 2;
  if (w % 2 != pw) w++;
  if (h % 2 != ph) h++;
  *out_w = w < 1 ? 1 : w;
  *out_h = h < 1 ? 1 : h;
}

void stk__rotate_matrix(double angle_deg, int64_t in_h, int64_t in_w, int64_t out_h,
                        int64_t out_w, double m[6]) {
  double a = angle_deg * (PI / 180.0);
  double c = cos(a), s = sin(a);
  double ox = 0.5 * (double)out_w, oy = 0.5 * (double)out_h;
  m[0] = c, m[1] = -s, m[2] = 0.5 * (double)in_w - (c * ox - s * oy);
  m[3] = s, m[4] = c, m[5] = 0.5 * (double)in_h - (s * ox + c * oy);
}

/* ---------------------------------------------------------------------------------- */
/* The warp kernel                                                                    */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  const uint8_t *u8; /* exactly one of u8 / f32 is set */
  const float *f32;
  int64_t w, h, c;
  size_t stride; /* elements per row */
  const float *fill;
  bool constant;
} source;

static inline float at(const source *S, size_t i) { return S->u8 ? S->u8[i] : S->f32[i]; }

/* Channel `ch` of pixel (x, y), which may lie outside: fill or the clamped edge pixel. */
static inline float tap(const source *S, int64_t x, int64_t y, int64_t ch) {
  if (x < 0 || y < 0 || x >= S->w || y >= S->h) {
    if (S->constant) return S->fill[ch];
    x = x < 0 ? 0 : x >= S->w ? S->w - 1 : x;
    y = y < 0 ? 0 : y >= S->h ? S->h - 1 : y;
  }
  return at(S, (size_t)y * S->stride + (size_t)(x * S->c + ch));
}

/* Keeps a coordinate (NaN included) within `margin` pixels of the image so it converts
 * to an integer safely; beyond that every tap is outside and the result is the same. */
static inline double tame(double v, int64_t n, double margin) {
  if (!(v > -margin)) return -margin;
  if (!(v < (double)n + margin)) return (double)n + margin;
  return v;
}

/* floor() of a tamed coordinate without a libm call (the x86-64 baseline has no SSE4.1
 * rounding instruction, so floor() is a function call in the inner loops). */
static inline int64_t ffloor(double v) {
  int64_t i = (int64_t)v;
  return i - (v < (double)i);
}

/* One output row of n pixels starting at source edge coordinates (x, y), stepping by
 * (dx, dy) per pixel. */
static void row_nearest(const source *S, double x, double y, double dx, double dy, int64_t n,
                        float *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    int64_t xi = ffloor(tame(x + dx * (double)i, S->w, 2.0));
    int64_t yi = ffloor(tame(y + dy * (double)i, S->h, 2.0));
    if (xi >= 0 && yi >= 0 && xi < S->w && yi < S->h) {
      size_t base = (size_t)yi * S->stride + (size_t)(xi * c);
      for (int64_t ch = 0; ch < c; ch++) out[ch] = at(S, base + (size_t)ch);
    } else {
      for (int64_t ch = 0; ch < c; ch++) out[ch] = tap(S, xi, yi, ch);
    }
  }
}

/* row_nearest for uint8 to uint8, copying bytes (the common AutoAugment case). */
static void row_nearest_u8(const source *S, const uint8_t *fill, double x, double y, double dx,
                           double dy, int64_t n, uint8_t *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    int64_t xi = ffloor(tame(x + dx * (double)i, S->w, 2.0));
    int64_t yi = ffloor(tame(y + dy * (double)i, S->h, 2.0));
    if (!(xi >= 0 && yi >= 0 && xi < S->w && yi < S->h)) {
      if (S->constant) {
        memcpy(out, fill, (size_t)c);
        continue;
      }
      xi = xi < 0 ? 0 : xi >= S->w ? S->w - 1 : xi;
      yi = yi < 0 ? 0 : yi >= S->h ? S->h - 1 : yi;
    }
    const uint8_t *px = S->u8 + (size_t)yi * S->stride + (size_t)(xi * c);
    if (c == 3) out[0] = px[0], out[1] = px[1], out[2] = px[2]; /* no memcpy call */
    else memcpy(out, px, (size_t)c);
  }
}

static void row_linear(const source *S, double x, double y, double dx, double dy, int64_t n,
                       float *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    double u = tame(x + dx * (double)i - 0.5, S->w, 3.0);
    double v = tame(y + dy * (double)i - 0.5, S->h, 3.0);
    int64_t x0 = ffloor(u), y0 = ffloor(v);
    float ax = (float)(u - (double)x0), ay = (float)(v - (double)y0);
    if (x0 >= 0 && y0 >= 0 && x0 + 1 < S->w && y0 + 1 < S->h) {
      size_t p = (size_t)y0 * S->stride + (size_t)(x0 * c), q = p + S->stride;
      for (int64_t ch = 0; ch < c; ch++) {
        float t = at(S, p) + (at(S, p + (size_t)c) - at(S, p)) * ax;
        float b = at(S, q) + (at(S, q + (size_t)c) - at(S, q)) * ax;
        out[ch] = t + (b - t) * ay;
        p++, q++;
      }
    } else {
      for (int64_t ch = 0; ch < c; ch++) {
        float t = tap(S, x0, y0, ch) + (tap(S, x0 + 1, y0, ch) - tap(S, x0, y0, ch)) * ax;
        float b = tap(S, x0, y0 + 1, ch) +
                  (tap(S, x0 + 1, y0 + 1, ch) - tap(S, x0, y0 + 1, ch)) * ax;
        out[ch] = t + (b - t) * ay;
      }
    }
  }
}

static void row_cubic(const source *S, double x, double y, double dx, double dy, int64_t n,
                      float *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    double u = tame(x + dx * (double)i - 0.5, S->w, 4.0);
    double v = tame(y + dy * (double)i - 0.5, S->h, 4.0);
    int64_t x0 = ffloor(u) - 1, y0 = ffloor(v) - 1;
    float wx[4], wy[4];
    for (int k = 0; k < 4; k++) {
      wx[k] = (float)stk__interp_filter(STK__INTERP_CUBIC, u - (double)(x0 + k));
      wy[k] = (float)stk__interp_filter(STK__INTERP_CUBIC, v - (double)(y0 + k));
    }
    bool inside = x0 >= 0 && y0 >= 0 && x0 + 3 < S->w && y0 + 3 < S->h;
    for (int64_t ch = 0; ch < c; ch++) {
      float acc = 0.0f;
      for (int j = 0; j < 4; j++) {
        float r = 0.0f;
        if (inside) {
          size_t p = (size_t)(y0 + j) * S->stride + (size_t)(x0 * c + ch);
          for (int k = 0; k < 4; k++) r += wx[k] * at(S, p + (size_t)(k * c));
        } else {
          for (int k = 0; k < 4; k++) r += wx[k] * tap(S, x0 + k, y0 + j, ch);
        }
        acc += wy[j] * r;
      }
      out[ch] = acc;
    }
  }
}

stk_status stk__warp_affine(const stk__image *src, const stk__image *dst,
                            const stk__warp_params *p, float *row) {
  if (src->h < 1 || src->w < 1 || src->c < 1 || dst->h < 1 || dst->w < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "empty image (%lldx%lld -> %lldx%lld)",
                    (long long)src->h, (long long)src->w, (long long)dst->h,
                    (long long)dst->w);
  if (dst->c != src->c)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "channel count %lld != %lld",
                    (long long)dst->c, (long long)src->c);
  bool src_ok = src->dtype == STK_DTYPE_UINT8 || src->dtype == STK_DTYPE_FLOAT32;
  bool dst_ok = dst->dtype == STK_DTYPE_UINT8 || dst->dtype == STK_DTYPE_FLOAT32;
  if (!src_ok || !dst_ok)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s -> %s: only uint8 and float32",
                    stk_dtype_name(src->dtype), stk_dtype_name(dst->dtype));
  for (int i = 0; i < 6; i++)
    if (!isfinite(p->m[i]))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "matrix element %d is not finite", i);
  void (*fn)(const source *, double, double, double, double, int64_t, float *);
  switch (p->interp) {
  case STK__INTERP_NEAREST: fn = row_nearest; break;
  case STK__INTERP_LINEAR: fn = row_linear; break;
  case STK__INTERP_CUBIC: fn = row_cubic; break;
  default:
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "interpolation must be nearest, linear or cubic");
  }
  source S = {.w = src->w, .h = src->h, .c = src->c, .fill = p->fill,
              .constant = p->constant_border};
  if (src->dtype == STK_DTYPE_UINT8) S.u8 = src->data;
  else S.f32 = src->data;
  S.stride = (size_t)(src->w * src->c);
  size_t n = (size_t)(dst->w * dst->c);
  /* nearest from uint8 to uint8 copies bytes; the fill is rounded as any output would be */
  uint8_t fill8[64];
  bool bytes = fn == row_nearest && S.u8 && dst->dtype == STK_DTYPE_UINT8 && S.c <= 64;
  if (bytes && S.constant)
    stk__convert(fill8, STK_DTYPE_UINT8, p->fill, STK_DTYPE_FLOAT32, (size_t)S.c);
  for (int64_t y = 0; y < dst->h; y++) {
    double yc = (double)y + 0.5;
    double sx = p->m[0] * 0.5 + p->m[1] * yc + p->m[2];
    double sy = p->m[3] * 0.5 + p->m[4] * yc + p->m[5];
    if (bytes) {
      row_nearest_u8(&S, fill8, sx, sy, p->m[0], p->m[3], dst->w,
                     (uint8_t *)dst->data + (size_t)y * n);
      continue;
    }
    float *out = dst->dtype == STK_DTYPE_FLOAT32 ? (float *)dst->data + (size_t)y * n : row;
    fn(&S, sx, sy, p->m[0], p->m[3], dst->w, out);
    if (dst->dtype == STK_DTYPE_UINT8)
      stk__convert((uint8_t *)dst->data + (size_t)y * n, STK_DTYPE_UINT8, row,
                   STK_DTYPE_FLOAT32, n);
  }
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* Shared operator plumbing                                                           */
/* ---------------------------------------------------------------------------------- */

#define WARP_INTERP_CHOICES "nearest|linear|cubic"
#define WARP_DTYPES "|uint8|int8|uint16|int16|uint32|int32|int64|float16|float32|float64|float"

/* Argument indices common to rotate and warp_affine. */
typedef struct {
  int size, fill_value, interp_type, dtype;
} warp_arg_ids;

typedef struct {
  stk__interp interp;
  bool has_dtype;
  stk_dtype dtype;
} warp_state;

static stk_status warp_init(stk__node *node, const warp_arg_ids *ids) {
  warp_state *st = stk__malloc(sizeof *st, "warp state");
  if (!st) return STK_ERR_OUT_OF_MEMORY;
  if (!stk__interp_parse(stk__arg_string(node, ids->interp_type), &st->interp) ||
      st->interp == STK__INTERP_LANCZOS3) {
    free(st);
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "interp_type = \"%s\": must be nearest, linear or cubic",
                      stk__arg_string(node, ids->interp_type));
  }
  const char *dt = stk__arg_string(node, ids->dtype);
  st->has_dtype = *dt != '\0';
  if (st->has_dtype && stk_dtype_from_name(dt, &st->dtype) != STK_OK) {
    free(st);
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "dtype = \"%s\" is not a type", dt);
  }
  *stk__node_state(node) = st;
  return STK_OK;
}

static void warp_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

/* The `size` argument as [H, W] (one value: both), rounded to nearest. Returns false in
 * *given when it was not given. */
static stk_status size_arg(const stk__node *node, stk__sample *s, int arg, int64_t *h,
                           int64_t *w, bool *given) {
  *given = stk__arg_given(node, arg);
  if (!*given) return STK_OK;
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "size has %zu values; expected [H, W]", n);
  double fh = floor(v[0] + 0.5), fw = floor(v[n - 1] + 0.5);
  if (!(fh >= 1 && fw >= 1 && fh < 2147483648.0 && fw < 2147483648.0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "size [%g, %g] must round to extents in [1, 2^31)", v[0], v[n - 1]);
  *h = (int64_t)fh, *w = (int64_t)fw;
  return STK_OK;
}

/* Warps the sample's input image with matrix m (output -> input) to out_h x out_w. */
static stk_status warp_sample(stk__node *node, stk__sample *s, const warp_arg_ids *ids,
                              const stk__image *in, int in_ndim, const double m[6],
                              int64_t out_h, int64_t out_w) {
  const warp_state *st = *stk__node_state(node);
  if ((double)out_h * (double)out_w > (double)stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "output %lldx%lld exceeds the pixel limit %lld",
                      (long long)out_h, (long long)out_w,
                      (long long)stk__node_max_pixels(node));
  size_t c = (size_t)in->c;
  float *fill = NULL;
  if (stk__arg_given(node, ids->fill_value)) {
    double *fv = NULL;
    STK_TRY(stk__channel_values(node, s, ids->fill_value, "fill_value", in->c, &fv));
    if (!(fill = stk__scratch(s, c * sizeof(float))))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for fill_value");
    for (size_t i = 0; i < c; i++) fill[i] = (float)fv[i];
  }
  stk__image src = *in;
  size_t in_n = (size_t)(in->h * in->w) * c;
  if (src.dtype != STK_DTYPE_UINT8 && src.dtype != STK_DTYPE_FLOAT32) {
    if (!(src.data = stk__scratch(s, in_n * sizeof(float))))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for the input");
    stk__convert(src.data, STK_DTYPE_FLOAT32, in->data, in->dtype, in_n);
    src.dtype = STK_DTYPE_FLOAT32;
  }
  stk_dtype odt = st->has_dtype ? st->dtype : in->dtype;
  int64_t shape[3] = {out_h, out_w, in->c};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, odt, in_ndim, shape, in_ndim == 2 ? "HW" : "HWC", &out));
  stk__image dst = {out->data, odt, out_h, out_w, in->c};
  size_t out_n = (size_t)(out_h * out_w) * c;
  bool direct = odt == STK_DTYPE_UINT8 || odt == STK_DTYPE_FLOAT32;
  if (!direct) {
    dst.dtype = STK_DTYPE_FLOAT32;
    if (!(dst.data = stk__scratch(s, out_n * sizeof(float))))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for the output");
  }
  float *row = stk__scratch(s, (size_t)out_w * c * sizeof(float));
  if (!row) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for a row");
  stk__warp_params wp = {{m[0], m[1], m[2], m[3], m[4], m[5]}, st->interp, fill != NULL, fill};
  STK_TRY(stk__sample_wrap(stk__warp_affine(&src, &dst, &wp, row), node, s));
  if (!direct) stk__convert(out->data, odt, dst.data, STK_DTYPE_FLOAT32, out_n);
  return STK_OK;
}

#define FILL_DOC                                                                           \
  "value of the pixels outside the source image: one value, or one per channel. When "   \
  "absent, source coordinates are clamped and the edge pixels repeat (DALI's rule)"
#define INTERP_DOC                                                                         \
  "nearest, linear (bilinear) or cubic (Keys, a = -0.5); pixel centres at +0.5 (see the " \
  "operator doc)"
#define DTYPE_DOC "output type; \"\" keeps the input's (integers rounded and saturated)"

/* ---------------------------------------------------------------------------------- */
/* rotate                                                                             */
/* ---------------------------------------------------------------------------------- */

enum { R_ANGLE, R_KEEP_SIZE, R_SIZE, R_FILL, R_INTERP, R_DTYPE };
static const warp_arg_ids rotate_ids = {R_SIZE, R_FILL, R_INTERP, R_DTYPE};

static const stk_arg_schema rotate_args[] = {
    {"angle", STK_ARG_FLOAT, STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "rotation in degrees, counter-clockwise as the image is displayed (top-left corner at "
     "(0, 0), y down), about the image centre"},
    {"keep_size", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "true: the output has the input's size (torchvision's rotate with expand=False); "
     "false (and no size): the canvas grows to hold the whole rotated image (DALI's rule: "
     "ceil(|cos| w + |sin| h - 0.01), parity kept)"},
    {"size", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "output size [H, W], rounded to nearest; the centres of input and output coincide"},
    {"fill_value", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL, FILL_DOC},
    {"interp_type", STK_ARG_STRING, 0, "\"linear\"", 0, 0, WARP_INTERP_CHOICES, INTERP_DOC},
    {"dtype", STK_ARG_STRING, 0, "\"\"", 0, 0, WARP_DTYPES, DTYPE_DOC},
};

static const stk_port_schema warp_in[] = {{"input", "HWC or HW image, any numeric type"},
                                          {"matrix", "2x3 float matrix per sample"}};
static const stk_port_schema warp_out[] = {{"output", "the warped image"}};

static stk_status rotate_init(stk__node *node) { return warp_init(node, &rotate_ids); }

static stk_status rotate_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  double angle = stk__arg_float(node, s, R_ANGLE);
  if (!isfinite(angle) || fabs(angle) > 1e9)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "angle = %g is not a usable number", angle);
  int64_t oh = in.h, ow = in.w;
  bool sized;
  STK_TRY(size_arg(node, s, R_SIZE, &oh, &ow, &sized));
  if (!sized && !stk__arg_bool(node, s, R_KEEP_SIZE))
    stk__rotate_canvas(in.h, in.w, angle, &oh, &ow);
  double m[6];
  stk__rotate_matrix(angle, in.h, in.w, oh, ow, m);
  return warp_sample(node, s, &rotate_ids, &in, stk__input(s, 0)->ndim, m, oh, ow);
}

static const stk_op_schema rotate_schema = {
    "rotate",
    "Rotates each image by `angle` degrees counter-clockwise about its centre (DALI's "
    "rotate). Output pixel (x, y) samples the input at M (x + 0.5, y + 0.5) with M = "
    "T(in_w/2, in_h/2) [[cos, -sin], [sin, cos]] T(-out_w/2, -out_h/2) in pixel-edge "
    "coordinates: the same centre as torchvision's functional rotate and Pillow's "
    "Image.rotate ((w - 1) / 2 in pixel indices).",
    STK_DEVICE_CPU, 0, 1, 1, warp_in, 1, warp_out,
    sizeof rotate_args / sizeof rotate_args[0], rotate_args};
const stk__op_def stk__op_rotate = {
    .schema = &rotate_schema,
    .init = rotate_init,
    .destroy = warp_destroy,
    .run_sample = rotate_run};

/* ---------------------------------------------------------------------------------- */
/* warp_affine                                                                        */
/* ---------------------------------------------------------------------------------- */

enum { W_MATRIX, W_INVERSE_MAP, W_SIZE, W_FILL, W_INTERP, W_DTYPE };
static const warp_arg_ids warp_ids = {W_SIZE, W_FILL, W_INTERP, W_DTYPE};

static const stk_arg_schema warp_args[] = {
    {"matrix", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "[M11, M12, M13, M21, M22, M23]: with inverse_map, output pixel (x, y) takes the "
     "input at (M11 x + M12 y + M13, M21 x + M22 y + M23), [0, 0] being the corner of the "
     "first pixel. May instead come as the second input (e.g. from transforms.*)"},
    {"inverse_map", STK_ARG_BOOL, 0, "true", 0, 0, NULL,
     "true: the matrix maps output to input coordinates; false: input to output (it is "
     "inverted; the transforms.* operators build matrices of this kind)"},
    {"size", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "output size [H, W], rounded to nearest; the input's size when absent"},
    {"fill_value", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL, FILL_DOC},
    {"interp_type", STK_ARG_STRING, 0, "\"linear\"", 0, 0, WARP_INTERP_CHOICES, INTERP_DOC},
    {"dtype", STK_ARG_STRING, 0, "\"\"", 0, 0, WARP_DTYPES, DTYPE_DOC},
};

static stk_status warp_affine_init(stk__node *node) {
  bool has_input = stk__node_num_inputs(node) > 1, has_arg = stk__arg_given(node, W_MATRIX);
  if (has_input == has_arg)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      has_arg ? "give the matrix either as the argument or as input 1, not both"
                              : "needs a matrix: the 'matrix' argument or a second input");
  return warp_init(node, &warp_ids);
}

/* This sample's matrix, output -> input. */
static stk_status warp_matrix(stk__node *node, stk__sample *s, double m[6]) {
  double v[6];
  size_t n;
  if (stk__node_num_inputs(node) > 1) {
    const stk__tensor *t = stk__input(s, 1);
    n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    if (n == 6) stk__convert(v, STK_DTYPE_FLOAT64, t->data, t->dtype, 6);
  } else {
    const double *a;
    n = stk__arg_floats(node, s, W_MATRIX, &a);
    if (n == 6) memcpy(v, a, sizeof v);
  }
  if (n != 6)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "matrix has %zu elements; expected 6 (a 2x3 matrix)", n);
  if (stk__arg_bool(node, s, W_INVERSE_MAP)) {
    memcpy(m, v, sizeof v);
    return STK_OK;
  }
  if (!stk__affine_invert(v, m))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "matrix [%g, %g, %g, %g, %g, %g] cannot be inverted (inverse_map = false)",
                      v[0], v[1], v[2], v[3], v[4], v[5]);
  return STK_OK;
}

static stk_status warp_affine_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  double m[6];
  STK_TRY(warp_matrix(node, s, m));
  int64_t oh = in.h, ow = in.w;
  bool sized;
  STK_TRY(size_arg(node, s, W_SIZE, &oh, &ow, &sized));
  return warp_sample(node, s, &warp_ids, &in, stk__input(s, 0)->ndim, m, oh, ow);
}

static const stk_op_schema warp_affine_schema = {
    "warp_affine",
    "Applies an affine transformation to each image (DALI's warp_affine): output pixel "
    "(x, y) samples the input at M (x + 0.5, y + 0.5), pixel-edge coordinates ([0, 0] is "
    "the corner of the first pixel, centres at +0.5), as torchvision's tensor affine and "
    "Pillow's Image.transform(AFFINE).",
    STK_DEVICE_CPU, 0, 1, 2, warp_in, 1, warp_out,
    sizeof warp_args / sizeof warp_args[0], warp_args};
const stk__op_def stk__op_warp_affine = {
    .schema = &warp_affine_schema,
    .init = warp_affine_init,
    .destroy = warp_destroy,
    .run_sample = warp_affine_run};
