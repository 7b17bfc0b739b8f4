/* reductions.{min,max,sum,mean,mean_square,rms,std_dev,variance} and normalize. Each output
 * element is stk_tn_reduce_elem (tensor_common.h) over a strided box of the input, on the
 * CPU and on the GPU alike; normalize adds the affine pass stk_tn_affine_elem. */
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

#define RD_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool"

/* The box walk of one sample: the kept axes give the output, the reduced ones the box. */
typedef struct {
  stk_tn_reduce r;
  int ndim; /* output rank (keep_dims: the input's) */
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
} reduce_plan;

/* Adjacent axes of one kind (both kept or both reduced) merge into one, so a box of
 * trailing axes is one contiguous run (one division per element instead of several). */
static void push_axis(int64_t *shape, int64_t *stride, int *n, int64_t ext, int64_t st,
                      bool merge) {
  if (merge && *n > 0) {
    shape[*n - 1] *= ext;
    stride[*n - 1] = st;
    return;
  }
  shape[*n] = ext, stride[*n] = st, (*n)++;
}

static void plan_boxes(const stk__tensor *in, unsigned mask, bool keep, reduce_plan *p) {
  int64_t stride[STK_MAX_NDIM];
  stk__tn_dense_strides(in->ndim, in->shape, stride);
  memset(&p->r, 0, sizeof p->r);
  p->r.src = in->data;
  p->r.out_count = 1, p->r.red_count = 1, p->ndim = 0;
  for (int d = 0; d < in->ndim; d++) {
    bool red = mask & (1u << d), prev = d > 0 && (bool)(mask & (1u << (d - 1))) == red;
    if (red) {
      push_axis(p->r.red_shape, p->r.red_stride, &p->r.red_ndim, in->shape[d], stride[d], prev);
      p->r.red_count *= in->shape[d];
    } else {
      push_axis(p->r.out_shape, p->r.out_stride, &p->r.out_ndim, in->shape[d], stride[d], prev);
      p->r.out_count *= in->shape[d];
    }
    if (!red || keep) p->shape[p->ndim++] = red ? 1 : in->shape[d];
  }
  if (keep)
    memcpy(p->layout, in->layout, sizeof p->layout);
  else
    stk__tn_layout_drop(in, mask, p->layout);
}

/* ---- reductions ---- */

enum { RA_AXES, RA_AXIS_NAMES, RA_KEEP_DIMS, RA_DTYPE, RA_COUNT_ };
/* std_dev and variance have ddof where the others have dtype. */
enum { RA_DDOF = RA_DTYPE };
static const stk_arg_schema reduce_args[] = {
    [RA_AXES] = {.name = "axes",
                 .type = STK_ARG_INTS,
                 .doc = "the axes to reduce (default: "
                        "all; [] reduces none)"},
    [RA_AXIS_NAMES] = {.name = "axis_names",
                       .type = STK_ARG_STRING,
                       .doc = "the axes to reduce, as layout letters"},
    [RA_KEEP_DIMS] = {.name = "keep_dims",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = "keep the reduced axes with extent 1"},
    [RA_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .choices = RD_DTYPES,
                  .doc = "sum, mean, mean_square and rms: the output type (default sum: "
                         "int64 / uint64 / float32 / float64 after the input's kind; the others: "
                         "float32, float64 for float64 input); integer means truncate toward "
                         "zero, as DALI"},
};
STK__CHECK_ARGS(reduce_args, RA_COUNT_);
/* min/max/mean_square/rms show the first three arguments, sum and mean add dtype;
 * std_dev and variance have this table. */
#define AXES_DOC "the axes to reduce (default: all; [] reduces none)"
static const stk_arg_schema reduce_args_dev[] = {
    [RA_AXES] = {.name = "axes", .type = STK_ARG_INTS, .doc = AXES_DOC},
    [RA_AXIS_NAMES] = {.name = "axis_names",
                       .type = STK_ARG_STRING,
                       .doc = "the axes to reduce, as layout letters"},
    [RA_KEEP_DIMS] = {.name = "keep_dims",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = "keep the reduced axes with extent 1"},
    [RA_DDOF] = {.name = "ddof",
                 .type = STK_ARG_INT,
                 .default_text = "0",
                 .doc = "delta degrees of freedom (divisor n - ddof)"},
};
STK__CHECK_ARGS(reduce_args_dev, RA_COUNT_);

static const stk_port_schema red_in[] = {{"input", "a tensor"}};
static const stk_port_schema dev_in[] = {
    {"input", "a tensor"},
    {"mean",
     "the mean per output element (the reduction's output shape, kept dims or not) "
     "or one value"}};
static const stk_port_schema red_out[] = {{"output", "the reduced tensor"}};

static int op_of(const stk__node *node) {
  const char *n = stk__node_def(node)->schema->name + strlen("reductions.");
  static const char *const names[] = {"min",         "max", "sum",     "mean",
                                      "mean_square", "rms", "std_dev", "variance"};
  for (int k = 0; k < 8; k++)
    if (strcmp(n, names[k]) == 0) return k;
  return STK_TN_MIN;
}

