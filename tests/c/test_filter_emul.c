/* Host emulation of the GPU filter and noise kernels (src/cuda/filter.cu), no GPU needed.
 *
 * The kernels' per-element bodies live in src/shared/filter_common.h and noise_common.h.
 * Here they run on the host over every element, exactly as the kernels map threads, and
 * must match the CPU operators' functions bit for bit:
 *  - convolutions: stk_conv_hpass_px + stk_conv_out_px (float32 output) against
 *    stk__conv_sep (one or two accumulated pairs) and stk__conv2d, for random images
 *    (uint8, int16, float32, float16; 1 and 3 channels, tiny to medium sizes), random
 *    kernels with zero taps, every border mode, random anchors, "same" and "valid";
 *  - the border rule against a reflection stepped out one period at a time;
 *  - noise: the Box-Muller normals against libm (accuracy of the own log/sin/cos), and
 *    the shot sampler's mean and variance. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "shared/filter_common.h"
#include "shared/noise_common.h"
#include "ops/filters.h"

static uint32_t rng_state = 12345;
static uint32_t rnd(void) { return tu_rand(&rng_state); }
static int rnd_in(int lo, int hi) { return tu_rand_in(&rng_state, lo, hi); }
static float frand(void) { return (float)((rnd() >> 8) / 16777216.0) * 2.0f - 1.0f; }

/* A random image of `dt` (values in the type's usual range). */
static void *random_image(stk_dtype dt, int h, int w, int c) {
  size_t n = (size_t)h * (size_t)w * (size_t)c;
  void *p = malloc(n * stk_dtype_size(dt) + 1);
  for (size_t i = 0; i < n; i++) {
    switch (dt) {
      case STK_DTYPE_UINT8:
        ((uint8_t *)p)[i] = (uint8_t)rnd();
        break;
      case STK_DTYPE_INT16:
        ((int16_t *)p)[i] = (int16_t)rnd();
        break;
      case STK_DTYPE_FLOAT16:
        ((uint16_t *)p)[i] = stk__f32_to_f16(frand() * 100.0f);
        break;
      default:
        ((float *)p)[i] = frand() * 300.0f;
        break;
    }
  }
  return p;
}

/* Runs the two kernels of src/cuda/filter.cu on the host for one sample, placed at
 * offsets in the batch's weight and temporary arrays as a later sample would be. */
static void emulate(const stk_conv_job *j, stk_dtype dt, const float *W, size_t nw, float *out) {
  enum { WOFF = 7, TOFF = 5 };
  float *Wb = malloc((WOFF + nw) * sizeof(float));
  memcpy(Wb + WOFF, W, nw * sizeof(float));
  float *tmp = malloc((size_t)(TOFF + j->h_count * j->c) * sizeof(float));
  stk_conv_job o = *j;
  o.dst = out, o.w_off = WOFF, o.tmp_off = TOFF;
  for (int64_t px = 0; px < o.h_count; px++) stk_conv_hpass_px(&o, (int)dt, Wb, tmp, px);
  for (int64_t px = 0; px < o.v_count; px++)
    stk_conv_out_px(&o, (int)dt, Wb, tmp, px, STK_DTYPE_FLOAT32);
  free(tmp);
  free(Wb);
}

static void one_case(int iter) {
  static const stk_dtype types[] = {STK_DTYPE_UINT8, STK_DTYPE_INT16, STK_DTYPE_FLOAT32,
                                    STK_DTYPE_FLOAT16};
  stk_dtype dt = types[rnd() % 4];
  int h = rnd_in(1, 40), w = rnd_in(1, 40), c = rnd() % 2 ? 3 : 1;
  int kh = rnd_in(1, 9), kw = rnd_in(1, 9), npairs = rnd_in(0, 2);
  bool valid = npairs == 0 && rnd() % 4 == 0 && kh <= h && kw <= w;
  stk__conv_geom g = {h,
                      w,
                      kh,
                      kw,
                      rnd_in(0, kh - 1),
                      rnd_in(0, kw - 1),
                      (stk__border)rnd_in(0, 4),
                      frand() * 50.0f};
  if (valid) g.out_h = h - kh + 1, g.out_w = w - kw + 1, g.ay = g.ax = 0;
  size_t nw = npairs ? (size_t)npairs * (size_t)(kh + kw) : (size_t)(kh * kw);
  float *W = malloc(nw * sizeof(float));
  for (size_t i = 0; i < nw; i++) W[i] = rnd() % 5 == 0 ? 0.0f : frand();
  void *src = random_image(dt, h, w, c);
  stk__image img = {src, dt, h, w, c};
  size_t n = (size_t)(g.out_h * g.out_w) * (size_t)c;
  float *cpu = malloc(n * sizeof(float)), *gpu = malloc(n * sizeof(float));
  size_t need = stk__conv_scratch_size(&img, &g);
  void *scratch = malloc(need);
  if (npairs == 0) {
    assert_int_equal(stk__conv2d(&img, cpu, &g, W, false, scratch, need), STK_OK);
  } else {
    for (int p = 0; p < npairs; p++)
      assert_int_equal(stk__conv_sep(&img, cpu, &g, W + (size_t)p * (size_t)(kh + kw),
                                     W + (size_t)p * (size_t)(kh + kw) + kh, p > 0, scratch, need),
                       STK_OK);
  }
  stk_conv_job j;
  memset(&j, 0, sizeof j);
  j.src = src, j.h = h, j.w = w, j.c = c, j.out_h = (int)g.out_h, j.out_w = (int)g.out_w;
  j.kh = kh, j.kw = kw, j.ay = g.ay, j.ax = g.ax, j.border = (int)g.border, j.npairs = npairs;
  j.fill = g.fill;
  j.v_count = (int64_t)(g.out_h * g.out_w);
  j.h_count = (int64_t)npairs * (g.out_h + kh - 1) * g.out_w;
  emulate(&j, dt, W, nw, gpu);
  if (memcmp(cpu, gpu, n * sizeof(float)) != 0) {
    for (size_t i = 0; i < n; i++)
      if (memcmp(&cpu[i], &gpu[i], 4) != 0) {
        fprintf(stderr,
                "case %d: dtype %d %dx%dx%d kernel %dx%d pairs %d border %d anchor "
                "(%d,%d) valid %d: element %zu CPU %.9g GPU %.9g\n",
                iter, (int)dt, h, w, c, kh, kw, npairs, (int)g.border, g.ay, g.ax, (int)valid, i,
                cpu[i], gpu[i]);
        break;
      }
    fail();
  }
  free(W), free(src), free(cpu), free(gpu), free(scratch);
}

