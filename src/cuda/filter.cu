/*
 * GPU kernels for filters and noise (api_filter.h): the convolutions behind
 * gaussian_blur, laplacian and filter, and noise.gaussian / salt_and_pepper / shot.
 *
 * Both entry points copy their per-sample descriptors (plus, for the convolutions, every
 * sample's weights, computed on the host by the CPU operator's own functions) and a table
 * of each sample's first block into one device array, then launch one grid for the batch:
 * block b belongs to the sample whose range holds b (binary search), so ragged batches
 * waste no blocks.
 *
 * Convolutions: when every sample's tile fits in 48 KB of shared memory (conv_tiled: the
 * usual image kernels), one fused launch computes TILE_H x TILE_W output pixels per block
 * from a shared-memory window. Otherwise separable samples run a horizontal pass into a float32
 * temporary (one thread per temporary pixel, all channels: rows of the padded height, out_w
 * columns; per pair), then the output kernel (one thread per output pixel) runs the vertical taps
 * (or, for a full kernel, all kh x kw taps) and converts to the output type. Sums follow the CPU's
 * order exactly (filter_common.h), so float32 results are bit-identical.
 *
 * Noise: one thread per Philox block (gaussian: 4 elements, salt_and_pepper: 4 pixels)
 * or per element (shot), with the arithmetic of noise_common.h.
 */
#include <cuda_fp16.h>
#include <stdlib.h>
#include <string.h>

#include "api_filter.h"
#include "gpu_kernels.h"
#include "../shared/filter_common.h"
#include "gpu_internal.h"
#include "launch.cuh"
#include "../shared/noise_common.h"

#define THREADS 256

/* ---------------------------------------------------------------------------------- */
/* Launch plumbing (the shared part: launch.cuh)                                      */
/* ---------------------------------------------------------------------------------- */

static size_t f_align(size_t n) { return (n + 15) & ~(size_t)15; }

/* ---------------------------------------------------------------------------------- */
/* Convolutions                                                                       */
/* ---------------------------------------------------------------------------------- */

/* One thread per temporary pixel (filter_common.h: stk_conv_hpass_px). */
template <int DT>
__global__ void __launch_bounds__(THREADS)
    conv_hpass(const stk_conv_job *S, const int *first, int n, const float *W, float *tmp) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_conv_job *d = &S[si];
  int64_t e = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (e < d->h_count) stk_conv_hpass_px(d, DT, W, tmp, e);
}

/* One thread per output pixel (stk_conv_out_px). */
template <int DT>
__global__ void __launch_bounds__(THREADS) conv_out(const stk_conv_job *S, const int *first, int n,
                                                    const float *W, const float *tmp, int odt) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_conv_job *d = &S[si];
  int64_t e = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (e < d->v_count) stk_conv_out_px(d, DT, W, tmp, e, odt);
}

/* Tiled convolution: one block per TILE_H x TILE_W output pixels (all channels) of one
 * sample. The block loads its input window (halo included, border rule applied, as
 * float32) into shared memory once, runs each pair's horizontal taps over the window's
 * rows into a shared float32 temporary, then the vertical taps (or, for a full kernel,
 * every tap over the window), all in the CPU's order with the same float32 roundings as
 * stk_conv_hpass_px / stk_conv_out_px: bit-identical to the two-pass kernels, without
 * the temporary's round trip through global memory or the per-tap global loads. */
#define TILE_W        32
#define TILE_H        16
#define TILE_SMEM_MAX (48 * 1024)

/* Shared floats a sample's tile needs: window, temporaries, weights. */
static int64_t tile_floats(const stk_gpu_conv_sample *s) {
  int64_t wr = TILE_H + s->kh - 1, wc = (int64_t)(TILE_W + s->kw - 1) * s->c;
  int64_t win = wr * wc, tmp = (int64_t)s->npairs * wr * TILE_W * s->c;
  int64_t nw = s->npairs ? (int64_t)s->npairs * (s->kh + s->kw) : (int64_t)s->kh * s->kw;
  return win + tmp + nw;
}

