/* The GPU entry points of the tensor toolbox (transpose, slice, pad, cat, stack,
 * element_extract, sequence_rearrange, the copying shape operators, reductions.*,
 * normalize, lookup_table). Launched through gpu_api.h's launch() (ids and typed launchers in
 * gpu_kernels.h); implemented in src/cuda/tensor.cu. The conventions of gpu_api.h: 0 or an
 * stk_status with the message in err, work queued on `stream`, one launch per call for the whole
 * batch.
 *
 * The plans are the structs of src/shared/tensor_common.h, which the CPU operators run
 * element by element with the same functions. */
#ifndef STOKER_CUDA_API_TENSOR_H
#define STOKER_CUDA_API_TENSOR_H

#include "../shared/tensor_common.h"
#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tn_affine's batch arguments. */
typedef struct {
  stk_dtype in_dtype, out_dtype;
  double shift;
} stk_gpu_tn_affine_args;
/* tn_lookup: sample i maps `count` elements src -> dst through `table` (host memory,
 * table_len elements of esize bytes, copied in stream order); values outside the table
 * take dflt (its bytes, esize of them). */
typedef struct {
  const void *src;
  void *dst;
  int64_t count;
} stk_gpu_tn_lookup_sample;
typedef struct {
  stk_dtype in_dtype;
  int esize;
  const void *table;
  int64_t table_len;
  uint64_t dflt;
} stk_gpu_tn_lookup_args;

/* The kernels:
 * - tn_copy: n strided copies with fills (stk_tn_copy_elem); esize 1, 2, 4 or 8. Copies
 *   may write disjoint parts of one output (cat, stack);
 * - tn_reduce: n reductions (stk_tn_reduce_elem), one thread per output element;
 * - tn_affine: n affine passes (stk_tn_affine_elem);
 * - tn_lookup: see its records above.
 */
#define STK_GPU_KERNELS_TENSOR(X)                                \
  X(TN_COPY, tn_copy, stk_tn_copy, stk_gpu_elem_args)            \
  X(TN_REDUCE, tn_reduce, stk_tn_reduce, stk_tn_reduce_args)     \
  X(TN_AFFINE, tn_affine, stk_tn_affine, stk_gpu_tn_affine_args) \
  X(TN_LOOKUP, tn_lookup, stk_gpu_tn_lookup_sample, stk_gpu_tn_lookup_args)

#ifdef __cplusplus
}
#endif

#endif
