/* Occlusion and noise operators through the pipeline:
 *  - erase: boxes against a reference computed by hand from DALI's definition (single and
 *    multiple regions, axis_names / axes, normalized, centered_anchor, per-channel fill,
 *    clipping, float32 and HW data, anchor and shape fed per sample);
 *  - grid_mask: against the GridMask formula and an integer check for angle 0; ratio 0 / 1;
 *    arguments fed per sample;
 *  - noise.gaussian / salt_and_pepper / shot: statistics of the added noise (mean,
 *    variance, normal quantiles, salt and pepper shares, a chi-square test against the
 *    Poisson distribution for both sampler branches), determinism (seed, threads, batch
 *    size), per-sample arguments;
 *  - bad arguments, whose errors must name them. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  void *data;
  int64_t h, w, c;
  stk_dtype dtype;
} image;

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static image image_random_u8(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  image m = {malloc((size_t)(h * w * c)), h, w, c, STK_DTYPE_UINT8};
  for (int64_t i = 0; i < h * w * c; i++) ((uint8_t *)m.data)[i] = (uint8_t)(rnd(&seed) >> 9);
  return m;
}

static image image_const(int64_t h, int64_t w, int64_t c, stk_dtype t, double v) {
  image m = {malloc((size_t)(h * w * c) * stk_dtype_size(t)), h, w, c, t};
  for (int64_t i = 0; i < h * w * c; i++) {
    if (t == STK_DTYPE_UINT8)
      ((uint8_t *)m.data)[i] = (uint8_t)v;
    else
      ((float *)m.data)[i] = (float)v;
  }
  return m;
}

static size_t elems(const image *m) { return (size_t)(m->h * m->w * m->c); }

static double at(const void *p, stk_dtype t, size_t i) {
  return t == STK_DTYPE_UINT8 ? ((const uint8_t *)p)[i] : ((const float *)p)[i];
}

static stk_tensor_desc desc_of(const image *m) {
  size_t es = stk_dtype_size(m->dtype);
  stk_tensor_desc d = {.data = m->data, .ndim = 3, .shape = {m->h, m->w, m->c}, .dtype = m->dtype};
  d.strides[0] = (int64_t)(m->w * m->c * es), d.strides[1] = (int64_t)(m->c * es);
  d.strides[2] = (int64_t)es;
  strcpy(d.layout, "HWC");
  return d;
}

static stk_pipeline *build_opts(int batch, int threads, const char *body) {
  char text[4096];
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = %d\nseed = 21\n"
           "src = external_source(layout=\"HWC\", name=\"src\")\n%s",
           batch, threads, body);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

static stk_pipeline *build(int batch, const char *body) { return build_opts(batch, 2, body); }

static stk_batch *feed_run(stk_pipeline *p, const image *imgs, int n) {
  stk_tensor_desc d[16];
  for (int i = 0; i < n; i++) d[i] = desc_of(&imgs[i]);
  TU_OK(stk_pipeline_feed(p, "src", d, (size_t)n));
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  return out;
}

static stk_tensor_desc sample_of(stk_batch *b, size_t out, size_t i) {
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(stk_batch_output(b, out), i, &d));
  return d;
}

static double scalar_of(stk_batch *b, size_t out, size_t i, size_t k) {
  stk_tensor_desc d = sample_of(b, out, i);
  return d.dtype == STK_DTYPE_FLOAT32 ? ((const float *)d.data)[k] : ((const int32_t *)d.data)[k];
}

/* One batch of the body on `imgs`; the run must fail naming `needle`. */
static void expect_run_error(const char *body, const image *img, const char *needle) {
  stk_pipeline *p = build(1, body);
  stk_tensor_desc d = desc_of(img);
  TU_OK(stk_pipeline_feed(p, "src", &d, 1));
  stk_batch *out = NULL;
  if (stk_pipeline_run(p, &out) == STK_OK) fail_msg("expected an error naming '%s'", needle);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not name '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

static void expect_build_error(const char *body, const char *needle) {
  char text[2048];
  snprintf(text, sizeof text,
           "batch_size = 1\nsrc = external_source(layout=\"HWC\", "
           "name=\"src\")\n%s",
           body);
  stk_pipeline *p = NULL;
  stk_status st = stk_pipeline_from_text(text, &p);
  if (st == STK_OK) st = stk_pipeline_build(p);
  if (st == STK_OK) fail_msg("expected a build error naming '%s'", needle);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not name '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

/* ---------------------------------------------------------------------------------- */
/* erase                                                                              */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  int64_t y0, y1, x0, x1, c0, c1; /* half-open, already clipped */
} ebox;

/* The reference: a copy of the input with the boxes filled (fill per channel or scalar). */
static void *erase_ref(const image *in, const ebox *boxes, int nb, const double *fill, int nfill) {
  size_t es = stk_dtype_size(in->dtype), n = elems(in);
  uint8_t *out = malloc(n * es);
  memcpy(out, in->data, n * es);
  for (int b = 0; b < nb; b++)
    for (int64_t y = boxes[b].y0; y < boxes[b].y1; y++)
      for (int64_t x = boxes[b].x0; x < boxes[b].x1; x++)
        for (int64_t c = boxes[b].c0; c < boxes[b].c1; c++) {
          size_t i = (size_t)((y * in->w + x) * in->c + c);
          double v = fill[nfill == 1 ? 0 : c];
          if (in->dtype == STK_DTYPE_UINT8)
            out[i] = (uint8_t)v;
          else
            ((float *)out)[i] = (float)v;
        }
  return out;
}

static void expect_erased(stk_batch *b, size_t out, const image *in, const ebox *boxes, int nb,
                          const double *fill, int nfill, const char *what) {
  stk_tensor_desc d = sample_of(b, out, 0);
  void *ref = erase_ref(in, boxes, nb, fill, nfill);
  size_t n = elems(in), es = stk_dtype_size(in->dtype);
  for (size_t i = 0; i < n; i++)
    if (memcmp((char *)d.data + i * es, (char *)ref + i * es, es) != 0)
      fail_msg("%s: element %zu (y %zu, x %zu, c %zu) is %g, expected %g", what, i,
               i / (size_t)(in->w * in->c), i / (size_t)in->c % (size_t)in->w, i % (size_t)in->c,
               at(d.data, in->dtype, i), at(ref, in->dtype, i));
  free(ref);
}

static void test_erase_regions(void **state) {
  image img = image_random_u8(40, 50, 3, 1);
  stk_pipeline *p =
      build(1,
            "a = erase(src, anchor=[5, 7], shape=[10, 20], fill_value=[1, 2, 3])\n"
            "b = erase(src, anchor=[0, 0, 30, 45], shape=[3, 4, 20, 20], fill_value=255)\n"
            "c = erase(src, anchor=[7, 5], shape=[20, 10], axis_names=\"WH\")\n"
            "d = erase(src, anchor=[10], shape=[5], axis_names=\"W\", fill_value=9)\n"
            "e = erase(src, anchor=[0.1, 0.2], shape=[0.5, 0.25], normalized=true)\n"
            "f = erase(src, anchor=[20, 25], shape=[10, 11], centered_anchor=true)\n"
            "g = erase(src, anchor=[7, 5], shape=[20, 10], axes=[1, 0])\n"
            "h = erase(src, anchor=[1], shape=[1], axis_names=\"C\", fill_value=77)\n"
            "i = erase(src, anchor=[0.5, 10], shape=[4, 0.2], normalized_anchor=true, "
            "normalized_shape=false)\n"
            "j = erase(src, anchor=[-5, -6], shape=[8, 9])\n"
            "k = erase(src)\n"
            "return a, b, c, d, e, f, g, h, i, j, k\n");
  stk_batch *b = feed_run(p, &img, 1);
  double f123[3] = {1, 2, 3}, f255 = 255, f0 = 0, f9 = 9, f77 = 77;
  expect_erased(b, 0, &img, (ebox[]){{5, 15, 7, 27, 0, 3}}, 1, f123, 3, "per-channel fill");
  expect_erased(b, 1, &img, (ebox[]){{0, 3, 0, 4, 0, 3}, {30, 40, 45, 50, 0, 3}}, 2, &f255, 1,
                "two regions, clipped");
  expect_erased(b, 2, &img, (ebox[]){{5, 15, 7, 27, 0, 3}}, 1, &f0, 1, "axis_names WH");
  expect_erased(b, 3, &img, (ebox[]){{0, 40, 10, 15, 0, 3}}, 1, &f9, 1, "axis W only");
  /* y0 = round(4) = 4, h = round(20); x0 = round(10), w = round(12.5) = 13 */
  expect_erased(b, 4, &img, (ebox[]){{4, 24, 10, 23, 0, 3}}, 1, &f0, 1, "normalized");
  /* y0 = round(20 - 5) = 15; x0 = round(25 - 5.5) = round(19.5) = 20 */
  expect_erased(b, 5, &img, (ebox[]){{15, 25, 20, 31, 0, 3}}, 1, &f0, 1, "centered");
  expect_erased(b, 6, &img, (ebox[]){{5, 15, 7, 27, 0, 3}}, 1, &f0, 1, "axes [1, 0]");
  expect_erased(b, 7, &img, (ebox[]){{0, 40, 0, 50, 1, 2}}, 1, &f77, 1, "channel axis");
  /* anchor y = 0.5 * 40 = 20, x = 10 * 50 = 500 (outside: nothing along x) */
  expect_erased(b, 8, &img, (ebox[]){{20, 24, 50, 50, 0, 3}}, 1, &f0, 1, "normalized anchor only");
  expect_erased(b, 9, &img, (ebox[]){{0, 3, 0, 3, 0, 3}}, 1, &f0, 1, "negative anchor");
  expect_erased(b, 10, &img, NULL, 0, &f0, 1, "no shape: unchanged");
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(img.data);
}

/* Anchor and shape fed per sample; float32 data. */
static void test_erase_per_sample_and_float(void **state) {
  enum { N = 5 };
  image imgs[N];
  for (int i = 0; i < N; i++) {
    imgs[i] = image_const(30, 40, 3, STK_DTYPE_FLOAT32, 0);
    for (size_t k = 0; k < elems(&imgs[i]); k++) ((float *)imgs[i].data)[k] = (float)k * 0.5f;
  }
  stk_pipeline *p = build(N,
                          "an = random.uniform(range=[0, 30], shape=[2])\n"
                          "sh = random.uniform(range=[1, 15], shape=[2])\n"
                          "o = erase(src, anchor=an, shape=sh, fill_value=[-1, 0.5, 2])\n"
                          "return o, an, sh\n");
  stk_batch *b = feed_run(p, imgs, N);
  double fill[3] = {-1, 0.5, 2};
  for (int i = 0; i < N; i++) {
    double ay = scalar_of(b, 1, (size_t)i, 0), ax = scalar_of(b, 1, (size_t)i, 1);
    double sy = scalar_of(b, 2, (size_t)i, 0), sx = scalar_of(b, 2, (size_t)i, 1);
    int64_t y0 = (int64_t)round(ay), x0 = (int64_t)round(ax);
    int64_t y1 = y0 + (int64_t)round(sy), x1 = x0 + (int64_t)round(sx);
    ebox bx = {y0, y1 < 30 ? y1 : 30, x0, x1 < 40 ? x1 : 40, 0, 3};
    /* check sample i against its own box (the helper reads sample 0: copy the view) */
    stk_tensor_desc d = sample_of(b, 0, (size_t)i);
    void *ref = erase_ref(&imgs[i], &bx, 1, fill, 3);
    assert_memory_equal(d.data, ref, elems(&imgs[i]) * 4);
    free(ref);
  }
  assert_true(scalar_of(b, 1, 0, 0) != scalar_of(b, 1, 1, 0));
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  for (int i = 0; i < N; i++) free(imgs[i].data);

  /* an HW (2-D) tensor */
  stk_pipeline *q;
  TU_OK(stk_pipeline_from_text(
      "batch_size = 1\nsrc = external_source(layout=\"HW\", name=\"src\")\n"
      "o = erase(src, anchor=[1, 2], shape=[2, 3], fill_value=5)\nreturn o\n",
      &q));
  TU_OK(stk_pipeline_build(q));
  uint8_t hw[4 * 6] = {0};
  stk_tensor_desc d = {
      .data = hw, .ndim = 2, .shape = {4, 6}, .strides = {6, 1}, .dtype = STK_DTYPE_UINT8};
  TU_OK(stk_pipeline_feed(q, "src", &d, 1));
  TU_OK(stk_pipeline_run(q, &b));
  const uint8_t *o = sample_of(b, 0, 0).data;
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 6; x++)
      assert_int_equal(o[y * 6 + x], (y >= 1 && y < 3 && x >= 2 && x < 5) ? 5 : 0);
  stk_batch_release(b);
  stk_pipeline_destroy(q);
}

