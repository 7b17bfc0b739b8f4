/* Huffman stage of stoker's own GPU JPEG decoder: the three launches of
 * src/shared/jpeg_huffman_batch.h (guess, resolve, write; the algorithm is in
 * src/shared/jpeg_huffman.h), batched over all images of a call. Each thread block serves
 * one image and first copies that image's frame and Huffman tables to shared memory; the
 * rest is the shared per-thread bodies, which the host test runs in loops. */
#include <stdlib.h>
#include <string.h>

#include "jpeg_gpu.h"
#include "launch.cuh"
#include "../shared/jpeg_huffman_batch.h"

/* Subsequence length in bits; STK_JPEG_SUBSEQ_BITS overrides it (tuning). */
static uint32_t subseq_bits(void) {
  const char *e = getenv("STK_JPEG_SUBSEQ_BITS");
  long v = e ? strtol(e, NULL, 10) : 0;
  return v >= 32 && v <= (1L << 24) ? (uint32_t)v : STK_JPEG_SUBSEQ_DEFAULT;
}

/* The block's image (launch `kind`), its frame and tables copied to shared memory, its
 * view and the thread's index among the image's threads. */
static __device__ int jh_enter(const char *base, const stk_jpeg_batch_layout &L, int n, int kind,
                               stk_jpeg_frame *s_frame, stk_jpeg_huffman *s_tab,
                               stk_jpeg_image_view *view, int64_t *k) {
  int i = stk_jpeg_batch_image_of(base, &L, n, kind, blockIdx.x);
  const uint32_t *src = (const uint32_t *)(base + L.tables_at) + i * (sizeof *s_tab / 4);
  uint32_t *dst = (uint32_t *)s_tab;
  for (int j = threadIdx.x; j < (int)(sizeof *s_tab / 4); j += blockDim.x) dst[j] = src[j];
  src = (const uint32_t *)(base + L.frames_at) + i * (sizeof *s_frame / 4);
  dst = (uint32_t *)s_frame;
  for (int j = threadIdx.x; j < (int)(sizeof *s_frame / 4); j += blockDim.x) dst[j] = src[j];
  __syncthreads();
  *view = stk_jpeg_batch_view(base, &L, i, s_frame, s_tab);
  *k = stk_jpeg_batch_thread(base, &L, n, kind, i, blockIdx.x, threadIdx.x);
  return i;
}

#define JH_PROLOGUE(kind)            \
  __shared__ stk_jpeg_frame s_frame; \
  __shared__ stk_jpeg_huffman s_tab; \
  stk_jpeg_image_view v;             \
  int64_t k;                         \
  int i = jh_enter(base, L, n, (kind), &s_frame, &s_tab, &v, &k)

__global__ void jh_guess_kernel(const char *base, stk_jpeg_batch_layout L, int n,
                                stk_jpeg_batch_tmp t) {
  JH_PROLOGUE(STK_JPEG_BY_PHASE);
  stk_jpeg_batch_guess(base, &L, i, k, &v, &t);
}

__global__ void jh_resolve_kernel(const char *base, stk_jpeg_batch_layout L, int n,
                                  stk_jpeg_batch_tmp t, int *d_status) {
  JH_PROLOGUE(STK_JPEG_BY_SEGMENT);
  if (stk_jpeg_batch_resolve(base, &L, i, k, &v, &t) && d_status)
    d_status[i] = STK_GPU_DECODE_FAILED;
}

__global__ void jh_write_kernel(const char *base, stk_jpeg_batch_layout L, int n,
                                stk_jpeg_batch_tmp t) {
  JH_PROLOGUE(STK_JPEG_BY_SUBSEQ);
  stk_jpeg_batch_write(base, &L, i, k, &v, &t);
}

/* ---- host side ---- */

