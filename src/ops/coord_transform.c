/* coord_transform: an affine map of points, out = M x + T (DALI's coord_transform). Points
 * are [N, D] of any numeric type; M is O x D (or one number: that multiple of the
 * identity), T has O values (or one for all); MT gives both as O x (D + 1). Sums are
 * in float32 in the order (M[i][0] x0 + M[i][1] x1 + ...) + T[i] (DALI's rounding);
 * integer outputs round half away from zero and saturate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/box_math.h"
#include "../cuda/api_boxes.h"
#include "gpu_util.h"
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

#define MAX_DIM STK__CT_MAX_DIM

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

/* Checks a sample's points ([N, D] or a flat list) and reads its map; *n gets N. */
static stk_status read_affine(stk__node *node, stk__sample *s, const stk__tensor *in, affine *a,
                              int64_t *n) {
  if (in->ndim < 1 || in->ndim > 2 || !stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects points [N, D]; got %d dimensions",
                      in->ndim);
  int64_t d64 = in->ndim == 2 ? in->shape[1] : 1;
  *n = in->shape[0];
  if (d64 < 1 || d64 > MAX_DIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "points of %lld coordinates (1..%d)",
                      (long long)d64, MAX_DIM);
  *a = (affine){.d = (int)d64};
  if (stk__arg_given(node, A_MT) && (stk__arg_given(node, A_M) || stk__arg_given(node, A_T)))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "give MT, or M and T, not both");
  return stk__arg_given(node, A_MT) ? from_mt(node, s, a->d, a) : from_m_t(node, s, a->d, a);
}

static stk_status ct_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  affine a;
  int64_t n;
  STK_TRY(read_affine(node, s, in, &a, &n));
  float *x = stk__scratch(s, (size_t)(n * a.d + n * a.o + 1) * sizeof *x), *y = x + n * a.d;
  if (!x) return STK_ERR_OUT_OF_MEMORY;
  stk__convert(x, STK_DTYPE_FLOAT32, in->data, in->dtype, (size_t)(n * a.d));
  for (int64_t p = 0; p < n; p++)
    stk__coord_transform_one(a.m, a.t, a.o, a.d, x + p * a.d, y + p * a.o);
  int64_t shape[2] = {n, a.o};
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, A_DTYPE));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, 2, shape, NULL, &out));
  stk__convert(out->data, dt, y, STK_DTYPE_FLOAT32, (size_t)(n * a.o));
  return STK_OK;
}

/* GPU: float32 points to float32 points, one launch for the batch (src/cuda/boxes.cu). */
static stk_status ct_plan_gpu(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                              stk_gpu_coord_transform_sample *cs, int64_t *shapes) {
  if (stk_tensor_list_dtype(in) != STK_DTYPE_FLOAT32 ||
      stk__dtype_arg(stk__arg_string(node, A_DTYPE)) != STK_DTYPE_FLOAT32)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: on the GPU, points and output must be float32",
                    stk__node_name(node));
  for (size_t i = 0; i < stk__gpu_batch_size(b); i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    stk__tensor t = {d.data, d.ndim, {0}, d.dtype, {0}};
    memcpy(t.shape, d.shape, sizeof t.shape);
    affine a;
    int64_t n;
    STK_TRY(read_affine(node, stk__gpu_sample(b, i), &t, &a, &n));
    cs[i] = (stk_gpu_coord_transform_sample){d.data, NULL, n, a.o, a.d, {0}, {0}};
    memcpy(cs[i].m, a.m, sizeof a.m);
    memcpy(cs[i].t, a.t, sizeof a.t);
    shapes[2 * i] = n, shapes[2 * i + 1] = a.o;
  }
  return STK_OK;
}

static stk_status ct_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_coord_transform_sample *cs = stk__calloc(n ? n : 1, sizeof *cs, "a transform plan");
  int64_t *shapes = stk__calloc(2 * (n ? n : 1), sizeof *shapes, "shapes");
  stk_status st = cs && shapes ? ct_plan_gpu(node, b, in, cs, shapes) : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, 2, shapes, NULL,
                             stk__gpu_shapes_equal(shapes, n, 2), &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      cs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    int rc = stk_gpu_run_coord_transform(g->api, g->ctx, (int)n, cs, NULL, stk__gpu_stream(b), err,
                                         sizeof err);
    st = stk__gpu_op_check(node, rc, err);
  }
  free(cs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema coord_transform_schema = {
    .name = "coord_transform",
    .doc =
        "Applies an affine map to points: out = M x + T (DALI's coord_transform), e.g. to "
        "move keypoints or polygon vertices with the image transform that made them. On the "
        "GPU: float32 points and output.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = ct_in,
    .num_outputs = 1,
    .outputs = ct_out,
    .num_args = A_COUNT_,
    .args = coord_transform_args,
    .gpu_check =
        "p = constant(fdata=[0.1, 0.2, 0.6, 0.9, 1.5, -0.2, 0.25, 0.75], shape=[4, 2])\n"
        "a = random.uniform(range=[-2.0, 2.0], shape=[6])\n"
        "return coord_transform(p, MT=a, device=@)",
};
const stk__op_def stk__op_coord_transform = {
    .schema = &coord_transform_schema, .run_sample = ct_run, .run_gpu = ct_run_gpu};
