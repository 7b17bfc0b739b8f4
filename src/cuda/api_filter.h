/* The GPU entry points for filters and noise: gaussian_blur, laplacian, filter, noise.*.
 * Launched through gpu_api.h's launch() (ids and typed launchers: gpu_kernels.h);
 * implemented in
 * src/cuda/filter.cu. The same conventions as gpu_api.h: every function returns 0 or a stk_status
 * with the message in err, queues its work on `stream` and never synchronises unless it says so. */
#ifndef STOKER_CUDA_API_FILTER_H
#define STOKER_CUDA_API_FILTER_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- convolutions (gaussian_blur, laplacian, filter; src/ops/filters.h) ----
 * A correlation of an HWC (or HW: c = 1) image with a kernel, as stk__conv2d /
 * stk__conv_sep: out(y, x) = sum_i sum_j K[i][j] in(by(y - ay + i), bx(x - ax + j)) with
 * the border rule `border` (stk__border: 0 reflect_101, 1 reflect_1001, 2 wrap, 3 clamp,
 * 4 constant = fill), float32 products and sums in the CPU's order (zero weights
 * skipped), converted to out_dtype as stk__convert from float32. */
typedef struct {
  const void *src;
  void *dst;
  int h, w, c;        /* input extents */
  int out_h, out_w;   /* output extents ("valid" mode: smaller, anchors 0) */
  int kh, kw, ay, ax; /* kernel extents and anchor */
  int border;
  float fill;
  /* 0: `weights` is the kh x kw kernel, row-major. 1 or 2: the sum of npairs separable
   * kernels, `weights` = ky (kh values), kx (kw values) per pair; pair 2's vertical
   * terms are added onto pair 1's sums (the CPU's accumulate). Host memory. */
  int npairs;
  const float *weights;
} stk_gpu_conv_sample;

/* ---- noise (src/ops/noise.c; the arithmetic in noise_common.h) ---- */
enum { STK_GPU_NOISE_GAUSSIAN = 0, STK_GPU_NOISE_SALT_AND_PEPPER = 1, STK_GPU_NOISE_SHOT = 2 };

typedef struct {
  const void *src;
  void *dst;
  int64_t count;       /* elements */
  int64_t group;       /* salt_and_pepper: elements per draw (channels, or 1) */
  uint32_t key[2];     /* the node's Philox key */
  uint32_t ordinal[2]; /* the sample's ordinal (counter words 2, 3) */
  /* gaussian: mean, stddev; salt_and_pepper: salt_below, noise_below, salt, pepper;
   * shot: factor (> 0) */
  double p[4];
} stk_gpu_noise_sample;

/* noise's batch arguments: the kind (STK_GPU_NOISE_*) and the element type. */
typedef struct {
  int kind;
  stk_dtype dtype;
} stk_gpu_noise_args;

/* The kernels:
 * - conv: convolutions of n samples; in_dtype: uint8, int8, uint16, int16, int32, float16 or
 *   float32; out_dtype: those, int64 or float64. Two launches at most (the horizontal
 *   passes of separable samples into a float32 temporary, then every output);
 * - noise: one noise operator (`kind`) on n samples of `dtype` (uint8, int16, int32,
 *   float16, float32); one launch.
 */
#define STK_GPU_KERNELS_FILTER(X)                     \
  X(CONV, conv, stk_gpu_conv_sample, stk_gpu_io_args) \
  X(NOISE, noise, stk_gpu_noise_sample, stk_gpu_noise_args)

#ifdef __cplusplus
}
#endif

#endif