static stk_dtype default_dtype(int op, stk_dtype in) {
  if (op == STK_TN_MIN || op == STK_TN_MAX) return in;
  if (op != STK_TN_SUM) return in == STK_DTYPE_FLOAT64 ? STK_DTYPE_FLOAT64 : STK_DTYPE_FLOAT32;
  if (in == STK_DTYPE_FLOAT64) return STK_DTYPE_FLOAT64;
  if (stk_ar_is_float(in)) return STK_DTYPE_FLOAT32;
  return stk_ar_is_signed(in) ? STK_DTYPE_INT64 : STK_DTYPE_UINT64;
}

/* The plan and arguments of one sample (mean: the second input, std_dev/variance). */
static stk_status reduce_sample(stk__node *node, stk__sample *s, const stk__tensor *in,
                                const stk__tensor *mean, reduce_plan *p, stk_tn_reduce_args *a) {
  int op = op_of(node);
  bool dev = op == STK_TN_STD_DEV || op == STK_TN_VARIANCE;
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  unsigned mask;
  STK_TRY(stk__tn_axes(node, s, in, RA_AXES, RA_AXIS_NAMES, true, &mask));
  plan_boxes(in, mask, stk__arg_bool(node, s, RA_KEEP_DIMS), p);
  memset(a, 0, sizeof *a);
  a->op = op, a->in_dtype = in->dtype;
  a->out_dtype = !dev && op != STK_TN_MIN && op != STK_TN_MAX && stk__arg_given(node, RA_DTYPE)
                     ? stk__dtype_arg(stk__arg_string(node, RA_DTYPE))
                     : default_dtype(op, in->dtype);
  if (!dev) return STK_OK;
  a->ddof = (double)stk__arg_int(node, s, RA_DDOF);
  int64_t nm = stk__tn_volume(mean->ndim, mean->shape);
  if (nm != 1 && nm != p->r.out_count)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the mean input has %lld values; the output has %lld", (long long)nm,
                      (long long)p->r.out_count);
  /* the mean stays where it is (device memory on the GPU): one value is read by index 0 */
  a->mean_dtype = mean->dtype;
  p->r.mean = mean->data;
  p->r.mean_one = nm == 1;
  return STK_OK;
}

static stk_status reduce_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  const stk__tensor *mean = stk__node_num_inputs(node) > 1 ? stk__input(s, 1) : NULL;
  reduce_plan p;
  stk_tn_reduce_args a;
  STK_TRY(reduce_sample(node, s, in, mean, &p, &a));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, a.out_dtype, p.ndim, p.shape, p.layout, &out));
  p.r.dst = out->data;
  for (int64_t o = 0; o < p.r.out_count; o++) stk_tn_reduce_elem(&p.r, &a, o);
  return STK_OK;
}

/* GPU: one reduce launch; the arguments (op, types) must agree across the batch. */
static stk_status reduce_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  int nin = stk__node_num_inputs(node);
  stk_tensor_list *in, *mean = NULL, *out = NULL;
  bool owned, mowned = false;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_status st = nin > 1 ? stk__gpu_device_input(b, 1, &mean, &mowned) : STK_OK;
  reduce_plan *plans = stk__calloc(n ? n : 1, sizeof *plans, "reduce plans");
  stk_tn_reduce *rs = stk__calloc(n ? n : 1, sizeof *rs, "reduce plans");
  int64_t *shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  if (st == STK_OK && (!plans || !rs || !shapes)) st = STK_ERR_OUT_OF_MEMORY;
  stk_tn_reduce_args a = {0};
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t, m;
    stk__tn_from_list(in, i, &t);
    if (mean) stk__tn_from_list(mean, i, &m);
    st = reduce_sample(node, stk__gpu_sample(b, i), &t, mean ? &m : NULL, &plans[i], &a);
    if (st == STK_OK)
      memcpy(shapes + i * (size_t)plans[0].ndim, plans[i].shape,
             sizeof(int64_t) * (size_t)plans[0].ndim);
  }
  if (st == STK_OK && n)
    st = stk__gpu_alloc_list(b, a.out_dtype, plans[0].ndim, shapes, plans[0].layout,
                             stk__gpu_shapes_equal(shapes, n, plans[0].ndim), &out);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    rs[i] = plans[i].r;
    rs[i].dst = d.data;
  }
  if (st == STK_OK && n) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    int rc =
        stk_gpu_run_tn_reduce(g->api, g->ctx, (int)n, rs, &a, stk__gpu_stream(b), err, sizeof err);
    st = stk__gpu_op_check(node, rc, err);
  }
  free(plans);
  free(rs);
  free(shapes);
  if (mowned) stk_tensor_list_release(mean);
  return stk__gpu_finish(b, in, owned, out, st);
}

#define REDUCTION(ident, dali_name, what, nargs, argtab, nin, ports, check) \
  static const stk_op_schema ident##_schema = {                             \
      .name = "reductions." dali_name,                                      \
      .doc = what,                                                          \
      .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,                           \
      .min_inputs = nin,                                                    \
      .max_inputs = nin,                                                    \
      .inputs = ports,                                                      \
      .num_outputs = 1,                                                     \
      .outputs = red_out,                                                   \
      .num_args = nargs,                                                    \
      .args = argtab,                                                       \
      .gpu_check = check,                                                   \
  };                                                                        \
  const stk__op_def stk__op_reductions_##ident = {                          \
      .schema = &ident##_schema, .run_sample = reduce_run, .run_gpu = reduce_run_gpu};

