/* tensor_resize (and experimental.tensor_resize): DALI's resize of any tensor along chosen
 * axes, given output sizes or scale factors, on the CPU. Each resized axis is one pass of
 * the image resampler (resample.h) over the tensor seen as an [outer, axis, inner] image
 * whose other axis is copied exactly, so the filters, antialiasing and rounding are
 * resize's. The output extents follow DALI 2.4's TensorResize, learnt from its CPU
 * operator: see tr_plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "image_util.h"
#include "resample.h"
#include "tensor_util.h"

enum {
  TR_SIZES,
  TR_SCALES,
  TR_AXES,
  TR_AXIS_NAMES,
  TR_ALIGNMENT,
  TR_SIZE_ROUNDING,
  TR_MODE,
  TR_MAX_SIZE,
  TR_INTERP,
  TR_ANTIALIAS,
  TR_DTYPE,
  TR_SUBPIXEL,
  TR_ROI_START,
  TR_ROI_END,
  TR_ROI_RELATIVE,
  TR_MINIBATCH,
  TR_TEMP_BUFFER,
  TR_MIN_FILTER,
  TR_MAG_FILTER,
  TR_COUNT_
};

static const stk_arg_schema tr_args[] = {
    [TR_SIZES] = {.name = "sizes",
                  .type = STK_ARG_FLOATS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "output extents, one per resized axis; 0 derives that extent by "
                         "`mode` (excludes scales)"},
    [TR_SCALES] = {.name = "scales",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "scale factors, one per resized axis: out = size_rounding(scale * "
                          "input extent) (excludes sizes)"},
    [TR_AXES] = {.name = "axes",
                 .type = STK_ARG_INTS,
                 .doc = "the axes sizes / scales / max_size / roi_* refer to, in order "
                        "(negative: from the back); default all (excludes axis_names)"},
    [TR_AXIS_NAMES] = {.name = "axis_names",
                       .type = STK_ARG_STRING,
                       .doc = "the same as layout letters (excludes axes)"},
    [TR_ALIGNMENT] = {.name = "alignment",
                      .type = STK_ARG_FLOATS,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .default_text = "[0.5]",
                      .doc = "when the rounded size differs from the ideal one, the point of "
                             "the region that keeps its place: 0 its start, 0.5 its centre, 1 "
                             "its end (one value, or one per axis)"},
    [TR_SIZE_ROUNDING] = {.name = "size_rounding",
                          .type = STK_ARG_STRING,
                          .default_text = "\"round\"",
                          .choices = "round|truncate|ceil",
                          .doc = "how fractional output extents become integers (at least 1)"},
    [TR_MODE] = {.name = "mode",
                 .type = STK_ARG_STRING,
                 .default_text = "\"default\"",
                 .choices = STK__RESIZE_MODE_CHOICES,
                 .doc = "as resize's, over all the input's axes, the axes not resized counting "
                        "as requested at their own extent (as DALI 2.4: not_smaller may then "
                        "grow them)"},
    [TR_MAX_SIZE] = {.name = "max_size",
                     .type = STK_ARG_FLOATS,
                     .doc = "limits of the output extents, one value or one per resized axis "
                            "(0: none)"},
    [TR_INTERP] = {.name = "interp_type",
                   .type = STK_ARG_STRING,
                   .default_text = "\"linear\"",
                   .choices = STK__INTERP_CHOICES,
                   .doc = "interpolation, as resize's"},
    [TR_ANTIALIAS] = {.name = "antialias",
                      .type = STK_ARG_BOOL,
                      .default_text = "true",
                      .doc = "when downscaling, widen the filter by the scale factor"},
    [TR_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "output type: \"\" (the input's) or a numeric type (integers: rounded "
                         "and saturated)"},
    [TR_SUBPIXEL] = {.name = "subpixel_scale",
                     .type = STK_ARG_BOOL,
                     .default_text = "true",
                     .doc = "keep the exact scale when the extent is rounded (the region is "
                            "adjusted about the alignment point); false maps the whole region "
                            "onto the rounded extent"},
    [TR_ROI_START] = {.name = "roi_start",
                      .type = STK_ARG_FLOATS,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .doc = "start of the region to resize, per resized axis (with roi_end)"},
    [TR_ROI_END] = {.name = "roi_end",
                    .type = STK_ARG_FLOATS,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .doc = "end of the region to resize (with roi_start)"},
    [TR_ROI_RELATIVE] = {.name = "roi_relative",
                         .type = STK_ARG_BOOL,
                         .default_text = "false",
                         .doc = "roi_start / roi_end are fractions of the input's extents"},
    [TR_MINIBATCH] = STK__RESAMPLE_MINIBATCH_ARG,
    [TR_TEMP_BUFFER] = STK__RESAMPLE_TEMP_BUFFER_ARG,
    [TR_MIN_FILTER] = {.name = "min_filter",
                       .type = STK_ARG_STRING,
                       .choices = STK__INTERP_CHOICES,
                       .doc = "the filter of the axes scaled down (default: interp_type)"},
    [TR_MAG_FILTER] = {.name = "mag_filter",
                       .type = STK_ARG_STRING,
                       .choices = STK__INTERP_CHOICES,
                       .doc = "the filter of the axes scaled up or kept (default: interp_type)"},
};
STK__CHECK_ARGS(tr_args, TR_COUNT_);

static const stk_port_schema tr_in[] = {{"input", "a tensor of any numeric type"}};
static const stk_port_schema tr_out[] = {{"output", "the resized tensor (the input's layout)"}};

static int64_t volume(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

/* One sample's plan: per input axis the output extent and the source window. */
typedef struct {
  int ndim;
  int64_t out[STK_MAX_NDIM];
  double lo[STK_MAX_NDIM], hi[STK_MAX_NDIM];
  bool resized[STK_MAX_NDIM];
} tr_plan_t;

