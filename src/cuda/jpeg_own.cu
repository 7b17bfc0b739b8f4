/* stoker's own GPU JPEG decoder's entry (api_jpeg.h, kernel jpeg_decode): the samples'
 * parsed blocks (src/shared/jpeg_parsed.h) through the Huffman stage (jpeg_huffman.cu)
 * into one stream-ordered block of coefficients, then the pixel stage (jpeg_idct.cu) into
 * the callers' buffers; the per-image verdicts are copied to the caller's page-locked
 * array in stream order. Nothing here waits for the device. */
#include <stdlib.h>
#include <string.h>

#include "gpu_kernels.h"
#include "jpeg_gpu.h"
#include "../shared/jpeg_parsed.h"

/* The host arrays both stages take, gathered from the parsed blocks. */
typedef struct {
  stk_jpeg_frame *frames;
  stk_jpeg_huffman *tables;
  const uint8_t **scan;
  size_t *scan_bytes;
  const int32_t **restarts;
  int *n_restarts;
  int16_t **coef;
  uint8_t **dst;
  size_t *pitch;
  int *roi;
} own_batch;

static void own_batch_free(own_batch *b) {
  free(b->frames), free(b->tables), free(b->scan), free(b->scan_bytes), free(b->restarts);
  free(b->n_restarts), free(b->coef), free(b->dst), free(b->pitch), free(b->roi);
}

static int own_batch_fill(own_batch *b, int n, const stk_gpu_jpeg_decode_sample *s,
                          int64_t *coef_values, char *err, size_t errlen) {
  memset(b, 0, sizeof *b);
  size_t un = (size_t)n;
  b->frames = (stk_jpeg_frame *)malloc(un * sizeof *b->frames);
  b->tables = (stk_jpeg_huffman *)malloc(un * sizeof *b->tables);
  b->scan = (const uint8_t **)malloc(un * sizeof *b->scan);
  b->scan_bytes = (size_t *)malloc(un * sizeof *b->scan_bytes);
  b->restarts = (const int32_t **)malloc(un * sizeof *b->restarts);
  b->n_restarts = (int *)malloc(un * sizeof *b->n_restarts);
  b->coef = (int16_t **)malloc(un * sizeof *b->coef);
  b->dst = (uint8_t **)malloc(un * sizeof *b->dst);
  b->pitch = (size_t *)malloc(un * sizeof *b->pitch);
  b->roi = (int *)malloc(un * 4 * sizeof *b->roi);
  if (!b->frames || !b->tables || !b->scan || !b->scan_bytes || !b->restarts || !b->n_restarts ||
      !b->coef || !b->dst || !b->pitch || !b->roi)
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for a batch of %d", n);
  *coef_values = 0;
  for (int i = 0; i < n; i++) {
    const stk_jpeg_parsed *p = (const stk_jpeg_parsed *)s[i].parsed;
    if (!p || !s[i].dst)
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: no parsed file or no destination", i);
    b->frames[i] = p->frame;
    b->tables[i] = p->tables;
    b->scan[i] = stk_jpeg_parsed_scan(p);
    b->scan_bytes[i] = p->scan_bytes;
    b->restarts[i] = stk_jpeg_parsed_restarts(p);
    b->n_restarts[i] = p->n_restarts;
    b->dst[i] = s[i].dst;
    b->pitch[i] = s[i].dst_pitch;
    bool region = s[i].roi_w > 0 && s[i].roi_h > 0;
    int *r = b->roi + 4 * i;
    r[0] = region ? s[i].roi_x : 0, r[1] = region ? s[i].roi_y : 0;
    r[2] = region ? s[i].roi_w : 0, r[3] = region ? s[i].roi_h : 0;
    *coef_values += p->frame.total_blocks * 64;
  }
  return 0;
}

int stk_gpu_k_jpeg_decode(stk_gpu_ctx *ctx, int n, const stk_gpu_jpeg_decode_sample *samples,
                          const stk_gpu_jpeg_decode_args *args, uintptr_t stream, char *err,
                          size_t errlen) {
  if (n < 0 || (n > 0 && (!samples || !args || !args->status)) ||
      (args && (args->color < STK_GPU_COLOR_RGB || args->color > STK_GPU_COLOR_GRAY)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  cudaStream_t st = (cudaStream_t)stream;
  own_batch b;
  int64_t values = 0;
  void *coef = NULL, *status = NULL;
  int rc = own_batch_fill(&b, n, samples, &values, err, errlen);
  if (rc == 0)
    rc = stk_gpu_device_alloc(ctx, (size_t)values * sizeof(int16_t) + (size_t)n * sizeof(int),
                              stream, &coef, err, errlen);
  if (rc == 0) {
    int16_t *at = (int16_t *)coef;
    for (int i = 0; i < n; i++, at += b.frames[i - 1].total_blocks * 64) b.coef[i] = at;
    status = at; /* after the coefficients: n ints */
    cudaError_t e = cudaMemsetAsync(status, 0, (size_t)n * sizeof(int), st);
    if (e != cudaSuccess)
      rc = GPU_FAIL(STK_ERR_DEVICE, "clearing the verdicts failed: %s", cudaGetErrorString(e));
  }
  if (rc == 0)
    rc = stk_gpu_jpeg_coefficients(ctx, n, b.frames, b.tables, b.scan, b.scan_bytes, b.restarts,
                                   b.n_restarts, b.coef, (int *)status, st, err, errlen);
  if (rc == 0)
    rc = stk_gpu_jpeg_pixels(ctx, n, b.frames, (const int16_t *const *)b.coef, b.dst, b.pitch,
                             b.roi, args->color, st, err, errlen);
  if (rc == 0) {
    cudaError_t e =
        cudaMemcpyAsync(args->status, status, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost, st);
    if (e != cudaSuccess)
      rc = GPU_FAIL(STK_ERR_DEVICE, "copying the verdicts failed: %s", cudaGetErrorString(e));
  }
  if (coef) stk_gpu_device_free(ctx, coef, stream, NULL, 0);
  own_batch_free(&b);
  return rc;
}
