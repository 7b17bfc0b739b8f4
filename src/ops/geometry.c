/* rotate and warp_affine on the CPU, and the affine warp kernel behind them (see
 * geometry.h for the coordinate and sampling conventions). */
#include "geometry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_geometry.h"
#include "../shared/geometry_px.h"
#include "gpu_util.h"
#include "image_util.h"

#define PI 3.14159265358979323846

/* ---------------------------------------------------------------------------------- */
/* Matrices                                                                           */
/* ---------------------------------------------------------------------------------- */

void stk__affine_mul(const double a[6], const double b[6], double out[6]) {
  double r[6] = {
      a[0] * b[0] + a[1] * b[3], a[0] * b[1] + a[1] * b[4], a[0] * b[2] + a[1] * b[5] + a[2],
      a[3] * b[0] + a[4] * b[3], a[3] * b[1] + a[4] * b[4], a[3] * b[2] + a[4] * b[5] + a[5],
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

void stk__rotate_matrix(double angle_deg, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                        double m[6]) {
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

/* One output row of n pixels starting at source edge coordinates (x, y), stepping by
 * (dx, dy) per pixel. */
static void row_nearest(const source *S, double x, double y, double dx, double dy, int64_t n,
                        float *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    long long xl, yl;
    stk_warp_nearest(stk_warp_step(x, dx, i), stk_warp_step(y, dy, i), S->w, S->h, &xl, &yl);
    int64_t xi = xl, yi = yl;
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
    long long xl, yl;
    stk_warp_nearest(stk_warp_step(x, dx, i), stk_warp_step(y, dy, i), S->w, S->h, &xl, &yl);
    int64_t xi = xl, yi = yl;
    if (!(xi >= 0 && yi >= 0 && xi < S->w && yi < S->h)) {
      if (S->constant) {
        memcpy(out, fill, (size_t)c);
        continue;
      }
      xi = xi < 0 ? 0 : xi >= S->w ? S->w - 1 : xi;
      yi = yi < 0 ? 0 : yi >= S->h ? S->h - 1 : yi;
    }
    const uint8_t *px = S->u8 + (size_t)yi * S->stride + (size_t)(xi * c);
    if (c == 3)
      out[0] = px[0], out[1] = px[1], out[2] = px[2]; /* no memcpy call */
    else
      memcpy(out, px, (size_t)c);
  }
}

static void row_linear(const source *S, double x, double y, double dx, double dy, int64_t n,
                       float *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    long long xl, yl;
    float ax, ay;
    stk_warp_linear_setup(stk_warp_step(x, dx, i), stk_warp_step(y, dy, i), S->w, S->h, &xl, &yl,
                          &ax, &ay);
    int64_t x0 = xl, y0 = yl;
    if (x0 >= 0 && y0 >= 0 && x0 + 1 < S->w && y0 + 1 < S->h) {
      size_t p = (size_t)y0 * S->stride + (size_t)(x0 * c), q = p + S->stride;
      for (int64_t ch = 0; ch < c; ch++) {
        out[ch] = stk_warp_bilinear(at(S, p), at(S, p + (size_t)c), at(S, q), at(S, q + (size_t)c),
                                    ax, ay);
        p++, q++;
      }
    } else {
      for (int64_t ch = 0; ch < c; ch++)
        out[ch] = stk_warp_bilinear(tap(S, x0, y0, ch), tap(S, x0 + 1, y0, ch),
                                    tap(S, x0, y0 + 1, ch), tap(S, x0 + 1, y0 + 1, ch), ax, ay);
    }
  }
}

static void row_cubic(const source *S, double x, double y, double dx, double dy, int64_t n,
                      float *out) {
  int64_t c = S->c;
  for (int64_t i = 0; i < n; i++, out += c) {
    long long xl, yl;
    float wx[4], wy[4];
    stk_warp_cubic_setup(stk_warp_step(x, dx, i), stk_warp_step(y, dy, i), S->w, S->h, &xl, &yl, wx,
                         wy);
    int64_t x0 = xl, y0 = yl;
    bool inside = x0 >= 0 && y0 >= 0 && x0 + 3 < S->w && y0 + 3 < S->h;
    for (int64_t ch = 0; ch < c; ch++) {
      float acc = 0.0f;
      for (int j = 0; j < 4; j++) {
        float r = 0.0f;
        if (inside) {
          size_t p = (size_t)(y0 + j) * S->stride + (size_t)(x0 * c + ch);
          for (int k = 0; k < 4; k++) r = stk_warp_mac(r, wx[k], at(S, p + (size_t)(k * c)));
        } else {
          for (int k = 0; k < 4; k++) r = stk_warp_mac(r, wx[k], tap(S, x0 + k, y0 + j, ch));
        }
        acc = stk_warp_mac(acc, wy[j], r);
      }
      out[ch] = acc;
    }
  }
}

stk_status stk__warp_affine(const stk__image *src, const stk__image *dst, const stk__warp_params *p,
                            float *row) {
  if (src->h < 1 || src->w < 1 || src->c < 1 || dst->h < 1 || dst->w < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "empty image (%lldx%lld -> %lldx%lld)",
                    (long long)src->h, (long long)src->w, (long long)dst->h, (long long)dst->w);
  if (dst->c != src->c)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "channel count %lld != %lld", (long long)dst->c,
                    (long long)src->c);
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
    case STK__INTERP_NEAREST:
      fn = row_nearest;
      break;
    case STK__INTERP_LINEAR:
      fn = row_linear;
      break;
    case STK__INTERP_CUBIC:
      fn = row_cubic;
      break;
    default:
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "interpolation must be nearest, linear or cubic");
  }
  source S = {
      .w = src->w, .h = src->h, .c = src->c, .fill = p->fill, .constant = p->constant_border};
  if (src->dtype == STK_DTYPE_UINT8)
    S.u8 = src->data;
  else
    S.f32 = src->data;
  S.stride = (size_t)(src->w * src->c);
  size_t n = (size_t)(dst->w * dst->c);
  /* nearest from uint8 to uint8 copies bytes; the fill is rounded as any output would be */
  uint8_t fill8[64];
  bool bytes = fn == row_nearest && S.u8 && dst->dtype == STK_DTYPE_UINT8 && S.c <= 64;
  if (bytes && S.constant)
    stk__convert(fill8, STK_DTYPE_UINT8, p->fill, STK_DTYPE_FLOAT32, (size_t)S.c);
  for (int64_t y = 0; y < dst->h; y++) {
    double sx, sy;
    stk_warp_row_origin(p->m, y, &sx, &sy);
    if (bytes) {
      row_nearest_u8(&S, fill8, sx, sy, p->m[0], p->m[3], dst->w,
                     (uint8_t *)dst->data + (size_t)y * n);
      continue;
    }
    float *out = dst->dtype == STK_DTYPE_FLOAT32 ? (float *)dst->data + (size_t)y * n : row;
    fn(&S, sx, sy, p->m[0], p->m[3], dst->w, out);
    if (dst->dtype == STK_DTYPE_UINT8)
      stk__convert((uint8_t *)dst->data + (size_t)y * n, STK_DTYPE_UINT8, row, STK_DTYPE_FLOAT32,
                   n);
  }
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* Shared operator plumbing                                                           */
/* ---------------------------------------------------------------------------------- */

