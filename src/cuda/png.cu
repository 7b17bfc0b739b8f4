/* GPU PNG decoding (api_png.h): three launches per batch over the images' zlib streams,
 * which the host gathered and uploads with the descriptors in one block.
 *
 *   inflate   one warp per image: lane 0 runs src/shared/inflate.h into the image's
 *             scanline buffer (bounded by the size IHDR gives), then the 32 lanes sum
 *             the Adler-32 over spans and lane 0 compares it with the stream's;
 *   unfilter  one block per image: the rows of each pass in order; None / Up rows with
 *             every thread on its bytes, Sub / Average / Paeth with one thread per byte
 *             lane of a pixel (a byte needs the finished byte bpp to its left);
 *   expand    one thread per output pixel (stk_png_pixel: bit depth, palette, Adam7,
 *             colour), the region only.
 * A failure (bad stream, filter type or palette index) marks the image's status; later
 * launches skip it; the host reads the statuses after a bounded wait and the caller
 * decodes the failed images on the CPU, which gives the verdict. */
#include <stdlib.h>
#include <string.h>

#include "api_png.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"
#include "../shared/inflate.h"
#include "../shared/png_common.h"

#define EXPAND_THREADS   256
#define UNFILTER_THREADS 128

/* One image on the device. */
typedef struct {
  stk_png_header hdr;
  stk_png_layout layout;
  uint64_t zoff; /* the zlib stream: at this offset from the uploaded block's start */
  uint64_t zsize;
  uint8_t *raw;            /* layout.total bytes (+ 16): the scanlines */
  stk_inf_tables *scratch; /* the inflater's tables (global memory: see inflate_kernel) */
  int x, y, w, h;
  uint8_t *dst;
  uint64_t pitch;
} png_job;

/* ---- inflate ---- */

__global__ void inflate_kernel(const png_job *jobs, int n, int *status) {
  int i = blockIdx.x;
  if (i >= n) return;
  const png_job *J = &jobs[i];
  int lane = threadIdx.x;
  __shared__ int rc;
  __shared__ uint32_t want;
  __shared__ uint32_t sums[32][2];
  if (lane == 0) {
    /* The Huffman tables (3.4 KiB) live in a global scratch block, not in the thread's
     * local memory: a 3.9 KiB stack frame would make the driver reserve it for every
     * thread the device can hold (about 1 GiB on an H100); the cursor stays in registers */
    uint32_t adler = 0;
    const uint8_t *z = (const uint8_t *)jobs + J->zoff;
    rc = stk_inflate_zlib_unchecked(J->scratch, z, J->zsize, J->raw, (size_t)J->layout.total,
                                    &adler);
    want = adler;
  }
  __syncthreads();
  if (rc != STK_INF_OK) {
    if (lane == 0) status[i] = STK_GPU_DECODE_FAILED;
    return;
  }
  size_t total = (size_t)J->layout.total, lo = total * lane / 32, hi = total * (lane + 1) / 32;
  uint32_t a, b;
  stk_adler_span(J->raw + lo, hi - lo, &a, &b);
  sums[lane][0] = a, sums[lane][1] = b;
  __syncthreads();
  if (lane == 0) {
    uint32_t A = 1, B = 0;
    for (int k = 0; k < 32; k++) {
      size_t klo = total * k / 32, khi = total * (k + 1) / 32;
      stk_adler_extend(&A, &B, khi - klo, sums[k][0], sums[k][1]);
    }
    if ((B << 16 | A) != want) status[i] = STK_GPU_DECODE_FAILED;
  }
}

/* ---- unfilter ---- */

/* One row of one pass: the threads share its bytes (None / Up) or its byte lanes. */
static __device__ void unfilter_row(int type, uint8_t *row, const uint8_t *prev, int64_t size,
                                    int bpp) {
  if (type == 0) return;
  if (type == 2) {
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
      stk_png_unfilter_byte(type, row, prev, i, bpp);
    return;
  }
  if ((int)threadIdx.x < bpp) stk_png_unfilter_lane(type, row, prev, size, bpp, threadIdx.x);
}

