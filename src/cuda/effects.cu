/*
 * GPU kernels of the image effects (api_effects.h): one per-pixel kernel evaluating
 * src/shared/effects_px.h's stk_fx_eval -- the function the CPU operators call -- for
 * every output element, and clahe's table kernel (a block per tile and plane: a shared
 * histogram, then stk_fx_clahe_lut as on the CPU).
 *
 * As the other kernel files, each entry point uploads its per-sample descriptors and a
 * table of each sample's first block in one copy and makes one launch for the batch.
 */
#include <stdlib.h>
#include <string.h>

#include "api_effects.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"

#define FX_THREADS 256

namespace {

/* n descriptors of `desc` bytes followed by the first-block table (n + 1 ints). */
typedef struct {
  char *host;
  size_t bytes, table_off;
  int64_t *nb;
} fx_plan;

static int fx_plan_init(fx_plan *p, int n, size_t desc, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  p->table_off = (size_t)n * desc;
  p->bytes = p->table_off + (size_t)(n + 1) * sizeof(int);
  p->host = (char *)calloc(1, p->bytes);
  p->nb = (int64_t *)calloc((size_t)n + 1, sizeof(int64_t));
  if (!p->host || !p->nb)
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  return 0;
}

static void fx_plan_free(fx_plan *p) {
  free(p->host);
  free(p->nb);
}

/* Builds the block table, uploads, and runs launch(device descriptors, table, blocks). */
template <class Launch>
static int fx_plan_run(stk_gpu_ctx *ctx, fx_plan *p, int n, uintptr_t stream, const char *what,
                       char *err, size_t errlen, Launch launch) {
  int *first = (int *)(p->host + p->table_off);
  STK_TRY_INT(stk_block_table(p->nb, n, first, err, errlen));
  if (first[n] == 0) return 0;
  void *dp = NULL;
  int rc = stk_gpu_upload(ctx, p->host, p->bytes, (cudaStream_t)stream, &dp, err, errlen);
  if (rc == 0) {
    launch((const char *)dp, (const int *)((const char *)dp + p->table_off), first[n]);
    rc = stk_check_launch(what, err, errlen);
  }
  if (dp) stk_gpu_device_free(ctx, dp, stream, NULL, 0);
  return rc;
}

static bool fx_dtype_ok(stk_dtype t) {
  return t == STK_DTYPE_UINT8 || t == STK_DTYPE_UINT16 || t == STK_DTYPE_INT16 ||
         t == STK_DTYPE_FLOAT32;
}

/* ---------------------------------------------------------------------------------- */
/* The per-pixel kernel                                                               */
/* ---------------------------------------------------------------------------------- */

/* One thread per output pixel, every channel. */
__global__ void __launch_bounds__(FX_THREADS)
    fx_pixel_kernel(const stk_gpu_fx_sample *S, const int *first, int n, int in_dt, int out_dt) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_fx_sample &s = S[si];
  long long px = (long long)(b - first[si]) * FX_THREADS + threadIdx.x;
  long long total = (long long)s.out_h * s.out_w;
  if (px >= total) return;
  long long y = px / s.out_w, x = px - y * s.out_w;
  stk_fx_image im = {s.src, in_dt, s.h, s.w, s.c};
  stk_fx_eval_pixel(&s.p, &im, x, y, s.out_w, s.out_c, s.dst, out_dt, px * s.out_c);
}

