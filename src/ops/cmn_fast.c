/* crop_mirror_normalize's AVX2 row kernel for uint8 input (see cmn_fast.h for why its
 * output is the table path's, byte for byte). */
#include "cmn_fast.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_CMN_AVX2 1
#endif

bool stk__cmn_fast_off = false;

#if defined(HAVE_CMN_AVX2)

/* pshufb masks that gather channel k of 8 packed RGB pixels (24 bytes, loaded as bytes
 * [0, 16) and [8, 24)) into bytes 0..7: lane j takes source byte 3 * j + k (mirrored:
 * 3 * (7 - j) + k) from the first load when it is below 16, else from the second. X (top
 * bit set) writes zero, so the two shuffles combine with an OR. Index [mirror][k]. */
#define X (-128)
static const int8_t mask_lo[2][3][16] = {{{0, 3, 6, 9, 12, 15, X, X, X, X, X, X, X, X, X, X},
                                          {1, 4, 7, 10, 13, X, X, X, X, X, X, X, X, X, X, X},
                                          {2, 5, 8, 11, 14, X, X, X, X, X, X, X, X, X, X, X}},
                                         {{X, X, 15, 12, 9, 6, 3, 0, X, X, X, X, X, X, X, X},
                                          {X, X, X, 13, 10, 7, 4, 1, X, X, X, X, X, X, X, X},
                                          {X, X, X, 14, 11, 8, 5, 2, X, X, X, X, X, X, X, X}}};
static const int8_t mask_hi[2][3][16] = {{{X, X, X, X, X, X, 10, 13, X, X, X, X, X, X, X, X},
                                          {X, X, X, X, X, 8, 11, 14, X, X, X, X, X, X, X, X},
                                          {X, X, X, X, X, 9, 12, 15, X, X, X, X, X, X, X, X}},
                                         {{13, 10, X, X, X, X, X, X, X, X, X, X, X, X, X, X},
                                          {14, 11, 8, X, X, X, X, X, X, X, X, X, X, X, X, X},
                                          {15, 12, 9, X, X, X, X, X, X, X, X, X, X, X, X, X}}};
#undef X

/* 8 uint8 values (bytes 0..7 of x) -> v * mul + add in float64 -> float32 (-> float16),
 * stored at d + i elements. */
__attribute__((target("avx2,f16c"))) static inline void store8(void *d, int64_t i, __m128i x,
                                                               __m256d mul, __m256d add,
                                                               bool half) {
  __m256i v = _mm256_cvtepu8_epi32(x);
  __m256d a = _mm256_cvtepi32_pd(_mm256_castsi256_si128(v));
  __m256d b = _mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1));
  a = _mm256_add_pd(_mm256_mul_pd(a, mul), add);
  b = _mm256_add_pd(_mm256_mul_pd(b, mul), add);
  __m256 r =
      _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(a)), _mm256_cvtpd_ps(b), 1);
  if (half)
    _mm_storeu_si128((__m128i *)((uint16_t *)d + i), _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
  else
    _mm256_storeu_ps((float *)d + i, r);
}

/* One span, 8 pixels a block; `half` and `c` are constants in each caller below. */
__attribute__((target("avx2,f16c"))) static inline int64_t span(const stk__cmn_fast *f, void *d,
                                                                size_t cstep, const uint8_t *s,
                                                                int64_t n, bool mirror, int c,
                                                                bool half) {
  size_t es = half ? 2 : 4;
  char *d1 = (char *)d + cstep * es, *d2 = (char *)d + 2 * cstep * es;
  const __m256d m0 = _mm256_set1_pd(f->mul[0]), a0 = _mm256_set1_pd(f->add[0]);
  const __m256d m1 = _mm256_set1_pd(f->mul[1]), a1 = _mm256_set1_pd(f->add[1]);
  const __m256d m2 = _mm256_set1_pd(f->mul[2]), a2 = _mm256_set1_pd(f->add[2]);
  int r = mirror ? 1 : 0;
  const __m128i lo0 = _mm_loadu_si128((const __m128i *)mask_lo[r][0]);
  const __m128i lo1 = _mm_loadu_si128((const __m128i *)mask_lo[r][1]);
  const __m128i lo2 = _mm_loadu_si128((const __m128i *)mask_lo[r][2]);
  const __m128i hi0 = _mm_loadu_si128((const __m128i *)mask_hi[r][0]);
  const __m128i hi1 = _mm_loadu_si128((const __m128i *)mask_hi[r][1]);
  const __m128i hi2 = _mm_loadu_si128((const __m128i *)mask_hi[r][2]);
  const __m128i rev =
      _mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, -128, -128, -128, -128, -128, -128, -128, -128);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    /* the block's 8 source pixels start here in memory (the last one first if mirrored) */
    const uint8_t *p = mirror ? s - (size_t)(i + 7) * (size_t)c : s + (size_t)i * (size_t)c;
    if (c == 1) {
      __m128i x = _mm_loadl_epi64((const __m128i *)p);
      if (mirror) x = _mm_shuffle_epi8(x, rev);
      store8(d, i, x, m0, a0, half);
      continue;
    }
    __m128i lo = _mm_loadu_si128((const __m128i *)p),
            hi = _mm_loadu_si128((const __m128i *)(p + 8));
    store8(d, i, _mm_or_si128(_mm_shuffle_epi8(lo, lo0), _mm_shuffle_epi8(hi, hi0)), m0, a0, half);
    store8(d1, i, _mm_or_si128(_mm_shuffle_epi8(lo, lo1), _mm_shuffle_epi8(hi, hi1)), m1, a1, half);
    store8(d2, i, _mm_or_si128(_mm_shuffle_epi8(lo, lo2), _mm_shuffle_epi8(hi, hi2)), m2, a2, half);
  }
  return i;
}

