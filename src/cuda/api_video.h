/* The GPU video decoders' kernel (src/cuda/video.cu): frames NVDEC decoded (through
 * FFmpeg's CUDA hwaccel, in the host library: src/codecs/video.c) converted to RGB into
 * the output batch. The per-pixel code is src/shared/video_yuv.h, which the CPU tests
 * run against the CPU decoder. The conventions of gpu_api.h. */
#ifndef STOKER_CUDA_API_VIDEO_H
#define STOKER_CUDA_API_VIDEO_H

#include "../shared/video_yuv.h"
#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One output frame: `src` (device planes) converted to dst, height x width x 3 values of
 * the batch's type; src.luma NULL: filled with `fill` (padding frames). */
typedef struct {
  stk_nv12_view src;
  void *dst; /* device */
  int width, height;
  float fill[3];
} stk_gpu_video_frame;

/* video_nv12_rgb's batch arguments: uint8 output, or float32 (the uint8 value times
 * `scale`, as the CPU readers convert). */
typedef struct {
  int out_float;
  float scale;
} stk_gpu_video_args;

/* The kernel:
 * - video_nv12_rgb: n frames (one thread per pixel), on `stream`. The source planes must
 *   be complete when the stream reaches the kernel (the caller orders the decoder's copy
 *   before it) and stay allocated until the stream has passed it.
 */
#define STK_GPU_KERNELS_VIDEO(X) \
  X(VIDEO_NV12_RGB, video_nv12_rgb, stk_gpu_video_frame, stk_gpu_video_args)

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_API_VIDEO_H */
