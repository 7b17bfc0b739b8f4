/* GPU kernels for the fused automatic-augmentation program (auto_augment.apply)
 * (api_autoaug.h): one thread block per sample interprets the sample's steps, with the
 * per-pixel arithmetic of src/ops/autoaug_pixel.h, which the CPU operator uses too. */
#include <stdlib.h>
#include <string.h>

#include "../ops/autoaug_pixel.h"
#include "api_autoaug.h"
#include "gpu_internal.h"

#define AA_THREADS 1024
#define AA_C STK_GPU_AA_MAX_CHANNELS

/* Shared state of one block: the reductions and the tables of the current step. */
typedef struct {
  unsigned int hist[AA_C * 256];
  unsigned long long hist64[AA_C * 256];
  unsigned long long sums[AA_C];
  uint8_t lut[AA_C * 256];
} aa_shared;

__device__ static void aa_copy(const uint8_t *in, uint8_t *out, int64_t n) {
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

/* out[i] = sh->lut[(i % c) * 256 + in[i]] (the table must be in place and synchronised). */
__device__ static void aa_apply_lut(const uint8_t *in, uint8_t *out, int64_t n, int c,
                                    const uint8_t *lut) {
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = lut[(int)(i % c) * 256 + in[i]];
}

/* Per-channel histograms of `in` into sh->hist64 (synchronised on return). */
__device__ static void aa_histograms(const uint8_t *in, int64_t n, int c, aa_shared *sh) {
  for (int i = threadIdx.x; i < c * 256; i += blockDim.x) sh->hist[i] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    atomicAdd(&sh->hist[(int)(i % c) * 256 + in[i]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < c * 256; i += blockDim.x) sh->hist64[i] = sh->hist[i];
  __syncthreads();
}

/* Channel sums of `in` (sh->sums[0..c)); with `pil_luma`, sums[0] is the sum of Pillow's
 * luma of each RGB pixel (or of channel 0 when c != 3). Synchronised on return. */
__device__ static void aa_sums(const uint8_t *in, int64_t px, int c, bool pil_luma, aa_shared *sh) {
  if (threadIdx.x < AA_C) sh->sums[threadIdx.x] = 0;
  __syncthreads();
  unsigned long long part[AA_C] = {0, 0, 0, 0};
  for (int64_t p = threadIdx.x; p < px; p += blockDim.x) {
    const uint8_t *q = in + p * c;
    if (pil_luma) part[0] += c == 3 ? stk_aa_pil_luma(q[0], q[1], q[2]) : q[0];
    else
      for (int k = 0; k < c; k++) part[k] += q[k];
  }
  for (int k = 0; k < c; k++)
    if (part[k]) atomicAdd(&sh->sums[k], part[k]);
  __syncthreads();
}

/* Builds the per-channel table of a histogram operation (one thread per channel). */
__device__ static void aa_hist_luts(int code, int c, aa_shared *sh) {
  int k = threadIdx.x;
  if (k < c) {
    const uint64_t *h = (const uint64_t *)sh->hist64 + k * 256;
    uint8_t *l = sh->lut + k * 256;
    switch (code) {
    case STK_GPU_AA_EQUALIZE_CV: stk_aa_cv_equalize_lut(h, l); break;
    case STK_GPU_AA_EQUALIZE_PIL: stk_aa_pil_equalize_lut(h, l); break;
    case STK_GPU_AA_AUTOCONTRAST_DALI: stk_aa_dali_autocontrast_lut(h, l); break;
    default: stk_aa_pil_autocontrast_lut(h, l); break;
    }
  }
  __syncthreads();
}

/* A warp step: the image (interp) and, when given, the mask (nearest, fill 0). */
__device__ static void aa_warp(const stk_gpu_aa_sample &s, const double *m, const uint8_t *in,
                               uint8_t *out, const uint8_t *min, uint8_t *mout, int interp,
                               int constant) {
  int64_t px = (int64_t)s.h * s.w;
  int c = s.c;
  for (int64_t p = threadIdx.x; p < px; p += blockDim.x) {
    int x = (int)(p % s.w), y = (int)(p / s.w);
    double sx, sy;
    stk_aa_warp_coords(m, x, y, &sx, &sy);
    uint8_t *o = out + p * c;
    if (interp == STK_GPU_INTERP_NEAREST) {
      int64_t q = stk_aa_warp_nearest(sx, sy, s.h, s.w, constant);
      for (int ch = 0; ch < c; ch++) o[ch] = q < 0 ? s.fill8[ch] : in[q * c + ch];
    } else {
      for (int ch = 0; ch < c; ch++)
        o[ch] = stk_aa_u8_f32(stk_aa_warp_linear(in, s.h, s.w, c, sx, sy, ch, constant, s.fill));
    }
    if (min) {
      int64_t q = stk_aa_warp_nearest(sx, sy, s.h, s.w, 1);
      for (int ch = 0; ch < s.mask_c; ch++)
        mout[p * s.mask_c + ch] = q < 0 ? (uint8_t)0 : min[q * s.mask_c + ch];
    }
  }
}

/* One colour step from in to out (no aliasing). */
__device__ static void aa_color_step(const stk_gpu_aa_sample &s, const stk_gpu_aa_step &st,
                                     const uint8_t *luts, const uint8_t *in, uint8_t *out,
                                     aa_shared *sh) {
  int c = s.c;
  int64_t px = (int64_t)s.h * s.w, n = px * c;
  switch (st.code) {
  case STK_GPU_AA_LUT:
    for (int i = threadIdx.x; i < 256; i += blockDim.x) sh->lut[i] = luts[(size_t)st.lut * 256 + i];
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = sh->lut[in[i]];
    return;
  case STK_GPU_AA_CONTRAST_DALI:
  case STK_GPU_AA_CONTRAST_PIL: {
    bool pil = st.code == STK_GPU_AA_CONTRAST_PIL;
    aa_sums(in, px, c, pil, sh);
    if (threadIdx.x < 256) {
      int v = threadIdx.x;
      uint8_t r;
      if (pil) {
        double mean = px ? (double)sh->sums[0] / (double)px : 0.0;
        r = stk_aa_pil_blend((uint8_t)(int)(mean + 0.5), (uint8_t)v, (float)st.p[0]);
      } else {
        double cc = stk_aa_mean_luma((const uint64_t *)sh->sums, c, (double)px);
        r = stk_aa_dali_linear(1.0, st.p[0], cc, v);
      }
      sh->lut[v] = r;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = sh->lut[in[i]];
    return;
  }
  case STK_GPU_AA_COLOR_DALI:
  case STK_GPU_AA_COLOR_PIL:
    if (c != 3) {
      aa_copy(in, out, n);
      return;
    }
    for (int64_t p = threadIdx.x; p < px; p += blockDim.x) {
      const uint8_t *q = in + p * 3;
      uint8_t *o = out + p * 3;
      if (st.code == STK_GPU_AA_COLOR_DALI) {
        stk_aa_dali_color(st.p, q, o);
      } else {
        uint8_t l = stk_aa_pil_luma(q[0], q[1], q[2]);
        float f = (float)st.p[0];
        o[0] = stk_aa_pil_blend(l, q[0], f), o[1] = stk_aa_pil_blend(l, q[1], f);
        o[2] = stk_aa_pil_blend(l, q[2], f);
      }
    }
    return;
  case STK_GPU_AA_SHARP_DALI:
  case STK_GPU_AA_SHARP_PIL: {
    float k[9];
    for (int i = 0; i < 9; i++) k[i] = (float)st.p[i];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      int ch = (int)(i % c);
      int64_t p = i / c;
      int x = (int)(p % s.w), y = (int)(p / s.w);
      out[i] = st.code == STK_GPU_AA_SHARP_DALI ? stk_aa_dali_sharp(in, s.h, s.w, c, y, x, ch, k)
                                                : stk_aa_pil_sharp(in, s.h, s.w, c, y, x, ch, k[0]);
    }
    return;
  }
  case STK_GPU_AA_EQUALIZE_CV:
  case STK_GPU_AA_EQUALIZE_PIL:
  case STK_GPU_AA_AUTOCONTRAST_DALI:
  case STK_GPU_AA_AUTOCONTRAST_PIL:
    aa_histograms(in, n, c, sh);
    aa_hist_luts(st.code, c, sh);
    aa_apply_lut(in, out, n, c, sh->lut);
    return;
  default: aa_copy(in, out, n); return;
  }
}

__global__ void __launch_bounds__(AA_THREADS)
aa_kernel(const stk_gpu_aa_sample *S, const stk_gpu_aa_step *steps, const uint8_t *luts,
          const float *floats, int interp, int constant) {
  __shared__ aa_shared sh;
  const stk_gpu_aa_sample &s = S[blockIdx.x];
  for (int i = threadIdx.x; i < s.dec_count; i += blockDim.x) s.dec_dst[i] = floats[s.dec_off + i];
  for (int i = threadIdx.x; i < s.box_count; i += blockDim.x) s.box_dst[i] = floats[s.box_off + i];
  const stk_gpu_aa_step *prog = steps + s.first_step;
  int k = s.num_steps, warps = 0, done_warps = 0;
  for (int j = 0; j < k; j++) warps += prog[j].code == STK_GPU_AA_WARP;
  const uint8_t *cur = s.src, *mcur = s.mask_src;
  /* the last step must land in dst: step j writes dst when k - 1 - j is even */
  for (int j = 0; j < k; j++) {
    const stk_gpu_aa_step &st = prog[j];
    uint8_t *out = (k - 1 - j) % 2 == 0 ? s.dst : s.scratch;
    if (st.code == STK_GPU_AA_WARP) {
      uint8_t *mout = NULL;
      if (mcur) mout = (warps - 1 - done_warps) % 2 == 0 ? s.mask_dst : s.mask_scratch;
      aa_warp(s, st.p, cur, out, mcur, mout, interp, constant);
      done_warps++;
      mcur = mout;
    } else {
      aa_color_step(s, st, luts, cur, out, &sh);
    }
    __syncthreads();
    cur = out;
  }
  if (s.mask_src && warps == 0) aa_copy(s.mask_src, s.mask_dst, (int64_t)s.h * s.w * s.mask_c);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Checks one sample's descriptor against the step, table and payload arrays. */
static int check_sample(int i, const stk_gpu_aa_sample *s, int num_steps,
                        const stk_gpu_aa_step *steps, int num_luts, int num_floats, char *err,
                        size_t errlen) {
  if (!s->src || !s->dst || !s->scratch || s->h < 0 || s->w < 0 || s->c < 1 || s->c > AA_C)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL buffer or bad image %dx%dx%d "
                    "(1..%d channels)", i, s->h, s->w, s->c, AA_C);
  if (s->mask_src && (!s->mask_dst || !s->mask_scratch || s->mask_c < 1))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: mask without its buffers", i);
  if (s->num_steps < 1 || s->first_step < 0 || s->first_step > num_steps - s->num_steps)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: steps [%d, +%d) outside the %d steps",
                    i, s->first_step, s->num_steps, num_steps);
  for (int j = 0; j < s->num_steps; j++) {
    const stk_gpu_aa_step *st = &steps[s->first_step + j];
    if (st->code < 0 || st->code >= STK_GPU_AA_NUM_CODES ||
        (st->code == STK_GPU_AA_LUT && (st->lut < 0 || st->lut >= num_luts)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d step %d: code %d / table %d of %d", i,
                      j, st->code, st->lut, num_luts);
  }
  bool dec_ok = s->dec_count == 0 || (s->dec_dst && s->dec_off >= 0 && s->dec_count > 0 &&
                                      s->dec_off <= num_floats - s->dec_count);
  bool box_ok = s->box_count == 0 || (s->box_dst && s->box_off >= 0 && s->box_count > 0 &&
                                      s->box_off <= num_floats - s->box_count);
  if (!dec_ok || !box_ok)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: payload copies outside the %d values",
                    i, num_floats);
  return 0;
}

static int aa_apply(stk_gpu_ctx *ctx, int n, const stk_gpu_aa_sample *samples, int num_steps,
                    const stk_gpu_aa_step *steps, int num_luts, const uint8_t *luts,
                    int num_floats, const float *floats, const stk_gpu_aa_args *args,
                    uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && (!samples || !steps || num_steps < 1)) || num_luts < 0 ||
      (num_luts > 0 && !luts) || num_floats < 0 || (num_floats > 0 && !floats) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d, %d steps, %d tables, %d "
                    "values)", n, num_steps, num_luts, num_floats);
  if (args->interp != STK_GPU_INTERP_NEAREST && args->interp != STK_GPU_INTERP_LINEAR)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "interpolation %d: nearest or linear", args->interp);
  if (n == 0) return 0;
  for (int i = 0; i < n; i++)
    STK_TRY_INT(check_sample(i, &samples[i], num_steps, steps, num_luts, num_floats, err, errlen));
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t o_steps = align16((size_t)n * sizeof(stk_gpu_aa_sample));
  size_t o_luts = o_steps + align16((size_t)num_steps * sizeof(stk_gpu_aa_step));
  size_t o_floats = o_luts + align16((size_t)num_luts * 256);
  size_t bytes = o_floats + (size_t)num_floats * sizeof(float) + 16;
  char *host = (char *)calloc(1, bytes);
  if (!host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d programs", n);
  memcpy(host, samples, (size_t)n * sizeof(stk_gpu_aa_sample));
  memcpy(host + o_steps, steps, (size_t)num_steps * sizeof(stk_gpu_aa_step));
  if (num_luts) memcpy(host + o_luts, luts, (size_t)num_luts * 256);
  if (num_floats) memcpy(host + o_floats, floats, (size_t)num_floats * sizeof(float));
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dp = NULL;
  int rc = stk_gpu_upload(ctx, host, bytes, stream, &dp, err, errlen);
  free(host);
  if (rc) return rc;
  char *d = (char *)dp;
  aa_kernel<<<n, AA_THREADS, 0, stream>>>((const stk_gpu_aa_sample *)d,
                                          (const stk_gpu_aa_step *)(d + o_steps),
                                          (const uint8_t *)(d + o_luts),
                                          (const float *)(d + o_floats), args->interp,
                                          args->constant);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    rc = GPU_FAIL(STK_ERR_DEVICE, "auto_augment kernel launch failed: %s (%s)",
                  cudaGetErrorString(e), cudaGetErrorName(e));
  int rc2 = stk_gpu_device_free(ctx, dp, stream_h, err, errlen);
  return rc ? rc : rc2;
}

extern "C" STK_HIDDEN const stk_gpu_autoaug_api stk_gpu_autoaug_table = {
    1,
    aa_apply,
};
