/* Resampling kernels (src/ops/resample.c) against an independent float64 reference
 * written here from the published formulas (Keys' cubic with a = -0.5, Lanczos-3, the
 * triangle; Pillow's support stretching for antialiased downscaling; edge-replicating
 * borders; pixel-centre mapping), on real photographs and on random sizes and windows;
 * and DALI's resize geometry (resize_plan) on the examples of DALI's documentation. */
#include <math.h>
#include <spng.h>
#include <stdlib.h>
#include <string.h>

#include "ops/image_util.h"
#include "ops/resample.h"
#include "testutil.h"

#define PI_ 3.14159265358979323846

/* ---------------------------------------------------------------------------------- */
/* The reference                                                                      */
/* ---------------------------------------------------------------------------------- */

static double ref_support(int interp) {
  static const double s[] = {0.5, 1.0, 2.0, 3.0};
  return s[interp];
}

static double ref_filter(int interp, double x) {
  x = fabs(x);
  if (interp == STK__INTERP_LINEAR) return x < 1 ? 1 - x : 0;
  if (interp == STK__INTERP_CUBIC) {
    const double a = -0.5; /* Keys (1981); Pillow's bicubic */
    if (x < 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0;
  }
  if (x >= 3) return 0; /* Lanczos-3: 3 sin(pi x) sin(pi x / 3) / (pi x)^2 */
  if (x < 1e-9) return 1;
  return 3 * sin(PI_ * x) * sin(PI_ * x / 3) / (PI_ * PI_ * x * x);
}

/* Weights of one axis: a dense out x in matrix (row i: output i). */
static double *ref_axis(int interp, bool aa, int64_t in, int64_t out, double a0, double a1) {
  double *m = calloc((size_t)(in * out), sizeof(double));
  double scale = (a1 - a0) / (double)out;
  for (int64_t i = 0; i < out; i++) {
    double *row = m + i * in;
    if (interp == STK__INTERP_NEAREST) {
      double p = floor(a0 + ((double)i + 0.5) * scale);
      int64_t j = p < 0 ? 0 : p > (double)(in - 1) ? in - 1 : (int64_t)p;
      row[j] = 1;
      continue;
    }
    double c = a0 + (i + 0.5) * scale - 0.5, fs = aa && fabs(scale) > 1 ? fabs(scale) : 1;
    double sup = ref_support(interp) * fs, sum = 0;
    for (double j = floor(c - sup); j <= ceil(c + sup); j++) {
      if (!(fabs(j - c) < sup)) continue;
      double w = ref_filter(interp, (j - c) / fs);
      int64_t k = j < 0 ? 0 : j > (double)(in - 1) ? in - 1 : (int64_t)j; /* edge pixels */
      row[k] += w;
      sum += w;
    }
    for (int64_t k = 0; k < in; k++) row[k] /= sum;
  }
  return m;
}

/* The separable filter in float64: ref[y][x][c]. src is uint8 or float32. */
static double *ref_resample(const stk__image *src, int64_t oh, int64_t ow,
                            const stk__resample_args *a) {
  int64_t H = src->h, W = src->w, C = src->c;
  double *wx = ref_axis(a->interp, a->antialias, W, ow, a->x0, a->x1);
  double *wy = ref_axis(a->interp, a->antialias, H, oh, a->y0, a->y1);
  double *t = calloc((size_t)(H * ow * C), sizeof(double));
  double *r = calloc((size_t)(oh * ow * C), sizeof(double));
  for (int64_t y = 0; y < H; y++)
    for (int64_t x = 0; x < ow; x++)
      for (int64_t j = 0; j < W; j++) {
        double w = wx[x * W + j];
        if (w == 0) continue;
        for (int64_t c = 0; c < C; c++) {
          size_t i = (size_t)((y * W + j) * C + c);
          double v = src->dtype == STK_DTYPE_UINT8 ? ((const uint8_t *)src->data)[i]
                                                   : ((const float *)src->data)[i];
          t[(y * ow + x) * C + c] += w * v;
        }
      }
  for (int64_t y = 0; y < oh; y++)
    for (int64_t k = 0; k < H; k++) {
      double w = wy[y * H + k];
      if (w == 0) continue;
      for (int64_t i = 0; i < ow * C; i++) r[y * ow * C + i] += w * t[k * ow * C + i];
    }
  free(wx);
  free(wy);
  free(t);
  return r;
}

/* Runs the kernel with exactly the scratch it asks for, guarded against overruns. */
static void run_kernel(const stk__image *src, const stk__image *dst, const stk__resample_args *a) {
  size_t n = stk__resample_scratch_size(src, dst->h, dst->w, a);
  assert_true(n > 0);
  uint8_t *scratch = malloc(n + 64);
  memset(scratch + n, 0xA5, 64);
  TU_OK(stk__resample(src, dst, a, scratch, n));
  for (int i = 0; i < 64; i++) assert_int_equal(scratch[n + i], 0xA5);
  free(scratch);
}

static double out_value(const stk__image *d, size_t i) {
  switch (d->dtype) {
    case STK_DTYPE_UINT8:
      return ((const uint8_t *)d->data)[i];
    case STK_DTYPE_FLOAT32:
      return ((const float *)d->data)[i];
    default:
      return stk__f16_to_f32(((const uint16_t *)d->data)[i]);
  }
}

/* Largest deviation from the reference, in the output type's terms: uint8 against the
 * clamped reference, float16 relative to its precision. Fails above `tol`. */
static double compare(const stk__image *d, const double *ref, double tol, const char *what) {
  double worst = 0;
  size_t n = (size_t)(d->h * d->w * d->c), at = 0;
  for (size_t i = 0; i < n; i++) {
    double r = ref[i], o = out_value(d, i), e;
    if (d->dtype == STK_DTYPE_UINT8)
      e = fabs(o - (r < 0 ? 0 : r > 255 ? 255 : r));
    else if (d->dtype == STK_DTYPE_FLOAT16)
      e = fabs(o - r) / (1 + fabs(r) * 1e-3 * 2);
    else
      e = fabs(o - r);
    if (e > worst) worst = e, at = i;
  }
  if (worst > tol)
    fail_msg("%s: deviation %g at element %zu (out %g, reference %g), tolerance %g", what, worst,
             at, out_value(d, at), ref[at], tol);
  return worst;
}

static double tolerance(stk_dtype t) {
  /* uint8: the rounding of a value within float32 error of the reference */
  return t == STK_DTYPE_UINT8 ? 0.51 : t == STK_DTYPE_FLOAT32 ? 2e-3 : 0.3;
}

/* ---------------------------------------------------------------------------------- */
/* Photographs                                                                        */
/* ---------------------------------------------------------------------------------- */

static uint8_t *load_rgb(const char *name, int64_t *h, int64_t *w) {
  char path[1024], rel[256];
  snprintf(rel, sizeof rel, "data/photos/%s", name);
  size_t n;
  uint8_t *png = tu_read(tu_path(path, sizeof path, rel), &n);
  spng_ctx *ctx = spng_ctx_new(0);
  assert_int_equal(spng_set_png_buffer(ctx, png, n), 0);
  struct spng_ihdr ihdr;
  assert_int_equal(spng_get_ihdr(ctx, &ihdr), 0);
  size_t size;
  assert_int_equal(spng_decoded_image_size(ctx, SPNG_FMT_RGB8, &size), 0);
  uint8_t *rgb = malloc(size);
  assert_int_equal(spng_decode_image(ctx, rgb, size, SPNG_FMT_RGB8, 0), 0);
  spng_ctx_free(ctx);
  free(png);
  *h = ihdr.height, *w = ihdr.width;
  return rgb;
}

/* C channels from an RGB photo: 1: green; 3: RGB; 4: RGB + the mirrored image's red. */
static uint8_t *with_channels(const uint8_t *rgb, int64_t h, int64_t w, int64_t C) {
  uint8_t *d = malloc((size_t)(h * w * C));
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++) {
      const uint8_t *p = rgb + (y * w + x) * 3, *q = rgb + ((h - 1 - y) * w + (w - 1 - x)) * 3;
      uint8_t *o = d + (y * w + x) * C;
      if (C == 1)
        o[0] = p[1];
      else
        for (int64_t c = 0; c < C; c++) o[c] = c < 3 ? p[c] : q[0];
    }
  return d;
}