#define CHECK1(name) "# atol=0.01\nreturn reductions." name "(IN, axis_names=\"HW\", device=@)"
#define CHECK2(name)                                                    \
  "# atol=0.01\nm = reductions.mean(IN, axis_names=\"HW\", device=@)\n" \
  "return reductions." name "(IN, m, axis_names=\"HW\", device=@)"

REDUCTION(min, "min", "The smallest element over the axes (DALI's reductions.min).", 3, reduce_args,
          1, red_in, CHECK1("min"))
REDUCTION(max, "max", "The largest element over the axes (DALI's reductions.max).", 3, reduce_args,
          1, red_in, CHECK1("max"))
REDUCTION(sum, "sum",
          "The sum over the axes (DALI's reductions.sum); integers accumulate in 64 bits, "
          "floats in float64.",
          4, reduce_args, 1, red_in, "return reductions.sum(IN, axes=[0, 1], device=@)")
REDUCTION(mean, "mean", "The mean over the axes (DALI's reductions.mean), float32 by default.", 4,
          reduce_args, 1, red_in, CHECK1("mean"))
REDUCTION(mean_square, "mean_square",
          "The mean of the squares over the axes (DALI's reductions.mean_square), float32 by "
          "default.",
          4, reduce_args, 1, red_in, CHECK1("mean_square"))
REDUCTION(rms, "rms",
          "The root mean square over the axes (DALI's reductions.rms), float32 by default.", 4,
          reduce_args, 1, red_in, CHECK1("rms"))
REDUCTION(std_dev, "std_dev",
          "The standard deviation around the given mean (input 1), sqrt(sum((x - mean)^2) / "
          "(n - ddof)) (DALI's reductions.std_dev).",
          4, reduce_args_dev, 2, dev_in, CHECK2("std_dev"))
REDUCTION(variance, "variance",
          "The variance around the given mean (input 1), sum((x - mean)^2) / (n - ddof) "
          "(DALI's reductions.variance).",
          4, reduce_args_dev, 2, dev_in, CHECK2("variance"))

/* ---- normalize ---- */

enum {
  N_AXES,
  N_AXIS_NAMES,
  N_BATCH,
  N_MEAN,
  N_STDDEV,
  N_SCALE,
  N_SHIFT,
  N_EPSILON,
  N_DDOF,
  N_DTYPE,
  N_COUNT_
};
static const stk_arg_schema normalize_args[] = {
    [N_AXES] = {.name = "axes",
                .type = STK_ARG_INTS,
                .doc = "the axes the statistics reduce (default: all)"},
    [N_AXIS_NAMES] = {.name = "axis_names",
                      .type = STK_ARG_STRING,
                      .doc = "the same as layout letters"},
    [N_BATCH] = {.name = "batch",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "statistics over the whole batch (all samples' boxes together; the "
                        "kept extents must agree); on the CPU the operator then runs once per "
                        "batch, on the producer thread, after the samples' other operators"},
    [N_MEAN] = {.name = "mean",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = "the mean: one value or one per statistics element (the reduced "
                       "shape); computed when absent"},
    [N_STDDEV] = {.name = "stddev",
                  .type = STK_ARG_FLOATS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "the standard deviation, as mean; computed (around the mean) when "
                         "absent"},
    [N_SCALE] = {.name = "scale",
                 .type = STK_ARG_FLOAT,
                 .default_text = "1.0",
                 .doc = "multiplies the result"},
    [N_SHIFT] = {.name = "shift",
                 .type = STK_ARG_FLOAT,
                 .default_text = "0.0",
                 .doc = "added after scaling"},
    [N_EPSILON] = {.name = "epsilon",
                   .type = STK_ARG_FLOAT,
                   .default_text = "0.0",
                   .doc = "added to the variance (stddev^2) before the square root"},
    [N_DDOF] = {.name = "ddof",
                .type = STK_ARG_INT,
                .default_text = "0",
                .doc = "delta degrees of freedom of the computed variance"},
    [N_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = RD_DTYPES,
                 .doc = "output type (integers: rounded and saturated)"},
};
STK__CHECK_ARGS(normalize_args, N_COUNT_);

static const stk_port_schema norm_out[] = {
    {"output", "scale * (x - mean) / sqrt(stddev^2 + epsilon) + shift"}};

/* batch=True makes the CPU operator a batch operator (run_batch): the statistics need
 * every sample of the batch. */
static bool normalize_batch_when(const stk__node *node) {
  return stk__arg_bool(node, NULL, N_BATCH);
}

/* One statistic (mean or stddev) given as an argument: values per statistics element into
 * `v` (k doubles), or NULL when one value (*scalar) or none. */
static stk_status stat_arg(stk__node *node, stk__sample *s, int arg, int64_t k, const double **v,
                           double *scalar, bool *given) {
  *given = stk__arg_given(node, arg), *v = NULL;
  if (!*given) return STK_OK;
  size_t n = stk__arg_floats(node, s, arg, v);
  if (n == 1) {
    *scalar = (*v)[0], *v = NULL;
    return STK_OK;
  }
  if ((int64_t)n != k)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%s has %zu values; give one or %lld (the reduced shape)",
                      normalize_args[arg].name, n, (long long)k);
  return STK_OK;
}

