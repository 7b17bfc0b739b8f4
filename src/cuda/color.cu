/*
 * GPU kernels of the colour operators (api_color.h): brightness / contrast /
 * brightness_contrast / saturation / hue / hsv / color_twist / color_space_conversion /
 * grayscale / invert / posterize / solarize(_add) / equalize / auto_contrast / sharpness.
 *
 * Five batched kernels serve them all, each one launch per batch (stats: two):
 * - lut: uint8 input through per-sample tables built on the host by the CPU's own code
 *   (every point operation on uint8, Pillow's blends with a constant): exact; uint8
 *   output moves as 16-byte vectors with a scalar head / tail (pixel_tiles.cuh);
 * - point: an elementwise float64 function for the other input types;
 * - pixel: whole-pixel maps (the 3x3 + offset colour matrices, PIL's luma and
 *   ImageEnhance.Color);
 * - stats: per-sample histograms / sums in shared memory merged with atomics; the last
 *   block of each sample builds the sample's tables (color_math.h) and a second launch
 *   applies them;
 * - sharpness: the 3x3 SMOOTH stencil blended with the image.
 * The arithmetic is color_math.h's, shared with src/ops/color*.c, so uint8 and table
 * results are bit-identical to the CPU and float64 maps match it step for step.
 *
 * As in kernels.cu, per-sample descriptors and a table of each sample's first block go
 * to the device in one upload; block b belongs to the last sample i with first[i] <= b.
 */
#include <cuda_fp16.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/color_math.h"
#include "api_color.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"
#include "pixel_tiles.cuh"

#define CT        256 /* threads per block */
#define CHUNK     16  /* elements (or pixels) per thread */
#define LUT_CHUNK 32  /* elements per thread of the table kernel (groups of 4) */
#define MAX_C     4   /* channels: stk__gpu_image_dims's bound */

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

static size_t clr_esize(stk_dtype t) {
  switch (t) {
    case STK_DTYPE_UINT8:
      return 1;
    case STK_DTYPE_INT16:
    case STK_DTYPE_FLOAT16:
      return 2;
    case STK_DTYPE_INT32:
    case STK_DTYPE_FLOAT32:
      return 4;
    default:
      return 0; /* not a colour type */
  }
}

/* Element i of a colour-type array as a double (exact for every type). */
__device__ __forceinline__ double clr_load(const void *p, int t, int64_t i) {
  switch (t) {
    case STK_DTYPE_UINT8:
      return (double)((const uint8_t *)p)[i];
    case STK_DTYPE_INT16:
      return (double)((const int16_t *)p)[i];
    case STK_DTYPE_INT32:
      return (double)((const int32_t *)p)[i];
    case STK_DTYPE_FLOAT16:
      return (double)__half2float(((const __half *)p)[i]);
    default:
      return (double)((const float *)p)[i];
  }
}

/* Stores v with the CPU's conversion rules: uint8 by stk__from_f64 (`rows`, the float64
 * row paths) or by stk__convert (the uint8 table paths); int16 / int32 rounded half away
 * from zero and saturated; floats through float32 (float16: rounded to nearest even). */
__device__ __forceinline__ void clr_store(void *p, int t, int64_t i, double v, bool rows) {
  switch (t) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)p)[i] = rows ? stk_color_u8_rows(v) : (uint8_t)stk_color_round_sat(v, 0.0, 255.0);
      return;
    case STK_DTYPE_INT16:
      ((int16_t *)p)[i] = (int16_t)stk_color_round_sat(v, -32768.0, 32767.0);
      return;
    case STK_DTYPE_INT32:
      ((int32_t *)p)[i] = (int32_t)stk_color_round_sat(v, -2147483648.0, 2147483647.0);
      return;
    case STK_DTYPE_FLOAT16:
      ((__half *)p)[i] = __float2half_rn((float)v);
      return;
    default:
      ((float *)p)[i] = (float)v;
      return;
  }
}

/* Copies a table entry of `es` bytes. */
__device__ __forceinline__ void clr_put(void *dst, int64_t i, const uint8_t *tab, int v, int es) {
  switch (es) {
    case 1:
      ((uint8_t *)dst)[i] = tab[v];
      return;
    case 2:
      ((uint16_t *)dst)[i] = ((const uint16_t *)tab)[v];
      return;
    default:
      ((uint32_t *)dst)[i] = ((const uint32_t *)tab)[v];
      return;
  }
}

/* A host staging area: n descriptors of `dsize` bytes, the first-block table and
 * `extra` bytes (tables), uploaded as one block. */
typedef struct {
  char *host;
  size_t bytes, first_off, extra_off;
  int64_t *nb;
} clr_stage;

static int clr_stage_open(clr_stage *st, int n, size_t dsize, size_t extra, char *err,
                          size_t errlen) {
  st->first_off = (size_t)n * dsize;
  st->extra_off = (st->first_off + (size_t)(n + 1) * sizeof(int) + 15) & ~(size_t)15;
  st->bytes = st->extra_off + extra;
  st->host = (char *)malloc(st->bytes);
  st->nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  if (!st->host || !st->nb) {
    free(st->host);
    free(st->nb);
    st->host = NULL, st->nb = NULL;
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  }
  return 0;
}

static void clr_stage_close(clr_stage *st) {
  free(st->host);
  free(st->nb);
}

static int clr_check_types(stk_dtype in, stk_dtype out, bool u8_in, char *err, size_t errlen) {
  if (!clr_esize(in) || !clr_esize(out) || (u8_in && in != STK_DTYPE_UINT8))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "dtypes %d -> %d are not supported (%s)", (int)in,
                    (int)out, u8_in ? "uint8 input" : "uint8, int16, int32, float16, float32");
  return 0;
}

/* ---------------------------------------------------------------------------------- */
/* lut                                                                                */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_clr_lut_sample s;
  int64_t count;
  int64_t nvec; /* vector path: aligned 16-byte vectors after `head` scalar bytes */
  int head;
  int vec; /* 1: uint8 -> uint8 with src and dst equally aligned (vector path) */
} lut_dev;

