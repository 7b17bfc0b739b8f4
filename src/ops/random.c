/* Random sources: random.uniform, random.normal, random.coin_flip, random.choice.
 * Each sample draws from the node's Philox stream for that sample, so the values do
 * not depend on threads, prefetch depth or batch size. On device "gpu" (uniform, normal,
 * coin_flip, as DALI has them there) the same values are drawn on the host and uploaded
 * (STK_OPF_GPU_ON_HOST): a few numbers per sample, not worth a kernel. */
#include <math.h>
#include <string.h>

#include "image_util.h" /* STK__SFAIL */

#define NUMERIC_DTYPES \
  "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool|float|double"

/* Writes `value` as element `i` of a tensor of any numeric dtype. */
static void store_value(void *data, stk_dtype dtype, int64_t i, double value) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)data)[i] = (uint8_t)value;
      break;
    case STK_DTYPE_INT8:
      ((int8_t *)data)[i] = (int8_t)value;
      break;
    case STK_DTYPE_UINT16:
      ((uint16_t *)data)[i] = (uint16_t)value;
      break;
    case STK_DTYPE_INT16:
      ((int16_t *)data)[i] = (int16_t)value;
      break;
    case STK_DTYPE_UINT32:
      ((uint32_t *)data)[i] = (uint32_t)value;
      break;
    case STK_DTYPE_INT32:
      ((int32_t *)data)[i] = (int32_t)value;
      break;
    case STK_DTYPE_UINT64:
      ((uint64_t *)data)[i] = (uint64_t)value;
      break;
    case STK_DTYPE_INT64:
      ((int64_t *)data)[i] = (int64_t)value;
      break;
    case STK_DTYPE_FLOAT16:
      ((uint16_t *)data)[i] = stk__f32_to_f16((float)value);
      break;
    case STK_DTYPE_FLOAT32:
      ((float *)data)[i] = (float)value;
      break;
    case STK_DTYPE_FLOAT64:
      ((double *)data)[i] = value;
      break;
    case STK_DTYPE_BOOL:
      ((uint8_t *)data)[i] = value != 0.0;
      break;
    default:
      break;
  }
}

/* Allocates output 0 with the shape of the optional input `like` (DALI's shape_like: the
 * shape of that sample, any type; no layout, as DALI), else the `shape` argument (a
 * scalar when absent). */
static stk_status alloc_shaped(stk__node *node, stk__sample *s, int like, int shape_arg,
                               stk_dtype dtype, stk__tensor **out, int64_t *count) {
  const int64_t *shape = NULL;
  size_t ndim = 0;
  if (stk__node_num_inputs(node) > like) {
    const stk__tensor *t = stk__input(s, like);
    shape = t->shape, ndim = (size_t)t->ndim;
  } else if (stk__arg_given(node, shape_arg)) {
    ndim = stk__arg_ints(node, s, shape_arg, &shape);
  }
  if (ndim > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape has %zu dims, at most %d", ndim,
                      STK_MAX_NDIM);
  int64_t n = 1;
  for (size_t d = 0; d < ndim; d++) {
    if (shape[d] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "negative extent in shape");
    n *= shape[d];
  }
  *count = n;
  return stk__output(s, 0, dtype, (int)ndim, shape, NULL, out);
}

/* The shape_like input and the shape argument exclude each other (as in DALI). */
static stk_status check_shape_like(stk__node *node, int like, int shape_arg) {
  if (stk__node_num_inputs(node) > like && stk__arg_given(node, shape_arg))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give 'shape' or the shape_like input, not both (as in DALI)");
  return STK_OK;
}

/* The optional input of the generators (DALI's shape_like). */
static const stk_port_schema shape_like_in[] = {
    {"shape_like", "optional: each output sample takes this sample's shape (excludes 'shape')"}};

