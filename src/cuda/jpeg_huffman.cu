/* Huffman stage of stoker's own GPU JPEG decoder: thin kernels over the phases of
 * src/shared/jpeg_huffman.h (guess, link, resolve, write; see there), batched over all
 * images of a call. Each thread block serves one image (launch.cuh's block tables) and
 * first copies that image's frame and Huffman tables to shared memory. */
#include <stdlib.h>
#include <string.h>

#include "jpeg_gpu.h"
#include "launch.cuh"

#define JH_THREADS 128

/* Subsequence length in bits; STK_JPEG_SUBSEQ_BITS overrides it (tuning). */
static uint32_t subseq_bits(void) {
  const char *e = getenv("STK_JPEG_SUBSEQ_BITS");
  long v = e ? strtol(e, NULL, 10) : 0;
  return v >= 32 && v <= (1L << 24) ? (uint32_t)v : 1024;
}

/* One image as the kernels see it: offsets into the uploaded block and its output. */
typedef struct {
  int64_t scan; /* offset of its scan bytes */
  int64_t segs; /* offset of its stk_jpeg_segment[nsegs] */
  int64_t subs; /* offset of its stk_jpeg_subseq[nsubs] */
  int64_t sub0; /* its first subsequence over the batch (index into the temporaries) */
  int32_t nsegs, nsubs;
  int16_t *coef;
} jh_image;

/* The uploaded block: images[n], frames[n], tables[n], then three block tables (n + 1
 * ints each: per-(subsequence, unit of the MCU) threads, per-segment threads, per-subsequence
 * threads), then segments, subsequences and scans at the offsets the images give. */
typedef struct {
  const jh_image *images;
  const stk_jpeg_frame *frames;
  const stk_jpeg_huffman *tables;
  const int *first_phase, *first_seg, *first_sub;
  const char *base;
} jh_dev;

/* The temporaries, per subsequence over the batch. */
typedef struct {
  stk_jpeg_subresult *guess, *link; /* [sub * STK_JPEG_MAX_PHASES + p] */
  uint64_t *start;
  int64_t *unit0;
  int32_t *dcpred; /* [sub * STK_JPEG_MAX_COMP + c] */
} jh_tmp;

/* The block's image: its frame and tables copied to shared memory, its view. */
static __device__ int jh_enter(const jh_dev &d, const int *first, int n, stk_jpeg_frame *s_frame,
                               stk_jpeg_huffman *s_tab, stk_jpeg_image_view *view) {
  int i = stk_find_sample(first, n, blockIdx.x);
  const uint32_t *src = (const uint32_t *)&d.tables[i];
  uint32_t *dst = (uint32_t *)s_tab;
  for (int k = threadIdx.x; k < (int)(sizeof(stk_jpeg_huffman) / 4); k += blockDim.x)
    dst[k] = src[k];
  src = (const uint32_t *)&d.frames[i];
  dst = (uint32_t *)s_frame;
  for (int k = threadIdx.x; k < (int)(sizeof(stk_jpeg_frame) / 4); k += blockDim.x) dst[k] = src[k];
  __syncthreads();
  const jh_image &im = d.images[i];
  view->data = (const uint8_t *)(d.base + im.scan);
  view->frame = s_frame;
  view->tables = s_tab;
  view->segs = (const stk_jpeg_segment *)(d.base + im.segs);
  view->subs = (const stk_jpeg_subseq *)(d.base + im.subs);
  return i;
}

__global__ void jh_guess_kernel(jh_dev d, int n, jh_tmp t) {
  __shared__ stk_jpeg_frame s_frame;
  __shared__ stk_jpeg_huffman s_tab;
  stk_jpeg_image_view v;
  int i = jh_enter(d, d.first_phase, n, &s_frame, &s_tab, &v);
  int64_t k = (int64_t)(blockIdx.x - d.first_phase[i]) * blockDim.x + threadIdx.x;
  const jh_image &im = d.images[i];
  const int bpm = s_frame.blocks_per_mcu;
  if (k >= (int64_t)im.nsubs * bpm) return;
  stk_jpeg_guess_step(&v, (int32_t)(k / bpm), (int)(k % bpm),
                      t.guess + im.sub0 * STK_JPEG_MAX_PHASES);
}

