/* The GPU kernel of decoders.inflate (src/cuda/inflate.cu): n compressed chunks, each
 * inflated by one thread into its own destination with src/shared/lz4.h or
 * src/shared/inflate.h (stk_inflate_any), the very code the CPU operator's tests run.
 * The same conventions as gpu_api.h. */
#ifndef STOKER_CUDA_API_INFLATE_H
#define STOKER_CUDA_API_INFLATE_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One chunk: src_size compressed bytes at src, which must inflate to exactly dst_size
 * bytes at dst (both device memory). */
typedef struct {
  const uint8_t *src;
  uint64_t src_size;
  uint8_t *dst;
  uint64_t dst_size;
} stk_gpu_inflate_sample;

enum { STK_GPU_INFLATE_LZ4 = 0, STK_GPU_INFLATE_DEFLATE = 1 };

/* inflate's batch arguments: the algorithm (STK_GPU_INFLATE_*) and a host array of n
 * statuses the call fills: STK_GPU_DECODE_OK, or STK_GPU_DECODE_FAILED for a chunk that is
 * not a valid stream of exactly dst_size bytes (its destination then holds garbage). */
typedef struct {
  int algorithm;
  int *status;
} stk_gpu_inflate_args;

/* The kernel:
 * - inflate: the n chunks on `stream`; the call waits (bounded by the context's
 *   wait_timeout_ms) until the device is done, to know the statuses. The return value is
 *   an error only for bad arguments or device failures.
 */
#define STK_GPU_KERNELS_INFLATE(X) X(INFLATE, inflate, stk_gpu_inflate_sample, stk_gpu_inflate_args)

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_API_INFLATE_H */
