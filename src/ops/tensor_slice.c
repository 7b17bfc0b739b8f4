/* Slicing and joining: slice, pad, cat, stack, element_extract, sequence_rearrange. Each
 * output sample is one or more strided copies with fills (stk_tn_copy, tensor_common.h),
 * run element by element with the same function on the CPU and on the GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

#define TN_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool"

static const stk_port_schema one_out[] = {{"output", "the result"}};

/* Stores fill values into a plan, converted as DALI's static_cast (-1 into uint8 is 255,
 * 2.7 is 2). */
static void set_fill(stk_tn_copy *p, stk_dtype dt, const double *v, size_t n, int axis) {
  p->nfill = n ? (int)(n > STK_TN_MAX_FILL ? STK_TN_MAX_FILL : n) : 1;
  p->fill_axis = n > 1 ? axis : -1;
  memset(p->fill, 0, sizeof p->fill);
  for (int k = 0; k < p->nfill && n; k++) stk_tn_store_cast(&p->fill[k], dt, 0, v[k]);
}

/* Runs a one-copy plan into a fresh output, converting to `out_dt` when it differs. */
static stk_status emit_copy(stk__sample *s, stk_tn_copy *p, stk_dtype dt, stk_dtype out_dt,
                            const char *layout) {
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, out_dt, p->ndim, p->shape, layout, &out));
  int es = (int)stk_dtype_size(dt);
  if (out_dt == dt) {
    p->dst = out->data;
    stk__tn_copy_run(p, es);
    return STK_OK;
  }
  p->dst = stk__scratch(s, (size_t)p->count * (size_t)es + 1);
  if (!p->dst) return STK_ERR_OUT_OF_MEMORY;
  stk__tn_copy_run(p, es);
  stk__convert(out->data, out_dt, p->dst, dt, (size_t)p->count);
  return STK_OK;
}

/* ---- slice ---- */

enum {
  S_START,
  S_END,
  S_SHAPE,
  S_REL_START,
  S_REL_END,
  S_REL_SHAPE,
  S_AXES,
  S_AXIS_NAMES,
  S_NORM_ANCHOR,
  S_NORM_SHAPE,
  S_OOB,
  S_FILL,
  S_DTYPE,
  S_COUNT_
};
static const stk_arg_schema slice_args[] = {
    [S_START] = {.name = "start",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "absolute start of the slice along each of the slice axes"},
    [S_END] = {.name = "end",
               .type = STK_ARG_FLOATS,
               .flags = STK_ARGF_PER_SAMPLE,
               .doc = "absolute end (exclusive); give end or shape"},
    [S_SHAPE] = {.name = "shape",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "absolute extents of the slice"},
    [S_REL_START] = {.name = "rel_start",
                     .type = STK_ARG_FLOATS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "start as a fraction of each extent"},
    [S_REL_END] = {.name = "rel_end",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "end as a fraction of each extent"},
    [S_REL_SHAPE] = {.name = "rel_shape",
                     .type = STK_ARG_FLOATS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "extents as fractions of the input's"},
    [S_AXES] = {.name = "axes",
                .type = STK_ARG_INTS,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "[1, 0]",
                .doc = "the axes the anchor and shape values refer to, in order (excludes "
                       "axis_names)"},
    [S_AXIS_NAMES] = {.name = "axis_names",
                      .type = STK_ARG_STRING,
                      .default_text = "\"WH\"",
                      .doc = "the same as layout letters; used when the layout has them and "
                             "axes is not given"},
    [S_NORM_ANCHOR] = {.name = "normalized_anchor",
                       .type = STK_ARG_BOOL,
                       .default_text = "true",
                       .doc = "a floating-point anchor input is a fraction of the extents"},
    [S_NORM_SHAPE] = {.name = "normalized_shape",
                      .type = STK_ARG_BOOL,
                      .default_text = "true",
                      .doc = "a floating-point shape input is a fraction of the extents"},
    [S_OOB] = {.name = "out_of_bounds_policy",
               .type = STK_ARG_STRING,
               .default_text = "\"error\"",
               .choices = STK__OOB_CHOICES,
               .doc = "a window leaving the input: error, pad (with fill_values) or "
                      "trim_to_shape (cut to the input)"},
    [S_FILL] = {.name = "fill_values",
                .type = STK_ARG_FLOATS,
                .default_text = "[0.0]",
                .doc = "the padding value, or one per channel (the layout's C axis, else the "
                       "last)"},
    [S_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .choices = TN_DTYPES,
                 .doc = "output type (default: the input's); converted with saturation"},
};
STK__CHECK_ARGS(slice_args, S_COUNT_);

static const stk_port_schema slice_in[] = {
    {"data", "the tensor to slice"},
    {"anchor", "optional: the start per slice axis (float: a fraction when normalized_anchor)"},
    {"shape", "optional: the extents per slice axis (float: fractions when normalized_shape)"}};