__global__ void jh_link_kernel(jh_dev d, int n, jh_tmp t) {
  __shared__ stk_jpeg_frame s_frame;
  __shared__ stk_jpeg_huffman s_tab;
  stk_jpeg_image_view v;
  int i = jh_enter(d, d.first_phase, n, &s_frame, &s_tab, &v);
  int64_t k = (int64_t)(blockIdx.x - d.first_phase[i]) * blockDim.x + threadIdx.x;
  const jh_image &im = d.images[i];
  const int bpm = s_frame.blocks_per_mcu;
  if (k >= (int64_t)im.nsubs * bpm) return;
  stk_jpeg_link_step(&v, (int32_t)(k / bpm), (int)(k % bpm), im.nsubs,
                     t.guess + im.sub0 * STK_JPEG_MAX_PHASES,
                     t.link + im.sub0 * STK_JPEG_MAX_PHASES);
}

__global__ void jh_resolve_kernel(jh_dev d, int n, jh_tmp t, int *failed, int *d_status) {
  __shared__ stk_jpeg_frame s_frame;
  __shared__ stk_jpeg_huffman s_tab;
  stk_jpeg_image_view v;
  int i = jh_enter(d, d.first_seg, n, &s_frame, &s_tab, &v);
  int64_t k = (int64_t)(blockIdx.x - d.first_seg[i]) * blockDim.x + threadIdx.x;
  const jh_image &im = d.images[i];
  if (k >= im.nsegs) return;
  int32_t misses = 0;
  int64_t s0 = im.sub0;
  if (stk_jpeg_resolve_segment(&v, (int32_t)k, im.nsubs, t.guess + s0 * STK_JPEG_MAX_PHASES,
                               t.link + s0 * STK_JPEG_MAX_PHASES, t.start + s0, t.unit0 + s0,
                               t.dcpred + s0 * STK_JPEG_MAX_COMP, &misses) != 0) {
    failed[i] = 1; /* racing writers all write the same value */
    if (d_status) d_status[i] = STK_GPU_DECODE_FAILED;
  }
}

__global__ void jh_write_kernel(jh_dev d, int n, jh_tmp t, const int *failed) {
  __shared__ stk_jpeg_frame s_frame;
  __shared__ stk_jpeg_huffman s_tab;
  stk_jpeg_image_view v;
  int i = jh_enter(d, d.first_sub, n, &s_frame, &s_tab, &v);
  int64_t k = (int64_t)(blockIdx.x - d.first_sub[i]) * blockDim.x + threadIdx.x;
  const jh_image &im = d.images[i];
  if (k >= im.nsubs || failed[i]) return;
  int64_t s0 = im.sub0;
  stk_jpeg_write_step(&v, (int32_t)k, t.start + s0, t.unit0 + s0, t.dcpred + s0 * STK_JPEG_MAX_COMP,
                      im.coef);
}

/* ---- host side ---- */

static size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

/* The host block and its layout. */
typedef struct {
  char *host;
  size_t bytes, images_at, frames_at, tables_at, first_at;
  int64_t total_subs;
  int blocks_phase, blocks_seg, blocks_sub;
} jh_block;

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

/* Lays out and fills the host block: images, frames, tables, block tables, then per image
 * its segments, subsequences and scan. */