template <int DT>
__global__ void __launch_bounds__(THREADS)
    conv_tiled(const stk_conv_job *S, const int *first, int n, const float *W, int odt) {
  extern __shared__ float sm[];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_conv_job *d = &S[si];
  int C = d->c, kh = d->kh, kw = d->kw, t = threadIdx.x;
  int tx = (d->out_w + TILE_W - 1) / TILE_W, lb = b - first[si];
  int y0 = (lb / tx) * TILE_H, x0 = (lb % tx) * TILE_W;
  int th = d->out_h - y0 < TILE_H ? d->out_h - y0 : TILE_H;
  int tw = d->out_w - x0 < TILE_W ? d->out_w - x0 : TILE_W;
  int wr = th + kh - 1, wcols = tw + kw - 1, wc = (TILE_W + kw - 1) * C;
  float *win = sm;                           /* (TILE_H + kh - 1) x wc */
  float *tmp = win + (TILE_H + kh - 1) * wc; /* npairs x (TILE_H + kh - 1) x TILE_W * C */
  int tstride = (TILE_H + kh - 1) * TILE_W * C;
  float *wts = tmp + d->npairs * tstride;
  int nw = d->npairs ? d->npairs * (kh + kw) : kh * kw;
  for (int k = t; k < nw; k += THREADS) wts[k] = W[d->w_off + k];
  /* the window: row r <-> input row border(y0 + r - ay), column q <-> x0 + q - ax */
  int rowel = wcols * C;
  for (int e = t; e < wr * rowel; e += THREADS) {
    int r = e / rowel, q = e - r * rowel, col = q / C, ch = q - col * C;
    int64_t sy = stk_conv_border((int64_t)y0 + r - d->ay, d->h, d->border);
    int64_t sx = stk_conv_border((int64_t)x0 + col - d->ax, d->w, d->border);
    win[r * wc + q] = stk_conv_value(d, DT, sy, sx, ch);
  }
  __syncthreads();
  int oel = tw * C;
  if (d->npairs == 0) {
    for (int e = t; e < th * oel; e += THREADS) {
      int yy = e / oel, q = e - yy * oel, xx = q / C, ch = q - xx * C;
      float acc = 0.0f;
      for (int i = 0; i < kh; i++) {
        const float *row = win + (yy + i) * wc + xx * C + ch;
        for (int j = 0; j < kw; j++) {
          float w = wts[i * kw + j];
          if (w != 0.0f) acc = stk_conv_tap(acc, w, row[j * C]);
        }
      }
      stk_conv_store(d->dst, odt, ((int64_t)(y0 + yy) * d->out_w + x0 + xx) * C + ch, acc);
    }
    return;
  }
  /* horizontal taps of each pair over the window's rows */
  for (int p = 0; p < d->npairs; p++) {
    const float *kx = wts + p * (kh + kw) + kh;
    float *tp = tmp + p * tstride;
    for (int e = t; e < wr * oel; e += THREADS) {
      int r = e / oel, q = e - r * oel, xx = q / C, ch = q - xx * C;
      const float *row = win + r * wc + xx * C + ch;
      float acc = 0.0f;
      for (int j = 0; j < kw; j++) {
        float w = kx[j];
        if (w != 0.0f) acc = stk_conv_tap(acc, w, row[j * C]);
      }
      tp[r * TILE_W * C + q] = acc;
    }
  }
  __syncthreads();
  /* vertical taps: pair 2 continues pair 1's sum */
  for (int e = t; e < th * oel; e += THREADS) {
    int yy = e / oel, q = e - yy * oel, xx = q / C, ch = q - xx * C;
    float acc = 0.0f;
    for (int p = 0; p < d->npairs; p++) {
      const float *ky = wts + p * (kh + kw);
      const float *col = tmp + p * tstride + yy * TILE_W * C + q;
      for (int i = 0; i < kh; i++) {
        float w = ky[i];
        if (w != 0.0f) acc = stk_conv_tap(acc, w, col[i * TILE_W * C]);
      }
    }
    stk_conv_store(d->dst, odt, ((int64_t)(y0 + yy) * d->out_w + x0 + xx) * C + ch, acc);
  }
}