__global__ void unfilter_kernel(const png_job *jobs, int n, int *status) {
  int i = blockIdx.x;
  if (i >= n || status[i] != STK_GPU_DECODE_OK) return;
  const png_job *J = &jobs[i];
  const stk_png_layout *L = &J->layout;
  for (int p = 0; p < L->npass; p++) {
    const stk_png_pass *P = &L->pass[p];
    const uint8_t *prev = NULL;
    for (int32_t y = 0; y < P->h; y++) {
      uint8_t *row = J->raw + P->offset + (int64_t)y * (P->row_size + 1);
      int type = row[0]; /* read by every thread before any writes below */
      if (type > 4) {
        if (threadIdx.x == 0) status[i] = STK_GPU_DECODE_FAILED;
        return; /* every thread reads the same byte: all leave together */
      }
      unfilter_row(type, row + 1, prev, P->row_size, L->bpp);
      prev = row + 1;
      __syncthreads();
    }
  }
}

/* ---- expand ---- */

__global__ void __launch_bounds__(EXPAND_THREADS)
    expand_kernel(const png_job *jobs, const int *first, int n, int color, int *status) {
  int i = stk_find_sample(first, n, blockIdx.x);
  const png_job *J = &jobs[i];
  if (status[i] != STK_GPU_DECODE_OK) return;
  int64_t k = (int64_t)(blockIdx.x - first[i]) * EXPAND_THREADS + threadIdx.x;
  if (k >= (int64_t)J->w * J->h) return;
  int r = (int)(k / J->w), c = (int)(k % J->w);
  int channels = color == STK_PNG_GRAY ? 1 : 3;
  uint8_t *out = J->dst + (size_t)r * J->pitch + (size_t)c * channels;
  if (stk_png_pixel(&J->hdr, &J->layout, J->raw, J->x + c, J->y + r, color, out) != 0)
    status[i] = STK_GPU_DECODE_FAILED; /* racing writers all write the same value */
}

/* ---- the entry point ---- */

/* The host block, uploaded as is: jobs, then first[n + 1], then the zlib streams. */
typedef struct {
  char *host;
  size_t jobs_bytes, first_bytes, bytes;
  size_t *zoff; /* each stream's offset in the block */
} png_block;

static int check_samples(int n, const stk_gpu_png_sample *s, int color, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !s)) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (color < 0 || color > 2) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown color %d", color);
  for (int i = 0; i < n; i++) {
    const stk_gpu_png_sample *p = &s[i];
    const stk_png_header *h = &p->hdr;
    bool whole = p->roi_w <= 0 || p->roi_h <= 0;
    if (!p->zdata || p->zsize == 0 || !p->dst || h->width <= 0 || h->height <= 0 ||
        h->palette_size < 0 || h->palette_size > 256 ||
        (!whole && (p->roi_x < 0 || p->roi_y < 0 || p->roi_x + p->roi_w > h->width ||
                    p->roi_y + p->roi_h > h->height)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "sample %d: no data or destination, or a bad "
                      "header or region",
                      i);
  }
  return 0;
}

/* Fills the jobs: scanline buffers and Huffman tables carved from one device block at
 * `raw` (raw_bytes of scanlines, then n tables). */
static void fill_jobs(png_block *B, int n, const stk_gpu_png_sample *s, uint8_t *raw,
                      size_t raw_bytes) {
  png_job *jobs = (png_job *)B->host;
  stk_inf_tables *tables = (stk_inf_tables *)(raw + raw_bytes);
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    png_job *J = &jobs[i];
    J->hdr = s[i].hdr;
    stk_png_layout_of(&J->hdr, &J->layout);
    J->zoff = B->zoff[i];
    J->zsize = s[i].zsize;
    J->raw = raw + off;
    J->scratch = &tables[i];
    off += ((size_t)J->layout.total + 16 + 15) & ~(size_t)15;
    bool whole = s[i].roi_w <= 0 || s[i].roi_h <= 0;
    J->x = whole ? 0 : s[i].roi_x, J->y = whole ? 0 : s[i].roi_y;
    J->w = whole ? J->hdr.width : s[i].roi_w, J->h = whole ? J->hdr.height : s[i].roi_h;
    J->dst = s[i].dst;
    J->pitch = s[i].dst_pitch;
  }
}

