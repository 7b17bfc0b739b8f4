/* Colour operators against independent references:
 *  - Pillow itself (tests/data/make_pil_refs.py run through the repository's .venv) for the
 *    Pillow-defined ones: ImageEnhance Brightness / Color / Contrast / Sharpness (the `pil`
 *    flags and the sharpness operator), ImageOps equalize / autocontrast / posterize /
 *    solarize / invert and convert("L"). Tolerance: exact (0 LSB). Skipped when Pillow
 *    cannot be imported.
 *  - DALI's published formulas evaluated naively in float64 for the DALI-defined ones
 *    (brightness, contrast, brightness_contrast, hsv, hue, saturation, color_twist,
 *    color_space_conversion, experimental.equalize, solarize_add). Tolerance: exact after
 *    rounding, except 1 LSB where the float64 value lies within 1e-6 of a rounding tie.
 * Per-sample arguments come from random.uniform / random.choice through the pipeline;
 * bad arguments must fail with messages naming them. */
#include <math.h>
#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ops/color.h"
#include "testutil.h"

/* ---------------------------------------------------------------------------------- */
/* Images                                                                             */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  uint8_t *data;
  int64_t h, w, c;
} photo;

static photo photo_load(const char *name) {
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
  photo p = {malloc(size), ihdr.height, ihdr.width, 3};
  assert_int_equal(spng_decode_image(ctx, p.data, size, SPNG_FMT_RGB8, 0), 0);
  spng_ctx_free(ctx);
  free(png);
  return p;
}

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* Random bytes over the full range (every level present), h x w x c. */
static photo photo_random(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  photo p = {malloc((size_t)(h * w * c)), h, w, c};
  for (int64_t i = 0; i < h * w * c; i++) p.data[i] = (uint8_t)(rnd(&seed) >> 7);
  return p;
}

/* The green channel of a photo as a 1-channel image. */
static photo photo_gray(const photo *rgb) {
  photo p = {malloc((size_t)(rgb->h * rgb->w)), rgb->h, rgb->w, 1};
  for (int64_t i = 0; i < rgb->h * rgb->w; i++) p.data[i] = rgb->data[i * 3 + 1];
  return p;
}

static photo photo_blank(const photo *like, int64_t c) {
  photo p = {calloc((size_t)(like->h * like->w * c), 1), like->h, like->w, c};
  return p;
}

static stk__image as_image(const photo *p) {
  return (stk__image){p->data, STK_DTYPE_UINT8, p->h, p->w, p->c};
}

/* ---------------------------------------------------------------------------------- */
/* Pillow references                                                                  */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  const char *op; /* see make_pil_refs.py */
  const photo *in;
  char params[64];
  photo out; /* filled by pil_run */
} pil_task;

/* Runs the tasks through Pillow; false when Pillow is not available (the caller skips). */
static bool pil_run(pil_task *t, int n) {
  char dir[512], path[1024], tasks[1024], python[1024], script[1024], cmd[4096];
  tu_tmpdir(dir, sizeof dir, "pil");
  snprintf(tasks, sizeof tasks, "%s/tasks.txt", dir);
  FILE *f = fopen(tasks, "w");
  assert_non_null(f);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/in%d.bin", dir, i);
    tu_write(path, t[i].in->data, (size_t)(t[i].in->h * t[i].in->w * t[i].in->c));
    fprintf(f, "%s %s %lld %lld %lld %s/out%d.bin %s\n", t[i].op, path, (long long)t[i].in->h,
            (long long)t[i].in->w, (long long)t[i].in->c, dir, i, t[i].params);
  }
  fclose(f);
  tu_path(python, sizeof python, ".venv/bin/python");
  struct stat st;
  if (stat(python, &st) != 0) snprintf(python, sizeof python, "python3");
  tu_path(script, sizeof script, "tests/data/make_pil_refs.py");
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", python, script, tasks);
  int rc = system(cmd);
  if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 3) return false;
  if (rc != 0) fail_msg("Pillow reference script failed (%d): %s", rc, cmd);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/out%d.bin", dir, i);
    size_t size;
    t[i].out = *t[i].in;
    if (strcmp(t[i].op, "grayscale") == 0) t[i].out.c = 1;
    t[i].out.data = tu_read(path, &size);
    assert_int_equal(size, (size_t)(t[i].out.h * t[i].out.w * t[i].out.c));
  }
  return true;
}

static void pil_free(pil_task *t, int n) {
  for (int i = 0; i < n; i++) free(t[i].out.data);
}

/* Exact equality, reporting the first difference and the number of differences. */
static void expect_same_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad)
    fail_msg("%s: %zu of %zu bytes differ from Pillow; first at %zu: %d, Pillow %d", what, bad, n,
             first, got[first], want[first]);
}

#define SKIP_WITHOUT_PILLOW(ok)                              \
  do {                                                       \
    if (!(ok)) {                                             \
      print_message("Pillow is not importable: skipping\n"); \
      skip();                                                \
    }                                                        \
  } while (0)

/* ---------------------------------------------------------------------------------- */
/* Pipelines                                                                          */
/* ---------------------------------------------------------------------------------- */

/* A pipeline of `batch` samples whose text starts with an external_source "src" (HWC)
 * followed by `body`. */
static stk_pipeline *build(int batch, const char *body) {
  char text[4096];
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nseed = 11\n"
           "src = external_source(layout=\"HWC\", name=\"src\")\n%s",
           batch, body);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

