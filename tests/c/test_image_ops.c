/* Image operators: the fused crop_mirror_normalize pass against a naive per-pixel
 * formula, crop geometry and the crop kernel, flip, cast's saturating conversions,
 * the random crop window's statistics, and the operators (resize, random_resized_crop,
 * crop, flip, crop_mirror_normalize, cast) through the pipeline with their arguments,
 * per-sample feeds and errors. */
#include <math.h>
#include <spng.h>
#include <stdlib.h>
#include <string.h>

#include "ops/crop_window.h"
#include "ops/image_util.h"
#include "ops/resample.h"
#include "testutil.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */
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

/* Element i of any dtype as a double (the test's own reader). */
static double get(const void *p, stk_dtype t, size_t i) {
  switch (t) {
    case STK_DTYPE_UINT8:
      return ((const uint8_t *)p)[i];
    case STK_DTYPE_INT8:
      return ((const int8_t *)p)[i];
    case STK_DTYPE_UINT16:
      return ((const uint16_t *)p)[i];
    case STK_DTYPE_INT16:
      return ((const int16_t *)p)[i];
    case STK_DTYPE_INT32:
      return ((const int32_t *)p)[i];
    case STK_DTYPE_FLOAT16:
      return stk__f16_to_f32(((const uint16_t *)p)[i]);
    case STK_DTYPE_FLOAT32:
      return ((const float *)p)[i];
    case STK_DTYPE_FLOAT64:
      return ((const double *)p)[i];
    default:
      fail_msg("type %d not handled by the test", (int)t);
      return 0;
  }
}

/* What a value becomes in an integer type: round half away from zero, saturate. */
static double saturate(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  v = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
  return v < lo ? lo : v > hi ? hi : v;
}

/* Checks a stored value against the exact value it should represent. */
static void expect_stored(stk_dtype t, double got, double exact, const char *what, size_t i) {
  double want, tol = 0;
  switch (t) {
    case STK_DTYPE_UINT8:
      want = saturate(exact, 0, 255);
      break;
    case STK_DTYPE_INT8:
      want = saturate(exact, -128, 127);
      break;
    case STK_DTYPE_FLOAT16:
      want = exact, tol = fabs(exact) * (1.0 / 1024) + 1e-7;
      break;
    default:
      want = exact, tol = fabs(exact) * 1e-6 + 1e-6;
      break;
  }
  if (!(fabs(got - want) <= tol))
    fail_msg("%s: element %zu is %.9g, expected %.9g (exact %.9g)", what, i, got, want, exact);
}

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* ---------------------------------------------------------------------------------- */
/* crop_mirror_normalize kernel                                                       */
/* ---------------------------------------------------------------------------------- */

/* The published formula, per output element, written independently of the kernel. */
static double cmn_naive(const stk__image *src, const stk__cmn_params *p, int64_t y, int64_t x,
                        int64_t c) {
  int64_t sy = p->win.y + y, sx = p->win.x + (p->mirror ? p->win.w - 1 - x : x);
  if (c >= src->c || sy < 0 || sy >= src->h || sx < 0 || sx >= src->w) return p->fill[c];
  double v = get(src->data, src->dtype, (size_t)((sy * src->w + sx) * src->c + c));
  return (v - p->mean[c]) / p->stddev[c] * p->scale + p->shift;
}

static void check_cmn(const stk__image *src, stk__cmn_params p, stk_dtype out_t, int64_t out_c) {
  stk__image dst = {NULL, out_t, p.win.h, p.win.w, out_c};
  size_t n = (size_t)(dst.h * dst.w * out_c);
  dst.data = malloc(n * 4 + 1);
  size_t ss = stk__cmn_scratch_size(src, &dst);
  uint8_t *scratch = malloc(ss + 32);
  memset(scratch + ss, 0x5A, 32);
  TU_OK(stk__cmn(src, &dst, &p, scratch, ss));
  for (int i = 0; i < 32; i++) assert_int_equal(scratch[ss + i], 0x5A);
  char what[200];
  snprintf(what, sizeof what, "cmn %s->%s %s mirror=%d win %lldx%lld@(%lld,%lld) C=%lld->%lld",
           stk_dtype_name(src->dtype), stk_dtype_name(out_t), p.planar ? "CHW" : "HWC", p.mirror,
           (long long)p.win.h, (long long)p.win.w, (long long)p.win.y, (long long)p.win.x,
           (long long)src->c, (long long)out_c);
  for (int64_t y = 0; y < dst.h; y++)
    for (int64_t x = 0; x < dst.w; x++)
      for (int64_t c = 0; c < out_c; c++) {
        size_t i = (size_t)(p.planar ? (c * dst.h + y) * dst.w + x : (y * dst.w + x) * out_c + c);
        expect_stored(out_t, get(dst.data, out_t, i), cmn_naive(src, &p, y, x, c), what, i);
      }
  free(scratch);
  free(dst.data);
}

