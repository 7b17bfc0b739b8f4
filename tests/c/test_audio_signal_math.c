/* The per-element maths of audio_resample and nonsilent_region
 * (src/shared/audio_signal_math.h), which the CPU operators and the CUDA kernels
 * (src/cuda/audio.cu) both call: the windowed-sinc table against its formula and
 * hand-computed values, the interpolation, the input range of an output sample, and the
 * segmented moving mean power against a direct sum. Two emulations run the kernels'
 * decomposition on the CPU (one output value per thread for the resampler; per-segment
 * maxima, then per-segment first/last hits merged as the atomics do, for
 * nonsilent_region) and must give the CPU operators' results exactly, so the GPU parity
 * run only has the kernels' indexing left to disagree about. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/audio_resample.h"
#include "shared/audio_signal_math.h"

static double rnd(unsigned *state) {
  *state = *state * 1103515245u + 12345u;
  return ((*state >> 8) & 0xFFFF) / 65536.0 * 2.0 - 1.0;
}

/* The table: sinc times the Hann window, 1 at 0, zeros at the integers, 0 from `lobes`. */
static void test_table(void **state) {
  (void)state;
  int lobes = 4;
  assert_int_equal(stk_resample_table_len(lobes), 4 * 512 + 2);
  assert_float_equal(stk_resample_table_entry(0, lobes), 1.0f, 0.0f);
  for (int k = 1; k < lobes; k++)
    assert_float_equal(stk_resample_table_entry(k * 512, lobes), 0.0f, 1e-7f);
  assert_float_equal(stk_resample_table_entry(lobes * 512, lobes), 0.0f, 0.0f);
  assert_float_equal(stk_resample_table_entry(lobes * 512 + 1, lobes), 0.0f, 0.0f);
  /* x = 0.5: sinc = 2 / pi, Hann = (1 + cos(pi / 8)) / 2 */
  double want = 2.0 / M_PI * 0.5 * (1.0 + cos(M_PI / 8.0));
  assert_float_equal(stk_resample_table_entry(256, lobes), (float)want, 1e-7f);
  /* x = 1.5: sinc = -2 / (3 pi), Hann = (1 + cos(3 pi / 8)) / 2 */
  want = -2.0 / (3.0 * M_PI) * 0.5 * (1.0 + cos(3.0 * M_PI / 8.0));
  assert_float_equal(stk_resample_table_entry(768, lobes), (float)want, 1e-7f);
}

/* Interpolation: the entries at table points, the mean half-way, symmetric in x. */
static void test_kernel_at(void **state) {
  (void)state;
  float *t = stk__audio_resample_table(3);
  assert_non_null(t);
  assert_float_equal(stk_resample_kernel_at(t, 100.0 / 512), t[100], 0.0);
  assert_float_equal(stk_resample_kernel_at(t, -100.0 / 512), t[100], 0.0);
  assert_float_equal(stk_resample_kernel_at(t, 100.5 / 512), 0.5 * ((double)t[100] + t[101]),
                     1e-12);
  assert_float_equal(stk_resample_kernel_at(t, 0.3),
                     sin(M_PI * 0.3) / (M_PI * 0.3) * 0.5 * (1.0 + cos(M_PI * 0.3 / 3)), 2e-6);
  free(t);
}

/* Geometry: the cut-off is the lower Nyquist; the range is the kernel's reach, clamped. */
static void test_geometry_and_range(void **state) {
  (void)state;
  stk_resample_geom down = stk_resample_geometry(4.0, 1.0, 16),
                    up = stk_resample_geometry(1, 2, 16);
  assert_float_equal(down.step, 4.0, 0.0);
  assert_float_equal(down.fc, 0.25, 0.0);
  assert_float_equal(down.reach, 64.0, 0.0);
  assert_float_equal(up.step, 0.5, 0.0);
  assert_float_equal(up.fc, 1.0, 0.0);
  int64_t lo, hi;
  stk_resample_range(&down, 10, 1000, &lo, &hi); /* p = 40: [40 - 64, 40 + 64] */
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 104);
  stk_resample_range(&up, 5, 1000, &lo, &hi); /* p = 2.5: [2.5 - 16, 2.5 + 16] */
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 18);
  stk_resample_range(&up, 1990, 1000, &lo, &hi); /* p = 995 */
  assert_int_equal(lo, 979);
  assert_int_equal(hi, 999);
  /* weights: fc times the kernel inside, 0 at and beyond the last zero crossing */
  float *t = stk__audio_resample_table(16);
  assert_float_equal(stk_resample_weight(&down, t, 16, 10, 40), 0.25, 0.0);
  assert_float_equal(stk_resample_weight(&down, t, 16, 10, 40 + 64), 0.0, 0.0);
  assert_float_equal(stk_resample_weight(&up, t, 16, 4, 2), 1.0, 0.0); /* p = 2 exactly */
  free(t);
}

