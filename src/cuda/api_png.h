/* The GPU PNG decoder (src/cuda/png.cu), reached through stk_gpu_api.png (gpu_api.h).
 * The host plans each file (src/ops/png_plan.h: chunks, CRCs, IHDR / PLTE) and
 * gathers its IDAT payloads; the device inflates each zlib stream (one warp per stream:
 * lane 0 decodes, the lanes sum the Adler-32), unfilters the rows (one block per image,
 * rows in order, the bytes of a row in parallel where the filter allows) and expands
 * the pixels (bit depth, palette, Adam7, colour) into the caller's HWC uint8 buffers.
 * The per-row and per-pixel code is src/shared/inflate.h and png_common.h, which the
 * CPU tests run too. The same conventions as gpu_api.h. */
#ifndef STOKER_CUDA_API_PNG_H
#define STOKER_CUDA_API_PNG_H

#include "gpu_api.h"
#include "../shared/png_common.h" /* stk_png_header */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const uint8_t *zdata; /* host: the zlib stream (the IDAT payloads, in order) */
  size_t zsize;
  stk_png_header hdr;
  /* region of the stored image to write; roi_w <= 0 or roi_h <= 0: the whole image */
  int roi_x, roi_y, roi_w, roi_h;
  uint8_t *dst; /* device: (region) height rows of width * channels bytes */
  size_t dst_pitch;
} stk_gpu_png_sample;

/* png_decode's batch arguments: the output colour (STK_GPU_COLOR_*) and a host array of n
 * statuses the call fills (see below). */
typedef struct {
  int color;
  int *status;
} stk_gpu_png_args;

/* The kernel:
 * - png_decode: decodes n PNGs in args->color (STK_GPU_COLOR_*) on `stream`.
 *   args->status[i] (host) receives STK_GPU_DECODE_OK, or STK_GPU_DECODE_FAILED when the
 *   stream, a filter type or a palette index was bad (dst holds garbage: the CPU decoder
 *   gives the verdict). The call waits (bounded by the context's wait_timeout_ms) until
 *   the device has decoded the batch, to know the statuses; the destinations are written
 *   in stream order. The return value is an error only for bad arguments or device
 *   failures.
 */
#define STK_GPU_KERNELS_PNG(X) X(PNG_DECODE, png_decode, stk_gpu_png_sample, stk_gpu_png_args)

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_API_PNG_H */