static void test_erase_bad_arguments(void **state) {
  image img = image_random_u8(10, 12, 3, 2);
  expect_run_error("o = erase(src, anchor=[1, 1], shape=[2, 2], fill_value=[1, 2])\nreturn o\n",
                   &img, "fill_value");
  expect_run_error("o = erase(src, anchor=[1, 1, 1], shape=[2, 2])\nreturn o\n", &img, "anchor");
  expect_run_error("o = erase(src, shape=[2, 2, 3])\nreturn o\n", &img, "shape");
  expect_run_error("o = erase(src, shape=[2, 2], axis_names=\"HZ\")\nreturn o\n", &img,
                   "axis_names");
  expect_run_error("o = erase(src, shape=[-2, 2])\nreturn o\n", &img, "shape");
  expect_run_error("o = erase(src, shape=[2], axes=[5])\nreturn o\n", &img, "axes");
  free(img.data);
}

/* ---------------------------------------------------------------------------------- */
/* grid_mask                                                                          */
/* ---------------------------------------------------------------------------------- */

/* Whether GridMask keeps pixel (x, y): its position in the rotated, shifted grid. */
static bool grid_keeps(int64_t x, int64_t y, double tile, double ratio, double angle, double sx,
                       double sy) {
  double u = ((double)x * cos(angle) - (double)y * sin(angle) - sx) / tile;
  double v = ((double)x * sin(angle) + (double)y * cos(angle) - sy) / tile;
  return u - floor(u) >= ratio || v - floor(v) >= ratio;
}

