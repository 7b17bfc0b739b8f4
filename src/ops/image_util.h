/*
 * Helpers shared by the CPU image operators (resize, random_resized_crop, crop, flip,
 * crop_mirror_normalize, cast).
 *
 * Two halves. The kernels (dtype conversion, crop, flip, the fused crop-mirror-normalise
 * pass, crop geometry) are pure functions in image_util.c: no executor accessors, so
 * tests call them directly. The argument helpers at the bottom are static inline and
 * read arguments through op.h; only operator files use them.
 */
#ifndef STOKER_OPS_IMAGE_UTIL_H
#define STOKER_OPS_IMAGE_UTIL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "op.h"
#include "resample.h"

/* ---------------------------------------------------------------------------------- */
/* Conversions                                                                        */
/* ---------------------------------------------------------------------------------- */

/* Converts n elements. To integer types: round half away from zero and saturate (NaN
 * gives 0), as DALI's CPU ConvertSat; to bool: value != 0; between float types: IEEE
 * rounding (float16 round to nearest even). Integer to integer is exact or saturates.
 * Same-type conversion is a copy. Buffers must not overlap. */
void stk__convert(void *dst, stk_dtype dst_dtype, const void *src, stk_dtype src_dtype, size_t n);
/* Writes `value` as element i of a `dtype` array with the rules of stk__convert. */
void stk__store_double(void *dst, stk_dtype dtype, size_t i, double value);
/* True for the dtypes stk__convert handles (all of stk_dtype). */
bool stk__dtype_valid(stk_dtype dtype);

/* ---------------------------------------------------------------------------------- */
/* Crop geometry (DALI's rules)                                                       */
/* ---------------------------------------------------------------------------------- */

typedef enum { STK__OOB_ERROR = 0, STK__OOB_PAD = 1, STK__OOB_TRIM = 2 } stk__oob_policy;
#define STK__OOB_CHOICES "error|pad|trim_to_shape"
bool stk__oob_parse(const char *name, stk__oob_policy *out);

typedef struct {
  int64_t y, x; /* anchor in the input; may be negative or past the end when padding */
  int64_t h, w; /* window extents (>= 0) */
} stk__rect;

/* The crop window of an in_h x in_w image: extents crop_h, crop_w truncated to integers
 * (<= 0: the whole extent, anchored at 0); anchor = round(pos * (in - crop)) with round
 * half away from zero (or truncated toward zero with `truncate_anchor`), pos in [0, 1].
 * Under STK__OOB_TRIM the window is cut to the image. Returns false when the window
 * leaves the image under STK__OOB_ERROR (the window is still written). */
bool stk__crop_rect(int64_t in_h, int64_t in_w, double crop_h, double crop_w, double pos_y,
                    double pos_x, bool truncate_anchor, stk__oob_policy policy, stk__rect *out);

/* ---------------------------------------------------------------------------------- */
/* Kernels                                                                            */
/* ---------------------------------------------------------------------------------- */

/* Fills `px` (count elements of dtype) from `values`: one value is broadcast; otherwise
 * element c takes values[c] when c < nvalues, else 0. */
void stk__fill_pixel(void *px, stk_dtype dtype, size_t count, const double *values, size_t nvalues);

/* Copies the dst->h x dst->w window whose top-left corner is (y, x) in `src` into `dst`
 * (same channels; dtype converted with stk__convert). Pixels outside the source take
 * `fill_px` (dst->c elements of dst->dtype). Any dtypes. */
void stk__crop_hwc(const stk__image *src, int64_t y, int64_t x, const stk__image *dst,
                   const void *fill_px);

/* Mirrors a dense tensor seen as [outer, H, mid, W, inner] elements of `esize` bytes:
 * rows (H) when `vertical`, columns (W) when `horizontal`. src and dst must not overlap. */
void stk__flip(const void *src, void *dst, size_t esize, int64_t outer, int64_t h, int64_t mid,
               int64_t w, int64_t inner, bool horizontal, bool vertical);