#define LUT_VPT 4 /* 16-byte vectors per thread of the vector path */

/* Chooses the path of one sample and returns its block count (host). */
static int64_t lut_plan(lut_dev *d, int es) {
  uintptr_t a = (uintptr_t)d->s.src, b = (uintptr_t)d->s.dst;
  d->vec = es == 1 && ((a ^ b) & 15) == 0;
  if (!d->vec) return stk_cdiv(d->count, CT * LUT_CHUNK);
  int64_t head = (int64_t)((16 - (a & 15)) & 15);
  if (head > d->count) head = d->count;
  d->head = (int)head;
  d->nvec = (d->count - head) / 16;
  int64_t nb = stk_cdiv(d->nvec, (int64_t)CT * LUT_VPT);
  return d->count > 0 && nb == 0 ? 1 : nb;
}

/* One table lookup per byte of a 16-byte vector whose first byte is of channel ch. */
__device__ __forceinline__ uint4 lut_vec(uint4 v, const uint8_t *tab, int ch, int c) {
  uint4 o = v;
  if (c == 1) {
#pragma unroll
    for (int j = 0; j < 16; j++) pt_set_byte(o, j, tab[pt_byte(v, j)]);
    return o;
  }
#pragma unroll
  for (int j = 0; j < 16; j++) {
    pt_set_byte(o, j, tab[ch * 256 + pt_byte(v, j)]);
    ch = ch + 1 == c ? 0 : ch + 1;
  }
  return o;
}

/* The vector path: block k of a sample maps vectors [k, k + 1) * CT * LUT_VPT (a warp
 * moves 512 contiguous bytes per step); block 0 also the scalar head, the last block the
 * scalar tail. */
__device__ __forceinline__ void lut_vec_block(const lut_dev *d, int k, int nblocks,
                                              const uint8_t *tab) {
  const uint8_t *src = d->s.src;
  uint8_t *dst = (uint8_t *)d->s.dst;
  int c = d->s.c, t = threadIdx.x;
  int64_t head = d->head, v0 = (int64_t)k * CT * LUT_VPT;
  const uint4 *sv = (const uint4 *)(src + head);
  uint4 *dv = (uint4 *)(dst + head);
  uint4 buf[LUT_VPT];
#pragma unroll
  for (int g = 0; g < LUT_VPT; g++) {
    int64_t v = v0 + (int64_t)g * CT + t;
    if (v < d->nvec) buf[g] = sv[v];
  }
#pragma unroll
  for (int g = 0; g < LUT_VPT; g++) {
    int64_t v = v0 + (int64_t)g * CT + t;
    if (v < d->nvec) dv[v] = lut_vec(buf[g], tab, (int)((head + v * 16) % c), c);
  }
  if (k == 0 && t < head) dst[t] = tab[(t % c) * 256 + src[t]];
  if (k == nblocks - 1) {
    int64_t e = head + d->nvec * 16 + t;
    if (t < 16 && e < d->count) dst[e] = tab[(int)(e % c) * 256 + src[e]];
  }
}

/* The general path: each block CT * LUT_CHUNK elements; thread t handles groups of 4
 * consecutive elements at (g * CT + t) * 4 for g < LUT_CHUNK / 4, with uchar4 loads /
 * stores when aligned. The tables are copied to shared memory once per block. */
__global__ void __launch_bounds__(CT)
    lut_kernel(const lut_dev *S, const int *first, int n, const uint8_t *luts, int es) {
  __shared__ __align__(16) uint8_t tab[MAX_C * 256 * 4];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const lut_dev *d = &S[si];
  int c = d->s.c, tb = c * 256 * es;
  const uint8_t *g = luts + d->s.lut_offset;
  for (int k = threadIdx.x; k < tb; k += CT) tab[k] = g[k];
  __syncthreads();
  if (d->vec) {
    lut_vec_block(d, b - first[si], first[si + 1] - first[si], tab);
    return;
  }
  const uint8_t *src = d->s.src;
  void *dst = d->s.dst;
  int64_t base = (int64_t)(b - first[si]) * CT * LUT_CHUNK;
  bool vec = es == 1 && ((uintptr_t)src % 4 == 0) && ((uintptr_t)dst % 4 == 0);
  for (int gi = 0; gi < LUT_CHUNK / 4; gi++) {
    int64_t e = base + ((int64_t)gi * CT + threadIdx.x) * 4;
    if (e >= d->count) break;
    int ch = (int)(e % c);
    if (vec && e + 4 <= d->count) {
      uchar4 v = *(const uchar4 *)(src + e), o;
      o.x = tab[ch * 256 + v.x];
      ch = ch + 1 == c ? 0 : ch + 1;
      o.y = tab[ch * 256 + v.y];
      ch = ch + 1 == c ? 0 : ch + 1;
      o.z = tab[ch * 256 + v.z];
      ch = ch + 1 == c ? 0 : ch + 1;
      o.w = tab[ch * 256 + v.w];
      *(uchar4 *)((uint8_t *)dst + e) = o;
      continue;
    }
    for (int k = 0; k < 4 && e + k < d->count; k++) {
      clr_put(dst, e + k, tab + (size_t)ch * 256 * es, src[e + k], es);
      ch = ch + 1 == c ? 0 : ch + 1;
    }
  }
}

/* Launches lut_kernel over descriptors already on the device. */
static int lut_launch(const lut_dev *dS, const int *dfirst, int n, int blocks, const uint8_t *luts,
                      int es, cudaStream_t stream, char *err, size_t errlen) {
  if (blocks == 0) return 0;
  lut_kernel<<<blocks, CT, 0, stream>>>(dS, dfirst, n, luts, es);
  return stk_check_launch("color lut", err, errlen);
}

