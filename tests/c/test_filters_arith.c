/* Filters (gaussian_blur, laplacian, filter and the convolution kernels), elementwise
 * arithmetic (math.binary / unary / clamp, DALI's type promotion, broadcasting), one_hot
 * and cast_like.
 *
 * References: a naive float64 correlation written here with the border rules stepped
 * out one reflection at a time (not by modular arithmetic as the library does) and the
 * border strings of DALI's documentation; Gaussian and binomial windows from their
 * closed forms; OpenCV's well-known 3x3 Laplacian kernels; the type promotion table of
 * DALI's documentation re-derived from (category, bit width); element values computed
 * in float64 / int64 here. Tolerances: uint8 outputs within 1 level of the float64
 * reference (float32 accumulation inside), float outputs within 1e-4 relative. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codecs.h"
#include "ops/arithmetic.h"
#include "ops/filters.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

typedef tu_image img_t;
#define load_photo tu_load_photo

static uint32_t rng_state = 777;
static uint32_t rnd(void) { return tu_rand(&rng_state); }
static int rnd_in(int lo, int hi) { return tu_rand_in(&rng_state, lo, hi); }
static double urand(void) { return (rnd() >> 8) / 16777216.0; }

/* Border rules stepped out one reflection at a time. */
static long ref_border(long i, long n, int border) {
  if (i >= 0 && i < n) return i;
  switch (border) {
    case STK__BORDER_CONSTANT:
      return -1;
    case STK__BORDER_CLAMP:
      return i < 0 ? 0 : n - 1;
    case STK__BORDER_WRAP:
      while (i < 0) i += n;
      while (i >= n) i -= n;
      return i;
    case STK__BORDER_REFLECT_1001:
      while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
      return i;
    default:
      if (n == 1) return 0;
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
      return i;
  }
}

/* Naive float64 correlation of an HWC image (doubles). */
static void ref_corr(const double *src, int h, int w, int c, const double *k, int kh, int kw,
                     int ay, int ax, int border, double fill, int oh, int ow, double *out) {
  for (int y = 0; y < oh; y++)
    for (int x = 0; x < ow; x++)
      for (int ch = 0; ch < c; ch++) {
        double acc = 0;
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++) {
            long sy = ref_border(y - ay + i, h, border), sx = ref_border(x - ax + j, w, border);
            double v = (sy < 0 || sx < 0) ? fill : src[((size_t)sy * w + sx) * c + ch];
            acc += k[i * kw + j] * v;
          }
        out[((size_t)y * ow + x) * c + ch] = acc;
      }
}

static double *u8_to_double(const uint8_t *p, size_t n) {
  double *d = malloc(n * sizeof(double));
  assert_non_null(d);
  for (size_t i = 0; i < n; i++) d[i] = p[i];
  return d;
}

static uint8_t sat_u8(double v) {
  v = v < 0 ? 0 : v > 255 ? 255 : v;
  return (uint8_t)floor(v + 0.5);
}

static void check_u8(const uint8_t *got, const double *ref, size_t n, const char *what) {
  int maxd = 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)got[i] - (int)sat_u8(ref[i]));
    if (d > maxd) maxd = d;
    bad += d != 0;
  }
  if (maxd > 1 || bad * 100 > n) fail_msg("%s: max diff %d, %zu of %zu differ", what, maxd, bad, n);
}

static void check_f32(const float *got, const double *ref, size_t n, double scale,
                      const char *what) {
  for (size_t i = 0; i < n; i++)
    if (fabs(got[i] - ref[i]) > 1e-4 * (scale + fabs(ref[i])))
      fail_msg("%s: element %zu is %.9g, expected %.9g", what, i, got[i], ref[i]);
}

/* ---- pipeline helpers ---- */

static stk_pipeline *make_pipe(int batch) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, batch));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, 2));
  TU_OK(stk_pipeline_set(p, STK_PIPE_SEED, 5));
  return p;
}

static void add_source(stk_pipeline *p, const char *name, const char *layout) {
  stk_op *op;
  TU_OK(stk_op_create("external_source", "cpu", &op));
  TU_OK(stk_op_set_name(op, name));
  if (layout) TU_OK(stk_op_set_string(op, "layout", layout));
  TU_OK(stk_op_add_output(op, name));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

/* A dense sample description. */
static stk_tensor_desc desc(void *data, stk_dtype dt, int ndim, const int64_t *shape) {
  stk_tensor_desc d = {.data = data, .ndim = ndim, .dtype = dt};
  int64_t st = (int64_t)stk_dtype_size(dt);
  for (int i = ndim - 1; i >= 0; i--) d.shape[i] = shape[i], d.strides[i] = st, st *= shape[i];
  return d;
}

static void feed_image(stk_pipeline *p, const char *name, const img_t *im, int count) {
  stk_tensor_desc d[8];
  int64_t shape[3] = {im->h, im->w, im->c};
  for (int i = 0; i < count; i++) d[i] = desc(im->p, STK_DTYPE_UINT8, 3, shape);
  TU_OK(stk_pipeline_feed(p, name, d, (size_t)count));
}

static stk_op *new_op(const char *kind, const char *in, const char *out) {
  stk_op *op;
  TU_OK(stk_op_create(kind, "cpu", &op));
  TU_OK(stk_op_set_name(op, out));
  if (in) TU_OK(stk_op_add_input(op, in));
  TU_OK(stk_op_add_output(op, out));
  return op;
}

static void add(stk_pipeline *p, stk_op *op) {
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

static stk_tensor_desc sample(stk_batch *b, size_t output, size_t i) {
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(stk_batch_output(b, output), i, &d));
  return d;
}

/* ---------------------------------------------------------------------------------- */
/* Borders and kernels                                                                */
/* ---------------------------------------------------------------------------------- */

static void test_border_index(void **state) {
  /* DALI's documentation strings for "abcd": positions -3..-1 and 4..6 */
  static const struct {
    stk__border b;
    const char *left, *right;
  } doc[] = {{STK__BORDER_REFLECT_101, "dcb", "cba"},
             {STK__BORDER_REFLECT_1001, "cba", "dcb"},
             {STK__BORDER_WRAP, "bcd", "abc"},
             {STK__BORDER_CLAMP, "aaa", "ddd"}};
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 3; i++) {
      assert_int_equal(stk__border_index(-3 + i, 4, doc[k].b), doc[k].left[i] - 'a');
      assert_int_equal(stk__border_index(4 + i, 4, doc[k].b), doc[k].right[i] - 'a');
    }
  assert_int_equal(stk__border_index(-1, 4, STK__BORDER_CONSTANT), -1);
  assert_int_equal(stk__border_index(4, 4, STK__BORDER_CONSTANT), -1);
  for (int b = 0; b < 5; b++)
    for (long n = 1; n <= 6; n++)
      for (long i = -25; i <= 30; i++)
        assert_int_equal(stk__border_index(i, n, (stk__border)b), ref_border(i, n, b));
  stk__border out;
  assert_true(stk__border_parse("reflect_1001", &out) && out == STK__BORDER_REFLECT_1001);
  assert_false(stk__border_parse("mirror", &out));
}