static void test_cmn_against_naive_formula(void **state) {
  int64_t H, W;
  uint8_t *rgb = load_rgb("chelsea.png", &H, &W);
  float *f = malloc(sizeof(float) * (size_t)(H * W * 3));
  for (int64_t i = 0; i < H * W * 3; i++) f[i] = rgb[i] / 255.0f - 0.3f + (float)(i % 5) * 1e-3f;
  stk__image u8 = {rgb, STK_DTYPE_UINT8, H, W, 3}, f32 = {f, STK_DTYPE_FLOAT32, H, W, 3};
  double mean[3] = {123.675, 116.28, 103.53}, sd[3] = {58.395, 57.12, 57.375};
  double fmean[3] = {0.485, 0.456, 0.406}, fsd[3] = {0.229, 0.224, 0.225};
  double fill[4] = {-1.5, 7, 300, 0.25};
  static const stk_dtype types[] = {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16, STK_DTYPE_UINT8,
                                    STK_DTYPE_INT8};
  /* windows: inside; partly outside on every side (padding) */
  stk__rect wins[] = {{38, 100, 224, 224}, {-20, W - 150, 100, 190}, {H - 50, -31, 90, 77}};
  for (int t = 0; t < 4; t++)
    for (int planar = 0; planar < 2; planar++)
      for (int mirror = 0; mirror < 2; mirror++)
        for (int wi = 0; wi < 3; wi++)
          for (int pad = 0; pad < 2; pad++) {
            bool integer = types[t] == STK_DTYPE_UINT8 || types[t] == STK_DTYPE_INT8;
            /* integer outputs: scale and shift that reach both saturation limits */
            stk__cmn_params p = {wins[wi], mirror != 0,          planar != 0,          mean,
                                 sd,       integer ? 90.0 : 1.0, integer ? 20.0 : 0.0, fill};
            check_cmn(&u8, p, types[t], pad ? 4 : 3);
            stk__cmn_params pf = {wins[wi], mirror != 0,          planar != 0,         fmean,
                                  fsd,      integer ? 50.0 : 1.0, integer ? 5.0 : 0.0, fill};
            check_cmn(&f32, pf, types[t], pad ? 4 : 3);
          }
  /* one channel and seven channels */
  uint8_t *g = malloc((size_t)(H * W * 7));
  for (int64_t i = 0; i < H * W * 7; i++) g[i] = rgb[i % (H * W * 3)];
  double m7[7] = {1, 2, 3, 4, 5, 6, 7}, s7[7] = {1, 2, 3, 4, 5, 6, 0.5}, f8[8] = {0};
  stk__image g1 = {g, STK_DTYPE_UINT8, H, W, 1}, g7 = {g, STK_DTYPE_UINT8, H, W, 7};
  check_cmn(&g1, (stk__cmn_params){{5, 6, 50, 60}, true, true, m7, s7, 1, 0, f8}, STK_DTYPE_FLOAT32,
            1);
  check_cmn(&g7, (stk__cmn_params){{5, 6, 50, 60}, true, false, m7, s7, 1, 0, f8},
            STK_DTYPE_FLOAT32, 8);
  check_cmn(&g7, (stk__cmn_params){{-5, -6, 50, 60}, false, true, m7, s7, 1, 0, f8},
            STK_DTYPE_FLOAT16, 7);
  /* errors */
  double zero[3] = {1, 0, 1};
  stk__image dst = {g, STK_DTYPE_FLOAT32, 10, 10, 3};
  uint8_t scratch[1 << 14];
  stk__cmn_params bad = {{0, 0, 10, 10}, false, true, mean, zero, 1, 0, fill};
  assert_int_equal(stk__cmn(&u8, &dst, &bad, scratch, sizeof scratch), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "std[1]"));
  bad.stddev = sd;
  stk__image i16 = {g, STK_DTYPE_INT16, 10, 10, 3};
  assert_int_equal(stk__cmn(&u8, &i16, &bad, scratch, sizeof scratch), STK_ERR_UNSUPPORTED);
  stk__image wrong = {g, STK_DTYPE_FLOAT32, 11, 10, 3};
  assert_int_equal(stk__cmn(&u8, &wrong, &bad, scratch, sizeof scratch), STK_ERR_INVALID_ARGUMENT);
  free(g);
  free(f);
  free(rgb);
}

/* ---------------------------------------------------------------------------------- */
/* Crop geometry and kernel                                                           */
/* ---------------------------------------------------------------------------------- */

