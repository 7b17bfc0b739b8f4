/* Launch plumbing shared by the kernel files: a batch's samples get consecutive ranges of
 * thread blocks (first[i] = the first block of sample i, first[n] = the total), a block
 * finds its sample by binary search, the per-sample descriptors are uploaded once per
 * launch, and every launch is checked. */
#ifndef STOKER_CUDA_LAUNCH_CUH
#define STOKER_CUDA_LAUNCH_CUH

#include <stdint.h>

#include "gpu_internal.h"
#include "../shared/block_owner.h"

/* The sample owning block b: the last i with first[i] <= b. */
static __device__ __forceinline__ int stk_find_sample(const int *first, int n, int b) {
  return stk_block_owner(first, n, b);
}

/* Fills first[0..n] from per-sample block counts; fails beyond 2^31 - 1 blocks. */
static inline int stk_block_table(const int64_t *blocks, int n, int *first, char *err,
                                  size_t errlen) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    first[i] = (int)total;
    total += blocks[i];
    if (total > INT32_MAX)
      return GPU_FAIL(STK_ERR_LIMIT, "batch needs more than 2^31 thread blocks");
  }
  first[n] = (int)total;
  return 0;
}

/* cudaGetLastError after a launch, as a status naming `what`. */
static inline int stk_check_launch(const char *what, char *err, size_t errlen) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return stk_gpu_fail(err, errlen, STK_ERR_DEVICE, what, "kernel launch failed: %s (%s)",
                        cudaGetErrorString(e), cudaGetErrorName(e));
  return 0;
}

static inline int64_t stk_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The "upload the batch's descriptors, launch, check, free" sequence of the kernel entry
 * points: `host` (`bytes`) goes to a stream-ordered device block through pinned staging,
 * launch(block) queues the kernel(s) on the stream and returns a status, the launch is
 * checked as `what`, and the block is freed once the stream has passed it. */
template <class Launch>
static int stk_upload_and_launch(stk_gpu_ctx *ctx, const void *host, size_t bytes, uintptr_t stream,
                                 const char *what, char *err, size_t errlen, Launch launch) {
  void *dp = NULL;
  int rc = stk_gpu_upload(ctx, host, bytes, (cudaStream_t)stream, &dp, err, errlen);
  if (rc == 0) rc = launch((const char *)dp);
  if (rc == 0) rc = stk_check_launch(what, err, errlen);
  if (dp) stk_gpu_device_free(ctx, dp, stream, NULL, 0);
  return rc;
}

#endif