static void test_conv_kernels_vs_reference(void **state) {
  for (int t = 0; t < 300; t++) {
    int h = rnd_in(1, 9), w = rnd_in(1, 9), c = rnd_in(1, 3);
    int kh = rnd_in(1, 7), kw = rnd_in(1, 7), border = t % 5;
    bool valid = t % 7 == 0 && h >= kh && w >= kw;
    int ay = valid ? 0 : rnd_in(0, kh - 1), ax = valid ? 0 : rnd_in(0, kw - 1);
    int oh = valid ? h - kh + 1 : h, ow = valid ? w - kw + 1 : w;
    bool u8 = t % 2 == 0;
    size_t n = (size_t)h * w * c, no = (size_t)oh * ow * c;
    uint8_t *pu = malloc(n);
    float *pf = malloc(n * sizeof(float));
    double *src = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
      pu[i] = (uint8_t)rnd();
      pf[i] = (float)(urand() * 10 - 5);
      src[i] = u8 ? pu[i] : pf[i];
    }
    float ky[7], kx[7], k[49];
    double kd[49], ks[49];
    for (int i = 0; i < kh; i++) ky[i] = (float)(urand() * 2 - 1);
    for (int j = 0; j < kw; j++) kx[j] = (float)(urand() * 2 - 1);
    for (int i = 0; i < kh * kw; i++) k[i] = (float)(urand() * 2 - 1), kd[i] = k[i];
    for (int i = 0; i < kh; i++)
      for (int j = 0; j < kw; j++) ks[i * kw + j] = (double)ky[i] * kx[j];
    double fill = urand() * 100;
    stk__image im = {u8 ? (void *)pu : (void *)pf, u8 ? STK_DTYPE_UINT8 : STK_DTYPE_FLOAT32, h, w,
                     c};
    stk__conv_geom g = {oh, ow, kh, kw, ay, ax, (stk__border)border, (float)fill};
    size_t need = stk__conv_scratch_size(&im, &g);
    assert_true(need > 0);
    void *scratch = malloc(need);
    float *got = malloc(no * sizeof(float));
    double *ref = malloc(no * sizeof(double));
    char what[128];
    snprintf(what, sizeof what, "case %d: %dx%dx%d, %dx%d kernel at (%d, %d), border %d%s", t, h, w,
             c, kh, kw, ay, ax, border, valid ? ", valid" : "");
    ref_corr(src, h, w, c, kd, kh, kw, ay, ax, border, fill, oh, ow, ref);
    TU_OK(stk__conv2d(&im, got, &g, k, false, scratch, need));
    check_f32(got, ref, no, 100, what);
    ref_corr(src, h, w, c, ks, kh, kw, ay, ax, border, fill, oh, ow, ref);
    TU_OK(stk__conv_sep(&im, got, &g, ky, kx, false, scratch, need));
    check_f32(got, ref, no, 100, what);
    /* accumulate adds onto what is there */
    TU_OK(stk__conv_sep(&im, got, &g, ky, kx, true, scratch, need));
    for (size_t i = 0; i < no; i++) ref[i] *= 2;
    check_f32(got, ref, no, 200, what);
    free(pu), free(pf), free(src), free(scratch), free(got), free(ref);
  }
  /* bad geometry */
  uint8_t px[4] = {0};
  stk__image im = {px, STK_DTYPE_UINT8, 2, 2, 1};
  float out[4], k[9] = {0};
  char scratch[4096];
  stk__conv_geom g = {2, 2, 3, 3, 3, 1, STK__BORDER_CLAMP, 0};
  assert_int_equal(stk__conv2d(&im, out, &g, k, false, scratch, sizeof scratch),
                   STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "anchor"));
  g.ay = 1, g.out_h = 0;
  assert_int_equal(stk__conv2d(&im, out, &g, k, false, scratch, sizeof scratch),
                   STK_ERR_INVALID_ARGUMENT);
}

static void test_windows_and_separability(void **state) {
  assert_int_equal(stk__gaussian_size(1.5), 11); /* 2 ceil(4.5) + 1 */
  assert_int_equal(stk__gaussian_size(0.3), 3);
  assert_true(fabs(stk__gaussian_sigma(7) - 1.4) < 1e-12); /* r = 3: 0.6 + 0.8 */
  assert_true(fabs(stk__gaussian_sigma(3) - 0.8) < 1e-12);
  float g[11];
  stk__gaussian_window(g, 11, 1.5);
  double sum = 0, norm = 0;
  for (int i = -5; i <= 5; i++) norm += exp(-i * i / (2 * 1.5 * 1.5));
  for (int i = 0; i < 11; i++) {
    sum += g[i];
    assert_true(fabs(g[i] - exp(-(i - 5) * (i - 5) / 4.5) / norm) < 1e-7);
    assert_true(g[i] == g[10 - i]);
  }
  assert_true(fabs(sum - 1) < 1e-6);
  float w[23];
  stk__binomial_window(w, 5);
  float b5[] = {1, 4, 6, 4, 1};
  assert_memory_equal(w, b5, sizeof b5);
  stk__binomial_window(w, 23); /* C(22, k) */
  double cnk = 1;
  for (int k = 0; k < 23; k++) {
    assert_true(w[k] == (float)cnk);
    cnk = cnk * (22 - k) / (k + 1);
  }
  stk__second_derivative_window(w, 3);
  float d3[] = {1, -2, 1};
  assert_memory_equal(w, d3, sizeof d3);
  stk__second_derivative_window(w, 5);
  float d5[] = {1, 0, -2, 0, 1};
  assert_memory_equal(w, d5, sizeof d5);
  stk__second_derivative_window(w, 7);
  float d7[] = {1, 2, -1, -4, -1, 2, 1};
  assert_memory_equal(w, d7, sizeof d7);
  /* separability */
  float k[15], ky[3], kx[5];
  float a[3] = {1, -2, 0.5f}, bb[5] = {0.25f, 1, 3, -1, 2};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) k[i * 5 + j] = a[i] * bb[j];
  assert_true(stk__kernel_separable(k, 3, 5, ky, kx));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) assert_true(fabsf(ky[i] * kx[j] - k[i * 5 + j]) < 1e-5f);
  float lap[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
  assert_false(stk__kernel_separable(lap, 3, 3, ky, kx));
  float zero[4] = {0};
  assert_false(stk__kernel_separable(zero, 2, 2, ky, kx));
}

/* ---------------------------------------------------------------------------------- */
/* Filter operators                                                                   */
/* ---------------------------------------------------------------------------------- */

/* Float64 separable Gaussian reference with reflect_101. */
static void ref_gauss(const img_t *im, double sy, int wy, double sx, int wx, double *out) {
  double ky[64], kx[64], k[64 * 64], s;
  s = 0;
  for (int i = 0; i < wy; i++) s += ky[i] = exp(-(i - wy / 2) * (i - wy / 2) / (2 * sy * sy));
  for (int i = 0; i < wy; i++) ky[i] /= s;
  s = 0;
  for (int i = 0; i < wx; i++) s += kx[i] = exp(-(i - wx / 2) * (i - wx / 2) / (2 * sx * sx));
  for (int i = 0; i < wx; i++) kx[i] /= s;
  for (int i = 0; i < wy; i++)
    for (int j = 0; j < wx; j++) k[i * wx + j] = ky[i] * kx[j];
  double *src = u8_to_double(im->p, (size_t)im->h * im->w * im->c);
  ref_corr(src, im->h, im->w, im->c, k, wy, wx, wy / 2, wx / 2, STK__BORDER_REFLECT_101, 0, im->h,
           im->w, out);
  free(src);
}

static void test_gaussian_blur_op(void **state) {
  img_t full = load_photo("data/photos/chelsea.png");
  /* a 120 x 97 crop keeps the naive reference quick */
  img_t im = {malloc(120 * 97 * 3), 120, 97, 3};
  for (int y = 0; y < 120; y++)
    memcpy(im.p + (size_t)y * 97 * 3, full.p + ((size_t)(y + 90) * full.w + 150) * 3, 97 * 3);
  stk_pipeline *p = make_pipe(2);
  add_source(p, "img", "HWC");
  stk_op *op = new_op("gaussian_blur", "img", "g1");
  TU_OK(stk_op_set_floats(op, "sigma", (double[]){1.5}, 1));
  add(p, op);
  op = new_op("gaussian_blur", "img", "g2"); /* per axis, float output */
  TU_OK(stk_op_set_floats(op, "sigma", (double[]){2.0, 0.8}, 2));
  TU_OK(stk_op_set_string(op, "dtype", "float32"));
  add(p, op);
  op = new_op("gaussian_blur", "img", "g3"); /* window only: sigma = (2 - 1) 0.3 + 0.8 */
  TU_OK(stk_op_set_ints(op, "window_size", (int64_t[]){5}, 1));
  add(p, op);
  op = new_op("random.uniform", NULL, "sig");
  TU_OK(stk_op_set_floats(op, "range", (double[]){0.5, 3.0}, 2));
  add(p, op);
  op = new_op("gaussian_blur", "img", "g4"); /* sigma per sample */
  TU_OK(stk_op_set_arg_input(op, "sigma", "sig"));
  add(p, op);
  const char *outs[] = {"g1", "g2", "g3", "g4", "sig"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 5));
  TU_OK(stk_pipeline_build(p));
  feed_image(p, "img", &im, 2);
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  size_t n = (size_t)im.h * im.w * 3;
  double *ref = malloc(n * sizeof(double));
  ref_gauss(&im, 1.5, 11, 1.5, 11, ref);
  stk_tensor_desc d = sample(b, 0, 1);
  assert_int_equal(d.dtype, STK_DTYPE_UINT8);
  assert_string_equal(d.layout, "HWC");
  check_u8(d.data, ref, n, "sigma 1.5");
  ref_gauss(&im, 2.0, 13, 0.8, 7, ref);
  d = sample(b, 1, 0);
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  check_f32(d.data, ref, n, 255, "sigma [2, 0.8]");
  ref_gauss(&im, 1.1, 5, 1.1, 5, ref);
  check_u8(sample(b, 2, 0).data, ref, n, "window 5");
  for (size_t i = 0; i < 2; i++) {
    double sig = *(float *)sample(b, 4, i).data;
    int win = 2 * (int)ceil(3 * sig) + 1;
    ref_gauss(&im, sig, win, sig, win, ref);
    check_u8(sample(b, 3, i).data, ref, n, "per-sample sigma");
  }
  free(ref);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(im.p), free(full.p);
}