static stk_status tr_init(stk__node *node) {
  const char *msg = NULL;
  if (stk__arg_given(node, TR_SIZES) == stk__arg_given(node, TR_SCALES))
    msg = "give exactly one of sizes and scales (as in DALI)";
  else if (stk__arg_given(node, TR_AXES) && stk__arg_given(node, TR_AXIS_NAMES))
    msg = "axes and axis_names are mutually exclusive (as in DALI)";
  else if (stk__arg_given(node, TR_ROI_START) != stk__arg_given(node, TR_ROI_END))
    msg = "roi_start and roi_end must be given together";
  if (msg) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "%s", msg);
  stk__interp ip;
  stk__resize_mode m;
  if (!stk__interp_parse(stk__arg_string(node, TR_INTERP), &ip) ||
      !stk__resize_mode_parse(stk__arg_string(node, TR_MODE), &m))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "unknown interp_type or mode");
  const char *dt = stk__arg_string(node, TR_DTYPE);
  stk_dtype d;
  if (*dt && stk_dtype_from_name(dt, &d) != STK_OK)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "dtype \"%s\" is not a type", dt);
  return STK_OK;
}

/* The resized axes in the order the per-axis arguments give them. */
static stk_status tr_axes(stk__node *node, stk__sample *s, const stk__tensor *in, int *axes,
                          int *na) {
  *na = 0;
  if (stk__arg_given(node, TR_AXIS_NAMES)) {
    const char *names = stk__arg_string(node, TR_AXIS_NAMES);
    bool has_layout = (int)strlen(in->layout) == in->ndim && in->ndim > 0;
    for (const char *c = names; *c; c++) {
      const char *at = has_layout ? strchr(in->layout, *c) : NULL;
      if (!at || *na >= STK_MAX_NDIM)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "axis_names: '%c' is not in the input's layout \"%s\"", *c, in->layout);
      axes[(*na)++] = (int)(at - in->layout);
    }
  } else if (stk__arg_given(node, TR_AXES)) {
    const int64_t *ax;
    size_t n = stk__arg_ints(node, s, TR_AXES, &ax);
    for (size_t k = 0; k < n; k++) {
      int64_t a = ax[k] < 0 ? ax[k] + in->ndim : ax[k];
      if (a < 0 || a >= in->ndim || *na >= STK_MAX_NDIM)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "axes[%zu] = %lld is out of range for %d dimensions", k, (long long)ax[k],
                          in->ndim);
      axes[(*na)++] = (int)a;
    }
  } else {
    for (int d = 0; d < in->ndim; d++) axes[(*na)++] = d;
  }
  for (int i = 0; i < *na; i++)
    for (int j = 0; j < i; j++)
      if (axes[i] == axes[j])
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "axis %d is listed twice", axes[i]);
  return STK_OK;
}

