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

#endif
