/* "constant": the same tensor for every sample (DALI's fn.constant). The Python layer
 * makes one when a literal meets a data node, e.g. `x = 0` in one branch of an `if` on
 * a data node and `x = image_mean` in the other. The tensor is converted once at build
 * time; each sample copies it (samples own their outputs). */
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "image_util.h"
#include "op.h"

enum { K_FDATA, K_IDATA, K_SHAPE, K_DTYPE, K_LAYOUT, CONSTANT_ARGS_COUNT_ };
static const stk_arg_schema constant_args[] = {
    [K_FDATA] = {.name = "fdata",
                 .type = STK_ARG_FLOATS,
                 .doc = "the values as floats (give fdata or idata), row-major; one value fills "
                        "the whole shape"},
    [K_IDATA] = {.name = "idata",
                 .type = STK_ARG_INTS,
                 .doc = "the values as integers (give fdata or idata), row-major; one value fills "
                        "the whole shape"},
    [K_SHAPE] =
        {.name = "shape",
         .type = STK_ARG_INTS,
         .doc =
             "the shape of the tensor; [] is a scalar; when absent, 1D with one element per value"},
    [K_DTYPE] =
        {.name = "dtype",
         .type = STK_ARG_STRING,
         .choices =
             "bool|uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64",
         .doc = "element type; float32 for fdata and int32 for idata when absent"},
    [K_LAYOUT] = {.name = "layout",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "layout of the tensor"},
};
STK__CHECK_ARGS(constant_args, CONSTANT_ARGS_COUNT_);
static const stk_port_schema constant_out[] = {{"value", "the constant tensor"}};

typedef struct {
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  size_t bytes;
  void *data;
} constant_state;

/* The shape: the `shape` argument, or [count]. Checks it against the value count. */
static stk_status constant_shape(stk__node *node, size_t count, constant_state *k) {
  if (!stk__arg_given(node, K_SHAPE)) {
    k->ndim = 1;
    k->shape[0] = (int64_t)count;
    return STK_OK;
  }
  const int64_t *shape;
  size_t ndim = stk__arg_ints(node, NULL, K_SHAPE, &shape);
  if (ndim > STK_MAX_NDIM)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: shape has %zu dimensions, at most %d",
                    stk__node_name(node), ndim, STK_MAX_NDIM);
  int64_t n = 1;
  for (size_t d = 0; d < ndim; d++) {
    if (shape[d] < 0 || (shape[d] > 0 && n > INT64_MAX / shape[d]))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: shape[%zu] = %lld is invalid",
                      stk__node_name(node), d, (long long)shape[d]);
    n *= shape[d];
    k->shape[d] = shape[d];
  }
  k->ndim = (int)ndim;
  if ((size_t)n != count && count != 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: %zu values do not fill the shape (%lld elements); give one value or "
                    "one per element",
                    stk__node_name(node), count, (long long)n);
  return STK_OK;
}

/* Converts the fdata/idata values into the output dtype, repeating a single value. */
static stk_status constant_fill(stk__node *node, bool is_float, constant_state *k) {
  const double *f = NULL;
  const int64_t *i = NULL;
  size_t count =
      is_float ? stk__arg_floats(node, NULL, K_FDATA, &f) : stk__arg_ints(node, NULL, K_IDATA, &i);
  if (count == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %s is empty", stk__node_name(node),
                    is_float ? "fdata" : "idata");
  STK_TRY(constant_shape(node, count, k));
  size_t n = 1;
  for (int d = 0; d < k->ndim; d++) n *= (size_t)k->shape[d];
  size_t esize = stk_dtype_size(k->dtype);
  k->bytes = n * esize;
  k->data = malloc(k->bytes ? k->bytes : 1);
  if (!k->data)
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory for the constant", stk__node_name(node));
  for (size_t e = 0; e < n; e++) {
    size_t src = count == 1 ? 0 : e;
    if (is_float) {
      stk__store_double(k->data, k->dtype, e, f[src]);
    } else if (k->dtype == STK_DTYPE_INT64 || k->dtype == STK_DTYPE_UINT64) {
      memcpy((char *)k->data + e * esize, &i[src], esize); /* exact beyond 2^53 */
    } else {
      stk__store_double(k->data, k->dtype, e, (double)i[src]);
    }
  }
  return STK_OK;
}

