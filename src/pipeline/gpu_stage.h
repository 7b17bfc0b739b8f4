/*
 * The GPU stage: what mixed and GPU operators see, and the device runtime the executor
 * loads at run time (libstoker_cuda.so, through the function table of
 * src/cuda/gpu_api.h). The CPU library never links CUDA.
 *
 * After the CPU stage of a batch, the executor runs every mixed/GPU operator once for
 * the whole batch, in graph order, on the pipeline's compute stream: `run_gpu` reads its
 * inputs as tensor lists (host lists for CPU edges, device lists for GPU edges), reads
 * per-sample arguments through stk__gpu_sample(b, i), and hands its outputs over with
 * stk__gpu_output. Device memory comes from the context's stream-ordered pool and goes
 * back to it when the last reference to a list is dropped, after the consumer's stream
 * has passed the point where it released the list.
 */
#ifndef STOKER_PIPELINE_GPU_STAGE_H
#define STOKER_PIPELINE_GPU_STAGE_H

#include <stdatomic.h>

#include "../cuda/gpu_api.h"
#include "../ops/op.h"

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

/* Loads libstoker_cuda.so ($STK_CUDA_LIBRARY, then beside the stoker library, then the
 * loader's search path) and opens `device`, with `decode_threads` host threads for
 * nvJPEG's hybrid path (the pipeline's num_threads). Errors are STK_ERR_DEVICE naming why. */
stk_status stk__gpu_open(int device, int decode_threads, int64_t wait_timeout_ms, stk__gpu **out);
void stk__gpu_retain(stk__gpu *gpu);
/* Page-locks the host pool's future blocks through this device (the encoded files the
 * mixed decoders read: nvJPEG's hardware call took 7.3-8.2 ms per batch of 256 from
 * pinned memory against 10.8-16.9 ms from pageable memory on the H100, bench/RESULTS.md
 * 2026-11-25), from page-locked slabs. The pool holds a reference to the device. */
void stk__gpu_pin_pool(stk__gpu *gpu, stk__pool *pool);
void stk__gpu_release(stk__gpu *gpu);
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
stk_status stk__gpu_alloc_list_idle(stk__gpu_batch *b, stk_dtype dtype, int ndim, const int64_t *shapes,
                                    const char *layout, bool dense, stk_tensor_list **out);
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

/* ---- for the executor ---- */
struct stk__gpu_batch {
  stk_pipeline *p;
  size_t n;
  stk__sample *samples;
  stk_tensor_list **lists; /* per edge: this batch's list, or NULL */
  stk__node *node;
  uintptr_t stream; /* where the operators queue their work; 0: the compute stream */
  /* the samples rejected in the GPU stage and why (n each, the job's; NULL in a
   * conditional branch's sub-batch: no rejection there) */
  bool *rejected;
  char **reject_messages;
};
/* Under on_error="skip", a data error of sample i found in the GPU stage (a JPEG whose
 * header nvJPEG accepted but which the CPU decoder then refuses) rejects the sample
 * instead of failing the batch: after the stage the executor gives its place to a copy of
 * another sample of the batch, and counts it as skipped. Returns STK_OK when the sample
 * was rejected, else `st` (the error stands: policy "error", not a data error, or a
 * sub-batch). The message is the calling thread's last error. */
stk_status stk__gpu_reject_sample(stk__gpu_batch *b, size_t i, stk_status st);
/* The GPU stage's parts: the mixed operators prepared in the CPU stage (the decoders),
 * which may run on their own thread one batch ahead, and the rest. */
typedef enum { STK__GPU_PART_ALL, STK__GPU_PART_DECODE, STK__GPU_PART_REST } stk__gpu_part;
stk_status stk__gpu_run_stage(stk__gpu_batch *b, stk__gpu_part part);
/* A pipeline output leaving the GPU stage: an error if some sample has no value (a
 * variable assigned in some branches only); a merge of branches (a view) with equal
 * shapes is gathered into one dense block, so it leaves as one batch tensor. */
stk_status stk__gpu_finalize_output(stk__gpu *gpu, stk_tensor_list **tl, const char *name);
/* Marks device outputs ready: records an event after the last kernel. */
stk_status stk__gpu_mark_ready(stk__gpu *gpu, stk_tensor_list *tl);

#endif