static void test_crop_rect_positions_and_policies(void **state) {
  stk__rect r;
  /* anchor = round(pos * (in - crop)), half away from zero */
  assert_true(stk__crop_rect(100, 200, 50, 100, 0.5, 0.5, false, STK__OOB_ERROR, &r));
  assert_true(r.y == 25 && r.x == 50 && r.h == 50 && r.w == 100);
  assert_true(stk__crop_rect(10, 10, 5, 5, 0.5, 0.5, false, STK__OOB_ERROR, &r));
  assert_true(r.y == 3 && r.x == 3); /* 2.5 -> 3 */
  assert_true(stk__crop_rect(10, 10, 5, 5, 0.5, 0.5, true, STK__OOB_ERROR, &r));
  assert_true(r.y == 2 && r.x == 2); /* truncated */
  assert_true(stk__crop_rect(100, 200, 50, 100, 0.0, 1.0, false, STK__OOB_ERROR, &r));
  assert_true(r.y == 0 && r.x == 100);
  assert_true(stk__crop_rect(100, 200, 50, 100, 1.0, 0.0, false, STK__OOB_ERROR, &r));
  assert_true(r.y == 50 && r.x == 0);
  /* extents are truncated; 0 means the whole extent */
  assert_true(stk__crop_rect(100, 200, 49.9, 0, 0.5, 0.5, false, STK__OOB_ERROR, &r));
  assert_true(r.h == 49 && r.y == 26 && r.w == 200 && r.x == 0);
  /* larger than the image: error, pad (negative anchor), or trim to the image */
  assert_false(stk__crop_rect(100, 200, 120, 100, 0.5, 0.5, false, STK__OOB_ERROR, &r));
  assert_true(stk__crop_rect(100, 200, 120, 100, 0.5, 0.5, false, STK__OOB_PAD, &r));
  assert_true(r.y == -10 && r.h == 120);
  assert_true(stk__crop_rect(100, 200, 121, 100, 0.5, 0.5, false, STK__OOB_PAD, &r));
  assert_true(r.y == -11); /* -10.5 rounds away from zero */
  assert_true(stk__crop_rect(100, 200, 120, 300, 0.25, 1.0, false, STK__OOB_TRIM, &r));
  assert_true(r.y == 0 && r.h == 100 && r.x == 0 && r.w == 200);
  stk__oob_policy pol;
  assert_true(stk__oob_parse("trim_to_shape", &pol) && pol == STK__OOB_TRIM);
  assert_false(stk__oob_parse("clamp", &pol));
}

static void check_crop(const stk__image *src, int64_t y, int64_t x, int64_t h, int64_t w,
                       stk_dtype out_t, const double *fill) {
  int64_t C = src->c;
  stk__image dst = {malloc((size_t)(h * w * C) * 8 + 1), out_t, h, w, C};
  uint8_t px[64];
  stk__fill_pixel(px, out_t, (size_t)C, fill, (size_t)C);
  stk__crop_hwc(src, y, x, &dst, px);
  for (int64_t r = 0; r < h; r++)
    for (int64_t q = 0; q < w; q++)
      for (int64_t c = 0; c < C; c++) {
        int64_t sy = y + r, sx = x + q;
        bool in = sy >= 0 && sy < src->h && sx >= 0 && sx < src->w;
        double exact =
            in ? get(src->data, src->dtype, (size_t)((sy * src->w + sx) * C + c)) : fill[c];
        size_t i = (size_t)((r * w + q) * C + c);
        expect_stored(out_t, get(dst.data, out_t, i), exact, "crop", i);
      }
  free(dst.data);
}

static void test_crop_kernel(void **state) {
  int64_t H, W;
  uint8_t *rgb = load_rgb("coffee.png", &H, &W);
  stk__image src = {rgb, STK_DTYPE_UINT8, H, W, 3};
  double fill[3] = {1, 2, 300};
  check_crop(&src, 10, 20, 100, 150, STK_DTYPE_UINT8, fill);
  check_crop(&src, -10, -20, 100, 150, STK_DTYPE_UINT8, fill); /* fill 300 saturates */
  check_crop(&src, H - 30, W - 40, 100, 150, STK_DTYPE_FLOAT32, fill);
  check_crop(&src, -5, -5, H + 10, W + 10, STK_DTYPE_FLOAT16, fill);
  check_crop(&src, H + 5, 0, 3, 4, STK_DTYPE_UINT8, fill); /* entirely outside */
  float *f = malloc(sizeof(float) * 60);
  for (int i = 0; i < 60; i++) f[i] = (float)(i * 13.37 - 250.5);
  stk__image fs = {f, STK_DTYPE_FLOAT32, 4, 5, 3};
  check_crop(&fs, -1, 1, 5, 5, STK_DTYPE_UINT8, fill); /* rounding, saturation */
  check_crop(&fs, 0, 0, 4, 5, STK_DTYPE_INT8, fill);
  free(f);
  free(rgb);
}

/* ---------------------------------------------------------------------------------- */
/* Flip                                                                               */
/* ---------------------------------------------------------------------------------- */

static void check_flip(int64_t outer, int64_t h, int64_t mid, int64_t w, int64_t inner, stk_dtype t,
                       uint64_t *seed) {
  size_t es = stk_dtype_size(t), n = (size_t)(outer * h * mid * w * inner);
  uint8_t *src = malloc(n * es), *dst = malloc(n * es);
  for (size_t i = 0; i < n * es; i++) src[i] = (uint8_t)rnd(seed);
  for (int f = 0; f < 4; f++) {
    bool hz = f & 1, vt = f & 2;
    stk__flip(src, dst, es, outer, h, mid, w, inner, hz, vt);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t m = 0; m < mid; m++)
          for (int64_t x = 0; x < w; x++) {
            int64_t sy = vt ? h - 1 - y : y, sx = hz ? w - 1 - x : x;
            size_t di = (size_t)((((o * h + y) * mid + m) * w + x) * inner);
            size_t si = (size_t)((((o * h + sy) * mid + m) * w + sx) * inner);
            assert_memory_equal(dst + di * es, src + si * es, (size_t)inner * es);
          }
  }
  free(src);
  free(dst);
}