/* The per-sample statistics as float64 arrays (scratch) and the affine plan. */
static stk_status normalize_plan(stk__node *node, stk__sample *s, const stk__tensor *in,
                                 reduce_plan *rp, stk_tn_affine *ap, bool *mean_given,
                                 bool *std_given) {
  unsigned mask;
  STK_TRY(stk__tn_axes(node, s, in, N_AXES, N_AXIS_NAMES, true, &mask));
  plan_boxes(in, mask, true, rp);
  memset(ap, 0, sizeof *ap);
  ap->src = in->data, ap->ndim = in->ndim, ap->count = stk__tn_volume(in->ndim, in->shape);
  memcpy(ap->shape, in->shape, sizeof ap->shape);
  int64_t k = 1;
  for (int d = in->ndim - 1; d >= 0; d--) { /* dense strides of the statistics shape */
    bool red = mask & (1u << d);
    ap->stat_stride[d] = red ? 0 : k;
    if (!red) k *= in->shape[d];
  }
  const double *mv, *sv;
  STK_TRY(stat_arg(node, s, N_MEAN, k, &mv, &ap->mean_scalar, mean_given));
  STK_TRY(stat_arg(node, s, N_STDDEV, k, &sv, &ap->factor_scalar, std_given));
  ap->mean = mv, ap->factor = sv; /* given values; the callers fill in the rest */
  return STK_OK;
}

/* The affine pass on the CPU, row by row: each row's statistics offset is decoded once;
 * uint8 or float32 to float32 (the common normalisations) take a loop without per-element
 * type switches, computing what stk_tn_affine_elem computes. */
static void affine_run(const stk_tn_affine *p, stk_dtype it, stk_dtype ot, double shift) {
  if (p->count == 0) return;
  int last = p->ndim - 1;
  int64_t len = p->ndim ? p->shape[last] : 1, rows = p->count / len;
  int64_t ks = p->ndim ? p->stat_stride[last] : 0;
  bool fast = ot == STK_DTYPE_FLOAT32 && (it == STK_DTYPE_UINT8 || it == STK_DTYPE_FLOAT32) &&
              p->mean && p->factor && p->ndim;
  for (int64_t r = 0; r < rows; r++) {
    int64_t e0 = r * len;
    if (!fast) {
      for (int64_t j = 0; j < len; j++) stk_tn_affine_elem(p, it, ot, shift, e0 + j);
      continue;
    }
    int64_t k0 = stk_ar_gather_offset(last, p->shape, p->stat_stride, r);
    float *dst = (float *)p->dst + e0;
    for (int64_t j = 0; j < len; j++) {
      double v = it == STK_DTYPE_UINT8 ? (double)((const uint8_t *)p->src)[e0 + j]
                                       : (double)((const float *)p->src)[e0 + j];
      int64_t k = k0 + j * ks;
      dst[j] = (float)((v - p->mean[k]) * p->factor[k] + shift);
    }
  }
}

/* Given standard deviations as the affine factors: scale / sqrt(sd^2 + epsilon). */
static void given_factors(const stk_tn_affine *ap, int64_t k, double scale, double eps,
                          double *fac) {
  for (int64_t o = 0; o < k; o++) {
    double sd = ap->factor ? ap->factor[o] : ap->factor_scalar, v = sqrt(sd * sd + eps);
    fac[o] = v > 0 ? scale / v : 0.0;
  }
}

static stk_status normalize_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  reduce_plan rp;
  stk_tn_affine ap;
  bool mg, sg;
  STK_TRY(normalize_plan(node, s, in, &rp, &ap, &mg, &sg));
  int64_t k = rp.r.out_count;
  double *mean = stk__scratch(s, (size_t)k * sizeof(double) + 8);
  double *fac = stk__scratch(s, (size_t)k * sizeof(double) + 8);
  if (!mean || !fac) return STK_ERR_OUT_OF_MEMORY;
  stk_tn_reduce_args a = {.in_dtype = in->dtype, .out_dtype = STK_DTYPE_FLOAT64};
  for (int64_t o = 0; o < k; o++) /* the mean: given, or computed */
    mean[o] = ap.mean ? ap.mean[o] : ap.mean_scalar;
  if (!mg) {
    a.op = STK_TN_MEAN, rp.r.dst = mean;
    for (int64_t o = 0; o < k; o++) stk_tn_reduce_elem(&rp.r, &a, o);
  }
  double scale = stk__arg_float(node, s, N_SCALE), eps = stk__arg_float(node, s, N_EPSILON);
  if (sg) {
    given_factors(&ap, k, scale, eps, fac);
  } else {
    a.op = STK_TN_INV_STD, a.mean_dtype = STK_DTYPE_FLOAT64, a.epsilon = eps, a.scale = scale;
    a.ddof = (double)stk__arg_int(node, s, N_DDOF);
    rp.r.mean = mean, rp.r.dst = fac;
    for (int64_t o = 0; o < k; o++) stk_tn_reduce_elem(&rp.r, &a, o);
  }
  ap.mean = mean, ap.factor = fac;
  stk_dtype ot = stk__dtype_arg(stk__arg_string(node, N_DTYPE));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, ot, in->ndim, in->shape, in->layout, &out));
  ap.dst = out->data;
  affine_run(&ap, in->dtype, ot, stk__arg_float(node, s, N_SHIFT));
  return STK_OK;
}

