/* Which sample owns thread block b of a batched launch: the launches give each sample a
 * run of consecutive blocks, first[i] being sample i's first (first[] ascending, a sample
 * with no blocks repeating the next one's start). Shared by the CUDA kernels
 * (src/cuda/launch.cuh) and the host runs of the batch layers (jpeg_huffman_batch.h). */
#ifndef STOKER_SHARED_BLOCK_OWNER_H
#define STOKER_SHARED_BLOCK_OWNER_H

#include <stdint.h>

#include "gpu_common.h"

/* The last i in [0, n) with first[i] <= b (binary search; 0 when none is). */
STK_HD int stk_block_owner(const int32_t *first, int n, int64_t b) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (first[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

#endif
