/*
 * Batched image kernels: resample (resize, random_resized_crop, and the fused
 * crop-resize-mirror-normalise-cast-layout), crop_mirror_normalize, crop, flip, cast.
 *
 * Every entry point copies its per-sample descriptors, plus a table of each sample's
 * first block, into one device array and launches one grid for the whole batch: block b
 * belongs to the sample whose range holds b (binary search), so batches of very
 * different image sizes waste no blocks. Arithmetic follows the CPU implementations
 * (src/ops/resample.c, image_util.c) step by step; see gpu_common.h for the shared
 * parts.
 *
 * resample is two passes. The horizontal pass filters every source row the vertical
 * filter will touch ([ylo, yhi]) into a float temporary of dst_w columns (block: 32
 * output columns x 32 rows, the 32 columns' weights computed once into shared memory,
 * tap-major so lanes hit distinct banks). The vertical pass (block: 32 columns x 8 rows,
 * the 8 rows' weights in shared memory) filters the temporary and runs the output stage:
 * rounding, normalisation, mirror, type and layout. Nearest needs no temporary: one pass.
 */
#include <cuda_fp16.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/gpu_common.h"
#include "gpu_internal.h"
#include "gpu_kernels.h"
#include "launch.cuh"

#define TW      32 /* output columns per block */
#define H_ROWS  32 /* temporary rows per horizontal-pass block */
#define V_ROWS  8  /* output rows per vertical-pass block */
#define THREADS 256

/* ---------------------------------------------------------------------------------- */
/* Shared helpers                                                                     */
/* ---------------------------------------------------------------------------------- */

/* Stores v as element i of a dst array of `dt` with stk__store_double's rules. */
__device__ __forceinline__ void store_double(void *dst, int dt, size_t i, double v) {
  switch (dt) {
    case STK_DTYPE_FLOAT32:
      ((float *)dst)[i] = (float)v;
      return;
    case STK_DTYPE_FLOAT16:
      ((__half *)dst)[i] = __float2half_rn((float)v);
      return;
    case STK_DTYPE_FLOAT64:
      ((double *)dst)[i] = v;
      return;
    default:
      break;
  }
  double r = isnan(v) ? 0.0 : round(v); /* half away from zero */
  switch (dt) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)dst)[i] = r <= 0.0 ? 0 : r >= 255.0 ? 255 : (uint8_t)r;
      return;
    case STK_DTYPE_INT8:
      ((int8_t *)dst)[i] = r <= -128.0 ? -128 : r >= 127.0 ? 127 : (int8_t)r;
      return;
    default:
      return;
  }
}

/* ---------------------------------------------------------------------------------- */
/* Type conversion (stk__convert)                                                     */
/* ---------------------------------------------------------------------------------- */

__host__ __device__ static inline bool dt_float(int t) {
  return t == STK_DTYPE_FLOAT16 || t == STK_DTYPE_FLOAT32 || t == STK_DTYPE_FLOAT64;
}

static size_t dt_size(int t) {
  switch (t) {
    case STK_DTYPE_UINT8:
    case STK_DTYPE_INT8:
    case STK_DTYPE_BOOL:
      return 1;
    case STK_DTYPE_UINT16:
    case STK_DTYPE_INT16:
    case STK_DTYPE_FLOAT16:
      return 2;
    case STK_DTYPE_UINT32:
    case STK_DTYPE_INT32:
    case STK_DTYPE_FLOAT32:
      return 4;
    case STK_DTYPE_UINT64:
    case STK_DTYPE_INT64:
    case STK_DTYPE_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

__device__ static void int_range(int t, long long *lo, unsigned long long *hi) {
  switch (t) {
    case STK_DTYPE_UINT8:
      *lo = 0;
      *hi = 255;
      return;
    case STK_DTYPE_INT8:
      *lo = -128;
      *hi = 127;
      return;
    case STK_DTYPE_UINT16:
      *lo = 0;
      *hi = 65535;
      return;
    case STK_DTYPE_INT16:
      *lo = -32768;
      *hi = 32767;
      return;
    case STK_DTYPE_UINT32:
      *lo = 0;
      *hi = 4294967295ull;
      return;
    case STK_DTYPE_INT32:
      *lo = -2147483648ll;
      *hi = 2147483647ull;
      return;
    case STK_DTYPE_INT64:
      *lo = (-9223372036854775807ll - 1);
      *hi = 9223372036854775807ull;
      return;
    case STK_DTYPE_UINT64:
      *lo = 0;
      *hi = 18446744073709551615ull;
      return;
    default:
      *lo = 0;
      *hi = 1;
      return; /* bool */
  }
}

__device__ static void store_int_raw(void *p, int t, size_t i, long long s, unsigned long long u,
                                     bool is_u) {
  switch (t) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)p)[i] = (uint8_t)s;
      break;
    case STK_DTYPE_INT8:
      ((int8_t *)p)[i] = (int8_t)s;
      break;
    case STK_DTYPE_UINT16:
      ((uint16_t *)p)[i] = (uint16_t)s;
      break;
    case STK_DTYPE_INT16:
      ((int16_t *)p)[i] = (int16_t)s;
      break;
    case STK_DTYPE_UINT32:
      ((uint32_t *)p)[i] = (uint32_t)s;
      break;
    case STK_DTYPE_INT32:
      ((int32_t *)p)[i] = (int32_t)s;
      break;
    case STK_DTYPE_INT64:
      ((long long *)p)[i] = s;
      break;
    case STK_DTYPE_UINT64:
      ((unsigned long long *)p)[i] = is_u ? u : (unsigned long long)s;
      break;
    default:
      ((uint8_t *)p)[i] = (uint8_t)(is_u ? u != 0 : s != 0);
      break;
  }
}