#define WARP_INTERP_CHOICES "nearest|linear|cubic"
#define WARP_DTYPES                             \
  "|uint8|int8|uint16|int16|uint32|int32|int64" \
  "|float16|float32|float64|float"

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
static stk_status size_arg(const stk__node *node, stk__sample *s, int arg, int64_t *h, int64_t *w,
                           bool *given) {
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
                              const stk__image *in, int in_ndim, const double m[6], int64_t out_h,
                              int64_t out_w) {
  const warp_state *st = *stk__node_state(node);
  if ((double)out_h * (double)out_w > (double)stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "output %lldx%lld exceeds the pixel limit %lld",
                      (long long)out_h, (long long)out_w, (long long)stk__node_max_pixels(node));
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

/* ---------------------------------------------------------------------------------- */
/* GPU backend (rotate and warp_affine)                                               */
/* ---------------------------------------------------------------------------------- */

/* One sample's geometry: output size and output -> input matrix; `mv` holds the n values
 * of the matrix input when the node has one. */
typedef stk_status (*warp_geometry_fn)(stk__node *node, stk__sample *s, const double *mv, size_t n,
                                       int64_t in_h, int64_t in_w, double m[6], int64_t *oh,
                                       int64_t *ow);

/* Sample i of input 1 (the matrix, from a CPU node such as transforms.* or a GPU one) as
 * doubles; *n counts its elements (only 6 are read). */
static stk_status warp_gpu_matrix_input(stk__node *node, stk__gpu_batch *b, size_t i, double v[6],
                                        size_t *n) {
  stk_tensor_list *ml = stk__gpu_input(b, 1);
  stk_tensor_desc d;
  STK_TRY(stk_tensor_list_sample(ml, i, &d));
  *n = 1;
  for (int k = 0; k < d.ndim; k++) *n *= (size_t)d.shape[k];
  if (*n != 6) return STK_OK;
  if (!stk__dtype_valid(d.dtype) || stk_dtype_size(d.dtype) > 8)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, stk__gpu_sample(b, i),
                      "matrix of an unknown type");
  const void *src = d.data;
  uint8_t host[6 * 8];
  if (stk_tensor_list_storage(ml) == STK_STORAGE_DEVICE) { /* a GPU producer: bring 6 values back */
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    STK_TRY(
        stk__gpu_op_check(node,
                          g->api->memcpy_async(g->ctx, host, d.data, 6 * stk_dtype_size(d.dtype),
                                               stk__gpu_stream(b), err, sizeof err),
                          err));
    src = host;
  }
  stk__convert(v, STK_DTYPE_FLOAT64, src, d.dtype, 6);
  return STK_OK;
}