/* `na` values of a per-axis argument (one value: broadcast) into v. */
static stk_status tr_values(stk__node *node, stk__sample *s, int arg, int na, double *v) {
  const double *x;
  size_t n = stk__arg_floats(node, s, arg, &x);
  bool bcast = arg == TR_ALIGNMENT || arg == TR_MAX_SIZE;
  if (!((int)n == na || (bcast && n == 1)))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' has %zu values; expected %d (one per resized axis)%s",
                      tr_args[arg].name, n, na, bcast ? " or 1" : "");
  for (int k = 0; k < na; k++) {
    v[k] = x[n == 1 ? 0 : k];
    if (!isfinite(v[k]) || fabs(v[k]) > 1e9)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s'[%d] = %g is out of range",
                        tr_args[arg].name, k, v[k]);
  }
  return STK_OK;
}

/* DALI's size rules over all axes: the axes not resized count as requested at their own
 * extent; a 0 size is derived by the mode (default: the geometric mean of the requested
 * scales; stretch: kept); not_larger / not_smaller use one scale for every axis (the
 * smallest / largest requested), lowered to fit max_size; default / stretch clip each
 * extent to max_size. `ideal` gets the unrounded extents. */
static void tr_mode_sizes(stk__resize_mode mode, int ndim, const double *in, const double *req,
                          const bool *given, const double *max, double *ideal) {
  double logsum = 0, lo = INFINITY, hi = 0;
  int ng = 0;
  for (int d = 0; d < ndim; d++) {
    if (!given[d] || in[d] <= 0) continue;
    double sc = req[d] / in[d];
    logsum += log(sc), ng++;
    lo = sc < lo ? sc : lo, hi = sc > hi ? sc : hi;
  }
  if (mode == STK__RESIZE_NOT_LARGER || mode == STK__RESIZE_NOT_SMALLER) {
    double sc = ng == 0 ? 1.0 : mode == STK__RESIZE_NOT_LARGER ? lo : hi;
    for (int d = 0; d < ndim; d++)
      if (max[d] > 0 && in[d] > 0 && max[d] / in[d] < sc) sc = max[d] / in[d];
    for (int d = 0; d < ndim; d++) ideal[d] = in[d] * sc;
    return;
  }
  double avg = mode == STK__RESIZE_DEFAULT && ng ? exp(logsum / ng) : 1.0;
  for (int d = 0; d < ndim; d++) {
    ideal[d] = given[d] ? req[d] : in[d] * avg;
    if (max[d] > 0 && ideal[d] > max[d]) ideal[d] = max[d];
  }
}

static int64_t tr_round(double v, const char *rounding) {
  double r = strcmp(rounding, "ceil") == 0       ? ceil(v - 1e-9)
             : strcmp(rounding, "truncate") == 0 ? floor(v + 1e-9)
                                                 : floor(v + 0.5);
  return r < 1 ? 1 : (int64_t)r;
}

