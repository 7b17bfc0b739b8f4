/* Batch-level operators (STK_OPF_BATCH): batch_permutation draws a permutation of the
 * batch, permute_batch gathers samples by index (DALI's). Output sample i reads input
 * sample j, so the CPU executor runs them at a batch barrier (stk__op_def.run_batch). */
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "image_util.h"

/* ---- batch_permutation ---- */

enum { BP_ALLOW_REPETITIONS, BP_NO_FIXED_POINTS, BP_SEED, BP_COUNT_ };

static const stk_arg_schema permutation_args[] = {
    [BP_ALLOW_REPETITIONS] = {.name = "allow_repetitions",
                              .type = STK_ARG_BOOL,
                              .default_text = "false",
                              .doc = "true: each index is drawn independently (repetitions and "
                                     "omissions allowed)"},
    [BP_NO_FIXED_POINTS] = {.name = "no_fixed_points",
                            .type = STK_ARG_BOOL,
                            .default_text = "false",
                            .doc = "true: out[i] != i for every i (ignored for a batch of one)"},
    [BP_SEED] = {.name = "seed",
                 .type = STK_ARG_INT,
                 .default_text = "-1",
                 .doc = "random seed (-1: derived from the pipeline's seed and the name)"},
};
STK__CHECK_ARGS(permutation_args, BP_COUNT_);

static const stk_port_schema permutation_out[] = {
    {"output", "int32 scalar per sample: the index of the sample it takes (for permute_batch)"}};

/* A uniformly random permutation of 0..n-1 (Fisher-Yates); with no_fixed_points, drawn
 * again until it has none (a uniform derangement; about e draws on average). */
static void draw_permutation(stk__philox *g, int32_t *idx, size_t n, bool no_fixed) {
  for (bool ok = false; !ok;) {
    for (size_t i = 0; i < n; i++) idx[i] = (int32_t)i;
    for (size_t i = n; i > 1; i--) {
      size_t j = (size_t)stk__philox_below(g, i);
      int32_t t = idx[i - 1];
      idx[i - 1] = idx[j];
      idx[j] = t;
    }
    ok = true;
    for (size_t i = 0; no_fixed && i < n; i++) ok &= idx[i] != (int32_t)i;
  }
}

/* Independent draws, each (with no_fixed_points) among the n - 1 others. */
static void draw_with_repetitions(stk__philox *g, int32_t *idx, size_t n, bool no_fixed) {
  for (size_t i = 0; i < n; i++) {
    if (!no_fixed) {
      idx[i] = (int32_t)stk__philox_below(g, n);
      continue;
    }
    size_t j = (size_t)stk__philox_below(g, n - 1);
    idx[i] = (int32_t)(j >= i ? j + 1 : j);
  }
}

static stk_status permutation_run(stk__node *node, stk__batch *b) {
  size_t n = stk__batch_size(b);
  if (n == 0) return STK_OK;
  int32_t *idx = stk__scratch(stk__batch_sample(b, 0), n * sizeof *idx);
  if (!idx) return STK_ERR_OUT_OF_MEMORY;
  stk__philox g;
  stk__batch_rng(node, stk__batch_sample(b, 0), &g);
  bool no_fixed = stk__arg_bool(node, NULL, BP_NO_FIXED_POINTS) && n > 1;
  if (stk__arg_bool(node, NULL, BP_ALLOW_REPETITIONS))
    draw_with_repetitions(&g, idx, n, no_fixed);
  else
    draw_permutation(&g, idx, n, no_fixed);
  for (size_t i = 0; i < n; i++) {
    stk__tensor *out;
    STK_TRY(stk__output(stk__batch_sample(b, i), 0, STK_DTYPE_INT32, 0, NULL, NULL, &out));
    *(int32_t *)out->data = idx[i];
  }
  return STK_OK;
}

static const stk_op_schema permutation_schema = {
    .name = "batch_permutation",
    .doc =
        "Draws a random permutation of the batch (one int32 index per sample), once per "
        "batch, for permute_batch. Keyed by the batch's first sample: the same on every "
        "thread count.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM | STK_OPF_NO_INPUT | STK_OPF_BATCH,
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = 1,
    .outputs = permutation_out,
    .num_args = BP_COUNT_,
    .args = permutation_args,
};
const stk__op_def stk__op_batch_permutation = {
    .schema = &permutation_schema,
    .run_batch = permutation_run,
};

/* ---- permute_batch ---- */

