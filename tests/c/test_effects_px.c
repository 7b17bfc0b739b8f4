/* The image effects' per-element arithmetic (src/shared/effects_px.h), which the CPU
 * operators and the CUDA kernels (src/cuda/effects.cu) both call, against hand-computed
 * values: border index tables, the uint8 / int16 stores, bilinear taps, the sphere and
 * perspective maps, clahe's clipping and redistribution, the Bayer pattern and the
 * median / morphology windows. The operators themselves are tested against OpenCV and
 * DALI in tests/python/test_effects.py. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "shared/effects_px.h"

/* Index i of an axis of 4 pixels, for i = -6 .. 9, under each border mode. */
static void test_border_tables(void **state) {
  (void)state;
  static const long long want[5][16] = {
      /* constant */ {-1, -1, -1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, -1, -1},
      /* replicate */ {0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3},
      /* reflect (cba|abcd|dcb) */ {2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1},
      /* reflect_101 (dcb|abcd|cba) */ {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3},
      /* wrap */ {2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1},
  };
  for (int b = 0; b < 5; b++)
    for (int i = -6; i <= 9; i++) assert_int_equal(stk_fx_border(i, 4, b), want[b][i + 6]);
  /* one pixel: every mirror reads it */
  for (int b = 1; b < 5; b++) assert_int_equal(stk_fx_border(-3, 1, b), 0);
  /* far away: the period, not a clamp */
  assert_int_equal(stk_fx_border(-1000000001LL, 4, STK_FX_BORDER_WRAP), 3);
}

static void test_store_rounding(void **state) {
  (void)state;
  uint8_t u8[4];
  int16_t i16[4];
  float in[4] = {2.5f, -0.5f, 300.0f, NAN};
  for (int i = 0; i < 4; i++) stk_fx_store(u8, STK_DTYPE_UINT8, i, in[i]);
  assert_int_equal(u8[0], 3); /* half away from zero */
  assert_int_equal(u8[1], 0);
  assert_int_equal(u8[2], 255);
  assert_int_equal(u8[3], 0);
  float in2[4] = {-2.5f, 40000.0f, -40000.0f, 1.49f};
  for (int i = 0; i < 4; i++) stk_fx_store(i16, STK_DTYPE_INT16, i, in2[i]);
  assert_int_equal(i16[0], -3);
  assert_int_equal(i16[1], 32767);
  assert_int_equal(i16[2], -32768);
  assert_int_equal(i16[3], 1);
}

/* A 2 x 2 image [[0, 10], [20, 30]]: the centre of the image (edge coordinates (1, 1)) is
 * the mean 15; a point a quarter pixel right of the first centre is 2.5; outside taps
 * read the fill under the constant border. */
static void test_bilinear(void **state) {
  (void)state;
  float px[4] = {0, 10, 20, 30};
  stk_fx_image im = {px, STK_DTYPE_FLOAT32, 2, 2, 1};
  int c = STK_FX_BORDER_CONSTANT;
  assert_true(fabsf(stk_fx_sample(&im, 1.0, 1.0, 0, STK_FX_LINEAR, c, 0) - 15.0f) < 1e-6f);
  assert_true(fabsf(stk_fx_sample(&im, 0.75, 0.5, 0, STK_FX_LINEAR, c, 0) - 2.5f) < 1e-6f);
  /* half way between the first centre and the fill 100 on its left */
  assert_true(fabsf(stk_fx_sample(&im, 0.0, 0.5, 0, STK_FX_LINEAR, c, 100) - 50.0f) < 1e-6f);
  /* nearest: the pixel holding the point */
  assert_true(stk_fx_sample(&im, 1.99, 0.2, 0, STK_FX_NEAREST, c, 7) == 10.0f);
  assert_true(stk_fx_sample(&im, 2.0, 0.2, 0, STK_FX_NEAREST, c, 7) == 7.0f);
  /* NaN coordinates read the border, never crash */
  assert_true(stk_fx_sample(&im, NAN, 0.5, 0, STK_FX_LINEAR, c, 5) == 5.0f);
}

/* sphere on a 4 x 4 image: c = (2, 2), d = 2; the pixel (3, 2) has its centre at offset
 * (1.5, 0.5), |t| = sqrt(2.5), so it reads c + t sqrt(2.5) / 2. */
static void test_sphere_and_perspective(void **state) {
  (void)state;
  double X, Y, r = sqrt(2.5) / 2;
  stk_fx_sphere(3, 2, 4, 4, &X, &Y);
  assert_true(fabs(X - (2 + 1.5 * r)) < 1e-12 && fabs(Y - (2 + 0.5 * r)) < 1e-12);
  /* identity perspective: corner origin reads the pixel centre; centre origin too */
  double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  stk_fx_perspective(id, 5, 7, 0, &X, &Y);
  assert_true(X == 5.5 && Y == 7.5);
  stk_fx_perspective(id, 5, 7, 1, &X, &Y);
  assert_true(X == 5.5 && Y == 7.5);
  /* a projective divide: z = 2 halves the coordinates (centre origin: index space) */
  double half[9] = {1, 0, 0, 0, 1, 0, 0, 0, 2};
  stk_fx_perspective(half, 4, 6, 1, &X, &Y);
  assert_true(X == 2.5 && Y == 3.5);
}