/* The plan of one sample: output extents and source windows (pixel edges) per axis. */
static stk_status tr_plan(stk__node *node, stk__sample *s, const stk__tensor *in, tr_plan_t *p) {
  int axes[STK_MAX_NDIM], na;
  STK_TRY(tr_axes(node, s, in, axes, &na));
  int nd = in->ndim;
  double ext[STK_MAX_NDIM], lo[STK_MAX_NDIM], hi[STK_MAX_NDIM], req[STK_MAX_NDIM] = {0};
  double max[STK_MAX_NDIM] = {0}, align[STK_MAX_NDIM], ideal[STK_MAX_NDIM];
  bool given[STK_MAX_NDIM], from_scale = stk__arg_given(node, TR_SCALES);
  double v[STK_MAX_NDIM], a[STK_MAX_NDIM], m[STK_MAX_NDIM], r0[STK_MAX_NDIM], r1[STK_MAX_NDIM];
  STK_TRY(tr_values(node, s, from_scale ? TR_SCALES : TR_SIZES, na, v));
  STK_TRY(tr_values(node, s, TR_ALIGNMENT, na, a));
  if (stk__arg_given(node, TR_MAX_SIZE)) STK_TRY(tr_values(node, s, TR_MAX_SIZE, na, m));
  bool roi = stk__arg_given(node, TR_ROI_START), rel = stk__arg_bool(node, NULL, TR_ROI_RELATIVE);
  if (roi) {
    STK_TRY(tr_values(node, s, TR_ROI_START, na, r0));
    STK_TRY(tr_values(node, s, TR_ROI_END, na, r1));
  }
  p->ndim = nd;
  for (int d = 0; d < nd; d++) { /* axes not resized: requested at their own extent */
    ext[d] = (double)in->shape[d], lo[d] = 0, hi[d] = ext[d];
    req[d] = ext[d], given[d] = true, align[d] = 0.5, p->resized[d] = false;
  }
  for (int k = 0; k < na; k++) {
    int d = axes[k];
    if (v[k] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s'[%d] = %g is negative",
                        from_scale ? "scales" : "sizes", k, v[k]);
    if (roi) {
      lo[d] = rel ? r0[k] * ext[d] : r0[k], hi[d] = rel ? r1[k] * ext[d] : r1[k];
      if (!(hi[d] > lo[d]))
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "the region [%g, %g) on axis %d is empty or reversed", lo[d], hi[d], d);
    }
    /* scales apply to the input's extent even with a region (DALI 2.4) */
    req[d] = from_scale ? v[k] * ext[d] : v[k];
    given[d] = req[d] > 0, align[d] = a[k], p->resized[d] = true;
    if (stk__arg_given(node, TR_MAX_SIZE)) max[d] = m[k];
  }
  double roi_ext[STK_MAX_NDIM];
  for (int d = 0; d < nd; d++) roi_ext[d] = hi[d] - lo[d];
  stk__resize_mode mode = STK__RESIZE_DEFAULT;
  stk__resize_mode_parse(stk__arg_string(node, TR_MODE), &mode);
  tr_mode_sizes(mode, nd, roi_ext, req, given, max, ideal);
  const char *rounding = stk__arg_string(node, TR_SIZE_ROUNDING);
  bool subpixel = stk__arg_bool(node, NULL, TR_SUBPIXEL);
  for (int d = 0; d < nd; d++) {
    if (!(ideal[d] < 2147483647.0))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "output extent %g is too large",
                        ideal[d]);
    p->out[d] = tr_round(ideal[d], rounding);
    p->lo[d] = lo[d], p->hi[d] = hi[d];
    if (subpixel && (double)p->out[d] != ideal[d] && ideal[d] > 0) {
      /* keep the scale ideal / region: the window shrinks or grows about the alignment
       * point */
      double win = (double)p->out[d] * roi_ext[d] / ideal[d];
      double c = lo[d] + align[d] * roi_ext[d];
      p->lo[d] = c - align[d] * win, p->hi[d] = p->lo[d] + win;
    }
    if (p->out[d] != in->shape[d] || p->lo[d] != 0 || p->hi[d] != ext[d])
      p->resized[d] = true;
    else
      p->resized[d] = false;
  }
  return STK_OK;
}

/* One pass: axis d of `src` (shape sh, float32 or uint8) resampled to out extent into
 * `dst` of type dt, the tensor seen as an image of [outer] rows of [extent] pixels of
 * [inner] channels; the rows are copied exactly (a window of scale 1 on whole pixels). */
/* DALI's per-axis choice of filter: min_filter when axis d shrinks to `out`, mag_filter
 * otherwise, each defaulting to interp_type. */
static stk__interp tr_filter(const stk__node *node, const tr_plan_t *p, int d, int64_t out) {
  int which = (double)out < fabs(p->hi[d] - p->lo[d]) ? TR_MIN_FILTER : TR_MAG_FILTER;
  stk__interp ip = STK__INTERP_LINEAR;
  stk__interp_parse(stk__arg_string(node, stk__arg_given(node, which) ? which : TR_INTERP), &ip);
  return ip;
}

static stk_status tr_pass(stk__node *node, stk__sample *s, const tr_plan_t *p, int d,
                          const stk__image *src_view, const stk__image *dst_view) {
  stk__interp ip = tr_filter(node, p, d, dst_view->w);
  stk__resample_args ra = {
      p->lo[d], 0.0, p->hi[d], (double)src_view->h, ip, stk__arg_bool(node, NULL, TR_ANTIALIAS), 0};
  size_t need = stk__resample_scratch_size(src_view, dst_view->h, dst_view->w, &ra);
  void *scratch = need ? stk__scratch(s, need) : NULL;
  if (need && !scratch)
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory (%zu bytes)", need);
  return stk__sample_wrap(stk__resample(src_view, dst_view, &ra, scratch, need), node, s);
}