/* The slice axes, in the order the values refer to them. */
static stk_status slice_axes(stk__node *node, stk__sample *s, const stk__tensor *in, int *axes,
                             int *na) {
  /* axes and axis_names exclude each other (slice_init); with neither, the default names
   * ("WH") apply when the layout has those letters, else the default axes ([1, 0]) */
  const char *names = stk__arg_string(node, S_AXIS_NAMES);
  bool by_names = stk__arg_given(node, S_AXIS_NAMES);
  if (!by_names && !stk__arg_given(node, S_AXES) && (int)strlen(in->layout) == in->ndim) {
    by_names = true;
    for (const char *c = names; *c; c++)
      if (!strchr(in->layout, *c)) by_names = false;
  }
  if (by_names) {
    *na = 0;
    for (const char *c = names; *c; c++) {
      const char *at = (int)strlen(in->layout) == in->ndim ? strchr(in->layout, *c) : NULL;
      if (!at)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "axis_names: '%c' is not in the input layout \"%s\"", *c, in->layout);
      axes[(*na)++] = (int)(at - in->layout);
    }
    return STK_OK;
  }
  const int64_t *ax;
  size_t n = stk__arg_ints(node, s, S_AXES, &ax);
  if (n > STK_MAX_NDIM) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "too many axes");
  for (size_t k = 0; k < n; k++) {
    int64_t a = ax[k] < 0 ? ax[k] + in->ndim : ax[k];
    if (a < 0 || a >= in->ndim)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "axes[%zu] = %lld is out of range for %d dimensions", k, (long long)ax[k],
                        in->ndim);
    axes[k] = (int)a;
  }
  *na = (int)n;
  return STK_OK;
}

/* Values for `na` axes from input `idx` (if present) or the absolute / relative argument
 * pair; *rel says whether they are fractions. false: none given. */
static stk_status slice_values(stk__node *node, stk__sample *s, const stk__tensor *in, int idx,
                               int a_abs, int a_rel, int a_norm, int na, double *v, bool *rel,
                               bool *found) {
  const double *fv;
  size_t n = 0;
  *found = true, *rel = false;
  if (stk__node_num_inputs(node) > idx) {
    const stk__tensor *t = &in[idx];
    n = (size_t)stk__tn_volume(t->ndim, t->shape);
    if ((int)n != na)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "input %d has %zu values for %d slice axes", idx, n, na);
    for (size_t k = 0; k < n; k++) v[k] = stk_ar_load_f(t->data, t->dtype, k);
    *rel = stk_ar_is_float(t->dtype) && stk__arg_bool(node, s, a_norm);
    return STK_OK;
  }
  if (a_abs >= 0 && stk__arg_given(node, a_abs)) {
    n = stk__arg_floats(node, s, a_abs, &fv);
  } else if (stk__arg_given(node, a_rel)) {
    n = stk__arg_floats(node, s, a_rel, &fv);
    *rel = true;
  } else {
    *found = false;
    return STK_OK;
  }
  if ((int)n != na)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "%s has %zu values for %d slice axes",
                      slice_args[*rel ? a_rel : a_abs].name, n, na);
  memcpy(v, fv, n * sizeof(double));
  return STK_OK;
}

/* The window [begin, end) per input axis. */
static stk_status slice_window(stk__node *node, stk__sample *s, const stk__tensor *in,
                               int64_t *begin, int64_t *end) {
  int axes[STK_MAX_NDIM], na;
  STK_TRY(slice_axes(node, s, in, axes, &na));
  double a[STK_MAX_NDIM] = {0}, sh[STK_MAX_NDIM], e[STK_MAX_NDIM];
  bool arel, srel, erel, has_a, has_s, has_e;
  STK_TRY(slice_values(node, s, in, 1, S_START, S_REL_START, S_NORM_ANCHOR, na, a, &arel, &has_a));
  STK_TRY(slice_values(node, s, in, 2, S_SHAPE, S_REL_SHAPE, S_NORM_SHAPE, na, sh, &srel, &has_s));
  STK_TRY(slice_values(node, s, in, 99, S_END, S_REL_END, S_NORM_SHAPE, na, e, &erel, &has_e));
  if (has_s && has_e)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "give the slice's shape or its end");
  for (int d = 0; d < in->ndim; d++) begin[d] = 0, end[d] = in->shape[d];
  for (int k = 0; k < na; k++) {
    int d = axes[k];
    double ext = (double)in->shape[d];
    double a0 = has_a ? (arel ? a[k] * ext : a[k]) : 0.0;
    double a1 = has_s   ? a0 + (srel ? sh[k] * ext : sh[k])
                : has_e ? (erel ? e[k] * ext : e[k])
                        : ext;
    begin[d] = (int64_t)llround(a0);
    end[d] = (int64_t)llround(a1);
    if (end[d] < begin[d])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the slice along axis %d ends (%lld) before it starts (%lld)", d,
                        (long long)end[d], (long long)begin[d]);
  }
  return STK_OK;
}

/* The channel axis for per-channel fill values: the layout's C, else the last. */
static int channel_axis(const stk__tensor *in) {
  const char *c = (int)strlen(in->layout) == in->ndim ? strchr(in->layout, 'C') : NULL;
  return c ? (int)(c - in->layout) : in->ndim - 1;
}

