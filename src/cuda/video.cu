/* The GPU video decoders' conversion (api_video.h): NV12 / P016 frames to RGB, one thread
 * per output pixel, the per-pixel code of src/shared/video_yuv.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api_video.h"
#include "gpu_internal.h"
#include "gpu_kernels.h"
#include "launch.cuh"

#define V_THREADS 256

__global__ void __launch_bounds__(V_THREADS)
    video_nv12_rgb_kernel(const stk_gpu_video_frame *F, const int *first, int n, int out_float,
                          float scale) {
  int b = blockIdx.x, fi = stk_find_sample(first, n, b);
  const stk_gpu_video_frame &f = F[fi];
  int64_t px = (int64_t)(b - first[fi]) * V_THREADS + threadIdx.x;
  if (px >= (int64_t)f.width * f.height) return;
  int y = (int)(px / f.width), x = (int)(px - (int64_t)y * f.width);
  uint8_t rgb[3];
  if (f.src.luma) {
    stk_nv12_to_rgb(&f.src, x, y, rgb);
  } else {
    for (int c = 0; c < 3; c++) rgb[c] = stk_nv12_u8(f.fill[c]);
  }
  if (out_float) {
    float *d = (float *)f.dst + px * 3;
    for (int c = 0; c < 3; c++) d[c] = (float)rgb[c] * scale;
  } else {
    uint8_t *d = (uint8_t *)f.dst + px * 3;
    for (int c = 0; c < 3; c++) d[c] = rgb[c];
  }
}

static int video_check(int n, const stk_gpu_video_frame *frames, char *err, size_t errlen) {
  for (int i = 0; i < n; i++) {
    const stk_gpu_video_frame *f = &frames[i];
    bool bad = f->width < 0 || f->height < 0 || (!f->dst && f->width && f->height);
    if (f->src.luma)
      bad = bad || !f->src.chroma || f->src.width != f->width || f->src.height != f->height ||
            (f->src.bytes_per_sample != 1 && f->src.bytes_per_sample != 2);
    if (bad)
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "frame %d: NULL pointer, negative size, a source of another size or "
                      "%d bytes per sample",
                      i, f->src.bytes_per_sample);
  }
  return 0;
}

int stk_gpu_k_video_nv12_rgb(stk_gpu_ctx *ctx, int n, const stk_gpu_video_frame *frames,
                             const stk_gpu_video_args *args, uintptr_t stream, char *err,
                             size_t errlen) {
  if (n < 0 || (n > 0 && !frames) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  STK_TRY_INT(video_check(n, frames, err, errlen));
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t rec = sizeof(stk_gpu_video_frame) * (size_t)n, bytes = rec + sizeof(int) * (size_t)(n + 1);
  char *host = (char *)malloc(bytes);
  int64_t *blocks = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  int rc = host && blocks ? 0 : GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for %d frames", n);
  if (rc == 0) {
    memcpy(host, frames, rec);
    for (int i = 0; i < n; i++)
      blocks[i] = stk_cdiv((int64_t)frames[i].width * frames[i].height, V_THREADS);
    rc = stk_block_table(blocks, n, (int *)(host + rec), err, errlen);
  }
  int total = rc == 0 ? ((int *)(host + rec))[n] : 0;
  if (rc == 0 && total > 0)
    rc = stk_upload_and_launch(
        ctx, host, bytes, stream, "video_nv12_rgb", err, errlen, [&](const char *dp) {
          video_nv12_rgb_kernel<<<total, V_THREADS, 0, (cudaStream_t)stream>>>(
              (const stk_gpu_video_frame *)dp, (const int *)(dp + rec), n, args->out_float,
              args->scale);
          return 0;
        });
  free(host);
  free(blocks);
  return rc;
}