static int clr_lut(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_lut_sample *samples, const void *luts,
                   size_t lut_bytes, stk_dtype out_dtype, uintptr_t stream_h, char *err,
                   size_t errlen) {
  if (n < 0 || (n > 0 && (!samples || !luts)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  STK_TRY_INT(clr_check_types(STK_DTYPE_UINT8, out_dtype, true, err, errlen));
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  int es = (int)clr_esize(out_dtype);
  clr_stage st;
  STK_TRY_INT(clr_stage_open(&st, n, sizeof(lut_dev), lut_bytes, err, errlen));
  lut_dev *S = (lut_dev *)st.host;
  int *first = (int *)(st.host + st.first_off);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_clr_lut_sample *s = &samples[i];
    int64_t count = s->pixels * s->c;
    if (s->c < 1 || s->c > MAX_C || s->pixels < 0 ||
        s->lut_offset + (size_t)s->c * 256 * (size_t)es > lut_bytes ||
        (count > 0 && (!s->src || !s->dst)))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: %d channels (1..%d), %lld pixels, table "
                    "at %zu of %zu bytes or NULL pointers",
                    i, s->c, MAX_C, (long long)s->pixels, s->lut_offset, lut_bytes);
    memset(&S[i], 0, sizeof S[i]);
    S[i].s = *s;
    S[i].count = count;
    st.nb[i] = lut_plan(&S[i], es);
  }
  if (rc == 0) rc = stk_block_table(st.nb, n, first, err, errlen);
  memcpy(st.host + st.extra_off, luts, lut_bytes);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "color lut", err, errlen, [&](const char *dp) {
          return lut_launch((const lut_dev *)dp, (const int *)(dp + st.first_off), n, first[n],
                            (const uint8_t *)dp + st.extra_off, es, stream, err, errlen);
        });
  clr_stage_close(&st);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* point                                                                              */
/* ---------------------------------------------------------------------------------- */

__device__ __forceinline__ double point_fn(int op, const double *p, double x) {
  switch (op) {
    case STK_GPU_CLR_LINEAR:
      return stk_color_linear(x, p[0], p[1]);
    case STK_GPU_CLR_INVERT:
      return stk_color_invert(x, p[0]);
    case STK_GPU_CLR_SOLARIZE:
      return stk_color_solarize(x, p[0], p[1]);
    default:
      return stk_color_solarize_add(x, p[0], p[1], p[2]);
  }
}

__global__ void __launch_bounds__(CT)
    point_kernel(const stk_gpu_clr_point_sample *S, const int *first, int n, int it, int ot) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_clr_point_sample *s = &S[si];
  double p[3] = {s->p[0], s->p[1], s->p[2]};
  int op = s->op;
  int64_t base = (int64_t)(b - first[si]) * CT * CHUNK + threadIdx.x;
  for (int k = 0; k < CHUNK; k++) {
    int64_t e = base + (int64_t)k * CT;
    if (e >= s->count) break;
    clr_store(s->dst, ot, e, point_fn(op, p, clr_load(s->src, it, e)), true);
  }
}

static int clr_point(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_point_sample *samples,
                     stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream_h, char *err,
                     size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  STK_TRY_INT(clr_check_types(in_dtype, out_dtype, false, err, errlen));
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  clr_stage st;
  STK_TRY_INT(clr_stage_open(&st, n, sizeof(stk_gpu_clr_point_sample), 0, err, errlen));
  stk_gpu_clr_point_sample *S = (stk_gpu_clr_point_sample *)st.host;
  int *first = (int *)(st.host + st.first_off);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_clr_point_sample *s = &samples[i];
    if (s->count < 0 || s->op < 0 || s->op > STK_GPU_CLR_SOLARIZE_ADD ||
        (s->count > 0 && (!s->src || !s->dst)))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: op %d, %lld elements or NULL pointers", i,
                    s->op, (long long)s->count);
    S[i] = *s;
    st.nb[i] = stk_cdiv(s->count, CT * CHUNK);
  }
  if (rc == 0) rc = stk_block_table(st.nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "color point", err, errlen, [&](const char *dp) {
          point_kernel<<<first[n], CT, 0, stream>>>((const stk_gpu_clr_point_sample *)dp,
                                                    (const int *)((char *)dp + st.first_off), n,
                                                    (int)in_dtype, (int)out_dtype);
          return 0;
        });
  clr_stage_close(&st);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* pixel                                                                              */
/* ---------------------------------------------------------------------------------- */

__global__ void __launch_bounds__(CT)
    pixel_kernel(const stk_gpu_clr_pixel_sample *S, const int *first, int n, int mode, int it,
                 int ot) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_clr_pixel_sample *s = &S[si];
  int ci = s->cin, co = s->cout;
  int64_t base = (int64_t)(b - first[si]) * CT * CHUNK + threadIdx.x;
  for (int k = 0; k < CHUNK; k++) {
    int64_t px = base + (int64_t)k * CT;
    if (px >= s->pixels) break;
    if (mode == STK_GPU_CLR_AFFINE) {
      double in[3], out[3];
      for (int j = 0; j < ci; j++) in[j] = clr_load(s->src, it, px * ci + j);
      for (int o = 0; o < co; o++) out[o] = stk_color_affine1(s->m + o * ci, s->off[o], in, ci);
      for (int o = 0; o < co; o++) clr_store(s->dst, ot, px * co + o, out[o], true);
      continue;
    }
    const uint8_t *p = (const uint8_t *)s->src + px * 3;
    uint8_t *d = (uint8_t *)s->dst + px * co;
    uint8_t l = stk_color_pil_luma(p[0], p[1], p[2]);
    if (mode == STK_GPU_CLR_PIL_GRAY) {
      for (int o = 0; o < co; o++) d[o] = l;
    } else {
      for (int o = 0; o < 3; o++) d[o] = stk_color_blend1(l, p[o], s->factor);
    }
  }
}

#define PX_TILE (CT * 8) /* pixels per block of the staged uint8 kernel */

/* uint8 -> uint8 whole-pixel maps, staged: the block's input bytes (PX_TILE pixels of
 * cin) come to shared memory as 16-byte vectors, each thread maps pixels there into a
 * shared output tile, which leaves as 16-byte vectors (pixel_tiles.cuh). Same arithmetic
 * as pixel_kernel. */