static stk_status tr_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype) || in->dtype == STK_DTYPE_BOOL)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "needs a numeric input, got %s",
                      stk_dtype_name(in->dtype));
  tr_plan_t p;
  STK_TRY(tr_plan(node, s, in, &p));
  const char *dt = stk__arg_string(node, TR_DTYPE);
  stk_dtype ot = in->dtype;
  if (*dt) stk_dtype_from_name(dt, &ot);
  int64_t total = 1;
  for (int d = 0; d < in->ndim; d++) total *= p.out[d];
  if (total > stk__node_max_pixels(node) && stk__node_max_pixels(node) > 0)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "the output (%lld elements) exceeds max_pixels",
                      (long long)total);
  /* the working tensor: uint8 and float32 are read as they are, others as float32 */
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, in->shape, sizeof shape);
  const void *cur = in->data;
  stk_dtype cur_dt = in->dtype;
  int64_t count = volume(in->ndim, in->shape);
  if (cur_dt != STK_DTYPE_UINT8 && cur_dt != STK_DTYPE_FLOAT32) {
    float *f = stk__scratch(s, (size_t)count * sizeof(float) + 4);
    if (!f) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
    stk__convert(f, STK_DTYPE_FLOAT32, cur, cur_dt, (size_t)count);
    cur = f, cur_dt = STK_DTYPE_FLOAT32;
  }
  for (int d = 0; d < in->ndim; d++) {
    if (!p.resized[d]) continue;
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < d; k++) outer *= shape[k];
    for (int k = d + 1; k < in->ndim; k++) inner *= shape[k];
    int64_t n = outer * p.out[d] * inner;
    float *next = stk__scratch(s, (size_t)n * sizeof(float) + 4);
    if (!next) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
    stk__image sv = {(void *)cur, cur_dt, outer, shape[d], inner};
    stk__image dv = {next, STK_DTYPE_FLOAT32, outer, p.out[d], inner};
    if (outer > 0 && inner > 0) STK_TRY(tr_pass(node, s, &p, d, &sv, &dv));
    shape[d] = p.out[d];
    cur = next, cur_dt = STK_DTYPE_FLOAT32;
  }
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, ot, in->ndim, shape, in->layout, &out));
  stk__convert(out->data, ot, cur, cur_dt, (size_t)volume(in->ndim, shape));
  return STK_OK;
}

/* ---- GPU ----
 * The CPU's passes on the device: per resized axis, launches of the resample kernel (one
 * per filter, input type and channel count in the batch). A sample's tensor is seen as
 * the CPU sees it, an image of `outer` rows of `extent` pixels of `inner` channels, when
 * inner <= 4 (the kernel's most); otherwise as `outer` images of `extent` rows of `inner`
 * one-channel pixels, resampled vertically. The other direction is a window of scale 1 on
 * whole pixels, which every filter reproduces exactly. Inputs other than uint8 and
 * float32 are cast to float32 first and the result to the output type last (the cast
 * kernel, stk__convert's rules), as on the CPU. */

typedef struct {
  tr_plan_t plan;
  int ndim;
  int64_t shape[STK_MAX_NDIM]; /* the current extents */
  void *cur;                   /* device: the current values */
  stk_dtype cur_dt;
} tr_gpu_sample;

#define TR_GPU_MAX_BLOCKS (STK_MAX_NDIM + 2)

typedef struct {
  stk__gpu *g;
  uintptr_t stream;
  void *blocks[TR_GPU_MAX_BLOCKS]; /* device scratch, freed after the last launch */
  int num_blocks;
} tr_gpu_ctx;

static stk_status tr_gpu_alloc(stk__node *node, tr_gpu_ctx *c, size_t bytes, void **out) {
  char err[STK_GPU_ERRLEN] = "";
  *out = NULL;
  if (c->num_blocks == TR_GPU_MAX_BLOCKS)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: too many scratch blocks", stk__node_name(node));
  STK_TRY(stk__gpu_op_check(
      node, c->g->api->device_alloc(c->g->ctx, bytes ? bytes : 1, c->stream, out, err, sizeof err),
      err));
  c->blocks[c->num_blocks++] = *out;
  return STK_OK;
}

static size_t tr_align(size_t n) { return (n + 255) & ~(size_t)255; }