static void test_flip_exact(void **state) {
  uint64_t seed = 42;
  check_flip(1, 37, 1, 53, 3, STK_DTYPE_UINT8, &seed);   /* HWC RGB */
  check_flip(1, 8, 1, 9, 4, STK_DTYPE_UINT8, &seed);     /* RGBA */
  check_flip(1, 5, 1, 300, 1, STK_DTYPE_UINT8, &seed);   /* HW */
  check_flip(3, 11, 1, 13, 1, STK_DTYPE_FLOAT32, &seed); /* CHW */
  check_flip(2, 7, 3, 9, 5, STK_DTYPE_INT16, &seed);     /* extra axes */
  check_flip(1, 1, 1, 1, 3, STK_DTYPE_FLOAT64, &seed);
  /* the photo: flipping twice restores it */
  int64_t H, W;
  uint8_t *rgb = load_rgb("astronaut.png", &H, &W);
  uint8_t *a = malloc((size_t)(H * W * 3)), *b = malloc((size_t)(H * W * 3));
  stk__flip(rgb, a, 1, 1, H, 1, W, 3, true, true);
  assert_true(memcmp(a, rgb, (size_t)(H * W * 3)) != 0);
  stk__flip(a, b, 1, 1, H, 1, W, 3, true, true);
  assert_memory_equal(b, rgb, (size_t)(H * W * 3));
  free(a), free(b), free(rgb);
}

/* ---------------------------------------------------------------------------------- */
/* Cast                                                                               */
/* ---------------------------------------------------------------------------------- */

static void test_cast_saturation_and_rounding(void **state) {
  const float fin[] = {2.5f,   -2.5f, 254.5f,   255.5f,    -0.4f,  -0.5f,   0.49999997f, 1e10f,
                       -1e10f, NAN,   INFINITY, -INFINITY, 127.5f, -128.5f, 65535.4f};
  uint8_t u8[15];
  int8_t i8[15];
  uint16_t u16[15];
  int32_t i32[15];
  stk__convert(u8, STK_DTYPE_UINT8, fin, STK_DTYPE_FLOAT32, 15);
  stk__convert(i8, STK_DTYPE_INT8, fin, STK_DTYPE_FLOAT32, 15);
  stk__convert(u16, STK_DTYPE_UINT16, fin, STK_DTYPE_FLOAT32, 15);
  stk__convert(i32, STK_DTYPE_INT32, fin, STK_DTYPE_FLOAT32, 15);
  const uint8_t eu8[] = {3, 0, 255, 255, 0, 0, 0, 255, 0, 0, 255, 0, 128, 0, 255};
  const int8_t ei8[] = {3, -3, 127, 127, 0, -1, 0, 127, -128, 0, 127, -128, 127, -128, 127};
  const uint16_t eu16[] = {3, 0, 255, 256, 0, 0, 0, 65535, 0, 0, 65535, 0, 128, 0, 65535};
  const int32_t ei32[] = {3,         -3, 255,       256,       0,   -1,   0,    INT32_MAX,
                          INT32_MIN, 0,  INT32_MAX, INT32_MIN, 128, -129, 65535};
  assert_memory_equal(u8, eu8, sizeof u8);
  assert_memory_equal(i8, ei8, sizeof i8);
  assert_memory_equal(u16, eu16, sizeof u16);
  assert_memory_equal(i32, ei32, sizeof i32);
  /* the vectorised float -> uint8 path over a long run agrees with the scalar rule */
  float ramp[1000];
  uint8_t ro[1000];
  for (int i = 0; i < 1000; i++) ramp[i] = -20.0f + i * 0.3f;
  ramp[17] = NAN;
  stk__convert(ro, STK_DTYPE_UINT8, ramp, STK_DTYPE_FLOAT32, 1000);
  for (int i = 0; i < 1000; i++) assert_int_equal(ro[i], (int)saturate(ramp[i], 0, 255));
  /* integer to integer */
  const int64_t big[] = {INT64_MIN, -1, 0, 300, INT64_MAX};
  uint64_t u64[5];
  int16_t i16[5];
  stk__convert(u64, STK_DTYPE_UINT64, big, STK_DTYPE_INT64, 5);
  stk__convert(i16, STK_DTYPE_INT16, big, STK_DTYPE_INT64, 5);
  assert_true(u64[0] == 0 && u64[1] == 0 && u64[3] == 300 && u64[4] == (uint64_t)INT64_MAX);
  assert_true(i16[0] == INT16_MIN && i16[1] == -1 && i16[3] == 300 && i16[4] == INT16_MAX);
  const uint64_t ubig[] = {UINT64_MAX, 5};
  int64_t s64[2];
  uint8_t b[2];
  stk__convert(s64, STK_DTYPE_INT64, ubig, STK_DTYPE_UINT64, 2);
  assert_true(s64[0] == INT64_MAX && s64[1] == 5);
  stk__convert(b, STK_DTYPE_BOOL, ubig, STK_DTYPE_UINT64, 2);
  assert_true(b[0] == 1 && b[1] == 1);
  const double huge[] = {1e30, -1e30, 18446744073709551615.0, 9.3e18};
  uint64_t hu[4];
  int64_t hs[4];
  stk__convert(hu, STK_DTYPE_UINT64, huge, STK_DTYPE_FLOAT64, 4);
  stk__convert(hs, STK_DTYPE_INT64, huge, STK_DTYPE_FLOAT64, 4);
  assert_true(hu[0] == UINT64_MAX && hu[1] == 0 && hu[2] == UINT64_MAX &&
              hu[3] == 9300000000000000000ull);
  assert_true(hs[0] == INT64_MAX && hs[1] == INT64_MIN && hs[3] == INT64_MAX);
  /* floats: uint8 -> float16 exact; float -> bool; float16 <-> float32 */
  uint8_t all[256];
  uint16_t h[256];
  float back[256];
  for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
  stk__convert(h, STK_DTYPE_FLOAT16, all, STK_DTYPE_UINT8, 256);
  stk__convert(back, STK_DTYPE_FLOAT32, h, STK_DTYPE_FLOAT16, 256);
  for (int i = 0; i < 256; i++) assert_true(back[i] == (float)i);
  const float fb[] = {0.0f, -0.0f, 0.1f, -3.0f};
  uint8_t bb[4];
  stk__convert(bb, STK_DTYPE_BOOL, fb, STK_DTYPE_FLOAT32, 4);
  assert_true(bb[0] == 0 && bb[1] == 0 && bb[2] == 1 && bb[3] == 1);
  const int32_t ints[] = {16777217, -7};
  float fl[2];
  double dl[2];
  stk__convert(fl, STK_DTYPE_FLOAT32, ints, STK_DTYPE_INT32, 2);
  stk__convert(dl, STK_DTYPE_FLOAT64, ints, STK_DTYPE_INT32, 2);
  assert_true(fl[0] == 16777216.0f && fl[1] == -7.0f && dl[0] == 16777217.0);
}