__global__ void __launch_bounds__(CT)
    pixel_u8_kernel(const stk_gpu_clr_pixel_sample *S, const int *first, int n, int mode) {
  __shared__ __align__(16) uint8_t sin[PX_TILE * 3 + 16], sout[PX_TILE * 3 + 16];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_clr_pixel_sample *s = &S[si];
  int ci = s->cin, co = s->cout;
  int64_t px0 = (int64_t)(b - first[si]) * PX_TILE;
  int np = (int)(s->pixels - px0 < PX_TILE ? s->pixels - px0 : PX_TILE);
  const uint8_t *g = (const uint8_t *)s->src + px0 * ci;
  uint8_t *gd = (uint8_t *)s->dst + px0 * co;
  pt_load(sin, g, np * ci);
  __syncthreads();
  const uint8_t *a = sin + pt_shift(g);
  uint8_t *o = sout + pt_shift(gd);
  if (mode == STK_GPU_CLR_AFFINE && ci == 3 && co == 3) {
    /* the common case with constant extents: matrix and pixel in registers */
    double m[9], off[3];
#pragma unroll
    for (int k = 0; k < 9; k++) m[k] = s->m[k];
#pragma unroll
    for (int k = 0; k < 3; k++) off[k] = s->off[k];
    for (int p = threadIdx.x; p < np; p += CT) {
      const uint8_t *q = a + p * 3;
      double in[3] = {(double)q[0], (double)q[1], (double)q[2]};
      uint8_t *d = o + p * 3;
#pragma unroll
      for (int k = 0; k < 3; k++)
        d[k] = stk_color_u8_rows(stk_color_affine1(m + k * 3, off[k], in, 3));
    }
  } else {
    for (int p = threadIdx.x; p < np; p += CT) {
      const uint8_t *q = a + p * ci;
      uint8_t *d = o + p * co;
      if (mode == STK_GPU_CLR_AFFINE) {
        double in[3], out[3];
        for (int j = 0; j < ci; j++) in[j] = (double)q[j];
        for (int k = 0; k < co; k++) out[k] = stk_color_affine1(s->m + k * ci, s->off[k], in, ci);
        for (int k = 0; k < co; k++) d[k] = stk_color_u8_rows(out[k]);
        continue;
      }
      uint8_t l = stk_color_pil_luma(q[0], q[1], q[2]);
      if (mode == STK_GPU_CLR_PIL_GRAY) {
        for (int k = 0; k < co; k++) d[k] = l;
      } else {
        for (int k = 0; k < 3; k++) d[k] = stk_color_blend1(l, q[k], s->factor);
      }
    }
  }
  __syncthreads();
  pt_store(gd, sout, np * co);
}

static int clr_pixel(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_pixel_sample *samples, int mode,
                     stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream_h, char *err,
                     size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || mode < STK_GPU_CLR_AFFINE || mode > STK_GPU_CLR_PIL_COLOR)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d, mode %d)", n, mode);
  bool pil = mode != STK_GPU_CLR_AFFINE;
  STK_TRY_INT(clr_check_types(in_dtype, out_dtype, pil, err, errlen));
  if (pil && out_dtype != STK_DTYPE_UINT8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "Pillow's modes write uint8 only");
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  bool staged = in_dtype == STK_DTYPE_UINT8 && out_dtype == STK_DTYPE_UINT8;
  clr_stage st;
  STK_TRY_INT(clr_stage_open(&st, n, sizeof(stk_gpu_clr_pixel_sample), 0, err, errlen));
  stk_gpu_clr_pixel_sample *S = (stk_gpu_clr_pixel_sample *)st.host;
  int *first = (int *)(st.host + st.first_off);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_clr_pixel_sample *s = &samples[i];
    bool ok = s->pixels >= 0 && (s->pixels == 0 || (s->src && s->dst)) &&
              (pil ? s->cin == 3 && (s->cout == 3 || (mode == STK_GPU_CLR_PIL_GRAY && s->cout == 1))
                   : (s->cin == 1 || s->cin == 3) && (s->cout == 1 || s->cout == 3));
    if (!ok)
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: %d -> %d channels, %lld pixels or NULL "
                    "pointers (mode %d)",
                    i, s->cin, s->cout, (long long)s->pixels, mode);
    S[i] = *s;
    st.nb[i] = stk_cdiv(s->pixels, staged ? PX_TILE : CT * CHUNK);
  }
  if (rc == 0) rc = stk_block_table(st.nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "color pixel", err, errlen, [&](const char *dp) {
          if (staged)
            pixel_u8_kernel<<<first[n], CT, 0, stream>>>((const stk_gpu_clr_pixel_sample *)dp,
                                                         (const int *)(dp + st.first_off), n, mode);
          else
            pixel_kernel<<<first[n], CT, 0, stream>>>((const stk_gpu_clr_pixel_sample *)dp,
                                                      (const int *)(dp + st.first_off), n, mode,
                                                      (int)in_dtype, (int)out_dtype);
          return 0;
        });
  clr_stage_close(&st);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* stats: reduction, tables, application                                              */
/* ---------------------------------------------------------------------------------- */

/* Per-sample accumulators, zeroed before the reduction. */
typedef struct {
  unsigned int hist[MAX_C * 256];
  unsigned long long isum[4]; /* integer sums (uint8 input) */
  double dsum[4];             /* float64 sums (other inputs, MEAN_CONTRAST) */
  unsigned int done;          /* blocks finished */
  unsigned int pad;
} stats_acc;

typedef struct {
  stk_gpu_clr_stats_sample s;
  size_t lut_offset; /* this sample's tables in the table block */
  int blocks;        /* reduction blocks of this sample */
} stats_dev;

#define STATS_PIX 4096 /* pixels per reduction block */