/* The fused crop + mirror + normalise + cast + layout pass of crop_mirror_normalize. */
typedef struct {
  stk__rect win;        /* window in the input (may reach outside: padded) */
  bool mirror;          /* mirror the window horizontally */
  bool planar;          /* CHW output; else HWC */
  const double *mean;   /* src->c values */
  const double *stddev; /* src->c values, non-zero */
  double scale, shift;  /* out = (in - mean) / stddev * scale + shift */
  const double *fill;   /* dst->c values, output space: outside pixels and pad channels */
} stk__cmn_params;

/* Scratch bytes stk__cmn needs. */
size_t stk__cmn_scratch_size(const stk__image *src, const stk__image *dst);
/* src: uint8 or float32 HWC; dst: float32, float16, uint8 or int8, dst->h x dst->w =
 * window, dst->c >= src->c (extra channels take their fill value); dst->data laid out
 * as CHW when params->planar. uint8 input goes through a per-channel table computed in
 * float64 (exact to the output type's rounding); float32 input computes in float32. */
stk_status stk__cmn(const stk__image *src, const stk__image *dst, const stk__cmn_params *p,
                    void *scratch, size_t scratch_size);

/* ---------------------------------------------------------------------------------- */
/* Operator-side argument helpers (use only in operator files)                        */
/* ---------------------------------------------------------------------------------- */

/* Fails with a message naming the operator instance and the sample:
 * "<func>: <instance>: sample <ordinal> (<source>): <text>". s may be NULL (build time). */
static inline stk_status stk__sample_fail(stk_status st, const char *func, const stk__node *node,
                                          const stk__sample *s, const char *fmt, ...)
    STK__PRINTF(5, 6);
static inline stk_status stk__sample_fail(stk_status st, const char *func, const stk__node *node,
                                          const stk__sample *s, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!s) return stk__fail(st, func, "%s: %s", stk__node_name(node), msg);
  const char *src = stk__sample_source(s);
  if (src && *src)
    return stk__fail(st, func, "%s: sample %lld (%s): %s", stk__node_name(node),
                     (long long)stk__sample_ordinal(s), src, msg);
  return stk__fail(st, func, "%s: sample %lld: %s", stk__node_name(node),
                   (long long)stk__sample_ordinal(s), msg);
}
#define STK__SFAIL(st, node, s, ...) stk__sample_fail((st), __func__, (node), (s), __VA_ARGS__)

/* Prefixes an error raised by a kernel with the instance and the sample. */
static inline stk_status stk__sample_wrap(stk_status st, const stk__node *node,
                                          const stk__sample *s) {
  if (st == STK_OK) return st;
  const char *src = stk__sample_source(s);
  return stk__wrap(st, "%s: sample %lld%s%s%s", stk__node_name(node),
                   (long long)stk__sample_ordinal(s), src && *src ? " (" : "",
                   src && *src ? src : "", src && *src ? ")" : "");
}

/* Input `index` as an HWC image: 3 dims with layout "HWC" (or none), or 2 dims ("HW" or
 * none) read as one channel. `dtypes` lists the accepted dtypes (ndtypes of them; 0:
 * any). */
static inline stk_status stk__image_input(const stk__node *node, const stk__sample *s, int index,
                                          const stk_dtype *dtypes, int ndtypes, stk__image *img) {
  const stk__tensor *t = stk__input(s, index);
  bool hwc = t->ndim == 3 && (t->layout[0] == '\0' || strcmp(t->layout, "HWC") == 0);
  bool hw = t->ndim == 2 && (t->layout[0] == '\0' || strcmp(t->layout, "HW") == 0);
  if (!hwc && !hw)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects an HWC image, got %d dimensions with layout '%s'", t->ndim,
                      t->layout);
  bool ok = ndtypes == 0;
  for (int i = 0; i < ndtypes; i++) ok |= t->dtype == dtypes[i];
  if (!ok)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "input type %s is not supported",
                      stk_dtype_name(t->dtype) ? stk_dtype_name(t->dtype) : "?");
  img->data = t->data;
  img->dtype = t->dtype;
  img->h = t->shape[0];
  img->w = t->shape[1];
  img->c = hwc ? t->shape[2] : 1;
  if (img->c < 1) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "image has no channels");
  return STK_OK;
}