static int gpu_fx_pixel(stk_gpu_ctx *ctx, int n, const stk_gpu_fx_sample *samples,
                        stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream, char *err,
                        size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (!fx_dtype_ok(in_dtype) || !fx_dtype_ok(out_dtype))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "types %d -> %d (uint8, uint16, int16, float32)",
                    (int)in_dtype, (int)out_dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  fx_plan p;
  int rc = fx_plan_init(&p, n, sizeof(stk_gpu_fx_sample), err, errlen);
  stk_gpu_fx_sample *S = (stk_gpu_fx_sample *)p.host;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_fx_sample *s = &samples[i];
    if (s->h < 1 || s->w < 1 || s->c < 1 || s->out_h < 0 || s->out_w < 0 || s->out_c < 1 ||
        !s->src || (!s->dst && s->out_h > 0 && s->out_w > 0)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad sizes or NULL pointers", i);
      break;
    }
    if (s->p.op == STK_FX_OP_MEDIAN && s->p.kh * s->p.kw > STK_FX_MEDIAN_MAX) {
      rc = GPU_FAIL(STK_ERR_UNSUPPORTED, "sample %d: median window over %d elements", i,
                    STK_FX_MEDIAN_MAX);
      break;
    }
    S[i] = *s;
    p.nb[i] = stk_cdiv((int64_t)s->out_h * s->out_w, FX_THREADS);
  }
  if (rc == 0)
    rc = fx_plan_run(ctx, &p, n, stream, "effects", err, errlen,
                     [&](const char *dS, const int *df, int blocks) {
                       fx_pixel_kernel<<<blocks, FX_THREADS, 0, (cudaStream_t)stream>>>(
                           (const stk_gpu_fx_sample *)dS, df, n, (int)in_dtype, (int)out_dtype);
                     });
  fx_plan_free(&p);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* clahe's tables                                                                     */
/* ---------------------------------------------------------------------------------- */

/* Block b of a sample: plane b / (tiles_y tiles_x), tile b % (tiles_y tiles_x). */
__global__ void __launch_bounds__(FX_THREADS)
    fx_clahe_kernel(const stk_gpu_clahe_sample *S, const int *first, int n) {
  __shared__ int hist[256];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_clahe_sample &s = S[si];
  int local = b - first[si], tiles = s.tiles_y * s.tiles_x;
  int plane = local / tiles, t = local - plane * tiles;
  int ty = t / s.tiles_x, tx = t - ty * s.tiles_x;
  for (int i = threadIdx.x; i < 256; i += FX_THREADS) hist[i] = 0;
  __syncthreads();
  long long area = (long long)s.th * s.tw;
  for (long long k = threadIdx.x; k < area; k += FX_THREADS) {
    long long y = (long long)ty * s.th + k / s.tw, x = (long long)tx * s.tw + k % s.tw;
    atomicAdd(&hist[stk_fx_clahe_padded(s.src, s.h, s.w, s.c, x, y, plane, s.luma)], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0)
    stk_fx_clahe_lut(hist, (int)area, s.limit, s.luts + ((long long)plane * tiles + t) * 256);
}

static int gpu_fx_clahe_luts(stk_gpu_ctx *ctx, int n, const stk_gpu_clahe_sample *samples,
                             uintptr_t stream, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  fx_plan p;
  int rc = fx_plan_init(&p, n, sizeof(stk_gpu_clahe_sample), err, errlen);
  stk_gpu_clahe_sample *S = (stk_gpu_clahe_sample *)p.host;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_clahe_sample *s = &samples[i];
    if (!s->src || !s->luts || s->h < 1 || s->w < 1 || s->c < 1 || s->tiles_y < 1 ||
        s->tiles_x < 1 || s->th < 1 || s->tw < 1 || (s->luma && s->c != 3)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad clahe geometry", i);
      break;
    }
    S[i] = *s;
    p.nb[i] = (int64_t)(s->luma ? 1 : s->c) * s->tiles_y * s->tiles_x;
  }
  if (rc == 0)
    rc = fx_plan_run(ctx, &p, n, stream, "clahe", err, errlen,
                     [&](const char *dS, const int *df, int blocks) {
                       fx_clahe_kernel<<<blocks, FX_THREADS, 0, (cudaStream_t)stream>>>(
                           (const stk_gpu_clahe_sample *)dS, df, n);
                     });
  fx_plan_free(&p);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* jpeg_compression_distortion                                                        */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_jpeg_sample s;
  int mcus_x, mcus;
} je_dev;