static const char *const interp_names[] = {"nearest", "linear", "cubic", "lanczos3"};

static void check_photo(const char *name, int64_t C, int64_t crop) {
  int64_t H, W;
  uint8_t *rgb = load_rgb(name, &H, &W);
  uint8_t *img = with_channels(rgb, H, W, C);
  free(rgb);
  /* the kernel reads a dense image: take the top-left crop x crop as its own image */
  int64_t h = H < crop ? H : crop, w = W < crop ? W : crop;
  uint8_t *sub = malloc((size_t)(h * w * C));
  for (int64_t y = 0; y < h; y++) memcpy(sub + y * w * C, img + y * W * C, (size_t)(w * C));
  stk__image src = {sub, STK_DTYPE_UINT8, h, w, C};
  const int64_t sizes[2][2] = {{h * 7 / 17, w * 5 / 13}, {h * 9 / 5, w * 3 / 2}}; /* down, up */
  for (int interp = 0; interp < 4; interp++)
    for (int aa = 0; aa < 2; aa++)
      for (int s = 0; s < 2; s++) {
        int64_t oh = sizes[s][0], ow = sizes[s][1];
        stk__resample_args a = {0, 0, (double)w, (double)h, (stk__interp)interp, aa != 0, 0};
        stk__image dst = {malloc((size_t)(oh * ow * C)), STK_DTYPE_UINT8, oh, ow, C};
        run_kernel(&src, &dst, &a);
        double *ref = ref_resample(&src, oh, ow, &a);
        char what[160];
        snprintf(what, sizeof what, "%s C=%lld %s aa=%d %lldx%lld->%lldx%lld", name, (long long)C,
                 interp_names[interp], aa, (long long)h, (long long)w, (long long)oh,
                 (long long)ow);
        compare(&dst, ref, 0.51, what);
        free(ref);
        free(dst.data);
      }
  free(sub);
  free(img);
}