/* The sample's fill (as the CPU's warp_sample: float per channel, and as uint8 for the
 * nearest byte copy). */
static stk_status warp_gpu_fill(stk__node *node, stk__sample *s, const warp_arg_ids *ids, int c,
                                stk_gpu_warp_sample *ws) {
  if (!stk__arg_given(node, ids->fill_value)) return STK_OK;
  double *fv = NULL;
  STK_TRY(stk__channel_values(node, s, ids->fill_value, "fill_value", c, &fv));
  ws->constant_border = 1;
  for (int k = 0; k < c; k++) ws->fill[k] = (float)fv[k];
  stk__convert(ws->fill_u8, STK_DTYPE_UINT8, ws->fill, STK_DTYPE_FLOAT32, (size_t)c);
  return STK_OK;
}

/* Plans sample i: geometry, limits, fill; writes its output shape (ndim values). */
static stk_status warp_gpu_sample(stk__node *node, stk__gpu_batch *b, const warp_arg_ids *ids,
                                  warp_geometry_fn geom, const stk_tensor_list *in, size_t i,
                                  int *channels, stk_gpu_warp_sample *ws, int64_t *shape) {
  stk__sample *s = stk__gpu_sample(b, i);
  int h, w, c;
  void *data;
  STK_TRY(stk__gpu_image_dims(node, in, i, &h, &w, &c, &data));
  if (i == 0)
    *channels = c;
  else if (c != *channels)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "has %d channels, sample 0 %d: the GPU warp needs one "
                      "channel count per batch",
                      c, *channels);
  if (h < 1 || w < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "empty image (%dx%d)", h, w);
  double mv[6] = {0}, m[6];
  size_t mn = 0;
  if (stk__node_num_inputs(node) > 1) STK_TRY(warp_gpu_matrix_input(node, b, i, mv, &mn));
  int64_t oh, ow;
  STK_TRY(geom(node, s, mv, mn, h, w, m, &oh, &ow));
  if ((double)oh * (double)ow > (double)stk__node_max_pixels(node) || oh > INT32_MAX ||
      ow > INT32_MAX)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "output %lldx%lld exceeds the pixel limit %lld",
                      (long long)oh, (long long)ow, (long long)stk__node_max_pixels(node));
  for (int k = 0; k < 6; k++)
    if (!isfinite(m[k]))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "matrix element %d is not finite", k);
  memset(ws, 0, sizeof *ws);
  ws->src = data;
  ws->src_h = h, ws->src_w = w;
  ws->dst_h = (int)oh, ws->dst_w = (int)ow;
  memcpy(ws->m, m, sizeof ws->m);
  STK_TRY(warp_gpu_fill(node, s, ids, c, ws));
  shape[0] = oh, shape[1] = ow;
  if (stk_tensor_list_ndim(in) == 3) shape[2] = c;
  return STK_OK;
}