static stk_tensor_desc desc_of(const photo *p, stk_dtype dtype) {
  stk_tensor_desc d = {.data = p->data, .ndim = 3, .shape = {p->h, p->w, p->c}, .dtype = dtype};
  size_t es = stk_dtype_size(dtype);
  d.strides[0] = (int64_t)(p->w * p->c * es), d.strides[1] = (int64_t)(p->c * es);
  d.strides[2] = (int64_t)es;
  strcpy(d.layout, "HWC");
  return d;
}

static stk_batch *feed_run(stk_pipeline *p, const photo *imgs, int n) {
  stk_tensor_desc d[8];
  for (int i = 0; i < n; i++) d[i] = desc_of(&imgs[i], STK_DTYPE_UINT8);
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

static double scalar_of(stk_batch *b, size_t out, size_t i) {
  stk_tensor_desc d = sample_of(b, out, i);
  switch (d.dtype) {
    case STK_DTYPE_FLOAT32:
      return *(const float *)d.data;
    case STK_DTYPE_INT32:
      return *(const int32_t *)d.data;
    default:
      fail_msg("unexpected scalar type");
      return 0;
  }
}

/* Runs one batch through `body` and expects failure with `needle` in the message. */
static void expect_run_error(int batch, const char *body, const photo *imgs, const char *needle) {
  stk_pipeline *p = build(batch, body);
  stk_tensor_desc d[8];
  for (int i = 0; i < batch; i++) d[i] = desc_of(&imgs[i], STK_DTYPE_UINT8);
  TU_OK(stk_pipeline_feed(p, "src", d, (size_t)batch));
  stk_batch *out = NULL;
  stk_status st = stk_pipeline_run(p, &out);
  if (st == STK_OK) fail_msg("expected an error mentioning '%s'", needle);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not mention '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

/* Expects the text (or its build) to be refused with `needle` in the message. */
static void expect_build_error(const char *body, const char *needle) {
  char text[2048];
  snprintf(text, sizeof text,
           "batch_size = 1\nsrc = external_source(layout=\"HWC\", "
           "name=\"src\")\n%s",
           body);
  stk_pipeline *p = NULL;
  stk_status st = stk_pipeline_from_text(text, &p);
  if (st == STK_OK) st = stk_pipeline_build(p);
  if (st == STK_OK) fail_msg("expected a build error mentioning '%s'", needle);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not mention '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

/* ---------------------------------------------------------------------------------- */
/* Reference arithmetic                                                               */
/* ---------------------------------------------------------------------------------- */

/* Round half away from zero and saturate, as the operators do for integer outputs. */
static double store_u8(double v) {
  v = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* A uint8 result against its exact value: equal after rounding, or 1 LSB off next to a
 * tie (the kernel's float64 evaluation order may land on the other side). */
static void expect_u8(uint8_t got, double exact, const char *what, size_t i) {
  double want = store_u8(exact);
  if (got == want) return;
  double frac = exact - floor(exact);
  if (fabs(got - want) <= 1 && fabs(frac - 0.5) < 1e-6) return;
  fail_msg("%s: element %zu is %d, expected %.0f (exact %.9f)", what, i, got, want, exact);
}

static void expect_f32(float got, double exact, const char *what, size_t i) {
  if (!(fabs(got - exact) <= 1e-6 * fabs(exact) + 1e-6))
    fail_msg("%s: element %zu is %.9g, expected %.9g", what, i, got, exact);
}

/* DALI's YIQ matrices, as published in its hsv / color_twist sources. */
static const double RGB2YIQ[3][3] = {
    {0.299, 0.587, 0.114}, {0.596, -0.274, -0.321}, {0.211, -0.523, 0.311}};
static const double YIQ2RGB[3][3] = {{1, 0.956, 0.621}, {1, -0.272, -0.647}, {1, -1.107, 1.705}};

/* One pixel through DALI's hsv, step by step: to YIQ, rotate IQ by the hue, scale IQ by
 * the saturation and everything by the value, back to RGB. */
static void hsv_pixel(const double rgb[3], double hue, double sat, double val, double out[3]) {
  double yiq[3], t[3];
  for (int i = 0; i < 3; i++)
    yiq[i] = RGB2YIQ[i][0] * rgb[0] + RGB2YIQ[i][1] * rgb[1] + RGB2YIQ[i][2] * rgb[2];
  double h = hue * M_PI / 180;
  t[0] = val * yiq[0];
  t[1] = val * sat * (cos(h) * yiq[1] + sin(h) * yiq[2]);
  t[2] = val * sat * (-sin(h) * yiq[1] + cos(h) * yiq[2]);
  for (int i = 0; i < 3; i++)
    out[i] = YIQ2RGB[i][0] * t[0] + YIQ2RGB[i][1] * t[1] + YIQ2RGB[i][2] * t[2];
}

/* ---------------------------------------------------------------------------------- */
/* Pillow-defined: kernels                                                            */
/* ---------------------------------------------------------------------------------- */

static const double factors[] = {0.0, 0.1, 0.5, 0.77, 1.0, 1.37, 1.9, 2.5, -0.4};
#define NFACTORS (sizeof factors / sizeof factors[0])

/* ImageEnhance Brightness / Color / Contrast / Sharpness, RGB and gray, all factors. */
static void test_pil_enhance_kernels_exact(void **state) {
  photo rgb = photo_load("chelsea.png"), gray = photo_gray(&rgb), tiny = photo_random(2, 5, 3, 9);
  const photo *ins[] = {&rgb, &gray, &tiny};
  const char *ops[] = {"brightness", "color", "contrast", "sharpness"};
  pil_task t[3 * 4 * NFACTORS];
  int n = 0;
  for (int i = 0; i < 3; i++)
    for (int o = 0; o < 4; o++)
      for (size_t f = 0; f < NFACTORS; f++) {
        t[n] = (pil_task){.op = ops[o], .in = ins[i]};
        snprintf(t[n].params, sizeof t[n].params, "%.17g", factors[f]);
        n++;
      }
  SKIP_WITHOUT_PILLOW(pil_run(t, n));
  for (int k = 0; k < n; k++) {
    photo out = photo_blank(t[k].in, t[k].in->c);
    stk__image src = as_image(t[k].in), dst = as_image(&out);
    float f = (float)strtod(t[k].params, NULL);
    if (!strcmp(t[k].op, "brightness")) stk__pil_brightness(&src, &dst, f);
    if (!strcmp(t[k].op, "color")) stk__pil_color(&src, &dst, f);
    if (!strcmp(t[k].op, "contrast")) stk__pil_contrast(&src, &dst, f);
    if (!strcmp(t[k].op, "sharpness")) stk__pil_sharpness(&src, &dst, f);
    char what[128];
    snprintf(what, sizeof what, "%s(%s) on %lldx%lldx%lld", t[k].op, t[k].params, (long long)out.h,
             (long long)out.w, (long long)out.c);
    expect_same_bytes(out.data, t[k].out.data, (size_t)(out.h * out.w * out.c), what);
    free(out.data);
  }
  pil_free(t, n);
  free(rgb.data), free(gray.data), free(tiny.data);
}

/* Luma as convert("L"), and the table builders against ImageOps on real histograms. */
static void test_pil_imageops_through_operators(void **state) {
  photo imgs[3] = {photo_load("chelsea.png"), photo_random(300, 451, 3, 5), {0}};
  imgs[2] = photo_gray(&imgs[0]);
  /* a low-contrast photo: autocontrast and equalize have work to do */
  for (int64_t i = 0; i < imgs[0].h * imgs[0].w * 3; i++)
    imgs[1].data[i] = (uint8_t)(60 + imgs[0].data[i] / 3 + (imgs[1].data[i] & 3));
  struct {
    const char *body, *pil_op, *params;
    bool gray_in_batch; /* grayscale needs RGB only */
  } cases[] = {
      {"out = equalize(src, algorithm=\"pil\")\n", "equalize", "", true},
      {"out = auto_contrast(src)\n", "autocontrast", "0 0", true},
      {"out = auto_contrast(src, cutoff=[1.5, 3.25])\n", "autocontrast", "1.5 3.25", true},
      {"out = auto_contrast(src, cutoff=[7])\n", "autocontrast", "7 7", true},
      {"out = posterize(src, bits=1)\n", "posterize", "1", true},
      {"out = posterize(src, bits=3)\n", "posterize", "3", true},
      {"out = posterize(src, bits=8)\n", "posterize", "8", true},
      {"out = solarize(src)\n", "solarize", "128", true},
      {"out = solarize(src, threshold=77)\n", "solarize", "77", true},
      {"out = solarize(src, threshold=0)\n", "solarize", "0", true},
      {"out = invert(src)\n", "invert", "", true},
      {"out = grayscale(src)\n", "grayscale", "", false},
      {"out = brightness(src, brightness=1.3, pil=true)\n", "brightness", "1.3", true},
      {"out = contrast(src, contrast=0.3, pil=true)\n", "contrast", "0.3", true},
      {"out = saturation(src, saturation=1.6, pil=true)\n", "color", "1.6", false},
      {"out = sharpness(src, sharpness=1.8)\n", "sharpness", "1.8", true},
  };
  int ncases = sizeof cases / sizeof cases[0];
  pil_task t[64];
  int n = 0;
  for (int k = 0; k < ncases; k++)
    for (int i = 0; i < 3; i++) {
      t[n] = (pil_task){.op = cases[k].pil_op, .in = &imgs[i]};
      snprintf(t[n].params, sizeof t[n].params, "%s", cases[k].params);
      n++;
    }
  SKIP_WITHOUT_PILLOW(pil_run(t, n));
  for (int k = 0; k < ncases; k++) {
    char body[512];
    snprintf(body, sizeof body, "%sreturn out\n", cases[k].body);
    int nb = cases[k].gray_in_batch ? 3 : 2;
    /* the batch holds images of one channel count: gray runs in its own batch */
    for (int part = 0; part < (nb == 3 ? 2 : 1); part++) {
      int first = part == 0 ? 0 : 2, count = part == 0 ? 2 : 1;
      stk_pipeline *p = build(count, body);
      stk_batch *b = feed_run(p, &imgs[first], count);
      for (int i = 0; i < count; i++) {
        stk_tensor_desc d = sample_of(b, 0, (size_t)i);
        const pil_task *ref = &t[k * 3 + first + i];
        assert_int_equal(d.shape[2], ref->out.c);
        char what[600];
        snprintf(what, sizeof what, "%s on image %d", cases[k].body, first + i);
        expect_same_bytes(d.data, ref->out.data, (size_t)(ref->out.h * ref->out.w * ref->out.c),
                          what);
      }
      stk_batch_release(b);
      stk_pipeline_destroy(p);
    }
  }
  pil_free(t, n);
  for (int i = 0; i < 3; i++) free(imgs[i].data);
}

/* Enhancement factors, posterize bits and solarize thresholds fed per sample from random
 * sources; each sample against Pillow with its own value. */
static void test_pil_ops_per_sample(void **state) {
  enum { N = 6 };
  photo base = photo_load("coffee.png"), imgs[N];
  for (int i = 0; i < N; i++) { /* different crops of the photo */
    imgs[i] = (photo){malloc((size_t)(200 * 300 * 3)), 200, 300, 3};
    for (int64_t y = 0; y < 200; y++)
      memcpy(imgs[i].data + y * 900, base.data + ((y + 30 * i) * 600 + 40 * i) * 3, 900);
  }
  const char *body =
      "f = random.uniform(range=[0.05, 1.95])\n"
      "b = brightness(src, brightness=f, pil=true)\n"
      "c = contrast(src, contrast=f, pil=true)\n"
      "s = saturation(src, saturation=f, pil=true)\n"
      "h = sharpness(src, sharpness=f)\n"
      "bits = random.choice(a=[1, 2, 4, 6, 8])\n"
      "p = posterize(src, bits=bits)\n"
      "t = random.uniform(range=[0, 256])\n"
      "z = solarize(src, threshold=t)\n"
      "return b, c, s, h, p, z, f, bits, t\n";
  stk_pipeline *p = build(N, body);
  stk_batch *b = feed_run(p, imgs, N);
  const char *pil_ops[] = {"brightness", "contrast", "color", "sharpness", "posterize", "solarize"};
  pil_task t[N * 6];
  double fs[N];
  for (int i = 0; i < N; i++) {
    fs[i] = scalar_of(b, 6, (size_t)i);
    double bits = scalar_of(b, 7, (size_t)i), thr = scalar_of(b, 8, (size_t)i);
    for (int o = 0; o < 6; o++) {
      t[i * 6 + o] = (pil_task){.op = pil_ops[o], .in = &imgs[i]};
      if (o < 4)
        snprintf(t[i * 6 + o].params, 64, "%.17g", (double)(float)fs[i]);
      else if (o == 4)
        snprintf(t[i * 6 + o].params, 64, "%d", (int)bits);
      else
        snprintf(t[i * 6 + o].params, 64, "%.17g", thr);
    }
  }
  bool distinct = fs[0] != fs[1];
  assert_true(distinct);
  bool have = pil_run(t, N * 6);
  if (have)
    for (int i = 0; i < N; i++)
      for (int o = 0; o < 6; o++) {
        stk_tensor_desc d = sample_of(b, (size_t)o, (size_t)i);
        char what[128];
        snprintf(what, sizeof what, "%s(%s) on sample %d", pil_ops[o], t[i * 6 + o].params, i);
        expect_same_bytes(d.data, t[i * 6 + o].out.data, 200 * 300 * 3, what);
      }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  if (have) pil_free(t, N * 6);
  for (int i = 0; i < N; i++) free(imgs[i].data);
  free(base.data);
  SKIP_WITHOUT_PILLOW(have);
}

/* Contrast's centre is int(mean luma + 0.5); the blend truncates (checked by hand). */
static void test_pil_small_cases(void **state) {
  uint8_t px[2 * 3] = {10, 20, 30, 200, 100, 50};
  stk__image img = {px, STK_DTYPE_UINT8, 1, 2, 3};
  int l0 = (10 * 19595 + 20 * 38470 + 30 * 7471 + 32768) >> 16;   /* 17 */
  int l1 = (200 * 19595 + 100 * 38470 + 50 * 7471 + 32768) >> 16; /* 124 */
  assert_int_equal(stk__pil_luma(10, 20, 30), l0);
  assert_int_equal(stk__pil_contrast_center(&img), (int)((l0 + l1) / 2.0 + 0.5));
  uint8_t out[6];
  stk__image dst = {out, STK_DTYPE_UINT8, 1, 2, 3};
  stk__pil_brightness(&img, &dst, 0.5f);
  assert_int_equal(out[0], 5), assert_int_equal(out[1], 10), assert_int_equal(out[2], 15);
  stk__pil_brightness(&img, &dst, 0.33f);
  assert_int_equal(out[3], (int)(200 * 0.33f)); /* 66.0000..: truncated */
  stk__pil_brightness(&img, &dst, 2.0f);
  assert_int_equal(out[3], 255); /* clamped when extrapolating */
  assert_int_equal(out[0], 20);
  /* equalize: a two-level channel maps its levels to 0 and to (n/2 + count) // step */
  uint64_t hist[256] = {0};
  hist[10] = 300, hist[90] = 700;
  uint8_t lut[256];
  stk__pil_equalize_lut(hist, lut);
  uint64_t step = 300 / 255; /* (1000 - 700) // 255 */
  assert_int_equal(lut[10], (step / 2) / step);
  assert_int_equal(lut[90], (step / 2 + 300) / step > 255 ? 255 : (step / 2 + 300) / step);
  hist[10] = 0;
  stk__pil_equalize_lut(hist, lut); /* one level: identity */
  assert_int_equal(lut[90], 90);
}

/* ---------------------------------------------------------------------------------- */
/* DALI-defined                                                                       */
/* ---------------------------------------------------------------------------------- */

/* brightness / contrast / brightness_contrast on uint8 and float32, with the default and
 * explicit contrast centre, uint8 -> float32 output normalisation. */
static void test_dali_brightness_contrast(void **state) {
  photo img = photo_load("chelsea.png");
  size_t n = (size_t)(img.h * img.w * 3);
  struct {
    const char *call;
    double b, shift, c, cc; /* -1: the default 128; -2: the mean luma */
    bool to_float;
  } cases[] = {
      {"brightness(src, brightness=1.3, brightness_shift=0.1)", 1.3, 0.1, 1, -1, false},
      {"brightness(src, brightness=0.25)", 0.25, 0, 1, -1, false},
      {"brightness(src, brightness=-1, brightness_shift=1)", -1, 1, 1, -1, false}, /* negative */
      {"contrast(src, contrast=1.7)", 1, 0, 1.7, -1, false},
      {"contrast(src, contrast=0.4, contrast_center=30.5)", 1, 0, 0.4, 30.5, false},
      {"brightness_contrast(src, brightness=0.9, brightness_shift=-0.05, contrast=1.2, "
       "contrast_center=100)",
       0.9, -0.05, 1.2, 100, false},
      {"brightness_contrast(src, brightness=1.1, contrast=0.8, dtype=\"float32\")", 1.1, 0, 0.8, -1,
       true},
      {"contrast(src, contrast=1.6, mean_center=true)", 1, 0, 1.6, -2, false},
  };
  double lsum = 0; /* DALI's AutoAugment centre: the mean of 0.299 R + 0.587 G + 0.114 B */
  for (int64_t i = 0; i < img.h * img.w; i++)
    lsum += 0.299 * img.data[i * 3] + 0.587 * img.data[i * 3 + 1] + 0.114 * img.data[i * 3 + 2];
  double mean_luma = lsum / (double)(img.h * img.w);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char body[512];
    snprintf(body, sizeof body, "out = %s\nreturn out\n", cases[k].call);
    stk_pipeline *p = build(1, body);
    stk_batch *b = feed_run(p, &img, 1);
    stk_tensor_desc d = sample_of(b, 0, 0);
    double cc = cases[k].cc == -2 ? mean_luma : cases[k].cc < 0 ? 128 : cases[k].cc;
    for (size_t i = 0; i < n; i++) {
      double x = img.data[i];
      if (cases[k].to_float) { /* DALI: brightness rescaled by 1/255, shift by 1 */
        double v = cases[k].shift + cases[k].b / 255.0 * (cc + cases[k].c * (x - cc));
        expect_f32(((const float *)d.data)[i], v, cases[k].call, i);
      } else {
        double v = cases[k].shift * 255 + cases[k].b * (cc + cases[k].c * (x - cc));
        expect_u8(((const uint8_t *)d.data)[i], v, cases[k].call, i);
      }
    }
    stk_batch_release(b);
    stk_pipeline_destroy(p);
  }
  /* float32 input: centre 0.5, full range 1 */
  float fx[6] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.5f};
  stk_pipeline *p = build(1,
                          "out = brightness_contrast(src, brightness=2, brightness_shift=0.1, "
                          "contrast=3, dtype=\"float32\")\nreturn out\n");
  stk_tensor_desc in = {.data = fx,
                        .ndim = 3,
                        .shape = {1, 2, 3},
                        .strides = {24, 12, 4},
                        .dtype = STK_DTYPE_FLOAT32};
  strcpy(in.layout, "HWC");
  TU_OK(stk_pipeline_feed(p, "src", &in, 1));
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  stk_tensor_desc d = sample_of(b, 0, 0);
  for (int i = 0; i < 6; i++)
    expect_f32(((const float *)d.data)[i], 0.1 + 2 * (0.5 + 3 * (fx[i] - 0.5)), "float32 bc",
               (size_t)i);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(img.data);
}

/* hsv, hue, saturation, color_twist against the per-pixel YIQ walk. */
static void test_dali_hsv_family(void **state) {
  photo img = photo_load("coffee.png");
  size_t npx = (size_t)(img.h * img.w);
  struct {
    const char *call;
    double hue, sat, val, b, c;
  } cases[] = {
      {"hsv(src, hue=40, saturation=1.3, value=0.9)", 40, 1.3, 0.9, 1, 1},
      {"hsv(src, hue=-170, saturation=0.2, value=1.2)", -170, 0.2, 1.2, 1, 1},
      {"hue(src, hue=90)", 90, 1, 1, 1, 1},
      {"saturation(src, saturation=0.35)", 0, 0.35, 1, 1, 1},
      {"saturation(src, saturation=0)", 0, 0, 1, 1, 1},
      {"color_twist(src, hue=20, saturation=1.5, brightness=1.1, contrast=0.7)", 20, 1.5, 1, 1.1,
       0.7},
      {"color_twist(src)", 0, 1, 1, 1, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char body[512];
    snprintf(body, sizeof body, "out = %s\nreturn out\n", cases[k].call);
    stk_pipeline *p = build(1, body);
    stk_batch *b = feed_run(p, &img, 1);
    stk_tensor_desc d = sample_of(b, 0, 0);
    const uint8_t *o = d.data;
    for (size_t i = 0; i < npx; i++) {
      double rgb[3] = {img.data[i * 3], img.data[i * 3 + 1], img.data[i * 3 + 2]}, h[3];
      hsv_pixel(rgb, cases[k].hue, cases[k].sat, cases[k].val, h);
      for (int c = 0; c < 3; c++) { /* color_twist: contrast around 128, then brightness */
        double v = cases[k].b * (128 + cases[k].c * (h[c] - 128));
        expect_u8(o[i * 3 + c], v, cases[k].call, i * 3 + c);
      }
    }
    if (cases[k].sat == 0) /* saturation 0: grey within the matrices' rounding */
      for (size_t i = 0; i < npx; i += 7)
        assert_true(abs(o[i * 3] - o[i * 3 + 2]) <= 1 && abs(o[i * 3] - o[i * 3 + 1]) <= 1);
    stk_batch_release(b);
    stk_pipeline_destroy(p);
  }
  /* BGR: the same map with the channels reversed */
  photo bgr = photo_blank(&img, 3);
  for (size_t i = 0; i < npx; i++)
    for (int c = 0; c < 3; c++) bgr.data[i * 3 + c] = img.data[i * 3 + 2 - c];
  stk_pipeline *p = build(1, "out = hue(src, hue=60)\nreturn out\n");
  stk_pipeline *q = build(1, "out = hue(src, hue=60, image_type=\"BGR\")\nreturn out\n");
  stk_batch *a = feed_run(p, &img, 1), *b = feed_run(q, &bgr, 1);
  const uint8_t *ra = sample_of(a, 0, 0).data, *rb = sample_of(b, 0, 0).data;
  for (size_t i = 0; i < npx; i++)
    for (int c = 0; c < 3; c++) assert_int_equal(ra[i * 3 + c], rb[i * 3 + 2 - c]);
  stk_batch_release(a), stk_batch_release(b);
  stk_pipeline_destroy(p), stk_pipeline_destroy(q);
  free(bgr.data);
  free(img.data);
}

/* Per-sample hue / saturation / brightness / contrast from random sources (DALI-defined
 * colour twist, brightness_contrast with a fed centre). */
static void test_dali_per_sample(void **state) {
  enum { N = 4 };
  photo base = photo_load("chelsea.png"), imgs[N];
  for (int i = 0; i < N; i++) imgs[i] = photo_random(40, 50, 3, 100 + (uint64_t)i);
  free(base.data);
  stk_pipeline *p = build(N,
                          "h = random.uniform(range=[-180, 180])\n"
                          "s = random.uniform(range=[0, 2])\n"
                          "bb = random.uniform(range=[0.5, 1.5])\n"
                          "cc = random.uniform(range=[0, 255])\n"
                          "t = color_twist(src, hue=h, saturation=s, brightness=bb, contrast=s)\n"
                          "q = brightness_contrast(src, contrast=s, contrast_center=cc)\n"
                          "return t, q, h, s, bb, cc\n");
  stk_batch *b = feed_run(p, imgs, N);
  for (int i = 0; i < N; i++) {
    double h = scalar_of(b, 2, (size_t)i), s = scalar_of(b, 3, (size_t)i);
    double bb = scalar_of(b, 4, (size_t)i), cc = scalar_of(b, 5, (size_t)i);
    const uint8_t *t = sample_of(b, 0, (size_t)i).data, *q = sample_of(b, 1, (size_t)i).data;
    for (size_t k = 0; k < 40 * 50; k++) {
      double rgb[3] = {imgs[i].data[k * 3], imgs[i].data[k * 3 + 1], imgs[i].data[k * 3 + 2]}, o[3];
      hsv_pixel(rgb, h, s, 1, o);
      for (int c = 0; c < 3; c++) {
        expect_u8(t[k * 3 + c], bb * (128 + s * (o[c] - 128)), "fed color_twist", k * 3 + c);
        expect_u8(q[k * 3 + c], cc + s * (rgb[c] - cc), "fed brightness_contrast", k * 3 + c);
      }
    }
  }
  assert_true(scalar_of(b, 2, 0) != scalar_of(b, 2, 1));
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  for (int i = 0; i < N; i++) free(imgs[i].data);
}

/* color_space_conversion against ITU-R BT.601's published coefficients. */
static void test_color_space_conversion(void **state) {
  photo img = photo_load("chelsea.png");
  size_t npx = (size_t)(img.h * img.w);
  stk_pipeline *p =
      build(1,
            "g = color_space_conversion(src, image_type=\"RGB\", output_type=\"GRAY\")\n"
            "y = color_space_conversion(src, image_type=\"RGB\", output_type=\"YCbCr\")\n"
            "r = color_space_conversion(y, image_type=\"YCbCr\", output_type=\"RGB\")\n"
            "b = color_space_conversion(src, image_type=\"RGB\", output_type=\"BGR\")\n"
            "bg = color_space_conversion(b, image_type=\"BGR\", output_type=\"GRAY\")\n"
            "yg = color_space_conversion(y, image_type=\"YCbCr\", output_type=\"GRAY\")\n"
            "gr = color_space_conversion(g, image_type=\"GRAY\", output_type=\"RGB\")\n"
            "return g, y, r, b, bg, yg, gr\n");
  stk_batch *bt = feed_run(p, &img, 1);
  stk_tensor_desc g = sample_of(bt, 0, 0), y = sample_of(bt, 1, 0), r = sample_of(bt, 2, 0);
  stk_tensor_desc bg = sample_of(bt, 4, 0), yg = sample_of(bt, 5, 0), gr = sample_of(bt, 6, 0);
  assert_int_equal(g.shape[2], 1);
  assert_int_equal(gr.shape[2], 3);
  const uint8_t *bb = sample_of(bt, 3, 0).data;
  int worst_rt = 0, worst_yg = 0;
  for (size_t i = 0; i < npx; i++) {
    double R = img.data[i * 3], G = img.data[i * 3 + 1], B = img.data[i * 3 + 2];
    expect_u8(((uint8_t *)g.data)[i], 0.299 * R + 0.587 * G + 0.114 * B, "RGB->GRAY", i);
    assert_int_equal(((uint8_t *)bg.data)[i], ((uint8_t *)g.data)[i]);
    double Rn = R / 255, Gn = G / 255, Bn = B / 255; /* BT.601, 8-bit studio range */
    expect_u8(((uint8_t *)y.data)[i * 3], 16 + 65.481 * Rn + 128.553 * Gn + 24.966 * Bn, "Y", i);
    expect_u8(((uint8_t *)y.data)[i * 3 + 1], 128 - 37.797 * Rn - 74.203 * Gn + 112.0 * Bn, "Cb",
              i);
    expect_u8(((uint8_t *)y.data)[i * 3 + 2], 128 + 112.0 * Rn - 93.786 * Gn - 18.214 * Bn, "Cr",
              i);
    for (int c = 0; c < 3; c++) {
      int d = abs(((uint8_t *)r.data)[i * 3 + c] - img.data[i * 3 + c]);
      worst_rt = d > worst_rt ? d : worst_rt;
      assert_int_equal(bb[i * 3 + c], img.data[i * 3 + 2 - c]);
      assert_int_equal(((uint8_t *)gr.data)[i * 3 + c], ((uint8_t *)g.data)[i]);
    }
    int d = abs(((uint8_t *)yg.data)[i] - ((uint8_t *)g.data)[i]);
    worst_yg = d > worst_yg ? d : worst_yg;
  }
  assert_true(worst_rt <= 2); /* two roundings to 8 bits, 219/224 levels */
  assert_true(worst_yg <= 1);
  stk_batch_release(bt);
  stk_pipeline_destroy(p);

  /* float32: values in [0, 1], biases 0.0625 / 0.5 */
  float px[3] = {0.2f, 0.6f, 0.9f}, out[3];
  stk__image src = {px, STK_DTYPE_FLOAT32, 1, 1, 3}, dst = {out, STK_DTYPE_FLOAT32, 1, 1, 3};
  stk__affine_color a;
  stk__colorspace_affine(STK__CS_RGB, STK__CS_YCBCR, STK_DTYPE_FLOAT32, &a);
  double scratch[16];
  TU_OK(stk__affine_apply(&src, &dst, &a, scratch, sizeof scratch));
  expect_f32(out[0], 0.0625 + (65.481 * px[0] + 128.553 * px[1] + 24.966 * px[2]) / 255, "float Y",
             0);
  expect_f32(out[1], 0.5 + (-37.797 * px[0] - 74.203 * px[1] + 112.0 * px[2]) / 255, "float Cb", 1);
  expect_f32(out[2], 0.5 + (112.0 * px[0] - 93.786 * px[1] - 18.214 * px[2]) / 255, "float Cr", 2);
  free(img.data);
}

/* grayscale equals Pillow's convert("L"), replicated for 3 output channels. */
static void test_grayscale_vs_pillow(void **state) {
  photo img = photo_load("chelsea.png");
  pil_task t = {.op = "grayscale", .in = &img};
  SKIP_WITHOUT_PILLOW(pil_run(&t, 1));
  stk_pipeline *p =
      build(1, "g = grayscale(src)\ng3 = grayscale(src, num_output_channels=3)\nreturn g, g3\n");
  stk_batch *b = feed_run(p, &img, 1);
  stk_tensor_desc g = sample_of(b, 0, 0), g3 = sample_of(b, 1, 0);
  size_t npx = (size_t)(img.h * img.w);
  expect_same_bytes(g.data, t.out.data, npx, "grayscale");
  for (size_t i = 0; i < npx; i++)
    for (int c = 0; c < 3; c++) assert_int_equal(((uint8_t *)g3.data)[i * 3 + c], t.out.data[i]);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  pil_free(&t, 1);
  free(img.data);
}

/* experimental.equalize follows OpenCV's equalizeHist; solarize_add; float32 variants. */
static void test_opencv_equalize_and_solarize_add(void **state) {
  photo img = photo_load("coffee.png");
  size_t n = (size_t)(img.h * img.w * 3);
  for (size_t i = 0; i < n; i++) img.data[i] = (uint8_t)(40 + img.data[i] / 2); /* 40..167 */
  stk_pipeline *p = build(1,
                          "e = experimental.equalize(src)\n"
                          "sa = solarize_add(src, shift=100)\n"
                          "sb = solarize_add(src, shift=-50, threshold=90)\n"
                          "return e, sa, sb\n");
  stk_batch *b = feed_run(p, &img, 1);
  const uint8_t *e = sample_of(b, 0, 0).data, *sa = sample_of(b, 1, 0).data;
  const uint8_t *sb = sample_of(b, 2, 0).data;
  for (int c = 0; c < 3;
       c++) { /* OpenCV: lut = round((cdf - cdf[first]) * 255 / (N - cdf[first])) */
    double hist[256] = {0}, cdf = 0, lut[256];
    size_t npx = n / 3;
    for (size_t i = 0; i < npx; i++) hist[img.data[i * 3 + c]]++;
    int first = 0;
    while (hist[first] == 0) first++;
    for (int v = 0; v < 256; v++) {
      cdf += hist[v];
      lut[v] = floor((cdf - hist[first]) * 255.0 / ((double)npx - hist[first]) + 0.5);
    }
    for (size_t i = 0; i < npx; i++) assert_int_equal(e[i * 3 + c], lut[img.data[i * 3 + c]]);
  }
  for (size_t i = 0; i < n; i++) {
    int x = img.data[i];
    assert_int_equal(sa[i], x < 128 ? (x + 100 > 255 ? 255 : x + 100) : x);
    assert_int_equal(sb[i], x < 90 ? (x - 50 < 0 ? 0 : x - 50) : x);
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);

  /* float32: invert 1 - x, solarize at 0.5, solarize_add clamped to [0, 1] */
  p = build(1,
            "i = invert(src)\nz = solarize(src)\na = solarize_add(src, shift=0.3)\n"
            "return i, z, a\n");
  float fx[6] = {0.0f, 0.2f, 0.49f, 0.5f, 0.8f, 1.0f};
  stk_tensor_desc in = {.data = fx,
                        .ndim = 3,
                        .shape = {1, 2, 3},
                        .strides = {24, 12, 4},
                        .dtype = STK_DTYPE_FLOAT32};
  strcpy(in.layout, "HWC");
  TU_OK(stk_pipeline_feed(p, "src", &in, 1));
  TU_OK(stk_pipeline_run(p, &b));
  const float *fi = sample_of(b, 0, 0).data, *fz = sample_of(b, 1, 0).data,
              *fa = sample_of(b, 2, 0).data;
  for (int i = 0; i < 6; i++) {
    expect_f32(fi[i], 1.0 - fx[i], "float invert", (size_t)i);
    expect_f32(fz[i], fx[i] >= 0.5f ? 1.0 - fx[i] : fx[i], "float solarize", (size_t)i);
    expect_f32(fa[i], fx[i] < 0.5f ? fmin(1.0, fx[i] + 0.3) : fx[i], "float solarize_add",
               (size_t)i);
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(img.data);
}

/* ---------------------------------------------------------------------------------- */
/* Bad arguments                                                                      */
/* ---------------------------------------------------------------------------------- */

static void test_bad_arguments(void **state) {
  photo rgb = photo_random(8, 9, 3, 1), gray = photo_random(8, 9, 1, 2);
  expect_run_error(
      1, "o = brightness(src, brightness=1.2, brightness_shift=0.1, pil=true)\nreturn o\n", &rgb,
      "brightness_shift");
  expect_build_error("o = contrast(src, contrast=2, contrast_center=3, pil=true)\nreturn o\n",
                     "contrast_center");
  expect_build_error(
      "o = contrast(src, contrast=2, contrast_center=3, mean_center=true)\nreturn o\n",
      "mean_center");
  expect_build_error("o = posterize(src, bits=9)\nreturn o\n", "bits");
  expect_run_error(1, "b = random.uniform(range=[9, 12])\no = posterize(src, bits=b)\nreturn o\n",
                   &rgb, "'bits'");
  expect_run_error(1, "o = hsv(src, hue=3)\nreturn o\n", &gray, "3 channels");
  expect_run_error(1, "o = color_twist(src, contrast=-1)\nreturn o\n", &rgb, "'contrast'");
  expect_run_error(
      1, "s = random.uniform(range=[-2, -1])\no = saturation(src, saturation=s)\nreturn o\n", &rgb,
      "'saturation'");
  expect_run_error(1,
                   "o = saturation(src, saturation=0.5, image_type=\"BGR\", pil=true)\nreturn o\n",
                   &rgb, "image_type");
  expect_run_error(1,
                   "o = color_space_conversion(src, image_type=\"RGB\", output_type=\"GRAY\")\n"
                   "return o\n",
                   &gray, "image_type");
  expect_run_error(1, "o = auto_contrast(src, cutoff=[1, 2, 3])\nreturn o\n", &rgb, "cutoff");
  expect_run_error(1, "o = auto_contrast(src, cutoff=[100])\nreturn o\n", &rgb, "cutoff");
  expect_build_error("o = brightness(src, dtype=\"int8\")\nreturn o\n", "dtype");
  expect_build_error("o = grayscale(src, num_output_channels=2)\nreturn o\n",
                     "num_output_channels");
  expect_build_error(
      "o = color_space_conversion(src, image_type=\"HSV\", output_type=\"RGB\")\n"
      "return o\n",
      "image_type");
  expect_run_error(1, "o = grayscale(src)\nreturn o\n", &gray, "3 channels");
  /* pil=true on float32 input */
  stk_pipeline *p = build(1, "o = contrast(src, contrast=2, pil=true)\nreturn o\n");
  float fx[3] = {0.1f, 0.2f, 0.3f};
  stk_tensor_desc in = {.data = fx,
                        .ndim = 3,
                        .shape = {1, 1, 3},
                        .strides = {12, 12, 4},
                        .dtype = STK_DTYPE_FLOAT32};
  TU_OK(stk_pipeline_feed(p, "src", &in, 1));
  stk_batch *b = NULL;
  assert_int_equal(stk_pipeline_run(p, &b), STK_ERR_UNSUPPORTED);
  assert_non_null(strstr(stk_last_error(), "pil=true needs uint8"));
  stk_pipeline_destroy(p);
  /* equalize refuses float */
  p = build(1, "o = equalize(src)\nreturn o\n");
  TU_OK(stk_pipeline_feed(p, "src", &in, 1));
  assert_int_equal(stk_pipeline_run(p, &b), STK_ERR_UNSUPPORTED);
  assert_non_null(strstr(stk_last_error(), "float32"));
  stk_pipeline_destroy(p);
  free(rgb.data), free(gray.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pil_small_cases),
      cmocka_unit_test(test_pil_enhance_kernels_exact),
      cmocka_unit_test(test_pil_imageops_through_operators),
      cmocka_unit_test(test_pil_ops_per_sample),
      cmocka_unit_test(test_dali_brightness_contrast),
      cmocka_unit_test(test_dali_hsv_family),
      cmocka_unit_test(test_dali_per_sample),
      cmocka_unit_test(test_color_space_conversion),
      cmocka_unit_test(test_grayscale_vs_pillow),
      cmocka_unit_test(test_opencv_equalize_and_solarize_add),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