static void test_laplacian_op(void **state) {
  img_t im = {malloc(40 * 53 * 3), 40, 53, 3};
  for (size_t i = 0; i < 40 * 53 * 3; i++) im.p[i] = (uint8_t)rnd();
  stk_pipeline *p = make_pipe(1);
  add_source(p, "img", "HWC");
  stk_op *op = new_op("laplacian", "img", "l3");
  TU_OK(stk_op_set_string(op, "dtype", "float32"));
  add(p, op);
  op = new_op("laplacian", "img", "l3s1");
  TU_OK(stk_op_set_ints(op, "smoothing_size", (int64_t[]){1}, 1));
  TU_OK(stk_op_set_string(op, "dtype", "float32"));
  add(p, op);
  op = new_op("laplacian", "img", "l5n");
  TU_OK(stk_op_set_ints(op, "window_size", (int64_t[]){5}, 1));
  TU_OK(stk_op_set_bool(op, "normalized_kernel", 1));
  TU_OK(stk_op_set_string(op, "dtype", "float32"));
  add(p, op);
  op = new_op("laplacian", "img", "lmix"); /* per-axis windows and scales */
  TU_OK(stk_op_set_ints(op, "window_size", (int64_t[]){3, 5}, 2));
  TU_OK(stk_op_set_ints(op, "smoothing_size", (int64_t[]){5, 1}, 2));
  TU_OK(stk_op_set_floats(op, "scale", (double[]){2.0, 0.5}, 2));
  TU_OK(stk_op_set_string(op, "dtype", "float32"));
  add(p, op);
  op = new_op("laplacian", "img", "lu8"); /* uint8 output saturates */
  add(p, op);
  const char *outs[] = {"l3", "l3s1", "l5n", "lmix", "lu8"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 5));
  TU_OK(stk_pipeline_build(p));
  feed_image(p, "img", &im, 1);
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  size_t n = (size_t)im.h * im.w * 3;
  double *src = u8_to_double(im.p, n), *ref = malloc(n * sizeof(double));
  /* OpenCV's Laplacian kernels: ksize 3 (Sobel-based) and the 5-point stencil */
  double k3[9] = {2, 0, 2, 0, -8, 0, 2, 0, 2}, k1[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
  ref_corr(src, im.h, im.w, 3, k3, 3, 3, 1, 1, STK__BORDER_REFLECT_101, 0, im.h, im.w, ref);
  check_f32(sample(b, 0, 0).data, ref, n, 255, "window 3");
  check_u8(sample(b, 4, 0).data, ref, n, "window 3, uint8");
  ref_corr(src, im.h, im.w, 3, k1, 3, 3, 1, 1, STK__BORDER_REFLECT_101, 0, im.h, im.w, ref);
  check_f32(sample(b, 1, 0).data, ref, n, 255, "smoothing 1");
  /* window 5, normalised by 2^-(5 + 5 - 4): d2 = [1 0 -2 0 1], smoothing C(4, k) */
  double d5[5] = {1, 0, -2, 0, 1}, s5[5] = {1, 4, 6, 4, 1}, k5[25];
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) k5[i * 5 + j] = (d5[i] * s5[j] + s5[i] * d5[j]) / 64.0;
  ref_corr(src, im.h, im.w, 3, k5, 5, 5, 2, 2, STK__BORDER_REFLECT_101, 0, im.h, im.w, ref);
  check_f32(sample(b, 2, 0).data, ref, n, 255, "window 5 normalised");
  /* d2/dy2: [1 -2 1] along y, smoothing 1 along x (smoothing_size[1]), scale 2;
   * d2/dx2: [1 0 -2 0 1] along x, smoothing 5 along y (smoothing_size[0]), scale 0.5 */
  double km[25] = {0};
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      double dy = (i >= 1 && i <= 3 && j == 2) ? 2.0 * (i == 2 ? -2 : 1) : 0;
      km[i * 5 + j] = dy + 0.5 * s5[i] * d5[j];
    }
  ref_corr(src, im.h, im.w, 3, km, 5, 5, 2, 2, STK__BORDER_REFLECT_101, 0, im.h, im.w, ref);
  check_f32(sample(b, 3, 0).data, ref, n, 255, "per-axis windows");
  free(src), free(ref);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(im.p);
}

static void test_filter_op(void **state) {
  enum { B = 3 };
  img_t im = {malloc(23 * 31 * 3), 23, 31, 3};
  for (size_t i = 0; i < 23 * 31 * 3; i++) im.p[i] = (uint8_t)rnd();
  size_t n = (size_t)im.h * im.w * 3;
  double *src = u8_to_double(im.p, n), *ref = malloc(n * sizeof(double));
  static const char *borders[] = {"reflect_101", "reflect_1001", "wrap", "clamp", "constant"};
  for (int bi = 0; bi < 5; bi++) {
    stk_pipeline *p = make_pipe(B);
    add_source(p, "img", "HWC");
    add_source(p, "k", NULL);
    stk_op *op = new_op("filter", "img", "f_in"); /* kernel per sample from input 1 */
    TU_OK(stk_op_add_input(op, "k"));
    TU_OK(stk_op_set_string(op, "border", borders[bi]));
    TU_OK(stk_op_set_float(op, "fill_value", 40));
    TU_OK(stk_op_set_ints(op, "anchor", (int64_t[]){0, 3}, 2));
    TU_OK(stk_op_set_string(op, "dtype", "float32"));
    add(p, op);
    op = new_op("experimental.filter", "img", "f_sep"); /* separable 5x3 as an argument */
    double sep[15];
    double a[5] = {1.13, 2.07, -2.91, 0.53, 0.97}, bb[3] = {0.213, 0.318, -0.107};
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 3; j++) sep[i * 3 + j] = a[i] * bb[j];
    TU_OK(stk_op_set_floats(op, "kernel", sep, 15));
    TU_OK(stk_op_set_ints(op, "kernel_shape", (int64_t[]){5, 3}, 2));
    TU_OK(stk_op_set_string(op, "border", borders[bi]));
    add(p, op);
    op = new_op("filter", "img", "f_valid");
    TU_OK(stk_op_add_input(op, "k"));
    TU_OK(stk_op_set_string(op, "mode", "valid"));
    add(p, op);
    const char *outs[] = {"f_in", "f_sep", "f_valid"};
    TU_OK(stk_pipeline_set_outputs(p, outs, 3));
    TU_OK(stk_pipeline_build(p));
    feed_image(p, "img", &im, B);
    float kern[B][3][4];
    stk_tensor_desc kd[B];
    for (int s = 0; s < B; s++) {
      for (int i = 0; i < 12; i++) kern[s][i / 4][i % 4] = (float)(urand() * 2 - 1);
      kd[s] = desc(kern[s], STK_DTYPE_FLOAT32, 2, (int64_t[]){3, 4});
    }
    TU_OK(stk_pipeline_feed(p, "k", kd, B));
    stk_batch *b;
    TU_OK(stk_pipeline_run(p, &b));
    char what[64];
    for (int s = 0; s < B; s++) {
      double k[12];
      for (int i = 0; i < 12; i++) k[i] = kern[s][i / 4][i % 4];
      ref_corr(src, im.h, im.w, 3, k, 3, 4, 0, 3, bi, 40, im.h, im.w, ref);
      snprintf(what, sizeof what, "%s, sample %d", borders[bi], s);
      check_f32(sample(b, 0, (size_t)s).data, ref, n, 255, what);
      ref_corr(src, im.h, im.w, 3, k, 3, 4, 0, 0, bi, 0, im.h - 2, im.w - 3, ref);
      stk_tensor_desc v = sample(b, 2, (size_t)s);
      assert_int_equal(v.shape[0], im.h - 2);
      assert_int_equal(v.shape[1], im.w - 3);
      check_u8(v.data, ref, (size_t)(im.h - 2) * (im.w - 3) * 3, "valid");
    }
    ref_corr(src, im.h, im.w, 3, sep, 5, 3, 2, 1, bi, 0, im.h, im.w, ref);
    snprintf(what, sizeof what, "separable, %s", borders[bi]);
    check_u8(sample(b, 1, 0).data, ref, n, what);
    stk_batch_release(b);
    stk_pipeline_destroy(p);
  }
  free(src), free(ref), free(im.p);
}