static int check_args(int n, const stk_jpeg_frame *frames, const stk_jpeg_huffman *tables,
                      const uint8_t *const *scan, const size_t *scan_bytes,
                      const int32_t *const *restarts, const int *n_restarts, int16_t *const *coef,
                      char *err, size_t errlen) {
  if (n < 0 ||
      (n > 0 && (!frames || !tables || !scan || !scan_bytes || !restarts || !n_restarts || !coef)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  for (int i = 0; i < n; i++) {
    const stk_jpeg_frame *f = &frames[i];
    if ((!scan[i] && scan_bytes[i]) || !coef[i] || n_restarts[i] < 0 ||
        (n_restarts[i] > 0 && !restarts[i]) || scan_bytes[i] >= ((size_t)1 << 29) ||
        f->blocks_per_mcu < 1 || f->blocks_per_mcu > STK_JPEG_MAX_PHASES || f->ncomp < 1 ||
        f->ncomp > STK_JPEG_MAX_COMP)
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "image %d: no scan or output, or a frame the parser would not give", i);
  }
  return 0;
}

static int launch_all(const char *dev, const stk_jpeg_batch_layout &L, int n,
                      const stk_jpeg_batch_tmp &t, int *d_status, cudaStream_t st, char *err,
                      size_t errlen) {
  const int T = STK_JPEG_BATCH_THREADS;
  CUDA_TRY(cudaMemsetAsync(t.failed, 0, (size_t)n * sizeof(int32_t), st));
  jh_guess_kernel<<<L.blocks[STK_JPEG_BY_PHASE], T, 0, st>>>(dev, L, n, t);
  STK_TRY_INT(stk_check_launch("jpeg huffman guess", err, errlen));
  jh_resolve_kernel<<<L.blocks[STK_JPEG_BY_SEGMENT], T, 0, st>>>(dev, L, n, t, d_status);
  STK_TRY_INT(stk_check_launch("jpeg huffman resolve", err, errlen));
  jh_write_kernel<<<L.blocks[STK_JPEG_BY_SUBSEQ], T, 0, st>>>(dev, L, n, t);
  return stk_check_launch("jpeg huffman write", err, errlen);
}

int stk_gpu_jpeg_coefficients(stk_gpu_ctx *ctx, int n, const stk_jpeg_frame *frames,
                              const stk_jpeg_huffman *tables, const uint8_t *const *scan,
                              const size_t *scan_bytes, const int32_t *const *restarts,
                              const int *n_restarts, int16_t *const *coef, int *d_status,
                              cudaStream_t stream, char *err, size_t errlen) {
  STK_TRY_INT(
      check_args(n, frames, tables, scan, scan_bytes, restarts, n_restarts, coef, err, errlen));
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  const uint32_t s = subseq_bits();
  stk_jpeg_batch_layout L;
  if (stk_jpeg_batch_plan(n, frames, scan_bytes, restarts, n_restarts, s, &L) != 0)
    return GPU_FAIL(STK_ERR_LIMIT, "batch of %d images too large for one call", n);
  /* Packed straight into page-locked memory (the scans are most of it: one copy of them
   * here, none more before the upload). */
  void *host = NULL;
  STK_TRY_INT(stk_gpu_staging_alloc(ctx, L.bytes, &host, err, errlen));
  stk_jpeg_batch_fill(&L, (char *)host, n, frames, tables, scan, scan_bytes, restarts, n_restarts,
                      coef, s);
  stk_jpeg_batch_tmp t;
  void *dev = NULL, *tmp = NULL;
  int rc = stk_gpu_device_alloc(ctx, stk_jpeg_batch_tmp_carve(L.total_subs, n, 0, &t),
                                (uintptr_t)stream, &tmp, err, errlen);
  if (rc == 0) {
    stk_jpeg_batch_tmp_carve(L.total_subs, n, (uintptr_t)tmp, &t);
    rc = stk_gpu_upload_staged(ctx, host, L.bytes, stream, &dev, err, errlen);
  } else {
    stk_gpu_staging_free(ctx, host, NULL, 0);
  }
  if (rc == 0) rc = launch_all((const char *)dev, L, n, t, d_status, stream, err, errlen);
  /* Stream-ordered frees: released once the launches above have run. */
  if (dev) stk_gpu_device_free(ctx, dev, (uintptr_t)stream, NULL, 0);
  if (tmp) stk_gpu_device_free(ctx, tmp, (uintptr_t)stream, NULL, 0);
  return rc;
}
