/*
 * Arithmetic shared by the CUDA kernels and host code: the resampling filters, the
 * per-axis geometry and weights, nearest-neighbour indices and the uint8 rounding rules.
 * It compiles as C11 (host tests, tests/gpu/host_emul.c, which checks it against the CPU
 * resampler without a GPU) and as CUDA C++ (__host__ __device__), so the GPU computes
 * the same weights as src/ops/resample.c by construction:
 *
 * - weights are evaluated and normalised in float64 and stored as float, with the same
 *   tap range (|j - centre| < support), the same folding of outside taps onto the edge
 *   pixels (accumulated in the same order) and the same degenerate-sum rule;
 * - the CPU additionally trims zero weights and pads windows to a common tap count;
 *   zero weights add exactly nothing, so both give the same sums up to float
 *   accumulation order (and the GPU's fused multiply-adds), i.e. well under 1 LSB.
 */
#ifndef STOKER_CUDA_GPU_COMMON_H
#define STOKER_CUDA_GPU_COMMON_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define STK_HD static inline __host__ __device__
#else
#define STK_HD static inline
#endif

#define STK_GPU_PI 3.14159265358979323846

/* Double arithmetic that must round each step like the CPU (no fused multiply-add:
 * nvcc contracts a * b + c into one fma by default, x86-64's baseline has none). */
#if defined(__CUDA_ARCH__)
#define STK_DMUL(a, b) __dmul_rn((a), (b))
#define STK_DADD(a, b) __dadd_rn((a), (b))
#define STK_DSUB(a, b) __dsub_rn((a), (b))
#define STK_FMUL(a, b) __fmul_rn((a), (b))
#define STK_FADD(a, b) __fadd_rn((a), (b))
#else
#define STK_DMUL(a, b) ((a) * (b))
#define STK_DADD(a, b) ((a) + (b))
#define STK_DSUB(a, b) ((a) - (b))
#define STK_FMUL(a, b) ((a) * (b))
#define STK_FADD(a, b) ((a) + (b))
#endif
/* Widest filter (taps before clamping) the kernels accept per output pixel; wider ones
 * (absurd downscales) are refused with STK_ERR_UNSUPPORTED. */
#define STK_GPU_MAX_TAPS 1024

STK_HD double stk_gpu_support(int interp) {
  return interp == 1 ? 1.0 : interp == 2 ? 2.0 : interp == 3 ? 3.0 : 0.5;
}

STK_HD double stk_gpu_sinc(double x) {
  x *= STK_GPU_PI;
  return x == 0.0 ? 1.0 : sin(x) / x;
}

/* The unscaled filter at offset x: linear triangle, Keys cubic (a = -0.5), lanczos3. */
STK_HD double stk_gpu_filter(int interp, double x) {
  const double a = -0.5;
  x = fabs(x);
  switch (interp) {
    case 1:
      return x < 1.0 ? 1.0 - x : 0.0;
    case 2:
      if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
      if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
      return 0.0;
    case 3:
      return x < 3.0 ? stk_gpu_sinc(x) * stk_gpu_sinc(x / 3.0) : 0.0;
    default:
      return x < 0.5 ? 1.0 : 0.0;
  }
}

/* One axis of a resampling: `in` source pixels, `out` outputs, window start a0 and
 * signed scale (source pixels per output), filter stretch fs and support sup. */
typedef struct {
  int in, out;
  double a0, scale, fs, sup;
  int k; /* bound on the taps of any output (<= in) */
} stk_gpu_axis;

STK_HD void stk_gpu_axis_setup(stk_gpu_axis *g, int in, int out, double a0, double a1, int interp,
                               int antialias) {
  g->in = in;
  g->out = out;
  g->a0 = a0;
  g->scale = (a1 - a0) / (double)out;
  g->fs = antialias && fabs(g->scale) > 1.0 ? fabs(g->scale) : 1.0;
  g->sup = stk_gpu_support(interp) * g->fs;
  double k = 2.0 * ceil(g->sup) + 1.0;
  g->k = (int)(k < (double)in ? k : (double)in);
}

