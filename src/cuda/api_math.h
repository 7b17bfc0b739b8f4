/* The GPU entry points for elementwise arithmetic and friends: math.*, cast_like, one_hot.
 * Reached through stk_gpu_api.math (gpu_api.h); implemented in src/cuda/math.cu. The same
 * conventions as gpu_api.h: every function returns 0 or a stk_status with the message in
 * err, queues its work on `stream` and never synchronises unless it says so. */
#ifndef STOKER_CUDA_API_MATH_H
#define STOKER_CUDA_API_MATH_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct stk_gpu_math_api {
  int version; /* 1 */
};

#ifdef __cplusplus
}
#endif

#endif