/* Builds the sample's tables from its accumulators (the last reduction block). */
__device__ void stats_build(const stats_dev *d, int mode, int ot, volatile stats_acc *A,
                            uint8_t *lut, uint64_t *h64) {
  const stk_gpu_clr_stats_sample *s = &d->s;
  int c = s->c, t = threadIdx.x;
  if (mode == STK_GPU_CLR_PIL_CONTRAST) { /* int(mean luma + 0.5), then blends */
    double mean = s->pixels ? (double)A->isum[0] / (double)s->pixels : 0.0;
    int centre = (int)(mean + 0.5);
    uint8_t v = stk_color_blend1((uint8_t)centre, (uint8_t)t, (float)s->p[0]);
    for (int k = 0; k < c; k++) lut[k * 256 + t] = v;
    return;
  }
  if (mode == STK_GPU_CLR_MEAN_CONTRAST) { /* uint8 input: the CPU's typed table */
    double sums[3] = {(double)A->isum[0], (double)A->isum[1], (double)A->isum[2]};
    double cc = stk_color_mean_luma(sums, (double)s->pixels, c);
    double v =
        stk_color_linear((double)t, s->p[0], stk_color_bc_add(s->p[2], s->p[1], cc, s->p[3]));
    for (int k = 0; k < c; k++) clr_store(lut, ot, k * 256 + t, v, false);
    return;
  }
  /* histograms: widened into shared memory (no per-thread arrays, whose local memory
   * the driver would reserve for every resident thread), one channel per thread */
  for (int k = t; k < c * 256; k += CT) h64[k] = A->hist[k];
  __syncthreads();
  if (t >= c) return;
  uint64_t *h = h64 + t * 256;
  uint8_t *out = lut + t * 256;
  if (mode == STK_GPU_CLR_EQ_PIL)
    stk_color_pil_equalize_lut(h, out);
  else if (mode == STK_GPU_CLR_EQ_CV)
    stk_color_cv_equalize_lut(h, out);
  else
    stk_color_autocontrast_lut(h, s->p[0], s->p[1], out);
}

#define STATS_WARPS (CT / 32)

/* Adds `cnt` to bin `key` of this warp's histogram (warp-private copies: fewer
 * collisions on one shared address than a block-wide histogram). */
__device__ __forceinline__ void hist_add(unsigned int *wh, int key, unsigned int cnt) {
  if (cnt) atomicAdd(&wh[key], cnt);
}

/* Histogram of the bytes [g, g + nbytes) of a sample whose first span byte is of
 * channel 0 (spans start on a pixel), C channels: 16-byte vector loads; inside a vector,
 * equal consecutive values of a channel (frequent in photos: flat areas) are counted in
 * registers and added once. */
template <int C>
__device__ __forceinline__ void hist_span(const uint8_t *g, int nbytes, unsigned int *wh) {
  pt_cut cut = pt_cut_of(g, nbytes);
  int t = threadIdx.x, nv = (cut.tail - cut.head) >> 4;
  const uint4 *gv = (const uint4 *)(g + cut.head);
  for (int v = t; v < nv; v += CT) {
    uint4 x = gv[v];
    int ch = (cut.head + v * 16) % C;
    int pk[C];
    unsigned int pc[C];
#pragma unroll
    for (int k = 0; k < C; k++) pk[k] = -1, pc[k] = 0;
#pragma unroll
    for (int j = 0; j < 16; j++) {
      int key = ch * 256 + pt_byte(x, j);
      const int sl = j % C; /* bytes j and j + C are of one channel */
      if (key == pk[sl]) {
        pc[sl]++;
      } else {
        if (pc[sl]) hist_add(wh, pk[sl], pc[sl]);
        pk[sl] = key, pc[sl] = 1;
      }
      ch = ch + 1 == C ? 0 : ch + 1;
    }
#pragma unroll
    for (int k = 0; k < C; k++)
      if (pc[k]) hist_add(wh, pk[k], pc[k]);
  }
  if (t < cut.head)
    hist_add(wh, (t % C) * 256 + g[t], 1u);
  else if (t >= 32 && t < 48 && cut.tail + (t - 32) < nbytes) {
    int e = cut.tail + t - 32;
    hist_add(wh, (e % C) * 256 + g[e], 1u);
  }
}

/* Sum over the warp (every lane calls it): one shared atomic per warp instead of one
 * per thread on the same address. Integer sums: the order does not matter. */
