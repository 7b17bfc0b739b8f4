/*
 * Arithmetic of the convolutions (gaussian_blur, laplacian, filter) shared by the CPU
 * (src/ops/filters.c) and the CUDA kernels (src/cuda/filter.cu): the border rule and the
 * multiply-add of one tap. C11 and CUDA C++ (STK_HD).
 *
 * Parity: the CPU computes each output as float32 sums, tap after tap in kernel order,
 * starting from 0 and skipping zero weights (horizontal pass into a float32 temporary,
 * then vertical; laplacian adds its second pair's vertical taps onto the first pair's
 * sums). The GPU kernels follow the same order with the same products and sums, rounded
 * separately (stk_conv_tap: no fused multiply-add), so the float32 results are
 * bit-identical; only the final conversion of float32 to uint8 may differ by 1 on the
 * CPU's scalar tail (it rounds x.5 - 2^-25 differently from its vector body).
 */
#ifndef STOKER_CUDA_FILTER_COMMON_H
#define STOKER_CUDA_FILTER_COMMON_H

#include <stdint.h>

#include "gpu_common.h"

/* i mod n in [0, n). */
STK_HD int64_t stk_conv_wrap(int64_t i, int64_t n) {
  int64_t m = i % n;
  return m < 0 ? m + n : m;
}

/* Where coordinate i of an axis of n >= 1 pixels reads from: an index in [0, n), or -1
 * for the fill value. border: 0 reflect_101, 1 reflect_1001, 2 wrap, 3 clamp, 4 constant
 * (stk__border's values). Reflections and wraps repeat as often as needed. */
STK_HD int64_t stk_conv_border(int64_t i, int64_t n, int border) {
  if (i >= 0 && i < n) return i;
  switch (border) {
  case 4: return -1;
  case 3: return i < 0 ? 0 : n - 1;
  case 2: return stk_conv_wrap(i, n);
  case 1: { /* period 2n: 0..n-1, n-1..0 */
    int64_t m = stk_conv_wrap(i, 2 * n);
    return m < n ? m : 2 * n - 1 - m;
  }
  default: { /* reflect_101, period 2n - 2: 0..n-1, n-2..1 */
    if (n == 1) return 0;
    int64_t m = stk_conv_wrap(i, 2 * n - 2);
    return m < n ? m : 2 * n - 2 - m;
  }
  }
}

/* acc + w * x with both steps rounded to float32. */
STK_HD float stk_conv_tap(float acc, float w, float x) { return STK_FADD(acc, STK_FMUL(w, x)); }

#endif /* STOKER_CUDA_FILTER_COMMON_H */