/* Allocates output 0 as an image shaped like `like` (HWC, or HW when `like_ndim` is 2). */
static inline stk_status stk__image_output(stk__sample *s, int like_ndim, stk__image *img) {
  int64_t shape[3] = {img->h, img->w, img->c};
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, img->dtype, like_ndim == 2 ? 2 : 3, shape,
                      like_ndim == 2 ? "HW" : "HWC", &t));
  img->data = t->data;
  return STK_OK;
}

/* Resamples `in` over the window in `ra` into output 0 (out->h x out->w, out->dtype),
 * with scratch memory from the sample: the common tail of resize and
 * random_resized_crop. */
static inline stk_status stk__resample_to_output(const stk__node *node, stk__sample *s,
                                                 const stk__image *in, stk__image *out,
                                                 const stk__resample_args *ra) {
  size_t need = stk__resample_scratch_size(in, out->h, out->w, ra);
  void *scratch = need ? stk__scratch(s, need) : NULL;
  if (need && !scratch)
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory (%zu bytes)", need);
  STK_TRY(stk__image_output(s, stk__input(s, 0)->ndim, out));
  return stk__sample_wrap(stk__resample(in, out, ra, scratch, need), node, s);
}

/* DALI's per-axis filters: min_filter for an axis scaled down, mag_filter otherwise. */
typedef struct {
  stk__interp min, mag;
  bool antialias;
} stk__resample_filters;

/* The filter of an axis resampling the window [lo, hi) onto `out` pixels. */
static inline stk__interp stk__axis_interp(const stk__resample_filters *f, int64_t out, double lo,
                                           double hi) {
  return (double)out < fabs(hi - lo) ? f->min : f->mag;
}

/* Resamples the window [lo, hi) ([y, x]) of `in` into output 0 (out: size and type). When
 * the axes take different filters, two passes: the rows with the H filter into a float32
 * image, then the columns with the W filter; the other axis of each pass is copied
 * exactly (a scale-1 window on whole pixels). */
static inline stk_status stk__resample_axes(const stk__node *node, stk__sample *s,
                                            const stk__resample_filters *f, const stk__image *in,
                                            stk__image *out, const double lo[2],
                                            const double hi[2]) {
  stk__interp ih = stk__axis_interp(f, out->h, lo[0], hi[0]);
  stk__interp iw = stk__axis_interp(f, out->w, lo[1], hi[1]);
  if (ih == iw) {
    stk__resample_args ra = {lo[1], lo[0], hi[1], hi[0], ih, f->antialias, 0};
    return stk__resample_to_output(node, s, in, out, &ra);
  }
  stk__image mid = {NULL, STK_DTYPE_FLOAT32, out->h, in->w, in->c};
  mid.data = stk__scratch(s, (size_t)(mid.h * mid.w * mid.c) * sizeof(float) + 4);
  stk__resample_args rows = {0.0, lo[0], (double)in->w, hi[0], ih, f->antialias, 0};
  size_t need = stk__resample_scratch_size(in, mid.h, mid.w, &rows);
  void *scratch = need ? stk__scratch(s, need) : NULL;
  if (!mid.data || (need && !scratch))
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  STK_TRY(stk__sample_wrap(stk__resample(in, &mid, &rows, scratch, need), node, s));
  stk__resample_args cols = {lo[1], 0.0, hi[1], (double)mid.h, iw, f->antialias, 0};
  return stk__resample_to_output(node, s, &mid, out, &cols);
}

/* The one filter the GPU resample kernels take for a batch: sample i's axes (output
 * `shape`, window [lo, hi)) must pick the same filter as each other and as sample 0. */
static inline stk_status stk__gpu_batch_interp(const stk__node *node, stk__sample *s,
                                               const stk__resample_filters *f, size_t i,
                                               const int64_t *shape, const double lo[2],
                                               const double hi[2], stk__interp *batch_interp) {
  stk__interp ih = stk__axis_interp(f, shape[0], lo[0], hi[0]);
  stk__interp iw = stk__axis_interp(f, shape[1], lo[1], hi[1]);
  if (i == 0) *batch_interp = ih;
  if (ih != iw || ih != *batch_interp)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "min_filter and mag_filter pick different filters for the axes or samples "
                      "of this batch; the GPU resize takes one filter per batch (use the CPU, "
                      "or equal filters)");
  return STK_OK;
}