__device__ __forceinline__ unsigned long long warp_sum_u64(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

/* Per-channel sums (3 channels; otherwise everything into a[0], as the CPU's mean) of
 * the bytes [g, g + nbytes), a span starting on a pixel: 16-byte vector loads. */
__device__ __forceinline__ void sums_span(const uint8_t *g, int nbytes, int c,
                                          unsigned long long a[3]) {
  pt_cut cut = pt_cut_of(g, nbytes);
  int t = threadIdx.x, nv = (cut.tail - cut.head) >> 4;
  const uint4 *gv = (const uint4 *)(g + cut.head);
  for (int v = t; v < nv; v += CT) {
    uint4 x = gv[v];
    unsigned int sl[3] = {0, 0, 0};
#pragma unroll
    for (int j = 0; j < 16; j++) sl[j % 3] += pt_byte(x, j);
    if (c != 3) {
      a[0] += sl[0] + sl[1] + sl[2];
      continue;
    }
    int ch = (cut.head + v * 16) % 3; /* channel of slot 0; slot k holds (ch + k) % 3 */
    unsigned int c0 = ch == 0 ? sl[0] : ch == 1 ? sl[2] : sl[1];
    unsigned int c1 = ch == 0 ? sl[1] : ch == 1 ? sl[0] : sl[2];
    unsigned int c2 = ch == 0 ? sl[2] : ch == 1 ? sl[1] : sl[0];
    a[0] += c0, a[1] += c1, a[2] += c2;
  }
  int e = -1;
  if (t < cut.head)
    e = t;
  else if (t >= 32 && t < 48 && cut.tail + (t - 32) < nbytes)
    e = cut.tail + t - 32;
  if (e >= 0) {
    int k = c == 3 ? e % 3 : 0;
    unsigned int v = g[e];
    a[0] += k == 0 ? v : 0u, a[1] += k == 1 ? v : 0u, a[2] += k == 2 ? v : 0u;
  }
}

__global__ void __launch_bounds__(CT)
    stats_reduce(const stats_dev *S, const int *first, int n, int mode, int it, int ot,
                 stats_acc *acc, uint8_t *luts) {
  __shared__ unsigned int whist[STATS_WARPS * MAX_C * 256]; /* one histogram per warp */
  __shared__ unsigned long long isum[4];
  __shared__ double dsum[4];
  __shared__ uint64_t h64[MAX_C * 256];
  __shared__ bool last;
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stats_dev *d = &S[si];
  const stk_gpu_clr_stats_sample *s = &d->s;
  int c = s->c, t = threadIdx.x;
  stats_acc *A = &acc[si];
  bool histo = mode <= STK_GPU_CLR_AUTOCONTRAST;
  if (histo)
    for (int k = t; k < STATS_WARPS * MAX_C * 256; k += CT) whist[k] = 0;
  if (t < 4) isum[t] = 0, dsum[t] = 0.0;
  __syncthreads();
  int64_t p0 = (int64_t)(b - first[si]) * STATS_PIX, p1 = p0 + STATS_PIX;
  if (p1 > s->pixels) p1 = s->pixels;
  if (histo) {
    const uint8_t *g = (const uint8_t *)s->src + p0 * c;
    int nbytes = (int)(p1 - p0) * c;
    unsigned int *wh = whist + (t >> 5) * (MAX_C * 256);
    switch (c) {
      case 1:
        hist_span<1>(g, nbytes, wh);
        break;
      case 2:
        hist_span<2>(g, nbytes, wh);
        break;
      case 3:
        hist_span<3>(g, nbytes, wh);
        break;
      default:
        hist_span<4>(g, nbytes, wh);
        break;
    }
  } else if (mode == STK_GPU_CLR_PIL_CONTRAST) { /* sum of luma (3 channels) or channel 0 */
    /* the block's pixels staged through shared memory (the unused histogram space) */
    const uint8_t *g = (const uint8_t *)s->src + p0 * c;
    uint8_t *stage = (uint8_t *)whist;
    pt_load(stage, g, (int)(p1 - p0) * c);
    __syncthreads();
    const uint8_t *src = stage + pt_shift(g);
    unsigned long long acc1 = 0;
    for (int px = t; px < (int)(p1 - p0); px += CT) {
      const uint8_t *p = src + px * c;
      acc1 += c == 3 ? stk_color_pil_luma(p[0], p[1], p[2]) : p[0];
    }
    acc1 = warp_sum_u64(acc1);
    if ((t & 31) == 0) atomicAdd(&isum[0], acc1);
  } else if (it == STK_DTYPE_UINT8) { /* MEAN_CONTRAST: exact integer sums */
    unsigned long long a3[3] = {0, 0, 0};
    sums_span((const uint8_t *)s->src + p0 * c, (int)(p1 - p0) * c, c, a3);
    for (int k = 0; k < 3; k++) {
      unsigned long long v = warp_sum_u64(a3[k]);
      if ((t & 31) == 0 && v) atomicAdd(&isum[k], v);
    }
  } else { /* MEAN_CONTRAST on other types: float64 sums */
    double a3[3] = {0.0, 0.0, 0.0};
    for (int64_t px = p0 + t; px < p1; px += CT)
      for (int k = 0; k < c; k++) a3[c == 3 ? k : 0] += clr_load(s->src, it, px * c + k);
    for (int k = 0; k < 3; k++)
      if (a3[k] != 0.0) atomicAdd(&dsum[k], a3[k]);
  }
  __syncthreads();
  if (histo) {
    for (int k = t; k < c * 256; k += CT) {
      unsigned int sum = 0;
      for (int w = 0; w < STATS_WARPS; w++) sum += whist[w * MAX_C * 256 + k];
      if (sum) atomicAdd(&A->hist[k], sum);
    }
  } else if (t < 3) {
    if (isum[t]) atomicAdd(&A->isum[t], isum[t]);
    if (dsum[t] != 0.0) atomicAdd(&A->dsum[t], dsum[t]);
  }
  /* the last block of the sample sees every other block's atomics */
  __threadfence();
  __syncthreads();
  if (t == 0) last = atomicAdd(&A->done, 1u) == (unsigned int)d->blocks - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (mode == STK_GPU_CLR_MEAN_CONTRAST && it != STK_DTYPE_UINT8) return; /* applied directly */
  stats_build(d, mode, ot, (volatile stats_acc *)A, luts + d->lut_offset, h64);
}

/* MEAN_CONTRAST on non-uint8 input: elementwise, the centre from the float64 sums. */
__global__ void __launch_bounds__(CT) stats_apply_f64(const stats_dev *S, const int *first, int n,
                                                      int it, int ot, const stats_acc *acc) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_clr_stats_sample *s = &S[si].s;
  double sums[3] = {acc[si].dsum[0], acc[si].dsum[1], acc[si].dsum[2]};
  double cc = stk_color_mean_luma(sums, (double)s->pixels, s->c);
  double mul = s->p[0], add = stk_color_bc_add(s->p[2], s->p[1], cc, s->p[3]);
  int64_t count = s->pixels * s->c;
  int64_t base = (int64_t)(b - first[si]) * CT * CHUNK + threadIdx.x;
  for (int k = 0; k < CHUNK; k++) {
    int64_t e = base + (int64_t)k * CT;
    if (e >= count) break;
    clr_store(s->dst, ot, e, stk_color_linear(clr_load(s->src, it, e), mul, add), true);
  }
}

/* Device layout of a stats call's descriptors: stats_dev[n], the reduction's first[n + 1],
 * lut_dev[n] (the application's view), the application's first[n + 1]. */
typedef struct {
  size_t first_r, lut, first_a, bytes;
} stats_layout;

static stats_layout stats_layout_of(int n) {
  stats_layout L;
  L.first_r = (size_t)n * sizeof(stats_dev);
  L.lut = (L.first_r + (size_t)(n + 1) * sizeof(int) + 15) & ~(size_t)15;
  L.first_a = L.lut + (size_t)n * sizeof(lut_dev);
  L.bytes = L.first_a + (size_t)(n + 1) * sizeof(int);
  return L;
}

