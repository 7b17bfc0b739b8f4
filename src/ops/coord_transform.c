/* coord_transform: an affine map of points, out = M x + T (DALI's coord_transform). Points
 * are [N, D] of any numeric type; M is O x D (or one number: that multiple of the
 * identity), T has O values (or one for all); MT gives both as O x (D + 1). Sums are
 * in float32 in the order (M[i][0] x0 + M[i][1] x1 + ...) + T[i] (DALI's rounding);
 * integer outputs round half away from zero and saturate. */
#include <math.h>
#include <string.h>

#include "image_util.h"

#define COORD_DTYPES \
  "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|float|double"

enum { A_M, A_T, A_MT, A_DTYPE, A_COUNT_ };

static const stk_arg_schema coord_transform_args[] = {
    [A_M] = {.name = "M",
             .type = STK_ARG_FLOATS,
             .flags = STK_ARGF_PER_SAMPLE,
             .doc = "the O x D matrix, row-major (one value: a multiple of the identity); "
                    "default: the identity"},
    [A_T] = {.name = "T",
             .type = STK_ARG_FLOATS,
             .flags = STK_ARGF_PER_SAMPLE,
             .doc = "the translation, O values (one value: for every axis); default 0"},
    [A_MT] = {.name = "MT",
              .type = STK_ARG_FLOATS,
              .flags = STK_ARGF_PER_SAMPLE,
              .doc = "M and T together as an O x (D + 1) matrix; excludes M and T"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = COORD_DTYPES,
                 .doc = "the output type"},
};
STK__CHECK_ARGS(coord_transform_args, A_COUNT_);

static const stk_port_schema ct_in[] = {{"input", "points [N, D] (or a flat list of D = 1)"}};
static const stk_port_schema ct_out[] = {{"output", "the points [N, O]"}};

#define MAX_DIM 16

typedef struct {
  int o, d;
  float m[MAX_DIM * MAX_DIM], t[MAX_DIM];
} affine;

static stk_status from_mt(stk__node *node, stk__sample *s, int d, affine *a) {
  const double *v;
  size_t n = stk__arg_floats(node, s, A_MT, &v);
  if (n == 0 || n % (size_t)(d + 1) || n / (size_t)(d + 1) > MAX_DIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "MT has %zu values; it must be O x %d (O <= %d)", n, d + 1, MAX_DIM);
  a->o = (int)(n / (size_t)(d + 1));
  for (int i = 0; i < a->o; i++) {
    for (int j = 0; j < d; j++) a->m[i * d + j] = (float)v[i * (d + 1) + j];
    a->t[i] = (float)v[i * (d + 1) + d];
  }
  return STK_OK;
}

static stk_status from_m_t(stk__node *node, stk__sample *s, int d, affine *a) {
  const double *m = NULL, *t = NULL;
  size_t nm = stk__arg_given(node, A_M) ? stk__arg_floats(node, s, A_M, &m) : 0;
  size_t nt = stk__arg_given(node, A_T) ? stk__arg_floats(node, s, A_T, &t) : 0;
  a->o = nm > 1 ? (int)(nm / (size_t)d) : nt > 1 ? (int)nt : d;
  if ((nm > 1 && (nm % (size_t)d || a->o > MAX_DIM)) || (nt > 1 && nt != (size_t)a->o) ||
      a->o > MAX_DIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "M has %zu values and T %zu; for points of %d coordinates M must be O x %d "
                      "and T have O values (O <= %d)",
                      nm, nt, d, d, MAX_DIM);
  if (nm <= 1 && a->o != d)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "a scalar M keeps %d coordinates; T has %zu", d, nt);
  for (int i = 0; i < a->o; i++) {
    for (int j = 0; j < d; j++)
      a->m[i * d + j] = nm > 1 ? (float)m[i * d + j] : (i == j ? (nm ? (float)m[0] : 1.0f) : 0.0f);
    a->t[i] = nt > 1 ? (float)t[i] : nt ? (float)t[0] : 0.0f;
  }
  return STK_OK;
}

static stk_status ct_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->ndim < 1 || in->ndim > 2 || !stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects points [N, D]; got %d dimensions",
                      in->ndim);
  int64_t n = in->shape[0], d64 = in->ndim == 2 ? in->shape[1] : 1;
  if (d64 < 1 || d64 > MAX_DIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "points of %lld coordinates (1..%d)",
                      (long long)d64, MAX_DIM);
  affine a = {.d = (int)d64};
  if (stk__arg_given(node, A_MT) && (stk__arg_given(node, A_M) || stk__arg_given(node, A_T)))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "give MT, or M and T, not both");
  STK_TRY(stk__arg_given(node, A_MT) ? from_mt(node, s, a.d, &a) : from_m_t(node, s, a.d, &a));
  float *x = stk__scratch(s, (size_t)(n * a.d + n * a.o + 1) * sizeof *x), *y = x + n * a.d;
  if (!x) return STK_ERR_OUT_OF_MEMORY;
  stk__convert(x, STK_DTYPE_FLOAT32, in->data, in->dtype, (size_t)(n * a.d));
  for (int64_t p = 0; p < n; p++)
    for (int i = 0; i < a.o; i++) {
      float acc = 0.0f;
      for (int j = 0; j < a.d; j++) acc += a.m[i * a.d + j] * x[p * a.d + j];
      y[p * a.o + i] = acc + a.t[i];
    }
  int64_t shape[2] = {n, a.o};
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, A_DTYPE));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, 2, shape, NULL, &out));
  stk__convert(out->data, dt, y, STK_DTYPE_FLOAT32, (size_t)(n * a.o));
  return STK_OK;
}

static const stk_op_schema coord_transform_schema = {
    .name = "coord_transform",
    .doc =
        "Applies an affine map to points: out = M x + T (DALI's coord_transform), e.g. to "
        "move keypoints or polygon vertices with the image transform that made them.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = ct_in,
    .num_outputs = 1,
    .outputs = ct_out,
    .num_args = A_COUNT_,
    .args = coord_transform_args,
};
const stk__op_def stk__op_coord_transform = {.schema = &coord_transform_schema,
                                             .run_sample = ct_run};