/* Launches the entries `e` (k of them) of one group. */
static stk_status tr_gpu_launch(stk__node *node, tr_gpu_ctx *c, const stk_gpu_resample_sample *e,
                                int k, int channels, stk_dtype in_dt, stk__interp ip) {
  if (k == 0) return STK_OK;
  stk_gpu_resample_args a;
  memset(&a, 0, sizeof a);
  a.channels = channels, a.in_dtype = in_dt, a.out_dtype = STK_DTYPE_FLOAT32;
  a.interp = (int)ip, a.antialias = stk__arg_bool(node, NULL, TR_ANTIALIAS), a.scale = 1.0;
  char err[STK_GPU_ERRLEN] = "";
  return stk__gpu_op_check(
      node, stk_gpu_run_resample(c->g->api, c->g->ctx, k, e, &a, c->stream, err, sizeof err), err);
}

/* Sample t seen around axis d: the product of the extents before it and after it. */
static void tr_split(const tr_gpu_sample *t, int d, int64_t *outer, int64_t *inner) {
  *outer = 1, *inner = 1;
  for (int k = 0; k < t->ndim; k++) {
    if (k < d) *outer *= t->shape[k];
    if (k > d) *inner *= t->shape[k];
  }
}

/* The entries of sample `t` for axis d into `dst` (float32, out extent along d). */
static int tr_gpu_entries(const tr_gpu_sample *t, int d, void *dst, stk_gpu_resample_sample *e) {
  int64_t outer, inner, ext = t->shape[d], out = t->plan.out[d];
  tr_split(t, d, &outer, &inner);
  size_t es = stk_dtype_size(t->cur_dt);
  if (inner <= 4) { /* one image: outer rows of ext pixels, resampled along x */
    memset(e, 0, sizeof *e);
    e->src = t->cur, e->src_pitch = (size_t)(ext * inner) * es;
    e->src_h = (int)outer, e->src_w = (int)ext, e->dst = dst;
    e->dst_h = (int)outer, e->dst_w = (int)out;
    e->x0 = t->plan.lo[d], e->x1 = t->plan.hi[d], e->y0 = 0, e->y1 = (double)outer;
    return 1;
  }
  for (int64_t o = 0; o < outer; o++) { /* outer images of ext rows, resampled along y */
    stk_gpu_resample_sample *q = &e[o];
    memset(q, 0, sizeof *q);
    q->src = (const char *)t->cur + (size_t)(o * ext * inner) * es;
    q->src_pitch = (size_t)inner * es, q->src_h = (int)ext, q->src_w = (int)inner;
    q->dst = (char *)dst + (size_t)(o * out * inner) * sizeof(float);
    q->dst_h = (int)out, q->dst_w = (int)inner;
    q->y0 = t->plan.lo[d], q->y1 = t->plan.hi[d], q->x0 = 0, q->x1 = (double)inner;
  }
  return (int)outer;
}