/* Element i of src (type st) converted into element j of dst (type dt). */
__device__ static void convert_elem(const void *src, int st, size_t i, void *dst, int dt,
                                    size_t j) {
  if (st == dt) { /* a copy, bit for bit (bool bytes and NaN payloads kept), as the CPU */
    switch (st) {
      case STK_DTYPE_UINT8:
      case STK_DTYPE_INT8:
      case STK_DTYPE_BOOL:
        ((uint8_t *)dst)[j] = ((const uint8_t *)src)[i];
        return;
      case STK_DTYPE_UINT16:
      case STK_DTYPE_INT16:
      case STK_DTYPE_FLOAT16:
        ((uint16_t *)dst)[j] = ((const uint16_t *)src)[i];
        return;
      case STK_DTYPE_UINT32:
      case STK_DTYPE_INT32:
      case STK_DTYPE_FLOAT32:
        ((uint32_t *)dst)[j] = ((const uint32_t *)src)[i];
        return;
      default:
        ((unsigned long long *)dst)[j] = ((const unsigned long long *)src)[i];
        return;
    }
  }
  if (dt_float(st)) {
    double v = st == STK_DTYPE_FLOAT16   ? (double)__half2float(((const __half *)src)[i])
               : st == STK_DTYPE_FLOAT32 ? (double)((const float *)src)[i]
                                         : ((const double *)src)[i];
    if (st == STK_DTYPE_FLOAT32 && dt == STK_DTYPE_UINT8) { /* the CPU's bulk path */
      float f = ((const float *)src)[i] + 0.5f;
      f = f > 0.0f ? f : 0.0f;
      f = f < 255.0f ? f : 255.0f;
      ((uint8_t *)dst)[j] = (uint8_t)(int)f;
      return;
    }
    if (dt == STK_DTYPE_BOOL) {
      ((uint8_t *)dst)[j] = v != 0.0;
      return;
    }
    if (dt == STK_DTYPE_FLOAT16 || dt == STK_DTYPE_FLOAT32 || dt == STK_DTYPE_FLOAT64) {
      store_double(dst, dt, j, v);
      return;
    }
    long long lo;
    unsigned long long hi;
    int_range(dt, &lo, &hi);
    double r = isnan(v) ? 0.0 : round(v);
    if (r <= (double)lo)
      store_int_raw(dst, dt, j, lo, 0, false);
    else if (r >= (double)hi)
      store_int_raw(dst, dt, j,
                    (long long)(hi > 9223372036854775807ull ? 9223372036854775807ull : hi), hi,
                    dt == STK_DTYPE_UINT64);
    else if (dt == STK_DTYPE_UINT64 && r >= 9223372036854775808.0)
      store_int_raw(dst, dt, j, 0, (unsigned long long)r, true);
    else
      store_int_raw(dst, dt, j, (long long)r, 0, false);
    return;
  }
  long long s = 0;
  unsigned long long u = 0;
  bool is_u = false;
  switch (st) {
    case STK_DTYPE_UINT8:
      s = ((const uint8_t *)src)[i];
      break;
    case STK_DTYPE_INT8:
      s = ((const int8_t *)src)[i];
      break;
    case STK_DTYPE_UINT16:
      s = ((const uint16_t *)src)[i];
      break;
    case STK_DTYPE_INT16:
      s = ((const int16_t *)src)[i];
      break;
    case STK_DTYPE_UINT32:
      s = ((const uint32_t *)src)[i];
      break;
    case STK_DTYPE_INT32:
      s = ((const int32_t *)src)[i];
      break;
    case STK_DTYPE_INT64:
      s = ((const long long *)src)[i];
      break;
    case STK_DTYPE_UINT64:
      u = ((const unsigned long long *)src)[i];
      is_u = true;
      break;
    default:
      s = ((const uint8_t *)src)[i] != 0;
      break;
  }
  if (dt_float(dt)) {
    if (dt == STK_DTYPE_FLOAT32)
      ((float *)dst)[j] = is_u ? (float)u : (float)s;
    else if (dt == STK_DTYPE_FLOAT64)
      ((double *)dst)[j] = is_u ? (double)u : (double)s;
    else
      ((__half *)dst)[j] = __float2half_rn((float)(is_u ? (double)u : (double)s));
    return;
  }
  long long lo;
  unsigned long long hi;
  int_range(dt, &lo, &hi);
  if (dt == STK_DTYPE_BOOL)
    store_int_raw(dst, dt, j, s, u, is_u);
  else if (is_u) {
    if (u > hi) u = hi;
    store_int_raw(dst, dt, j, u > 9223372036854775807ull ? 9223372036854775807ll : (long long)u, u,
                  true);
  } else if (s < lo)
    store_int_raw(dst, dt, j, lo, 0, false);
  else if (s > 0 && (unsigned long long)s > hi)
    store_int_raw(dst, dt, j, (long long)hi, hi, false);
  else
    store_int_raw(dst, dt, j, s, (unsigned long long)s, false);
}

