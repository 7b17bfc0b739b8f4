/*
 * What mixed and GPU operators see of the GPU stage (the pipeline implements it, in
 * src/pipeline/gpu.c): the device, the batch's inputs and per-sample contexts, device
 * tensor lists, and the outputs.
 *
 * After the CPU stage of a batch, the executor runs every mixed/GPU operator once for
 * the whole batch, in graph order, on the pipeline's compute stream: `run_gpu` reads its
 * inputs as tensor lists (host lists for CPU edges, device lists for GPU edges), reads
 * per-sample arguments through stk__gpu_sample(b, i), and hands its outputs over with
 * stk__gpu_output. Device memory comes from the context's stream-ordered pool and goes
 * back to it when the last reference to a list is dropped, after the consumer's stream
 * has passed the point where it released the list. The device itself is reached through
 * the table of src/cuda/gpu_api.h (libstoker_cuda.so, loaded at run time); kernels are
 * launched with the typed launchers of src/cuda/gpu_kernels.h (stk_gpu_run_<name>).
 */
#ifndef STOKER_OPS_OP_GPU_H
#define STOKER_OPS_OP_GPU_H

#include <stdatomic.h>

#include "../cuda/gpu_kernels.h"
#include "op.h"

/* A loaded and opened device (reference counted: the pipeline and every device tensor
 * list hold a reference, so lists may outlive their pipeline). */
typedef struct stk__gpu {
  const stk_gpu_api *api;
  stk_gpu_ctx *ctx;
  void *library; /* dlopen handle */
  int device;
  atomic_int refs;
  stk_gpu_device_info info;
} stk__gpu;

typedef struct stk__gpu_batch stk__gpu_batch;

/* Turns an API failure into a status with the API's message. */
stk_status stk__gpu_check(int rc, const char *err);

/* ---- for operators ---- */
size_t stk__gpu_batch_size(const stk__gpu_batch *b);
stk__gpu *stk__gpu_device(const stk__gpu_batch *b);
uintptr_t stk__gpu_stream(const stk__gpu_batch *b);
/* Input `index` of the running operator for the whole batch. */
stk_tensor_list *stk__gpu_input(const stk__gpu_batch *b, int index);
/* The per-sample context of sample i, for per-sample arguments and random streams. */
stk__sample *stk__gpu_sample(const stk__gpu_batch *b, size_t i);
/* The record the running mixed operator's `prepare` wrote for sample i in the CPU stage,
 * or NULL when the operator was not prepared there (stk__op_def.prepare). */
const void *stk__gpu_prep(const stk__gpu_batch *b, size_t i);
/* A device tensor list of n samples with the given per-sample shapes (n * ndim values):
 * one dense block when `dense` (all shapes equal), else one block per sample. */
stk_status stk__gpu_alloc_list(stk__gpu_batch *b, stk_dtype dtype, int ndim, const int64_t *shapes,
                               const char *layout, bool dense, stk_tensor_list **out);
/* The same from the pool of idle memory (api->device_alloc_idle): blocks no queued
 * work touches, for outputs the hardware JPEG engines write. */
stk_status stk__gpu_alloc_list_idle(stk__gpu_batch *b, stk_dtype dtype, int ndim,
                                    const int64_t *shapes, const char *layout, bool dense,
                                    stk_tensor_list **out);
/* The pipeline's device, for work done outside the GPU stage (a mixed operator's
 * prepare); NULL when no operator runs on the device. */
stk__gpu *stk__node_gpu(const stk__node *node);
/* The operator producing input `input_index` of the running operator. */
stk__node *stk__gpu_producer(const stk__gpu_batch *b, int input_index);
/* The only reader of `node`'s output (as a data input; not a pipeline output, not an
 * argument or condition), or NULL. Fusion uses it. */
stk__node *stk__gpu_sole_consumer(const stk__gpu_batch *b, const stk__node *node, int output);
const stk__op_def *stk__node_def(const stk__node *node);
/* Number of conditions guarding `node` (conditional execution; 0: runs on every sample). */
int stk__node_num_guards(const stk__node *node);
unsigned stk__node_device(const stk__node *node);
/* Output `index` of the running operator (takes the reference). */
stk_status stk__gpu_output(stk__gpu_batch *b, int index, stk_tensor_list *tl);

/* Under on_error="skip", a data error of sample i found in the GPU stage (a JPEG whose
 * header nvJPEG accepted but which the CPU decoder then refuses) rejects the sample
 * instead of failing the batch: after the stage the sample leaves the batch (the batch is
 * one shorter) and counts as skipped. Returns STK_OK when the sample
 * was rejected, else `st` (the error stands: policy "error", not a data error, or a
 * sub-batch). The message is the calling thread's last error. */
stk_status stk__gpu_reject_sample(stk__gpu_batch *b, size_t i, stk_status st);

/* A list with the samples of `src` under a new dtype, rank, shapes (n * ndim values) and
 * layout, sharing src's memory (kept alive by the view): the metadata-only operators
 * (reshape, reinterpret, expand_dims, squeeze). The caller checks the byte sizes match. */
stk_status stk__gpu_reshape_view(stk_tensor_list *src, stk_dtype dtype, int ndim,
                                 const int64_t *shapes, const char *layout, stk_tensor_list **out);
#endif /* STOKER_OPS_OP_GPU_H */