static stk_status constant_init(stk__node *node) {
  bool has_f = stk__arg_given(node, K_FDATA), has_i = stk__arg_given(node, K_IDATA);
  if (has_f == has_i)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: give exactly one of fdata and idata",
                    stk__node_name(node));
  constant_state *k = calloc(1, sizeof *k);
  if (!k) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory", stk__node_name(node));
  k->dtype = stk__arg_given(node, K_DTYPE) ? stk__dtype_arg(stk__arg_string(node, K_DTYPE))
             : has_f                       ? STK_DTYPE_FLOAT32
                                           : STK_DTYPE_INT32;
  stk_status st = constant_fill(node, has_f, k);
  if (st != STK_OK) {
    free(k->data);
    free(k);
    return st;
  }
  *stk__node_state(node) = k;
  return STK_OK;
}

static void constant_destroy(stk__node *node) {
  constant_state *k = *stk__node_state(node);
  if (k) free(k->data);
  free(k);
  *stk__node_state(node) = NULL;
}

static stk_status constant_run(stk__node *node, stk__sample *s) {
  const constant_state *k = *stk__node_state(node);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, k->dtype, k->ndim, k->shape, stk__arg_string(node, K_LAYOUT), &out));
  if (k->bytes) memcpy(out->data, k->data, k->bytes);
  return STK_OK;
}

/* GPU (DALI's constant with device="gpu"): the batch is one dense block; the host
 * repeats the converted tensor n times and one copy uploads it (the pageable source may
 * be freed once the call returns). */
static stk_status constant_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const constant_state *k = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  int64_t *shapes =
      stk__calloc((n ? n : 1) * (size_t)(k->ndim ? k->ndim : 1), sizeof(int64_t), "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++)
    memcpy(shapes + i * (size_t)k->ndim, k->shape, (size_t)k->ndim * sizeof(int64_t));
  stk_tensor_list *out = NULL;
  stk_status st = stk__gpu_alloc_list(b, k->dtype, k->ndim, shapes, stk__arg_string(node, K_LAYOUT),
                                      true, &out);
  free(shapes);
  size_t total = n * k->bytes;
  char *host = st == STK_OK && total ? stk__malloc(total, "the constant batch") : NULL;
  if (st == STK_OK && total && !host) st = STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK && total) {
    for (size_t i = 0; i < n; i++) memcpy(host + i * k->bytes, k->data, k->bytes);
    stk_tensor_desc d0, dl;
    stk_tensor_list_sample(out, 0, &d0);
    stk_tensor_list_sample(out, n - 1, &dl);
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    uintptr_t stream = stk__gpu_stream(b);
    if ((char *)dl.data == (char *)d0.data + (n - 1) * k->bytes) { /* one dense block */
      st = stk__gpu_op_check(
          node, g->api->memcpy_async(g->ctx, d0.data, host, total, stream, err, sizeof err), err);
    } else {
      for (size_t i = 0; i < n && st == STK_OK; i++) {
        stk_tensor_desc d;
        stk_tensor_list_sample(out, i, &d);
        st = stk__gpu_op_check(
            node, g->api->memcpy_async(g->ctx, d.data, k->data, k->bytes, stream, err, sizeof err),
            err);
      }
    }
  }
  free(host);
  return stk__gpu_finish(b, NULL, false, out, st);
}

static const stk_op_schema constant_schema = {
    .name = "constant",
    .doc =
        "The same tensor for every sample (DALI's constant): values from fdata or idata, converted "
        "to "
        "dtype (integers: rounded half away from zero and saturated), in the given shape.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_NO_INPUT,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = 1,
    .outputs = constant_out,
    .num_args = sizeof constant_args / sizeof constant_args[0],
    .args = constant_args,
    .gpu_check =
        "c = constant(fdata=[1.5, -2.0, 3.25, 0.0, 7.0, 8.5], shape=[2, 3], dtype=\"float32\", "
        "device=@)\n"
        "s = shapes(IN, device=@)\n"
        "return c",
};
const stk__op_def stk__op_constant = {.schema = &constant_schema,
                                      .init = constant_init,
                                      .destroy = constant_destroy,
                                      .run_sample = constant_run,
                                      .run_gpu = constant_run_gpu};