static void test_photos_against_reference(void **state) {
  check_photo("astronaut.png", 3, 200);
  check_photo("camera.png", 1, 256);
  check_photo("chelsea.png", 4, 160);
  check_photo("coffee.png", 3, 180);
}

/* The documented case: a 500x375 RGB photo to 224x224, linear, antialiased, both orders. */
static void test_imagenet_sized_downscale(void **state) {
  int64_t H, W;
  uint8_t *rgb = load_rgb("coffee.png", &H, &W); /* 600x400 */
  int64_t h = 375, w = 500;
  uint8_t *sub = malloc((size_t)(h * w * 3));
  for (int64_t y = 0; y < h; y++)
    memcpy(sub + y * w * 3, rgb + (y + 10) * W * 3 + 30 * 3, (size_t)(w * 3));
  stk__image src = {sub, STK_DTYPE_UINT8, h, w, 3};
  for (int interp = 1; interp < 4; interp++)
    for (int order = 0; order <= 2; order++) {
      stk__resample_args a = {0, 0, 500, 375, (stk__interp)interp, true, order};
      stk__image dst = {malloc(224 * 224 * 3), STK_DTYPE_UINT8, 224, 224, 3};
      run_kernel(&src, &dst, &a);
      double *ref = ref_resample(&src, 224, 224, &a);
      compare(&dst, ref, 0.51, interp_names[interp]);
      free(ref);
      free(dst.data);
    }
  free(sub);
  free(rgb);
}

/* ---------------------------------------------------------------------------------- */
/* Random sizes and windows                                                           */
/* ---------------------------------------------------------------------------------- */

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}
static double rnd_unit(uint64_t *s) { return rnd(s) / 2147483648.0; }
static int64_t rnd_in(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd(s) % (uint32_t)(hi - lo + 1));
}

