/*
 * Per-element arithmetic of the noise operators (noise.gaussian, noise.salt_and_pepper,
 * noise.shot), shared by the CPU operators (src/ops/noise.c) and the CUDA kernels
 * (src/cuda/filter.cu). It compiles as C11 and as CUDA C++ (STK_HD), so both backends
 * compute the same numbers by construction.
 *
 * Counter-based randomness: every value comes from Philox4x32-10 under the operator's
 * key with the counter (block lo, block hi, sample ordinal lo, hi) -- the layout of
 * stk__philox_init, so block b here is block b of the sample's stream on the CPU. No
 * element depends on another's draws:
 *   gaussian         block e / 4 gives elements 4q .. 4q + 3: words (0, 1) and (2, 3)
 *                    are two Box-Muller pairs (cosine half to the even element);
 *   salt_and_pepper  word g % 4 of block g / 4 for pixel (or element) g;
 *   shot             Poisson below a mean of 10 by inversion with one 53-bit uniform:
 *                    words (0, 1) or (2, 3) of block e / 2; above, rejection (PTRS)
 *                    whose try t of element e uses block 2^63 + e * 2^16 + t.
 *
 * Exactness: Box-Muller uses its own log/sin/cos (short double polynomials on exactly
 * reduced arguments, absolute error < 1e-9 on the normals) and rounds every step
 * (STK_D* under CUDA: no fused multiply-add; the host builds as ISO C11, which does not
 * contract), so the noise is bit-identical on both backends. Shot noise calls exp/log/lgamma from
 * the platform's libm: results are identical unless a uniform falls within ~1e-15 of an acceptance
 * threshold (the libraries differ by an ULP at most).
 */
#ifndef STOKER_CUDA_NOISE_COMMON_H
#define STOKER_CUDA_NOISE_COMMON_H

#include <math.h>
#include <stdint.h>

#include "gpu_common.h"
#include "stoker/stoker.h" /* stk_dtype */

#ifdef __CUDACC__
#include <cuda_fp16.h>
#else
#include <string.h>
uint16_t stk__f32_to_f16(float f);
float stk__f16_to_f32(uint16_t h);
#endif

/* Element types the noise operators take. */
#define STK_NOISE_U8  STK_DTYPE_UINT8
#define STK_NOISE_I16 STK_DTYPE_INT16
#define STK_NOISE_I32 STK_DTYPE_INT32
#define STK_NOISE_F16 STK_DTYPE_FLOAT16
#define STK_NOISE_F32 STK_DTYPE_FLOAT32

/* ---- Philox4x32-10 (same rounds and constants as src/core/philox.c) ---- */

typedef struct {
  uint32_t key[2];
  uint32_t ord[2]; /* counter words 2, 3: the sample ordinal */
} stk_noise_stream;