/* Pass 1: thread t of a sample's range reconstructs MCU t into the planes. */
__global__ void __launch_bounds__(64) fx_jpeg_mcu_kernel(const je_dev *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const je_dev &d = S[si];
  long long t = (long long)(b - first[si]) * 64 + threadIdx.x;
  if (t >= d.mcus) return;
  stk_je_mcu(d.s.src, d.s.h, d.s.w, d.s.ql, d.s.qc, t % d.mcus_x, t / d.mcus_x, d.s.planes);
}

/* Pass 2: one thread per output pixel. */
__global__ void __launch_bounds__(FX_THREADS)
    fx_jpeg_pixel_kernel(const je_dev *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_jpeg_sample &s = S[si].s;
  long long px = (long long)(b - first[si]) * FX_THREADS + threadIdx.x;
  if (px >= (long long)s.h * s.w) return;
  long long y = px / s.w, x = px - y * s.w;
  stk_je_pixel(s.planes, s.h, s.w, x, y, s.dst + px * 3);
}

static int gpu_fx_jpeg(stk_gpu_ctx *ctx, int n, const stk_gpu_jpeg_sample *samples,
                       uintptr_t stream, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  fx_plan p1, p2;
  int rc = fx_plan_init(&p1, n, sizeof(je_dev), err, errlen);
  if (rc == 0)
    rc = fx_plan_init(&p2, n, sizeof(je_dev), err, errlen);
  else
    memset(&p2, 0, sizeof p2);
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_jpeg_sample *s = &samples[i];
    if (!s->src || !s->dst || !s->planes || s->h < 1 || s->w < 1) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad sizes or NULL pointers", i);
      break;
    }
    je_dev d = {*s, (s->w + 15) / 16, 0};
    d.mcus = d.mcus_x * ((s->h + 15) / 16);
    ((je_dev *)p1.host)[i] = d;
    ((je_dev *)p2.host)[i] = d;
    p1.nb[i] = stk_cdiv(d.mcus, 64);
    p2.nb[i] = stk_cdiv((int64_t)s->h * s->w, FX_THREADS);
  }
  if (rc == 0)
    rc = fx_plan_run(ctx, &p1, n, stream, "jpeg_compression_distortion", err, errlen,
                     [&](const char *dS, const int *df, int blocks) {
                       fx_jpeg_mcu_kernel<<<blocks, 64, 0, (cudaStream_t)stream>>>(
                           (const je_dev *)dS, df, n);
                     });
  if (rc == 0)
    rc = fx_plan_run(ctx, &p2, n, stream, "jpeg_compression_distortion", err, errlen,
                     [&](const char *dS, const int *df, int blocks) {
                       fx_jpeg_pixel_kernel<<<blocks, FX_THREADS, 0, (cudaStream_t)stream>>>(
                           (const je_dev *)dS, df, n);
                     });
  fx_plan_free(&p1);
  fx_plan_free(&p2);
  return rc;
}

} // namespace

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_fx_pixel(stk_gpu_ctx *ctx, int n, const stk_gpu_fx_sample *samples,
                       const stk_gpu_io_args *args, uintptr_t stream, char *err, size_t errlen) {
  return gpu_fx_pixel(ctx, n, samples, args->in_dtype, args->out_dtype, stream, err, errlen);
}

int stk_gpu_k_fx_clahe_luts(stk_gpu_ctx *ctx, int n, const stk_gpu_clahe_sample *samples,
                            const stk_gpu_no_args *args, uintptr_t stream, char *err,
                            size_t errlen) {
  (void)args;
  return gpu_fx_clahe_luts(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_fx_jpeg_distort(stk_gpu_ctx *ctx, int n, const stk_gpu_jpeg_sample *samples,
                              const stk_gpu_no_args *args, uintptr_t stream, char *err,
                              size_t errlen) {
  (void)args;
  return gpu_fx_jpeg(ctx, n, samples, stream, err, errlen);
}