/* ---------------------------------------------------------------------------------- */
/* Type promotion                                                                     */
/* ---------------------------------------------------------------------------------- */

/* (category, bits): 0 bool (1 bit), 1 unsigned, 2 signed, 3 float. */
static void cat_bits(stk_dtype t, int *cat, int *bits) {
  *bits = (int)stk_dtype_size(t) * 8;
  switch (t) {
    case STK_DTYPE_BOOL:
      *cat = 0, *bits = 1;
      break;
    case STK_DTYPE_UINT8:
    case STK_DTYPE_UINT16:
    case STK_DTYPE_UINT32:
    case STK_DTYPE_UINT64:
      *cat = 1;
      break;
    case STK_DTYPE_INT8:
    case STK_DTYPE_INT16:
    case STK_DTYPE_INT32:
    case STK_DTYPE_INT64:
      *cat = 2;
      break;
    default:
      *cat = 3;
      break;
  }
}

static stk_dtype from_cat_bits(int cat, int bits) {
  for (int t = 0; t < STK_DTYPE_COUNT; t++) {
    int c, b;
    cat_bits((stk_dtype)t, &c, &b);
    if (c == cat && b == bits) return (stk_dtype)t;
  }
  return STK_DTYPE_COUNT;
}

/* DALI's table, row by row. */
static stk_dtype table_promote(stk_dtype a, stk_dtype b) {
  int ca, ba, cb, bb;
  cat_bits(a, &ca, &ba);
  cat_bits(b, &cb, &bb);
  if (a == b) return a;                                               /* T T -> T */
  if (ca == 3 && cb == 3) return from_cat_bits(3, ba > bb ? ba : bb); /* floatX floatY */
  if (ca == 3) return a;                                              /* floatX T */
  if (cb == 3) return b;
  if (ca == 0) ca = 1; /* bool is uint1 */
  if (cb == 0) cb = 1;
  if (ca == cb) return ba > bb ? a : b; /* same signedness: wider (uint1 never wins) */
  int xs = ca == 2 ? ba : bb, yu = ca == 2 ? bb : ba; /* intX uintY */
  if (xs > yu) return ca == 2 ? a : b;
  int z = 2 * yu < 8 ? 8 : 2 * yu;
  return from_cat_bits(2, z > 64 ? 64 : z);
}

