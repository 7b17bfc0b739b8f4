/* The GPU entry points for colour operators: brightness/contrast/saturation/hue/hsv/color_twist/grayscale/invert/posterize/solarize(_add)/equalize/auto_contrast/sharpness/color_space_conversion.
 * Reached through stk_gpu_api.color (gpu_api.h); implemented in src/cuda/color.cu. The same
 * conventions as gpu_api.h: every function returns 0 or a stk_status with the message in
 * err, queues its work on `stream` and never synchronises unless it says so. */
#ifndef STOKER_CUDA_API_COLOR_H
#define STOKER_CUDA_API_COLOR_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct stk_gpu_color_api {
  int version; /* 1 */
};

#ifdef __cplusplus
}
#endif

#endif