/* One pass over axis d for every sample resized there. */
static stk_status tr_gpu_pass(stk__node *node, tr_gpu_ctx *c, tr_gpu_sample *ts, size_t n, int d) {
  size_t bytes = 0, entries = 0;
  for (size_t i = 0; i < n; i++) {
    const tr_gpu_sample *t = &ts[i];
    if (d >= t->ndim || !t->plan.resized[d]) continue;
    int64_t outer, inner;
    tr_split(t, d, &outer, &inner);
    if (outer == 0 || inner == 0) continue;
    if (t->shape[d] == 0 || t->shape[d] > INT32_MAX || t->plan.out[d] > INT32_MAX ||
        outer > INT32_MAX || inner > INT32_MAX)
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                        "sample %zu: axis %d of extent %lld cannot be resized on the GPU", i, d,
                        (long long)t->shape[d]);
    bytes += tr_align((size_t)(outer * t->plan.out[d] * inner) * sizeof(float));
    entries += inner <= 4 ? 1 : (size_t)outer;
  }
  if (entries == 0) return STK_OK;
  if (entries > INT32_MAX)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "too many rows to resize on the GPU");
  void *block;
  STK_TRY(tr_gpu_alloc(node, c, bytes, &block));
  stk_gpu_resample_sample *e = stk__calloc(entries, sizeof *e, "resample plans");
  uint8_t *key = stk__calloc(entries, 1, "resample groups"); /* interp | dtype | channels */
  void **next = stk__calloc(n, sizeof *next, "pass outputs");
  stk_status st = e && key && next ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  size_t k = 0, off = 0;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    tr_gpu_sample *t = &ts[i];
    if (d >= t->ndim || !t->plan.resized[d]) continue;
    int64_t outer, inner;
    tr_split(t, d, &outer, &inner);
    if (outer == 0 || inner == 0) continue;
    next[i] = (char *)block + off;
    off += tr_align((size_t)(outer * t->plan.out[d] * inner) * sizeof(float));
    int m = tr_gpu_entries(t, d, next[i], e + k);
    uint8_t kk = (uint8_t)((int)tr_filter(node, &t->plan, d, t->plan.out[d]) << 4 |
                           (t->cur_dt == STK_DTYPE_UINT8) << 3 | (inner <= 4 ? inner : 1));
    for (int j = 0; j < m; j++) key[k + (size_t)j] = kk;
    k += (size_t)m;
  }
  /* one launch per group: the entries of a key gathered in front of the rest */
  stk_gpu_resample_sample *grp = st == STK_OK ? stk__calloc(entries, sizeof *grp, "a group") : NULL;
  if (st == STK_OK && !grp) st = STK_ERR_OUT_OF_MEMORY;
  bool done[256] = {false};
  for (size_t j = 0; j < entries && st == STK_OK; j++) {
    if (done[key[j]]) continue;
    done[key[j]] = true;
    int m = 0;
    for (size_t q = j; q < entries; q++)
      if (key[q] == key[j]) grp[m++] = e[q];
    st = tr_gpu_launch(node, c, grp, m, key[j] & 7,
                       (key[j] & 8) ? STK_DTYPE_UINT8 : STK_DTYPE_FLOAT32,
                       (stk__interp)(key[j] >> 4));
  }
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    if (!next || !next[i]) {
      if (d < ts[i].ndim && ts[i].plan.resized[d]) ts[i].shape[d] = ts[i].plan.out[d];
      continue;
    }
    ts[i].cur = next[i], ts[i].cur_dt = STK_DTYPE_FLOAT32, ts[i].shape[d] = ts[i].plan.out[d];
  }
  free(grp);
  free(e);
  free(key);
  free(next);
  return st;
}

/* Casts every sample's current values into `out` (type ot), one launch per source type. */
static stk_status tr_gpu_store(stk__node *node, tr_gpu_ctx *c, const tr_gpu_sample *ts, size_t n,
                               stk_tensor_list *out, stk_dtype ot) {
  stk_gpu_cast_sample *cs = stk__calloc(n ? n : 1, sizeof *cs, "a cast plan");
  if (!cs) return STK_ERR_OUT_OF_MEMORY;
  stk_status st = STK_OK;
  for (int pass = 0; pass < 2 && st == STK_OK; pass++) {
    int m = 0;
    stk_dtype from = STK_DTYPE_COUNT;
    for (size_t i = 0; i < n; i++) {
      bool f32 = ts[i].cur_dt == STK_DTYPE_FLOAT32;
      if (f32 != (pass == 0)) continue;
      stk_tensor_desc dd;
      stk_tensor_list_sample(out, i, &dd);
      cs[m++] = (stk_gpu_cast_sample){ts[i].cur, dd.data, volume(ts[i].ndim, ts[i].shape)};
      from = ts[i].cur_dt;
    }
    if (m == 0) continue;
    char err[STK_GPU_ERRLEN] = "";
    stk_gpu_io_args io = {from, ot};
    st = stk__gpu_op_check(
        node, stk_gpu_run_cast(c->g->api, c->g->ctx, m, cs, &io, c->stream, err, sizeof err), err);
  }
  free(cs);
  return st;
}