static stk_status slice_plan(stk__node *node, stk__sample *s, const stk__tensor *in, stk_tn_copy *p,
                             int *ndim, int64_t *shape, char *layout) {
  int64_t b[STK_MAX_NDIM], e[STK_MAX_NDIM];
  STK_TRY(slice_window(node, s, in, b, e));
  stk__oob_policy pol;
  stk__oob_parse(stk__arg_string(node, S_OOB), &pol);
  for (int d = 0; d < in->ndim; d++) {
    bool out = b[d] < 0 || e[d] > in->shape[d];
    if (out && pol == STK__OOB_ERROR)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the window [%lld, %lld) leaves axis %d (extent %lld); "
                        "out_of_bounds_policy=\"pad\" or \"trim_to_shape\" allow it",
                        (long long)b[d], (long long)e[d], d, (long long)in->shape[d]);
    if (pol == STK__OOB_TRIM) {
      b[d] = b[d] < 0 ? 0 : b[d] > in->shape[d] ? in->shape[d] : b[d];
      e[d] = e[d] > in->shape[d] ? in->shape[d] : e[d] < b[d] ? b[d] : e[d];
    }
    shape[d] = e[d] - b[d];
  }
  int64_t stride[STK_MAX_NDIM];
  stk__tn_dense_strides(in->ndim, in->shape, stride);
  stk__tn_copy_init(p, NULL, in->data, in->ndim, shape);
  int64_t off = 0;
  for (int d = 0; d < in->ndim; d++) {
    p->src_stride[d] = stride[d];
    p->lo[d] = b[d] < 0 ? -b[d] : 0; /* window start in the output */
    p->hi[d] = (e[d] > in->shape[d] ? in->shape[d] : e[d]) - b[d];
    if (p->hi[d] < p->lo[d]) p->hi[d] = p->lo[d];
    off += (b[d] < 0 ? 0 : b[d]) * stride[d];
  }
  p->src = (const char *)in->data + off * (int64_t)stk_dtype_size(in->dtype);
  const double *fv;
  size_t nf = stk__arg_floats(node, s, S_FILL, &fv);
  int ch = channel_axis(in);
  if (nf > 1 && (ch < 0 || (int64_t)nf != in->shape[ch] || nf > STK_TN_MAX_FILL))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "fill_values has %zu values: give one, or one per channel (%lld here, "
                      "at most %d)",
                      nf, ch < 0 ? 0LL : (long long)in->shape[ch], STK_TN_MAX_FILL);
  set_fill(p, in->dtype, fv, nf, ch);
  *ndim = in->ndim;
  memcpy(layout, in->layout, STK_MAX_LAYOUT + 1);
  return STK_OK;
}

static stk_dtype slice_out_dtype(stk__node *node, stk_dtype in) {
  return stk__arg_given(node, S_DTYPE) ? stk__dtype_arg(stk__arg_string(node, S_DTYPE)) : in;
}

static stk_status slice_run(stk__node *node, stk__sample *s) {
  stk__tensor ins[STK_TN_MAX_INPUTS];
  stk__tn_cpu_inputs(node, s, ins);
  const stk__tensor *in = &ins[0];
  stk_tn_copy p;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
  STK_TRY(slice_plan(node, s, in, &p, &ndim, shape, layout));
  return emit_copy(s, &p, in->dtype, slice_out_dtype(node, in->dtype), layout);
}

static stk_status slice_gpu(stk__node *node, stk__gpu_batch *b) {
  stk_dtype dt = stk_tensor_list_dtype(stk__gpu_input(b, 0));
  return stk__tn_gpu_copy_op(node, b, slice_plan, slice_out_dtype(node, dt));
}

static stk_status slice_init(stk__node *node) {
  if (stk__arg_given(node, S_AXES) && stk__arg_given(node, S_AXIS_NAMES))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "axes and axis_names are mutually exclusive (as in DALI)");
  if (stk__node_num_inputs(node) == 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give both the anchor and the shape inputs, or neither");
  if (stk__node_num_inputs(node) == 3 &&
      (stk__arg_given(node, S_START) || stk__arg_given(node, S_REL_START) ||
       stk__arg_given(node, S_SHAPE) || stk__arg_given(node, S_REL_SHAPE) ||
       stk__arg_given(node, S_END) || stk__arg_given(node, S_REL_END)))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "the anchor and shape inputs exclude the start/end/shape arguments");
  if (stk__arg_given(node, S_START) && stk__arg_given(node, S_REL_START))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "give start or rel_start, not both");
  int k = stk__arg_given(node, S_SHAPE) + stk__arg_given(node, S_REL_SHAPE) +
          stk__arg_given(node, S_END) + stk__arg_given(node, S_REL_END);
  if (k > 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give one of shape, rel_shape, end and rel_end");
  return STK_OK;
}

static const stk_op_schema slice_schema = {
    .name = "slice",
    .doc =
        "Cuts a window out of each sample (DALI's slice): the anchor and shape come from "
        "two inputs (float: fractions of the extents, unless normalized_* is false; "
        "integer: absolute) or from start/end/shape and their rel_ forms, for the axes "
        "given by axes or axis_names; positions round half away from zero. Windows "
        "leaving the input fail, are padded with fill_values or are trimmed.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 3,
    .inputs = slice_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = S_COUNT_,
    .args = slice_args,
    .gpu_check =
        "return slice(IN, rel_start=[0.25, -0.1], rel_shape=[0.5, 1.3], "
        "out_of_bounds_policy=\"pad\", fill_values=[1, 2, 3], device=@)",
};
const stk__op_def stk__op_slice = {
    .schema = &slice_schema,
    .init = slice_init,
    .run_sample = slice_run,
    .run_gpu = slice_gpu,
};

/* ---- pad ---- */

