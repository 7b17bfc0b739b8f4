/* The GPU entry points of the image effects: water, sphere, jitter,
 * experimental.warp_perspective, experimental.remap, experimental.median_blur / dilate /
 * erode, experimental.debayer, clahe. Launched through gpu_api.h's launch() (ids and typed
 * launchers in gpu_kernels.h); implemented in src/cuda/effects.cu. The same conventions as
 * gpu_api.h: every function returns 0 or a stk_status with the message in err, queues its work on
 * `stream` and never synchronises. Every output element is src/shared/effects_px.h's stk_fx_eval,
 * the function the CPU operators call. */
#ifndef STOKER_CUDA_API_EFFECTS_H
#define STOKER_CUDA_API_EFFECTS_H

#include "../shared/effects_px.h"
#include "../shared/jpeg_emul.h"
#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const void *src; /* device, dense h x w x c */
  void *dst;       /* device, dense out_h x out_w x out_c */
  int h, w, c;
  int out_h, out_w, out_c;
  stk_fx_params p; /* its pointers (remap maps, clahe tables) are device pointers */
} stk_gpu_fx_sample;

/* clahe's tables: tiles_y x tiles_x x (luma ? 1 : c) tables of 256 bytes into `luts`
 * (device), from the histograms of the image padded to whole tiles of th x tw. */
typedef struct {
  const uint8_t *src; /* device, dense h x w x c uint8 */
  uint8_t *luts;
  int h, w, c;
  int tiles_y, tiles_x, th, tw;
  int luma;  /* RGB: equalise the Lab lightness */
  int limit; /* clip limit in pixels per bin (<= 0: none) */
} stk_gpu_clahe_sample;

/* jpeg_compression_distortion (src/shared/jpeg_emul.h): a JPEG round trip of an h x w
 * RGB uint8 image, its intermediate planes in `planes` (stk_je_planes_bytes, device). */
typedef struct {
  const uint8_t *src; /* device, dense h x w x 3 */
  uint8_t *dst;       /* device, dense h x w x 3 */
  uint8_t *planes;
  int h, w;
  uint16_t ql[64], qc[64]; /* quantisation tables (natural order) */
} stk_gpu_jpeg_sample;

/* The kernels:
 * - fx_pixel: n samples of stk_fx_eval; in_dtype, out_dtype: uint8, uint16, int16 or float32;
 * - fx_clahe_luts: the CLAHE tiles' tables;
 * - fx_jpeg_distort: two launches, one thread per 16x16 MCU into the planes, one per
 *   output pixel.
 */
#define STK_GPU_KERNELS_EFFECTS(X)                                       \
  X(FX_PIXEL, fx_pixel, stk_gpu_fx_sample, stk_gpu_io_args)              \
  X(FX_CLAHE_LUTS, fx_clahe_luts, stk_gpu_clahe_sample, stk_gpu_no_args) \
  X(FX_JPEG_DISTORT, fx_jpeg_distort, stk_gpu_jpeg_sample, stk_gpu_no_args)

#ifdef __cplusplus
}
#endif

#endif