/* clahe: a tile of 64 pixels, 40 of value 10 and 24 of value 200, limit 8: 32 + 16 clipped
 * = 48 excess, 0 per bin in the batch, 48 left spread at stride 256 / 48 = 5 from bin 0
 * (bins 0, 5, ..., 235). Then the scaled cumulative sum. */
static void test_clahe_lut(void **state) {
  (void)state;
  int hist[256] = {0};
  hist[10] = 40, hist[200] = 24;
  uint8_t lut[256];
  stk_fx_clahe_lut(hist, 64, 8, lut);
  int total = 0, want[256] = {0};
  want[10] = 8, want[200] = 8;
  for (int i = 0, left = 48; i < 256 && left > 0; i += 5, left--) want[i]++;
  for (int i = 0; i < 256; i++) {
    assert_int_equal(hist[i], want[i]);
    total += want[i];
    assert_int_equal(lut[i], (int)rintf((float)total * (255.0f / 64.0f)));
  }
  assert_int_equal(lut[255], 255);
}

/* Bayer RGGB (red at (0, 0)): the sensor colours and the interpolation of a flat field
 * with a bright red plane. */
static void test_debayer(void **state) {
  (void)state;
  assert_int_equal(stk_fx_cfa(0, 0, 0, 0), 0);
  assert_int_equal(stk_fx_cfa(1, 0, 0, 0), 1);
  assert_int_equal(stk_fx_cfa(1, 1, 0, 0), 2);
  uint8_t m[16];
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) m[y * 4 + x] = stk_fx_cfa(x, y, 0, 0) == 0 ? 200 : 50;
  stk_fx_image im = {m, STK_DTYPE_UINT8, 4, 4, 1};
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) {
      assert_true(stk_fx_debayer(&im, x, y, 0, 0, 0) == 200.0f); /* red everywhere */
      assert_true(stk_fx_debayer(&im, x, y, 0, 0, 1) == 50.0f);
      assert_true(stk_fx_debayer(&im, x, y, 0, 0, 2) == 50.0f);
    }
  /* rounding half up: green at a red sensor from 1, 2, 2, 2 -> (7 + 2) / 4 = 2 */
  uint8_t g[9] = {0, 1, 0, 2, 9, 2, 0, 2, 0};
  stk_fx_image gi = {g, STK_DTYPE_UINT8, 3, 3, 1};
  assert_true(stk_fx_debayer(&gi, 1, 1, 1, 1, 1) == 2.0f);
}

static void test_windows(void **state) {
  (void)state;
  float v[25];
  for (int i = 0; i < 25; i++) v[i] = (float)((i * 7) % 25); /* a permutation of 0..24 */
  stk_fx_image im = {v, STK_DTYPE_FLOAT32, 5, 5, 1};
  assert_true(stk_fx_median(&im, 2, 2, 0, 5, 5) == 12.0f);
  /* replicated corner: the 3x3 window at (0, 0) reads v[0] four times, v[1] and v[5]
   * twice, v[6] once: 0 0 0 0 7 7 10 10 17, median 7 */
  assert_true(v[0] == 0 && v[1] == 7 && v[5] == 10 && v[6] == 17);
  assert_true(stk_fx_median(&im, 0, 0, 0, 3, 3) == 7.0f);
  /* morphology: the constant border is ignored, others read mirrored pixels */
  assert_true(stk_fx_morph(&im, 0, 0, 0, 3, 3, 1, 1, STK_FX_BORDER_CONSTANT, 1) ==
              fmaxf(fmaxf(v[0], v[1]), fmaxf(v[5], v[6])));
  assert_true(stk_fx_morph(&im, 0, 0, 0, 3, 3, 1, 1, STK_FX_BORDER_CONSTANT, 0) ==
              fminf(fminf(v[0], v[1]), fminf(v[5], v[6])));
  float m = 0;
  for (int j = -1; j <= 1; j++)
    for (int i = -1; i <= 1; i++)
      m = fmaxf(m, v[stk_fx_border(j, 5, STK_FX_BORDER_WRAP) * 5 + stk_fx_border(i, 5, 4)]);
  assert_true(stk_fx_morph(&im, 0, 0, 0, 3, 3, 1, 1, STK_FX_BORDER_WRAP, 1) == m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_border_tables), cmocka_unit_test(test_store_rounding),
      cmocka_unit_test(test_bilinear),      cmocka_unit_test(test_sphere_and_perspective),
      cmocka_unit_test(test_clahe_lut),     cmocka_unit_test(test_debayer),
      cmocka_unit_test(test_windows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
