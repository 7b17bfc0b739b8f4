/*
 * MixUp / CutMix (src/ops/mixup.c): one launch for the batch, one thread per element; the
 * per-element maths is mix_common.h's, which the CPU operator runs too. The host side
 * (the operator) has drawn lambda, the box and the pairing and turned them into weights.
 */
#include <stdlib.h>

#include "../shared/mix_common.h"
#include "gpu_internal.h"
#include "gpu_kernels.h"
#include "launch.cuh"

#define THREADS 256

typedef struct {
  stk_gpu_mix_sample s;
  int64_t count; /* elements */
} mix_dev;

template <typename T>
__device__ __forceinline__ float mix_load(const T *p, int64_t i) {
  return (float)p[i];
}

__device__ __forceinline__ void mix_store(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void mix_store(uint8_t *p, int64_t i, float v) { p[i] = stk_mix_u8(v); }

template <typename T>
__global__ void __launch_bounds__(THREADS) mix_kernel(const mix_dev *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const mix_dev *d = &S[si];
  int64_t e = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (e >= d->count) return;
  const stk_gpu_mix_sample *s = &d->s;
  int64_t r = e / s->inner, x = r % s->w;
  r /= s->w;
  int64_t y = (r / s->mid) % s->h;
  bool in = stk_in_box(s->box, y, x);
  float a = mix_load((const T *)s->a, e), bv = mix_load((const T *)s->b, e);
  float v =
      in ? stk_mix_value(a, bv, s->wa_in, s->wb_in) : stk_mix_value(a, bv, s->wa_out, s->wb_out);
  mix_store((T *)s->dst, e, v);
}

int stk_gpu_mix(stk_gpu_ctx *ctx, int n, const stk_gpu_mix_sample *samples, stk_dtype dtype,
                uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || (dtype != STK_DTYPE_UINT8 && dtype != STK_DTYPE_FLOAT32))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d) or type", n);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t bytes = (size_t)n * sizeof(mix_dev) + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  mix_dev *S = (mix_dev *)host;
  int *first = (int *)(host + (size_t)n * sizeof(mix_dev));
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_mix_sample *s = &samples[i];
    if (!s->a || !s->b || !s->dst || s->outer < 0 || s->h < 0 || s->mid < 1 || s->w < 0 ||
        s->inner < 1) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer or bad extent", i);
      break;
    }
    S[i].s = *s;
    S[i].count = s->outer * s->h * s->mid * s->w * s->inner;
    nb[i] = stk_cdiv(S[i].count, THREADS);
  }
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(ctx, host, bytes, stream_h, "mix", err, errlen, [&](const char *dp) {
      const mix_dev *ds = (const mix_dev *)dp;
      const int *df = (const int *)(dp + (size_t)n * sizeof(mix_dev));
      if (dtype == STK_DTYPE_UINT8)
        mix_kernel<uint8_t><<<first[n], THREADS, 0, stream>>>(ds, df, n);
      else
        mix_kernel<float><<<first[n], THREADS, 0, stream>>>(ds, df, n);
      return 0;
    });
  free(host);
  free(nb);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_mix(stk_gpu_ctx *ctx, int n, const stk_gpu_mix_sample *samples,
                  const stk_gpu_mix_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_mix(ctx, n, samples, args->dtype, stream, err, errlen);
}