static void test_random_windows_against_reference(void **state) {
  uint64_t seed = 0x5eed;
  static const int64_t channels[] = {1, 2, 3, 4, 5, 7};
  static const stk_dtype outs[] = {STK_DTYPE_UINT8, STK_DTYPE_UINT8, STK_DTYPE_FLOAT32,
                                   STK_DTYPE_FLOAT16};
  for (int iter = 0; iter < 400; iter++) {
    int64_t H = rnd_in(&seed, 1, 90), W = rnd_in(&seed, 1, 90), C = channels[rnd(&seed) % 6];
    bool fsrc = rnd(&seed) % 4 == 0;
    size_t n = (size_t)(H * W * C);
    void *data = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
      if (fsrc)
        ((float *)data)[i] = (float)(rnd_unit(&seed) * 350 - 50);
      else
        ((uint8_t *)data)[i] = (uint8_t)(i % 7 == 0 ? 255 * (rnd(&seed) % 2) : rnd(&seed) % 256);
    }
    stk__image src = {data, fsrc ? STK_DTYPE_FLOAT32 : STK_DTYPE_UINT8, H, W, C};
    /* windows: fractional, partly outside, sometimes mirrored or much larger */
    double ww = (0.3 + 2.0 * rnd_unit(&seed)) * W, wh = (0.3 + 2.0 * rnd_unit(&seed)) * H;
    double x0 = (rnd_unit(&seed) - 0.25) * W, y0 = (rnd_unit(&seed) - 0.25) * H;
    stk__resample_args a = {x0,
                            y0,
                            x0 + ww,
                            y0 + wh,
                            (stk__interp)(rnd(&seed) % 4),
                            rnd(&seed) % 2 == 0,
                            (int)(rnd(&seed) % 3)};
    if (rnd(&seed) % 5 == 0) a.x0 = x0 + ww, a.x1 = x0; /* mirrored */
    if (rnd(&seed) % 5 == 0) a.y0 = y0 + wh, a.y1 = y0;
    int64_t oh = rnd_in(&seed, 1, 70), ow = rnd_in(&seed, 1, 70);
    stk__image dst = {malloc((size_t)(oh * ow * C) * 4), outs[rnd(&seed) % 4], oh, ow, C};
    run_kernel(&src, &dst, &a);
    double *ref = ref_resample(&src, oh, ow, &a);
    char what[200];
    snprintf(what, sizeof what,
             "iter %d: %s %s->%s C=%lld aa=%d order=%d %lldx%lld win "
             "[%g,%g)x[%g,%g) -> %lldx%lld",
             iter, interp_names[a.interp], fsrc ? "f32" : "u8", stk_dtype_name(dst.dtype),
             (long long)C, a.antialias, a.order, (long long)H, (long long)W, a.x0, a.x1, a.y0, a.y1,
             (long long)oh, (long long)ow);
    compare(&dst, ref, tolerance(dst.dtype), what);
    free(ref);
    free(dst.data);
    free(data);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Properties                                                                         */
/* ---------------------------------------------------------------------------------- */

/* Same size, whole window, no antialias: every filter is the identity (weights are
 * exactly 1 at the sample and 0 at the other integers). */
static void test_identity_and_constant_images(void **state) {
  int64_t H, W;
  uint8_t *rgb = load_rgb("chelsea.png", &H, &W);
  stk__image src = {rgb, STK_DTYPE_UINT8, H, W, 3};
  uint8_t *out = malloc((size_t)(H * W * 3));
  for (int interp = 0; interp < 4; interp++) {
    stk__resample_args a = {0, 0, (double)W, (double)H, (stk__interp)interp, true, 0};
    stk__image dst = {out, STK_DTYPE_UINT8, H, W, 3};
    run_kernel(&src, &dst, &a);
    assert_memory_equal(out, rgb, (size_t)(H * W * 3));
  }
  /* a constant image stays constant whatever the filter, window or scale */
  memset(rgb, 77, (size_t)(H * W * 3));
  for (int interp = 0; interp < 4; interp++) {
    stk__resample_args a = {-40.5, 13.25, W + 100.0, 3.5, (stk__interp)interp, true, 0};
    stk__image dst = {out, STK_DTYPE_UINT8, 37, 301, 3};
    run_kernel(&src, &dst, &a);
    for (int64_t i = 0; i < 37 * 301 * 3; i++) assert_int_equal(out[i], 77);
  }
  free(out);
  free(rgb);
}

/* Horizontal mirroring through the window equals mirroring the output. */
static void test_mirrored_window_mirrors_output(void **state) {
  int64_t H, W;
  uint8_t *rgb = load_rgb("astronaut.png", &H, &W);
  stk__image src = {rgb, STK_DTYPE_UINT8, H, W, 3};
  int64_t oh = 97, ow = 131;
  uint8_t *a = malloc((size_t)(oh * ow * 3)), *b = malloc((size_t)(oh * ow * 3));
  for (int interp = 1; interp < 4; interp++) { /* nearest ties are not symmetric */
    stk__resample_args fwd = {10.5, 20, 400.25, 300, (stk__interp)interp, true, 0};
    stk__resample_args mir = {400.25, 300, 10.5, 20, (stk__interp)interp, true, 0};
    run_kernel(&src, &(stk__image){a, STK_DTYPE_UINT8, oh, ow, 3}, &fwd);
    run_kernel(&src, &(stk__image){b, STK_DTYPE_UINT8, oh, ow, 3}, &mir);
    for (int64_t y = 0; y < oh; y++)
      for (int64_t x = 0; x < ow; x++)
        for (int c = 0; c < 3; c++)
          assert_true(
              abs(a[(y * ow + x) * 3 + c] - b[((oh - 1 - y) * ow + (ow - 1 - x)) * 3 + c]) <= 1);
  }
  free(a);
  free(b);
  free(rgb);
}

static void test_filters_and_names(void **state) {
  stk__interp ip;
  assert_true(stk__interp_parse("lanczos3", &ip) && ip == STK__INTERP_LANCZOS3);
  assert_true(stk__interp_parse("nearest", &ip) && ip == STK__INTERP_NEAREST);
  assert_false(stk__interp_parse("bicubic", &ip));
  assert_false(stk__interp_parse(NULL, &ip));
  /* known values: Keys cubic at 0.5 = 0.5625, at 1.5 = -0.0625; triangle; Lanczos zeros */
  assert_true(fabs(stk__interp_filter(STK__INTERP_CUBIC, 0.5) - 0.5625) < 1e-12);
  assert_true(fabs(stk__interp_filter(STK__INTERP_CUBIC, -1.5) + 0.0625) < 1e-12);
  assert_true(fabs(stk__interp_filter(STK__INTERP_LINEAR, 0.25) - 0.75) < 1e-12);
  assert_true(fabs(stk__interp_filter(STK__INTERP_LANCZOS3, 2.0)) < 1e-12);
  assert_true(fabs(stk__interp_filter(STK__INTERP_LANCZOS3, 0.0) - 1.0) < 1e-12);
  for (int i = 1; i < 4; i++)
    for (double x = -3.5; x <= 3.5; x += 0.0625)
      assert_true(fabs(stk__interp_filter((stk__interp)i, x) - ref_filter(i, x)) < 1e-12);
}

static void test_bad_calls(void **state) {
  uint8_t px[12] = {0};
  uint8_t out[64];
  uint8_t scratch[4096];
  stk__image src = {px, STK_DTYPE_UINT8, 2, 2, 3};
  stk__resample_args a = {0, 0, 2, 2, STK__INTERP_LINEAR, true, 0};
  stk__image dst = {out, STK_DTYPE_UINT8, 2, 2, 3};
  stk__image i16 = {px, STK_DTYPE_INT16, 2, 2, 3};
  assert_int_equal(stk__resample(&i16, &dst, &a, scratch, sizeof scratch), STK_ERR_UNSUPPORTED);
  assert_non_null(strstr(stk_last_error(), "int16"));
  stk__image wrong_c = {out, STK_DTYPE_UINT8, 2, 2, 4};
  assert_int_equal(stk__resample(&src, &wrong_c, &a, scratch, sizeof scratch),
                   STK_ERR_INVALID_ARGUMENT);
  stk__image empty = {out, STK_DTYPE_UINT8, 0, 2, 3};
  assert_int_equal(stk__resample(&src, &empty, &a, scratch, sizeof scratch),
                   STK_ERR_INVALID_ARGUMENT);
  assert_int_equal(stk__resample_scratch_size(&src, 0, 2, &a), 0);
  stk__resample_args nan = a;
  nan.x1 = NAN;
  assert_int_equal(stk__resample(&src, &dst, &nan, scratch, sizeof scratch),
                   STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "window"));
  assert_int_equal(stk__resample(&src, &dst, &a, scratch, 16), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "scratch"));
  /* a window so large the filter would need billions of taps */
  stk__resample_args huge = {0, 0, 1e11, 2, STK__INTERP_LANCZOS3, true, 0};
  stk__image wide = {out, STK_DTYPE_UINT8, 1, 20, 3};
  assert_int_equal(stk__resample(&src, &wide, &huge, scratch, sizeof scratch), STK_ERR_LIMIT);
  /* but a 1x1 source scales to anything */
  stk__image one = {px, STK_DTYPE_UINT8, 1, 1, 3};
  px[0] = 9, px[1] = 99, px[2] = 200;
  stk__resample_args up = {0, 0, 1, 1, STK__INTERP_LANCZOS3, true, 0};
  stk__image big = {out, STK_DTYPE_UINT8, 3, 5, 3};
  run_kernel(&one, &big, &up);
  for (int i = 0; i < 15; i++)
    assert_true(out[i * 3] == 9 && out[i * 3 + 1] == 99 && out[i * 3 + 2] == 200);
}