/* ---- normalize(batch=True) on the CPU: one statistic over every sample's boxes ---- */

/* The batch's plans: per sample its boxes, affine pass and statistics arrays (k means, k
 * factors; given values per sample, computed ones shared), as on the GPU. */
typedef struct {
  size_t n;
  int64_t k, total; /* statistics per sample; elements each statistic reduces */
  reduce_plan *rp;
  stk_tn_affine *ap;
  double *rows; /* n x k partial sums */
  bool mean_given, std_given;
} norm_batch;

static stk_status norm_batch_plan(stk__node *node, stk__batch *b, norm_batch *g) {
  for (size_t i = 0; i < g->n; i++) {
    stk__sample *s = stk__batch_sample(b, i);
    const stk__tensor *in = stk__input(s, 0), *in0 = stk__input(stk__batch_sample(b, 0), 0);
    STK_TRY(normalize_plan(node, s, in, &g->rp[i], &g->ap[i], &g->mean_given, &g->std_given));
    if (memcmp(g->rp[i].shape, g->rp[0].shape, sizeof g->rp[0].shape) != 0 ||
        g->rp[i].ndim != g->rp[0].ndim || in->dtype != in0->dtype)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "batch=True needs every sample's type and kept extents (the axes not "
                        "reduced) to agree with sample 0's");
    g->total += g->rp[i].r.red_count;
    double *st = stk__scratch(s, 2 * (size_t)g->k * sizeof(double) + 8);
    if (!st) return STK_ERR_OUT_OF_MEMORY;
    double scale = stk__arg_float(node, s, N_SCALE), eps = stk__arg_float(node, s, N_EPSILON);
    for (int64_t o = 0; o < g->k; o++)
      st[o] = g->ap[i].mean ? g->ap[i].mean[o] : g->ap[i].mean_scalar;
    if (g->std_given) given_factors(&g->ap[i], g->k, scale, eps, st + g->k);
    g->ap[i].mean = st, g->ap[i].factor = st + g->k;
  }
  return STK_OK;
}

/* One missing statistic over the batch: each sample reduces its boxes into its row of
 * partial sums (`part`), then `all` combines the rows into dst (k values), with the same
 * element functions as the GPU's two launches. */
static void norm_batch_combine(norm_batch *g, stk_dtype it, const stk_tn_reduce_args *part,
                               const stk_tn_reduce_args *all, double *dst) {
  for (size_t i = 0; i < g->n; i++) {
    stk_tn_reduce r = g->rp[i].r;
    r.dst = g->rows + i * (size_t)g->k;
    if (part->op == STK_TN_SQ_DEV_SUM) r.mean = g->ap[i].mean, r.mean_one = 0;
    stk_tn_reduce_args a = *part;
    a.in_dtype = it;
    for (int64_t o = 0; o < g->k; o++) stk_tn_reduce_elem(&r, &a, o);
  }
  stk_tn_reduce c = {.src = g->rows,
                     .dst = dst,
                     .out_ndim = 1,
                     .red_ndim = 1,
                     .out_count = g->k,
                     .red_count = (int64_t)g->n};
  c.out_shape[0] = g->k, c.out_stride[0] = 1, c.red_shape[0] = (int64_t)g->n,
  c.red_stride[0] = g->k;
  for (int64_t o = 0; o < g->k; o++) stk_tn_reduce_elem(&c, all, o);
}

static stk_status norm_batch_stats(stk__node *node, stk__batch *b, norm_batch *g, stk_dtype it) {
  stk__sample *s0 = stk__batch_sample(b, 0);
  double *shared = stk__scratch(s0, 2 * (size_t)g->k * sizeof(double) + 8);
  if (!shared) return STK_ERR_OUT_OF_MEMORY;
  if (!g->mean_given) {
    stk_tn_reduce_args part = {.op = STK_TN_SUM, .out_dtype = STK_DTYPE_FLOAT64};
    stk_tn_reduce_args all = {.op = STK_TN_MEAN,
                              .in_dtype = STK_DTYPE_FLOAT64,
                              .out_dtype = STK_DTYPE_FLOAT64,
                              .divisor = (double)g->total};
    norm_batch_combine(g, it, &part, &all, shared);
    for (size_t i = 0; i < g->n; i++) g->ap[i].mean = shared;
  }
  if (!g->std_given) {
    stk_tn_reduce_args part = {
        .op = STK_TN_SQ_DEV_SUM, .out_dtype = STK_DTYPE_FLOAT64, .mean_dtype = STK_DTYPE_FLOAT64};
    stk_tn_reduce_args all = {.op = STK_TN_INV_STD_SUM,
                              .in_dtype = STK_DTYPE_FLOAT64,
                              .out_dtype = STK_DTYPE_FLOAT64,
                              .divisor = (double)g->total - (double)stk__arg_int(node, s0, N_DDOF),
                              .epsilon = stk__arg_float(node, s0, N_EPSILON),
                              .scale = stk__arg_float(node, s0, N_SCALE)};
    if (!(all.divisor > 0))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s0,
                        "ddof must be below the batch's element count per statistic (%lld)",
                        (long long)g->total);
    norm_batch_combine(g, it, &part, &all, shared + g->k);
    for (size_t i = 0; i < g->n; i++) g->ap[i].factor = shared + g->k;
  }
  return STK_OK;
}