STK_HD long long stk_gpu_clampll(long long v, long long lo, long long hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* Taps evaluated per output before folding (the loop length of stk_gpu_axis_weights). */
STK_HD double stk_gpu_axis_span(const stk_gpu_axis *g) { return 2.0 * ceil(g->sup) + 1.0; }

/* Sampling centre of output i, in source pixel-centre coordinates. */
STK_HD double stk_gpu_axis_centre(const stk_gpu_axis *g, int i) {
  return g->a0 + ((double)i + 0.5) * g->scale - 0.5;
}

/* The normalised weights of output i: writes n <= g->k floats to w[0], w[stride], ...,
 * sets *start (first source index, inside the image) and returns n. */
STK_HD int stk_gpu_axis_weights(const stk_gpu_axis *g, int interp, int i, float *w, int stride,
                                int *start) {
  double c = stk_gpu_axis_centre(g, i);
  double inv = 1.0 / g->fs;
  long long j0 = (long long)floor(c - g->sup) + 1, j1 = (long long)ceil(c + g->sup) - 1;
  if (j1 < j0) j1 = j0;
  long long last = (long long)g->in - 1;
  double sum = 0.0;
  for (long long j = j0; j <= j1; j++) sum += stk_gpu_filter(interp, ((double)j - c) * inv);
  if (!(fabs(sum) > 1e-12)) { /* degenerate: the nearest pixel */
    *start = (int)stk_gpu_clampll((long long)floor(c + 0.5), 0, last);
    w[0] = 1.0f;
    return 1;
  }
  /* outside taps fold onto the edges: clamp(j) is monotone, so each source pixel
   * collects a contiguous run of j, accumulated in increasing j as on the CPU */
  long long cur = stk_gpu_clampll(j0, 0, last);
  int n = 0;
  double acc = 0.0;
  for (long long j = j0; j <= j1; j++) {
    long long p = stk_gpu_clampll(j, 0, last);
    if (p != cur) {
      w[n * stride] = (float)(acc / sum);
      n++;
      acc = 0.0;
      cur = p;
    }
    acc += stk_gpu_filter(interp, ((double)j - c) * inv);
  }
  w[n * stride] = (float)(acc / sum);
  *start = (int)stk_gpu_clampll(j0, 0, last);
  return n + 1;
}

/* The range of source indices [*lo, *hi] any output of the axis reads (monotone
 * centres: the first and the last output bound it, degenerate picks included). */
STK_HD void stk_gpu_axis_range(const stk_gpu_axis *g, int *lo, int *hi) {
  long long last = (long long)g->in - 1;
  double c0 = stk_gpu_axis_centre(g, 0), c1 = stk_gpu_axis_centre(g, g->out - 1);
  double cmin = c0 < c1 ? c0 : c1, cmax = c0 < c1 ? c1 : c0;
  long long a = (long long)floor(cmin - g->sup) + 1, b = (long long)ceil(cmax + g->sup) - 1;
  long long na = (long long)floor(cmin + 0.5), nb = (long long)floor(cmax + 0.5);
  if (na < a) a = na;
  if (nb > b) b = nb;
  if (b < a) b = a;
  *lo = (int)stk_gpu_clampll(a, 0, last);
  *hi = (int)stk_gpu_clampll(b, 0, last);
}

/* Nearest-neighbour source index of output i (DALI / OpenCV nearest, clamped). */
STK_HD int stk_gpu_nearest(const stk_gpu_axis *g, int i) {
  double p = floor(g->a0 + ((double)i + 0.5) * g->scale);
  return p < 0.0 ? 0 : p > (double)(g->in - 1) ? g->in - 1 : (int)p;
}

/* A resampled value of a uint8 source to uint8, as the CPU's bounded conversion: biased
 * by 1024.5 the truncation rounds half up (values stay within (-1000, 1000)). */
STK_HD int stk_gpu_u8_from_bounded(float v) {
  int t = (int)(v + 1024.5f) - 1024;
  return t < 0 ? 0 : t > 255 ? 255 : t;
}

/* A float to uint8 as the CPU's f32_to_u8: + 0.5, clamp, truncate (NaN -> 0). */
STK_HD int stk_gpu_u8_from_float(float v) {
  v += 0.5f;
  v = v > 0.0f ? v : 0.0f;
  v = v < 255.0f ? v : 255.0f;
  return (int)v;
}

/* crop_mirror_normalize's formula for a uint8 value, in float64 (the CPU's table). */
STK_HD double stk_gpu_normalize_u8(int v, double mean, double stddev, double scale, double shift) {
  return STK_DADD(STK_DMUL(STK_DSUB((double)v, mean) / stddev, scale), shift);
}

/* crop_mirror_normalize's float32 path: out = v * mul + add with the CPU's constants. */
STK_HD void stk_gpu_cmn_muladd(double mean, double stddev, double scale, double shift, float *mul,
                               float *add) {
  double m = scale / stddev;
  *mul = (float)m;
  *add = (float)STK_DSUB(shift, STK_DMUL(mean, m));
}

STK_HD float stk_gpu_cmn_float(float v, float mul, float add) {
  return STK_FADD(STK_FMUL(v, mul), add);
}

/* Whether a JPEG stream contains its EOI marker (FF D9) within its last 64 KiB. Inside
 * entropy-coded data an FF byte is always followed by 00 or a restart marker, so FF D9
 * near the end is the end of the image (stray bytes may follow it). */
static inline int stk_gpu_jpeg_has_eoi(const uint8_t *data, size_t size) {
  size_t lo = size > 65536 ? size - 65536 : 0;
  for (size_t i = size; i >= lo + 2; i--)
    if (data[i - 2] == 0xFF && data[i - 1] == 0xD9) return 1;
  return 0;
}

#endif /* STOKER_CUDA_GPU_COMMON_H */