template <int DT>
static void conv_tiled_launch(int blocks, size_t smem, const stk_conv_job *S, const int *first,
                              int n, const float *W, int odt, cudaStream_t stream) {
  if (blocks > 0) conv_tiled<DT><<<blocks, THREADS, smem, stream>>>(S, first, n, W, odt);
}

static bool conv_in_ok(stk_dtype t) {
  return t == STK_DTYPE_UINT8 || t == STK_DTYPE_INT8 || t == STK_DTYPE_UINT16 ||
         t == STK_DTYPE_INT16 || t == STK_DTYPE_INT32 || t == STK_DTYPE_FLOAT16 ||
         t == STK_DTYPE_FLOAT32;
}

/* The input type is a template parameter: the loads' switch folds away. */
template <int DT>
static void conv_launch(int hblocks, int oblocks, const stk_conv_job *S, const int *fh,
                        const int *fo, int n, const float *W, float *tmp, int odt,
                        cudaStream_t stream) {
  if (hblocks > 0) conv_hpass<DT><<<hblocks, THREADS, 0, stream>>>(S, fh, n, W, tmp);
  if (oblocks > 0) conv_out<DT><<<oblocks, THREADS, 0, stream>>>(S, fo, n, W, tmp, odt);
}

/* Checks one sample's descriptor; returns its weight count or -1 (err set). */
static int64_t conv_check(const stk_gpu_conv_sample *s, int i, char *err, size_t errlen) {
  if (!s->src || !s->dst || !s->weights || s->h < 1 || s->w < 1 || s->c < 1 || s->out_h < 1 ||
      s->out_w < 1 || s->kh < 1 || s->kw < 1 || s->ay < 0 || s->ay >= s->kh || s->ax < 0 ||
      s->ax >= s->kw || s->border < 0 || s->border > 4 || s->npairs < 0 || s->npairs > 2) {
    GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
             "sample %d: NULL pointer, empty extent, anchor outside "
             "the %dx%d kernel, border %d or %d pairs",
             i, s->kh, s->kw, s->border, s->npairs);
    return -1;
  }
  if ((int64_t)(s->npairs > 0 ? s->npairs : 1) * ((int64_t)s->out_h + s->kh - 1) * s->out_w >=
      ((int64_t)1 << 31)) {
    GPU_FAIL(STK_ERR_LIMIT, "sample %d: %dx%d output with a %dx%d kernel has too many pixels", i,
             s->out_h, s->out_w, s->kh, s->kw);
    return -1;
  }
  return s->npairs ? (int64_t)s->npairs * (s->kh + s->kw) : (int64_t)s->kh * s->kw;
}