/* ---------------------------------------------------------------------------------- */
/* Launch plumbing                                                                    */
/* ---------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------- */
/* Resample                                                                           */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_resample_sample s;
  stk_gpu_axis gx, gy;
  int ylo, yhi;         /* source rows the vertical pass reads */
  size_t tmp_off;       /* first float of this sample's temporary */
  int hbx, vbx;         /* blocks across a row: horizontal / vertical pass */
  float mul[4], add[4]; /* float-path normalisation constants */
} rs_dev;

/* Horizontal pass: temporary row r (source row ylo + r), column x, channels. */
template <typename T, int C>
__global__ void __launch_bounds__(THREADS)
    rs_hpass(const rs_dev *S, const int *first, int n, int interp, int kmax, float *tmp) {
  extern __shared__ float smem[];
  float *w = smem; /* [kmax][TW] */
  int *st = (int *)(smem + (size_t)kmax * TW);
  int *cnt = st + TW;
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const rs_dev *d = &S[si];
  int t = b - first[si], bx = t % d->hbx, by = t / d->hbx;
  int tx = threadIdx.x % TW, ty = threadIdx.x / TW;
  int x = bx * TW + tx, dst_w = d->s.dst_w;
  if (ty == 0) {
    int s0 = 0, c = 0;
    if (x < dst_w) c = stk_gpu_axis_weights(&d->gx, interp, x, w + tx, TW, &s0);
    st[tx] = s0;
    cnt[tx] = c;
  }
  __syncthreads();
  if (x >= dst_w) return;
  int rows = d->yhi - d->ylo + 1, r_end = min(rows, (by + 1) * H_ROWS);
  int s0 = st[tx], nt = cnt[tx];
  for (int r = by * H_ROWS + ty; r < r_end; r += THREADS / TW) {
    const T *row = (const T *)((const char *)d->s.src + (size_t)(d->ylo + r) * d->s.src_pitch) +
                   (size_t)s0 * C;
    float acc[C];
#pragma unroll
    for (int c = 0; c < C; c++) acc[c] = 0.0f;
    for (int k = 0; k < nt; k++) {
      float wk = w[k * TW + tx];
#pragma unroll
      for (int c = 0; c < C; c++) acc[c] += wk * (float)__ldg(row + k * C + c);
    }
    float *o = tmp + d->tmp_off + ((size_t)r * dst_w + x) * C;
#pragma unroll
    for (int c = 0; c < C; c++) o[c] = acc[c];
  }
}

/* The output stage of one channel value v (resampled, in the input's value range). */
__device__ __forceinline__ void rs_store(const stk_gpu_resample_args &a, const rs_dev *d, float v,
                                         int c, bool src_u8, void *dst, size_t i) {
  int dt = a.out_dtype;
  if (!a.normalize) {
    if (dt == STK_DTYPE_UINT8)
      ((uint8_t *)dst)[i] =
          (uint8_t)(src_u8 ? stk_gpu_u8_from_bounded(v) : stk_gpu_u8_from_float(v));
    else if (dt == STK_DTYPE_FLOAT32)
      ((float *)dst)[i] = v;
    else
      ((__half *)dst)[i] = __float2half_rn(v);
    return;
  }
  if (src_u8 && a.quantize) {
    int q = stk_gpu_u8_from_bounded(v);
    store_double(dst, dt, i,
                 stk_gpu_normalize_u8(q, d->s.mean[c], d->s.stddev[c], a.scale, a.shift));
    return;
  }
  float r = stk_gpu_cmn_float(v, d->mul[c], d->add[c]);
  if (dt == STK_DTYPE_FLOAT32)
    ((float *)dst)[i] = r;
  else
    store_double(dst, dt, i, (double)r);
}