enum { P_AXES, P_AXIS_NAMES, P_ALIGN, P_SHAPE, P_FILL, P_COUNT_ };
static const stk_arg_schema pad_args[] = {
    [P_AXES] = {.name = "axes",
                .type = STK_ARG_INTS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = "the axes to pad (default: all)"},
    [P_AXIS_NAMES] = {.name = "axis_names",
                      .type = STK_ARG_STRING,
                      .doc = "the axes to pad, as layout letters"},
    [P_ALIGN] = {.name = "align",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "round the padded extents up to a multiple of this (one value, or one "
                        "per padded axis)"},
    [P_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "the extent per padded axis (a sample larger keeps its own; 1: "
                        "alignment only); -1 or absent: the largest in the batch (GPU only: "
                        "the CPU backend runs per sample and needs an extent)"},
    [P_FILL] = {.name = "fill_value",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "0.0",
                .doc = "the value of the padding (converted as a C cast, as DALI: -1 into "
                       "uint8 is 255)"},
};
STK__CHECK_ARGS(pad_args, P_COUNT_);

static const stk_port_schema pad_in[] = {{"input", "a tensor"}};

/* The target extents of one sample; batch_max (NULL on the CPU) holds the batch's largest
 * extents. */
static stk_status pad_target(stk__node *node, stk__sample *s, const stk__tensor *in,
                             const int64_t *batch_max, int64_t *shape) {
  unsigned mask;
  STK_TRY(stk__tn_axes(node, s, in, P_AXES, P_AXIS_NAMES, true, &mask));
  const int64_t *sv = NULL, *av = NULL;
  size_t ns = stk__arg_given(node, P_SHAPE) ? stk__arg_ints(node, s, P_SHAPE, &sv) : 0;
  size_t nal = stk__arg_given(node, P_ALIGN) ? stk__arg_ints(node, s, P_ALIGN, &av) : 0;
  int k = 0, npad = __builtin_popcount(mask);
  if ((ns && (int)ns != npad) || (nal > 1 && (int)nal != npad))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "shape (%zu values) and align (%zu) need one value per padded axis (%d)", ns,
                      nal, npad);
  for (int d = 0; d < in->ndim; d++) {
    shape[d] = in->shape[d];
    if (!(mask & (1u << d))) continue;
    /* DALI: -1 or no shape pads to the batch's largest extent; a smaller shape than the
     * sample's leaves the sample's (only alignment pads it; shape=1 asks for just that) */
    int64_t want = ns && sv[k] >= 0 ? sv[k] : -1, al = nal ? av[nal > 1 ? k : 0] : 1;
    if (want < 0 && batch_max) want = batch_max[d];
    if (want < 0)
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                        "axis %d pads to the batch's largest extent, which the CPU backend "
                        "cannot see; give its extent in shape (1: alignment only), or run pad "
                        "on the GPU",
                        d);
    if (want < in->shape[d]) want = in->shape[d];
    if (al < 1)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "align = %lld must be >= 1",
                        (long long)al);
    shape[d] = (want + al - 1) / al * al;
    k++;
  }
  return STK_OK;
}

static void pad_plan(const stk__tensor *in, const int64_t *shape, double fill, stk_tn_copy *p) {
  stk__tn_copy_init(p, NULL, in->data, in->ndim, shape);
  stk__tn_dense_strides(in->ndim, in->shape, p->src_stride);
  memcpy(p->hi, in->shape, sizeof(int64_t) * (size_t)in->ndim);
  set_fill(p, in->dtype, &fill, 1, -1);
}

static stk_status pad_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int64_t shape[STK_MAX_NDIM];
  STK_TRY(pad_target(node, s, in, NULL, shape));
  stk_tn_copy p;
  pad_plan(in, shape, stk__arg_float(node, s, P_FILL), &p);
  return emit_copy(s, &p, in->dtype, in->dtype, in->layout);
}

/* GPU: the batch's largest extents first, then one copy per sample. */
static stk_status pad_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int nd = stk_tensor_list_ndim(in);
  int64_t mx[STK_MAX_NDIM] = {0};
  for (size_t i = 0; i < n; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    for (int d = 0; d < nd; d++) mx[d] = t.shape[d] > mx[d] ? t.shape[d] : mx[d];
  }
  stk_tn_copy *plans = stk__calloc(n ? n : 1, sizeof *plans, "pad plans");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(nd ? nd : 1), sizeof(int64_t), "shapes");
  stk_status st = plans && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    stk__sample *s = stk__gpu_sample(b, i);
    st = pad_target(node, s, &t, mx, shapes + i * (size_t)nd);
    if (st == STK_OK)
      pad_plan(&t, shapes + i * (size_t)nd, stk__arg_float(node, s, P_FILL), &plans[i]);
  }
  if (st == STK_OK && n)
    st = stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), nd, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, nd), &out);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    plans[i].dst = d.data;
  }
  if (st == STK_OK && n)
    st = stk__tn_gpu_copy(node, b, plans, n, (int)stk_dtype_size(stk_tensor_list_dtype(in)));
  free(plans);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema pad_schema = {
    .name = "pad",
    .doc =
        "Pads the end of the chosen axes with fill_value (DALI's pad): to `shape`, else to "
        "the batch's largest extent (GPU backend), then up to a multiple of align. The CPU "
        "backend runs per sample, so there it needs shape or align for every padded axis.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = pad_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = P_COUNT_,
    .args = pad_args,
    .gpu_check =
        "return pad(IN, axis_names=\"HW\", shape=[1500, 1450], align=[8, 16], "
        "fill_value=7, device=@)",
};
const stk__op_def stk__op_pad = {
    .schema = &pad_schema,
    .run_sample = pad_run,
    .run_gpu = pad_gpu,
};