static void test_type_promotion_table(void **state) {
  for (int a = 0; a < STK_DTYPE_COUNT; a++)
    for (int b = 0; b < STK_DTYPE_COUNT; b++) {
      stk_dtype got = stk__type_promote((stk_dtype)a, (stk_dtype)b);
      stk_dtype want = table_promote((stk_dtype)a, (stk_dtype)b);
      if (got != want)
        fail_msg("%s op %s -> %s, table says %s", stk_dtype_name(a), stk_dtype_name(b),
                 stk_dtype_name(got), stk_dtype_name(want));
      assert_int_equal(got, stk__type_promote((stk_dtype)b, (stk_dtype)a)); /* commutative */
    }
  /* rows spelled out */
  static const stk_dtype rows[][3] = {
      {STK_DTYPE_UINT8, STK_DTYPE_UINT8, STK_DTYPE_UINT8},
      {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT32},
      {STK_DTYPE_INT64, STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT16},
      {STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT64, STK_DTYPE_FLOAT64},
      {STK_DTYPE_INT8, STK_DTYPE_INT32, STK_DTYPE_INT32},
      {STK_DTYPE_UINT16, STK_DTYPE_UINT64, STK_DTYPE_UINT64},
      {STK_DTYPE_INT8, STK_DTYPE_UINT8, STK_DTYPE_INT16},
      {STK_DTYPE_INT16, STK_DTYPE_UINT8, STK_DTYPE_INT16},
      {STK_DTYPE_INT32, STK_DTYPE_UINT32, STK_DTYPE_INT64},
      {STK_DTYPE_INT8, STK_DTYPE_UINT64, STK_DTYPE_INT64},
      {STK_DTYPE_BOOL, STK_DTYPE_INT8, STK_DTYPE_INT8},
      {STK_DTYPE_BOOL, STK_DTYPE_UINT16, STK_DTYPE_UINT16},
      {STK_DTYPE_BOOL, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT32},
      {STK_DTYPE_BOOL, STK_DTYPE_BOOL, STK_DTYPE_BOOL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    assert_int_equal(stk__type_promote(rows[i][0], rows[i][1]), rows[i][2]);
  /* result types per operation */
  stk_dtype t;
  assert_true(stk__binop_type(STK__BIN_DIV, STK_DTYPE_UINT8, STK_DTYPE_UINT8, &t) &&
              t == STK_DTYPE_FLOAT32);
  assert_true(stk__binop_type(STK__BIN_DIV, STK_DTYPE_INT32, STK_DTYPE_FLOAT16, &t) &&
              t == STK_DTYPE_FLOAT16);
  assert_true(stk__binop_type(STK__BIN_FLOORDIV, STK_DTYPE_INT32, STK_DTYPE_UINT8, &t) &&
              t == STK_DTYPE_INT32);
  assert_true(stk__binop_type(STK__BIN_FPOW, STK_DTYPE_INT32, STK_DTYPE_INT32, &t) &&
              t == STK_DTYPE_FLOAT32);
  assert_true(stk__binop_type(STK__BIN_POW, STK_DTYPE_INT32, STK_DTYPE_INT32, &t) &&
              t == STK_DTYPE_INT32);
  assert_true(stk__binop_type(STK__BIN_LT, STK_DTYPE_FLOAT64, STK_DTYPE_INT8, &t) &&
              t == STK_DTYPE_BOOL);
  assert_true(stk__binop_type(STK__BIN_MUL, STK_DTYPE_UINT8, STK_DTYPE_FLOAT32, &t) &&
              t == STK_DTYPE_FLOAT32);
  assert_true(stk__binop_type(STK__BIN_AND, STK_DTYPE_BOOL, STK_DTYPE_BOOL, &t) &&
              t == STK_DTYPE_BOOL);
  assert_true(stk__binop_type(STK__BIN_XOR, STK_DTYPE_UINT8, STK_DTYPE_INT16, &t) &&
              t == STK_DTYPE_INT16);
  assert_false(stk__binop_type(STK__BIN_OR, STK_DTYPE_FLOAT32, STK_DTYPE_INT32, &t));
  assert_true(stk__unop_type(STK__UN_SQRT, STK_DTYPE_UINT8, &t) && t == STK_DTYPE_FLOAT32);
  assert_true(stk__unop_type(STK__UN_SQRT, STK_DTYPE_FLOAT64, &t) && t == STK_DTYPE_FLOAT64);
  assert_true(stk__unop_type(STK__UN_NOT, STK_DTYPE_FLOAT32, &t) && t == STK_DTYPE_BOOL);
  assert_true(stk__unop_type(STK__UN_ABS, STK_DTYPE_INT8, &t) && t == STK_DTYPE_INT8);
  assert_false(stk__unop_type(STK__UN_NEG, STK_DTYPE_BOOL, &t));
}

/* ---------------------------------------------------------------------------------- */
/* Elementwise values and broadcasting                                                */
/* ---------------------------------------------------------------------------------- */

static stk__operand opnd(const void *data, stk_dtype t, int ndim, const int64_t *shape) {
  return (stk__operand){data, t, ndim, shape};
}

/* Runs a binary op through the kernel with its own result type and shape. */
static stk_dtype run_bin(stk__binop op, stk__operand a, stk__operand b, void *out, int *ndim,
                         int64_t *shape) {
  stk_dtype t;
  assert_true(stk__binop_type(op, a.dtype, b.dtype, &t));
  assert_true(stk__broadcast_shape(&a, &b, ndim, shape));
  stk__binary(op, &a, &b, out, t, *ndim, shape);
  return t;
}

static void test_binary_values(void **state) {
  int nd;
  int64_t shp[STK_MAX_NDIM], s4[1] = {4};
  uint8_t u1[4] = {200, 3, 255, 0}, u2[4] = {100, 7, 1, 0};
  uint8_t ou[4];
  assert_int_equal(run_bin(STK__BIN_ADD, opnd(u1, STK_DTYPE_UINT8, 1, s4),
                           opnd(u2, STK_DTYPE_UINT8, 1, s4), ou, &nd, shp),
                   STK_DTYPE_UINT8);
  uint8_t wrap[4] = {44, 10, 0, 0}; /* wraps like C */
  assert_memory_equal(ou, wrap, 4);
  run_bin(STK__BIN_SUB, opnd(u2, STK_DTYPE_UINT8, 1, s4), opnd(u1, STK_DTYPE_UINT8, 1, s4), ou, &nd,
          shp);
  assert_int_equal(ou[0], (uint8_t)(100 - 200));
  float of[4];
  assert_int_equal(run_bin(STK__BIN_DIV, opnd(u2, STK_DTYPE_UINT8, 1, s4),
                           opnd(u1, STK_DTYPE_UINT8, 1, s4), of, &nd, shp),
                   STK_DTYPE_FLOAT32);
  assert_true(of[0] == 0.5f && of[1] == (float)(7.0 / 3.0) && of[2] == 1.0f / 255.0f &&
              isnan(of[3]));
  /* signed floor division and modulo round toward minus infinity; x / 0 gives 0 */
  int8_t a8[6] = {-7, 7, -7, 7, -128, 5}, b8[6] = {2, -2, -2, 0, -1, 0};
  int64_t s6[1] = {6};
  int8_t o8[6];
  run_bin(STK__BIN_FLOORDIV, opnd(a8, STK_DTYPE_INT8, 1, s6), opnd(b8, STK_DTYPE_INT8, 1, s6), o8,
          &nd, shp);
  int8_t fd[6] = {-4, -4, 3, 0, -128, 0};
  assert_memory_equal(o8, fd, 6);
  run_bin(STK__BIN_MOD, opnd(a8, STK_DTYPE_INT8, 1, s6), opnd(b8, STK_DTYPE_INT8, 1, s6), o8, &nd,
          shp);
  int8_t md[6] = {1, -1, -1, 0, 0, 0};
  assert_memory_equal(o8, md, 6);
  /* int8 with uint8 promotes to int16: no wrap */
  int16_t o16[4];
  int8_t n8[4] = {-100, 100, -1, 127};
  assert_int_equal(run_bin(STK__BIN_MUL, opnd(n8, STK_DTYPE_INT8, 1, s4),
                           opnd(u1, STK_DTYPE_UINT8, 1, s4), o16, &nd, shp),
                   STK_DTYPE_INT16);
  assert_int_equal(o16[0], -20000);
  assert_int_equal(o16[1], 300);
  assert_int_equal(o16[2], -255);
  assert_int_equal(o16[3], 0);
  /* integer pow, min / max, comparisons, bitwise */
  int32_t base[4] = {2, -3, 5, -1}, ex[4] = {10, 3, -1, -3}, o32[4];
  run_bin(STK__BIN_POW, opnd(base, STK_DTYPE_INT32, 1, s4), opnd(ex, STK_DTYPE_INT32, 1, s4), o32,
          &nd, shp);
  assert_int_equal(o32[0], 1024);
  assert_int_equal(o32[1], -27);
  assert_int_equal(o32[2], 0);
  assert_int_equal(o32[3], -1);
  float fa[4] = {1.5f, -2, NAN, 3}, fb[4] = {1.5f, 1, 0, -7.25f};
  uint8_t ob[4];
  assert_int_equal(run_bin(STK__BIN_LE, opnd(fa, STK_DTYPE_FLOAT32, 1, s4),
                           opnd(fb, STK_DTYPE_FLOAT32, 1, s4), ob, &nd, shp),
                   STK_DTYPE_BOOL);
  uint8_t le[4] = {1, 1, 0, 0};
  assert_memory_equal(ob, le, 4);
  run_bin(STK__BIN_MAX, opnd(fa, STK_DTYPE_FLOAT32, 1, s4), opnd(fb, STK_DTYPE_FLOAT32, 1, s4), of,
          &nd, shp);
  assert_true(of[0] == 1.5f && of[1] == 1 && of[3] == 3);
  run_bin(STK__BIN_MOD, opnd(fa, STK_DTYPE_FLOAT32, 1, s4), opnd(fb, STK_DTYPE_FLOAT32, 1, s4), of,
          &nd, shp);
  assert_true(of[0] == 0 && of[1] == 0 &&
              of[3] == (float)(3 - 7.25)); /* Python: 3 % -7.25 = -4.25 */
  uint8_t t1[4] = {1, 1, 0, 0}, t2[4] = {1, 0, 1, 0};
  run_bin(STK__BIN_XOR, opnd(t1, STK_DTYPE_BOOL, 1, s4), opnd(t2, STK_DTYPE_BOOL, 1, s4), ob, &nd,
          shp);
  uint8_t x[4] = {0, 1, 1, 0};
  assert_memory_equal(ob, x, 4);
  run_bin(STK__BIN_AND, opnd(u1, STK_DTYPE_UINT8, 1, s4), opnd(u2, STK_DTYPE_UINT8, 1, s4), ou, &nd,
          shp);
  assert_int_equal(ou[0], 200 & 100);
  assert_int_equal(ou[1], 3 & 7);
  /* uint8 image times a float32 scalar: float32, exact products */
  float half = 0.5f;
  run_bin(STK__BIN_MUL, opnd(u1, STK_DTYPE_UINT8, 1, s4), opnd(&half, STK_DTYPE_FLOAT32, 0, s4), of,
          &nd, shp);
  assert_int_equal(nd, 1);
  assert_true(of[0] == 100 && of[1] == 1.5f && of[2] == 127.5f && of[3] == 0);
}

static void test_broadcasting(void **state) {
  /* [3] against [2, 2, 3] (per channel), both orders */
  uint8_t img[12];
  for (int i = 0; i < 12; i++) img[i] = (uint8_t)(i * 20);
  float ch[3] = {1.25f, 0.75f, -1};
  int64_t simg[3] = {2, 2, 3}, sch[1] = {3}, shp[STK_MAX_NDIM];
  int nd;
  float out[1024];
  run_bin(STK__BIN_MUL, opnd(img, STK_DTYPE_UINT8, 3, simg), opnd(ch, STK_DTYPE_FLOAT32, 1, sch),
          out, &nd, shp);
  assert_int_equal(nd, 3);
  for (int i = 0; i < 12; i++) assert_true(out[i] == img[i] * ch[i % 3]);
  run_bin(STK__BIN_SUB, opnd(ch, STK_DTYPE_FLOAT32, 1, sch), opnd(img, STK_DTYPE_UINT8, 3, simg),
          out, &nd, shp);
  for (int i = 0; i < 12; i++) assert_true(out[i] == ch[i % 3] - img[i]);
  /* [2, 1, 3] against [4, 1]: general numpy broadcast to [2, 4, 3] */
  int32_t a[6], b[4];
  for (int i = 0; i < 6; i++) a[i] = i * 10;
  for (int i = 0; i < 4; i++) b[i] = i;
  int64_t sa[3] = {2, 1, 3}, sb[2] = {4, 1};
  int32_t o[24];
  run_bin(STK__BIN_ADD, opnd(a, STK_DTYPE_INT32, 3, sa), opnd(b, STK_DTYPE_INT32, 2, sb), o, &nd,
          shp);
  assert_int_equal(nd, 3);
  assert_int_equal(shp[0], 2);
  assert_int_equal(shp[1], 4);
  assert_int_equal(shp[2], 3);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 3; k++) assert_int_equal(o[(i * 4 + j) * 3 + k], a[i * 3 + k] + b[j]);
  /* long periodic runs (period above half a block) and a [1, 1] scalar-like operand */
  enum { H = 7, W = 300 };
  static float big[H * W], row[W], res[H * W];
  for (int i = 0; i < H * W; i++) big[i] = (float)i;
  for (int i = 0; i < W; i++) row[i] = (float)(i % 7);
  int64_t sbig[2] = {H, W}, srow[2] = {1, W}, s11[2] = {1, 1};
  run_bin(STK__BIN_SUB, opnd(big, STK_DTYPE_FLOAT32, 2, sbig),
          opnd(row, STK_DTYPE_FLOAT32, 2, srow), res, &nd, shp);
  for (int i = 0; i < H * W; i++) assert_true(res[i] == big[i] - row[i % W]);
  float two = 2;
  run_bin(STK__BIN_MUL, opnd(&two, STK_DTYPE_FLOAT32, 2, s11),
          opnd(big, STK_DTYPE_FLOAT32, 2, sbig), res, &nd, shp);
  assert_int_equal(nd, 2);
  for (int i = 0; i < H * W; i++) assert_true(res[i] == 2 * big[i]);
  /* shapes that do not broadcast */
  int64_t s2[1] = {2};
  stk__operand x = opnd(img, STK_DTYPE_UINT8, 3, simg), y = opnd(ch, STK_DTYPE_FLOAT32, 1, s2);
  assert_false(stk__broadcast_shape(&x, &y, &nd, shp));
}

static void test_unary_and_clamp(void **state) {
  int8_t v[5] = {-128, -5, 0, 7, 127}, o8[5];
  stk__unary(STK__UN_NEG, v, STK_DTYPE_INT8, o8, STK_DTYPE_INT8, 5);
  int8_t neg[5] = {-128, 5, 0, -7, -127}; /* -(-128) wraps */
  assert_memory_equal(o8, neg, 5);
  stk__unary(STK__UN_ABS, v, STK_DTYPE_INT8, o8, STK_DTYPE_INT8, 5);
  assert_int_equal(o8[1], 5);
  uint8_t ob[5];
  stk__unary(STK__UN_NOT, v, STK_DTYPE_INT8, ob, STK_DTYPE_BOOL, 5);
  uint8_t nt[5] = {0, 0, 1, 0, 0};
  assert_memory_equal(ob, nt, 5);
  uint16_t u[3] = {0, 4, 65535};
  float of[5];
  stk__unary(STK__UN_SQRT, u, STK_DTYPE_UINT16, of, STK_DTYPE_FLOAT32, 3);
  assert_true(of[0] == 0 && of[1] == 2 && of[2] == (float)sqrt(65535.0));
  float f[5] = {-2.5f, -0.5f, 0.5f, 2.5f, 1e30f};
  stk__unary(STK__UN_ROUND, f, STK_DTYPE_FLOAT32, of, STK_DTYPE_FLOAT32, 5);
  assert_true(of[0] == -3 && of[1] == -1 && of[2] == 1 && of[3] == 3); /* half away from zero */
  stk__unary(STK__UN_EXP, f, STK_DTYPE_FLOAT32, of, STK_DTYPE_FLOAT32, 4);
  for (int i = 0; i < 4; i++) assert_true(of[i] == (float)exp((double)f[i]));
  /* clamp: bounds rounded inward and saturated for integers; NaN stays */
  uint8_t img[6] = {0, 3, 50, 100, 101, 255}, oc[6];
  stk__clamp(img, oc, STK_DTYPE_UINT8, 6, 2.5, 100.7);
  uint8_t cl[6] = {3, 3, 50, 100, 100, 100};
  assert_memory_equal(oc, cl, 6);
  stk__clamp(v, o8, STK_DTYPE_INT8, 5, 200, INFINITY);
  for (int i = 0; i < 5; i++) assert_int_equal(o8[i], 127);
  stk__clamp(v, o8, STK_DTYPE_INT8, 5, -INFINITY, -300);
  for (int i = 0; i < 5; i++) assert_int_equal(o8[i], -128);
  float fn[3] = {NAN, -4, 9};
  stk__clamp(fn, of, STK_DTYPE_FLOAT32, 3, -1, 1);
  assert_true(isnan(of[0]) && of[1] == -1 && of[2] == 1);
  stk__clamp(fn + 1, of, STK_DTYPE_FLOAT32, 2, 5, 2); /* lo > hi: hi, as numpy.clip */
  assert_true(of[0] == 2 && of[1] == 2);
  int64_t big[2] = {INT64_MAX, INT64_MIN + 1}, ob64[2];
  stk__clamp(big, ob64, STK_DTYPE_INT64, 2, -INFINITY, INFINITY); /* exact for int64 */
  assert_true(ob64[0] == INT64_MAX && ob64[1] == INT64_MIN + 1);
}

/* `fn.cast_like(0.5 * image + 0.5 * edges, image)`, a per-sample scalar, a per-channel
 * vector input, a comparison, and clamp, through a pipeline. */
static void test_expression_pipeline(void **state) {
  enum { B = 3 };
  img_t im = load_photo("data/photos/chelsea.png");
  stk_pipeline *p = make_pipe(B);
  add_source(p, "img", "HWC");
  add_source(p, "vec", NULL);
  stk_op *op = new_op("gaussian_blur", "img", "edges");
  TU_OK(stk_op_set_floats(op, "sigma", (double[]){2}, 1));
  add(p, op);
  op = new_op("math.binary", "img", "a");
  TU_OK(stk_op_set_string(op, "op", "mul"));
  TU_OK(stk_op_set_float(op, "scalar", 0.5));
  TU_OK(stk_op_set_string(op, "scalar_side", "left"));
  add(p, op);
  op = new_op("math.binary", "edges", "b");
  TU_OK(stk_op_set_string(op, "op", "mul"));
  TU_OK(stk_op_set_float(op, "scalar", 0.5));
  add(p, op);
  op = new_op("math.binary", "a", "sum");
  TU_OK(stk_op_add_input(op, "b"));
  TU_OK(stk_op_set_string(op, "op", "add"));
  add(p, op);
  op = new_op("cast_like", "sum", "blend");
  TU_OK(stk_op_add_input(op, "img"));
  add(p, op);
  op = new_op("random.uniform", NULL, "k");
  TU_OK(stk_op_set_floats(op, "range", (double[]){0.5, 1.5}, 2));
  add(p, op);
  op = new_op("math.binary", "img", "scaled"); /* image * k, k per sample */
  TU_OK(stk_op_set_string(op, "op", "mul"));
  TU_OK(stk_op_set_arg_input(op, "scalar", "k"));
  add(p, op);
  op = new_op("math.binary", "img", "tinted"); /* image * [r, g, b] per sample */
  TU_OK(stk_op_add_input(op, "vec"));
  TU_OK(stk_op_set_string(op, "op", "mul"));
  add(p, op);
  op = new_op("math.binary", "img", "bright"); /* image > 128 with an int32 constant */
  TU_OK(stk_op_set_string(op, "op", "gt"));
  TU_OK(stk_op_set_float(op, "scalar", 128));
  TU_OK(stk_op_set_string(op, "scalar_dtype", "int32"));
  add(p, op);
  op = new_op("math.clamp", "scaled", "clamped");
  TU_OK(stk_op_set_float(op, "lo", 20));
  TU_OK(stk_op_set_arg_input(op, "hi", "k")); /* a per-sample bound, for the plumbing */
  add(p, op);
  const char *outs[] = {"blend", "edges", "scaled", "k", "tinted", "bright", "clamped"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 7));
  TU_OK(stk_pipeline_build(p));
  feed_image(p, "img", &im, B);
  float vec[B][3];
  stk_tensor_desc vd[B];
  for (int s = 0; s < B; s++) {
    for (int c = 0; c < 3; c++) vec[s][c] = (float)(0.5 + s + 0.25 * c);
    vd[s] = desc(vec[s], STK_DTYPE_FLOAT32, 1, (int64_t[]){3});
  }
  TU_OK(stk_pipeline_feed(p, "vec", vd, B));
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  size_t n = (size_t)im.h * im.w * 3;
  for (size_t s = 0; s < B; s++) {
    stk_tensor_desc bl = sample(b, 0, s), ed = sample(b, 1, s), sc = sample(b, 2, s);
    stk_tensor_desc tn = sample(b, 4, s), br = sample(b, 5, s), cl = sample(b, 6, s);
    assert_int_equal(bl.dtype, STK_DTYPE_UINT8);
    assert_string_equal(bl.layout, "HWC");
    assert_int_equal(sc.dtype, STK_DTYPE_FLOAT32);
    assert_int_equal(tn.dtype, STK_DTYPE_FLOAT32);
    assert_string_equal(tn.layout, "HWC");
    assert_int_equal(br.dtype, STK_DTYPE_BOOL);
    assert_int_equal(cl.dtype, STK_DTYPE_FLOAT32);
    float k = *(float *)sample(b, 3, s).data;
    for (size_t i = 0; i < n; i++) {
      double want = 0.5 * im.p[i] + 0.5 * ((uint8_t *)ed.data)[i];
      assert_int_equal(((uint8_t *)bl.data)[i], (uint8_t)floor(want + 0.5));
      float kv = (float)((double)im.p[i] * (double)k);
      assert_true(((float *)sc.data)[i] == kv);
      assert_true(((float *)tn.data)[i] == (float)(im.p[i] * (double)vec[s][i % 3]));
      assert_int_equal(((uint8_t *)br.data)[i], im.p[i] > 128);
      float c = kv < 20 ? 20 : kv;
      assert_true(((float *)cl.data)[i] == (c > k ? k : c));
    }
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(im.p);
}

static void test_one_hot_and_cast_like(void **state) {
  stk_pipeline *p = make_pipe(2);
  add_source(p, "lab", NULL);
  add_source(p, "grid", "HW");
  add_source(p, "f", NULL);
  add_source(p, "like", NULL);
  stk_op *op = new_op("one_hot", "lab", "oh");
  TU_OK(stk_op_set_int(op, "num_classes", 5));
  add(p, op);
  op = new_op("one_hot", "grid", "oh2");
  TU_OK(stk_op_set_int(op, "num_classes", 3));
  TU_OK(stk_op_set_int(op, "axis", 0));
  TU_OK(stk_op_set_string(op, "axis_name", "K"));
  TU_OK(stk_op_set_float(op, "on_value", 7));
  TU_OK(stk_op_set_float(op, "off_value", -1));
  TU_OK(stk_op_set_string(op, "dtype", "int8"));
  add(p, op);
  op = new_op("cast_like", "f", "cl");
  TU_OK(stk_op_add_input(op, "like"));
  add(p, op);
  const char *outs[] = {"oh", "oh2", "cl"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 3));
  TU_OK(stk_pipeline_build(p));
  int32_t labels[2] = {3, 9}; /* 9 is out of range: all off */
  stk_tensor_desc ld[2] = {desc(&labels[0], STK_DTYPE_INT32, 1, (int64_t[]){1}),
                           desc(&labels[1], STK_DTYPE_INT32, 1, (int64_t[]){1})};
  TU_OK(stk_pipeline_feed(p, "lab", ld, 2));
  float grid[2][2][3] = {{{0, 1, 2}, {2.9f, -1, 1}}, {{1, 1, 1}, {0, 0, 0}}};
  stk_tensor_desc gd[2] = {desc(grid[0], STK_DTYPE_FLOAT32, 2, (int64_t[]){2, 3}),
                           desc(grid[1], STK_DTYPE_FLOAT32, 2, (int64_t[]){2, 3})};
  TU_OK(stk_pipeline_feed(p, "grid", gd, 2));
  float fv[2][4] = {{-3.5f, 2.5f, 300.2f, 127.5f}, {1, 2, 3, 4}};
  stk_tensor_desc fd[2] = {desc(fv[0], STK_DTYPE_FLOAT32, 1, (int64_t[]){4}),
                           desc(fv[1], STK_DTYPE_FLOAT32, 1, (int64_t[]){4})};
  TU_OK(stk_pipeline_feed(p, "f", fd, 2));
  uint8_t lk[2] = {0, 0};
  stk_tensor_desc kd[2] = {desc(&lk[0], STK_DTYPE_UINT8, 0, NULL),
                           desc(&lk[1], STK_DTYPE_UINT8, 0, NULL)};
  TU_OK(stk_pipeline_feed(p, "like", kd, 2));
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  stk_tensor_desc d = sample(b, 0, 0);
  assert_int_equal(d.ndim, 1);
  assert_int_equal(d.shape[0], 5);
  float e0[5] = {0, 0, 0, 1, 0}, e1[5] = {0};
  assert_memory_equal(d.data, e0, sizeof e0);
  assert_memory_equal(sample(b, 0, 1).data, e1, sizeof e1);
  d = sample(b, 1, 0);
  assert_int_equal(d.dtype, STK_DTYPE_INT8);
  assert_int_equal(d.ndim, 3);
  assert_int_equal(d.shape[0], 3);
  assert_int_equal(d.shape[1], 2);
  assert_int_equal(d.shape[2], 3);
  assert_string_equal(d.layout, "KHW");
  const int8_t *o = d.data;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 6; i++) {
      int lbl = (int)grid[0][i / 3][i % 3]; /* truncated: 2.9 -> 2; -1 matches nothing */
      assert_int_equal(o[k * 6 + i], lbl == k ? 7 : -1);
    }
  d = sample(b, 2, 0);
  assert_int_equal(d.dtype, STK_DTYPE_UINT8);
  uint8_t want[4] = {0, 3, 255, 128}; /* rounded half away from zero, saturated */
  assert_memory_equal(d.data, want, 4);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* subscript (x[...]) and shapes: a [2, 3, 4] int16 tensor indexed as a[1, ::-2, None, 1:]
 * and as a[..., -1]; the shapes as int32; clamp promoted by its bounds' types. */