/* Vertical pass (or the only pass, for nearest) with the output stage. */
template <int C, typename T, bool NEAREST>
__global__ void __launch_bounds__(THREADS)
    rs_vpass(const rs_dev *S, const int *first, int n, stk_gpu_resample_args a, int kmax,
             const float *tmp) {
  extern __shared__ float smem[];
  float *w = smem; /* [V_ROWS][kmax] */
  int *st = (int *)(smem + (size_t)kmax * V_ROWS);
  int *cnt = st + V_ROWS;
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const rs_dev *d = &S[si];
  int t = b - first[si], bx = t % d->vbx, by = t / d->vbx;
  int tx = threadIdx.x % TW, ty = threadIdx.x / TW;
  int x = bx * TW + tx, y = by * V_ROWS + ty;
  int dst_w = d->s.dst_w, dst_h = d->s.dst_h;
  if (!NEAREST) {
    if (threadIdx.x < V_ROWS) {
      int yy = by * V_ROWS + threadIdx.x, s0 = 0, c = 0;
      if (yy < dst_h)
        c = stk_gpu_axis_weights(&d->gy, a.interp, yy, w + threadIdx.x * kmax, 1, &s0);
      st[threadIdx.x] = s0;
      cnt[threadIdx.x] = c;
    }
    __syncthreads();
  }
  if (x >= dst_w || y >= dst_h) return;
  float v[C];
  if (NEAREST) {
    int sy = stk_gpu_nearest(&d->gy, y), sx = stk_gpu_nearest(&d->gx, x);
    const T *p = (const T *)((const char *)d->s.src + (size_t)sy * d->s.src_pitch) + (size_t)sx * C;
#pragma unroll
    for (int c = 0; c < C; c++) v[c] = (float)p[c];
  } else {
    int s0 = st[ty], nt = cnt[ty];
    const float *col = tmp + d->tmp_off + ((size_t)(s0 - d->ylo) * dst_w + x) * C;
    size_t rstride = (size_t)dst_w * C;
    const float *wr = w + ty * kmax;
#pragma unroll
    for (int c = 0; c < C; c++) v[c] = 0.0f;
    for (int k = 0; k < nt; k++) {
      float wk = wr[k];
#pragma unroll
      for (int c = 0; c < C; c++) v[c] += wk * col[(size_t)k * rstride + c];
    }
  }
  int oc = a.out_channels, ox = d->s.mirror ? dst_w - 1 - x : x;
  bool src_u8 = a.in_dtype == STK_DTYPE_UINT8;
  size_t plane = (size_t)dst_h * dst_w;
  for (int c = 0; c < oc; c++) {
    size_t i =
        a.planar ? (size_t)c * plane + (size_t)y * dst_w + ox : ((size_t)y * dst_w + ox) * oc + c;
    if (c >= C) {
      store_double(d->s.dst, a.out_dtype, i, a.fill[c]);
      continue;
    }
    float val = 0.0f;
#pragma unroll
    for (int k = 0; k < C; k++)
      if (k == c) val = v[k];
    rs_store(a, d, val, c, src_u8, d->s.dst, i);
  }
}

static int check_resample_args(const stk_gpu_resample_args *a, char *err, size_t errlen) {
  if (a->channels < 1 || a->channels > 4)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "%d channels (1 to 4 supported)", a->channels);
  if (a->in_dtype != STK_DTYPE_UINT8 && a->in_dtype != STK_DTYPE_FLOAT32)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "input type %d (uint8 or float32 expected)",
                    (int)a->in_dtype);
  bool ok = a->out_dtype == STK_DTYPE_UINT8 || a->out_dtype == STK_DTYPE_FLOAT32 ||
            a->out_dtype == STK_DTYPE_FLOAT16 || (a->normalize && a->out_dtype == STK_DTYPE_INT8);
  if (!ok)
    return GPU_FAIL(STK_ERR_UNSUPPORTED,
                    "output type %d (uint8, float32, float16; int8 with "
                    "normalize)",
                    (int)a->out_dtype);
  if (a->interp < 0 || a->interp > 3)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown interpolation %d", a->interp);
  int oc = a->out_channels ? a->out_channels : a->channels;
  if (oc < a->channels || oc > 4)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "out_channels %d for %d channels (at most 4)", oc,
                    a->channels);
  if (a->normalize && !(isfinite(a->scale) && isfinite(a->shift)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "scale %g / shift %g not finite", a->scale, a->shift);
  return 0;
}

static int check_resample_sample(const stk_gpu_resample_sample *s, int i,
                                 const stk_gpu_resample_args *a, char *err, size_t errlen) {
  if (!s->src || !s->dst)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL source or destination", i);
  if (s->src_h < 1 || s->src_w < 1 || s->dst_h < 1 || s->dst_w < 1)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: empty image (%dx%d -> %dx%d)", i,
                    s->src_h, s->src_w, s->dst_h, s->dst_w);
  if (s->src_pitch < (size_t)s->src_w * a->channels * dt_size(a->in_dtype))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: pitch %zu below a row of %d pixels", i,
                    s->src_pitch, s->src_w);
  const double win[4] = {s->x0, s->y0, s->x1, s->y1};
  for (int k = 0; k < 4; k++)
    if (!(fabs(win[k]) <= 1e12))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "sample %d: window coordinate %g is not finite "
                      "or beyond 1e12",
                      i, win[k]);
  if (a->normalize)
    for (int c = 0; c < a->channels; c++)
      if (s->stddev[c] == 0.0 || !isfinite(s->stddev[c]) || !isfinite(s->mean[c]))
        return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                        "sample %d: std[%d] = %g, mean[%d] = %g: std "
                        "must be non-zero and both finite",
                        i, c, s->stddev[c], c, s->mean[c]);
  return 0;
}

/* Raises a kernel's dynamic shared memory limit when `bytes` needs it. */
template <typename K>
static int smem_limit(stk_gpu_ctx *ctx, K kernel, size_t bytes, char *err, size_t errlen) {
  if (bytes > (size_t)ctx->prop.sharedMemPerBlockOptin)
    return GPU_FAIL(STK_ERR_UNSUPPORTED,
                    "filter needs %zu bytes of shared memory (device "
                    "limit %zu)",
                    bytes, (size_t)ctx->prop.sharedMemPerBlockOptin);
  if (bytes > 48 * 1024)
    CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  return 0;
}