/* Fills the descriptors; per-sample block counts of both launches into nb_r / nb_a. */
static int stats_describe(int n, const stk_gpu_clr_stats_sample *samples, size_t lut_stride,
                          bool mean_f64, stk_dtype ot, char *host, const stats_layout *L,
                          int64_t *nb_r, int64_t *nb_a, char *err, size_t errlen) {
  stats_dev *S = (stats_dev *)host;
  lut_dev *A = (lut_dev *)(host + L->lut);
  for (int i = 0; i < n; i++) {
    const stk_gpu_clr_stats_sample *s = &samples[i];
    if (s->c < 1 || s->c > MAX_C || s->pixels < 0 || (s->pixels > 0 && (!s->src || !s->dst)) ||
        s->pixels > (int64_t)UINT32_MAX)
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "sample %d: %d channels (1..%d), %lld pixels or "
                      "NULL pointers",
                      i, s->c, MAX_C, (long long)s->pixels);
    memset(&S[i], 0, sizeof S[i]);
    memset(&A[i], 0, sizeof A[i]);
    S[i].s = *s;
    S[i].lut_offset = (size_t)i * lut_stride;
    /* at least one reduction block, so that a last block builds the tables */
    nb_r[i] = s->pixels > 0 ? stk_cdiv(s->pixels, STATS_PIX) : 1;
    S[i].blocks = (int)nb_r[i];
    A[i].s.src = (const uint8_t *)s->src;
    A[i].s.dst = s->dst;
    A[i].s.pixels = s->pixels;
    A[i].s.c = s->c;
    A[i].s.lut_offset = (size_t)i * lut_stride;
    A[i].count = s->pixels * s->c;
    /* the application: lut_kernel's blocks, or stats_apply_f64's (CT * CHUNK elements) */
    nb_a[i] = mean_f64 ? stk_cdiv(A[i].count, CT * CHUNK) : lut_plan(&A[i], (int)clr_esize(ot));
  }
  STK_TRY_INT(stk_block_table(nb_r, n, (int *)(host + L->first_r), err, errlen));
  return stk_block_table(nb_a, n, (int *)(host + L->first_a), err, errlen);
}

/* Zeroes the accumulators, reduces (building the tables), applies. */
static int stats_launch(const char *dp, const char *host, const stats_layout *L, int n, int mode,
                        stk_dtype it, stk_dtype ot, void *scratch, size_t acc_bytes,
                        cudaStream_t stream, char *err, size_t errlen) {
  int blocks_r = ((const int *)(host + L->first_r))[n],
      blocks_a = ((const int *)(host + L->first_a))[n];
  stats_acc *A = (stats_acc *)scratch;
  uint8_t *luts = (uint8_t *)scratch + acc_bytes;
  CUDA_TRY(cudaMemsetAsync(scratch, 0, acc_bytes, stream));
  const stats_dev *dS = (const stats_dev *)dp;
  stats_reduce<<<blocks_r, CT, 0, stream>>>(dS, (const int *)(dp + L->first_r), n, mode, (int)it,
                                            (int)ot, A, luts);
  STK_TRY_INT(stk_check_launch("color stats (reduction)", err, errlen));
  if (blocks_a == 0) return 0;
  if (mode == STK_GPU_CLR_MEAN_CONTRAST && it != STK_DTYPE_UINT8) {
    stats_apply_f64<<<blocks_a, CT, 0, stream>>>(dS, (const int *)(dp + L->first_a), n, (int)it,
                                                 (int)ot, A);
    return stk_check_launch("color stats (application)", err, errlen);
  }
  return lut_launch((const lut_dev *)(dp + L->lut), (const int *)(dp + L->first_a), n, blocks_a,
                    luts, (int)clr_esize(ot), stream, err, errlen);
}

static int clr_stats(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_stats_sample *samples, int mode,
                     stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream_h, char *err,
                     size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || mode < STK_GPU_CLR_EQ_PIL || mode > STK_GPU_CLR_MEAN_CONTRAST)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d, mode %d)", n, mode);
  bool mean = mode == STK_GPU_CLR_MEAN_CONTRAST;
  STK_TRY_INT(clr_check_types(in_dtype, out_dtype, !mean, err, errlen));
  if (!mean && out_dtype != STK_DTYPE_UINT8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "mode %d writes uint8 only", mode);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t lut_stride = (size_t)MAX_C * 256 * clr_esize(out_dtype);
  stats_layout L = stats_layout_of(n);
  char *host = (char *)malloc(L.bytes);
  int64_t *nb = (int64_t *)malloc(2 * (size_t)n * sizeof(int64_t));
  int rc = host && nb ? 0 : GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  if (rc == 0)
    rc = stats_describe(n, samples, lut_stride, mean && in_dtype != STK_DTYPE_UINT8, out_dtype,
                        host, &L, nb, nb + n, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dp = NULL, *scratch = NULL;
  size_t acc_bytes = (size_t)n * sizeof(stats_acc);
  if (rc == 0) rc = stk_gpu_upload(ctx, host, L.bytes, stream, &dp, err, errlen);
  if (rc == 0)
    rc = stk_gpu_device_alloc(ctx, acc_bytes + (size_t)n * lut_stride, stream_h, &scratch, err,
                              errlen);
  if (rc == 0)
    rc = stats_launch((const char *)dp, host, &L, n, mode, in_dtype, out_dtype, scratch, acc_bytes,
                      stream, err, errlen);
  if (scratch) stk_gpu_device_free(ctx, scratch, stream_h, NULL, 0);
  if (dp) stk_gpu_device_free(ctx, dp, stream_h, NULL, 0);
  free(host);
  free(nb);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* sharpness                                                                          */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_clr_sharpness_sample s;
  int bx;   /* blocks across a row of w * c elements (sharp_kernel) */
  int rows; /* output rows per block (sharp_staged) */
} sharp_dev;

#define SHARP_BYTES 20480 /* shared bytes of a staged block's input (and output) rows */

