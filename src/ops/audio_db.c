/* to_decibels' CPU loop with a vectorised log10 (audio_db.h). */
#include <float.h>
#include <string.h>

#include "../core/wide.h"
#include "../shared/audio_math.h"
#include "audio_db.h"

typedef double f64x4 __attribute__((vector_size(32), aligned(8)));
typedef float f32x4 __attribute__((vector_size(16), aligned(4)));
typedef int64_t i64x4 __attribute__((vector_size(32), aligned(8)));

#define INLINE static inline __attribute__((always_inline))

/* ln 2 in two parts: LN2_HI has its low 32 bits zero, so e * LN2_HI is exact for the
 * exponents of doubles; LN2_LO is the rest. */
#define LN2_HI   6.93147180369123816490e-01
#define LN2_LO   1.90821492927058770002e-10
#define INV_LN10 0.43429448190325182765
#define SQRT2    1.41421356237309504880

/* ln m for m in [sqrt(1/2), sqrt(2)): with s = (m - 1) / (m + 1), |s| < 0.1716,
 * ln m = 2 atanh s = 2 s + 2 s^3 (1/3 + s^2 / 5 + s^4 / 7 + ...), the series cut where its
 * terms fall below 2^-60 of the sum (s^2 < 0.0295: 12 terms). */
INLINE void ln_mantissa(const f64x4 *mp, f64x4 *out) {
  f64x4 m = *mp, s = (m - 1.0) / (m + 1.0), z = s * s;
  f64x4 q = 1.0 / 23 + z * (1.0 / 25); /* Horner, the highest term first */
  q = 1.0 / 21 + z * q;
  q = 1.0 / 19 + z * q;
  q = 1.0 / 17 + z * q;
  q = 1.0 / 15 + z * q;
  q = 1.0 / 13 + z * q;
  q = 1.0 / 11 + z * q;
  q = 1.0 / 9 + z * q;
  q = 1.0 / 7 + z * q;
  q = 1.0 / 5 + z * q;
  q = 1.0 / 3 + z * q;
  f64x4 s2 = s + s;
  *out = s2 + s2 * (z * q);
}

/* log10 r of positive normal finite r: r = 2^e m with m in [sqrt(1/2), sqrt(2)).
 * (Vectors pass by address: these are inlined, and by value would be an ABI matter.) */
INLINE void log10_4(const f64x4 *r, f64x4 *out) {
  i64x4 bits, mb, one_half;
  memcpy(&bits, r, sizeof bits);
  i64x4 biased = bits >> 52; /* exponent + 1023 (the sign bit is 0) */
  mb = (bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL;
  f64x4 m, half;
  memcpy(&m, &mb, sizeof m); /* [1, 2) */
  i64x4 big = m > SQRT2;     /* -1 where true */
  half = m * 0.5;
  memcpy(&one_half, &half, sizeof one_half);
  mb = (mb & ~big) | (one_half & big);
  memcpy(&m, &mb, sizeof m);
  /* e as a double without an int64 -> double conversion (AVX2 has none): 2^52 + k
   * has k in its low mantissa bits */
  i64x4 eb = (biased - big) | 0x4330000000000000LL;
  f64x4 e;
  memcpy(&e, &eb, sizeof e);
  e = e - (4503599627370496.0 + 1023.0);
  f64x4 lm;
  ln_mantissa(&m, &lm);
  *out = (e * LN2_HI + (e * LN2_LO + lm)) * INV_LN10;
}

/* One block of 4; false (nothing written) when a ratio is not positive normal finite. */
INLINE int block4(const f64x4 *x, double inv_ref, double min_ratio, double mult, float *y) {
  f64x4 r = *x * inv_ref, lo = {min_ratio, min_ratio, min_ratio, min_ratio};
  i64x4 keep = r > min_ratio, rb, lob;
  memcpy(&rb, &r, sizeof rb);
  memcpy(&lob, &lo, sizeof lob);
  rb = (rb & keep) | (lob & ~keep); /* NaN compares false: the floor, as stk_to_db */
  memcpy(&r, &rb, sizeof r);
  i64x4 ok = (r >= DBL_MIN) & (r <= DBL_MAX);
  if (!(ok[0] & ok[1] & ok[2] & ok[3])) return 0;
  f64x4 lg;
  log10_4(&r, &lg);
  *(f32x4 *)y = __builtin_convertvector(mult * lg, f32x4);
  return 1;
}

WIDE void stk__to_db_row(const float *xf, const double *xd, int64_t n, double inv_ref,
                         double min_ratio, double multiplier, float *y) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    f64x4 x =
        xf ? __builtin_convertvector(*(const f32x4 *)(xf + i), f64x4) : *(const f64x4 *)(xd + i);
    if (!block4(&x, inv_ref, min_ratio, multiplier, y + i))
      for (int l = 0; l < 4; l++) y[i + l] = stk_to_db(x[l], inv_ref, min_ratio, multiplier);
  }
  for (; i < n; i++) y[i] = stk_to_db(xf ? (double)xf[i] : xd[i], inv_ref, min_ratio, multiplier);
}
