/* The CPU maths behind spectrogram, power_spectrum and to_decibels (src/ops/audio_fft.c,
 * src/ops/audio_db.c): the real FFT of every power of two from 2 to 4096 and of other
 * sizes against a direct DFT in long double on random signals, lane by lane; a signal's
 * result does not depend on its lane or its neighbours; only the used lanes are written;
 * and the vectorised decibels against stk_to_db (libm's log10) on millions of values. */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/audio_db.h"
#include "ops/audio_fft.h"
#include "shared/audio_math.h"

#define L STK__RFFT_LANES

static double rnd(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* |X_k|^power of x (n samples) by the definition, in long double (cos/sin: n-entry
 * tables, index j k mod n). */
static void direct_dft(const double *x, int64_t n, int power, long double *out) {
  const long double pi = 3.141592653589793238462643383279503L;
  long double *c = malloc(sizeof(long double) * (size_t)n),
              *s = malloc(sizeof(long double) * (size_t)n);
  for (int64_t j = 0; j < n; j++) c[j] = cosl(2 * pi * j / n), s[j] = sinl(2 * pi * j / n);
  for (int64_t k = 0; k <= n / 2; k++) {
    long double re = 0, im = 0;
    for (int64_t j = 0; j < n; j++) re += x[j] * c[(j * k) % n], im -= x[j] * s[(j * k) % n];
    long double m2 = re * re + im * im;
    out[k] = power == 2 ? m2 : sqrtl(m2);
  }
  free(c), free(s);
}

/* Transforms L random signals of n points (both output layouts) and checks each bin
 * against the direct DFT: off by at most float32 rounding plus 1e-12 of the largest bin
 * (float64 rounding of the FFT; the old radix-2 FFT's bound too). */
static void check_size(int64_t n, int power, uint64_t *seed) {
  stk__rfft_plan plan;
  assert_true(stk__rfft_plan_init(&plan, n));
  int64_t bins = n / 2 + 1;
  double *in = malloc(sizeof(double) * (size_t)(n * L)), *x = malloc(sizeof(double) * (size_t)n);
  double *work = malloc(sizeof(double) * stk__rfft_scratch_doubles(&plan));
  float *ft = malloc(sizeof(float) * (size_t)(bins * L)),
        *tf = malloc(sizeof(float) * (size_t)(bins * L));
  long double *want = malloc(sizeof(long double) * (size_t)bins);
  for (int64_t j = 0; j < n * L; j++) in[j] = rnd(seed);
  stk__rfft_spectra(&plan, in, L, power, ft, L, 1, work);    /* [bins, L] */
  stk__rfft_spectra(&plan, in, L, power, tf, 1, bins, work); /* [L, bins] */
  for (int l = 0; l < L; l++) {
    for (int64_t j = 0; j < n; j++) x[j] = in[j * L + l];
    direct_dft(x, n, power, want);
    long double top = 0;
    for (int64_t k = 0; k < bins; k++) top = want[k] > top ? want[k] : top;
    for (int64_t k = 0; k < bins; k++) {
      double err = (double)fabsl((long double)ft[k * L + l] - want[k]);
      double tol = 6.0e-8 * (double)want[k] + 1e-12 * (double)top;
      if (err > tol)
        fail_msg("n = %lld, power %d, lane %d, bin %lld: %.9g, want %.9Lg", (long long)n, power, l,
                 (long long)k, ft[k * L + l], want[k]);
      assert_memory_equal(&ft[k * L + l], &tf[l * bins + k], sizeof(float));
    }
  }
  free(in), free(x), free(work), free(ft), free(tf), free(want);
  stk__rfft_plan_free(&plan);
}

static void test_against_direct_dft(void **state) {
  (void)state;
  uint64_t seed = 1;
  for (int64_t n = 2; n <= 4096; n *= 2) check_size(n, n % 3 ? 2 : 1, &seed);
  static const int64_t other[] = {1, 3, 5, 6, 12, 30, 100, 257, 400, 1000};
  for (size_t i = 0; i < sizeof other / sizeof *other; i++) check_size(other[i], 2, &seed);
  check_size(512, 1, &seed);
  check_size(100, 1, &seed);
}

/* Known values: a cosine at bin 3 of 16 puts (n/2)^2 there and nothing elsewhere; a
 * constant puts n^2 in bin 0. */
static void test_known_spectra(void **state) {
  (void)state;
  const int64_t n = 16;
  stk__rfft_plan plan;
  assert_true(stk__rfft_plan_init(&plan, n));
  double in[16 * L], work[16 * L];
  float out[9 * L];
  for (int64_t j = 0; j < n; j++) {
    in[j * L + 0] = cos(2 * STK_AUDIO_PI * 3 * (double)j / (double)n);
    for (int l = 1; l < L; l++) in[j * L + l] = 1.0;
  }
  stk__rfft_spectra(&plan, in, L, 2, out, L, 1, work);
  for (int64_t k = 0; k <= n / 2; k++) {
    assert_float_equal(out[k * L + 0], k == 3 ? 64.0f : 0.0f, 1e-9);
    assert_float_equal(out[k * L + 1], k == 0 ? 256.0f : 0.0f, 1e-9);
  }
  stk__rfft_plan_free(&plan);
}

/* Signal A in lane 0 among random neighbours, then in the last lane among others: the
 * same bytes; with used = 2 the other lanes' outputs are left alone. */
static void test_lanes_independent(void **state) {
  (void)state;
  const int64_t n = 512, bins = n / 2 + 1;
  stk__rfft_plan plan;
  assert_true(stk__rfft_plan_init(&plan, n));
  double *a = malloc(sizeof(double) * n), *in = malloc(sizeof(double) * n * L);
  double *work = malloc(sizeof(double) * stk__rfft_scratch_doubles(&plan));
  float *o1 = malloc(sizeof(float) * bins * L), *o2 = malloc(sizeof(float) * bins * L);
  uint64_t seed = 7;
  for (int64_t j = 0; j < n; j++) a[j] = rnd(&seed);
  for (int64_t j = 0; j < n * L; j++) in[j] = 1e3 * rnd(&seed);
  for (int64_t j = 0; j < n; j++) in[j * L] = a[j];
  stk__rfft_spectra(&plan, in, L, 2, o1, L, 1, work);
  for (int64_t j = 0; j < n * L; j++) in[j] = rnd(&seed);
  for (int64_t j = 0; j < n; j++) in[j * L + L - 1] = a[j];
  stk__rfft_spectra(&plan, in, L, 2, o2, L, 1, work);
  for (int64_t k = 0; k < bins; k++)
    assert_memory_equal(&o1[k * L], &o2[k * L + L - 1], sizeof(float));
  for (int64_t i = 0; i < bins * L; i++) o2[i] = -1.0f;
  stk__rfft_spectra(&plan, in, 2, 2, o2, L, 1, work);
  for (int64_t k = 0; k < bins; k++)
    for (int l = 0; l < L; l++) assert_true(l < 2 ? o2[k * L + l] >= 0.0f : o2[k * L + l] == -1.0f);
  free(a), free(in), free(work), free(o1), free(o2);
  stk__rfft_plan_free(&plan);
}

/* The vectorised decibels against stk_to_db over 2^21 values spread log-uniformly over
 * 10^-40 .. 10^40 and special ones: at most one float32 unit apart, and apart at all in
 * fewer than one value in 10^6 (the documented rounding-boundary cases; none were seen
 * over these 12 million, and a 10^-6 relative error in one series term gives ~20); the special
 * values (0, subnormal, infinite, NaN, negative) and a floor of 0 exactly equal. */
static void test_decibels_match_libm(void **state) {
  (void)state;
  const int64_t n = 1 << 21;
  float *x = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
  double *xd = malloc(sizeof(double) * n);
  uint64_t seed = 11;
  for (int64_t i = 0; i < n; i++) xd[i] = pow(10.0, 40.0 * rnd(&seed)), x[i] = (float)xd[i];
  const float special[] = {0.0f, 1e-45f, 1e-40f, INFINITY, NAN, -1.0f, 1.0f, FLT_MAX, FLT_MIN};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++)
    x[100 + i] = special[i], xd[100 + i] = special[i];
  const double params[][3] = {{1.0, 1e-20, 10.0}, {0.37, 1e-3, 20.0}, {1.0, 0.0, 10.0}};
  for (int c = 0; c < 3; c++) {
    double inv_ref = params[c][0], min_ratio = params[c][1], mult = params[c][2];
    for (int pass = 0; pass < 2; pass++) {
      stk__to_db_row(pass ? NULL : x, pass ? xd : NULL, n, inv_ref, min_ratio, mult, got);
      int64_t differ = 0;
      for (int64_t i = 0; i < n; i++) {
        float want = stk_to_db(pass ? xd[i] : (double)x[i], inv_ref, min_ratio, mult);
        if (memcmp(&want, &got[i], sizeof want) == 0) continue;
        bool special_value = i >= 100 && i < 100 + (int64_t)(sizeof special / sizeof *special);
        if (special_value || !(fabsf(want - got[i]) <= fabsf(nextafterf(want, 0.0f) - want)))
          fail_msg("case %d, value %lld (%g): %.9g, stk_to_db %.9g", c, (long long)i,
                   pass ? xd[i] : (double)x[i], got[i], want);
        differ++;
      }
      assert_true(differ * 1000000 < n);
    }
  }
  free(x), free(got), free(xd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_direct_dft),
      cmocka_unit_test(test_known_spectra),
      cmocka_unit_test(test_lanes_independent),
      cmocka_unit_test(test_decibels_match_libm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