/* One block: CT consecutive elements of one row. */
__global__ void __launch_bounds__(CT) sharp_kernel(const sharp_dev *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const sharp_dev *d = &S[si];
  const stk_gpu_clr_sharpness_sample *s = &d->s;
  int lb = b - first[si], y = lb / d->bx, row = s->w * s->c;
  int i = (lb % d->bx) * CT + threadIdx.x;
  if (i >= row) return;
  size_t at = (size_t)y * (size_t)row + (size_t)i;
  uint8_t v = s->src[at];
  int x = i / s->c;
  if (y == 0 || y == s->h - 1 || x == 0 || x == s->w - 1) {
    s->dst[at] = v; /* borders: the image itself */
    return;
  }
  s->dst[at] =
      stk_color_blend1(stk_color_smooth_at(s->src + at, (long)row, (long)s->c), v, s->factor);
}

/* Rows that fit: a block stages `rows` output rows plus one above and one below (one
 * contiguous span: the image is packed) as 16-byte vectors, applies the stencil there and
 * writes its rows back as vectors. 0 when a row is too long (sharp_kernel then). */
static int sharp_rows(const stk_gpu_clr_sharpness_sample *s) {
  int64_t row = (int64_t)s->w * s->c;
  int64_t r = row > 0 ? SHARP_BYTES / row - 2 : 0;
  return r < 1 ? 0 : r > 64 ? 64 : (int)r;
}

__global__ void __launch_bounds__(CT) sharp_staged(const sharp_dev *S, const int *first, int n) {
  __shared__ __align__(16) uint8_t sin[SHARP_BYTES + 16], sout[SHARP_BYTES + 16];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const sharp_dev *d = &S[si];
  const stk_gpu_clr_sharpness_sample *s = &d->s;
  int row = s->w * s->c, c = s->c;
  int y0 = (b - first[si]) * d->rows, y1 = y0 + d->rows < s->h ? y0 + d->rows : s->h;
  int ys = y0 > 0 ? y0 - 1 : 0, ye = y1 < s->h ? y1 + 1 : s->h;
  const uint8_t *g = s->src + (size_t)ys * row;
  uint8_t *gd = s->dst + (size_t)y0 * row;
  pt_load(sin, g, (ye - ys) * row);
  __syncthreads();
  const uint8_t *a = sin + pt_shift(g) + (y0 - ys) * row; /* row y0 in shared memory */
  uint8_t *o = sout + pt_shift(gd);
  int count = (y1 - y0) * row;
  for (int e = threadIdx.x; e < count; e += CT) {
    int yy = e / row, i = e - yy * row, y = y0 + yy, x = i / c;
    uint8_t v = a[e];
    if (y == 0 || y == s->h - 1 || x == 0 || x == s->w - 1)
      o[e] = v; /* borders: the image */
    else
      o[e] = stk_color_blend1(stk_color_smooth_at(a + e, (long)row, (long)c), v, s->factor);
  }
  __syncthreads();
  pt_store(gd, sout, count);
}

static int clr_sharpness(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_sharpness_sample *samples,
                         uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  clr_stage st;
  STK_TRY_INT(clr_stage_open(&st, n, sizeof(sharp_dev), 0, err, errlen));
  sharp_dev *S = (sharp_dev *)st.host;
  int *first = (int *)(st.host + st.first_off);
  int rc = 0;
  bool staged = true; /* every row short enough: the staged kernel */
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_clr_sharpness_sample *s = &samples[i];
    int64_t row = (int64_t)s->w * s->c;
    if (s->h < 0 || s->w < 0 || s->c < 1 || s->c > MAX_C || row > INT32_MAX ||
        (s->h > 0 && s->w > 0 && (!s->src || !s->dst)))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: %d x %d x %d or NULL pointers", i, s->h,
                    s->w, s->c);
    S[i].s = *s;
    S[i].bx = (int)stk_cdiv(row, CT);
    S[i].rows = sharp_rows(s);
    if (S[i].rows == 0 && s->h > 0 && s->w > 0) staged = false;
  }
  for (int i = 0; i < n && rc == 0; i++)
    st.nb[i] =
        staged ? (S[i].rows ? stk_cdiv(S[i].s.h, S[i].rows) : 0) : (int64_t)S[i].bx * S[i].s.h;
  if (rc == 0) rc = stk_block_table(st.nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "color sharpness", err, errlen, [&](const char *dp) {
          if (staged)
            sharp_staged<<<first[n], CT, 0, stream>>>((const sharp_dev *)dp,
                                                      (const int *)((char *)dp + st.first_off), n);
          else
            sharp_kernel<<<first[n], CT, 0, stream>>>((const sharp_dev *)dp,
                                                      (const int *)((char *)dp + st.first_off), n);
          return 0;
        });
  clr_stage_close(&st);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_clr_lut(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_lut_sample *samples,
                      const stk_gpu_clr_lut_args *args, uintptr_t stream, char *err,
                      size_t errlen) {
  return clr_lut(ctx, n, samples, args->luts, args->lut_bytes, args->out_dtype, stream, err,
                 errlen);
}

int stk_gpu_k_clr_point(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_point_sample *samples,
                        const stk_gpu_io_args *args, uintptr_t stream, char *err, size_t errlen) {
  return clr_point(ctx, n, samples, args->in_dtype, args->out_dtype, stream, err, errlen);
}

int stk_gpu_k_clr_pixel(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_pixel_sample *samples,
                        const stk_gpu_clr_mode_args *args, uintptr_t stream, char *err,
                        size_t errlen) {
  return clr_pixel(ctx, n, samples, args->mode, args->in_dtype, args->out_dtype, stream, err,
                   errlen);
}

int stk_gpu_k_clr_stats(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_stats_sample *samples,
                        const stk_gpu_clr_mode_args *args, uintptr_t stream, char *err,
                        size_t errlen) {
  return clr_stats(ctx, n, samples, args->mode, args->in_dtype, args->out_dtype, stream, err,
                   errlen);
}

int stk_gpu_k_clr_sharpness(stk_gpu_ctx *ctx, int n, const stk_gpu_clr_sharpness_sample *samples,
                            const stk_gpu_no_args *args, uintptr_t stream, char *err,
                            size_t errlen) {
  (void)args;
  return clr_sharpness(ctx, n, samples, stream, err, errlen);
}