/* Casts every sample of `from` into a new list of `dtype` (same shapes) with api->cast:
 * the CPU's stk__convert before / after the float32 warp for other types. */
static stk_status warp_gpu_cast(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *from,
                                stk_dtype dtype, stk_tensor_list **out) {
  size_t n = stk__gpu_batch_size(b);
  int ndim = stk_tensor_list_ndim(from);
  int64_t *shapes = stk__calloc(n * (size_t)ndim, sizeof(int64_t), "shapes");
  stk_gpu_cast_sample *cs = stk__calloc(n, sizeof *cs, "a cast plan");
  stk_status st = shapes && cs ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(from, i, &d);
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
    cs[i].src = d.data;
    cs[i].count = 1;
    for (int k = 0; k < ndim; k++) cs[i].count *= d.shape[k];
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, dtype, ndim, shapes, stk_tensor_list_layout(from),
                             stk__gpu_shapes_equal(shapes, n, ndim), out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(*out, i, &d);
      cs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_cast(g->api, g->ctx, (int)n, cs,
                                            &(stk_gpu_io_args){stk_tensor_list_dtype(from), dtype},
                                            stk__gpu_stream(b), err, sizeof err),
                           err);
    if (st != STK_OK) {
      stk_tensor_list_release(*out);
      *out = NULL;
    }
  }
  free(shapes);
  free(cs);
  return st;
}

/* Warps the float32 / uint8 `src` list into a new list of `dtype` (uint8 or float32). */
static stk_status warp_gpu_launch(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *src,
                                  stk_gpu_warp_sample *ws, const int64_t *shapes, int ndim, int c,
                                  stk_dtype dtype, stk_tensor_list **out) {
  const warp_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_dtype idt = stk_tensor_list_dtype(src);
  STK_TRY(stk__gpu_alloc_list(b, dtype, ndim, shapes, ndim == 2 ? "HW" : "HWC",
                              stk__gpu_shapes_equal(shapes, n, ndim), out));
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(src, i, &d);
    ws[i].src = d.data;
    ws[i].src_pitch = (size_t)ws[i].src_w * (size_t)c * stk_dtype_size(idt);
    stk_tensor_list_sample(*out, i, &d);
    ws[i].dst = d.data;
  }
  stk_gpu_warp_args a = {c, idt, dtype, (int)st->interp};
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  stk_status rc = stk__gpu_op_check(
      node,
      stk_gpu_run_warp_affine(g->api, g->ctx, (int)n, ws, &a, stk__gpu_stream(b), err, sizeof err),
      err);
  if (rc != STK_OK) {
    stk_tensor_list_release(*out);
    *out = NULL;
  }
  return rc;
}

/* rotate / warp_affine on the GPU: per-sample geometry read on the host exactly as the
 * CPU does, then one warp launch (plus a cast before / after for types other than uint8
 * and float32, as the CPU converts through float32). */