/* The GPU resampler's decomposition (a thread per output value, float32 in and out)
 * against the CPU resampler on the same float32 signal: the same bits. */
static void test_resample_emulation(void **state) {
  (void)state;
  unsigned seed = 5;
  const int64_t n = 701, ch = 2;
  float *xf = malloc(sizeof(float) * n * ch);
  double *xd = malloc(sizeof(double) * n * ch);
  for (int64_t i = 0; i < n * ch; i++) xd[i] = xf[i] = (float)rnd(&seed);
  const double rates[][2] = {{16000, 22050}, {44100, 16000}, {3, 1}, {1, 1}};
  for (int r = 0; r < 4; r++) {
    double ri = rates[r][0], ro = rates[r][1], quality = 40.0;
    int64_t out_n = stk__audio_resample_length(n, ri, ro);
    double *cpu = malloc(sizeof(double) * out_n * ch);
    assert_true(stk__audio_resample(xd, n, (int)ch, ri, ro, quality, cpu, out_n));
    int lobes = stk__audio_lobes(quality);
    float *t = stk__audio_resample_table(lobes);
    stk_resample_geom g = stk_resample_geometry(ri, ro, lobes);
    for (int64_t e = 0; e < out_n * ch; e++) { /* resample_audio_kernel */
      int64_t j = e / ch, c = e % ch, lo, hi;
      stk_resample_range(&g, j, n, &lo, &hi);
      double acc = 0.0;
      for (int64_t i = lo; i <= hi; i++) {
        double w = stk_resample_weight(&g, t, lobes, j, i);
        if (w != 0.0) acc += w * (double)xf[i * ch + c];
      }
      assert_true((float)acc == (float)cpu[e]);
    }
    free(t);
    free(cpu);
  }
  free(xf);
  free(xd);
}

/* The moving mean power, restarted every `reset` samples, against a direct sum of each
 * window: equal to rounding for random values, exactly for small integers. */
static void check_mms(const double *x, int64_t n, int64_t window, int64_t reset, double tol) {
  int64_t seg = stk_mms_segment_len(n, reset);
  for (int64_t s = 0; s < n; s += seg) {
    double sum = stk_mms_start(NULL, x, s, window);
    for (int64_t i = s; i < n && i < s + seg; i++) {
      double got = stk_mms_step(NULL, x, i, s, window, &sum), want = 0.0;
      for (int64_t j = i - window + 1 > 0 ? i - window + 1 : 0; j <= i; j++) want += x[j] * x[j];
      assert_float_equal(got, want / (double)window, tol);
    }
  }
}

static void test_moving_mean_power(void **state) {
  (void)state;
  unsigned seed = 9;
  enum { n = 500 };
  double x[n], xi[n];
  for (int i = 0; i < n; i++) {
    x[i] = rnd(&seed);
    xi[i] = floor(x[i] * 100.0);
  }
  const int64_t windows[] = {1, 3, 40, 130}, resets[] = {-1, 1, 7, 64, 1000};
  for (int w = 0; w < 4; w++)
    for (int r = 0; r < 5; r++) {
      check_mms(x, n, windows[w], resets[r], 1e-12);
      check_mms(xi, n, windows[w], resets[r], 0.0);
    }
  /* float32 and float64 reads of the same values give the same sums */
  float xf[n];
  for (int i = 0; i < n; i++) xf[i] = (float)x[i], x[i] = xf[i];
  double a = stk_mms_start(xf, NULL, 200, 64), b = stk_mms_start(NULL, x, 200, 64);
  assert_true(a == b);
  assert_true(stk_mms_step(xf, NULL, 200, 200, 64, &a) == stk_mms_step(NULL, x, 200, 200, 64, &b));
}