static void test_conv_bit_identical(void **state) {
  (void)state;
  for (int i = 0; i < 400; i++) one_case(i);
}

/* Border rules stepped out one reflection at a time. */
static int64_t slow_border(int64_t i, int64_t n, int b) {
  if (b == 4) return i >= 0 && i < n ? i : -1;
  if (b == 3) return i < 0 ? 0 : i >= n ? n - 1 : i;
  while (i < 0 || i >= n) {
    if (b == 2)
      i = i < 0 ? i + n : i - n;
    else if (b == 1)
      i = i < 0 ? -i - 1 : 2 * n - 1 - i;
    else if (n == 1)
      i = 0;
    else
      i = i < 0 ? -i : 2 * n - 2 - i;
  }
  return i;
}

static void test_border_rule(void **state) {
  (void)state;
  for (int b = 0; b < 5; b++)
    for (int64_t n = 1; n < 7; n++)
      for (int64_t i = -30; i < 30; i++)
        assert_int_equal(stk_conv_border(i, n, b), slow_border(i, n, b));
}

/* The own log / sin / cos of Box-Muller against libm: within 1e-9. */
static void test_box_muller_accuracy(void **state) {
  (void)state;
  double worst = 0.0;
  for (int i = 0; i < 200000; i++) {
    uint32_t a = rnd(), b = rnd();
    if (i < 4) a = i == 0 ? 0u : i == 1 ? 0xFFFFFFFFu : a, b = (uint32_t)i << 29;
    double z0, z1;
    stk_noise_box_muller(a, b, &z0, &z1);
    double u = ((double)a + 1.0) / 4294967296.0, r = sqrt(-2.0 * log(u));
    double t = 2.0 * 3.14159265358979323846 * ((double)b / 4294967296.0);
    double e0 = fabs(z0 - r * cos(t)), e1 = fabs(z1 - r * sin(t));
    worst = fmax(worst, fmax(e0, e1));
  }
  assert_true(worst < 1e-9);
}

/* Shot noise's sampler: mean and variance of Poisson(lambda) over many elements, for
 * means on both sides of the switch from inversion to PTRS. */
static void test_poisson_moments(void **state) {
  (void)state;
  stk_noise_stream s = {{0x1234u, 0x5678u}, {7u, 0u}};
  const double lambdas[] = {0.3, 4.0, 9.99, 10.0, 37.5, 250.0};
  for (int l = 0; l < 6; l++) {
    stk_noise_poisson_consts c;
    stk_noise_poisson_setup(&c, lambdas[l]);
    double sum = 0.0, sum2 = 0.0;
    int n = 200000;
    for (int e = 0; e < n; e++) {
      double k = stk_noise_poisson(&s, (uint64_t)e, &c);
      sum += k, sum2 += k * k;
    }
    double mean = sum / n, var = sum2 / n - mean * mean, lam = lambdas[l];
    assert_true(fabs(mean - lam) < 5.0 * sqrt(lam / n));
    assert_true(fabs(var / lam - 1.0) < 0.03);
  }
}

/* The counter-based blocks are Philox4x32-10 of src/core (the known-answer-checked one). */
static void test_philox_matches_core(void **state) {
  (void)state;
  for (int i = 0; i < 100; i++) {
    uint32_t key[2] = {rnd(), rnd()}, ctr[4] = {rnd(), rnd(), rnd(), rnd()}, a[4], b[4];
    stk__philox4x32_10(ctr, key, a);
    stk_noise_stream s = {{key[0], key[1]}, {ctr[2], ctr[3]}};
    stk_noise_block(&s, (uint64_t)ctr[0] | ((uint64_t)ctr[1] << 32), b);
    assert_memory_equal(a, b, sizeof a);
    uint32_t w4[4][4];                                  /* the CPU's four-at-once path */
    uint64_t blk = (uint64_t)rnd() << 32 | 0xFFFFFFFEu; /* crosses a carry into word 1 */
    stk_noise_blocks4(&s, blk, w4);
    for (int k = 0; k < 4; k++) {
      stk_noise_block(&s, blk + (uint64_t)k, b);
      assert_memory_equal(w4[k], b, sizeof b);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_bit_identical),  cmocka_unit_test(test_border_rule),
      cmocka_unit_test(test_box_muller_accuracy), cmocka_unit_test(test_poisson_moments),
      cmocka_unit_test(test_philox_matches_core),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
