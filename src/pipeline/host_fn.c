/* The "python_function" and "dl_tensor_python_function" operators: functions of the host
 * program (the Python binding attaches Python callables) called in three ways:
 *  - per sample, on the worker threads (the default: batch_processing=false on the CPU);
 *  - per batch on the CPU (batch_processing=true): a batch operator, called on the
 *    producer thread once every sample's inputs are ready;
 *  - per batch on the GPU (device "gpu"): called on the GPU stage's thread with the
 *    inputs as device tensor lists; the function's outputs (device memory it owns) are
 *    copied into the pipeline's device memory on the pipeline's stream. Per-sample calls
 *    of a GPU instance are made by the host layer within that one batch call. */
#include <stdlib.h>
#include <string.h>

#include "../ops/gpu_util.h"
#include "internal.h"

#define HOSTFN_MAX_INPUTS 16

struct stk_host_call {
  stk__node *node;
  stk__sample *sample; /* per-sample calls */
  stk__batch *batch;   /* CPU batch calls */
  stk__gpu_batch *gpu; /* device calls */
  stk_tensor_list *lists[HOSTFN_MAX_INPUTS];
  bool owned[HOSTFN_MAX_INPUTS];
  uint64_t outputs_set; /* device calls: the outputs handed over (bit k: output k) */
  char message[512];
};

enum { A_NUM_OUTPUTS, A_BATCH_PROCESSING, A_SYNCHRONIZE_STREAM, A_COUNT_ };

static stk_status hostfn_init(stk__node *node) {
  if (!node->host_fn)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "'%s' has no function attached (stk_pipeline_set_host_function)", node->name);
  return STK_OK;
}

/* The function's error, whose message names the operator (the caller's text). */
static stk_status call_failed(stk_host_call *call, stk_status st) {
  return STK_FAIL(st, "%s", call->message[0] ? call->message : stk_last_error());
}

static stk_status missing_output(const stk__node *node, const stk__sample *s) {
  int k = 0;
  while (k + 1 < node->num_outputs && s->edges[node->out_edges[k]].data) k++;
  return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "function '%s' did not produce output %d", node->name,
                  k);
}

static bool outputs_done(const stk__node *node, const stk__sample *s) {
  for (int k = 0; k < node->num_outputs; k++)
    if (!s->edges[node->out_edges[k]].data) return false;
  return true;
}

static stk_status hostfn_run(stk__node *node, stk__sample *s) {
  stk_host_call call = {.node = node, .sample = s};
  stk_status st = node->host_fn(node->host_user, &call);
  if (st != STK_OK) return call_failed(&call, st); /* the operator is named by the caller */
  return outputs_done(node, s) ? STK_OK : missing_output(node, s);
}

/* batch_processing=true on the CPU: one call for the batch on the producer thread. */
static stk_status hostfn_run_batch(stk__node *node, stk__batch *b) {
  if (stk__batch_size(b) == 0) return STK_OK; /* no sample took this branch */
  stk_host_call call = {.node = node, .batch = b};
  stk_status st = node->host_fn(node->host_user, &call);
  if (st != STK_OK) return call_failed(&call, st);
  for (size_t i = 0; i < stk__batch_size(b); i++) {
    stk__sample *s = stk__batch_sample(b, i);
    if (!outputs_done(node, s)) return stk__wrap(missing_output(node, s), "sample %zu", i);
  }
  return STK_OK;
}

static bool hostfn_batch_when(const stk__node *node) {
  return stk__arg_int(node, NULL, A_BATCH_PROCESSING) != 0;
}

static void release_inputs(stk_host_call *call) {
  for (int i = 0; i < HOSTFN_MAX_INPUTS; i++)
    if (call->owned[i]) stk_tensor_list_release(call->lists[i]);
}

/* Waits for the pipeline's stream (synchronize_stream=true): the function may then read
 * its inputs on any stream. */