static void expect_grid(const stk_tensor_desc *d, const image *in, double tile, double ratio,
                        double angle, double sx, double sy, double *zero_share) {
  const uint8_t *o = d->data, *s = in->data;
  size_t zeroed = 0;
  for (int64_t y = 0; y < in->h; y++)
    for (int64_t x = 0; x < in->w; x++) {
      bool keep = grid_keeps(x, y, tile, ratio, angle, sx, sy);
      zeroed += !keep;
      for (int64_t c = 0; c < in->c; c++) {
        size_t i = (size_t)((y * in->w + x) * in->c + c);
        if (o[i] != (keep ? s[i] : 0))
          fail_msg("grid_mask(tile %g, ratio %g, angle %g): pixel (%lld, %lld) is %d, expected %d",
                   tile, ratio, angle, (long long)x, (long long)y, o[i], keep ? s[i] : 0);
      }
    }
  *zero_share = (double)zeroed / (double)(in->h * in->w);
}

static void test_grid_mask(void **state) {
  image img = image_random_u8(120, 160, 3, 3);
  for (size_t i = 0; i < elems(&img); i++) ((uint8_t *)img.data)[i] |= 1; /* no zeros */
  stk_pipeline *p =
      build(1,
            "a = grid_mask(src, tile=10, ratio=0.5)\n"
            "b = grid_mask(src, tile=24, ratio=0.4, angle=0.3, shift_x=2, shift_y=-3)\n"
            "c = grid_mask(src, ratio=0)\n"
            "d = grid_mask(src, ratio=1)\n"
            "return a, b, c, d\n");
  stk_batch *b = feed_run(p, &img, 1);
  /* angle 0: squares where x % 10 < 5 and y % 10 < 5 (integer arithmetic) */
  const uint8_t *a = sample_of(b, 0, 0).data, *s = img.data;
  for (int64_t y = 0; y < 120; y++)
    for (int64_t x = 0; x < 160; x++) {
      bool black = x % 10 < 5 && y % 10 < 5;
      assert_int_equal(a[(y * 160 + x) * 3], black ? 0 : s[(y * 160 + x) * 3]);
    }
  double share;
  stk_tensor_desc d = sample_of(b, 1, 0);
  expect_grid(&d, &img, 24, 0.4, 0.3, 2, -3, &share);
  assert_true(fabs(share - 0.16) < 0.03); /* ratio^2 of the area */
  d = sample_of(b, 2, 0);
  assert_memory_equal(d.data, img.data, elems(&img)); /* ratio 0 keeps everything */
  d = sample_of(b, 3, 0);
  for (size_t i = 0; i < elems(&img); i++) assert_int_equal(((uint8_t *)d.data)[i], 0);
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  /* every argument fed per sample */
  enum { N = 4 };
  image imgs[N];
  for (int i = 0; i < N; i++) imgs[i] = img;
  p = build(N,
            "t = random.choice(a=[5, 13, 40], dtype=\"int32\")\n"
            "r = random.uniform(range=[0.2, 0.8])\n"
            "an = random.uniform(range=[-3, 3])\n"
            "sx = random.uniform(range=[-20, 20])\n"
            "o = grid_mask(src, tile=t, ratio=r, angle=an, shift_x=sx, shift_y=sx)\n"
            "return o, t, r, an, sx\n");
  b = feed_run(p, imgs, N);
  for (int i = 0; i < N; i++) {
    d = sample_of(b, 0, (size_t)i);
    double t = scalar_of(b, 1, (size_t)i, 0), r = scalar_of(b, 2, (size_t)i, 0);
    double an = scalar_of(b, 3, (size_t)i, 0), sx = scalar_of(b, 4, (size_t)i, 0);
    expect_grid(&d, &img, t, r, an, sx, sx, &share);
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  expect_run_error("o = grid_mask(src, tile=0)\nreturn o\n", &img, "'tile'");
  expect_run_error("o = grid_mask(src, ratio=1.5)\nreturn o\n", &img, "'ratio'");
  free(img.data);
}

/* ---------------------------------------------------------------------------------- */
/* noise                                                                              */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  double mean, var, within1; /* share of |x - mean| < 1 sd */
} stats;

