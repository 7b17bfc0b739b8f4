/* GPU kernels for the fused automatic-augmentation program (auto_augment.apply)
 * (api_autoaug.h): one thread block per sample interprets the sample's steps, with the
 * per-pixel arithmetic of src/shared/autoaug_pixel.h, which the CPU operator uses too (the
 * interpreter itself is autoaug_interp.h). */
#include <stdlib.h>
#include <string.h>

#include "api_autoaug.h"
#include "gpu_kernels.h"
#include "autoaug_interp.h"
#include "gpu_internal.h"
#include "launch.cuh"

#define AA_THREADS 1024

/* One block per sample; the interpreter is autoaug_interp.h (also run on the CPU by
 * tests/c/test_autoaug_interp.c). */
__global__ void __launch_bounds__(AA_THREADS)
    aa_kernel(const stk_gpu_aa_sample *S, const stk_gpu_aa_step *steps, const uint8_t *luts,
              const float *floats, int interp, int constant) {
  __shared__ stk_aa_shared sh;
  stk_aa_run_sample(&S[blockIdx.x], steps, luts, floats, interp, constant, &sh, (int)threadIdx.x,
                    (int)blockDim.x);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Checks one sample's descriptor against the step, table and payload arrays. */
static int check_sample(int i, const stk_gpu_aa_sample *s, int num_steps,
                        const stk_gpu_aa_step *steps, int num_luts, int num_floats, char *err,
                        size_t errlen) {
  if (!s->src || !s->dst || !s->scratch || s->h < 0 || s->w < 0 || s->c < 1 || s->c > STK_AA_C)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL buffer or bad image %dx%dx%d "
                    "(1..%d channels)",
                    i, s->h, s->w, s->c, STK_AA_C);
  if ((int64_t)s->h * s->w * (s->c > s->mask_c ? s->c : s->mask_c) >= ((int64_t)1 << 31))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "sample %d: %dx%d image of 2^31 elements or more", i, s->h,
                    s->w);
  if (s->mask_src && (!s->mask_dst || !s->mask_scratch || s->mask_c < 1))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: mask without its buffers", i);
  if (s->num_steps < 1 || s->first_step < 0 || s->first_step > num_steps - s->num_steps)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: steps [%d, +%d) outside the %d steps", i,
                    s->first_step, s->num_steps, num_steps);
  for (int j = 0; j < s->num_steps; j++) {
    const stk_gpu_aa_step *st = &steps[s->first_step + j];
    if (st->code < 0 || st->code >= STK_GPU_AA_NUM_CODES ||
        (st->code == STK_GPU_AA_LUT && (st->lut < 0 || st->lut >= num_luts)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d step %d: code %d / table %d of %d", i, j,
                      st->code, st->lut, num_luts);
  }
  bool dec_ok = s->dec_count == 0 || (s->dec_dst && s->dec_off >= 0 && s->dec_count > 0 &&
                                      s->dec_off <= num_floats - s->dec_count);
  bool box_ok = s->box_count == 0 || (s->box_dst && s->box_off >= 0 && s->box_count > 0 &&
                                      s->box_off <= num_floats - s->box_count);
  if (!dec_ok || !box_ok)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: payload copies outside the %d values", i,
                    num_floats);
  return 0;
}

static int aa_apply(stk_gpu_ctx *ctx, int n, const stk_gpu_aa_sample *samples, int num_steps,
                    const stk_gpu_aa_step *steps, int num_luts, const uint8_t *luts, int num_floats,
                    const float *floats, const stk_gpu_aa_args *args, uintptr_t stream_h, char *err,
                    size_t errlen) {
  if (n < 0 || (n > 0 && (!samples || !steps || num_steps < 1)) || num_luts < 0 ||
      (num_luts > 0 && !luts) || num_floats < 0 || (num_floats > 0 && !floats) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "bad batch (n = %d, %d steps, %d tables, %d "
                    "values)",
                    n, num_steps, num_luts, num_floats);
  if (args->interp != STK_GPU_INTERP_NEAREST && args->interp != STK_GPU_INTERP_LINEAR &&
      args->interp != STK_GPU_INTERP_CUBIC)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "interpolation %d: nearest, linear or cubic",
                    args->interp);
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
  int rc = stk_upload_and_launch(
      ctx, host, bytes, stream_h, "auto_augment", err, errlen, [&](const char *d) {
        aa_kernel<<<n, AA_THREADS, 0, stream>>>(
            (const stk_gpu_aa_sample *)d, (const stk_gpu_aa_step *)(d + o_steps),
            (const uint8_t *)(d + o_luts), (const float *)(d + o_floats), args->interp,
            args->constant);
        return 0;
      });
  free(host);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_autoaug(stk_gpu_ctx *ctx, int n, const stk_gpu_aa_sample *samples,
                      const stk_gpu_aa_args *args, uintptr_t stream, char *err, size_t errlen) {
  return aa_apply(ctx, n, samples, args->num_steps, args->steps, args->num_luts, args->luts,
                  args->num_floats, args->floats, args, stream, err, errlen);
}
