/* The GPU entry points of the tensor toolbox (transpose, slice, pad, cat, stack,
 * element_extract, sequence_rearrange, the copying shape operators, reductions.*,
 * normalize, lookup_table). Reached through stk_gpu_api.tensor (gpu_api.h); implemented
 * in src/cuda/tensor.cu. The conventions of gpu_api.h: 0 or an stk_status with the message
 * in err, work queued on `stream`, one launch per call for the whole batch.
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

struct stk_gpu_tensor_api {
  int version; /* 1 */
  /* n strided copies with fills (stk_tn_copy_elem); esize 1, 2, 4 or 8. Copies may
   * write disjoint parts of one output (cat, stack). */
  int (*copy)(stk_gpu_ctx *ctx, int n, const stk_tn_copy *plans, int esize, uintptr_t stream,
              char *err, size_t errlen);
  /* n reductions (stk_tn_reduce_elem), one thread per output element. */
  int (*reduce)(stk_gpu_ctx *ctx, int n, const stk_tn_reduce *plans, const stk_tn_reduce_args *args,
                uintptr_t stream, char *err, size_t errlen);
  /* n affine passes (stk_tn_affine_elem). */
  int (*affine)(stk_gpu_ctx *ctx, int n, const stk_tn_affine *plans, stk_dtype in_dtype,
                stk_dtype out_dtype, double shift, uintptr_t stream, char *err, size_t errlen);
  /* lookup: sample i maps counts[i] elements src[i] -> dst[i] through `table` (host
   * memory, table_len elements of esize bytes, copied in stream order). */
  int (*lookup)(stk_gpu_ctx *ctx, int n, const void *const *src, void *const *dst,
                const int64_t *counts, stk_dtype in_dtype, int esize, const void *table,
                int64_t table_len, uint64_t dflt, uintptr_t stream, char *err, size_t errlen);
};
typedef struct stk_gpu_tensor_api stk_gpu_tensor_api;

#ifdef __cplusplus
}
#endif

#endif