template <typename T, int C>
static int launch_resample(stk_gpu_ctx *ctx, const rs_dev *dS, const int *dh, const int *dv, int n,
                           int hblocks, int vblocks, const stk_gpu_resample_args &a, int kx, int ky,
                           float *tmp, cudaStream_t stream, char *err, size_t errlen) {
  if (a.interp == STK_GPU_INTERP_NEAREST) {
    rs_vpass<C, T, true><<<vblocks, THREADS, 0, stream>>>(dS, dv, n, a, 1, NULL);
    return stk_check_launch("resample (nearest pass)", err, errlen);
  }
  size_t hs = (size_t)kx * TW * sizeof(float) + 2 * TW * sizeof(int);
  size_t vs = (size_t)ky * V_ROWS * sizeof(float) + 2 * V_ROWS * sizeof(int);
  STK_TRY_INT(smem_limit(ctx, rs_hpass<T, C>, hs, err, errlen));
  STK_TRY_INT(smem_limit(ctx, rs_vpass<C, T, false>, vs, err, errlen));
  rs_hpass<T, C><<<hblocks, THREADS, hs, stream>>>(dS, dh, n, a.interp, kx, tmp);
  STK_TRY_INT(stk_check_launch("resample (horizontal pass)", err, errlen));
  rs_vpass<C, T, false><<<vblocks, THREADS, vs, stream>>>(dS, dv, n, a, ky, tmp);
  return stk_check_launch("resample (vertical pass)", err, errlen);
}

#define DISPATCH_C(T, ...)                     \
  switch (a.channels) {                        \
    case 1:                                    \
      rc = launch_resample<T, 1>(__VA_ARGS__); \
      break;                                   \
    case 2:                                    \
      rc = launch_resample<T, 2>(__VA_ARGS__); \
      break;                                   \
    case 3:                                    \
      rc = launch_resample<T, 3>(__VA_ARGS__); \
      break;                                   \
    default:                                   \
      rc = launch_resample<T, 4>(__VA_ARGS__); \
      break;                                   \
  }