/* ---------------------------------------------------------------------------------- */
/* Random crop window                                                                 */
/* ---------------------------------------------------------------------------------- */

static void test_random_crop_window_statistics(void **state) {
  const int W = 500, H = 375, N = 40000;
  const double amin = 0.08, amax = 1.0, rmin = 3.0 / 4, rmax = 4.0 / 3;
  int area_bins[10] = {0}, ratio_bins[10] = {0}, x_bins[4] = {0}, small = 0;
  for (int i = 0; i < N; i++) {
    stk__philox g;
    stk__philox_init(&g, 777, (uint64_t)i);
    stk__crop_window c = stk__random_crop_window(&g, W, H, amin, amax, rmin, rmax, 10);
    assert_true(c.x >= 0 && c.y >= 0 && c.w >= 1 && c.h >= 1 && c.x + c.w <= W && c.y + c.h <= H);
    double area = (double)c.w * c.h / (W * H), lr = log((double)c.w / c.h);
    /* within the ranges up to the rounding of w and h to whole pixels */
    assert_true(area >= amin * 0.97 && area <= amax);
    assert_true(lr >= log(rmin) - 0.03 && lr <= log(rmax) + 0.03);
    /* below half the area every draw fits, so area ~ U(amin, 0.5) and log ratio ~ U */
    if (area < 0.5 && area > amin * 1.03) {
      small++;
      area_bins[(int)((area - amin) / (0.5 - amin) * 10) % 10]++;
      double u = (lr - log(rmin)) / (log(rmax) - log(rmin));
      ratio_bins[u <= 0 ? 0 : u >= 1 ? 9 : (int)(u * 10)]++;
      if (W - c.w >= 40) x_bins[(int)(4.0 * c.x / (W - c.w + 1))]++;
    }
    /* same ordinal, same window */
    stk__philox g2;
    stk__philox_init(&g2, 777, (uint64_t)i);
    stk__crop_window c2 = stk__random_crop_window(&g2, W, H, amin, amax, rmin, rmax, 10);
    assert_true(c2.x == c.x && c2.y == c.y && c2.w == c.w && c2.h == c.h);
  }
  assert_true(small > N / 3);
  for (int b = 1; b < 9; b++) { /* edge bins lose a little to the rounding margins */
    double e = small / 10.0;
    if (fabs(area_bins[b] - e) > 0.12 * e)
      fail_msg("area bin %d: %d of %d", b, area_bins[b], small);
    if (fabs(ratio_bins[b] - e) > 0.15 * e)
      fail_msg("ratio bin %d: %d of %d", b, ratio_bins[b], small);
  }
  int xs = x_bins[0] + x_bins[1] + x_bins[2] + x_bins[3];
  for (int b = 0; b < 4; b++) assert_true(fabs(x_bins[b] - xs / 4.0) < 0.1 * xs / 4.0);

  /* an extreme aspect: no draw fits, torchvision's fallback is a centre crop at the
   * nearest allowed ratio */
  for (int i = 0; i < 100; i++) {
    stk__philox g;
    stk__philox_init(&g, 5, (uint64_t)i);
    stk__crop_window c = stk__random_crop_window(&g, 2000, 10, amin, amax, rmin, rmax, 10);
    assert_true(c.h == 10 && c.w == 13 && c.y == 0 && c.x == (2000 - 13) / 2);
    c = stk__random_crop_window(&g, 10, 2000, amin, amax, rmin, rmax, 10);
    assert_true(c.w == 10 && c.h == 13 && c.x == 0 && c.y == (2000 - 13) / 2);
  }
}

/* ---------------------------------------------------------------------------------- */
/* The operators through the pipeline                                                 */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  uint8_t *data;
  int64_t h, w;
} photo;

static photo photo_load(const char *name) {
  photo p;
  p.data = load_rgb(name, &p.h, &p.w);
  return p;
}