static stats noise_stats(const void *out, const image *in) {
  size_t n = elems(in);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++) {
    double e = at(out, in->dtype, i) - at(in->data, in->dtype, i);
    sum += e, sq += e * e;
  }
  stats s = {sum / n, 0, 0};
  s.var = sq / n - s.mean * s.mean;
  size_t inside = 0;
  for (size_t i = 0; i < n; i++) {
    double e = at(out, in->dtype, i) - at(in->data, in->dtype, i);
    inside += fabs(e - s.mean) < sqrt(s.var);
  }
  s.within1 = (double)inside / n;
  return s;
}

static void test_gaussian_statistics(void **state) {
  image f = image_const(256, 256, 3, STK_DTYPE_FLOAT32, 100);
  image u = image_const(256, 256, 3, STK_DTYPE_UINT8, 128);
  size_t n = elems(&f);
  stk_pipeline *p = build(1, "o = noise.gaussian(src, mean=3, stddev=10)\nreturn o\n");
  stk_batch *b = feed_run(p, &f, 1);
  const float *o = sample_of(b, 0, 0).data;
  stats s = noise_stats(o, &f);
  assert_true(fabs(s.mean - 3) < 5 * 10 / sqrt(n));
  assert_true(fabs(s.var - 100) < 5 * 100 * sqrt(2.0 / n));
  assert_true(fabs(s.within1 - 0.682689) < 5 * sqrt(0.68 * 0.32 / n));
  double corr = 0; /* neighbouring elements (a Box-Muller pair and across pairs) independent */
  for (size_t i = 0; i + 1 < n; i++) corr += (o[i] - 103) * (o[i + 1] - 103);
  assert_true(fabs(corr / (n - 1) / 100) < 0.02);
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  /* uint8: rounded, so the variance gains 1/12 */
  p = build(1, "o = noise.gaussian(src, stddev=20)\nreturn o\n");
  b = feed_run(p, &u, 1);
  s = noise_stats(sample_of(b, 0, 0).data, &u);
  assert_true(fabs(s.mean) < 5 * 20 / sqrt(n));
  assert_true(fabs(s.var - 400 - 1.0 / 12) < 5 * 400 * sqrt(2.0 / n));
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  /* stddev fed per sample */
  enum { N = 4 };
  image small[N];
  for (int i = 0; i < N; i++) small[i] = image_const(128, 128, 3, STK_DTYPE_FLOAT32, 10);
  p = build(
      N, "sd = random.uniform(range=[1, 30])\no = noise.gaussian(src, stddev=sd)\nreturn o, sd\n");
  b = feed_run(p, small, N);
  for (int i = 0; i < N; i++) {
    double sd = scalar_of(b, 1, (size_t)i, 0);
    s = noise_stats(sample_of(b, 0, (size_t)i).data, &small[i]);
    assert_true(fabs(sqrt(s.var) / sd - 1) < 0.02);
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  for (int i = 0; i < N; i++) free(small[i].data);
  free(f.data), free(u.data);
}

/* Same seed: same bytes for any thread count and batch size; another seed differs. */
static void test_noise_determinism(void **state) {
  enum { N = 4 };
  image imgs[N];
  for (int i = 0; i < N; i++) imgs[i] = image_random_u8(32, 48, 3, 40 + (uint64_t)i);
  const char *body =
      "g = noise.gaussian(src, stddev=12, name=\"g\")\n"
      "s = noise.salt_and_pepper(src, prob=0.3, name=\"s\")\n"
      "h = noise.shot(src, factor=3, name=\"h\")\n"
      "x = noise.gaussian(src, stddev=12, seed=5)\n"
      "y = noise.gaussian(src, stddev=12, seed=6)\n"
      "return g, s, h, x, y\n";
  uint8_t *ref[5][N];
  size_t bytes = elems(&imgs[0]);
  stk_pipeline *p = build_opts(N, 1, body);
  stk_batch *b = feed_run(p, imgs, N);
  for (int o = 0; o < 5; o++)
    for (int i = 0; i < N; i++) {
      ref[o][i] = malloc(bytes);
      memcpy(ref[o][i], sample_of(b, (size_t)o, (size_t)i).data, bytes);
    }
  assert_memory_not_equal(ref[3][0], ref[4][0], bytes); /* different seeds */
  assert_memory_not_equal(ref[0][0], ref[0][1], 1);     /* samples differ */
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  /* 3 threads; then batches of 2 */
  p = build_opts(N, 3, body);
  b = feed_run(p, imgs, N);
  for (int o = 0; o < 5; o++)
    for (int i = 0; i < N; i++)
      assert_memory_equal(sample_of(b, (size_t)o, (size_t)i).data, ref[o][i], bytes);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  p = build_opts(2, 2, body);
  for (int half = 0; half < 2; half++) {
    b = feed_run(p, imgs + 2 * half, 2);
    for (int o = 0; o < 5; o++)
      for (int i = 0; i < 2; i++)
        assert_memory_equal(sample_of(b, (size_t)o, (size_t)i).data, ref[o][2 * half + i], bytes);
    stk_batch_release(b);
  }
  stk_pipeline_destroy(p);
  for (int o = 0; o < 5; o++)
    for (int i = 0; i < N; i++) free(ref[o][i]);
  for (int i = 0; i < N; i++) free(imgs[i].data);
}

static void test_salt_and_pepper(void **state) {
  image u = image_const(256, 256, 3, STK_DTYPE_UINT8, 128);
  size_t npx = (size_t)(u.h * u.w), n = elems(&u);
  stk_pipeline *p =
      build(1,
            "a = noise.salt_and_pepper(src, prob=0.2, salt_vs_pepper=0.3)\n"
            "b = noise.salt_and_pepper(src, prob=0.2, salt_vs_pepper=0.3, per_channel=true)\n"
            "c = noise.salt_and_pepper(src, prob=0.5, salt_val=200, pepper_val=10)\n"
            "return a, b, c\n");
  stk_batch *b = feed_run(p, &u, 1);
  const uint8_t *a = sample_of(b, 0, 0).data, *pc = sample_of(b, 1, 0).data,
                *c = sample_of(b, 2, 0).data;
  size_t salt = 0, pepper = 0, esalt = 0, epepper = 0, mixed = 0, s200 = 0, p10 = 0;
  for (size_t i = 0; i < npx; i++) {
    const uint8_t *px = a + i * 3, *q = pc + i * 3;
    assert_true(px[0] == px[1] && px[1] == px[2]); /* one draw per pixel */
    assert_true(px[0] == 128 || px[0] == 255 || px[0] == 0);
    salt += px[0] == 255, pepper += px[0] == 0;
    mixed += !(q[0] == q[1] && q[1] == q[2]);
    for (int k = 0; k < 3; k++) {
      esalt += q[k] == 255, epepper += q[k] == 0;
      s200 += c[i * 3 + k] == 200, p10 += c[i * 3 + k] == 10;
      assert_true(c[i * 3 + k] == 128 || c[i * 3 + k] == 200 || c[i * 3 + k] == 10);
    }
  }
  double sd_px = sqrt(0.25 / npx), sd_el = sqrt(0.25 / n);
  assert_true(fabs((double)salt / npx - 0.06) < 5 * sd_px);
  assert_true(fabs((double)pepper / npx - 0.14) < 5 * sd_px);
  assert_true(fabs((double)esalt / n - 0.06) < 5 * sd_el);
  assert_true(fabs((double)epepper / n - 0.14) < 5 * sd_el);
  assert_true(mixed > npx / 4); /* per_channel: channels of a pixel differ often */
  assert_true(fabs((double)s200 / n - 0.25) < 5 * sd_el &&
              fabs((double)p10 / n - 0.25) < 5 * sd_el);
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  /* float32 defaults: salt 1, pepper -1; prob fed per sample */
  enum { N = 3 };
  image f[N];
  for (int i = 0; i < N; i++) f[i] = image_const(128, 128, 3, STK_DTYPE_FLOAT32, 0.5);
  p = build(N,
            "pr = random.uniform(range=[0.05, 0.6])\n"
            "o = noise.salt_and_pepper(src, prob=pr, per_channel=true)\nreturn o, pr\n");
  b = feed_run(p, f, N);
  for (int i = 0; i < N; i++) {
    const float *o = sample_of(b, 0, (size_t)i).data;
    double pr = scalar_of(b, 1, (size_t)i, 0);
    size_t hit = 0, m = elems(&f[i]), ones = 0;
    for (size_t k = 0; k < m; k++) {
      assert_true(o[k] == 0.5f || o[k] == 1.0f || o[k] == -1.0f);
      hit += o[k] != 0.5f, ones += o[k] == 1.0f;
    }
    assert_true(fabs((double)hit / m - pr) < 5 * sqrt(0.25 / m));
    assert_true(fabs((double)ones / hit - 0.5) < 5 * sqrt(0.25 / hit));
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  for (int i = 0; i < N; i++) free(f[i].data);
  free(u.data);
}

/* Chi-square of `counts` (value k at index k) against Poisson(lambda); fails beyond the
 * mean + 6 standard deviations of the statistic. */
static void expect_poisson(const size_t *counts, size_t kmax, size_t n, double lambda) {
  double chi = 0, tail_obs = 0, tail_exp = 0;
  int dof = -1;
  for (size_t k = 0; k <= kmax; k++) {
    double e = n * exp(-lambda + k * log(lambda) - lgamma(k + 1.0));
    if (e < 5) { /* pool the sparse tails */
      tail_obs += counts[k], tail_exp += e;
      continue;
    }
    chi += (counts[k] - e) * (counts[k] - e) / e;
    dof++;
  }
  if (tail_exp >= 5) chi += (tail_obs - tail_exp) * (tail_obs - tail_exp) / tail_exp, dof++;
  if (!(chi < dof + 6 * sqrt(2.0 * dof)))
    fail_msg("Poisson(%g): chi-square %.1f with %d degrees of freedom", lambda, chi, dof);
}

static void test_shot_noise(void **state) {
  image u100 = image_const(256, 256, 3, STK_DTYPE_UINT8, 100);
  image u6 = image_const(256, 256, 3, STK_DTYPE_UINT8, 6);
  image f = image_const(128, 128, 3, STK_DTYPE_FLOAT32, 2000);
  size_t n = elems(&u100);
  stk_pipeline *p =
      build(1, "o = noise.shot(src, factor=2)\nz = noise.shot(src, factor=0)\nreturn o, z\n");
  stk_batch *b = feed_run(p, &u100, 1);
  const uint8_t *o = sample_of(b, 0, 0).data;
  size_t counts[256] = {0};
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(o[i] % 2, 0); /* multiples of the factor */
    counts[o[i] / 2]++;
  }
  expect_poisson(counts, 127, n, 50); /* transformed rejection branch */
  assert_memory_equal(sample_of(b, 1, 0).data, u100.data, n);
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  p = build(1, "o = noise.shot(src, factor=1)\nreturn o\n");
  b = feed_run(p, &u6, 1);
  o = sample_of(b, 0, 0).data;
  memset(counts, 0, sizeof counts);
  for (size_t i = 0; i < n; i++) counts[o[i]]++;
  expect_poisson(counts, 255, n, 6); /* inversion branch */
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  p = build(1, "o = noise.shot(src, factor=0.5)\nreturn o\n");
  b = feed_run(p, &f, 1);
  stats s = noise_stats(sample_of(b, 0, 0).data, &f); /* 0.5 * Poisson(4000) */
  size_t m = elems(&f);
  assert_true(fabs(s.mean) < 5 * sqrt(1000.0 / m));
  assert_true(fabs(s.var / 1000 - 1) < 5 * sqrt(2.0 / m));
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(u100.data), free(u6.data), free(f.data);
}

static void test_noise_bad_arguments(void **state) {
  image img = image_random_u8(8, 8, 3, 5);
  expect_run_error(
      "sd = random.uniform(range=[-3, -1])\no = noise.gaussian(src, stddev=sd)\nreturn o\n", &img,
      "'stddev'");
  expect_run_error("o = noise.gaussian(src, stddev=-1)\nreturn o\n", &img, "'stddev'");
  expect_build_error("o = noise.salt_and_pepper(src, prob=1.5)\nreturn o\n", "prob");
  expect_run_error(
      "pr = random.uniform(range=[2, 3])\no = noise.salt_and_pepper(src, prob=pr)\nreturn o\n",
      &img, "'prob'");
  expect_run_error("o = noise.shot(src, factor=-1)\nreturn o\n", &img, "'factor'");
  /* int8 data is not supported */
  stk_pipeline *p = build(1, "o = noise.gaussian(src)\nreturn o\n");
  int8_t v[3] = {1, 2, 3};
  stk_tensor_desc d = {
      .data = v, .ndim = 3, .shape = {1, 1, 3}, .strides = {3, 3, 1}, .dtype = STK_DTYPE_INT8};
  TU_OK(stk_pipeline_feed(p, "src", &d, 1));
  stk_batch *b = NULL;
  assert_int_equal(stk_pipeline_run(p, &b), STK_ERR_UNSUPPORTED);
  assert_non_null(strstr(stk_last_error(), "int8"));
  stk_pipeline_destroy(p);
  free(img.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_erase_regions),       cmocka_unit_test(test_erase_per_sample_and_float),
      cmocka_unit_test(test_erase_bad_arguments), cmocka_unit_test(test_grid_mask),
      cmocka_unit_test(test_gaussian_statistics), cmocka_unit_test(test_noise_determinism),
      cmocka_unit_test(test_salt_and_pepper),     cmocka_unit_test(test_shot_noise),
      cmocka_unit_test(test_noise_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
