/* AVX2 row loops of the resampler (see resample_rows.h). */
#include "resample_rows.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_ROWS_AVX2 1
#endif

bool stk__resample_rows_off = false;

#if defined(HAVE_ROWS_AVX2)

bool stk__resample_rows_avx2(void) {
  return !stk__resample_rows_off && __builtin_cpu_supports("avx2");
}

__attribute__((target("avx2"))) size_t stk__u8_to_f32_avx2(float *restrict d,
                                                           const uint8_t *restrict s, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i b = _mm_loadu_si128((const __m128i *)(s + i));
    _mm256_storeu_ps(d + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)));
    _mm256_storeu_ps(d + i + 8, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))));
  }
  return i;
}

/* int32 -> int16 -> uint8 packs saturate, which is the clamp for values in [-1000, 1000];
 * packs works within 128-bit halves, hence the 64-bit permute that restores the order. */
__attribute__((target("avx2"))) size_t stk__bounded_to_u8_avx2(uint8_t *restrict d,
                                                               const float *restrict s, size_t n) {
  const __m256 bias = _mm256_set1_ps(1024.5f);
  const __m256i off = _mm256_set1_epi32(1024);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_loadu_ps(s + i), bias));
    __m256i b = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_loadu_ps(s + i + 8), bias));
    __m256i w = _mm256_packs_epi32(_mm256_sub_epi32(a, off), _mm256_sub_epi32(b, off));
    w = _mm256_permute4x64_epi64(w, 0xd8);
    __m128i u = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128((__m128i *)(d + i), u);
  }
  return i;
}

/* Eight accumulators (64 floats) per block where the row allows, then four. */
__attribute__((target("avx2"))) void stk__vpass_avx2(float *restrict acc, const float *const *rows,
                                                     const float *w, int n, size_t len) {
  size_t i = 0;
  for (; i + 64 <= len; i += 64) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int k = 0; k < n; k++) {
      const float *r = rows[k] + i;
      __m256 wk = _mm256_broadcast_ss(w + k);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(wk, _mm256_loadu_ps(r)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 24)));
      a4 = _mm256_add_ps(a4, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 32)));
      a5 = _mm256_add_ps(a5, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 40)));
      a6 = _mm256_add_ps(a6, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 48)));
      a7 = _mm256_add_ps(a7, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 56)));
    }
    _mm256_storeu_ps(acc + i, a0);
    _mm256_storeu_ps(acc + i + 8, a1);
    _mm256_storeu_ps(acc + i + 16, a2);
    _mm256_storeu_ps(acc + i + 24, a3);
    _mm256_storeu_ps(acc + i + 32, a4);
    _mm256_storeu_ps(acc + i + 40, a5);
    _mm256_storeu_ps(acc + i + 48, a6);
    _mm256_storeu_ps(acc + i + 56, a7);
  }
  for (; i < len; i += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int k = 0; k < n; k++) {
      const float *r = rows[k] + i;
      __m256 wk = _mm256_broadcast_ss(w + k);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(wk, _mm256_loadu_ps(r)));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 8)));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 16)));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(wk, _mm256_loadu_ps(r + 24)));
    }
    _mm256_storeu_ps(acc + i, a0);
    _mm256_storeu_ps(acc + i + 8, a1);
    _mm256_storeu_ps(acc + i + 16, a2);
    _mm256_storeu_ps(acc + i + 24, a3);
  }
}

/* One pair of output pixels with a constant K (the tap loop unrolls) or any K. */
__attribute__((target("avx2"))) static inline void pair(const float *restrict row, int C, int K,
                                                        const int32_t *start, const float *w,
                                                        int32_t xlo, int64_t x, int64_t out_w,
                                                        float *restrict dst) {
  const float *p0 = row + (size_t)(start[x] - xlo) * (size_t)C;
  const float *p1 = row + (size_t)(start[x + 1 < out_w ? x + 1 : x] - xlo) * (size_t)C;
  __m256 a = _mm256_setzero_ps();
  for (int k = 0; k < K; k++) {
    __m256 v = _mm256_loadu2_m128(p1 + (size_t)k * (size_t)C, p0 + (size_t)k * (size_t)C);
    a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_loadu_ps(w + 8 * k), v));
  }
  _mm_storeu_ps(dst + (size_t)x * (size_t)C, _mm256_castps256_ps128(a));
  _mm_storeu_ps(dst + (size_t)(x + 1) * (size_t)C, _mm256_extractf128_ps(a, 1));
}

#define PAIRS_K(KK)                                                                        \
  for (int64_t x = 0; x < out_w; x += 2)                                                   \
    pair(row, C, KK, start, pairs + (size_t)(x / 2) * (size_t)(KK)*8, xlo, x, out_w, dst); \
  return;

__attribute__((target("avx2"))) void stk__hpass_pairs_avx2(const float *restrict row, int C, int K,
                                                           const int32_t *start, const float *pairs,
                                                           int32_t xlo, int64_t out_w,
                                                           float *restrict dst) {
  switch (K) { /* the common filters' tap counts as constants (lanczos3 antialiased at
                * scale 2.3: 14) */
    case 1:
      PAIRS_K(1)
    case 2:
      PAIRS_K(2)
    case 3:
      PAIRS_K(3)
    case 4:
      PAIRS_K(4)
    case 5:
      PAIRS_K(5)
    case 6:
      PAIRS_K(6)
    case 7:
      PAIRS_K(7)
    case 8:
      PAIRS_K(8)
    case 9:
      PAIRS_K(9)
    case 10:
      PAIRS_K(10)
    case 11:
      PAIRS_K(11)
    case 12:
      PAIRS_K(12)
    case 13:
      PAIRS_K(13)
    case 14:
      PAIRS_K(14)
    case 15:
      PAIRS_K(15)
    case 16:
      PAIRS_K(16)
    default:
      PAIRS_K(K)
  }
}

#else /* no AVX2 copies on this platform */

bool stk__resample_rows_avx2(void) { return false; }
size_t stk__u8_to_f32_avx2(float *restrict d, const uint8_t *restrict s, size_t n) {
  (void)d, (void)s, (void)n;
  return 0;
}
size_t stk__bounded_to_u8_avx2(uint8_t *restrict d, const float *restrict s, size_t n) {
  (void)d, (void)s, (void)n;
  return 0;
}
void stk__vpass_avx2(float *restrict acc, const float *const *rows, const float *w, int n,
                     size_t len) {
  (void)acc, (void)rows, (void)w, (void)n, (void)len;
}
void stk__hpass_pairs_avx2(const float *restrict row, int C, int K, const int32_t *start,
                           const float *pairs, int32_t xlo, int64_t out_w, float *restrict dst) {
  (void)row, (void)C, (void)K, (void)start, (void)pairs, (void)xlo, (void)out_w, (void)dst;
}

#endif