static stk_status sync_before_call(stk__node *node, stk__gpu_batch *b) {
  bool has_arg =
      node->spec->def->schema->num_args > A_SYNCHRONIZE_STREAM; /* (not python_function) */
  if (has_arg && !stk__arg_int(node, NULL, A_SYNCHRONIZE_STREAM)) return STK_OK;
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  return stk__gpu_op_check(node, g->api->stream_sync(g->ctx, stk__gpu_stream(b), err, sizeof err),
                           err);
}

/* The outputs_set mask of a call that handed over all n outputs. */
static uint64_t all_outputs(int n) { return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1; }

static stk_status hostfn_run_gpu(stk__node *node, stk__gpu_batch *b) {
  stk_host_call call = {.node = node, .gpu = b};
  stk_status st = STK_OK;
  for (int i = 0; i < node->spec->num_inputs && st == STK_OK; i++)
    st = stk__gpu_device_input(b, i, &call.lists[i], &call.owned[i]);
  if (st == STK_OK) st = sync_before_call(node, b);
  if (st == STK_OK) {
    st = node->host_fn(node->host_user, &call);
    if (st != STK_OK) st = call_failed(&call, st);
  }
  release_inputs(&call);
  if (st == STK_OK && call.outputs_set != all_outputs(node->num_outputs)) {
    int k = 0;
    while (call.outputs_set >> k & 1) k++;
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "function '%s' did not produce output %d", node->name,
                  k);
  }
  return st;
}

static int hostfn_num_outputs(const stk__node *node) {
  return (int)stk__arg_int(node, NULL, A_NUM_OUTPUTS);
}

/* The text form cannot name a host function, so the registry's CPU/GPU parity harness
 * cannot build these operators: they have no gpu_check; their GPU form is tested end to
 * end in tests/python/test_python_function_gpu_fake.py (the CPU stand-in
 * backend) and test_gpu_python_function.py (torch, CuPy on a GPU).
 * python_function lacks synchronize_stream (as in DALI: it always synchronises), so its
 * table ends before A_SYNCHRONIZE_STREAM. */
#define NUM_OUTPUTS_ARG                                                                       \
  {                                                                                           \
    .name = "num_outputs", .type = STK_ARG_INT, .flags = STK_ARGF_RANGE, .default_text = "1", \
    .max = 64, .doc = "number of outputs the function returns"                                \
  }
static const stk_arg_schema hostfn_args[] = {
    [A_NUM_OUTPUTS] = NUM_OUTPUTS_ARG,
    [A_BATCH_PROCESSING] = {.name = "batch_processing",
                            .type = STK_ARG_BOOL,
                            .default_text = "false",
                            .doc = "true: the function is called once per batch with, per input, "
                                   "a list of the batch's samples (NumPy arrays; CuPy arrays on "
                                   "the GPU) and returns a list per output; false: once per "
                                   "sample"},
};
STK__CHECK_ARGS(hostfn_args, A_SYNCHRONIZE_STREAM);
static const stk_arg_schema dlfn_args[] = {
    [A_NUM_OUTPUTS] = NUM_OUTPUTS_ARG,
    [A_BATCH_PROCESSING] = {.name = "batch_processing",
                            .type = STK_ARG_BOOL,
                            .default_text = "false",
                            .doc = "true: the function is called once per batch with, per input, "
                                   "a list of DLPack capsules (one per sample) and returns a list "
                                   "per output; false: once per sample"},
    [A_SYNCHRONIZE_STREAM] = {.name = "synchronize_stream",
                              .type = STK_ARG_BOOL,
                              .default_text = "true",
                              .doc = "device \"gpu\": wait for the pipeline's CUDA stream before "
                                     "the call, so the function may read its inputs on any "
                                     "stream; false only if it queues its work on "
                                     "current_dali_stream()"},
};
STK__CHECK_ARGS(dlfn_args, A_COUNT_);
#undef NUM_OUTPUTS_ARG