static stk_status normalize_run_batch(stk__node *node, stk__batch *b) {
  norm_batch g = {.n = stk__batch_size(b)};
  if (g.n == 0) return STK_OK;
  g.rp = stk__calloc(g.n, sizeof *g.rp, "normalize plans");
  g.ap = stk__calloc(g.n, sizeof *g.ap, "normalize plans");
  stk_status st = g.rp && g.ap ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK) {
    /* k from sample 0's plan; norm_batch_plan checks the others against it */
    stk__sample *s0 = stk__batch_sample(b, 0);
    unsigned mask;
    st = stk__tn_axes(node, s0, stk__input(s0, 0), N_AXES, N_AXIS_NAMES, true, &mask);
    if (st == STK_OK) {
      reduce_plan p0;
      plan_boxes(stk__input(s0, 0), mask, true, &p0);
      g.k = p0.r.out_count;
    }
  }
  if (st == STK_OK) st = norm_batch_plan(node, b, &g);
  if (st == STK_OK) {
    g.rows = stk__calloc(g.n * (size_t)g.k + 1, sizeof(double), "normalize partial sums");
    st = g.rows ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  }
  stk_dtype it = stk__input(stk__batch_sample(b, 0), 0)->dtype;
  if (st == STK_OK) st = norm_batch_stats(node, b, &g, it);
  stk_dtype ot = stk__dtype_arg(stk__arg_string(node, N_DTYPE));
  for (size_t i = 0; st == STK_OK && i < g.n; i++) {
    stk__sample *s = stk__batch_sample(b, i);
    const stk__tensor *in = stk__input(s, 0);
    stk__tensor *out;
    st = stk__output(s, 0, ot, in->ndim, in->shape, in->layout, &out);
    if (st != STK_OK) break;
    g.ap[i].dst = out->data;
    affine_run(&g.ap[i], in->dtype, ot, stk__arg_float(node, s, N_SHIFT));
  }
  free(g.rp), free(g.ap), free(g.rows);
  return st;
}

/* GPU: statistics into float64 device arrays (two reduce launches when none is given),
 * then one affine launch. Given statistics are computed on the host and uploaded with the
 * plans' arrays. */
static stk_status normalize_run_gpu(stk__node *node, stk__gpu_batch *b);

static const stk_op_schema normalize_schema = {
    .name = "normalize",
    .doc =
        "Normalizes each sample (DALI's normalize): scale * (x - mean) / sqrt(stddev^2 + "
        "epsilon) + shift, with mean and stddev given (one value or one per statistics "
        "element) or computed per sample over `axes` (the variance around the mean, "
        "divided by n - ddof); batch=True computes them over the whole batch.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = red_in,
    .num_outputs = 1,
    .outputs = norm_out,
    .num_args = N_COUNT_,
    .args = normalize_args,
    .gpu_check =
        "# atol=0.001\nreturn normalize(IN, axis_names=\"HW\", scale=64, shift=128, "
        "epsilon=1, device=@)",
};
const stk__op_def stk__op_normalize = {
    .schema = &normalize_schema,
    .run_sample = normalize_run,
    .run_batch = normalize_run_batch,
    .batch_when = normalize_batch_when,
    .run_gpu = normalize_run_gpu,
};

/* Runs one reduce launch of `op` over the plans into dsts (float64). */
static stk_status gpu_stats(stk__node *node, stk__gpu_batch *b, stk_tn_reduce *rs, size_t n,
                            const stk_tn_reduce_args *a) {
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  int rc =
      stk_gpu_run_tn_reduce(g->api, g->ctx, (int)n, rs, a, stk__gpu_stream(b), err, sizeof err);
  return stk__gpu_op_check(node, rc, err);
}

/* Uploads host statistics (given values) into device memory of a float64 list. */
static stk_status upload_stats(stk__node *node, stk__gpu_batch *b, void *dst, const double *src,
                               size_t count) {
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  return stk__gpu_op_check(node,
                           g->api->memcpy_async(g->ctx, dst, src, count * sizeof(double),
                                                stk__gpu_stream(b), err, sizeof err),
                           err);
}

/* One GPU batch of normalize: per sample its statistics boxes (rp), its affine pass
 * (ap), and the host copy of its given statistics (host: k means, then k factors). */
typedef struct {
  size_t n;
  int nd;
  reduce_plan *rp;
  stk_tn_affine *ap;
  stk_tn_reduce *rs;
  int64_t *shapes, *sshape;
  double **host;
  bool mean_given, std_given;
  double scale, eps;
  stk_tensor_list *stats; /* float64 per sample: means, then factors (device) */
  stk_tensor_list *batch; /* batch=True: the batch's k means, then k factors (sample 0) */
} norm_gpu;