/* ---- cat / stack ---- */

enum { C_AXIS, C_AXIS_NAME, C_COUNT_ };
static const stk_arg_schema cat_args[] = {
    [C_AXIS] = {.name = "axis",
                .type = STK_ARG_INT,
                .default_text = "0",
                .doc = "cat: the axis to join along; stack: where the new axis goes (negative: "
                       "from the end)"},
    [C_AXIS_NAME] = {.name = "axis_name",
                     .type = STK_ARG_STRING,
                     .doc = "cat: the axis as a layout letter (instead of axis); stack: the "
                            "new axis's letter in the output layout"},
};
STK__CHECK_ARGS(cat_args, C_COUNT_);

/* One entry per possible input (the schema contract). */
#define JOIN_MAX_INPUTS 32
#define JOIN_IN(k) \
  { "input" #k, "a tensor (all inputs: one type and rank)" }
static const stk_port_schema cat_in[JOIN_MAX_INPUTS] = {
    JOIN_IN(0),  JOIN_IN(1),  JOIN_IN(2),  JOIN_IN(3),  JOIN_IN(4),  JOIN_IN(5),  JOIN_IN(6),
    JOIN_IN(7),  JOIN_IN(8),  JOIN_IN(9),  JOIN_IN(10), JOIN_IN(11), JOIN_IN(12), JOIN_IN(13),
    JOIN_IN(14), JOIN_IN(15), JOIN_IN(16), JOIN_IN(17), JOIN_IN(18), JOIN_IN(19), JOIN_IN(20),
    JOIN_IN(21), JOIN_IN(22), JOIN_IN(23), JOIN_IN(24), JOIN_IN(25), JOIN_IN(26), JOIN_IN(27),
    JOIN_IN(28), JOIN_IN(29), JOIN_IN(30), JOIN_IN(31)};
#undef JOIN_IN

/* The joined output and the copy of each input (dst offsets relative to the output). */
typedef struct {
  int ndim, ninputs;
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
  stk_tn_copy parts[JOIN_MAX_INPUTS];
} join_plan;

static stk_status join_axis(stk__node *node, stk__sample *s, const stk__tensor *in, bool stack,
                            int *axis) {
  int nd = in->ndim + stack;
  if (!stack && stk__arg_given(node, C_AXIS_NAME)) {
    const char *name = stk__arg_string(node, C_AXIS_NAME);
    const char *at =
        (int)strlen(in->layout) == in->ndim && *name ? strchr(in->layout, *name) : NULL;
    if (!at)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "axis_name = \"%s\" is not in the layout \"%s\"", name, in->layout);
    *axis = (int)(at - in->layout);
    return STK_OK;
  }
  int64_t a = stk__arg_int(node, s, C_AXIS);
  if (a < 0) a += nd;
  if (a < 0 || a >= nd)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "axis = %lld is out of range for %d dimensions",
                      (long long)stk__arg_int(node, s, C_AXIS), nd);
  *axis = (int)a;
  return STK_OK;
}

static void join_layout(stk__node *node, const stk__tensor *in, bool stack, int axis,
                        char *layout) {
  memcpy(layout, in->layout, STK_MAX_LAYOUT + 1);
  if (!stack) return;
  const char *name = stk__arg_given(node, C_AXIS_NAME) ? stk__arg_string(node, C_AXIS_NAME) : "";
  layout[0] = '\0';
  if (!*name || (in->ndim && (int)strlen(in->layout) != in->ndim)) return;
  memcpy(layout, in->layout, (size_t)axis);
  layout[axis] = name[0];
  memcpy(layout + axis + 1, in->layout + axis, (size_t)(in->ndim - axis) + 1);
}

/* Checks the inputs agree and plans the copies (dst offsets as element counts in dst). */
static stk_status join_plan_sample(stk__node *node, stk__sample *s, const stk__tensor *const *ins,
                                   int nin, bool stack, join_plan *jp) {
  const stk__tensor *a = ins[0];
  int axis = 0;
  if (a->ndim + stack > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "too many dimensions");
  STK_TRY(join_axis(node, s, a, stack, &axis));
  int64_t total = 0;
  for (int k = 0; k < nin; k++) {
    const stk__tensor *t = ins[k];
    bool same = t->ndim == a->ndim && t->dtype == a->dtype;
    for (int d = 0; same && d < a->ndim; d++)
      same = t->shape[d] == a->shape[d] || (!stack && d == axis);
    if (!same)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "input %d has type %s and %d dimensions with extents that differ from "
                        "input 0's (%s, %d)%s",
                        k, stk_dtype_name(t->dtype), t->ndim, stk_dtype_name(a->dtype), a->ndim,
                        stack ? "" : " off the joined axis");
    total += stack ? 1 : t->shape[axis];
  }
  jp->ndim = a->ndim + stack, jp->ninputs = nin;
  for (int d = 0, src = 0; d < jp->ndim; d++) {
    jp->shape[d] = d == axis ? total : a->shape[src];
    if (d != axis || !stack) src++;
  }
  int64_t out_stride[STK_MAX_NDIM], off = 0;
  stk__tn_dense_strides(jp->ndim, jp->shape, out_stride);
  for (int k = 0; k < nin; k++) {
    const stk__tensor *t = ins[k];
    int64_t part[STK_MAX_NDIM];
    memcpy(part, jp->shape, sizeof part);
    part[axis] = stack ? 1 : t->shape[axis];
    stk_tn_copy *p = &jp->parts[k];
    stk__tn_copy_init(p, NULL, t->data, jp->ndim, part);
    memcpy(p->dst_stride, out_stride, sizeof out_stride);
    p->dst = (void *)(intptr_t)(off * out_stride[axis]); /* an offset until allocation */
    off += part[axis];
  }
  join_layout(node, a, stack, axis, jp->layout);
  return STK_OK;
}