static stk_status warp_run_gpu(stk__node *node, stk__gpu_batch *b, const warp_arg_ids *ids,
                               warp_geometry_fn geom) {
  const warp_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL, *fin = NULL, *fout = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_dtype idt = stk_tensor_list_dtype(in), odt = st->has_dtype ? st->dtype : idt;
  stk_gpu_warp_sample *ws = stk__calloc(n, sizeof *ws, "a warp plan");
  int64_t *shapes = stk__calloc(n * 3, sizeof(int64_t), "shapes");
  stk_status rc = ws && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (rc == STK_OK) rc = stk__gpu_check_image_layout(node, in);
  int c = 0;
  for (size_t i = 0; i < n && rc == STK_OK; i++)
    rc = warp_gpu_sample(node, b, ids, geom, in, i, &c, &ws[i], shapes + i * (size_t)ndim);
  bool native_in = idt == STK_DTYPE_UINT8 || idt == STK_DTYPE_FLOAT32;
  bool native_out = odt == STK_DTYPE_UINT8 || odt == STK_DTYPE_FLOAT32;
  if (rc == STK_OK && !native_in) rc = warp_gpu_cast(node, b, in, STK_DTYPE_FLOAT32, &fin);
  if (rc == STK_OK && n > 0) {
    const stk_tensor_list *src = fin ? fin : in;
    if (native_out) {
      rc = warp_gpu_launch(node, b, src, ws, shapes, ndim, c, odt, &out);
    } else {
      rc = warp_gpu_launch(node, b, src, ws, shapes, ndim, c, STK_DTYPE_FLOAT32, &fout);
      if (rc == STK_OK) rc = warp_gpu_cast(node, b, fout, odt, &out);
    }
  } else if (rc == STK_OK) {
    rc = stk__gpu_alloc_list(b, odt, ndim, shapes, ndim == 2 ? "HW" : "HWC", true, &out);
  }
  if (fin) stk_tensor_list_release(fin);
  if (fout) stk_tensor_list_release(fout);
  free(ws);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, rc);
}

#define FILL_DOC                                                                       \
  "value of the pixels outside the source image: one value, or one per channel. When " \
  "absent, source coordinates are clamped and the edge pixels repeat (DALI's rule)"
#define INTERP_DOC                                                                        \
  "nearest, linear (bilinear) or cubic (Keys, a = -0.5); pixel centres at +0.5 (see the " \
  "operator doc)"
#define DTYPE_DOC "output type; \"\" keeps the input's (integers rounded and saturated)"

/* ---------------------------------------------------------------------------------- */
/* rotate                                                                             */
/* ---------------------------------------------------------------------------------- */

enum { R_ANGLE, R_KEEP_SIZE, R_SIZE, R_FILL, R_INTERP, R_DTYPE, ROTATE_ARGS_COUNT_ };
static const warp_arg_ids rotate_ids = {R_SIZE, R_FILL, R_INTERP, R_DTYPE};

static const stk_arg_schema rotate_args[] = {
    [R_ANGLE] =
        {.name = "angle",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
         .doc =
             "rotation in degrees, counter-clockwise as the image is displayed (top-left corner at "
             "(0, 0), y down), about the image centre"},
    [R_KEEP_SIZE] =
        {.name = "keep_size",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "true: the output has the input's size (torchvision's rotate with expand=False); "
             "false (and no size): the canvas grows to hold the whole rotated image (DALI's rule: "
             "ceil(|cos| w + |sin| h - 0.01), parity kept)"},
    [R_SIZE] =
        {.name = "size",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
         .max = 1e15,
         .doc = "output size [H, W], rounded to nearest; the centres of input and output coincide"},
    [R_FILL] = {.name = "fill_value",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = FILL_DOC},
    [R_INTERP] = {.name = "interp_type",
                  .type = STK_ARG_STRING,
                  .default_text = "\"linear\"",
                  .choices = WARP_INTERP_CHOICES,
                  .doc = INTERP_DOC},
    [R_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"\"",
                 .choices = WARP_DTYPES,
                 .doc = DTYPE_DOC},
};
STK__CHECK_ARGS(rotate_args, ROTATE_ARGS_COUNT_);

