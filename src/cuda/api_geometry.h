/* The GPU entry points for geometry and occlusion: rotate, warp_affine, erase, grid_mask.
 * Launched through gpu_api.h's launch() (ids and typed launchers: gpu_kernels.h);
 * implemented in
 * src/cuda/geometry.cu. The same conventions as gpu_api.h: every function returns 0 or a stk_status
 * with the message in err, queues its work on `stream` and never synchronises unless it says so.
 * Each copies its per-sample descriptors into one device array and makes one launch for the batch.
 * (crop runs through gpu_api.h's crop.) */
#ifndef STOKER_CUDA_API_GEOMETRY_H
#define STOKER_CUDA_API_GEOMETRY_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- warp_affine / rotate (src/ops/geometry.h, geometry_px.h) ----
 * Output pixel (x, y) samples the source at m * (x + 0.5, y + 0.5) (edge coordinates)
 * with the CPU's stk__warp_affine arithmetic: nearest, bilinear or Keys cubic (a = -0.5)
 * taps in float32; outside taps read `fill` (constant_border) or the clamped edge pixel.
 * uint8 output: + 0.5, clamp, truncate (the CPU's float32 -> uint8 conversion). */
typedef struct {
  const void *src; /* device HWC image, rows src_pitch bytes apart */
  size_t src_pitch;
  int src_h, src_w;
  void *dst; /* dense dst_h x dst_w x channels */
  int dst_h, dst_w;
  double m[6]; /* output -> input */
  int constant_border;
  float fill[4];      /* per channel, with constant_border */
  uint8_t fill_u8[4]; /* the fill as uint8 (nearest uint8 -> uint8 copies bytes) */
} stk_gpu_warp_sample;

typedef struct {
  int channels;        /* 1..4 */
  stk_dtype in_dtype;  /* UINT8 or FLOAT32 */
  stk_dtype out_dtype; /* UINT8 or FLOAT32 */
  int interp;          /* STK_GPU_INTERP_NEAREST, _LINEAR or _CUBIC */
} stk_gpu_warp_args;

/* ---- erase (src/ops/occlusion.c) ----
 * dst = src, then the elements inside any of the sample's boxes take the fill value. */
#define STK_GPU_ERASE_MAX_NDIM 8
typedef struct {
  int64_t lo[STK_GPU_ERASE_MAX_NDIM], hi[STK_GPU_ERASE_MAX_NDIM]; /* [lo, hi) per dimension */
} stk_gpu_erase_box;

typedef struct {
  const void *src;
  void *dst; /* dense, same shape; must not overlap src */
  int64_t shape[STK_GPU_ERASE_MAX_NDIM];
  const stk_gpu_erase_box *boxes; /* host array of nboxes (clipped to the shape) */
  int nboxes;
  int nfill;        /* 1, or one value per index of fill_axis */
  int fill_axis;    /* the dimension the fill varies along (nfill > 1) */
  uint8_t fill[64]; /* nfill values of esize bytes */
} stk_gpu_erase_sample;

typedef struct {
  int ndim;  /* 1..STK_GPU_ERASE_MAX_NDIM */
  int esize; /* bytes per element: 1, 2, 4 or 8 */
} stk_gpu_erase_args;

/* ---- grid_mask (src/ops/occlusion.c, geometry_px.h: stk_grid_keep) ---- */
typedef struct {
  const void *src;
  void *dst; /* dense h x w pixels of pixel_bytes; must not overlap src */
  int h, w;
  double ca, sa; /* cos and sin of the angle (computed on the host, as the CPU) */
  double shift_x, shift_y, tile, ratio;
} stk_gpu_grid_mask_sample;

/* grid_mask's batch arguments: bytes per pixel (channels x element size). */
typedef struct {
  int pixel_bytes;
} stk_gpu_grid_mask_args;

/* The kernels:
 * - warp_affine, erase: see their records above;
 * - grid_mask: pixel_bytes is channels * element size (1..64).
 */
#define STK_GPU_KERNELS_GEOMETRY(X)                                   \
  X(WARP_AFFINE, warp_affine, stk_gpu_warp_sample, stk_gpu_warp_args) \
  X(ERASE, erase, stk_gpu_erase_sample, stk_gpu_erase_args)           \
  X(GRID_MASK, grid_mask, stk_gpu_grid_mask_sample, stk_gpu_grid_mask_args)

#ifdef __cplusplus
}
#endif

#endif