static stk_status join_run(stk__node *node, stk__sample *s, bool stack) {
  int nin = stk__node_num_inputs(node);
  const stk__tensor *ins[JOIN_MAX_INPUTS];
  for (int k = 0; k < nin; k++) ins[k] = stk__input(s, k);
  join_plan *jp = stk__scratch(s, sizeof *jp);
  if (!jp) return STK_ERR_OUT_OF_MEMORY;
  STK_TRY(join_plan_sample(node, s, ins, nin, stack, jp));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, ins[0]->dtype, jp->ndim, jp->shape, jp->layout, &out));
  size_t es = stk_dtype_size(ins[0]->dtype);
  for (int k = 0; k < nin; k++) {
    jp->parts[k].dst = (char *)out->data + (intptr_t)jp->parts[k].dst * (intptr_t)es;
    stk__tn_copy_run(&jp->parts[k], (int)es);
  }
  return STK_OK;
}

/* GPU: every input of every sample is one copy plan, all in one launch. */
static stk_status join_gpu(stk__node *node, stk__gpu_batch *b, bool stack) {
  size_t n = stk__gpu_batch_size(b);
  int nin = stk__node_num_inputs(node);
  stk_tensor_list *ins[JOIN_MAX_INPUTS] = {0}, *out = NULL;
  bool owned[JOIN_MAX_INPUTS] = {0};
  stk_status st = STK_OK;
  for (int k = 0; k < nin && st == STK_OK; k++)
    st = stk__gpu_device_input(b, k, &ins[k], &owned[k]);
  join_plan *jp = stk__calloc(n ? n : 1, sizeof *jp, "join plans");
  stk_tn_copy *plans = stk__calloc((n ? n : 1) * (size_t)nin, sizeof *plans, "copy plans");
  int64_t *shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  if (st == STK_OK && (!jp || !plans || !shapes)) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor ts[JOIN_MAX_INPUTS];
    const stk__tensor *tp[JOIN_MAX_INPUTS];
    for (int k = 0; k < nin; k++) stk__tn_from_list(ins[k], i, &ts[k]), tp[k] = &ts[k];
    st = join_plan_sample(node, stk__gpu_sample(b, i), tp, nin, stack, &jp[i]);
    if (st == STK_OK)
      memcpy(shapes + i * (size_t)jp[0].ndim, jp[i].shape, sizeof(int64_t) * (size_t)jp[i].ndim);
  }
  stk_dtype dt = st == STK_OK ? stk_tensor_list_dtype(ins[0]) : STK_DTYPE_UINT8;
  if (st == STK_OK && n)
    st = stk__gpu_alloc_list(b, dt, jp[0].ndim, shapes, jp[0].layout,
                             stk__gpu_shapes_equal(shapes, n, jp[0].ndim), &out);
  size_t es = stk_dtype_size(dt);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    for (int k = 0; k < nin; k++) {
      plans[i * (size_t)nin + (size_t)k] = jp[i].parts[k];
      plans[i * (size_t)nin + (size_t)k].dst =
          (char *)d.data + (intptr_t)jp[i].parts[k].dst * (intptr_t)es;
    }
  }
  if (st == STK_OK && n) st = stk__tn_gpu_copy(node, b, plans, n * (size_t)nin, (int)es);
  free(jp);
  free(plans);
  free(shapes);
  for (int k = 1; k < nin; k++)
    if (owned[k]) stk_tensor_list_release(ins[k]);
  return stk__gpu_finish(b, ins[0], owned[0], out, st);
}

static stk_status cat_run(stk__node *n, stk__sample *s) { return join_run(n, s, false); }
static stk_status stack_run(stk__node *n, stk__sample *s) { return join_run(n, s, true); }
static stk_status cat_gpu(stk__node *n, stk__gpu_batch *b) { return join_gpu(n, b, false); }
static stk_status stack_gpu(stk__node *n, stk__gpu_batch *b) { return join_gpu(n, b, true); }

static const stk_op_schema cat_schema = {
    .name = "cat",
    .doc =
        "Joins its inputs along an existing axis (DALI's cat); the other extents, the type "
        "and the rank must agree. The layout is the first input's.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = JOIN_MAX_INPUTS,
    .inputs = cat_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = C_COUNT_,
    .args = cat_args,
    .gpu_check = "return cat(IN, IN, axis_name=\"W\", device=@)",
};
const stk__op_def stk__op_cat = {
    .schema = &cat_schema,
    .run_sample = cat_run,
    .run_gpu = cat_gpu,
};