static void test_subscript_shapes_and_clamp_types(void **state) {
  stk_pipeline *p = make_pipe(1);
  add_source(p, "t", "HWC");
  stk_op *op = new_op("subscript", "t", "s1");
  TU_OK(stk_op_set_ints(op, "kinds", (int64_t[]){0, 1, 2, 1}, 4));
  TU_OK(stk_op_set_int(op, "at_0", 1));
  TU_OK(stk_op_set_int(op, "step_1", -2));
  TU_OK(stk_op_set_int(op, "lo_3", 1));
  TU_OK(stk_op_set_string(op, "new_axis_names", "Z"));
  add(p, op);
  op = new_op("subscript", "t", "s2");
  TU_OK(stk_op_set_ints(op, "kinds", (int64_t[]){3, 0}, 2));
  TU_OK(stk_op_set_int(op, "at_1", -1));
  add(p, op);
  op = new_op("shapes", "t", "sh");
  TU_OK(stk_op_set_string(op, "dtype", "int32"));
  add(p, op);
  op = new_op("math.clamp", "t", "cl");
  TU_OK(stk_op_set_float(op, "lo", 2.5));
  TU_OK(stk_op_set_string(op, "lo_dtype", "float32"));
  TU_OK(stk_op_set_float(op, "hi", 20));
  TU_OK(stk_op_set_string(op, "hi_dtype", "int32"));
  add(p, op);
  const char *outs[] = {"s1", "s2", "sh", "cl"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 4));
  TU_OK(stk_pipeline_build(p));
  int16_t t[24];
  for (int i = 0; i < 24; i++) t[i] = (int16_t)i;
  stk_tensor_desc td = desc(t, STK_DTYPE_INT16, 3, (int64_t[]){2, 3, 4});
  snprintf(td.layout, sizeof td.layout, "HWC");
  TU_OK(stk_pipeline_feed(p, "t", &td, 1));
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  stk_tensor_desc d = sample(b, 0, 0); /* a[1, ::-2, None, 1:]: rows 2, 0 of sample 1 */
  assert_int_equal(d.ndim, 3);
  assert_int_equal(d.shape[0], 2);
  assert_int_equal(d.shape[1], 1);
  assert_int_equal(d.shape[2], 3);
  assert_string_equal(d.layout, "WZC");
  int16_t w1[6] = {21, 22, 23, 13, 14, 15};
  assert_memory_equal(d.data, w1, sizeof w1);
  d = sample(b, 1, 0); /* a[..., -1] */
  assert_int_equal(d.ndim, 2);
  assert_string_equal(d.layout, "HW");
  int16_t w2[6] = {3, 7, 11, 15, 19, 23};
  assert_memory_equal(d.data, w2, sizeof w2);
  d = sample(b, 2, 0);
  assert_int_equal(d.dtype, STK_DTYPE_INT32);
  int32_t w3[3] = {2, 3, 4};
  assert_memory_equal(d.data, w3, sizeof w3);
  d = sample(b, 3, 0); /* int16 with a float32 and an int32 bound: float32 */
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  const float *f = d.data;
  assert_true(f[0] == 2.5f && f[5] == 5.0f && f[23] == 20.0f);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