__attribute__((target("avx2,f16c"))) static int64_t span_rgb_f32(const stk__cmn_fast *f, void *d,
                                                                 size_t cstep, const uint8_t *s,
                                                                 int64_t n, bool mirror) {
  return span(f, d, cstep, s, n, mirror, 3, false);
}

__attribute__((target("avx2,f16c"))) static int64_t span_rgb_f16(const stk__cmn_fast *f, void *d,
                                                                 size_t cstep, const uint8_t *s,
                                                                 int64_t n, bool mirror) {
  return span(f, d, cstep, s, n, mirror, 3, true);
}

__attribute__((target("avx2,f16c"))) static int64_t span_gray_f32(const stk__cmn_fast *f, void *d,
                                                                  size_t cstep, const uint8_t *s,
                                                                  int64_t n, bool mirror) {
  return span(f, d, cstep, s, n, mirror, 1, false);
}

__attribute__((target("avx2,f16c"))) static int64_t span_gray_f16(const stk__cmn_fast *f, void *d,
                                                                  size_t cstep, const uint8_t *s,
                                                                  int64_t n, bool mirror) {
  return span(f, d, cstep, s, n, mirror, 1, true);
}

/* AVX2 (with the OS saving its registers: __builtin_cpu_supports checks that) and F16C,
 * read from CPUID (clang's __builtin_cpu_supports does not know "f16c") once: in a virtual
 * machine every CPUID traps to the hypervisor, microseconds each. */
static bool cpu_ok(void) {
  static atomic_int known; /* 0: not yet, 1: no, 2: yes */
  int k = atomic_load_explicit(&known, memory_order_relaxed);
  if (k == 0) {
    unsigned a, b, c, d;
    bool yes = __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    k = yes ? 2 : 1;
    atomic_store_explicit(&known, k, memory_order_relaxed);
  }
  return k == 2;
}

int64_t stk__cmn_fast_span(const stk__cmn_fast *f, void *d, size_t cstep, const uint8_t *s,
                           int64_t n, bool mirror) {
  if (f->c == 3)
    return f->half ? span_rgb_f16(f, d, cstep, s, n, mirror)
                   : span_rgb_f32(f, d, cstep, s, n, mirror);
  return f->half ? span_gray_f16(f, d, cstep, s, n, mirror)
                 : span_gray_f32(f, d, cstep, s, n, mirror);
}

#else /* no AVX2 kernel on this platform: the table path always runs */

static bool cpu_ok(void) { return false; }

int64_t stk__cmn_fast_span(const stk__cmn_fast *f, void *d, size_t cstep, const uint8_t *s,
                           int64_t n, bool mirror) {
  (void)f, (void)d, (void)cstep, (void)s, (void)n, (void)mirror;
  return 0;
}

#endif

bool stk__cmn_fast_init(stk__cmn_fast *f, int c, stk_dtype out, const double *mean,
                        const double *stddev, double scale, double shift, const char *lut) {
  if (stk__cmn_fast_off || (c != 1 && c != 3) ||
      (out != STK_DTYPE_FLOAT32 && out != STK_DTYPE_FLOAT16) || !cpu_ok())
    return false;
  memset(f, 0, sizeof *f);
  f->c = c;
  f->half = out == STK_DTYPE_FLOAT16;
  for (int k = 0; k < c; k++) {
    double m = scale / stddev[k];
    f->mul[k] = m;
    f->add[k] = shift - mean[k] * m;
  }
  /* the kernel over every input value of every channel, against the table */
  uint8_t ramp[256 * 3];
  for (int v = 0; v < 256; v++)
    for (int k = 0; k < c; k++) ramp[v * c + k] = (uint8_t)v;
  float got[256 * 3]; /* room for 3 channels of float32 (or of float16) */
  if (stk__cmn_fast_span(f, got, 256, ramp, 256, false) != 256) return false;
  size_t es = f->half ? 2 : 4;
  return memcmp(got, lut, (size_t)c * 256 * es) == 0;
}