static const stk_op_schema stack_schema = {
    .name = "stack",
    .doc =
        "Stacks its inputs (same shape and type) along a new axis at `axis` (DALI's stack); "
        "axis_name names it in the layout (else the layout is dropped).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = JOIN_MAX_INPUTS,
    .inputs = cat_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = C_COUNT_,
    .args = cat_args,
    .gpu_check = "return stack(IN, IN, IN, axis=1, axis_name=\"Z\", device=@)",
};
const stk__op_def stk__op_stack = {
    .schema = &stack_schema,
    .run_sample = stack_run,
    .run_gpu = stack_gpu,
};

/* ---- element_extract / sequence_rearrange ---- */

enum { X_ELEMENT_MAP, X_COUNT_ };
static const stk_arg_schema extract_args[] = {
    [X_ELEMENT_MAP] = {.name = "element_map",
                       .type = STK_ARG_INTS,
                       .flags = STK_ARGF_REQUIRED,
                       .doc = "the frames to extract, one output each"},
};
STK__CHECK_ARGS(extract_args, X_COUNT_);

static const stk_port_schema seq_in[] = {{"input", "a sequence: layout starting with F (or none)"}};
static const stk_port_schema extract_out[] = {{"outputs", "one frame per element_map entry"}};

static stk_status check_sequence(stk__node *node, const stk__sample *s, const stk__tensor *in) {
  if (in->ndim < 1 || (*in->layout && in->layout[0] != 'F'))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs a sequence (outermost axis F); got %d dimensions, layout \"%s\"",
                      in->ndim, in->layout);
  return STK_OK;
}

/* Frame `f` of `in` copied into dst at frame `k`. */
static void frame_plan(const stk__tensor *in, int64_t f, stk_tn_copy *p) {
  int64_t fsize = stk__tn_volume(in->ndim - 1, in->shape + 1);
  stk__tn_copy_init(p, NULL,
                    (const char *)in->data + f * fsize * (int64_t)stk_dtype_size(in->dtype),
                    in->ndim - 1, in->shape + 1);
}

static int extract_outputs(const stk__node *node) {
  const int64_t *m;
  return (int)stk__arg_ints(node, NULL, X_ELEMENT_MAP, &m);
}

static stk_status extract_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  STK_TRY(check_sequence(node, s, in));
  const int64_t *m;
  size_t n = stk__arg_ints(node, s, X_ELEMENT_MAP, &m);
  char layout[STK_MAX_LAYOUT + 1] = "";
  if (*in->layout) memcpy(layout, in->layout + 1, STK_MAX_LAYOUT);
  for (size_t k = 0; k < n; k++) {
    if (m[k] < 0 || m[k] >= in->shape[0])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "element_map[%zu] = %lld is outside the %lld frames", k, (long long)m[k],
                        (long long)in->shape[0]);
    stk_tn_copy p;
    frame_plan(in, m[k], &p);
    stk__tensor *out;
    STK_TRY(stk__output(s, (int)k, in->dtype, in->ndim - 1, in->shape + 1, layout, &out));
    p.dst = out->data;
    stk__tn_copy_run(&p, (int)stk_dtype_size(in->dtype));
  }
  return STK_OK;
}

/* GPU: output k of every sample is one copy plan; one launch for all outputs. */
static stk_status extract_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  const int64_t *m;
  size_t nk = stk__arg_ints(node, NULL, X_ELEMENT_MAP, &m);
  stk_tensor_list *in, *outs[64] = {0};
  bool owned;
  if (nk > 64) return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "at most 64 outputs on the GPU");
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int nd = stk_tensor_list_ndim(in);
  stk_dtype dt = stk_tensor_list_dtype(in);
  stk_tn_copy *plans = stk__calloc((n ? n : 1) * (nk ? nk : 1), sizeof *plans, "plans");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(nd ? nd : 1), sizeof(int64_t), "shapes");
  stk_status st = plans && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  char layout[STK_MAX_LAYOUT + 1] = "";
  if (*stk_tensor_list_layout(in)) memcpy(layout, stk_tensor_list_layout(in) + 1, STK_MAX_LAYOUT);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    stk__sample *s = stk__gpu_sample(b, i);
    st = check_sequence(node, s, &t);
    for (size_t k = 0; k < nk && st == STK_OK; k++) {
      if (m[k] < 0 || m[k] >= t.shape[0])
        st = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "element_map[%zu] = %lld is outside the %lld frames", k, (long long)m[k],
                        (long long)t.shape[0]);
      else
        frame_plan(&t, m[k], &plans[k * n + i]);
    }
    if (nd > 1)
      memcpy(shapes + i * (size_t)(nd - 1), t.shape + 1, sizeof(int64_t) * (size_t)(nd - 1));
  }
  for (size_t k = 0; k < nk && st == STK_OK && n; k++) {
    st = stk__gpu_alloc_list(b, dt, nd - 1, shapes, layout,
                             stk__gpu_shapes_equal(shapes, n, nd - 1), &outs[k]);
    for (size_t i = 0; i < n && st == STK_OK; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(outs[k], i, &d);
      plans[k * n + i].dst = d.data;
    }
  }
  if (st == STK_OK && n && nk)
    st = stk__tn_gpu_copy(node, b, plans, n * nk, (int)stk_dtype_size(dt));
  for (size_t k = 0; k < nk; k++) {
    if (st == STK_OK)
      st = stk__gpu_output(b, (int)k, outs[k]);
    else
      stk_tensor_list_release(outs[k]);
  }
  free(plans);
  free(shapes);
  if (owned) stk_tensor_list_release(in);
  return st;
}

