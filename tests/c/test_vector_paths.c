/* The hand-written AVX2 paths of the CPU basic pipeline's kernels against the portable
 * code they stand in for, byte for byte:
 *  - crop_mirror_normalize's uint8 row kernel (src/ops/cmn_fast.c) against the table
 *    path: stk__cmn with stk__cmn_fast_off set and cleared must write the same bytes
 *    for random images of odd sizes, 1 and 3 channels, mirror on and off, float32 and
 *    float16, CHW and HWC, padded windows, pad channels, random mean / std / scale /
 *    shift (and ImageNet's);
 *  - the resampler's AVX2 row loops (src/ops/resample_rows.c: conversions, the vertical
 *    pass, the two-pixel horizontal pass from 4 taps on) against the portable loops:
 *    stk__resample with stk__resample_rows_off set and cleared, for random sizes,
 *    windows (mirrored too), every filter, antialias on and off, both pass orders,
 *    uint8 and float32 input, uint8 / float32 / float16 output.
 * On a CPU without AVX2 both runs take the portable path; the tests that the fast paths
 * are taken at all then skip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "testutil.h"
#include "../../src/ops/cmn_fast.h"
#include "../../src/ops/image_util.h"
#include "../../src/ops/resample.h"
#include "../../src/ops/resample_rows.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

static double uni(double lo, double hi) { return lo + (hi - lo) * (rnd() / 4294967296.0); }

static int64_t irange(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (hi - lo + 1)); }

static bool have_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
#else
  return false;
#endif
}

/* Noise, or a smooth ramp (runs of equal and neighbouring values). */
static void fill_u8(uint8_t *p, size_t n, int64_t w, int64_t c) {
  bool ramp = rnd() & 1;
  double a = uni(-2, 2);
  for (size_t i = 0; i < n; i++) {
    double v = ramp ? 128 + a * (double)((int64_t)i / c % w) + (rnd() % 7) : (double)(rnd() & 255);
    p[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  }
}

/* ---- crop_mirror_normalize ---- */

static const double imagenet_mean[3] = {123.675, 116.28, 103.53};
static const double imagenet_std[3] = {58.395, 57.12, 57.375};

typedef struct {
  stk__image src;
  stk__cmn_params p;
  stk_dtype out;
  int64_t out_c;
} cmn_case;

/* Runs stk__cmn with the kernel allowed or not; returns the output (caller frees). */
static char *run_cmn(const cmn_case *k, bool fast_off, size_t *bytes) {
  stk__image dst = {NULL, k->out, k->p.win.h, k->p.win.w, k->out_c};
  *bytes = (size_t)(dst.h * dst.w * dst.c) * stk_dtype_size(k->out);
  dst.data = malloc(*bytes + 1);
  memset(dst.data, 0xa5, *bytes); /* anything left unwritten shows */
  size_t ss = stk__cmn_scratch_size(&k->src, &dst);
  void *scratch = malloc(ss);
  stk__cmn_fast_off = fast_off;
  stk_status st = stk__cmn(&k->src, &dst, &k->p, scratch, ss);
  stk__cmn_fast_off = false;
  free(scratch);
  if (st != STK_OK) fail_msg("stk__cmn: %s", stk_last_error());
  return dst.data;
}

static void check_cmn_case(const cmn_case *k) {
  size_t na, nb;
  char *a = run_cmn(k, true, &na), *b = run_cmn(k, false, &nb);
  if (na != nb || memcmp(a, b, na) != 0) {
    size_t i = 0;
    while (i < na && a[i] == b[i]) i++;
    fail_msg("cmn %lldx%lldx%lld %s %s mirror=%d win %lldx%lld@(%lld,%lld): byte %zu differs",
             (long long)k->src.h, (long long)k->src.w, (long long)k->src.c, stk_dtype_name(k->out),
             k->p.planar ? "CHW" : "HWC", k->p.mirror, (long long)k->p.win.h, (long long)k->p.win.w,
             (long long)k->p.win.y, (long long)k->p.win.x, i);
  }
  free(a);
  free(b);
}

static void test_cmn_kernel_same_bytes(void **state) {
  (void)state;
  static const stk_dtype outs[] = {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16, STK_DTYPE_UINT8};
  int cases = 0;
  for (int trial = 0; trial < 400; trial++) {
    int64_t c = rnd() % 2 ? 3 : 1;
    int64_t h = irange(1, 70), w = irange(1, 90);
    if (trial % 40 == 0) h = 224, w = 224;
    uint8_t *img = malloc((size_t)(h * w * c) + 1);
    fill_u8(img, (size_t)(h * w * c), w, c);
    double mean[3], sd[3], fill[4];
    bool imagenet = c == 3 && rnd() % 2;
    for (int i = 0; i < 3; i++) {
      mean[i] = imagenet ? imagenet_mean[i] : uni(-50, 300);
      sd[i] = imagenet ? imagenet_std[i] : (rnd() % 2 ? 1 : -1) * uni(0.01, 300);
    }
    for (int i = 0; i < 4; i++) fill[i] = uni(-5, 5);
    cmn_case k = {{img, STK_DTYPE_UINT8, h, w, c}};
    /* windows inside the image, and some reaching outside (padded) */
    bool pad = rnd() % 4 == 0;
    k.p.win.h = irange(1, h + (pad ? 6 : 0));
    k.p.win.w = irange(1, w + (pad ? 20 : 0));
    k.p.win.y = pad ? irange(-3, h) : irange(0, h - k.p.win.h);
    k.p.win.x = pad ? irange(-10, w) : irange(0, w - k.p.win.w);
    k.p.mirror = rnd() % 2;
    k.p.planar = rnd() % 3 != 0;
    k.p.mean = mean, k.p.stddev = sd, k.p.fill = fill;
    k.p.scale = rnd() % 2 ? 1.0 : uni(-3, 3);
    k.p.shift = rnd() % 2 ? 0.0 : uni(-100, 100);
    k.out = outs[rnd() % 3];
    k.out_c = c == 3 && rnd() % 4 == 0 ? 4 : c;
    check_cmn_case(&k);
    cases++;
    free(img);
  }
  assert_int_equal(cases, 400);
}

/* The kernel is taken for the basic pipeline's arguments (else the test above would
 * compare the table path with itself), and refused when one table entry differs. */
static void test_cmn_kernel_taken_and_checked(void **state) {
  (void)state;
  if (!have_avx2()) skip();
  for (int half = 0; half < 2; half++) {
    stk_dtype t = half ? STK_DTYPE_FLOAT16 : STK_DTYPE_FLOAT32;
    size_t es = stk_dtype_size(t);
    char *lut = malloc(3 * 256 * es);
    for (int c = 0; c < 3; c++)
      for (int v = 0; v < 256; v++)
        stk__store_double(lut + (size_t)c * 256 * es, t, (size_t)v,
                          ((double)v - imagenet_mean[c]) / imagenet_std[c]);
    stk__cmn_fast f;
    assert_true(stk__cmn_fast_init(&f, 3, t, imagenet_mean, imagenet_std, 1.0, 0.0, lut));
    /* one value of one channel one unit in the last place off: refused */
    lut[(2 * 256 + 77) * es] ^= 1;
    assert_false(stk__cmn_fast_init(&f, 3, t, imagenet_mean, imagenet_std, 1.0, 0.0, lut));
    free(lut);
  }
  /* and not for what it does not handle */
  stk__cmn_fast f;
  char lut[256 * 4 * 4] = {0};
  assert_false(
      stk__cmn_fast_init(&f, 4, STK_DTYPE_FLOAT32, imagenet_mean, imagenet_std, 1, 0, lut));
  assert_false(stk__cmn_fast_init(&f, 3, STK_DTYPE_UINT8, imagenet_mean, imagenet_std, 1, 0, lut));
}

/* Independent check of the kernel's values: ImageNet normalisation of known pixels
 * against the formula evaluated here, mirrored, CHW float32. */
static void test_cmn_kernel_values(void **state) {
  (void)state;
  enum { W = 19 };
  uint8_t px[W * 3];
  for (int i = 0; i < W * 3; i++) px[i] = (uint8_t)(i * 37 + 11);
  stk__image src = {px, STK_DTYPE_UINT8, 1, W, 3};
  float out[3 * W];
  stk__image dst = {out, STK_DTYPE_FLOAT32, 1, W, 3};
  double fill[3] = {0, 0, 0};
  stk__cmn_params p = {{0, 0, 1, W}, true, true, imagenet_mean, imagenet_std, 1.0, 0.0, fill};
  char scratch[8192];
  TU_OK(stk__cmn(&src, &dst, &p, scratch, sizeof scratch));
  for (int c = 0; c < 3; c++)
    for (int x = 0; x < W; x++) {
      double v = px[(W - 1 - x) * 3 + c];
      float want = (float)((v - imagenet_mean[c]) / imagenet_std[c]);
      if (out[c * W + x] != want)
        fail_msg("c %d x %d: %.9g, expected %.9g", c, x, out[c * W + x], want);
    }
}

/* ---- resampling ---- */

typedef struct {
  stk__image src;
  int64_t oh, ow;
  stk_dtype out;
  stk__resample_args a;
} rs_case;

static char *run_resample(const rs_case *k, bool rows_off, size_t *bytes) {
  stk__image dst = {NULL, k->out, k->oh, k->ow, k->src.c};
  *bytes = (size_t)(k->oh * k->ow * k->src.c) * stk_dtype_size(k->out);
  dst.data = malloc(*bytes + 1);
  memset(dst.data, 0x5a, *bytes);
  size_t ss = stk__resample_scratch_size(&k->src, k->oh, k->ow, &k->a);
  if (ss == 0) fail_msg("no scratch size: %s", stk_last_error());
  void *scratch = malloc(ss);
  stk__resample_rows_off = rows_off;
  stk_status st = stk__resample(&k->src, &dst, &k->a, scratch, ss);
  stk__resample_rows_off = false;
  free(scratch);
  if (st != STK_OK) fail_msg("stk__resample: %s", stk_last_error());
  return dst.data;
}

static void test_resample_rows_same_bytes(void **state) {
  (void)state;
  static const stk_dtype outs[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16};
  for (int trial = 0; trial < 300; trial++) {
    int64_t c = (int64_t[]){1, 3, 3, 4, 2}[rnd() % 5];
    int64_t h = irange(1, 120), w = irange(1, 150);
    if (trial % 30 == 0) h = irange(250, 500), w = irange(250, 500);
    bool fsrc = rnd() % 4 == 0;
    size_t n = (size_t)(h * w * c);
    void *img = malloc(n * (fsrc ? 4 : 1) + 1);
    if (fsrc)
      for (size_t i = 0; i < n; i++) ((float *)img)[i] = (float)uni(-20, 300);
    else
      fill_u8(img, n, w, c);
    rs_case k = {{img, fsrc ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8, h, w, c}};
    k.oh = trial % 30 == 0 ? 224 : irange(1, 130);
    k.ow = trial % 30 == 0 ? 224 : irange(1, 130);
    k.out = outs[rnd() % 3];
    double x0 = uni(-3, (double)w * 0.5), x1 = uni(x0 + 0.5, (double)w + 3);
    double y0 = uni(-3, (double)h * 0.5), y1 = uni(y0 + 0.5, (double)h + 3);
    if (rnd() % 2) x0 = 0, x1 = (double)w, y0 = 0, y1 = (double)h;
    if (rnd() % 6 == 0) { /* mirrored */
      double t = x0;
      x0 = x1, x1 = t;
    }
    k.a = (stk__resample_args){
        x0, y0, x1, y1, (stk__interp)(rnd() % 4), rnd() % 3 != 0, (int)(rnd() % 3)};
    size_t na, nb;
    char *a = run_resample(&k, true, &na), *b = run_resample(&k, false, &nb);
    if (memcmp(a, b, na) != 0)
      fail_msg("resample %lldx%lldx%lld %s -> %lldx%lld %s interp %d aa %d order %d: differs",
               (long long)h, (long long)w, (long long)c, fsrc ? "f32" : "u8", (long long)k.oh,
               (long long)k.ow, stk_dtype_name(k.out), (int)k.a.interp, (int)k.a.antialias,
               k.a.order);
    free(a);
    free(b);
    free(img);
  }
}

/* The row helpers on their own, at every length around their block sizes and every
 * misalignment, against scalar loops written here. */
static void test_resample_row_helpers(void **state) {
  (void)state;
  if (!have_avx2()) skip();
  uint8_t u[300];
  float f[300], g[300];
  uint8_t o[300];
  for (size_t off = 0; off < 4; off++)
    for (size_t n = 0; n < 80; n++) {
      for (size_t i = 0; i < n + off; i++) u[i] = (uint8_t)rnd(), f[i] = (float)uni(-999, 999);
      size_t done = stk__u8_to_f32_avx2(g, u + off, n);
      assert_int_equal(done, n - n % 16);
      for (size_t i = 0; i < done; i++) assert_true(g[i] == (float)u[off + i]);
      done = stk__bounded_to_u8_avx2(o, f + off, n);
      assert_int_equal(done, n - n % 16);
      for (size_t i = 0; i < done; i++) {
        int v = (int)(f[off + i] + 1024.5f) - 1024;
        assert_int_equal(o[i], v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  /* the vertical pass: 96 floats (one 64 block and one 32 block), 5 taps */
  static float rows_data[5][96], acc[96];
  const float *rows[5];
  float w[5] = {0.1f, -0.25f, 0.7f, 0.33f, 0.12f};
  for (int k = 0; k < 5; k++) {
    for (int i = 0; i < 96; i++) rows_data[k][i] = (float)uni(-300, 300);
    rows[k] = rows_data[k];
  }
  stk__vpass_avx2(acc, rows, w, 5, 96);
  for (int i = 0; i < 96; i++) {
    float a = 0.0f;
    for (int k = 0; k < 5; k++) a += w[k] * rows_data[k][i];
    assert_true(acc[i] == a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cmn_kernel_same_bytes),
      cmocka_unit_test(test_cmn_kernel_taken_and_checked),
      cmocka_unit_test(test_cmn_kernel_values),
      cmocka_unit_test(test_resample_rows_same_bytes),
      cmocka_unit_test(test_resample_row_helpers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