/* One entry per possible input, as the schema contract says (max_inputs entries). */
#define HOSTFN_IN(k) \
  { "input" #k, "an array passed to the function as argument " #k }
static const stk_port_schema hostfn_in[HOSTFN_MAX_INPUTS] = {
    HOSTFN_IN(0),  HOSTFN_IN(1),  HOSTFN_IN(2),  HOSTFN_IN(3), HOSTFN_IN(4),  HOSTFN_IN(5),
    HOSTFN_IN(6),  HOSTFN_IN(7),  HOSTFN_IN(8),  HOSTFN_IN(9), HOSTFN_IN(10), HOSTFN_IN(11),
    HOSTFN_IN(12), HOSTFN_IN(13), HOSTFN_IN(14), HOSTFN_IN(15)};
#undef HOSTFN_IN
static const stk_port_schema hostfn_out[] = {{"output", "arrays returned by the function"}};
/* The two operators share everything but their name, doc and argument table. */
#define HOSTFN_SCHEMA(var, opname, docs, argtable)      \
  static const stk_op_schema var = {                    \
      .name = opname,                                   \
      .doc = docs,                                      \
      .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,       \
      .min_inputs = 0,                                  \
      .max_inputs = HOSTFN_MAX_INPUTS,                  \
      .inputs = hostfn_in,                              \
      .num_outputs = -1,                                \
      .outputs = hostfn_out,                            \
      .num_args = sizeof argtable / sizeof argtable[0], \
      .args = argtable,                                 \
  }
#define HOSTFN_DEF(var, sch)             \
  const stk__op_def var = {              \
      .schema = &sch,                    \
      .init = hostfn_init,               \
      .run_sample = hostfn_run,          \
      .run_batch = hostfn_run_batch,     \
      .batch_when = hostfn_batch_when,   \
      .run_gpu = hostfn_run_gpu,         \
      .num_outputs = hostfn_num_outputs, \
  }

HOSTFN_SCHEMA(hostfn_schema, "python_function",
              "Runs a function of the host program (a Python callable from the Python API) on "
              "the inputs: per sample on the worker threads, or once per batch "
              "(batch_processing). On device \"gpu\" the function gets CuPy arrays in device "
              "memory and may return any array with __dlpack__ (CuPy, PyTorch CUDA tensors; "
              "copied on the pipeline's stream); see docs/python.md, \"Python functions\".",
              hostfn_args);
HOSTFN_DEF(stk__op_python_function, hostfn_schema);

/* dl_tensor_python_function: the same host calls; the Python layer hands the function
 * DLPack capsules instead of arrays. */
HOSTFN_SCHEMA(dlfn_schema, "dl_tensor_python_function",
              "Runs a function of the host program on the inputs, passed as DLPack capsules "
              "(DALI's dl_tensor_python_function): per sample, or once per batch "
              "(batch_processing); it returns DLPack capsules or objects with __dlpack__ "
              "(NumPy, PyTorch tensors; on device \"gpu\" device tensors, copied on the "
              "pipeline's stream).",
              dlfn_args);
HOSTFN_DEF(stk__op_dl_tensor_python_function, dlfn_schema);

/* ---- the calls' accessors (stoker.h) ---- */

size_t stk_host_call_num_inputs(const stk_host_call *call) {
  return (size_t)call->node->spec->num_inputs;
}

size_t stk_host_call_batch_size(const stk_host_call *call) {
  if (call->batch) return stk__batch_size(call->batch);
  if (call->gpu) return stk__gpu_batch_size(call->gpu);
  return 0;
}

int stk_host_call_device(const stk_host_call *call) {
  return call->gpu ? stk__gpu_device(call->gpu)->device : -1;
}

uintptr_t stk_host_call_stream(const stk_host_call *call) {
  return call->gpu ? stk__gpu_stream(call->gpu) : 0;
}

/* The per-sample context of sample `i` of a host call (NULL out of range). */
static stk__sample *call_sample(const stk_host_call *call, size_t i) {
  if (call->batch) return i < stk__batch_size(call->batch) ? stk__batch_sample(call->batch, i) : 0;
  return i == 0 && !call->gpu ? call->sample : NULL;
}

static void dense_desc(const stk__tensor *t, stk_tensor_desc *out) {
  memset(out, 0, sizeof *out);
  out->data = t->data;
  out->ndim = t->ndim;
  out->dtype = t->dtype;
  memcpy(out->layout, t->layout, sizeof out->layout);
  int64_t stride = (int64_t)stk_dtype_size(t->dtype);
  for (int d = t->ndim - 1; d >= 0; d--) {
    out->shape[d] = t->shape[d];
    out->strides[d] = stride;
    stride *= t->shape[d];
  }
}

stk_status stk_host_call_sample_input(const stk_host_call *call, size_t sample, size_t index,
                                      stk_tensor_desc *out) {
  if (!call || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (index >= stk_host_call_num_inputs(call))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "input %zu out of range", index);
  if (call->gpu) {
    if (sample >= stk__gpu_batch_size(call->gpu))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu out of range", sample);
    return stk_tensor_list_sample(call->lists[index], sample, out);
  }
  stk__sample *s = call_sample(call, sample);
  if (!s) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu out of range", sample);
  dense_desc(stk__input(s, (int)index), out);
  return STK_OK;
}

stk_status stk_host_call_input(const stk_host_call *call, size_t index, stk_tensor_desc *out) {
  return stk_host_call_sample_input(call, 0, index, out);
}

stk_tensor_list *stk_host_call_input_list(const stk_host_call *call, size_t index) {
  return call->gpu && index < stk_host_call_num_inputs(call) ? call->lists[index] : NULL;
}

stk_status stk_host_call_sample_output(stk_host_call *call, size_t sample, size_t index,
                                       stk_dtype dtype, int ndim, const int64_t *shape,
                                       const char *layout, void **data) {
  if (!call || !data || (ndim > 0 && !shape))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (index >= (size_t)call->node->num_outputs)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output %zu out of range", index);
  if (stk_dtype_size(dtype) == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "bad dtype %d", (int)dtype);
  if (call->gpu)
    return STK_FAIL(STK_ERR_STATE,
                    "a device call's outputs go through "
                    "stk_host_call_set_device_output");
  stk__sample *s = call_sample(call, sample);
  if (!s) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu out of range", sample);
  stk__tensor *t;
  STK_TRY(stk__output(s, (int)index, dtype, ndim, shape, layout, &t));
  *data = t->data;
  return STK_OK;
}

stk_status stk_host_call_output(stk_host_call *call, size_t index, stk_dtype dtype, int ndim,
                                const int64_t *shape, const char *layout, void **data) {
  return stk_host_call_sample_output(call, 0, index, dtype, ndim, shape, layout, data);
}

/* Bytes of a dense sample, or an error naming the sample when it is not dense. */
static stk_status device_sample_bytes(const stk_tensor_desc *d, size_t i, const stk_tensor_desc *s0,
                                      size_t *bytes) {
  if (d->dtype != s0->dtype || d->ndim != s0->ndim)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %zu: %s with %d dims, sample 0: %s with %d dims (one dtype and rank "
                    "per output)",
                    i, stk_dtype_name(d->dtype), d->ndim, stk_dtype_name(s0->dtype), s0->ndim);
  if (d->ndim < 0 || d->ndim > STK_MAX_NDIM || stk_dtype_size(d->dtype) == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu: bad dtype or rank", i);
  size_t n = stk_dtype_size(d->dtype);
  for (int k = d->ndim - 1; k >= 0; k--) {
    if (d->shape[k] < 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu: negative extent", i);
    if (d->shape[k] > 1 && d->strides[k] != (int64_t)n)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "sample %zu is not contiguous (C order); return a contiguous copy", i);
    if (!stk__mul_size(n, (size_t)d->shape[k], &n))
      return STK_FAIL(STK_ERR_LIMIT, "sample %zu: size overflows", i);
  }
  if (n && !d->data) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu has no data", i);
  *bytes = n;
  return STK_OK;
}

static stk_status copy_device_samples(stk_host_call *call, const stk_tensor_desc *samples,
                                      size_t count, stk_tensor_list *out) {
  stk__gpu *g = stk__gpu_device(call->gpu);
  uintptr_t stream = stk__gpu_stream(call->gpu);
  char err[STK_GPU_ERRLEN] = "";
  for (size_t i = 0; i < count; i++) {
    size_t bytes = 0;
    STK_TRY(device_sample_bytes(&samples[i], i, &samples[0], &bytes));
    stk_tensor_desc d;
    STK_TRY(stk_tensor_list_sample(out, i, &d));
    if (bytes)
      STK_TRY(stk__gpu_op_check(
          call->node,
          g->api->memcpy_async(g->ctx, d.data, samples[i].data, bytes, stream, err, sizeof err),
          err));
  }
  /* the sources belong to the caller, free to go once this returns */
  return stk__gpu_op_check(call->node, g->api->stream_sync(g->ctx, stream, err, sizeof err), err);
}

stk_status stk_host_call_set_device_output(stk_host_call *call, size_t index,
                                           const stk_tensor_desc *samples, size_t count,
                                           const char *layout) {
  if (!call) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (!call->gpu) return STK_FAIL(STK_ERR_STATE, "not a device call");
  if (index >= (size_t)call->node->num_outputs)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output %zu out of range", index);
  if (call->outputs_set >> index & 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output %zu given twice", index);
  size_t n = stk__gpu_batch_size(call->gpu);
  if (count != n || (n && !samples))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output %zu: %zu samples for a batch of %zu", index,
                    count, n);
  int ndim = n ? samples[0].ndim : 0;
  if (ndim < 0 || ndim > STK_MAX_NDIM)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output %zu: bad rank %d", index, ndim);
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(ndim ? ndim : 1), sizeof *shapes, "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++)
    memcpy(shapes + i * (size_t)ndim, samples[i].shape, sizeof(int64_t) * (size_t)ndim);
  stk_dtype dtype = n ? samples[0].dtype : STK_DTYPE_UINT8;
  stk_tensor_list *out = NULL;
  stk_status st = stk_dtype_size(dtype)
                      ? STK_OK
                      : STK_FAIL(STK_ERR_INVALID_ARGUMENT, "bad dtype %d", (int)dtype);
  if (st == STK_OK)
    st = stk__gpu_alloc_list(call->gpu, dtype, ndim, shapes, layout ? layout : "",
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  free(shapes);
  if (st == STK_OK) st = copy_device_samples(call, samples, n, out);
  if (st == STK_OK) {
    st = stk__gpu_output(call->gpu, (int)index, out);
    out = NULL;
  }
  if (out) stk_tensor_list_release(out);
  if (st != STK_OK) return stk__wrap(st, "output %zu", index);
  call->outputs_set |= (uint64_t)1 << index;
  return STK_OK;
}

int64_t stk_host_call_ordinal(const stk_host_call *call) {
  if (call->gpu)
    return stk__gpu_batch_size(call->gpu) ? stk__sample_ordinal(stk__gpu_sample(call->gpu, 0)) : -1;
  stk__sample *s = call_sample(call, 0);
  return s ? stk__sample_ordinal(s) : -1;
}

stk_status stk_host_call_fail(stk_host_call *call, const char *message) {
  snprintf(call->message, sizeof call->message, "%s", message ? message : "");
  return STK_ERR_INVALID_ARGUMENT;
}

stk_status stk_pipeline_set_host_function(stk_pipeline *p, const char *op_name, stk_host_fn fn,
                                          void *user, void (*free_user)(void *)) {
  if (!p || !op_name || !fn) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (p->built) return STK_FAIL(STK_ERR_STATE, "attach host functions before build");
  stk__host_reg *r = stk__calloc(1, sizeof *r, "a host function");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  if (!(r->op_name = stk__strdup(op_name))) {
    free(r);
    return STK_ERR_OUT_OF_MEMORY;
  }
  r->fn = fn;
  r->user = user;
  r->free_user = free_user;
  r->next = p->host_regs;
  p->host_regs = r;
  return STK_OK;
}