static int plan_block(png_block *B, int n, const stk_gpu_png_sample *s, size_t *raw_bytes,
                      char *err, size_t errlen) {
  B->jobs_bytes = (size_t)n * sizeof(png_job);
  B->first_bytes = (size_t)(n + 1) * sizeof(int);
  size_t at = (B->jobs_bytes + B->first_bytes + 15) & ~(size_t)15;
  B->zoff = (size_t *)malloc((size_t)n * sizeof(size_t));
  if (!B->zoff) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d offsets", n);
  *raw_bytes = 0;
  for (int i = 0; i < n; i++) {
    B->zoff[i] = at;
    at += s[i].zsize;
    stk_png_layout L;
    stk_png_layout_of(&s[i].hdr, &L);
    *raw_bytes += ((size_t)L.total + 16 + 15) & ~(size_t)15;
  }
  B->bytes = at;
  B->host = (char *)malloc(B->bytes);
  if (!B->host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %zu bytes", B->bytes);
  for (int i = 0; i < n; i++) memcpy(B->host + B->zoff[i], s[i].zdata, s[i].zsize);
  return 0;
}

/* Blocks of the expand launch per image. */
static int expand_table(const png_block *B, int n, char *err, size_t errlen) {
  const png_job *jobs = (const png_job *)B->host;
  int64_t *blocks = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  if (!blocks) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d counts", n);
  for (int i = 0; i < n; i++) blocks[i] = stk_cdiv((int64_t)jobs[i].w * jobs[i].h, EXPAND_THREADS);
  int rc = stk_block_table(blocks, n, (int *)(B->host + B->jobs_bytes), err, errlen);
  free(blocks);
  return rc;
}

/* Queues the three launches; the statuses start at OK (0). */
static int launch_all(const char *dev, int n, int color, int *d_status, int expand_blocks,
                      cudaStream_t st, char *err, size_t errlen) {
  const png_job *jobs = (const png_job *)dev;
  const int *first = (const int *)(dev + (size_t)n * sizeof(png_job));
  CUDA_TRY(cudaMemsetAsync(d_status, 0, (size_t)n * sizeof(int), st));
  inflate_kernel<<<n, 32, 0, st>>>(jobs, n, d_status);
  STK_TRY_INT(stk_check_launch("png inflate", err, errlen));
  unfilter_kernel<<<n, UNFILTER_THREADS, 0, st>>>(jobs, n, d_status);
  STK_TRY_INT(stk_check_launch("png unfilter", err, errlen));
  if (expand_blocks > 0) {
    expand_kernel<<<expand_blocks, EXPAND_THREADS, 0, st>>>(jobs, first, n, color, d_status);
    STK_TRY_INT(stk_check_launch("png expand", err, errlen));
  }
  return 0;
}

static int png_decode(stk_gpu_ctx *ctx, int n, const stk_gpu_png_sample *s, int color, int *status,
                      uintptr_t stream, char *err, size_t errlen) {
  STK_TRY_INT(check_samples(n, s, color, err, errlen));
  if (n == 0) return 0;
  if (!status) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no status array");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  cudaStream_t st = (cudaStream_t)stream;
  png_block B;
  memset(&B, 0, sizeof B);
  size_t raw_bytes = 0;
  void *dev = NULL, *raw = NULL, *d_status = NULL;
  int rc = plan_block(&B, n, s, &raw_bytes, err, errlen);
  size_t scratch = (size_t)n * sizeof(stk_inf_tables);
  if (rc == 0) rc = stk_gpu_device_alloc(ctx, raw_bytes + scratch, stream, &raw, err, errlen);
  if (rc == 0)
    rc = stk_gpu_device_alloc(ctx, (size_t)n * sizeof(int), stream, &d_status, err, errlen);
  if (rc == 0) {
    fill_jobs(&B, n, s, (uint8_t *)raw, raw_bytes);
    rc = expand_table(&B, n, err, errlen);
  }
  /* the jobs, the expand table and the streams in one upload (pinned staging) */
  if (rc == 0) rc = stk_gpu_upload(ctx, B.host, B.bytes, st, &dev, err, errlen);
  if (rc == 0) {
    int blocks = ((int *)(B.host + B.jobs_bytes))[n];
    rc = launch_all((const char *)dev, n, color, (int *)d_status, blocks, st, err, errlen);
  }
  if (rc == 0)
    rc = stk_gpu_read_statuses(ctx, (const int *)d_status, n, status, st, "stk_gpu_png_decode",
                               "the PNG batch", err, errlen);
  stk_gpu_device_free(ctx, dev, stream, NULL, 0);
  stk_gpu_device_free(ctx, raw, stream, NULL, 0);
  stk_gpu_device_free(ctx, d_status, stream, NULL, 0);
  free(B.host);
  free(B.zoff);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_png_decode(stk_gpu_ctx *ctx, int n, const stk_gpu_png_sample *samples,
                         const stk_gpu_png_args *args, uintptr_t stream, char *err, size_t errlen) {
  return png_decode(ctx, n, samples, args->color, args->status, stream, err, errlen);
}