/* nonsilent_region as the GPU computes it (src/cuda/audio.cu): segment maxima, the
 * threshold, each segment's first and last hit merged by min / max; (begin, length). */
static void emulate_nonsilent(const float *x, int64_t n, int64_t window, int64_t reset,
                              double factor, int64_t *begin, int64_t *length) {
  int64_t seg = stk_mms_segment_len(n, reset), nseg = n > 0 ? (n + seg - 1) / seg : 0;
  double ref = 0.0;
  for (int64_t k = nseg - 1; k >= 0; k--) { /* any order: the maximum is exact */
    double sum = stk_mms_start(x, NULL, k * seg, window), m = 0.0;
    for (int64_t i = k * seg; i < n && i < (k + 1) * seg; i++) {
      double v = stk_mms_step(x, NULL, i, k * seg, window, &sum);
      m = v > m ? v : m;
    }
    ref = m > ref ? m : ref;
  }
  double thr = ref * factor;
  int64_t first = INT64_MAX, last = -1;
  for (int64_t k = nseg - 1; k >= 0; k--) {
    double sum = stk_mms_start(x, NULL, k * seg, window);
    for (int64_t i = k * seg; i < n && i < (k + 1) * seg; i++)
      if (stk_mms_step(x, NULL, i, k * seg, window, &sum) >= thr) {
        first = i < first ? i : first;
        last = i > last ? i : last;
      }
  }
  *begin = *length = 0;
  if (last >= 0) {
    *begin = first - window + 1 > 0 ? first - window + 1 : 0;
    *length = last - *begin + 1;
  }
}

/* The emulation against the operator itself (CPU) through the C API. */
static void test_nonsilent_emulation(void **state) {
  (void)state;
  enum { n = 3000 };
  static float x[n];
  unsigned seed = 3;
  for (int i = 0; i < n; i++) x[i] = (float)(rnd(&seed) * (i > 900 && i < 2100 ? 1.0 : 1e-3));
  const int64_t windows[] = {1, 50, 700}, resets[] = {-1, 13, 256};
  const double cutoffs[] = {-60.0, -20.0, -3.0};
  for (int w = 0; w < 3; w++)
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++) {
        char text[512];
        snprintf(text, sizeof text,
                 "batch_size = 1\nnum_threads = 1\nsrc = external_source(name=\"src\")\n"
                 "b, l = nonsilent_region(src, window_length=%lld, reset_interval=%lld, "
                 "cutoff_db=%g)\nreturn b, l\n",
                 (long long)windows[w], (long long)resets[r], cutoffs[c]);
        stk_pipeline *p;
        TU_OK(stk_pipeline_from_text(text, &p));
        TU_OK(stk_pipeline_build(p));
        stk_tensor_desc d = {
            .data = x, .ndim = 1, .shape = {n}, .strides = {4}, .dtype = STK_DTYPE_FLOAT32};
        TU_OK(stk_pipeline_feed(p, "src", &d, 1));
        stk_batch *out;
        TU_OK(stk_pipeline_run(p, &out));
        stk_tensor_desc b, l;
        TU_OK(stk_tensor_list_sample(stk_batch_output(out, 0), 0, &b));
        TU_OK(stk_tensor_list_sample(stk_batch_output(out, 1), 0, &l));
        int64_t eb, el;
        emulate_nonsilent(x, n, windows[w], resets[r], pow(10.0, cutoffs[c] / 10.0), &eb, &el);
        assert_int_equal(*(const int32_t *)b.data, eb);
        assert_int_equal(*(const int32_t *)l.data, el);
        if (cutoffs[c] == -3.0 && windows[w] <= 50)
          assert_true(eb > 800 && eb + el < 2200); /* the loud part */
        stk_batch_release(out);
        stk_pipeline_destroy(p);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_kernel_at),
      cmocka_unit_test(test_geometry_and_range),
      cmocka_unit_test(test_resample_emulation),
      cmocka_unit_test(test_moving_mean_power),
      cmocka_unit_test(test_nonsilent_emulation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