/* ---------------------------------------------------------------------------------- */
/* DALI's resize geometry                                                             */
/* ---------------------------------------------------------------------------------- */

static void plan(double h, double w, double rh, double rw, stk__resize_mode mode, int64_t want_h,
                 int64_t want_w) {
  stk__resize_request rq = {{rh, rw}, mode, {0, 0}, false, true, {0, 0}, {h, w}};
  int64_t out[2];
  double lo[2], hi[2];
  TU_OK(stk__resize_plan(&rq, out, lo, hi));
  if (out[0] != want_h || out[1] != want_w)
    fail_msg("%gx%g (HxW) with size [%g, %g] mode %d: got %lldx%lld, want %lldx%lld", h, w, rh, rw,
             mode, (long long)out[0], (long long)out[1], (long long)want_h, (long long)want_w);
}

static void test_resize_plan_dali_rules(void **state) {
  /* DALI's documented examples: not_larger 1280x720 -> 640x480 gives 640x360;
   * not_smaller 640x480 -> 1920x1080 gives 1920x1440 (W x H) */
  plan(720, 1280, 480, 640, STK__RESIZE_NOT_LARGER, 360, 640);
  plan(480, 640, 1080, 1920, STK__RESIZE_NOT_SMALLER, 1440, 1920);
  /* one extent given: the other keeps the aspect ratio (default) or the input (stretch) */
  plan(480, 640, 0, 300, STK__RESIZE_DEFAULT, 225, 300);
  plan(480, 640, 120, 0, STK__RESIZE_DEFAULT, 120, 160);
  plan(480, 640, 0, 300, STK__RESIZE_STRETCH, 480, 300);
  plan(480, 640, 100, 100, STK__RESIZE_DEFAULT, 100, 100);
  plan(480, 640, 0, 0, STK__RESIZE_DEFAULT, 480, 640);
  /* resize_shorter = not_smaller with both sizes; resize_longer = not_larger */
  plan(375, 500, 256, 256, STK__RESIZE_NOT_SMALLER, 256, 341);
  plan(375, 500, 256, 256, STK__RESIZE_NOT_LARGER, 192, 256);
  plan(500, 375, 256, 256, STK__RESIZE_NOT_SMALLER, 341, 256);
  /* rounding half away from zero, at least one pixel */
  plan(3, 1000, 0, 10, STK__RESIZE_DEFAULT, 1, 10);
  plan(2, 5, 0, 3, STK__RESIZE_DEFAULT, 1, 3); /* 1.2 */
  plan(10, 4, 0, 2, STK__RESIZE_DEFAULT, 5, 2);
  plan(5, 4, 0, 2, STK__RESIZE_DEFAULT, 3, 2); /* 2.5 -> 3 */

  /* max_size, DALI's note: not_smaller, size 800, max 1400, a 1200x600 (WxH) image gives
   * 1400x700 */
  stk__resize_request rq = {{800, 800}, STK__RESIZE_NOT_SMALLER, {1400, 1400}, true, true, {0, 0},
                            {600, 1200}};
  int64_t out[2];
  double lo[2], hi[2];
  TU_OK(stk__resize_plan(&rq, out, lo, hi));
  assert_int_equal(out[0], 700);
  assert_int_equal(out[1], 1400);
  /* default mode: each extent is clipped to its limit */
  stk__resize_request clip = {{0, 1000}, STK__RESIZE_DEFAULT, {300, 0}, true, true,
                              {0, 0},    {400, 500}};
  TU_OK(stk__resize_plan(&clip, out, lo, hi));
  assert_int_equal(out[0], 300);
  assert_int_equal(out[1], 1000);

  /* negative size mirrors: the window is reversed */
  stk__resize_request neg = {{0, -320}, STK__RESIZE_DEFAULT, {0, 0}, false, true,
                             {0, 0},    {480, 640}};
  TU_OK(stk__resize_plan(&neg, out, lo, hi));
  assert_int_equal(out[0], 240);
  assert_int_equal(out[1], 320);
  assert_true(lo[1] == 640 && hi[1] == 0 && lo[0] == 0 && hi[0] == 480);

  /* subpixel_scale: a fractional size keeps the exact scale by resizing the window about
   * its centre; without it the whole input maps to the rounded size */
  stk__resize_request sub = {{0, 50.4}, STK__RESIZE_STRETCH, {0, 0}, false, true, {0, 0},
                             {10, 100}};
  TU_OK(stk__resize_plan(&sub, out, lo, hi));
  assert_int_equal(out[1], 50);
  assert_true(fabs((hi[1] - lo[1]) - 100.0 * 50 / 50.4) < 1e-9);
  assert_true(fabs((hi[1] + lo[1]) / 2 - 50) < 1e-9);
  sub.subpixel_scale = false;
  TU_OK(stk__resize_plan(&sub, out, lo, hi));
  assert_true(lo[1] == 0 && hi[1] == 100);

  /* a region of interest: sizes derive from its extent; reversed ROI mirrors */
  stk__resize_request roi = {{50, 0},  STK__RESIZE_DEFAULT, {0, 0}, false, true,
                             {10, 20}, {110, 220}};
  TU_OK(stk__resize_plan(&roi, out, lo, hi));
  assert_int_equal(out[0], 50);
  assert_int_equal(out[1], 100);
  assert_true(lo[0] == 10 && hi[0] == 110 && lo[1] == 20 && hi[1] == 220);
  stk__resize_request rev = {{50, 0}, STK__RESIZE_DEFAULT, {0, 0},   false,
                             true,    {110, 20},           {10, 220}};
  TU_OK(stk__resize_plan(&rev, out, lo, hi));
  assert_int_equal(out[1], 100);
  assert_true(lo[0] == 110 && hi[0] == 10);

  stk__resize_request bad = {{NAN, 10}, STK__RESIZE_DEFAULT, {0, 0}, false, true, {0, 0}, {10, 10}};
  assert_int_equal(stk__resize_plan(&bad, out, lo, hi), STK_ERR_INVALID_ARGUMENT);
  stk__resize_request big = {{1e12, 10}, STK__RESIZE_DEFAULT, {0, 0}, false, true, {0, 0},
                             {10, 10}};
  assert_int_equal(stk__resize_plan(&big, out, lo, hi), STK_ERR_INVALID_ARGUMENT);
  stk__resize_mode m;
  assert_true(stk__resize_mode_parse("not_smaller", &m) && m == STK__RESIZE_NOT_SMALLER);
  assert_false(stk__resize_mode_parse("fit", &m));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_filters_and_names),
      cmocka_unit_test(test_photos_against_reference),
      cmocka_unit_test(test_imagenet_sized_downscale),
      cmocka_unit_test(test_random_windows_against_reference),
      cmocka_unit_test(test_identity_and_constant_images),
      cmocka_unit_test(test_mirrored_window_mirrors_output),
      cmocka_unit_test(test_bad_calls),
      cmocka_unit_test(test_resize_plan_dali_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