static stk_tensor_desc hwc_desc(const photo *p) {
  stk_tensor_desc d = {.data = p->data,
                       .ndim = 3,
                       .shape = {p->h, p->w, 3},
                       .strides = {p->w * 3, 3, 1},
                       .dtype = STK_DTYPE_UINT8};
  strcpy(d.layout, "HWC");
  return d;
}

static stk_pipeline *build(const char *text) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

/* Feeds the two photos to "src" and, when given, per-sample float vectors to "arg". */
static stk_batch *run_two(stk_pipeline *p, const photo *a, const photo *b, const float *args,
                          int64_t nargs) {
  stk_tensor_desc d[2] = {hwc_desc(a), hwc_desc(b)};
  TU_OK(stk_pipeline_feed(p, "src", d, 2));
  if (args) {
    stk_tensor_desc v[2];
    for (int i = 0; i < 2; i++)
      v[i] = (stk_tensor_desc){.data = (void *)(args + i * nargs),
                               .ndim = 1,
                               .shape = {nargs},
                               .strides = {4},
                               .dtype = STK_DTYPE_FLOAT32};
    TU_OK(stk_pipeline_feed(p, "arg", v, 2));
  }
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  return out;
}

static void sample_of(stk_batch *b, size_t out, size_t i, stk_tensor_desc *d) {
  TU_OK(stk_tensor_list_sample(stk_batch_output(b, out), i, d));
}

/* The resize operator's output equals the kernel on the window DALI's rules give for
 * resize_shorter = `shorter` (subpixel scale: a fractional size narrows the window). */
static void expect_resized(const stk_tensor_desc *d, const photo *in, int64_t oh, int64_t ow,
                           stk__interp ip, double shorter) {
  assert_int_equal(d->ndim, 3);
  assert_int_equal(d->shape[0], oh);
  assert_int_equal(d->shape[1], ow);
  assert_int_equal(d->shape[2], 3);
  assert_string_equal(d->layout, "HWC");
  stk__image src = {in->data, STK_DTYPE_UINT8, in->h, in->w, 3};
  stk__image ref = {malloc((size_t)(oh * ow * 3)), STK_DTYPE_UINT8, oh, ow, 3};
  stk__resize_request rq = {{shorter, shorter},
                            STK__RESIZE_NOT_SMALLER,
                            {0, 0},
                            false,
                            true,
                            {0, 0},
                            {(double)in->h, (double)in->w}};
  int64_t size[2];
  double lo[2], hi[2];
  TU_OK(stk__resize_plan(&rq, size, lo, hi));
  assert_true(size[0] == oh && size[1] == ow);
  stk__resample_args a = {lo[1], lo[0], hi[1], hi[0], ip, true, 0};
  size_t n = stk__resample_scratch_size(&src, oh, ow, &a);
  void *s = malloc(n);
  TU_OK(stk__resample(&src, &ref, &a, s, n));
  assert_memory_equal(d->data, ref.data, (size_t)(oh * ow * 3));
  free(s);
  free(ref.data);
}

static void test_resize_operator(void **state) {
  photo a = photo_load("chelsea.png"), b = photo_load("coffee.png"); /* 451x300, 600x400 */
  /* resize_shorter: both shorter sides become 100, aspect kept */
  stk_pipeline *p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "out = resize(src, resize_shorter=100, interp_type=\"cubic\")\nreturn out\n");
  stk_batch *out = run_two(p, &a, &b, NULL, 0);
  stk_tensor_desc d;
  sample_of(out, 0, 0, &d);
  expect_resized(&d, &a, 100, 150, STK__INTERP_CUBIC, 100); /* 451 * 100 / 300 = 150.3 */
  sample_of(out, 0, 1, &d);
  expect_resized(&d, &b, 100, 150, STK__INTERP_CUBIC, 100);
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* size fed per sample; float output */
  p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "arg = external_source(name=\"arg\")\n"
      "out = resize(src, size=arg, dtype=\"float32\", name=\"rs\")\nreturn out\n");
  const float sizes[4] = {60, 0, 33, 44}; /* [H, W]: 0 derives W from the aspect ratio */
  out = run_two(p, &a, &b, sizes, 2);
  sample_of(out, 0, 0, &d);
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  assert_true(d.shape[0] == 60 && d.shape[1] == 90); /* 451 * 60 / 300 = 90.2 */
  sample_of(out, 0, 1, &d);
  assert_true(d.shape[0] == 33 && d.shape[1] == 44);
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* resize_x fed per sample, negative mirrors */
  p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "arg = external_source(name=\"arg\")\n"
      "out = resize(src, resize_x=arg, interp_type=\"nearest\")\nreturn out\n");
  const float xs[2] = {-451, 200};
  out = run_two(p, &a, &b, xs, 1);
  sample_of(out, 0, 0, &d);
  assert_true(d.shape[0] == 300 && d.shape[1] == 451);
  const uint8_t *m = d.data;
  for (int64_t y = 0; y < 300; y += 37)
    for (int64_t x = 0; x < 451; x += 11)
      assert_memory_equal(m + (y * 451 + x) * 3, a.data + (y * 451 + (450 - x)) * 3, 3);
  sample_of(out, 0, 1, &d);
  assert_true(d.shape[0] == 133 && d.shape[1] == 200); /* 400 * 200 / 600 = 133.3 */
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* mode not_larger with max_size; roi */
  p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "out = resize(src, size=[1000, 1000], mode=\"not_larger\", max_size=[200, 250])\n"
      "r = resize(src, roi_start=[0.25, 0.5], roi_end=[0.75, 1.0], roi_relative=true, "
      "resize_y=50)\n"
      "return out, r\n");
  out = run_two(p, &a, &b, NULL, 0);
  sample_of(out, 0, 0, &d);
  assert_true(d.shape[0] == 166 && d.shape[1] == 250); /* scale min(1000/300, 250/451) */
  sample_of(out, 1, 1, &d);
  assert_true(d.shape[0] == 50 && d.shape[1] == 75); /* ROI 200x300 */
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* build-time errors name the instance */
  stk_pipeline *bad;
  TU_OK(
      stk_pipeline_from_text("batch_size = 2\nsrc = external_source(name=\"src\")\n"
                             "out = resize(src, size=[10, 10], resize_x=5, name=\"twice\")\n"
                             "return out\n",
                             &bad));
  assert_int_equal(stk_pipeline_build(bad), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "twice"));
  assert_non_null(strstr(stk_last_error(), "exactly one way"));
  stk_pipeline_destroy(bad);
  TU_OK(
      stk_pipeline_from_text("batch_size = 2\nsrc = external_source(name=\"src\")\n"
                             "out = resize(src, resize_shorter=10, mode=\"stretch\", name=\"m\")\n"
                             "return out\n",
                             &bad));
  assert_int_equal(stk_pipeline_build(bad), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "mode"));
  stk_pipeline_destroy(bad);
  free(a.data), free(b.data);
}