static void norm_gpu_free(norm_gpu *g) {
  /* memcpy_async from pageable memory returns once the source was read */
  for (size_t i = 0; g->host && i < g->n; i++) free(g->host[i]);
  free(g->host), free(g->rp), free(g->ap), free(g->rs), free(g->shapes), free(g->sshape);
  stk_tensor_list_release(g->stats); /* after the affine pass that reads them was queued */
  stk_tensor_list_release(g->batch);
}

/* Plans every sample; given statistics go to host arrays (factors as scale / sqrt(sd^2 +
 * epsilon), as the CPU computes them). */
static stk_status norm_gpu_plan(stk__node *node, stk__gpu_batch *b, stk_tensor_list *in,
                                norm_gpu *g) {
  size_t n = g->n;
  for (size_t i = 0; i < n; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    stk__sample *s = stk__gpu_sample(b, i);
    STK_TRY(normalize_plan(node, s, &t, &g->rp[i], &g->ap[i], &g->mean_given, &g->std_given));
    memcpy(g->shapes + i * (size_t)g->nd, t.shape, sizeof(int64_t) * (size_t)g->nd);
    int64_t k = g->rp[i].r.out_count;
    g->sshape[i] = 2 * k;
    g->host[i] = malloc((size_t)(2 * k + 1) * sizeof(double));
    if (!g->host[i]) return STK_ERR_OUT_OF_MEMORY;
    g->scale = stk__arg_float(node, s, N_SCALE), g->eps = stk__arg_float(node, s, N_EPSILON);
    const stk_tn_affine *ap = &g->ap[i];
    for (int64_t o = 0; o < k; o++) {
      g->host[i][o] = ap->mean ? ap->mean[o] : ap->mean_scalar;
      double sd = ap->factor ? ap->factor[o] : ap->factor_scalar, v = sqrt(sd * sd + g->eps);
      g->host[i][k + o] = v > 0 ? g->scale / v : 0.0;
    }
  }
  return STK_OK;
}

/* batch=True: a missing statistic over the whole batch. Each sample reduces its box into
 * row i of a dense n x k float64 list, then one reduce over the sample axis of that list
 * combines the rows into `dst` (k values, shared by every sample's affine pass). */
static stk_status norm_gpu_combine(stk__node *node, stk__gpu_batch *b, norm_gpu *g,
                                   stk_tn_reduce_args *part, stk_tn_reduce_args *all, double *dst) {
  size_t n = g->n;
  int64_t k = g->rp[0].r.out_count, *ks = stk__calloc(n, sizeof(int64_t), "shapes");
  if (!ks) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) ks[i] = k;
  stk_tensor_list *rows = NULL;
  stk_status st = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT64, 1, ks, "", true, &rows);
  free(ks);
  if (st != STK_OK) return st;
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(rows, i, &d);
    g->rs[i] = g->rp[i].r, g->rs[i].dst = d.data;
    if (part->op == STK_TN_SQ_DEV_SUM) g->rs[i].mean = g->ap[i].mean, g->rs[i].mean_one = 0;
  }
  st = gpu_stats(node, b, g->rs, n, part);
  stk_tensor_desc d0;
  stk_tensor_list_sample(rows, 0, &d0);
  stk_tn_reduce c = {.src = d0.data,
                     .dst = dst,
                     .out_ndim = 1,
                     .red_ndim = 1,
                     .out_count = k,
                     .red_count = (int64_t)n};
  c.out_shape[0] = k, c.out_stride[0] = 1, c.red_shape[0] = (int64_t)n, c.red_stride[0] = k;
  if (st == STK_OK) st = gpu_stats(node, b, &c, 1, all);
  stk_tensor_list_release(rows); /* stream-ordered: after the combine read it */
  return st;
}

/* batch=True on the GPU: the batch mean (unless given), then the factors around it. */
static stk_status norm_gpu_batch_stats(stk__node *node, stk__gpu_batch *b, stk_dtype it,
                                       norm_gpu *g) {
  size_t n = g->n;
  int64_t k = g->rp[0].r.out_count, total = 0;
  for (size_t i = 0; i < n; i++) {
    if (memcmp(g->rp[i].shape, g->rp[0].shape, sizeof g->rp[0].shape) != 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                        "batch=True needs the kept extents of every sample to agree");
    total += g->rp[i].r.red_count;
  }
  int64_t two[1] = {2 * k}, *sh = stk__calloc(n, sizeof(int64_t), "shapes");
  if (!sh) return STK_ERR_OUT_OF_MEMORY;
  sh[0] = two[0];
  stk_status st = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT64, 1, sh, "", false, &g->batch);
  free(sh);
  stk_tensor_desc d;
  if (st == STK_OK) stk_tensor_list_sample(g->batch, 0, &d);
  double ddof = (double)stk__arg_int(node, stk__gpu_sample(b, 0), N_DDOF);
  if (st == STK_OK && !g->mean_given) {
    stk_tn_reduce_args part = {.op = STK_TN_SUM, .in_dtype = it, .out_dtype = STK_DTYPE_FLOAT64};
    stk_tn_reduce_args all = {.op = STK_TN_MEAN,
                              .in_dtype = STK_DTYPE_FLOAT64,
                              .out_dtype = STK_DTYPE_FLOAT64,
                              .divisor = (double)total};
    st = norm_gpu_combine(node, b, g, &part, &all, d.data);
    for (size_t i = 0; st == STK_OK && i < n; i++) g->ap[i].mean = d.data;
  }
  if (st == STK_OK && !g->std_given) {
    stk_tn_reduce_args part = {.op = STK_TN_SQ_DEV_SUM,
                               .in_dtype = it,
                               .out_dtype = STK_DTYPE_FLOAT64,
                               .mean_dtype = STK_DTYPE_FLOAT64};
    stk_tn_reduce_args all = {.op = STK_TN_INV_STD_SUM,
                              .in_dtype = STK_DTYPE_FLOAT64,
                              .out_dtype = STK_DTYPE_FLOAT64,
                              .divisor = (double)total - ddof,
                              .epsilon = g->eps,
                              .scale = g->scale};
    st = norm_gpu_combine(node, b, g, &part, &all, (double *)d.data + k);
    for (size_t i = 0; st == STK_OK && i < n; i++) g->ap[i].factor = (double *)d.data + k;
  }
  return st;
}