static const stk_port_schema warp_in[] = {{"input", "HWC or HW image, any numeric type"},
                                          {"matrix", "2x3 float matrix per sample"}};
static const stk_port_schema warp_out[] = {{"output", "the warped image"}};

static stk_status rotate_init(stk__node *node) { return warp_init(node, &rotate_ids); }

/* The sample's output size and output -> input matrix for an in_h x in_w input (shared by
 * both backends; `mv` is unused: rotate has no matrix input). */
static stk_status rotate_geometry(stk__node *node, stk__sample *s, const double *mv, size_t mn,
                                  int64_t in_h, int64_t in_w, double m[6], int64_t *oh,
                                  int64_t *ow) {
  (void)mv, (void)mn;
  double angle = stk__arg_float(node, s, R_ANGLE);
  if (!isfinite(angle) || fabs(angle) > 1e9)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "angle = %g is not a usable number",
                      angle);
  *oh = in_h, *ow = in_w;
  bool sized;
  STK_TRY(size_arg(node, s, R_SIZE, oh, ow, &sized));
  if (!sized && !stk__arg_bool(node, s, R_KEEP_SIZE)) stk__rotate_canvas(in_h, in_w, angle, oh, ow);
  stk__rotate_matrix(angle, in_h, in_w, *oh, *ow, m);
  return STK_OK;
}

static stk_status rotate_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  int64_t oh, ow;
  double m[6];
  STK_TRY(rotate_geometry(node, s, NULL, 0, in.h, in.w, m, &oh, &ow));
  return warp_sample(node, s, &rotate_ids, &in, stk__input(s, 0)->ndim, m, oh, ow);
}

static stk_status rotate_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return warp_run_gpu(node, b, &rotate_ids, rotate_geometry);
}

static const stk_op_schema rotate_schema = {
    .name = "rotate",
    .doc =
        "Rotates each image by `angle` degrees counter-clockwise about its centre (DALI's "
        "rotate). Output pixel (x, y) samples the input at M (x + 0.5, y + 0.5) with M = "
        "T(in_w/2, in_h/2) [[cos, -sin], [sin, cos]] T(-out_w/2, -out_h/2) in pixel-edge "
        "coordinates: the same centre as torchvision's functional rotate and Pillow's "
        "Image.rotate ((w - 1) / 2 in pixel indices).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = warp_in,
    .num_outputs = 1,
    .outputs = warp_out,
    .num_args = sizeof rotate_args / sizeof rotate_args[0],
    .args = rotate_args,
    .gpu_check =
        "# atol=1 mismatch=0.002\n"
        "a = random.uniform(range=[-180.0, 180.0])\n"
        "return rotate(IN, angle=a, fill_value=[17.0], device=@)",
};
const stk__op_def stk__op_rotate = {.schema = &rotate_schema,
                                    .init = rotate_init,
                                    .destroy = warp_destroy,
                                    .run_sample = rotate_run,
                                    .run_gpu = rotate_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* warp_affine                                                                        */
/* ---------------------------------------------------------------------------------- */

enum { W_MATRIX, W_INVERSE_MAP, W_SIZE, W_FILL, W_INTERP, W_DTYPE, WARP_ARGS_COUNT_ };
static const warp_arg_ids warp_ids = {W_SIZE, W_FILL, W_INTERP, W_DTYPE};

static const stk_arg_schema warp_args[] = {
    [W_MATRIX] =
        {.name = "matrix",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc =
             "[M11, M12, M13, M21, M22, M23]: with inverse_map, output pixel (x, y) takes the "
             "input at (M11 x + M12 y + M13, M21 x + M22 y + M23), [0, 0] being the corner of the "
             "first pixel. May instead come as the second input (e.g. from transforms.*)"},
    [W_INVERSE_MAP] =
        {.name = "inverse_map",
         .type = STK_ARG_BOOL,
         .default_text = "true",
         .doc = "true: the matrix maps output to input coordinates; false: input to output (it is "
                "inverted; the transforms.* operators build matrices of this kind)"},
    [W_SIZE] = {.name = "size",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                .max = 1e15,
                .doc = "output size [H, W], rounded to nearest; the input's size when absent"},
    [W_FILL] = {.name = "fill_value",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = FILL_DOC},
    [W_INTERP] = {.name = "interp_type",
                  .type = STK_ARG_STRING,
                  .default_text = "\"linear\"",
                  .choices = WARP_INTERP_CHOICES,
                  .doc = INTERP_DOC},
    [W_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"\"",
                 .choices = WARP_DTYPES,
                 .doc = DTYPE_DOC},
};
STK__CHECK_ARGS(warp_args, WARP_ARGS_COUNT_);

static stk_status warp_affine_init(stk__node *node) {
  bool has_input = stk__node_num_inputs(node) > 1, has_arg = stk__arg_given(node, W_MATRIX);
  if (has_input == has_arg)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      has_arg ? "give the matrix either as the argument or as input 1, not both"
                              : "needs a matrix: the 'matrix' argument or a second input");
  return warp_init(node, &warp_ids);
}

