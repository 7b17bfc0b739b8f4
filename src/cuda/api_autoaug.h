/* The GPU entry points for the fused automatic-augmentation program (auto_augment.apply).
 * Reached through stk_gpu_api.autoaug (gpu_api.h); implemented in src/cuda/autoaug.cu. The same
 * conventions as gpu_api.h: every function returns 0 or a stk_status with the message in
 * err, queues its work on `stream` and never synchronises unless it says so. */
#ifndef STOKER_CUDA_API_AUTOAUG_H
#define STOKER_CUDA_API_AUTOAUG_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct stk_gpu_autoaug_api {
  int version; /* 1 */
};

#ifdef __cplusplus
}
#endif

#endif