static void test_subscript_errors(void **state) {
  int16_t t[24] = {0};
  stk_tensor_desc td = desc(t, STK_DTYPE_INT16, 3, (int64_t[]){2, 3, 4});
  struct {
    int64_t kinds[4];
    size_t n;
    const char *arg;
    int64_t value;
    bool at_build;
    const char *needle;
  } cases[] = {
      {{0},
       1,
       "at_0",
       2,
       false,
       "at_0 (position 0 of the subscript): index 2 is out of range for axis 0 of extent 2"},
      {{1, 1},
       2,
       "step_1",
       0,
       false,
       "step_1 (position 1 of the subscript): the slice step of axis 1 is 0"},
      {{0, 0, 0, 0}, 4, "at_3", 0, false, "indexes 4 axes of a 3-dimensional input"},
      {{3, 3}, 2, "step_0", 1, true, "at most one ellipsis"},
      {{0}, 1, "lo_0", 1, true, "at_0 is not given"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    stk_pipeline *p = make_pipe(1);
    add_source(p, "t", NULL);
    stk_op *op = new_op("subscript", "t", "o");
    TU_OK(stk_op_set_ints(op, "kinds", cases[k].kinds, cases[k].n));
    for (size_t j = 0; j < cases[k].n; j++) {
      char name[16];
      snprintf(name, sizeof name, "at_%zu", j);
      if (cases[k].kinds[j] == 0 && strcmp(cases[k].arg, "lo_0") != 0)
        TU_OK(stk_op_set_int(op, name, 0));
    }
    TU_OK(stk_op_set_int(op, cases[k].arg, cases[k].value));
    add(p, op);
    const char *outs[] = {"o"};
    TU_OK(stk_pipeline_set_outputs(p, outs, 1));
    stk_status st = stk_pipeline_build(p);
    if (!cases[k].at_build) {
      TU_OK(st);
      TU_OK(stk_pipeline_feed(p, "t", &td, 1));
      stk_batch *b = NULL;
      st = stk_pipeline_run(p, &b);
    }
    assert_int_not_equal(st, STK_OK);
    if (!strstr(stk_last_error(), cases[k].needle))
      fail_msg("case %zu: error '%s' does not mention '%s'", k, stk_last_error(), cases[k].needle);
    stk_pipeline_destroy(p);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                             */
/* ---------------------------------------------------------------------------------- */

static void expect_error(stk_pipeline *p, bool at_build, const img_t *im, const char *needle) {
  const char *outs[] = {"o"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 1));
  stk_status st = stk_pipeline_build(p);
  if (!at_build) {
    TU_OK(st);
    feed_image(p, "img", im, 1);
    stk_batch *b;
    st = stk_pipeline_run(p, &b);
  }
  assert_int_not_equal(st, STK_OK);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not mention '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

static stk_pipeline *with_op(const char *kind, stk_op **op) {
  stk_pipeline *p = make_pipe(1);
  add_source(p, "img", "HWC");
  *op = new_op(kind, "img", "o");
  return p;
}

static void test_bad_arguments(void **state) {
  uint8_t px[6 * 5 * 3] = {0};
  img_t im = {px, 6, 5, 3};
  stk_op *op;
  stk_pipeline *p;
  p = with_op("math.binary", &op);
  assert_int_equal(stk_op_set_string(op, "op", "plus"), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "'op'"));
  stk_op_destroy(op);
  stk_pipeline_destroy(p);
  p = with_op("math.binary", &op); /* one input, no scalar */
  TU_OK(stk_op_set_string(op, "op", "add"));
  add(p, op);
  expect_error(p, true, &im, "'scalar' must be given");
  p = with_op("math.binary", &op); /* two inputs and a scalar */
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_string(op, "op", "add"));
  TU_OK(stk_op_set_float(op, "scalar", 1));
  add(p, op);
  expect_error(p, true, &im, "not both");
  p = with_op("math.binary", &op); /* bitwise on a float */
  TU_OK(stk_op_set_string(op, "op", "and"));
  TU_OK(stk_op_set_float(op, "scalar", 1.5));
  add(p, op);
  expect_error(p, false, &im, "'and' does not take uint8 and float32");
  p = with_op("math.unary", &op);
  TU_OK(stk_op_set_string(op, "op", "neg"));
  add(p, op);
  op = new_op("math.binary", "o", "o2");
  TU_OK(stk_op_set_string(op, "op", "gt"));
  TU_OK(stk_op_set_float(op, "scalar", 1));
  add(p, op);
  op = new_op("math.unary", "o2", "o3");
  TU_OK(stk_op_set_string(op, "op", "neg"));
  add(p, op);
  {
    const char *outs[] = {"o3"};
    TU_OK(stk_pipeline_set_outputs(p, outs, 1));
    TU_OK(stk_pipeline_build(p));
    feed_image(p, "img", &im, 1);
    stk_batch *b;
    assert_int_not_equal(stk_pipeline_run(p, &b), STK_OK);
    assert_non_null(strstr(stk_last_error(), "'neg' does not take bool"));
    stk_pipeline_destroy(p);
  }
  p = with_op("laplacian", &op);
  TU_OK(stk_op_set_ints(op, "window_size", (int64_t[]){4}, 1));
  add(p, op);
  expect_error(p, false, &im, "window_size = 4");
  p = with_op("laplacian", &op);
  TU_OK(stk_op_set_bool(op, "normalized_kernel", 1));
  TU_OK(stk_op_set_floats(op, "scale", (double[]){2}, 1));
  add(p, op);
  expect_error(p, true, &im, "normalized_kernel");
  p = with_op("gaussian_blur", &op);
  add(p, op);
  expect_error(p, false, &im, "need sigma > 0");
  p = with_op("gaussian_blur", &op);
  TU_OK(stk_op_set_ints(op, "window_size", (int64_t[]){4}, 1));
  add(p, op);
  expect_error(p, false, &im, "must be odd");
  p = with_op("filter", &op);
  add(p, op);
  expect_error(p, true, &im, "needs a filter");
  p = with_op("filter", &op);
  TU_OK(stk_op_set_floats(op, "kernel", (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, 9));
  TU_OK(stk_op_set_ints(op, "anchor", (int64_t[]){1, 3}, 2));
  add(p, op);
  expect_error(p, false, &im, "anchor [1, 3]");
  p = with_op("filter", &op);
  TU_OK(stk_op_set_floats(op, "kernel", (double[]){1, 2, 3, 4, 5}, 5));
  add(p, op);
  expect_error(p, false, &im, "kernel has 5 values");
  p = with_op("filter", &op);
  double k49[49] = {0};
  TU_OK(stk_op_set_floats(op, "kernel", k49, 49));
  TU_OK(stk_op_set_string(op, "mode", "valid"));
  add(p, op);
  expect_error(p, false, &im, "larger than");
  p = with_op("one_hot", &op);
  TU_OK(stk_op_set_int(op, "num_classes", 4));
  TU_OK(stk_op_set_int(op, "axis", 5));
  add(p, op);
  expect_error(p, false, &im, "axis = 5");
  p = with_op("one_hot", &op);
  TU_OK(stk_op_set_int(op, "num_classes", 4));
  TU_OK(stk_op_set_string(op, "axis_name", "AB"));
  add(p, op);
  expect_error(p, true, &im, "axis_name");
  p = with_op("one_hot", &op);
  assert_int_equal(stk_op_set_int(op, "num_classes", 0), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "num_classes"));
  stk_op_destroy(op);
  stk_pipeline_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_border_index),
      cmocka_unit_test(test_conv_kernels_vs_reference),
      cmocka_unit_test(test_windows_and_separability),
      cmocka_unit_test(test_gaussian_blur_op),
      cmocka_unit_test(test_laplacian_op),
      cmocka_unit_test(test_filter_op),
      cmocka_unit_test(test_type_promotion_table),
      cmocka_unit_test(test_binary_values),
      cmocka_unit_test(test_broadcasting),
      cmocka_unit_test(test_unary_and_clamp),
      cmocka_unit_test(test_expression_pipeline),
      cmocka_unit_test(test_one_hot_and_cast_like),
      cmocka_unit_test(test_subscript_shapes_and_clamp_types),
      cmocka_unit_test(test_subscript_errors),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
