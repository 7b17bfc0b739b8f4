/*
 * The pixel stage of stoker's own GPU JPEG decoder: coefficients -> pixels for a batch of
 * images in two launches. A thin layer over src/shared/jpeg_pixels.h, whose functions the
 * host test (tests/c/test_jpeg_pixels.c) checks byte for byte against libjpeg-turbo:
 *
 *   1. idct_kernel: one thread per 8x8 block of every image, dequantise + inverse DCT into
 *      the image's component planes (temporary device memory, total_blocks * 64 bytes per
 *      image, block g of the coefficients to the plane bytes of block g); blocks the
 *      region's pixels never read (and the MCU grid's padding blocks) are skipped;
 *   2. pixel_kernel: one thread per output pixel of the region, upsampling each component
 *      and converting the colour, into the caller's HWC buffer.
 *
 * Thread blocks are assigned to images through launch.cuh's first[] tables; each block
 * copies its image's frame (with the quantisation tables) into shared memory.
 */
#include <stdlib.h>
#include <string.h>

#include "jpeg_gpu.h"
#include "launch.cuh"
#include "../shared/jpeg_pixels.h"

#define IDCT_BLOCKS   32 /* 8x8 blocks per thread block, 8 threads each */
#define IDCT_THREADS  (IDCT_BLOCKS * 8)
#define TILE_W        32 /* output pixels per thread block: TILE_W x TILE_H */
#define TILE_H        8
#define PIXEL_THREADS (TILE_W * TILE_H)

typedef struct {
  stk_jpeg_frame f;
  const int16_t *coef;
  uint8_t *planes;
  uint8_t *dst;
  int64_t pitch;
  int rx, ry, rw, rh;
} jp_image;

/* Copies the frame of image `img` into shared memory (all threads of the block). */
static __device__ void load_frame(const jp_image *img, stk_jpeg_frame *f) {
  const uint32_t *src = (const uint32_t *)&img->f;
  uint32_t *out = (uint32_t *)f;
  for (int i = threadIdx.x; i < (int)(sizeof *f / 4); i += blockDim.x) out[i] = src[i];
  __syncthreads();
}

/* Eight threads per 8x8 block (the 8 threads of a block are in one warp): thread r loads
 * row r of the coefficients (16 bytes: a warp reads 512 consecutive bytes) and
 * dequantises it into shared memory, transforms column r, then row r, and stores its 8
 * samples as one 8-byte word. The workspace's rows are 9 words apart and its blocks 72:
 * the column and the row accesses of a warp hit 32 different banks. */
__global__ void __launch_bounds__(IDCT_THREADS)
    idct_kernel(const jp_image *imgs, const int *first, int n, int color) {
  __shared__ stk_jpeg_frame f;
  __shared__ int32_t ws[IDCT_BLOCKS][8 * STK_JPEG_WS_ROW];
  int i = stk_find_sample(first, n, (int)blockIdx.x);
  const jp_image *img = &imgs[i];
  load_frame(img, &f);
  int lb = (int)threadIdx.x >> 3, r = (int)threadIdx.x & 7;
  int64_t g = (int64_t)(blockIdx.x - first[i]) * IDCT_BLOCKS + lb;
  int c = 0;
  uint8_t *at = NULL;
  int64_t pitch = 0;
  bool on = g < f.total_blocks && stk_jpeg_block_target(&f, img->planes, g, color, img->rx, img->ry,
                                                        img->rw, img->rh, &c, &at, &pitch);
  int32_t *w = ws[lb];
  if (on) {
    int4 v = __ldg((const int4 *)(img->coef + g * 64) + r);
    int16_t row[8];
    memcpy(row, &v, sizeof row);
    stk_jpeg_dequant_row(row, f.quant[f.comp[c].quant] + r * 8, w + r * STK_JPEG_WS_ROW);
  }
  __syncwarp();
  if (on) stk_jpeg_idct_col(w, r);
  __syncwarp();
  if (on) {
    uint8_t out[8];
    stk_jpeg_idct_row(w, r, out);
    uint2 word;
    memcpy(&word, out, sizeof word);
    *(uint2 *)(at + r * pitch) = word;
  }
}

/* One thread per output pixel, TILE_W x TILE_H pixels per thread block: a warp covers 32
 * consecutive pixels of a row (its reads of each plane and its writes are contiguous). */
__global__ void __launch_bounds__(PIXEL_THREADS)
    pixel_kernel(const jp_image *imgs, const int *first, int n, int color) {
  __shared__ stk_jpeg_frame f;
  __shared__ stk_jpeg_plane pl[STK_JPEG_MAX_COMP];
  int i = stk_find_sample(first, n, (int)blockIdx.x);
  const jp_image *img = &imgs[i];
  load_frame(img, &f);
  if (threadIdx.x == 0) stk_jpeg_planes(&f, img->planes, pl);
  __syncthreads();
  int t = (int)blockIdx.x - first[i], tiles_x = (img->rw + TILE_W - 1) / TILE_W;
  int x = (t % tiles_x) * TILE_W + (int)(threadIdx.x % TILE_W);
  int y = (t / tiles_x) * TILE_H + (int)(threadIdx.x / TILE_W);
  if (x >= img->rw || y >= img->rh) return;
  stk_jpeg_region_pixel(pl, f.ncomp, color, img->rx, img->ry, x, y, img->dst, img->pitch);
}