/* ---- random.uniform ---- */
enum { U_RANGE, U_VALUES, U_SHAPE, U_DTYPE, U_SEED, UNIFORM_ARGS_COUNT_ };
static const stk_arg_schema uniform_args[] = {
    [U_RANGE] = {.name = "range",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "[-1.0, 1.0]",
                 .doc = "[lo, hi): the interval to draw from"},
    [U_VALUES] = {.name = "values",
                  .type = STK_ARG_FLOATS,
                  .doc = "a discrete set to draw from with equal probability (overrides range)"},
    [U_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "shape of each sample's output; a scalar when absent"},
    [U_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = NUMERIC_DTYPES,
                 .doc = "output type"},
    [U_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(uniform_args, UNIFORM_ARGS_COUNT_);
static const stk_port_schema random_out[] = {{"value", "the drawn values"}};

static stk_status uniform_init(stk__node *node) { return check_shape_like(node, 0, U_SHAPE); }

static stk_status uniform_run(stk__node *node, stk__sample *s) {
  stk__philox g;
  stk__sample_rng(node, s, &g);
  stk_dtype dtype = stk__dtype_arg(stk__arg_string(node, U_DTYPE));
  stk__tensor *out;
  int64_t n;
  STK_TRY(alloc_shaped(node, s, 0, U_SHAPE, dtype, &out, &n));
  if (stk__arg_given(node, U_VALUES)) {
    const double *v;
    size_t nv = stk__arg_floats(node, s, U_VALUES, &v);
    if (nv == 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: values must not be empty",
                      stk__node_name(node));
    for (int64_t i = 0; i < n; i++) store_value(out->data, dtype, i, v[stk__philox_below(&g, nv)]);
    return STK_OK;
  }
  const double *r;
  if (stk__arg_floats(node, s, U_RANGE, &r) != 2 || !(r[0] <= r[1]))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: range must be [lo, hi] with lo <= hi",
                    stk__node_name(node));
  for (int64_t i = 0; i < n; i++)
    store_value(out->data, dtype, i, r[0] + (r[1] - r[0]) * stk__philox_uniform(&g));
  return STK_OK;
}

static const stk_op_schema uniform_schema = {
    .name = "random.uniform",
    .doc =
        "Draws numbers uniformly from [range[0], range[1]) or from a discrete set of values, "
        "independently for every sample.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM | STK_OPF_GPU_ON_HOST,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = shape_like_in,
    .num_outputs = 1,
    .outputs = random_out,
    .num_args = sizeof uniform_args / sizeof uniform_args[0],
    .args = uniform_args,
    .gpu_check = "return random.uniform(range=[-2.0, 3.0], shape=[4, 3], seed=11, device=@)",
};
const stk__op_def stk__op_random_uniform = {
    .schema = &uniform_schema,
    .init = uniform_init,
    .run_sample = uniform_run,
};

/* ---- random.normal ---- */
enum { N_MEAN, N_STDDEV, N_SHAPE, N_DTYPE, N_SEED, NORMAL_ARGS_COUNT_ };
static const stk_arg_schema normal_args[] = {
    [N_MEAN] = {.name = "mean",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "0.0",
                .doc = "mean"},
    [N_STDDEV] = {.name = "stddev",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "1.0",
                  .max = INFINITY,
                  .doc = "standard deviation"},
    [N_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "shape of each sample's output; a scalar when absent"},
    [N_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = NUMERIC_DTYPES,
                 .doc = "output type"},
    [N_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(normal_args, NORMAL_ARGS_COUNT_);

static stk_status normal_init(stk__node *node) { return check_shape_like(node, 0, N_SHAPE); }

static stk_status normal_run(stk__node *node, stk__sample *s) {
  stk__philox g;
  stk__sample_rng(node, s, &g);
  stk_dtype dtype = stk__dtype_arg(stk__arg_string(node, N_DTYPE));
  double mean = stk__arg_float(node, s, N_MEAN), sd = stk__arg_float(node, s, N_STDDEV);
  stk__tensor *out;
  int64_t n;
  STK_TRY(alloc_shaped(node, s, 0, N_SHAPE, dtype, &out, &n));
  for (int64_t i = 0; i < n; i++)
    store_value(out->data, dtype, i, mean + sd * stk__philox_normal(&g));
  return STK_OK;
}

static const stk_op_schema normal_schema = {
    .name = "random.normal",
    .doc = "Draws normally distributed numbers, independently for every sample.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM | STK_OPF_GPU_ON_HOST,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = shape_like_in,
    .num_outputs = 1,
    .outputs = random_out,
    .num_args = sizeof normal_args / sizeof normal_args[0],
    .args = normal_args,
    .gpu_check = "return random.normal(mean=1.0, stddev=2.0, shape=[5], seed=12, device=@)",
};
const stk__op_def stk__op_random_normal = {
    .schema = &normal_schema,
    .init = normal_init,
    .run_sample = normal_run,
};

/* ---- random.coin_flip ---- */
enum { C_PROBABILITY, C_SHAPE, C_DTYPE, C_SEED, COIN_ARGS_COUNT_ };
static const stk_arg_schema coin_args[] = {
    [C_PROBABILITY] = {.name = "probability",
                       .type = STK_ARG_FLOAT,
                       .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                       .default_text = "0.5",
                       .max = 1,
                       .doc = "probability of a 1"},
    [C_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "shape of each sample's output; a scalar when absent"},
    [C_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"int32\"",
                 .choices = NUMERIC_DTYPES,
                 .doc = "output type"},
    [C_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(coin_args, COIN_ARGS_COUNT_);

static stk_status coin_init(stk__node *node) { return check_shape_like(node, 0, C_SHAPE); }

static stk_status coin_run(stk__node *node, stk__sample *s) {
  stk__philox g;
  stk__sample_rng(node, s, &g);
  stk_dtype dtype = stk__dtype_arg(stk__arg_string(node, C_DTYPE));
  double p = stk__arg_float(node, s, C_PROBABILITY);
  if (!(p >= 0.0 && p <= 1.0))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: probability %g of sample %lld is not in [0, 1]",
                    stk__node_name(node), p, (long long)stk__sample_ordinal(s));
  stk__tensor *out;
  int64_t n;
  STK_TRY(alloc_shaped(node, s, 0, C_SHAPE, dtype, &out, &n));
  for (int64_t i = 0; i < n; i++)
    store_value(out->data, dtype, i, stk__philox_uniform(&g) < p ? 1.0 : 0.0);
  return STK_OK;
}

static const stk_op_schema coin_schema = {
    .name = "random.coin_flip",
    .doc = "Draws 1 with `probability`, else 0, independently for every sample.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM | STK_OPF_GPU_ON_HOST,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = shape_like_in,
    .num_outputs = 1,
    .outputs = random_out,
    .num_args = sizeof coin_args / sizeof coin_args[0],
    .args = coin_args,
    .gpu_check = "return random.coin_flip(probability=0.3, shape=[7], seed=13, device=@)",
};
const stk__op_def stk__op_random_coin_flip = {
    .schema = &coin_schema,
    .init = coin_init,
    .run_sample = coin_run,
};

/* ---- random.choice ---- */
enum { CH_A, CH_P, CH_SHAPE, CH_DTYPE, CH_SEED, CHOICE_ARGS_COUNT_ };
static const stk_arg_schema choice_args[] = {
    [CH_A] = {.name = "a",
              .type = STK_ARG_FLOATS,
              .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
              .doc = "the values to choose from; a single integer n means range(n) (DALI's "
                     "first input: fn.random.choice(a, shape_like) passes it here)"},
    [CH_P] = {.name = "p",
              .type = STK_ARG_FLOATS,
              .doc = "probabilities of the values (uniform when absent); must sum to 1"},
    [CH_SHAPE] = {.name = "shape",
                  .type = STK_ARG_INTS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "shape of each sample's output; a scalar when absent"},
    [CH_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .choices = NUMERIC_DTYPES,
                  .doc = "output type (a stoker extension); default: a's, as DALI: the fed "
                         "tensor's type, else int32 for whole numbers and float32 otherwise"},
    [CH_SEED] = {.name = "seed",
                 .type = STK_ARG_INT,
                 .default_text = "-1",
                 .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(choice_args, CHOICE_ARGS_COUNT_);

/* Checks a (and p against it); `s` is NULL at build time (a constant) or the sample (a
 * fed per sample). */
static stk_status choice_check(stk__node *node, stk__sample *s, const double *a, size_t na) {
  if (na == 0) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'a' must not be empty");
  if (na == 1 && (a[0] < 1 || a[0] != floor(a[0]) || a[0] > 1e9))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "a single value of 'a' (%g) must be a positive integer n: range(n)", a[0]);
  if (!stk__arg_given(node, CH_P)) return STK_OK;
  const double *p;
  size_t np = stk__arg_floats(node, NULL, CH_P, &p);
  size_t expected = na == 1 ? (size_t)a[0] : na;
  double sum = 0;
  for (size_t i = 0; i < np; i++) {
    if (p[i] < 0) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "p[%zu] is negative", i);
    sum += p[i];
  }
  if (np != expected || fabs(sum - 1.0) > 1e-6)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'p' must have %zu probabilities summing to 1 (has %zu, sum %g)", expected,
                      np, sum);
  return STK_OK;
}

static stk_status choice_init(stk__node *node) {
  STK_TRY(check_shape_like(node, 0, CH_SHAPE));
  if (stk__arg_is_fed(node, CH_A)) return STK_OK; /* checked per sample */
  const double *a;
  size_t na = stk__arg_floats(node, NULL, CH_A, &a);
  return choice_check(node, NULL, a, na);
}

/* The output type: dtype, else a's (DALI's choice has no dtype: its output is of a's
 * type): the fed tensor's type, or int32 for constant whole numbers, float32 otherwise. */
static stk_dtype choice_dtype(const stk__node *node, const stk__sample *s, const double *a,
                              size_t na) {
  if (stk__arg_given(node, CH_DTYPE) && *stk__arg_string(node, CH_DTYPE))
    return stk__dtype_arg(stk__arg_string(node, CH_DTYPE));
  stk_dtype fed = stk__arg_fed_dtype(node, s, CH_A);
  if (fed != STK_DTYPE_COUNT) return fed;
  for (size_t k = 0; k < na; k++)
    if (a[k] != floor(a[k])) return STK_DTYPE_FLOAT32;
  return STK_DTYPE_INT32;
}

static stk_status choice_run(stk__node *node, stk__sample *s) {
  stk__philox g;
  stk__sample_rng(node, s, &g);
  const double *a, *p = NULL;
  size_t na = stk__arg_floats(node, s, CH_A, &a);
  if (stk__arg_is_fed(node, CH_A)) STK_TRY(choice_check(node, s, a, na));
  stk_dtype dtype = choice_dtype(node, s, a, na);
  bool range = na == 1;
  size_t n_values = range ? (size_t)a[0] : na;
  if (stk__arg_given(node, CH_P)) stk__arg_floats(node, s, CH_P, &p);
  stk__tensor *out;
  int64_t n;
  STK_TRY(alloc_shaped(node, s, 0, CH_SHAPE, dtype, &out, &n));
  for (int64_t i = 0; i < n; i++) {
    size_t k;
    if (p) { /* inverse CDF over the probabilities */
      double u = stk__philox_uniform(&g), acc = 0;
      for (k = 0; k + 1 < n_values; k++) {
        acc += p[k];
        if (u < acc) break;
      }
    } else {
      k = (size_t)stk__philox_below(&g, n_values);
    }
    store_value(out->data, dtype, i, range ? (double)k : a[k]);
  }
  return STK_OK;
}

static const stk_op_schema choice_schema = {
    .name = "random.choice",
    .doc =
        "Chooses one of the values in `a` (or of range(a) for a single integer) per element, "
        "with probabilities `p`; the output has the shape of the optional shape_like input, "
        "else `shape`.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = shape_like_in,
    .num_outputs = 1,
    .outputs = random_out,
    .num_args = sizeof choice_args / sizeof choice_args[0],
    .args = choice_args,
};
const stk__op_def stk__op_random_choice = {
    .schema = &choice_schema,
    .init = choice_init,
    .run_sample = choice_run,
};