static const stk_op_schema extract_schema = {
    .name = "element_extract",
    .doc =
        "Extracts frames of sequences (DALI's element_extract): output k is frame "
        "element_map[k], with the F axis dropped from the layout.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = seq_in,
    .num_outputs = -1,
    .outputs = extract_out,
    .num_args = X_COUNT_,
    .args = extract_args,
    .gpu_check =
        "x = per_frame(IN, replace=true, device=@)\n"
        "a, b = element_extract(x, element_map=[2, 0], device=@)\n"
        "return a, b",
};
const stk__op_def stk__op_element_extract = {
    .schema = &extract_schema,
    .run_sample = extract_run,
    .run_gpu = extract_run_gpu,
    .num_outputs = extract_outputs,
};

enum { SR_NEW_ORDER, SR_COUNT_ };
static const stk_arg_schema rearrange_args[] = {
    [SR_NEW_ORDER] = {.name = "new_order",
                      .type = STK_ARG_INTS,
                      .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                      .doc = "output frame k is input frame new_order[k] (repeats and drops "
                             "allowed; not empty)"},
};
STK__CHECK_ARGS(rearrange_args, SR_COUNT_);

/* The rearranged sequence as one copy: the frame axis reads through a gather of rows,
 * so each output frame is its own plan. */
static stk_status rearrange_plans(stk__node *node, stk__sample *s, const stk__tensor *in,
                                  stk_tn_copy *plans, size_t *count) {
  STK_TRY(check_sequence(node, s, in));
  const int64_t *o;
  size_t n = stk__arg_ints(node, s, SR_NEW_ORDER, &o);
  if (n == 0) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "new_order is empty");
  for (size_t k = 0; k < n; k++) {
    if (o[k] < 0 || o[k] >= in->shape[0])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "new_order[%zu] = %lld is outside the %lld frames", k, (long long)o[k],
                        (long long)in->shape[0]);
    if (plans) frame_plan(in, o[k], &plans[k]);
  }
  *count = n;
  return STK_OK;
}

static stk_status rearrange_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  size_t n;
  STK_TRY(rearrange_plans(node, s, in, NULL, &n));
  stk_tn_copy *plans = stk__scratch(s, n * sizeof *plans);
  if (!plans) return STK_ERR_OUT_OF_MEMORY;
  STK_TRY(rearrange_plans(node, s, in, plans, &n));
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, in->shape, sizeof shape);
  shape[0] = (int64_t)n;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, in->ndim, shape, in->layout, &out));
  size_t es = stk_dtype_size(in->dtype),
         fb = (size_t)stk__tn_volume(in->ndim - 1, in->shape + 1) * es;
  for (size_t k = 0; k < n; k++) {
    plans[k].dst = (char *)out->data + k * fb;
    stk__tn_copy_run(&plans[k], (int)es);
  }
  return STK_OK;
}

/* GPU: one plan per output frame of every sample. */
static stk_status rearrange_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b), total = 0;
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int nd = stk_tensor_list_ndim(in);
  size_t *counts = stk__calloc(n ? n : 1, sizeof *counts, "frame counts");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(nd ? nd : 1), sizeof(int64_t), "shapes");
  stk_status st = counts && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    st = rearrange_plans(node, stk__gpu_sample(b, i), &t, NULL, &counts[i]);
    memcpy(shapes + i * (size_t)nd, t.shape, sizeof(int64_t) * (size_t)nd);
    shapes[i * (size_t)nd] = (int64_t)counts[i];
    total += counts[i];
  }
  stk_tn_copy *plans = st == STK_OK ? stk__calloc(total ? total : 1, sizeof *plans, "plans") : NULL;
  if (st == STK_OK && !plans) st = STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK && n)
    st = stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), nd, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, nd), &out);
  size_t es = stk_dtype_size(stk_tensor_list_dtype(in)), at = 0;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    st = rearrange_plans(node, stk__gpu_sample(b, i), &t, plans + at, &counts[i]);
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    size_t fb = (size_t)stk__tn_volume(nd - 1, t.shape + 1) * es;
    for (size_t k = 0; k < counts[i]; k++) plans[at + k].dst = (char *)d.data + k * fb;
    at += counts[i];
  }
  if (st == STK_OK && total) st = stk__tn_gpu_copy(node, b, plans, total, (int)es);
  free(counts);
  free(shapes);
  free(plans);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema rearrange_schema = {
    .name = "sequence_rearrange",
    .doc =
        "Reorders the frames of each sequence (DALI's sequence_rearrange): output frame k "
        "is input frame new_order[k]; new_order may be fed per sample.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = seq_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = SR_COUNT_,
    .args = rearrange_args,
    .gpu_check =
        "x = per_frame(IN, replace=true, device=@)\n"
        "return sequence_rearrange(x, new_order=[2, 0, 0, 1], device=@)",
};
const stk__op_def stk__op_sequence_rearrange = {
    .schema = &rearrange_schema,
    .run_sample = rearrange_run,
    .run_gpu = rearrange_gpu,
};