static int build_block(jh_block *B, int n, const stk_jpeg_frame *frames,
                       const stk_jpeg_huffman *tables, const uint8_t *const *scan,
                       const size_t *scan_bytes, const int32_t *const *restarts,
                       const int *n_restarts, int16_t *const *coef, uint32_t s, char *err,
                       size_t errlen) {
  B->images_at = 0;
  B->frames_at = align16((size_t)n * sizeof(jh_image));
  B->tables_at = align16(B->frames_at + (size_t)n * sizeof(stk_jpeg_frame));
  B->first_at = align16(B->tables_at + (size_t)n * sizeof(stk_jpeg_huffman));
  size_t at = align16(B->first_at + 3 * (size_t)(n + 1) * sizeof(int));
  int64_t *nsubs = (int64_t *)malloc((size_t)n * sizeof(int64_t) * 3);
  if (!nsubs) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d counts", n);
  B->total_subs = 0;
  for (int i = 0; i < n; i++) {
    nsubs[i] = stk_jpeg_plan_count((uint32_t)scan_bytes[i], restarts[i], n_restarts[i], s);
    at += align16((size_t)(n_restarts[i] + 1) * sizeof(stk_jpeg_segment)) +
          align16((size_t)nsubs[i] * sizeof(stk_jpeg_subseq)) + align16(scan_bytes[i]);
    B->total_subs += nsubs[i];
  }
  if (B->total_subs > INT32_MAX / STK_JPEG_MAX_PHASES) {
    free(nsubs);
    return GPU_FAIL(STK_ERR_LIMIT, "batch of %lld subsequences", (long long)B->total_subs);
  }
  B->bytes = at;
  B->host = (char *)malloc(at);
  if (!B->host) {
    free(nsubs);
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %zu bytes", at);
  }
  jh_image *im = (jh_image *)(B->host + B->images_at);
  memcpy(B->host + B->frames_at, frames, (size_t)n * sizeof *frames);
  memcpy(B->host + B->tables_at, tables, (size_t)n * sizeof *tables);
  at = align16(B->first_at + 3 * (size_t)(n + 1) * sizeof(int));
  int64_t sub0 = 0;
  int64_t *phase_blocks = nsubs + n, *seg_blocks = nsubs + 2 * n;
  for (int i = 0; i < n; i++) {
    im[i].nsegs = n_restarts[i] + 1;
    im[i].nsubs = (int32_t)nsubs[i];
    im[i].sub0 = sub0;
    im[i].coef = coef[i];
    im[i].segs = (int64_t)at;
    at += align16((size_t)im[i].nsegs * sizeof(stk_jpeg_segment));
    im[i].subs = (int64_t)at;
    at += align16((size_t)nsubs[i] * sizeof(stk_jpeg_subseq));
    im[i].scan = (int64_t)at;
    if (scan_bytes[i]) memcpy(B->host + at, scan[i], scan_bytes[i]);
    at += align16(scan_bytes[i]);
    stk_jpeg_plan_fill(&frames[i], (uint32_t)scan_bytes[i], restarts[i], n_restarts[i], s,
                       (stk_jpeg_segment *)(B->host + im[i].segs),
                       (stk_jpeg_subseq *)(B->host + im[i].subs));
    sub0 += nsubs[i];
    phase_blocks[i] = stk_cdiv(nsubs[i] * frames[i].blocks_per_mcu, JH_THREADS);
    seg_blocks[i] = stk_cdiv(im[i].nsegs, JH_THREADS);
    nsubs[i] = stk_cdiv(nsubs[i], JH_THREADS); /* now: blocks of the write pass */
  }
  int *first = (int *)(B->host + B->first_at);
  int rc = stk_block_table(phase_blocks, n, first, err, errlen);
  if (rc == 0) rc = stk_block_table(seg_blocks, n, first + (n + 1), err, errlen);
  if (rc == 0) rc = stk_block_table(nsubs, n, first + 2 * (n + 1), err, errlen);
  B->blocks_phase = first[n];
  B->blocks_seg = first[(n + 1) + n];
  B->blocks_sub = first[2 * (n + 1) + n];
  free(nsubs);
  return rc;
}