/* Checks image i's arguments and fills its descriptor (planes left NULL). */
static int describe(int i, const stk_jpeg_frame *f, const int16_t *coef, uint8_t *dst, size_t pitch,
                    const int *roi, int ch, jp_image *d, char *err, size_t errlen) {
  const char *why = stk_jpeg_frame_problem(f);
  if (why) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "image %d: frame: %s", i, why);
  if (!coef || !dst)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "image %d: no coefficient or output buffer", i);
  if ((uintptr_t)coef % 16) /* the kernel reads a block's rows as 16-byte vectors */
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "image %d: coefficients not 16-byte aligned", i);
  memset(d, 0, sizeof *d);
  d->f = *f;
  d->coef = coef;
  d->dst = dst;
  d->pitch = (int64_t)pitch;
  d->rw = f->width;
  d->rh = f->height;
  if (roi && roi[2] != 0) {
    d->rx = roi[0], d->ry = roi[1], d->rw = roi[2], d->rh = roi[3];
    if (d->rx < 0 || d->ry < 0 || d->rw < 1 || d->rh < 1 || d->rx > f->width - d->rw ||
        d->ry > f->height - d->rh)
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "image %d: region %dx%d at (%d, %d) is not inside the %dx%d image", i, d->rw,
                      d->rh, d->rx, d->ry, f->width, f->height);
  }
  if (pitch < (size_t)d->rw * ch)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "image %d: output pitch %zu < %d bytes per row", i,
                    pitch, d->rw * ch);
  return 0;
}

/* The host table uploaded per batch: descriptors, then the two first[] tables. */
typedef struct {
  char *host;
  size_t bytes;
  jp_image *imgs;
  int *first_idct, *first_px;
} jp_table;

static int build_table(int n, const stk_jpeg_frame *frames, const int16_t *const *coef,
                       uint8_t *const *dst, const size_t *dst_pitch, const int *roi, int color,
                       jp_table *t, size_t *plane_bytes, char *err, size_t errlen) {
  t->bytes = sizeof(jp_image) * (size_t)n + sizeof(int) * 2 * (size_t)(n + 1);
  t->host = (char *)calloc(1, t->bytes);
  if (!t->host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for %d descriptors", n);
  t->imgs = (jp_image *)t->host;
  t->first_idct = (int *)(t->imgs + n);
  t->first_px = t->first_idct + n + 1;
  int64_t *nb_idct = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)n);
  if (!nb_idct) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for %d descriptors", n);
  int64_t *nb_px = nb_idct + n;
  int ch = stk_jpeg_out_channels(color), rc = 0;
  *plane_bytes = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    rc = describe(i, &frames[i], coef[i], dst[i], dst_pitch[i], roi ? roi + 4 * i : NULL, ch,
                  &t->imgs[i], err, errlen);
    nb_idct[i] = stk_cdiv(frames[i].total_blocks, IDCT_BLOCKS);
    nb_px[i] = stk_cdiv(t->imgs[i].rw, TILE_W) * stk_cdiv(t->imgs[i].rh, TILE_H);
    *plane_bytes += (size_t)frames[i].total_blocks * 64;
  }
  if (rc == 0) rc = stk_block_table(nb_idct, n, t->first_idct, err, errlen);
  if (rc == 0) rc = stk_block_table(nb_px, n, t->first_px, err, errlen);
  free(nb_idct);
  return rc;
}

int stk_gpu_jpeg_pixels(stk_gpu_ctx *ctx, int n, const stk_jpeg_frame *frames,
                        const int16_t *const *coef, uint8_t *const *dst, const size_t *dst_pitch,
                        const int *roi, int color, cudaStream_t stream, char *err, size_t errlen) {
  if (n <= 0) return 0;
  if (color != STK_GPU_COLOR_RGB && color != STK_GPU_COLOR_BGR && color != STK_GPU_COLOR_GRAY)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "color %d is not RGB (0), BGR (1) or gray (2)",
                    color);
  jp_table t;
  memset(&t, 0, sizeof t);
  size_t plane_bytes = 0;
  uint8_t *planes = NULL;
  uintptr_t st = (uintptr_t)stream;
  int rc = build_table(n, frames, coef, dst, dst_pitch, roi, color, &t, &plane_bytes, err, errlen);
  if (rc == 0) rc = stk_gpu_device_alloc(ctx, plane_bytes, st, (void **)&planes, err, errlen);
  if (rc == 0) {
    size_t off = 0;
    for (int i = 0; i < n; i++) {
      t.imgs[i].planes = planes + off;
      off += (size_t)frames[i].total_blocks * 64;
    }
    rc = stk_upload_and_launch(
        ctx, t.host, t.bytes, st, "stk_gpu_jpeg_pixels", err, errlen, [&](const char *dev) {
          const jp_image *imgs = (const jp_image *)dev;
          const int *fi = (const int *)(imgs + n), *fp = fi + n + 1;
          if (t.first_idct[n] > 0)
            idct_kernel<<<t.first_idct[n], IDCT_THREADS, 0, stream>>>(imgs, fi, n, color);
          if (t.first_px[n] > 0)
            pixel_kernel<<<t.first_px[n], PIXEL_THREADS, 0, stream>>>(imgs, fp, n, color);
          return 0;
        });
  }
  if (planes) stk_gpu_device_free(ctx, planes, st, NULL, 0);
  free(t.host);
  return rc;
}
