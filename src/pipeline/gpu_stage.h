/*
 * The GPU stage, the executor's side: opening the device runtime (libstoker_cuda.so,
 * loaded at run time; the CPU library never links CUDA), the batch as the stage holds it,
 * and running the stage. What operators see of it is src/ops/op_gpu.h.
 */
#ifndef STOKER_PIPELINE_GPU_STAGE_H
#define STOKER_PIPELINE_GPU_STAGE_H

#include "../ops/op_gpu.h"

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

/* A batch in the GPU stage (operators reach it through op_gpu.h's accessors). */
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