static int stk_gpu_conv(stk_gpu_ctx *ctx, int n, const stk_gpu_conv_sample *samples,
                        stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream_h, char *err,
                        size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (!conv_in_ok(in_dtype) ||
      !(conv_in_ok(out_dtype) || out_dtype == STK_DTYPE_INT64 || out_dtype == STK_DTYPE_FLOAT64))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "types %d -> %d are not supported", (int)in_dtype,
                    (int)out_dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  /* layout of the upload: descriptors, two block tables, weights */
  size_t nweights = 0;
  int64_t tile_max = 0; /* the tiled kernel when every sample's tile fits in shared memory */
  for (int i = 0; i < n; i++) {
    int64_t k = conv_check(&samples[i], i, err, errlen);
    if (k < 0) return STK_ERR_INVALID_ARGUMENT; /* err names the sample */
    nweights += (size_t)k;
    int64_t f = tile_floats(&samples[i]);
    if (f > tile_max) tile_max = f;
  }
  bool tiled = tile_max * (int64_t)sizeof(float) <= TILE_SMEM_MAX;
  size_t off_fh = f_align((size_t)n * sizeof(stk_conv_job));
  size_t off_fo = off_fh + f_align((size_t)(n + 1) * sizeof(int));
  size_t off_w = off_fo + f_align((size_t)(n + 1) * sizeof(int));
  size_t bytes = off_w + nweights * sizeof(float);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc(2 * (size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  stk_conv_job *S = (stk_conv_job *)host;
  int64_t woff = 0, toff = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_conv_sample *s = &samples[i];
    int64_t k = conv_check(s, i, err, errlen);
    stk_conv_job *J = &S[i];
    memset(J, 0, sizeof *J);
    J->src = s->src, J->dst = s->dst;
    J->h = s->h, J->w = s->w, J->c = s->c, J->out_h = s->out_h, J->out_w = s->out_w;
    J->kh = s->kh, J->kw = s->kw, J->ay = s->ay, J->ax = s->ax, J->border = s->border;
    J->npairs = s->npairs, J->fill = s->fill;
    J->w_off = woff;
    memcpy(host + off_w + (size_t)woff * sizeof(float), s->weights, (size_t)k * sizeof(float));
    woff += k;
    S[i].v_count = (int64_t)s->out_h * s->out_w;
    S[i].h_count = (int64_t)s->npairs * ((int64_t)s->out_h + s->kh - 1) * s->out_w;
    S[i].tmp_off = toff;
    toff += S[i].h_count * s->c;
    nb[i] = stk_cdiv(S[i].h_count, THREADS);
    nb[n + i] = tiled ? stk_cdiv(s->out_h, TILE_H) * stk_cdiv(s->out_w, TILE_W)
                      : stk_cdiv(S[i].v_count, THREADS);
  }
  int *fh = (int *)(host + off_fh), *fo = (int *)(host + off_fo);
  if (rc == 0) rc = stk_block_table(nb, n, fh, err, errlen);
  if (rc == 0) rc = stk_block_table(nb + n, n, fo, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dp = NULL, *tmp = NULL;
  if (rc == 0 && toff > 0 && !tiled)
    rc = stk_gpu_device_alloc(ctx, (size_t)toff * sizeof(float), stream_h, &tmp, err, errlen);
  if (rc == 0) rc = stk_gpu_upload(ctx, host, bytes, stream, &dp, err, errlen);
  if (rc == 0) {
    const stk_conv_job *dS = (const stk_conv_job *)dp;
    const int *dfh = (const int *)((char *)dp + off_fh), *dfo = (const int *)((char *)dp + off_fo);
    const float *dW = (const float *)((char *)dp + off_w);
    float *dT = (float *)tmp;
    int hb = fh[n], ob = fo[n], odt = (int)out_dtype;
    size_t sm = (size_t)tile_max * sizeof(float);
    if (tiled) switch (in_dtype) {
        case STK_DTYPE_UINT8:
          conv_tiled_launch<STK_DTYPE_UINT8>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
        case STK_DTYPE_INT8:
          conv_tiled_launch<STK_DTYPE_INT8>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
        case STK_DTYPE_UINT16:
          conv_tiled_launch<STK_DTYPE_UINT16>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
        case STK_DTYPE_INT16:
          conv_tiled_launch<STK_DTYPE_INT16>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
        case STK_DTYPE_INT32:
          conv_tiled_launch<STK_DTYPE_INT32>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
        case STK_DTYPE_FLOAT16:
          conv_tiled_launch<STK_DTYPE_FLOAT16>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
        default:
          conv_tiled_launch<STK_DTYPE_FLOAT32>(ob, sm, dS, dfo, n, dW, odt, stream);
          break;
      }
    else
      switch (in_dtype) {
        case STK_DTYPE_UINT8:
          conv_launch<STK_DTYPE_UINT8>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
        case STK_DTYPE_INT8:
          conv_launch<STK_DTYPE_INT8>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
        case STK_DTYPE_UINT16:
          conv_launch<STK_DTYPE_UINT16>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
        case STK_DTYPE_INT16:
          conv_launch<STK_DTYPE_INT16>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
        case STK_DTYPE_INT32:
          conv_launch<STK_DTYPE_INT32>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
        case STK_DTYPE_FLOAT16:
          conv_launch<STK_DTYPE_FLOAT16>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
        default:
          conv_launch<STK_DTYPE_FLOAT32>(hb, ob, dS, dfh, dfo, n, dW, dT, odt, stream);
          break;
      }
    rc = stk_check_launch("conv", err, errlen);
  }
  if (dp) stk_gpu_device_free(ctx, dp, stream_h, NULL, 0);
  if (tmp) stk_gpu_device_free(ctx, tmp, stream_h, NULL, 0);
  free(host);
  free(nb);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Noise                                                                              */
/* ---------------------------------------------------------------------------------- */

/* Work units of a sample: Philox blocks (gaussian: 4 elements, salt_and_pepper: 4
 * pixels) or elements (shot). */
static int64_t noise_units(int kind, const stk_gpu_noise_sample *s) {
  if (kind == STK_GPU_NOISE_GAUSSIAN) return stk_cdiv(s->count, 4);
  if (kind == STK_GPU_NOISE_SALT_AND_PEPPER) return stk_cdiv(s->count / s->group, 4);
  return s->count;
}

__global__ void __launch_bounds__(THREADS)
    noise_kernel(const stk_gpu_noise_sample *S, const int *first, int n, int kind, int dt) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_noise_sample *s = &S[si];
  int64_t u = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  stk_noise_stream st;
  st.key[0] = s->key[0], st.key[1] = s->key[1];
  st.ord[0] = s->ordinal[0], st.ord[1] = s->ordinal[1];
  if (kind == STK_GPU_NOISE_GAUSSIAN) {
    if (u * 4 < s->count)
      stk_noise_gaussian_step(&st, s->src, s->dst, dt, s->count, u, s->p[0], s->p[1]);
  } else if (kind == STK_GPU_NOISE_SALT_AND_PEPPER) {
    int64_t npix = s->count / s->group;
    if (u * 4 < npix)
      stk_noise_sp_step(&st, s->src, s->dst, dt, npix, s->group, u, s->p[0], s->p[1], s->p[2],
                        s->p[3]);
  } else if (u < s->count) {
    double x = stk_noise_load(s->src, dt, u), factor = s->p[0], lambda = x / factor;
    if (!(lambda > 0.0)) {
      stk_noise_store(s->dst, dt, u, 0.0);
      return;
    }
    stk_noise_poisson_consts c;
    stk_noise_poisson_setup(&c, lambda);
    stk_noise_store(s->dst, dt, u, STK_DMUL(stk_noise_poisson(&st, (uint64_t)u, &c), factor));
  }
}

static int stk_gpu_noise(stk_gpu_ctx *ctx, int kind, int n, const stk_gpu_noise_sample *samples,
                         stk_dtype dtype, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || kind < 0 || kind > 2)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d, kind = %d)", n, kind);
  if (dtype != STK_DTYPE_UINT8 && dtype != STK_DTYPE_INT16 && dtype != STK_DTYPE_INT32 &&
      dtype != STK_DTYPE_FLOAT16 && dtype != STK_DTYPE_FLOAT32)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "type %d is not supported", (int)dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t off_first = f_align((size_t)n * sizeof(stk_gpu_noise_sample));
  size_t bytes = off_first + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  stk_gpu_noise_sample *S = (stk_gpu_noise_sample *)host;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_noise_sample *s = &samples[i];
    if (s->count < 0 || (s->count > 0 && (!s->src || !s->dst)) ||
        (kind == STK_GPU_NOISE_SALT_AND_PEPPER && s->group < 1) ||
        (kind == STK_GPU_NOISE_SHOT && !(s->p[0] > 0.0)) || s->count >= ((int64_t)1 << 47)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL pointer, bad count (%lld), "
                    "group or shot factor",
                    i, (long long)s->count);
      break;
    }
    S[i] = *s;
    nb[i] = stk_cdiv(noise_units(kind, s), THREADS);
  }
  int *first = (int *)(host + off_first);
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, host, bytes, stream_h, "noise", err, errlen, [&](const char *dp) {
          noise_kernel<<<first[n], THREADS, 0, stream>>>((const stk_gpu_noise_sample *)dp,
                                                         (const int *)((char *)dp + off_first), n,
                                                         kind, (int)dtype);
          return 0;
        });
  free(host);
  free(nb);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_conv(stk_gpu_ctx *ctx, int n, const stk_gpu_conv_sample *samples,
                   const stk_gpu_io_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_conv(ctx, n, samples, args->in_dtype, args->out_dtype, stream, err, errlen);
}

int stk_gpu_k_noise(stk_gpu_ctx *ctx, int n, const stk_gpu_noise_sample *samples,
                    const stk_gpu_noise_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_noise(ctx, args->kind, n, samples, args->dtype, stream, err, errlen);
}