int stk_gpu_resample(stk_gpu_ctx *ctx, int n, const stk_gpu_resample_sample *samples,
                     const stk_gpu_resample_args *args, uintptr_t stream_h, char *err,
                     size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  STK_TRY_INT(check_resample_args(args, err, errlen));
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  stk_gpu_resample_args a = *args;
  if (!a.out_channels) a.out_channels = a.channels;
  bool nearest = a.interp == STK_GPU_INTERP_NEAREST;
  size_t bytes = (size_t)n * sizeof(rs_dev) + 2 * (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *hb = (int64_t *)malloc(2 * (size_t)n * sizeof(int64_t));
  if (!host || !hb) {
    free(host);
    free(hb);
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  }
  rs_dev *S = (rs_dev *)host;
  int *hfirst = (int *)(host + (size_t)n * sizeof(rs_dev)), *vfirst = hfirst + n + 1;
  int kx = 1, ky = 1, rc = 0;
  size_t tmp_floats = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_resample_sample *s = &samples[i];
    rc = check_resample_sample(s, i, &a, err, errlen);
    if (rc) break;
    rs_dev *d = &S[i];
    memset(d, 0, sizeof *d);
    d->s = *s;
    stk_gpu_axis_setup(&d->gx, s->src_w, s->dst_w, s->x0, s->x1, a.interp, a.antialias);
    stk_gpu_axis_setup(&d->gy, s->src_h, s->dst_h, s->y0, s->y1, a.interp, a.antialias);
    if (!nearest && (stk_gpu_axis_span(&d->gx) > STK_GPU_MAX_TAPS ||
                     stk_gpu_axis_span(&d->gy) > STK_GPU_MAX_TAPS)) {
      rc = GPU_FAIL(STK_ERR_UNSUPPORTED,
                    "sample %d: %dx%d -> %dx%d needs a filter wider than "
                    "%d taps",
                    i, s->src_h, s->src_w, s->dst_h, s->dst_w, STK_GPU_MAX_TAPS);
      break;
    }
    kx = d->gx.k > kx ? d->gx.k : kx;
    ky = d->gy.k > ky ? d->gy.k : ky;
    stk_gpu_axis_range(&d->gy, &d->ylo, &d->yhi);
    d->tmp_off = tmp_floats;
    int64_t rows = d->yhi - d->ylo + 1;
    if (!nearest) tmp_floats += (size_t)rows * s->dst_w * a.channels;
    d->hbx = (int)stk_cdiv(s->dst_w, TW);
    d->vbx = (int)stk_cdiv(s->dst_w, TW);
    hb[i] = nearest ? 0 : (int64_t)d->hbx * stk_cdiv(rows, H_ROWS);
    hb[n + i] = (int64_t)d->vbx * stk_cdiv(s->dst_h, V_ROWS);
    for (int c = 0; c < a.channels && a.normalize; c++)
      stk_gpu_cmn_muladd(s->mean[c], s->stddev[c], a.scale, a.shift, &d->mul[c], &d->add[c]);
  }
  if (rc == 0) rc = stk_block_table(hb, n, hfirst, err, errlen);
  if (rc == 0) rc = stk_block_table(hb + n, n, vfirst, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dparams = NULL, *dtmp = NULL;
  if (rc == 0) rc = stk_gpu_upload(ctx, host, bytes, stream, &dparams, err, errlen);
  if (rc == 0 && tmp_floats)
    rc = stk_gpu_device_alloc(ctx, tmp_floats * sizeof(float), stream_h, &dtmp, err, errlen);
  if (rc == 0) {
    const rs_dev *dS = (const rs_dev *)dparams;
    const int *dh = (const int *)((char *)dparams + (size_t)n * sizeof(rs_dev)), *dv = dh + n + 1;
    if (a.in_dtype == STK_DTYPE_UINT8) {
      DISPATCH_C(uint8_t, ctx, dS, dh, dv, n, hfirst[n], vfirst[n], a, kx, ky, (float *)dtmp,
                 stream, err, errlen)
    } else {
      DISPATCH_C(float, ctx, dS, dh, dv, n, hfirst[n], vfirst[n], a, kx, ky, (float *)dtmp, stream,
                 err, errlen)
    }
  }
  if (dtmp) stk_gpu_device_free(ctx, dtmp, stream_h, NULL, 0);
  if (dparams) stk_gpu_device_free(ctx, dparams, stream_h, NULL, 0);
  free(host);
  free(hb);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* crop_mirror_normalize                                                              */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_cmn_sample s;
  float mul[4], add[4];
  int bx; /* blocks across the window */
} cmn_dev;

template <typename T, int C>
__global__ void __launch_bounds__(THREADS)
    cmn_kernel(const cmn_dev *S, const int *first, int n, stk_gpu_cmn_args a) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const cmn_dev *d = &S[si];
  int t = b - first[si], bx = t % d->bx, by = t / d->bx;
  int x = bx * TW + threadIdx.x % TW, y = by * V_ROWS + threadIdx.x / TW;
  int w = d->s.win_w, h = d->s.win_h;
  if (x >= w || y >= h) return;
  int sy = d->s.win_y + y, sx = d->s.win_x + (d->s.mirror ? w - 1 - x : x);
  bool inside = sy >= 0 && sy < d->s.src_h && sx >= 0 && sx < d->s.src_w;
  const T *p =
      inside ? (const T *)((const char *)d->s.src + (size_t)sy * d->s.src_pitch) + (size_t)sx * C
             : NULL;
  int oc = a.out_channels;
  size_t plane = (size_t)w * h;
  for (int c = 0; c < oc; c++) {
    size_t i = a.planar ? (size_t)c * plane + (size_t)y * w + x : ((size_t)y * w + x) * oc + c;
    if (!inside || c >= C) {
      store_double(d->s.dst, a.out_dtype, i, d->s.fill[c]);
    } else if (sizeof(T) == 1) {
      store_double(d->s.dst, a.out_dtype, i,
                   stk_gpu_normalize_u8((int)p[c], d->s.mean[c], d->s.stddev[c], a.scale, a.shift));
    } else {
      float r = stk_gpu_cmn_float((float)p[c], d->mul[c], d->add[c]);
      if (a.out_dtype == STK_DTYPE_FLOAT32)
        ((float *)d->s.dst)[i] = r;
      else
        store_double(d->s.dst, a.out_dtype, i, (double)r);
    }
  }
}