/* Carves the temporaries from one device block at `base` (0: sizes only); `failed` (n
 * ints) comes last. Returns the bytes needed. */
static size_t tmp_layout(int64_t subs, int n, jh_tmp *t, int **failed, uintptr_t base) {
  size_t at = 0, np = (size_t)subs * STK_JPEG_MAX_PHASES;
  t->guess = (stk_jpeg_subresult *)(base + at);
  at = align16(at + np * sizeof(stk_jpeg_subresult));
  t->link = (stk_jpeg_subresult *)(base + at);
  at = align16(at + np * sizeof(stk_jpeg_subresult));
  t->start = (uint64_t *)(base + at);
  at = align16(at + (size_t)subs * sizeof(uint64_t));
  t->unit0 = (int64_t *)(base + at);
  at = align16(at + (size_t)subs * sizeof(int64_t));
  t->dcpred = (int32_t *)(base + at);
  at = align16(at + (size_t)subs * STK_JPEG_MAX_COMP * sizeof(int32_t));
  *failed = (int *)(base + at);
  return at + (size_t)n * sizeof(int);
}

static int launch_all(const jh_block *B, const char *dev, int n, jh_tmp t, int *failed,
                      int *d_status, cudaStream_t st, char *err, size_t errlen) {
  jh_dev d;
  d.base = dev;
  d.images = (const jh_image *)(dev + B->images_at);
  d.frames = (const stk_jpeg_frame *)(dev + B->frames_at);
  d.tables = (const stk_jpeg_huffman *)(dev + B->tables_at);
  d.first_phase = (const int *)(dev + B->first_at);
  d.first_seg = d.first_phase + (n + 1);
  d.first_sub = d.first_phase + 2 * (n + 1);
  CUDA_TRY(cudaMemsetAsync(failed, 0, (size_t)n * sizeof(int), st));
  jh_guess_kernel<<<B->blocks_phase, JH_THREADS, 0, st>>>(d, n, t);
  STK_TRY_INT(stk_check_launch("jpeg huffman guess", err, errlen));
  jh_link_kernel<<<B->blocks_phase, JH_THREADS, 0, st>>>(d, n, t);
  STK_TRY_INT(stk_check_launch("jpeg huffman link", err, errlen));
  jh_resolve_kernel<<<B->blocks_seg, JH_THREADS, 0, st>>>(d, n, t, failed, d_status);
  STK_TRY_INT(stk_check_launch("jpeg huffman resolve", err, errlen));
  jh_write_kernel<<<B->blocks_sub, JH_THREADS, 0, st>>>(d, n, t, failed);
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
  jh_block B;
  memset(&B, 0, sizeof B);
  void *dev = NULL, *tmp = NULL;
  jh_tmp t;
  int *failed = NULL;
  int rc = build_block(&B, n, frames, tables, scan, scan_bytes, restarts, n_restarts, coef,
                       subseq_bits(), err, errlen);
  if (rc == 0) {
    size_t tmp_bytes = tmp_layout(B.total_subs, n, &t, &failed, 0);
    rc = stk_gpu_device_alloc(ctx, tmp_bytes, (uintptr_t)stream, &tmp, err, errlen);
  }
  if (rc == 0) {
    tmp_layout(B.total_subs, n, &t, &failed, (uintptr_t)tmp);
    rc = stk_gpu_upload(ctx, B.host, B.bytes, stream, &dev, err, errlen);
  }
  if (rc == 0) rc = launch_all(&B, (const char *)dev, n, t, failed, d_status, stream, err, errlen);
  /* Stream-ordered frees: released once the launches above have run. */
  if (dev) stk_gpu_device_free(ctx, dev, (uintptr_t)stream, NULL, 0);
  if (tmp) stk_gpu_device_free(ctx, tmp, (uintptr_t)stream, NULL, 0);
  free(B.host);
  return rc;
}