static stk_status tr_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_RESAMPLE));
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  tr_gpu_ctx c = {stk__gpu_device(b), stk__gpu_stream(b), {NULL}, 0};
  tr_gpu_sample *ts = stk__calloc(n ? n : 1, sizeof *ts, "tensor_resize plans");
  int nd = stk_tensor_list_ndim(in);
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(nd ? nd : 1), sizeof(int64_t), "shapes");
  stk_status st = ts && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  stk_dtype it = stk_tensor_list_dtype(in), ot = it;
  const char *dt = stk__arg_string(node, TR_DTYPE);
  if (*dt) stk_dtype_from_name(dt, &ot);
  if (st == STK_OK && (!stk__dtype_valid(it) || it == STK_DTYPE_BOOL))
    st = STK_FAIL(STK_ERR_UNSUPPORTED, "%s: needs a numeric input, got %s", stk__node_name(node),
                  stk_dtype_name(it));
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    st = tr_plan(node, stk__gpu_sample(b, i), &t, &ts[i].plan);
    ts[i].ndim = t.ndim, ts[i].cur = t.data, ts[i].cur_dt = it;
    memcpy(ts[i].shape, t.shape, sizeof ts[i].shape);
    int64_t total = volume(t.ndim, ts[i].plan.out);
    if (st == STK_OK && stk__node_max_pixels(node) > 0 && total > stk__node_max_pixels(node))
      st = STK__SFAIL(STK_ERR_LIMIT, node, stk__gpu_sample(b, i),
                      "the output (%lld elements) exceeds max_pixels", (long long)total);
    for (int d = 0; d < nd && st == STK_OK; d++) shapes[i * (size_t)nd + d] = ts[i].plan.out[d];
  }
  /* types the kernel does not read: to float32 first */
  if (st == STK_OK && n && it != STK_DTYPE_UINT8 && it != STK_DTYPE_FLOAT32) {
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += tr_align((size_t)volume(nd, ts[i].shape) * 4);
    void *block;
    st = tr_gpu_alloc(node, &c, bytes, &block);
    stk_gpu_cast_sample *cs = st == STK_OK ? stk__calloc(n, sizeof *cs, "a cast plan") : NULL;
    if (st == STK_OK && !cs) st = STK_ERR_OUT_OF_MEMORY;
    size_t off = 0;
    for (size_t i = 0; i < n && st == STK_OK; i++) {
      cs[i] = (stk_gpu_cast_sample){ts[i].cur, (char *)block + off, volume(nd, ts[i].shape)};
      ts[i].cur = (char *)block + off, ts[i].cur_dt = STK_DTYPE_FLOAT32;
      off += tr_align((size_t)volume(nd, ts[i].shape) * 4);
    }
    if (st == STK_OK) {
      char err[STK_GPU_ERRLEN] = "";
      stk_gpu_io_args io = {it, STK_DTYPE_FLOAT32};
      st = stk__gpu_op_check(
          node, stk_gpu_run_cast(c.g->api, c.g->ctx, (int)n, cs, &io, c.stream, err, sizeof err),
          err);
    }
    free(cs);
  }
  for (int d = 0; d < nd && st == STK_OK; d++) st = tr_gpu_pass(node, &c, ts, n, d);
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, ot, nd, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, nd), &out);
  if (st == STK_OK) st = tr_gpu_store(node, &c, ts, n, out, ot);
  for (int k = 0; k < c.num_blocks; k++) /* stream-ordered: after the launches above */
    c.g->api->device_free(c.g->ctx, c.blocks[k], c.stream, NULL, 0);
  free(ts);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema tr_schema = {
    .name = "tensor_resize",
    .doc =
        "Resizes any tensor along the chosen axes (DALI's tensor_resize): give sizes or "
        "scales per axis of `axes` / `axis_names` (default all). Each resized axis is "
        "resampled with resize's filters (interp_type, antialias) over the region roi_start "
        "/ roi_end; with scales, out = size_rounding(scale * extent), the region adjusted "
        "about `alignment` so the scale stays exact (subpixel_scale). mode and max_size "
        "follow resize's rules over all the input's axes, as DALI 2.4. On the GPU the same "
        "passes run as resample kernels.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = tr_in,
    .num_outputs = 1,
    .outputs = tr_out,
    .num_args = TR_COUNT_,
    .args = tr_args,
    .gpu_check =
        "# atol=0.02 mismatch=0.005\n"
        "f = cast(IN, dtype=\"float32\")\n"
        "a = tensor_resize(f, sizes=[37, 51], axes=[0, 1], device=@)\n"
        "b = tensor_resize(IN, scales=[0.5, 1.0, 1.5], interp_type=\"cubic\", device=@)\n"
        "c = tensor_resize(f, sizes=[60], axes=[1], antialias=false, dtype=\"float16\", "
        "device=@)\n"
        "return a, b, c",
};
const stk__op_def stk__op_tensor_resize = {
    .schema = &tr_schema,
    .init = tr_init,
    .run_sample = tr_run,
    .run_gpu = tr_run_gpu,
};