int stk_gpu_cmn(stk_gpu_ctx *ctx, int n, const stk_gpu_cmn_sample *samples,
                const stk_gpu_cmn_args *args, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  stk_gpu_cmn_args a = *args;
  if (!a.out_channels) a.out_channels = a.channels;
  if (a.channels < 1 || a.channels > 4 || a.out_channels < a.channels || a.out_channels > 4)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "%d -> %d channels (1 to 4 supported)", a.channels,
                    a.out_channels);
  if (a.in_dtype != STK_DTYPE_UINT8 && a.in_dtype != STK_DTYPE_FLOAT32)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "input type %d (uint8 or float32 expected)",
                    (int)a.in_dtype);
  if (a.out_dtype != STK_DTYPE_FLOAT32 && a.out_dtype != STK_DTYPE_FLOAT16 &&
      a.out_dtype != STK_DTYPE_UINT8 && a.out_dtype != STK_DTYPE_INT8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "output type %d (float32, float16, uint8 or int8)",
                    (int)a.out_dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t bytes = (size_t)n * sizeof(cmn_dev) + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  cmn_dev *S = (cmn_dev *)host;
  int *first = (int *)(host + (size_t)n * sizeof(cmn_dev));
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_cmn_sample *s = &samples[i];
    if (!s->src || !s->dst || s->src_h < 1 || s->src_w < 1 || s->win_h < 0 || s->win_w < 0 ||
        s->src_pitch < (size_t)s->src_w * a.channels * dt_size(a.in_dtype)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL pointer, empty image, negative "
                    "window or short pitch",
                    i);
      break;
    }
    for (int c = 0; c < a.channels && rc == 0; c++)
      if (s->stddev[c] == 0.0 || !isfinite(s->stddev[c]) || !isfinite(s->mean[c]))
        rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "sample %d: std[%d] = %g, mean[%d] = %g: std must "
                      "be non-zero and both finite",
                      i, c, s->stddev[c], c, s->mean[c]);
    cmn_dev *d = &S[i];
    memset(d, 0, sizeof *d);
    d->s = *s;
    for (int c = 0; c < a.channels; c++)
      stk_gpu_cmn_muladd(s->mean[c], s->stddev[c], a.scale, a.shift, &d->mul[c], &d->add[c]);
    d->bx = (int)stk_cdiv(s->win_w, TW);
    nb[i] = (int64_t)d->bx * stk_cdiv(s->win_h, V_ROWS);
  }
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, host, bytes, stream_h, "crop_mirror_normalize", err, errlen, [&](const char *dp) {
          const cmn_dev *dS = (const cmn_dev *)dp;
          const int *df = (const int *)((char *)dp + (size_t)n * sizeof(cmn_dev));
          int g = first[n];
#define CMN_LAUNCH(T)                                            \
  switch (a.channels) {                                          \
    case 1:                                                      \
      cmn_kernel<T, 1><<<g, THREADS, 0, stream>>>(dS, df, n, a); \
      break;                                                     \
    case 2:                                                      \
      cmn_kernel<T, 2><<<g, THREADS, 0, stream>>>(dS, df, n, a); \
      break;                                                     \
    case 3:                                                      \
      cmn_kernel<T, 3><<<g, THREADS, 0, stream>>>(dS, df, n, a); \
      break;                                                     \
    default:                                                     \
      cmn_kernel<T, 4><<<g, THREADS, 0, stream>>>(dS, df, n, a); \
      break;                                                     \
  }
          if (a.in_dtype == STK_DTYPE_UINT8)
            CMN_LAUNCH(uint8_t)
          else
            CMN_LAUNCH(float)
#undef CMN_LAUNCH
          return 0;
        });
  free(host);
  free(nb);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* crop                                                                               */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_crop_sample s;
  int64_t elems; /* dst_h * dst_w * channels */
} crop_dev;

__global__ void __launch_bounds__(THREADS)
    crop_kernel(const crop_dev *S, const int *first, int n, stk_gpu_crop_args a, int es_out) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const crop_dev *d = &S[si];
  int64_t e = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (e >= d->elems) return;
  int C = a.channels;
  int64_t px = e / C;
  int c = (int)(e - px * C);
  int y = (int)(px / d->s.dst_w), x = (int)(px - (int64_t)y * d->s.dst_w);
  int sy = d->s.y + y, sx = d->s.x + x;
  if (sy < 0 || sy >= d->s.src_h || sx < 0 || sx >= d->s.src_w) {
    for (int k = 0; k < es_out; k++)
      ((uint8_t *)d->s.dst)[(size_t)e * es_out + k] = d->s.fill[c * es_out + k];
    return;
  }
  const char *row = (const char *)d->s.src + (size_t)sy * d->s.src_pitch;
  convert_elem(row, a.in_dtype, (size_t)sx * C + c, d->s.dst, a.out_dtype, (size_t)e);
}

int stk_gpu_crop(stk_gpu_ctx *ctx, int n, const stk_gpu_crop_sample *samples,
                 const stk_gpu_crop_args *args, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  stk_gpu_crop_args a = *args;
  size_t ei = dt_size(a.in_dtype), eo = dt_size(a.out_dtype);
  if (!ei || !eo)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "unknown dtype %d or %d", (int)a.in_dtype,
                    (int)a.out_dtype);
  if (a.channels < 1 || (size_t)a.channels * eo > sizeof(samples->fill))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "%d channels of %zu bytes do not fit the 64-byte fill",
                    a.channels, eo);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t bytes = (size_t)n * sizeof(crop_dev) + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  crop_dev *S = (crop_dev *)host;
  int *first = (int *)(host + (size_t)n * sizeof(crop_dev));
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_crop_sample *s = &samples[i];
    if (!s->src || !s->dst || s->src_h < 0 || s->src_w < 0 || s->dst_h < 0 || s->dst_w < 0 ||
        s->src_pitch < (size_t)s->src_w * a.channels * ei) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL pointer, negative size or short "
                    "pitch",
                    i);
      break;
    }
    S[i].s = *s;
    S[i].elems = (int64_t)s->dst_h * s->dst_w * a.channels;
    nb[i] = stk_cdiv(S[i].elems, THREADS);
  }
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc =
        stk_upload_and_launch(ctx, host, bytes, stream_h, "crop", err, errlen, [&](const char *dp) {
          crop_kernel<<<first[n], THREADS, 0, stream>>>(
              (const crop_dev *)dp, (const int *)((char *)dp + (size_t)n * sizeof(crop_dev)), n, a,
              (int)eo);
          return 0;
        });
  free(host);
  free(nb);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* flip                                                                               */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_flip_sample s;
  int64_t units; /* outer * h * mid * w blocks of `inner` elements */
} flip_dev;