/* This sample's output -> input matrix from the 6 values `v` of the matrix (argument or
 * input 1; n counts them), and its output size (both backends). */
static stk_status warp_affine_geometry(stk__node *node, stk__sample *s, const double *v, size_t n,
                                       int64_t in_h, int64_t in_w, double m[6], int64_t *oh,
                                       int64_t *ow) {
  if (stk__node_num_inputs(node) <= 1) n = stk__arg_floats(node, s, W_MATRIX, &v);
  if (n != 6)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "matrix has %zu elements; expected 6 (a 2x3 matrix)", n);
  if (stk__arg_bool(node, s, W_INVERSE_MAP)) {
    memcpy(m, v, 6 * sizeof(double));
  } else if (!stk__affine_invert(v, m)) {
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "matrix [%g, %g, %g, %g, %g, %g] cannot be inverted (inverse_map = false)",
                      v[0], v[1], v[2], v[3], v[4], v[5]);
  }
  *oh = in_h, *ow = in_w;
  bool sized;
  return size_arg(node, s, W_SIZE, oh, ow, &sized);
}

static stk_status warp_affine_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  double v[6], m[6];
  size_t n = 0;
  if (stk__node_num_inputs(node) > 1) {
    const stk__tensor *t = stk__input(s, 1);
    n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    if (n == 6) stk__convert(v, STK_DTYPE_FLOAT64, t->data, t->dtype, 6);
  }
  int64_t oh, ow;
  STK_TRY(warp_affine_geometry(node, s, v, n, in.h, in.w, m, &oh, &ow));
  return warp_sample(node, s, &warp_ids, &in, stk__input(s, 0)->ndim, m, oh, ow);
}

static stk_status warp_affine_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return warp_run_gpu(node, b, &warp_ids, warp_affine_geometry);
}

static const stk_op_schema warp_affine_schema = {
    .name = "warp_affine",
    .doc =
        "Applies an affine transformation to each image (DALI's warp_affine): output pixel "
        "(x, y) samples the input at M (x + 0.5, y + 0.5), pixel-edge coordinates ([0, 0] is "
        "the corner of the first pixel, centres at +0.5), as torchvision's tensor affine and "
        "Pillow's Image.transform(AFFINE).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = warp_in,
    .num_outputs = 1,
    .outputs = warp_out,
    .num_args = sizeof warp_args / sizeof warp_args[0],
    .args = warp_args,
    .gpu_check =
        "# atol=1 mismatch=0.002\n"
        "return warp_affine(IN, matrix=[0.9, 0.2, -10.0, -0.1, 1.1, 5.0], size=[90, 140], "
        "device=@)",
};
const stk__op_def stk__op_warp_affine = {.schema = &warp_affine_schema,
                                         .init = warp_affine_init,
                                         .destroy = warp_destroy,
                                         .run_sample = warp_affine_run,
                                         .run_gpu = warp_affine_run_gpu};