STK_HD void stk_noise_block(const stk_noise_stream *s, uint64_t block, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = s->ord[0], c3 = s->ord[1];
  uint32_t k0 = s->key[0], k1 = s->key[1];
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0, c1 = (uint32_t)p1, c2 = n2, c3 = (uint32_t)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Blocks b .. b + 3 into w[k][0..3] (the same words as stk_noise_block). The CPU does
 * the four at once with SSE2 (x86-64's baseline: integer products, so exact); the GPU
 * and other hosts one by one. */
#if !defined(__CUDACC__) && defined(__SSE2__)
#include <emmintrin.h>

static inline void stk_noise_mulhilo4(__m128i a, uint32_t m, __m128i *hi, __m128i *lo) {
  __m128i mm = _mm_set1_epi32((int)m);
  __m128i p02 = _mm_mul_epu32(a, mm), p13 = _mm_mul_epu32(_mm_srli_epi64(a, 32), mm);
  __m128i s02 = _mm_shuffle_epi32(p02, _MM_SHUFFLE(3, 1, 2, 0)); /* lo0 lo2 hi0 hi2 */
  __m128i s13 = _mm_shuffle_epi32(p13, _MM_SHUFFLE(3, 1, 2, 0)); /* lo1 lo3 hi1 hi3 */
  *lo = _mm_unpacklo_epi32(s02, s13);
  *hi = _mm_unpackhi_epi32(s02, s13);
}

static inline void stk_noise_blocks4(const stk_noise_stream *s, uint64_t block, uint32_t w[4][4]) {
  uint32_t lo[4], hi[4];
  for (int k = 0; k < 4; k++)
    lo[k] = (uint32_t)(block + (uint64_t)k), hi[k] = (uint32_t)((block + (uint64_t)k) >> 32);
  __m128i c0 = _mm_loadu_si128((const __m128i *)lo), c1 = _mm_loadu_si128((const __m128i *)hi);
  __m128i c2 = _mm_set1_epi32((int)s->ord[0]), c3 = _mm_set1_epi32((int)s->ord[1]);
  uint32_t k0 = s->key[0], k1 = s->key[1];
  for (int r = 0; r < 10; r++) {
    __m128i hi0, lo0, hi1, lo1;
    stk_noise_mulhilo4(c0, 0xD2511F53u, &hi0, &lo0);
    stk_noise_mulhilo4(c2, 0xCD9E8D57u, &hi1, &lo1);
    c0 = _mm_xor_si128(_mm_xor_si128(hi1, c1), _mm_set1_epi32((int)k0));
    c2 = _mm_xor_si128(_mm_xor_si128(hi0, c3), _mm_set1_epi32((int)k1));
    c1 = lo1, c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  uint32_t o[4][4];
  _mm_storeu_si128((__m128i *)o[0], c0);
  _mm_storeu_si128((__m128i *)o[1], c1);
  _mm_storeu_si128((__m128i *)o[2], c2);
  _mm_storeu_si128((__m128i *)o[3], c3);
  for (int k = 0; k < 4; k++)
    for (int j = 0; j < 4; j++) w[k][j] = o[j][k];
}
#else
STK_HD void stk_noise_blocks4(const stk_noise_stream *s, uint64_t block, uint32_t w[4][4]) {
  for (int k = 0; k < 4; k++) stk_noise_block(s, block + (uint64_t)k, w[k]);
}
#endif

/* A 53-bit uniform in [0, 1) from two words (stk__philox_uniform's formula). */
STK_HD double stk_noise_u53(uint32_t a, uint32_t b) {
  uint64_t hi = a >> 5, lo = b >> 6;
  return (double)((hi << 26) | lo) * (1.0 / 9007199254740992.0);
}

/* ---- Box-Muller with exactly rounded steps ---- */

/* ln(x) for normal x > 0: exponent from the bits, then ln(1 + f) = 2 atanh(f / (2 + f))
 * with |f / (2 + f)| <= 0.172, series to s^11 (error < 2e-11: ample for noise). */
STK_HD double stk_noise_log(double x) {
  uint64_t bits;
#ifdef __CUDA_ARCH__
  bits = (uint64_t)__double_as_longlong(x);
#else
  memcpy(&bits, &x, 8);
#endif
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  uint64_t mb = (bits & 0xFFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  double m;
#ifdef __CUDA_ARCH__
  m = __longlong_as_double((long long)mb);
#else
  memcpy(&m, &mb, 8);
#endif
  int big = m > 1.4142135623730951; /* branch-free: the draws are random */
  m = STK_DMUL(m, big ? 0.5 : 1.0);
  e += big;
  double f = STK_DSUB(m, 1.0);
  double s = f / STK_DADD(2.0, f), z = STK_DMUL(s, s);
  double p = 2.0 / 11.0;
  p = STK_DADD(STK_DMUL(p, z), 2.0 / 9.0);
  p = STK_DADD(STK_DMUL(p, z), 2.0 / 7.0);
  p = STK_DADD(STK_DMUL(p, z), 2.0 / 5.0);
  p = STK_DADD(STK_DMUL(p, z), 2.0 / 3.0);
  double l1p = STK_DADD(STK_DMUL(2.0, s), STK_DMUL(s, STK_DMUL(z, p)));
  return STK_DADD(STK_DMUL((double)e, 0.6931471805599453), l1p);
}

/* sin and cos of t in [0, pi/4] (Taylor to t^11 / t^10: error < 2e-10). */
STK_HD void stk_noise_sincos_oct(double t, double *s, double *c) {
  double z = STK_DMUL(t, t);
  double ps = 1.0 / 39916800.0;
  ps = STK_DADD(STK_DMUL(ps, z), -1.0 / 362880.0);
  ps = STK_DADD(STK_DMUL(ps, z), 1.0 / 5040.0);
  ps = STK_DADD(STK_DMUL(ps, z), -1.0 / 120.0);
  ps = STK_DADD(STK_DMUL(ps, z), 1.0 / 6.0);
  *s = STK_DSUB(t, STK_DMUL(STK_DMUL(t, z), ps));
  double pc = 1.0 / 3628800.0;
  pc = STK_DADD(STK_DMUL(pc, z), -1.0 / 40320.0);
  pc = STK_DADD(STK_DMUL(pc, z), 1.0 / 720.0);
  pc = STK_DADD(STK_DMUL(pc, z), -1.0 / 24.0);
  pc = STK_DADD(STK_DMUL(pc, z), 0.5);
  *c = STK_DSUB(1.0, STK_DMUL(z, pc));
}

/* Two standard normals from words a (radius) and b (angle 2 pi b / 2^32). The angle is
 * reduced in integers: quadrant = top 2 bits, then the remaining 30 bits fold to
 * [0, pi/4] with sine and cosine swapped past the octant. The quadrant's signs and the
 * swap pick from {s, c, -s, -c} by table: random draws would mispredict branches. */
STK_HD void stk_noise_box_muller(uint32_t a, uint32_t b, double *n0, double *n1) {
  double u = (double)((uint64_t)a + 1) * (1.0 / 4294967296.0); /* (0, 1] */
  double r = sqrt(STK_DMUL(-2.0, stk_noise_log(u)));
  uint32_t q = b >> 30, f = b & 0x3FFFFFFFu;
  int swap = f > 0x20000000u;
  double t = STK_DMUL((double)(swap ? 0x40000000u - f : f), 1.4629180792671596e-09); /* pi/2^31 */
  double v[4];
  stk_noise_sincos_oct(t, &v[0], &v[1]);
  v[2] = -v[0], v[3] = -v[1];
  /* index (q, swap) -> position of cos and sin of the full angle in v */
  const unsigned char cos_at[8] = {1, 0, 2, 3, 3, 2, 0, 1};
  const unsigned char sin_at[8] = {0, 1, 1, 0, 2, 3, 3, 2};
  unsigned k = (q << 1) | (unsigned)swap;
  *n0 = STK_DMUL(r, v[cos_at[k]]);
  *n1 = STK_DMUL(r, v[sin_at[k]]);
}

/* Normals of elements 4q .. 4q + 3. */
STK_HD void stk_noise_normals4(const stk_noise_stream *s, uint64_t q, double z[4]) {
  uint32_t w[4];
  stk_noise_block(s, q, w);
  stk_noise_box_muller(w[0], w[1], &z[0], &z[1]);
  stk_noise_box_muller(w[2], w[3], &z[2], &z[3]);
}

/* noise.gaussian of one value: x + (mean + sd z). */
STK_HD double stk_noise_gaussian_apply(double x, double mean, double sd, double z) {
  return STK_DADD(x, STK_DADD(mean, STK_DMUL(sd, z)));
}

/* ---- salt and pepper ---- */

/* The replacement for a draw w: 1 salt, -1 pepper, 0 keep (u = w / 2^32 against the
 * thresholds prob * salt_vs_pepper and prob, in double). */
STK_HD int stk_noise_sp_pick(uint32_t w, double salt_below, double noise_below) {
  double u = (double)w * (1.0 / 4294967296.0);
  return u >= noise_below ? 0 : u < salt_below ? 1 : -1;
}

/* ---- shot noise: Poisson(lambda) * factor ---- */

#define STK_NOISE_PTRS_BASE  0x8000000000000000ull
#define STK_NOISE_PTRS_TRIES 65536

/* Constants of the sampler for one mean (the CPU caches them per uint8 value). */
typedef struct {
  double lambda, exp_neg;                 /* inversion */
  double loglam, b, a, log_inv_alpha, vr; /* PTRS */
} stk_noise_poisson_consts;

STK_HD void stk_noise_poisson_setup(stk_noise_poisson_consts *c, double lambda) {
  c->lambda = lambda;
  c->exp_neg = exp(-lambda);
  double slam = sqrt(lambda);
  c->loglam = log(lambda);
  c->b = STK_DADD(0.931, STK_DMUL(2.53, slam));
  c->a = STK_DADD(-0.059, STK_DMUL(0.02483, c->b));
  c->log_inv_alpha = log(STK_DADD(1.1239, 1.1328 / STK_DSUB(c->b, 3.4)));
  c->vr = STK_DSUB(0.9277, 3.6224 / STK_DSUB(c->b, 2.0));
}

/* The inversion's uniform for element e: words (0, 1) or (2, 3) of block e / 2. */
STK_HD double stk_noise_inversion_u(const stk_noise_stream *s, uint64_t e) {
  uint32_t w[4];
  stk_noise_block(s, e >> 1, w);
  int o = (int)(e & 1) * 2;
  return stk_noise_u53(w[o], w[o + 1]);
}

/* Inversion from term k with probability p and distribution cdf: the smallest k with
 * u <= cdf (at most 1000). The CPU's tables (noise.c) stop this loop at term 63 and
 * resume it with the same p and cdf, so both give the same k. */
STK_HD int stk_noise_inversion_from(double u, double lambda, int k, double p, double cdf) {
  while (u > cdf && k < 1000) {
    k++;
    p = STK_DMUL(p, lambda / (double)k);
    cdf = STK_DADD(cdf, p);
  }
  return k;
}

/* One try of PTRS for element e: 1 and *k when accepted, else 0. */
STK_HD int stk_noise_ptrs_try(const stk_noise_stream *s, uint64_t e, uint32_t t,
                              const stk_noise_poisson_consts *c, double *k) {
  uint32_t w[4];
  stk_noise_block(s, STK_NOISE_PTRS_BASE + (e << 16) + t, w);
  double a = c->a, b = c->b, lambda = c->lambda;
  double u = STK_DSUB(stk_noise_u53(w[0], w[1]), 0.5), v = stk_noise_u53(w[2], w[3]);
  double us = STK_DSUB(0.5, fabs(u));
  *k = floor(STK_DADD(STK_DADD(STK_DMUL(STK_DADD(STK_DMUL(2.0, a) / us, b), u), lambda), 0.43));
  if (us >= 0.07 && v <= c->vr) return 1;
  if (*k < 0.0 || (us < 0.013 && v > us)) return 0;
  double lhs = STK_DSUB(STK_DADD(log(v), c->log_inv_alpha), log(STK_DADD(a / STK_DMUL(us, us), b)));
  double rhs = STK_DSUB(STK_DADD(-lambda, STK_DMUL(*k, c->loglam)), lgamma(STK_DADD(*k, 1.0)));
  return lhs <= rhs;
}

/* Poisson(lambda > 0) for element e: inversion below 10 (one uniform), Hormann's
 * transformed rejection (PTRS, 1993) above. */
STK_HD double stk_noise_poisson(const stk_noise_stream *s, uint64_t e,
                                const stk_noise_poisson_consts *c) {
  if (c->lambda < 10.0)
    return (double)stk_noise_inversion_from(stk_noise_inversion_u(s, e), c->lambda, 0, c->exp_neg,
                                            c->exp_neg);
  double k = 0.0;
  for (uint32_t t = 0; t < STK_NOISE_PTRS_TRIES; t++)
    if (stk_noise_ptrs_try(s, e, t, c, &k)) return k;
  return k < 0.0 ? 0.0 : k; /* not reached in practice: 2^16 rejections */
}

/* ---- element access with stk__to_f64 / stk__from_f64's rules ---- */

STK_HD double stk_noise_load(const void *p, int dt, int64_t i) {
  switch (dt) {
    case STK_NOISE_U8:
      return (double)((const uint8_t *)p)[i];
    case STK_NOISE_I16:
      return (double)((const int16_t *)p)[i];
    case STK_NOISE_I32:
      return (double)((const int32_t *)p)[i];
#ifdef __CUDACC__
    case STK_NOISE_F16:
      return (double)__half2float(((const __half *)p)[i]);
#else
    case STK_NOISE_F16:
      return (double)stk__f16_to_f32(((const uint16_t *)p)[i]);
#endif
    default:
      return (double)((const float *)p)[i];
  }
}

/* Integers: round half away from zero and saturate (NaN -> 0); uint8 as stk__from_f64. */
STK_HD void stk_noise_store(void *p, int dt, int64_t i, double x) {
  switch (dt) {
    case STK_NOISE_U8:
      ((uint8_t *)p)[i] = !(x > 0.0) ? 0 : x >= 254.5 ? 255 : (uint8_t)(x + 0.5);
      return;
    case STK_NOISE_I16: {
      double r = x != x ? 0.0 : round(x);
      ((int16_t *)p)[i] = r <= -32768.0  ? (int16_t)-32768
                          : r >= 32767.0 ? (int16_t)32767
                                         : (int16_t)r;
      return;
    }
    case STK_NOISE_I32: {
      double r = x != x ? 0.0 : round(x);
      ((int32_t *)p)[i] = r <= -2147483648.0  ? (int32_t)(-2147483647 - 1)
                          : r >= 2147483647.0 ? (int32_t)2147483647
                                              : (int32_t)r;
      return;
    }
#ifdef __CUDACC__
    case STK_NOISE_F16:
      ((__half *)p)[i] = __float2half_rn((float)x);
      return;
#else
    case STK_NOISE_F16:
      ((uint16_t *)p)[i] = stk__f32_to_f16((float)x);
      return;
#endif
    default:
      ((float *)p)[i] = (float)x;
      return;
  }
}

/* ---- the steps both backends loop over ---- */

/* noise.gaussian of elements 4q .. min(4q + 4, n) - 1 from block q's words w. */
STK_HD void stk_noise_gaussian_words(const uint32_t w[4], const void *in, void *out, int dt,
                                     int64_t n, int64_t q, double mean, double sd) {
  double z[4];
  stk_noise_box_muller(w[0], w[1], &z[0], &z[1]);
  stk_noise_box_muller(w[2], w[3], &z[2], &z[3]);
  for (int j = 0; j < 4; j++) {
    int64_t e = 4 * q + j;
    if (e < n)
      stk_noise_store(out, dt, e,
                      stk_noise_gaussian_apply(stk_noise_load(in, dt, e), mean, sd, z[j]));
  }
}

/* The same, drawing block q (the GPU's thread body). */
STK_HD void stk_noise_gaussian_step(const stk_noise_stream *s, const void *in, void *out, int dt,
                                    int64_t n, int64_t q, double mean, double sd) {
  uint32_t w[4];
  stk_noise_block(s, (uint64_t)q, w);
  stk_noise_gaussian_words(w, in, out, dt, n, q, mean, sd);
}

/* noise.salt_and_pepper of pixels 4q .. min(4q + 4, npix) - 1, `group` elements each
 * (1 with per_channel), from block q's words w; untouched elements are copied. */
STK_HD void stk_noise_sp_words(const uint32_t w[4], const void *in, void *out, int dt, int64_t npix,
                               int64_t group, int64_t q, double salt_below, double noise_below,
                               double salt, double pepper) {
  for (int j = 0; j < 4; j++) {
    int64_t g = 4 * q + j;
    if (g >= npix) break;
    int pick = stk_noise_sp_pick(w[j], salt_below, noise_below);
    for (int64_t c = 0; c < group; c++) {
      int64_t e = g * group + c;
      stk_noise_store(out, dt, e, pick > 0 ? salt : pick < 0 ? pepper : stk_noise_load(in, dt, e));
    }
  }
}

/* The same, drawing block q (the GPU's thread body). */
STK_HD void stk_noise_sp_step(const stk_noise_stream *s, const void *in, void *out, int dt,
                              int64_t npix, int64_t group, int64_t q, double salt_below,
                              double noise_below, double salt, double pepper) {
  uint32_t w[4];
  stk_noise_block(s, (uint64_t)q, w);
  stk_noise_sp_words(w, in, out, dt, npix, group, q, salt_below, noise_below, salt, pepper);
}

#endif /* STOKER_CUDA_NOISE_COMMON_H */