enum { PB_INDICES, PB_COUNT_ };

static const stk_arg_schema permute_args[] = {
    [PB_INDICES] = {.name = "indices",
                    .type = STK_ARG_INTS,
                    .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                    .doc = "a list with one index per sample of the batch, or fed per sample "
                           "(a scalar each, e.g. from batch_permutation): output i is input "
                           "indices[i]; each in [0, batch size)"},
};
STK__CHECK_ARGS(permute_args, PB_COUNT_);

static const stk_port_schema permute_in[] = {{"input", "any tensor"}};
static const stk_port_schema permute_out[] = {{"output", "out[i] = input[indices[i]]"}};

/* The index output sample i takes, checked against the batch's size. */
static stk_status source_index(stk__node *node, stk__sample *s, size_t i, size_t n, size_t *j) {
  int64_t v;
  if (stk__arg_is_fed(node, PB_INDICES)) {
    v = stk__arg_int(node, s, PB_INDICES);
  } else {
    const int64_t *list;
    size_t count = stk__arg_ints(node, s, PB_INDICES, &list);
    if (count != n)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "'indices' has %zu values but the batch has %zu samples", count, n);
    v = list[i];
  }
  if (v < 0 || (uint64_t)v >= n)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'indices' is %lld, outside [0, %zu) (the batch's samples)", (long long)v, n);
  *j = (size_t)v;
  return STK_OK;
}

static size_t tensor_bytes(const stk__tensor *t) {
  size_t bytes = stk_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) bytes *= (size_t)t->shape[d];
  return bytes;
}

static stk_status permute_run(stk__node *node, stk__batch *b) {
  size_t n = stk__batch_size(b);
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = stk__batch_sample(b, i);
    size_t j;
    STK_TRY(source_index(node, s, i, n, &j));
    const stk__tensor *in = stk__input(stk__batch_sample(b, j), 0);
    stk__tensor *out;
    STK_TRY(stk__output(s, 0, in->dtype, in->ndim, in->shape, in->layout, &out));
    size_t bytes = tensor_bytes(in);
    if (bytes) memcpy(out->data, in->data, bytes);
  }
  return STK_OK;
}

/* GPU: the gathered shapes, then one device-to-device copy per sample. */
static stk_status permute_plan_gpu(stk__node *node, stk__gpu_batch *b, stk_tensor_list *in,
                                   size_t *src, int64_t *shapes) {
  size_t n = stk__gpu_batch_size(b);
  int ndim = stk_tensor_list_ndim(in);
  for (size_t i = 0; i < n; i++) {
    STK_TRY(source_index(node, stk__gpu_sample(b, i), i, n, &src[i]));
    stk_tensor_desc d;
    stk_tensor_list_sample(in, src[i], &d);
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
  }
  return STK_OK;
}

static stk_status permute_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  size_t *src = stk__calloc(n ? n : 1, sizeof *src, "permutation");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(ndim ? ndim : 1), sizeof *shapes, "shapes");
  stk_status st =
      src && shapes ? permute_plan_gpu(node, b, in, src, shapes) : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  stk__gpu *g = stk__gpu_device(b);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc s, d;
    stk_tensor_list_sample(in, src[i], &s);
    stk_tensor_list_sample(out, i, &d);
    size_t bytes = stk_dtype_size(s.dtype);
    for (int k = 0; k < s.ndim; k++) bytes *= (size_t)s.shape[k];
    char err[STK_GPU_ERRLEN] = "";
    if (bytes)
      st = stk__gpu_op_check(
          node,
          g->api->memcpy_async(g->ctx, d.data, s.data, bytes, stk__gpu_stream(b), err, sizeof err),
          err);
  }
  free(src);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema permute_schema = {
    .name = "permute_batch",
    .doc =
        "Gathers samples by index: output sample i is a copy of input sample indices[i] "
        "(repetitions and omissions allowed). With batch_permutation it pairs every sample "
        "with another one of its batch (the MixUp recipe in docs/python.md).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_BATCH,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = permute_in,
    .num_outputs = 1,
    .outputs = permute_out,
    .num_args = PB_COUNT_,
    .args = permute_args,
    .gpu_check =
        "idx = batch_permutation()\n"
        "return permute_batch(IN, indices=idx, device=@)",
};
const stk__op_def stk__op_permute_batch = {
    .schema = &permute_schema,
    .run_batch = permute_run,
    .run_gpu = permute_run_gpu,
};