/* The statistics on the device: given ones uploaded, missing ones computed (the mean,
 * then the factors around it), per sample or over the batch. */
static stk_status norm_gpu_stats(stk__node *node, stk__gpu_batch *b, stk_dtype it, norm_gpu *g) {
  size_t n = g->n;
  STK_TRY(stk__gpu_alloc_list(b, STK_DTYPE_FLOAT64, 1, g->sshape, "", false, &g->stats));
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(g->stats, i, &d);
    g->ap[i].mean = d.data, g->ap[i].factor = (double *)d.data + g->rp[i].r.out_count;
    STK_TRY(upload_stats(node, b, d.data, g->host[i], (size_t)g->sshape[i]));
  }
  if (stk__arg_bool(node, NULL, N_BATCH)) return norm_gpu_batch_stats(node, b, it, g);
  stk_tn_reduce_args a = {.in_dtype = it, .out_dtype = STK_DTYPE_FLOAT64};
  if (!g->mean_given) {
    a.op = STK_TN_MEAN;
    for (size_t i = 0; i < n; i++) g->rs[i] = g->rp[i].r, g->rs[i].dst = (void *)g->ap[i].mean;
    STK_TRY(gpu_stats(node, b, g->rs, n, &a));
  }
  if (!g->std_given) {
    a.op = STK_TN_INV_STD, a.mean_dtype = STK_DTYPE_FLOAT64, a.epsilon = g->eps;
    a.scale = g->scale, a.ddof = (double)stk__arg_int(node, stk__gpu_sample(b, 0), N_DDOF);
    for (size_t i = 0; i < n; i++)
      g->rs[i] = g->rp[i].r, g->rs[i].mean = g->ap[i].mean, g->rs[i].dst = (void *)g->ap[i].factor;
    STK_TRY(gpu_stats(node, b, g->rs, n, &a));
  }
  return STK_OK;
}

/* The affine pass into a new list of the output type. */
static stk_status norm_gpu_apply(stk__node *node, stk__gpu_batch *b, stk_tensor_list *in,
                                 norm_gpu *g, stk_tensor_list **out) {
  stk_dtype ot = stk__dtype_arg(stk__arg_string(node, N_DTYPE));
  STK_TRY(stk__gpu_alloc_list(b, ot, g->nd, g->shapes, stk_tensor_list_layout(in),
                              stk__gpu_shapes_equal(g->shapes, g->n, g->nd), out));
  for (size_t i = 0; i < g->n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(*out, i, &d);
    g->ap[i].dst = d.data;
  }
  stk__gpu *dev = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  double shift = stk__arg_float(node, stk__gpu_sample(b, 0), N_SHIFT);
  stk_gpu_tn_affine_args aa = {stk_tensor_list_dtype(in), ot, shift};
  int rc = stk_gpu_run_tn_affine(dev->api, dev->ctx, (int)g->n, g->ap, &aa, stk__gpu_stream(b), err,
                                 sizeof err);
  return stk__gpu_op_check(node, rc, err);
}

static stk_status normalize_run_gpu(stk__node *node, stk__gpu_batch *b) {
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  size_t n = stk__gpu_batch_size(b), m = n ? n : 1;
  norm_gpu g = {.n = n, .nd = stk_tensor_list_ndim(in)};
  g.rp = stk__calloc(m, sizeof *g.rp, "plans"), g.ap = stk__calloc(m, sizeof *g.ap, "plans");
  g.rs = stk__calloc(m, sizeof *g.rs, "plans"), g.host = stk__calloc(m, sizeof *g.host, "stats");
  g.shapes = stk__calloc(m * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  g.sshape = stk__calloc(m, sizeof(int64_t), "shapes");
  stk_status st =
      g.rp && g.ap && g.rs && g.host && g.shapes && g.sshape ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK && n) st = norm_gpu_plan(node, b, in, &g);
  if (st == STK_OK && n) st = norm_gpu_stats(node, b, stk_tensor_list_dtype(in), &g);
  if (st == STK_OK && n) st = norm_gpu_apply(node, b, in, &g, &out);
  norm_gpu_free(&g);
  return stk__gpu_finish(b, in, owned, out, st);
}
