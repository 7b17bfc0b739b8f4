/* random.beta (DALI's): a beta-distributed number (or tensor) per sample, with alpha and
 * beta constant or fed per sample; and the gamma / beta samplers of beta.h. */
#include <math.h>

#include "beta.h"
#include "image_util.h"

double stk__draw_gamma(stk__philox *g, double shape) {
  if (shape < 1.0) {
    double u = stk__philox_uniform(g);
    return stk__draw_gamma(g, shape + 1.0) * pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x = stk__philox_normal(g), v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    double u = stk__philox_uniform(g);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0.0 && log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
  }
}

double stk__draw_beta(stk__philox *g, double a, double b) {
  double x = stk__draw_gamma(g, a), y = stk__draw_gamma(g, b);
  if (x + y <= 0.0) /* both underflowed (tiny shapes): the mass sits at 0 and 1 */
    return stk__philox_uniform(g) < a / (a + b) ? 1.0 : 0.0;
  return x / (x + y);
}

enum { A_ALPHA, A_BETA, A_SHAPE, A_DTYPE, A_SEED, A_COUNT_ };

static const stk_arg_schema beta_args[] = {
    [A_ALPHA] = {.name = "alpha",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "1.0",
                 .doc = "the alpha parameter (> 0)"},
    [A_BETA] = {.name = "beta",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "1.0",
                .doc = "the beta parameter (> 0)"},
    [A_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "shape of each sample's output (default: a scalar)"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = "float32|float64|float|double",
                 .doc = "output type"},
    [A_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "random seed (-1: derived from the pipeline's seed and the name)"},
};
STK__CHECK_ARGS(beta_args, A_COUNT_);

static const stk_port_schema beta_out[] = {{"output", "numbers in [0, 1]"}};

static const stk_port_schema beta_in[] = {
    {"shape_like", "optional: each output sample takes this sample's shape (excludes 'shape')"}};

static stk_status beta_init(stk__node *node) {
  if (stk__node_num_inputs(node) > 0 && stk__arg_given(node, A_SHAPE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give 'shape' or the shape_like input, not both (as in DALI)");
  return STK_OK;
}

static stk_status beta_run(stk__node *node, stk__sample *s) {
  double a = stk__arg_float(node, s, A_ALPHA), b = stk__arg_float(node, s, A_BETA);
  if (!(a > 0.0) || !(b > 0.0) || isinf(a) || isinf(b))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'alpha' and 'beta' must be positive and finite; got %g and %g", a, b);
  const int64_t *shape = NULL;
  size_t ndim = 0;
  if (stk__node_num_inputs(node) > 0) { /* shape_like: that sample's shape */
    shape = stk__input(s, 0)->shape, ndim = (size_t)stk__input(s, 0)->ndim;
  } else if (stk__arg_given(node, A_SHAPE)) {
    ndim = stk__arg_ints(node, s, A_SHAPE, &shape);
  }
  if (ndim > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'shape' has %zu dimensions, at most %d",
                      ndim, STK_MAX_NDIM);
  int64_t count = 1;
  for (size_t d = 0; d < ndim; d++) {
    if (shape[d] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'shape' has a negative extent");
    count *= shape[d];
  }
  stk_dtype dtype = stk__dtype_arg(stk__arg_string(node, A_DTYPE));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dtype, (int)ndim, shape, NULL, &out));
  stk__philox g;
  stk__sample_rng(node, s, &g);
  for (int64_t i = 0; i < count; i++) {
    double v = stk__draw_beta(&g, a, b);
    if (dtype == STK_DTYPE_FLOAT64)
      ((double *)out->data)[i] = v;
    else
      ((float *)out->data)[i] = (float)v;
  }
  return STK_OK;
}

static const stk_op_schema beta_schema = {
    .name = "random.beta",
    .doc =
        "Draws beta-distributed numbers in [0, 1], independently for every sample; alpha "
        "and beta may be fed per sample; the output has the shape of the optional shape_like "
        "input, else `shape`. (DALI's random.beta.)",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = beta_in,
    .num_outputs = 1,
    .outputs = beta_out,
    .num_args = A_COUNT_,
    .args = beta_args,
};
const stk__op_def stk__op_random_beta = {
    .schema = &beta_schema,
    .init = beta_init,
    .run_sample = beta_run,
};