static void test_random_resized_crop_operator(void **state) {
  photo a = photo_load("astronaut.png"), b = photo_load("chelsea.png");
  const char *text =
      "batch_size = 2\nseed = 3\nnum_threads = %d\n"
      "src = external_source(layout=\"HWC\", name=\"src\")\n"
      "out = random_resized_crop(src, size=[64, 48])\nreturn out\n";
  char t1[512], t2[512];
  snprintf(t1, sizeof t1, text, 1);
  snprintf(t2, sizeof t2, text, 2);
  stk_pipeline *p1 = build(t1), *p2 = build(t2);
  for (int r = 0; r < 3; r++) {
    stk_batch *o1 = run_two(p1, &a, &b, NULL, 0), *o2 = run_two(p2, &a, &b, NULL, 0);
    for (size_t i = 0; i < 2; i++) {
      stk_tensor_desc d1, d2;
      sample_of(o1, 0, i, &d1);
      sample_of(o2, 0, i, &d2);
      assert_true(d1.shape[0] == 64 && d1.shape[1] == 48 && d1.shape[2] == 3);
      assert_memory_equal(d1.data, d2.data, 64 * 48 * 3); /* thread count does not matter */
    }
    stk_batch_release(o1);
    stk_batch_release(o2);
  }
  stk_pipeline_destroy(p1);
  stk_pipeline_destroy(p2);
  /* a constant image stays constant */
  memset(a.data, 200, (size_t)(a.h * a.w * 3));
  stk_pipeline *p = build(t1);
  stk_batch *o = run_two(p, &a, &a, NULL, 0);
  stk_tensor_desc d;
  sample_of(o, 0, 1, &d);
  for (int i = 0; i < 64 * 48 * 3; i++) assert_int_equal(((uint8_t *)d.data)[i], 200);
  stk_batch_release(o);
  stk_pipeline_destroy(p);
  stk_pipeline *bad;
  TU_OK(stk_pipeline_from_text(
      "batch_size = 2\nsrc = external_source(name=\"src\")\n"
      "out = random_resized_crop(src, size=[8, 8], random_area=[0.5, 0.1], name=\"rrc\")\n"
      "return out\n",
      &bad));
  assert_int_equal(stk_pipeline_build(bad), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "random_area"));
  stk_pipeline_destroy(bad);
  free(a.data), free(b.data);
}