/* A per-channel float argument for `channels` channels: one value is broadcast, else
 * exactly `channels` values. *out lives in the sample's scratch. */
static inline stk_status stk__channel_values(const stk__node *node, stk__sample *s, int arg,
                                             const char *name, int64_t channels, double **out) {
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  if (n != 1 && n != (size_t)channels)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' has %zu values; expected 1 or %lld (one per channel)", name, n,
                      (long long)channels);
  double *d = stk__scratch(s, (size_t)channels * sizeof(double));
  if (!d) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory for '%s'", name);
  for (int64_t c = 0; c < channels; c++) d[c] = v[n == 1 ? 0 : c];
  *out = d;
  return STK_OK;
}

/* A dtype argument whose empty default means "the input's type". */
static inline stk_status stk__dtype_or_same(const stk__node *node, int arg, const char *name,
                                            stk_dtype same, stk_dtype *out) {
  const char *text = stk__arg_string(node, arg);
  if (!text || !*text) {
    *out = same;
    return STK_OK;
  }
  if (stk_dtype_from_name(text, out) != STK_OK)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "'%s' = \"%s\" is not a type", name,
                      text);
  return STK_OK;
}

/* The crop window arguments shared by crop and crop_mirror_normalize (indices into the
 * operator's schema). */
typedef struct {
  int crop, crop_h, crop_w, pos_x, pos_y;
} stk__crop_arg_ids;

/* Build-time check: `crop` excludes crop_h / crop_w, which come together. */
static inline stk_status stk__crop_args_check(const stk__node *node, const stk__crop_arg_ids *a) {
  bool c = stk__arg_given(node, a->crop), h = stk__arg_given(node, a->crop_h);
  bool w = stk__arg_given(node, a->crop_w);
  if (c && (h || w))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "crop cannot be combined with crop_h / crop_w");
  if (h != w)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "crop_h and crop_w come together");
  return STK_OK;
}

/* This sample's crop window of an in_h x in_w image (see stk__crop_rect). */
static inline stk_status stk__crop_args_rect(const stk__node *node, stk__sample *s,
                                             const stk__crop_arg_ids *a, stk__oob_policy policy,
                                             bool truncate, int64_t in_h, int64_t in_w,
                                             stk__rect *out) {
  double ch = 0.0, cw = 0.0;
  if (stk__arg_given(node, a->crop)) {
    const double *v;
    size_t n = stk__arg_floats(node, s, a->crop, &v);
    if (n != 1 && n != 2)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "crop has %zu values; expected "
                        "[H, W]",
                        n);
    ch = v[0], cw = v[n - 1];
  } else if (stk__arg_given(node, a->crop_h)) {
    ch = stk__arg_float(node, s, a->crop_h), cw = stk__arg_float(node, s, a->crop_w);
  }
  double px = stk__arg_float(node, s, a->pos_x), py = stk__arg_float(node, s, a->pos_y);
  if (!(px >= 0.0 && px <= 1.0 && py >= 0.0 && py <= 1.0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "crop_pos_x = %g, crop_pos_y = %g: "
                      "must lie in [0, 1]",
                      px, py);
  if (!(ch < 2147483647.0 && cw < 2147483647.0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "crop %gx%g is too large", ch, cw);
  if (!stk__crop_rect(in_h, in_w, ch, cw, py, px, truncate, policy, out))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "crop window %lldx%lld at (y %lld, x %lld) leaves the %lldx%lld image "
                      "(out_of_bounds_policy \"error\"; use \"pad\" or \"trim_to_shape\")",
                      (long long)out->h, (long long)out->w, (long long)out->y, (long long)out->x,
                      (long long)in_h, (long long)in_w);
  return STK_OK;
}

#endif /* STOKER_OPS_IMAGE_UTIL_H */