__global__ void __launch_bounds__(THREADS)
    flip_kernel(const flip_dev *S, const int *first, int n, size_t block_bytes) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const flip_dev *d = &S[si];
  int64_t u = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (u >= d->units) return;
  const stk_gpu_flip_sample *s = &d->s;
  int64_t x = u % s->w, r = u / s->w;
  int64_t m = r % s->mid;
  r /= s->mid;
  int64_t y = r % s->h, o = r / s->h;
  int64_t sx = s->horizontal ? s->w - 1 - x : x, sy = s->vertical ? s->h - 1 - y : y;
  int64_t su = ((o * s->h + sy) * s->mid + m) * s->w + sx;
  const uint8_t *src = (const uint8_t *)s->src + (size_t)su * block_bytes;
  uint8_t *dst = (uint8_t *)s->dst + (size_t)u * block_bytes;
  if (block_bytes % 4 == 0 && ((uintptr_t)src % 4 == 0) && ((uintptr_t)dst % 4 == 0)) {
    for (size_t k = 0; k < block_bytes / 4; k++) ((uint32_t *)dst)[k] = ((const uint32_t *)src)[k];
  } else {
    for (size_t k = 0; k < block_bytes; k++) dst[k] = src[k];
  }
}

int stk_gpu_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_flip_sample *samples, size_t esize,
                 uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || esize == 0)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d, esize = %zu)", n, esize);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  /* one inner size per batch keeps the copy loop uniform: samples must agree */
  int64_t inner = samples[0].inner;
  size_t bytes = (size_t)n * sizeof(flip_dev) + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  flip_dev *S = (flip_dev *)host;
  int *first = (int *)(host + (size_t)n * sizeof(flip_dev));
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_flip_sample *s = &samples[i];
    if (!s->src || !s->dst || s->outer < 0 || s->h < 0 || s->mid < 0 || s->w < 0 ||
        s->inner != inner || inner < 1) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL pointer, negative extent or an "
                    "inner size other than sample 0's (%lld)",
                    i, (long long)inner);
      break;
    }
    S[i].s = *s;
    S[i].units = s->outer * s->h * s->mid * s->w;
    nb[i] = stk_cdiv(S[i].units, THREADS);
  }
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc =
        stk_upload_and_launch(ctx, host, bytes, stream_h, "flip", err, errlen, [&](const char *dp) {
          flip_kernel<<<first[n], THREADS, 0, stream>>>(
              (const flip_dev *)dp, (const int *)((char *)dp + (size_t)n * sizeof(flip_dev)), n,
              (size_t)inner * esize);
          return 0;
        });
  free(host);
  free(nb);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* cast                                                                               */
/* ---------------------------------------------------------------------------------- */

#define CAST_PER_THREAD 4

__global__ void __launch_bounds__(THREADS)
    cast_kernel(const stk_gpu_cast_sample *S, const int *first, int n, int st, int dt) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_cast_sample *s = &S[si];
  int64_t base = (int64_t)(b - first[si]) * THREADS * CAST_PER_THREAD + threadIdx.x;
  for (int k = 0; k < CAST_PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e < s->count) convert_elem(s->src, st, (size_t)e, s->dst, dt, (size_t)e);
  }
}

int stk_gpu_cast(stk_gpu_ctx *ctx, int n, const stk_gpu_cast_sample *samples, stk_dtype in_dtype,
                 stk_dtype out_dtype, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (!dt_size(in_dtype) || !dt_size(out_dtype))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "unknown dtype %d or %d", (int)in_dtype, (int)out_dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t bytes = (size_t)n * sizeof(stk_gpu_cast_sample) + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  stk_gpu_cast_sample *S = (stk_gpu_cast_sample *)host;
  int *first = (int *)(host + (size_t)n * sizeof(stk_gpu_cast_sample));
  for (int i = 0; i < n && rc == 0; i++) {
    if ((!samples[i].src || !samples[i].dst) && samples[i].count > 0) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
      break;
    }
    S[i] = samples[i];
    nb[i] = samples[i].count > 0 ? stk_cdiv(samples[i].count, THREADS * CAST_PER_THREAD) : 0;
  }
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc =
        stk_upload_and_launch(ctx, host, bytes, stream_h, "cast", err, errlen, [&](const char *dp) {
          cast_kernel<<<first[n], THREADS, 0, stream>>>(
              (const stk_gpu_cast_sample *)dp,
              (const int *)((char *)dp + (size_t)n * sizeof(stk_gpu_cast_sample)), n, (int)in_dtype,
              (int)out_dtype);
          return 0;
        });
  free(host);
  free(nb);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_resample(stk_gpu_ctx *ctx, int n, const stk_gpu_resample_sample *samples,
                       const stk_gpu_resample_args *args, uintptr_t stream, char *err,
                       size_t errlen) {
  return stk_gpu_resample(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_cmn(stk_gpu_ctx *ctx, int n, const stk_gpu_cmn_sample *samples,
                  const stk_gpu_cmn_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_cmn(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_crop(stk_gpu_ctx *ctx, int n, const stk_gpu_crop_sample *samples,
                   const stk_gpu_crop_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_crop(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_flip_sample *samples,
                   const stk_gpu_elem_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_flip(ctx, n, samples, args->esize, stream, err, errlen);
}

int stk_gpu_k_cast(stk_gpu_ctx *ctx, int n, const stk_gpu_cast_sample *samples,
                   const stk_gpu_io_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_cast(ctx, n, samples, args->in_dtype, args->out_dtype, stream, err, errlen);
}