static void test_crop_flip_cast_operators(void **state) {
  photo a = photo_load("chelsea.png"), b = photo_load("coffee.png");
  stk_pipeline *p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "arg = external_source(name=\"arg\")\n"
      "c = crop(src, crop=[100, 120], crop_pos_x=arg, crop_pos_y=0.0)\n"
      "f = flip(src, horizontal=0, vertical=1)\n"
      "k = cast(src, dtype=\"float32\")\n"
      "return c, f, k\n");
  const float pos[2] = {0.0f, 1.0f};
  stk_batch *out = run_two(p, &a, &b, pos, 1);
  stk_tensor_desc d;
  sample_of(out, 0, 0, &d); /* top-left */
  assert_true(d.shape[0] == 100 && d.shape[1] == 120);
  for (int64_t y = 0; y < 100; y++)
    assert_memory_equal((uint8_t *)d.data + y * 360, a.data + y * a.w * 3, 360);
  sample_of(out, 0, 1, &d); /* top-right */
  for (int64_t y = 0; y < 100; y++)
    assert_memory_equal((uint8_t *)d.data + y * 360, b.data + (y * b.w + b.w - 120) * 3, 360);
  sample_of(out, 1, 1, &d);
  for (int64_t y = 0; y < b.h; y += 13)
    assert_memory_equal((uint8_t *)d.data + y * b.w * 3, b.data + (b.h - 1 - y) * b.w * 3,
                        (size_t)b.w * 3);
  sample_of(out, 2, 0, &d);
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  for (int64_t i = 0; i < a.h * a.w * 3; i += 101) assert_true(((float *)d.data)[i] == a.data[i]);
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* a window larger than the image: error naming instance and sample, or padding */
  p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "c = crop(src, crop=[350, 100], name=\"tall\")\nreturn c\n");
  stk_tensor_desc dd[2] = {hwc_desc(&a), hwc_desc(&b)};
  TU_OK(stk_pipeline_feed(p, "src", dd, 2));
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "tall"));
  assert_non_null(strstr(stk_last_error(), "sample 0"));
  assert_non_null(strstr(stk_last_error(), "out_of_bounds_policy"));
  stk_pipeline_destroy(p);
  p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "c = crop(src, crop=[350, 100], out_of_bounds_policy=\"pad\", fill_values=[1, 2, 3])\n"
      "t = crop(src, crop=[350, 100], out_of_bounds_policy=\"trim_to_shape\")\nreturn c, t\n");
  out = run_two(p, &a, &b, NULL, 0);
  sample_of(out, 0, 0, &d);
  assert_true(d.shape[0] == 350 && d.shape[1] == 100);
  const uint8_t *c0 = d.data; /* anchor round(0.5 * -50) = -25: 25 padded rows on top */
  assert_true(c0[0] == 1 && c0[1] == 2 && c0[2] == 3);
  assert_memory_equal(c0 + 25 * 300, a.data + 176 * 3, 300);
  sample_of(out, 1, 0, &d);
  assert_true(d.shape[0] == 300 && d.shape[1] == 100);
  stk_batch_release(out);
  stk_pipeline_destroy(p);
  free(a.data), free(b.data);
}

static void test_cmn_operator(void **state) {
  photo a = photo_load("chelsea.png"), b = photo_load("coffee.png");
  stk_pipeline *p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "arg = external_source(name=\"arg\")\n"
      "o = crop_mirror_normalize(src, crop=[224, 224], mirror=arg, "
      "mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], "
      "dtype=\"float16\", pad_output=true)\n"
      "h = crop_mirror_normalize(src, output_layout=\"HWC\", dtype=\"uint8\", "
      "mean=[100], std=[0.5])\nreturn o, h\n");
  const float mirror[2] = {1, 0};
  stk_batch *out = run_two(p, &a, &b, mirror, 1);
  stk_tensor_desc d;
  sample_of(out, 0, 0, &d);
  assert_string_equal(d.layout, "CHW");
  assert_true(d.dtype == STK_DTYPE_FLOAT16 && d.shape[0] == 4 && d.shape[1] == 224 &&
              d.shape[2] == 224);
  const uint16_t *h = d.data;
  /* pixel (0, 0) of the mirrored centre crop is column 38 + 223 at row 38 */
  int64_t sy = 38, sx = 114 + 223;
  for (int c = 0; c < 3; c++) {
    double mean[3] = {123.675, 116.28, 103.53}, sd[3] = {58.395, 57.12, 57.375};
    double want = (a.data[(sy * a.w + sx) * 3 + c] - mean[c]) / sd[c];
    assert_true(fabs(stk__f16_to_f32(h[c * 224 * 224]) - want) < 2e-3);
  }
  assert_true(stk__f16_to_f32(h[3 * 224 * 224 + 999]) == 0.0f); /* pad channel */
  sample_of(out, 1, 1, &d);
  assert_true(d.shape[0] == 400 && d.shape[1] == 600 && d.shape[2] == 3);
  const uint8_t *u = d.data;
  for (int64_t i = 0; i < 400 * 600 * 3; i += 97)
    assert_int_equal(u[i], (int)saturate((b.data[i] - 100.0) / 0.5, 0, 255));
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* a mean of the wrong length names the argument, the instance and the sample */
  p = build(
      "batch_size = 2\nsrc = external_source(layout=\"HWC\", name=\"src\")\n"
      "o = crop_mirror_normalize(src, mean=[1, 2], name=\"norm\")\nreturn o\n");
  stk_tensor_desc dd[2] = {hwc_desc(&a), hwc_desc(&b)};
  TU_OK(stk_pipeline_feed(p, "src", dd, 2));
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "'mean'"));
  assert_non_null(strstr(stk_last_error(), "norm"));
  assert_non_null(strstr(stk_last_error(), "sample"));
  stk_pipeline_destroy(p);
  free(a.data), free(b.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cmn_against_naive_formula),
      cmocka_unit_test(test_crop_rect_positions_and_policies),
      cmocka_unit_test(test_crop_kernel),
      cmocka_unit_test(test_flip_exact),
      cmocka_unit_test(test_cast_saturation_and_rounding),
      cmocka_unit_test(test_random_crop_window_statistics),
      cmocka_unit_test(test_resize_operator),
      cmocka_unit_test(test_random_resized_crop_operator),
      cmocka_unit_test(test_crop_flip_cast_operators),
      cmocka_unit_test(test_cmn_operator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
