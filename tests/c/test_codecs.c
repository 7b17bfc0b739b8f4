/* Image codecs (src/codecs): JPEG and PNG decoding, regions of interest, DCT scaling,
 * EXIF orientation, colour conversion and hostile input.
 *
 * References: TurboJPEG (an independent entry point into libjpeg-turbo) for JPEG pixels;
 * PNG files written here by hand (stored deflate blocks, our own CRC-32 and Adler-32)
 * from known samples; orientation by composing mirror and 90-degree rotation, written
 * independently of the decoder's table; luma by the BT.601 formula in float64. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <spng.h>
#include <turbojpeg.h>

#include "codecs/codecs.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  uint8_t *p;
  int w, h, c;
} img_t;

typedef struct {
  uint8_t *p;
  size_t n;
} buf_t;

static uint32_t rng_state = 12345;
static uint32_t rnd(void) { /* xorshift32: deterministic test randomness */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }

static img_t img_new(int w, int h, int c) {
  img_t m = {calloc((size_t)w * h * c + 1, 1), w, h, c};
  assert_non_null(m.p);
  return m;
}

static buf_t load(const char *rel) {
  char path[1024];
  buf_t b;
  b.p = tu_read(tu_path(path, sizeof path, rel), &b.n);
  return b;
}

static img_t crop(img_t m, int x, int y, int w, int h) {
  img_t r = img_new(w, h, m.c);
  for (int j = 0; j < h; j++)
    memcpy(r.p + (size_t)j * w * m.c, m.p + ((size_t)(y + j) * m.w + x) * m.c, (size_t)w * m.c);
  return r;
}

static void assert_img_eq(img_t a, img_t b, const char *what) {
  if (a.w != b.w || a.h != b.h || a.c != b.c)
    fail_msg("%s: size %dx%dx%d != %dx%dx%d", what, a.w, a.h, a.c, b.w, b.h, b.c);
  size_t n = (size_t)a.w * a.h * a.c;
  for (size_t i = 0; i < n; i++)
    if (a.p[i] != b.p[i]) {
      size_t px = i / a.c;
      fail_msg("%s: differs at x %d y %d ch %d: %d != %d", what, (int)(px % a.w), (int)(px / a.w),
               (int)(i % a.c), a.p[i], b.p[i]);
    }
}

static img_t decode(buf_t b, const stk__decode_opts *o, stk__decoded *info) {
  stk__decoded d;
  TU_OK(stk__image_decode(b.p, b.n, "test image", o, stk__image_alloc_malloc, NULL, &d));
  if (info) *info = d;
  return (img_t){d.data, d.w, d.h, d.c};
}

static stk_status try_decode(buf_t b, const stk__decode_opts *o) {
  stk__decoded d;
  stk_status st = stk__image_decode(b.p, b.n, "bad.img", o, stk__image_alloc_malloc, NULL, &d);
  free(d.data); /* the caller's on failure too */
  return st;
}

/* TurboJPEG's decode at the given (possibly scaled) size; 0 means full size. */
static img_t tj_decode(buf_t b, int pf, int w, int h) {
  tjhandle tj = tjInitDecompress();
  int fw, fh, ss, cs;
  if (tjDecompressHeader3(tj, b.p, (unsigned long)b.n, &fw, &fh, &ss, &cs))
    fail_msg("tjDecompressHeader3: %s", tjGetErrorStr2(tj));
  if (!w) {
    w = fw;
    h = fh;
  }
  img_t m = img_new(w, h, tjPixelSize[pf]);
  if (tjDecompress2(tj, b.p, (unsigned long)b.n, m.p, w, 0, h, pf, 0))
    fail_msg("tjDecompress2: %s", tjGetErrorStr2(tj));
  tjDestroy(tj);
  return m;
}

static buf_t tj_encode(img_t m, int subsamp, int quality, int flags) {
  buf_t b;
  b.p = tu_jpeg_encode(m.p, m.w, m.h, m.c, subsamp, quality, flags, &b.n);
  return b;
}

/* A PNG photo as 8-bit RGB through libspng directly (only a source of pixels). */
static img_t load_png_rgb(const char *rel) {
  buf_t b = load(rel);
  spng_ctx *ctx = spng_ctx_new(0);
  spng_set_png_buffer(ctx, b.p, b.n);
  struct spng_ihdr ihdr;
  assert_int_equal(spng_get_ihdr(ctx, &ihdr), 0);
  img_t m = img_new((int)ihdr.width, (int)ihdr.height, 3);
  assert_int_equal(spng_decode_image(ctx, m.p, (size_t)m.w * m.h * 3, SPNG_FMT_RGB8, 0), 0);
  spng_ctx_free(ctx);
  free(b.p);
  return m;
}

/* Inserts an APP1 Exif segment with the given orientation right after SOI. */
static buf_t with_exif(buf_t j, int orientation, bool big_endian) {
  uint8_t app[2 + 2 + 6 + 8 + 2 + 12 + 4];
  size_t k = 0;
  app[k++] = 0xff;
  app[k++] = 0xe1;
  size_t len = sizeof app - 2;
  app[k++] = (uint8_t)(len >> 8);
  app[k++] = (uint8_t)len;
  memcpy(app + k, "Exif\0\0", 6);
  k += 6;
  uint8_t tiff_le[] = {
      'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, (uint8_t)orientation,
      0,   0,   0,  0, 0, 0, 0};
  uint8_t tiff_be[] = {'M',  'M',  0, 42, 0, 0, 0, 8, 0, 1,
                       0x01, 0x12, 0, 3,  0, 0, 0, 1, 0, (uint8_t)orientation,
                       0,    0,    0, 0,  0, 0};
  memcpy(app + k, big_endian ? tiff_be : tiff_le, sizeof tiff_le);
  buf_t r = {malloc(j.n + sizeof app), j.n + sizeof app};
  memcpy(r.p, j.p, 2);
  memcpy(r.p + 2, app, sizeof app);
  memcpy(r.p + 2 + sizeof app, j.p + 2, j.n - 2);
  return r;
}

/* Orientation reference from two primitives: mirror (left-right) and rotate 90 degrees
 * clockwise. EXIF: 2 mirror, 3 rot180, 4 mirror+rot180, 5 mirror+rot270, 6 rot90,
 * 7 mirror+rot90, 8 rot270 (all rotations clockwise). */
static img_t mirror(img_t m) {
  img_t r = img_new(m.w, m.h, m.c);
  for (int y = 0; y < m.h; y++)
    for (int x = 0; x < m.w; x++)
      memcpy(r.p + ((size_t)y * m.w + x) * m.c, m.p + ((size_t)y * m.w + (m.w - 1 - x)) * m.c,
             (size_t)m.c);
  return r;
}

static img_t rot90cw(img_t m) { /* new row y = old column y read bottom to top */
  img_t r = img_new(m.h, m.w, m.c);
  for (int y = 0; y < r.h; y++)
    for (int x = 0; x < r.w; x++)
      memcpy(r.p + ((size_t)y * r.w + x) * m.c, m.p + ((size_t)(m.h - 1 - x) * m.w + y) * m.c,
             (size_t)m.c);
  return r;
}

static img_t orient_ref(img_t m, int o) {
  static const int mirrors[9] = {0, 0, 1, 0, 1, 1, 0, 1, 0};
  static const int turns[9] = {0, 0, 0, 2, 2, 3, 1, 1, 3};
  img_t cur = img_new(m.w, m.h, m.c);
  memcpy(cur.p, m.p, (size_t)m.w * m.h * m.c);
  if (mirrors[o]) {
    img_t t = mirror(cur);
    free(cur.p);
    cur = t;
  }
  for (int i = 0; i < turns[o]; i++) {
    img_t t = rot90cw(cur);
    free(cur.p);
    cur = t;
  }
  return cur;
}

/* A JPEG through the libjpeg compress API, for what TurboJPEG cannot write. */
typedef struct {
  J_COLOR_SPACE in_space, jpeg_space;
  bool adobe, progressive;
  int restart_rows;
  int quality;
  const jpeg_scan_info *scans;
  int num_scans;
  bool arith;
} lj_opts;

static buf_t lj_encode(img_t m, const lj_opts *o) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr err;
  ci.err = jpeg_std_error(&err);
  jpeg_create_compress(&ci);
  unsigned char *out = NULL;
  unsigned long n = 0;
  jpeg_mem_dest(&ci, &out, &n);
  ci.image_width = (JDIMENSION)m.w;
  ci.image_height = (JDIMENSION)m.h;
  ci.input_components = m.c;
  ci.in_color_space = o->in_space;
  jpeg_set_defaults(&ci);
  jpeg_set_colorspace(&ci, o->jpeg_space);
  ci.write_Adobe_marker = o->adobe;
  jpeg_set_quality(&ci, o->quality ? o->quality : 90, TRUE);
  if (o->progressive) jpeg_simple_progression(&ci);
  if (o->scans) {
    ci.scan_info = o->scans;
    ci.num_scans = o->num_scans;
  }
  ci.restart_in_rows = o->restart_rows;
  ci.arith_code = o->arith;
  jpeg_start_compress(&ci, TRUE);
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = m.p + (size_t)ci.next_scanline * m.w * m.c;
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  buf_t b = {malloc(n), n};
  memcpy(b.p, out, n);
  free(out);
  return b;
}

/* ---------------------------------------------------------------------------------- */
/* The JPEG test set                                                                   */
/* ---------------------------------------------------------------------------------- */

#define MAX_SET 16
typedef struct {
  const char *name;
  buf_t data;
  bool gray;
} jpeg_case;

static jpeg_case set[MAX_SET];
static int set_n;

static void add_case(const char *name, buf_t b, bool gray) {
  set[set_n++] = (jpeg_case){name, b, gray};
}

static int setup_set(void **state) {
  (void)state;
  add_case("rocket.jpg", load("data/photos/rocket.jpg"), false);
  add_case("hubble_deep_field.jpg", load("data/photos/hubble_deep_field.jpg"), false);
  img_t chelsea = load_png_rgb("data/photos/chelsea.png"); /* 451x300: odd width */
  img_t coffee = load_png_rgb("data/photos/coffee.png");
  img_t odd = crop(coffee, 3, 5, 333, 211); /* odd both ways */
  add_case("chelsea 4:2:0", tj_encode(chelsea, TJSAMP_420, 90, 0), false);
  add_case("chelsea 4:4:4", tj_encode(chelsea, TJSAMP_444, 95, 0), false);
  add_case("odd 4:2:2", tj_encode(odd, TJSAMP_422, 85, 0), false);
  add_case("odd 4:4:0", tj_encode(odd, TJSAMP_440, 85, 0), false);
  add_case("odd 4:1:1", tj_encode(odd, TJSAMP_411, 85, 0), false);
  add_case("chelsea gray", tj_encode(chelsea, TJSAMP_GRAY, 90, 0), true);
  add_case("coffee progressive 4:2:0", tj_encode(coffee, TJSAMP_420, 90, TJFLAG_PROGRESSIVE),
           false);
  add_case("odd progressive 4:4:4 (libjpeg simple progression)",
           lj_encode(odd, &(lj_opts){JCS_RGB, JCS_YCbCr, false, true, 0, 92, NULL, 0, false}),
           false);
  add_case("odd restart intervals",
           lj_encode(odd, &(lj_opts){JCS_RGB, JCS_YCbCr, false, false, 2, 90, NULL, 0, false}),
           false);
  add_case("odd RGB colour space (no transform)",
           lj_encode(odd, &(lj_opts){JCS_RGB, JCS_RGB, true, false, 0, 90, NULL, 0, false}), false);
  add_case("odd arithmetic coding",
           lj_encode(odd, &(lj_opts){JCS_RGB, JCS_YCbCr, false, false, 0, 90, NULL, 0, true}),
           false);
  img_t tiny = crop(chelsea, 100, 100, 7, 5);
  add_case("tiny 7x5 4:2:0", tj_encode(tiny, TJSAMP_420, 90, 0), false);
  img_t one = crop(chelsea, 200, 150, 1, 1);
  add_case("1x1", tj_encode(one, TJSAMP_420, 90, 0), false);
  free(chelsea.p);
  free(coffee.p);
  free(odd.p);
  free(tiny.p);
  free(one.p);
  return 0;
}

static int teardown_set(void **state) {
  (void)state;
  for (int i = 0; i < set_n; i++) free(set[i].data.p);
  set_n = 0;
  return 0;
}

/* ---------------------------------------------------------------------------------- */
/* JPEG                                                                               */
/* ---------------------------------------------------------------------------------- */

static void test_peek(void **state) {
  (void)state;
  buf_t r = load("data/photos/rocket.jpg");
  stk__image_info info;
  TU_OK(stk__image_peek(r.p, r.n, "rocket.jpg", &info));
  assert_int_equal(info.format, STK__IMAGE_JPEG);
  assert_int_equal(info.width, 640);
  assert_int_equal(info.height, 427);
  assert_int_equal(info.channels, 3);
  assert_int_equal(info.orientation, 1);
  assert_int_equal(info.oriented_width, 640);
  assert_false(info.progressive);
  for (int o = 1; o <= 8; o++) {
    buf_t e = with_exif(r, o, o % 2 == 0);
    TU_OK(stk__image_peek(e.p, e.n, "exif", &info));
    assert_int_equal(info.orientation, o);
    assert_int_equal(info.oriented_width, o >= 5 ? 427 : 640);
    assert_int_equal(info.oriented_height, o >= 5 ? 640 : 427);
    free(e.p);
  }
  buf_t h = load("data/photos/hubble_deep_field.jpg"); /* has an Exif block, orientation 1 */
  TU_OK(stk__image_peek(h.p, h.n, NULL, &info));
  assert_int_equal(info.width, 1000);
  assert_int_equal(info.height, 872);
  assert_int_equal(info.orientation, 1);
  for (int i = 0; i < set_n; i++) {
    TU_OK(stk__image_peek(set[i].data.p, set[i].data.n, set[i].name, &info));
    assert_int_equal(info.channels, set[i].gray ? 1 : 3);
    if (strstr(set[i].name, "progressive")) assert_true(info.progressive);
  }
  buf_t p = load("data/photos/camera.png");
  TU_OK(stk__image_peek(p.p, p.n, "camera.png", &info));
  assert_int_equal(info.format, STK__IMAGE_PNG);
  assert_int_equal(info.width, 512);
  assert_int_equal(info.height, 512);
  assert_int_equal(info.channels, 1);
  free(p.p);
  free(r.p);
  free(h.p);
}

static void test_full_decode_matches_turbojpeg(void **state) {
  (void)state;
  static const struct {
    stk__color color;
    int pf;
  } colors[] = {
      {STK__COLOR_RGB, TJPF_RGB}, {STK__COLOR_BGR, TJPF_BGR}, {STK__COLOR_GRAY, TJPF_GRAY}};
  for (int i = 0; i < set_n; i++)
    for (int k = 0; k < 3; k++) {
      stk__decode_opts o = {.color = colors[k].color};
      stk__decoded d;
      img_t got = decode(set[i].data, &o, &d);
      img_t want = tj_decode(set[i].data, colors[k].pf, 0, 0);
      char what[160];
      snprintf(what, sizeof what, "%s color %d", set[i].name, k);
      assert_img_eq(got, want, what);
      assert_true(d.scale_x == 1.0 && d.scale_y == 1.0);
      free(got.p);
      free(want.p);
    }
}

static void test_fast_idct_matches_turbojpeg(void **state) {
  (void)state;
  buf_t b = set[0].data;
  stk__decode_opts o = {.fast_idct = true};
  img_t got = decode(b, &o, NULL);
  tjhandle tj = tjInitDecompress();
  img_t want = img_new(got.w, got.h, 3);
  assert_int_equal(
      tjDecompress2(tj, b.p, (unsigned long)b.n, want.p, got.w, 0, got.h, TJPF_RGB, TJFLAG_FASTDCT),
      0);
  tjDestroy(tj);
  assert_img_eq(got, want, "fast IDCT");
  free(got.p);
  free(want.p);
}

/* A random ROI inside w x h, with a bias towards edges and tiny sizes. */
static void random_roi(int w, int h, int *x, int *y, int *rw, int *rh) {
  switch (rnd() % 6) {
    case 0:
      *rw = 1 + (int)(rnd() % (uint32_t)(w < 3 ? w : 3));
      break;
    case 1:
      *rw = w;
      break;
    default:
      *rw = rnd_in(1, w);
      break;
  }
  switch (rnd() % 6) {
    case 0:
      *rh = 1 + (int)(rnd() % (uint32_t)(h < 3 ? h : 3));
      break;
    case 1:
      *rh = h;
      break;
    default:
      *rh = rnd_in(1, h);
      break;
  }
  int edge = (int)(rnd() % 4);
  *x = edge == 1 ? 0 : edge == 2 ? w - *rw : rnd_in(0, w - *rw);
  *y = edge == 3 ? 0 : edge == 2 ? h - *rh : rnd_in(0, h - *rh);
}

static void test_roi_equals_crop_of_full(void **state) {
  (void)state;
  for (int i = 0; i < set_n; i++)
    for (int k = 0; k < 2; k++) {
      stk__decode_opts o = {.color = k ? STK__COLOR_GRAY : STK__COLOR_BGR};
      img_t full = decode(set[i].data, &o, NULL);
      for (int t = 0; t < 40; t++) {
        random_roi(full.w, full.h, &o.roi_x, &o.roi_y, &o.roi_w, &o.roi_h);
        img_t got = decode(set[i].data, &o, NULL);
        img_t want = crop(full, o.roi_x, o.roi_y, o.roi_w, o.roi_h);
        char what[200];
        snprintf(what, sizeof what, "%s roi x %d y %d w %d h %d", set[i].name, o.roi_x, o.roi_y,
                 o.roi_w, o.roi_h);
        assert_img_eq(got, want, what);
        free(got.p);
        free(want.p);
      }
      free(full.p);
    }
}

/* The test's own statement of the scaled span: endpoints rounded half up; a region
 * reaching the image's end ends at the end of the scaled image. */
static void span(int start, int len, int size, int n, int *a, int *b) {
  int full = (int)ceil(size * n / 8.0);
  *a = (int)floor(start * n / 8.0 + 0.5);
  *b = start + len == size ? full : (int)floor((start + len) * n / 8.0 + 0.5);
  if (*b <= *a) {
    if (*a >= full) *a = full - 1;
    *b = *a + 1;
  }
}

static void test_scaled_full_matches_turbojpeg(void **state) {
  (void)state;
  for (int i = 0; i < set_n; i++) {
    stk__image_info info;
    TU_OK(stk__image_peek(set[i].data.p, set[i].data.n, NULL, &info));
    for (int n = 1; n <= 4; n *= 2) {
      int sw = (info.width * n + 7) / 8, sh = (info.height * n + 7) / 8;
      stk__decode_opts o = {.min_w = sw, .min_h = sh};
      stk__decoded d;
      img_t got = decode(set[i].data, &o, &d);
      img_t want = tj_decode(set[i].data, TJPF_RGB, sw, sh);
      char what[160];
      snprintf(what, sizeof what, "%s scaled %d/8", set[i].name, n);
      if (info.width >= 8 && info.height >= 8) {
        assert_int_equal(got.w, sw);
        assert_int_equal(got.h, sh);
      }
      if (got.w == sw && got.h == sh) {
        assert_img_eq(got, want, what);
        assert_true(fabs(d.scale_x - (double)sw / info.width) < 1e-12);
        assert_true(fabs(d.scale_y - (double)sh / info.height) < 1e-12);
      }
      free(got.p);
      free(want.p);
    }
  }
}

static void test_scaled_roi_matches_turbojpeg_crop(void **state) {
  (void)state;
  for (int i = 0; i < set_n; i++) {
    stk__image_info info;
    TU_OK(stk__image_peek(set[i].data.p, set[i].data.n, NULL, &info));
    if (info.width < 8 || info.height < 8) continue;
    img_t scaled[5];
    for (int n = 1; n <= 4; n *= 2)
      scaled[n] =
          tj_decode(set[i].data, TJPF_RGB, (info.width * n + 7) / 8, (info.height * n + 7) / 8);
    for (int t = 0; t < 40; t++) {
      stk__decode_opts o = {0};
      random_roi(info.width, info.height, &o.roi_x, &o.roi_y, &o.roi_w, &o.roi_h);
      int n = 1 << (rnd() % 3);
      int x0, x1, y0, y1;
      span(o.roi_x, o.roi_w, info.width, n, &x0, &x1);
      span(o.roi_y, o.roi_h, info.height, n, &y0, &y1);
      o.min_w = x1 - x0;
      o.min_h = y1 - y0;
      /* The decoder takes the smallest scale meeting the minimum: find it the same way. */
      int expect_n = 8;
      for (int m = 1; m <= 4; m *= 2) {
        int a, b, c, e;
        span(o.roi_x, o.roi_w, info.width, m, &a, &b);
        span(o.roi_y, o.roi_h, info.height, m, &c, &e);
        if (b - a >= o.min_w && e - c >= o.min_h) {
          expect_n = m;
          x0 = a, x1 = b, y0 = c, y1 = e;
          break;
        }
      }
      assert_int_not_equal(expect_n, 8);
      stk__decoded d;
      img_t got = decode(set[i].data, &o, &d);
      img_t want = crop(scaled[expect_n], x0, y0, x1 - x0, y1 - y0);
      char what[200];
      snprintf(what, sizeof what, "%s scale %d/8 roi x %d y %d w %d h %d", set[i].name, expect_n,
               o.roi_x, o.roi_y, o.roi_w, o.roi_h);
      assert_img_eq(got, want, what);
      assert_true(fabs(d.scale_x - (double)(x1 - x0) / o.roi_w) < 1e-12);
      free(got.p);
      free(want.p);
    }
    for (int n = 1; n <= 4; n *= 2) free(scaled[n].p);
  }
}

static void test_scale_choice(void **state) {
  (void)state;
  buf_t b = set[0].data; /* rocket 640x427 */
  static const struct {
    int min_w, min_h, out_w, out_h;
  } cases[] = {
      {0, 0, 640, 427},     /* no minimum: no scaling */
      {224, 224, 640, 427}, /* 1/2 would make the height 214 < 224 */
      {320, 214, 320, 214}, /* 1/2 */
      {321, 214, 640, 427}, /* 3/4, 5/8... are never used */
      {80, 54, 80, 54},     /* 1/8 */
      {81, 54, 160, 107},   /* 1/4 */
      {160, 107, 160, 107}, {161, 1, 320, 214}, {1, 108, 320, 214},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    stk__decode_opts o = {.min_w = cases[i].min_w, .min_h = cases[i].min_h};
    img_t got = decode(b, &o, NULL);
    assert_int_equal(got.w, cases[i].out_w);
    assert_int_equal(got.h, cases[i].out_h);
    free(got.p);
  }
}

static void test_exif_orientation(void **state) {
  (void)state;
  buf_t base = set[2].data; /* chelsea 4:2:0, 451x300 */
  img_t plain = decode(base, NULL, NULL);
  img_t plain_s = tj_decode(base, TJPF_RGB, (451 * 2 + 7) / 8, (300 * 2 + 7) / 8);
  for (int o = 1; o <= 8; o++)
    for (int be = 0; be < 2; be++) {
      buf_t e = with_exif(base, o, be);
      char what[120];
      img_t want = orient_ref(plain, o);
      img_t got = decode(e, NULL, NULL);
      snprintf(what, sizeof what, "orientation %d (%s)", o, be ? "MM" : "II");
      assert_img_eq(got, want, what);
      free(got.p);

      stk__decode_opts ign = {.ignore_orientation = true};
      got = decode(e, &ign, NULL);
      assert_img_eq(got, plain, "ignore_orientation");
      free(got.p);

      for (int t = 0; t < 25; t++) { /* ROIs in oriented coordinates */
        stk__decode_opts r = {.color = STK__COLOR_RGB};
        random_roi(want.w, want.h, &r.roi_x, &r.roi_y, &r.roi_w, &r.roi_h);
        got = decode(e, &r, NULL);
        img_t wc = crop(want, r.roi_x, r.roi_y, r.roi_w, r.roi_h);
        snprintf(what, sizeof what, "orientation %d roi x %d y %d w %d h %d", o, r.roi_x, r.roi_y,
                 r.roi_w, r.roi_h);
        assert_img_eq(got, wc, what);
        free(got.p);
        free(wc.p);
      }

      /* DCT scaling with orientation: minimum given in oriented terms. */
      img_t want_s = orient_ref(plain_s, o);
      stk__decode_opts s = {.min_w = want_s.w, .min_h = want_s.h};
      stk__decoded d;
      got = decode(e, &s, &d);
      snprintf(what, sizeof what, "orientation %d scaled 1/4", o);
      assert_img_eq(got, want_s, what);
      assert_true(fabs(d.scale_x - (double)want_s.w / want.w) < 1e-12);
      assert_true(fabs(d.scale_y - (double)want_s.h / want.h) < 1e-12);
      free(got.p);
      free(want_s.p);
      free(want.p);
      free(e.p);
    }
  free(plain.p);
  free(plain_s.p);
}

static void test_exif_parser(void **state) {
  (void)state;
  uint8_t le[] = {'I',  'I',  42, 0, 8, 0, 0,   0,   2,   0, 0x0f, 0x01,
                  2,    0,    4,  0, 0, 0, 'a', 'b', 'c', 0, /* Make */
                  0x12, 0x01, 3,  0, 1, 0, 0,   0,   6,   0, 0,    0};
  assert_int_equal(stk__exif_orientation(le, sizeof le), 6);
  uint8_t lng[] = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 4, 0, 0, 0, 1, 0, 0, 0, 8};
  assert_int_equal(stk__exif_orientation(lng, sizeof lng), 8);
  assert_int_equal(stk__exif_orientation(le, sizeof le - 4), 1); /* entry cut off */
  uint8_t bad_ifd[] = {'I', 'I', 42, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0};
  assert_int_equal(stk__exif_orientation(bad_ifd, sizeof bad_ifd), 1);
  uint8_t bad_value[] = {'I',  'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12,
                         0x01, 3,   0,  1, 0, 0, 0, 9, 0, 0, 0};
  assert_int_equal(stk__exif_orientation(bad_value, sizeof bad_value), 1);
  uint8_t huge_count[] = {'I', 'I', 42, 0, 8, 0, 0, 0, 0xff, 0xff, 0, 0};
  assert_int_equal(stk__exif_orientation(huge_count, sizeof huge_count), 1);
  assert_int_equal(stk__exif_orientation(NULL, 0), 1);
  assert_int_equal(stk__exif_orientation((const uint8_t *)"Exif\0\0MM", 8), 1);
}

static void test_cmyk(void **state) {
  (void)state;
  img_t src = img_new(37, 29, 4);
  for (size_t i = 0; i < (size_t)37 * 29 * 4; i++) src.p[i] = (uint8_t)(rnd() >> 7);
  /* YCCK with an Adobe marker (TurboJPEG), and plain CMYK with and without one. */
  buf_t files[3] = {
      tj_encode(src, TJSAMP_444, 95, 0),
      lj_encode(src, &(lj_opts){JCS_CMYK, JCS_CMYK, true, false, 0, 95, NULL, 0, false}),
      lj_encode(src, &(lj_opts){JCS_CMYK, JCS_CMYK, false, false, 0, 95, NULL, 0, false}),
  };
  bool inverted[3] = {true, true, false};
  for (int f = 0; f < 3; f++) {
    img_t cmyk = tj_decode(files[f], TJPF_CMYK, 0, 0);
    for (int k = 0; k < 3; k++) {
      stk__color color = (stk__color)k;
      stk__decode_opts o = {.color = color};
      img_t got = decode(files[f], &o, NULL);
      img_t want = img_new(cmyk.w, cmyk.h, color == STK__COLOR_GRAY ? 1 : 3);
      for (int i = 0; i < cmyk.w * cmyk.h; i++) {
        double v[4], rgb[3];
        for (int j = 0; j < 4; j++) {
          v[j] = cmyk.p[4 * i + j];
          if (!inverted[f]) v[j] = 255 - v[j]; /* ink -> 255 - ink */
        }
        for (int j = 0; j < 3; j++) rgb[j] = floor(v[j] * v[3] / 255.0 + 0.5);
        if (color == STK__COLOR_GRAY)
          want.p[i] = (uint8_t)floor((299 * rgb[0] + 587 * rgb[1] + 114 * rgb[2]) / 1000.0 + 0.5);
        else
          for (int j = 0; j < 3; j++)
            want.p[3 * i + j] = (uint8_t)rgb[color == STK__COLOR_BGR ? 2 - j : j];
      }
      char what[64];
      snprintf(what, sizeof what, "CMYK file %d colour %d", f, k);
      assert_img_eq(got, want, what);
      o.roi_x = 5, o.roi_y = 3, o.roi_w = 17, o.roi_h = 20;
      img_t roi = decode(files[f], &o, NULL);
      img_t wc = crop(want, 5, 3, 17, 20);
      assert_img_eq(roi, wc, "CMYK roi");
      free(roi.p);
      free(wc.p);
      free(got.p);
      free(want.p);
    }
    free(cmyk.p);
    free(files[f].p);
  }
  free(src.p);
}

/* ---------------------------------------------------------------------------------- */
/* PNG written by hand                                                                 */
/* ---------------------------------------------------------------------------------- */

static uint32_t crc32_of(const uint8_t *p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

typedef struct {
  uint8_t *p;
  size_t n, cap;
} growbuf;

static void put(growbuf *g, const void *d, size_t n) {
  if (g->n + n > g->cap) {
    g->cap = (g->n + n) * 2 + 64;
    g->p = realloc(g->p, g->cap);
    assert_non_null(g->p);
  }
  memcpy(g->p + g->n, d, n);
  g->n += n;
}
static void put_be32(growbuf *g, uint32_t v) {
  uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  put(g, b, 4);
}
static void put_chunk(growbuf *g, const char *type, const uint8_t *d, size_t n) {
  put_be32(g, (uint32_t)n);
  size_t start = g->n;
  put(g, type, 4);
  if (n) put(g, d, n);
  put_be32(g, crc32_of(g->p + start, n + 4, 0));
}

/* zlib stream of stored (uncompressed) deflate blocks. */
static void zlib_stored(growbuf *out, const uint8_t *d, size_t n) {
  uint8_t hdr[2] = {0x78, 0x01};
  put(out, hdr, 2);
  size_t pos = 0;
  do {
    size_t len = n - pos > 65535 ? 65535 : n - pos;
    uint8_t b[5] = {(uint8_t)(pos + len == n), (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)~len,
                    (uint8_t)(~len >> 8)};
    put(out, b, 5);
    put(out, d + pos, len);
    pos += len;
  } while (pos < n);
  uint32_t a = 1, b2 = 0;
  for (size_t i = 0; i < n; i++) {
    a = (a + d[i]) % 65521;
    b2 = (b2 + a) % 65521;
  }
  put_be32(out, b2 << 16 | a);
}

typedef struct {
  int w, h, depth, ctype, interlace;
  const uint16_t *samples; /* h * w * channels, values < 2^depth */
  const uint8_t *plte;     /* palette RGB triples */
  int plte_n;
  const uint8_t *trns;
  int trns_n;
  int exif_orientation; /* 0: no eXIf */
} png_spec;

static int png_channels(int ctype) {
  return ctype == 0 || ctype == 3 ? 1 : ctype == 4 ? 2 : ctype == 2 ? 3 : 4;
}

/* Appends the filtered (type 0) scanlines of the sub-image (x0 + i*dx, y0 + j*dy). */
static void png_rows(growbuf *raw, const png_spec *s, int x0, int y0, int dx, int dy) {
  int ch = png_channels(s->ctype);
  for (int y = y0; y < s->h; y += dy) {
    if (x0 >= s->w) return;
    uint8_t zero = 0;
    put(raw, &zero, 1);
    uint32_t acc = 0;
    int bits = 0;
    for (int x = x0; x < s->w; x += dx)
      for (int c = 0; c < ch; c++) {
        uint16_t v = s->samples[((size_t)y * s->w + x) * ch + c];
        if (s->depth == 16) {
          uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
          put(raw, b, 2);
        } else {
          acc = acc << s->depth | v;
          bits += s->depth;
          if (bits == 8) {
            uint8_t b = (uint8_t)acc;
            put(raw, &b, 1);
            acc = 0;
            bits = 0;
          }
        }
      }
    if (bits) {
      uint8_t b = (uint8_t)(acc << (8 - bits));
      put(raw, &b, 1);
    }
  }
}

static buf_t png_build(const png_spec *s) {
  growbuf g = {0}, raw = {0}, z = {0};
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  put(&g, sig, 8);
  uint8_t ihdr[13] = {(uint8_t)(s->w >> 24),
                      (uint8_t)(s->w >> 16),
                      (uint8_t)(s->w >> 8),
                      (uint8_t)s->w,
                      (uint8_t)(s->h >> 24),
                      (uint8_t)(s->h >> 16),
                      (uint8_t)(s->h >> 8),
                      (uint8_t)s->h,
                      (uint8_t)s->depth,
                      (uint8_t)s->ctype,
                      0,
                      0,
                      (uint8_t)s->interlace};
  put_chunk(&g, "IHDR", ihdr, 13);
  if (s->exif_orientation) {
    uint8_t ex[] = {'M',  'M',  0, 42, 0, 0, 0, 8, 0, 1,
                    0x01, 0x12, 0, 3,  0, 0, 0, 1, 0, (uint8_t)s->exif_orientation,
                    0,    0,    0, 0,  0, 0};
    put_chunk(&g, "eXIf", ex, sizeof ex);
  }
  if (s->plte) put_chunk(&g, "PLTE", s->plte, (size_t)s->plte_n * 3);
  if (s->trns) put_chunk(&g, "tRNS", s->trns, (size_t)s->trns_n);
  if (!s->interlace) {
    png_rows(&raw, s, 0, 0, 1, 1);
  } else {
    static const int adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                    {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
    for (int p = 0; p < 7; p++)
      png_rows(&raw, s, adam7[p][0], adam7[p][1], adam7[p][2], adam7[p][3]);
  }
  zlib_stored(&z, raw.p, raw.n);
  /* Split the data over two IDAT chunks, as encoders may. */
  size_t half = z.n / 2;
  put_chunk(&g, "IDAT", z.p, half);
  put_chunk(&g, "IDAT", z.p + half, z.n - half);
  put_chunk(&g, "IEND", NULL, 0);
  free(raw.p);
  free(z.p);
  return (buf_t){g.p, g.n};
}

/* One pixel's R, G, B at the file's precision: 16-bit samples as they are, lower depths
 * scaled to 0..255, palette looked up, alpha dropped. */
static void png_pixel_samples(const png_spec *s, int i, double rgb[3]) {
  int ch = png_channels(s->ctype);
  const uint16_t *v = s->samples + (size_t)i * ch;
  for (int c = 0; c < 3; c++) {
    uint16_t x = v[ch >= 3 ? c : 0];
    if (s->ctype == 3)
      rgb[c] = s->plte[3 * v[0] + c];
    else
      rgb[c] = s->depth == 16 ? x : x * 255 / ((1 << s->depth) - 1);
  }
}

/* A 16-bit value to 8 bits as DALI 2.4 does it: to nearest (never a tie). */
static double round_16_to_8(double v) { return floor(v * 255.0 / 65535.0 + 0.5); }

/* What a PNG sample set should decode to in `color`, with DALI 2.4's values (measured with
 * its CPU decoder): 16-bit samples rounded, not cut to their high byte; GRAY from colour
 * weighs R, G, B by 9797, 19234 and 3737 / 32768, truncated at 8 bits, rounded to 16 bits
 * and then to 8 for 16-bit files; gray files keep their value. */
static img_t png_expected(const png_spec *s, stk__color color) {
  img_t m = img_new(s->w, s->h, color == STK__COLOR_GRAY ? 1 : 3);
  bool wide = s->depth == 16, gray_file = s->ctype == 0 || s->ctype == 4;
  for (int i = 0; i < s->w * s->h; i++) {
    double rgb[3];
    png_pixel_samples(s, i, rgb);
    if (color == STK__COLOR_GRAY) {
      double y =
          gray_file ? rgb[0] : (9797.0 * rgb[0] + 19234.0 * rgb[1] + 3737.0 * rgb[2]) / 32768;
      m.p[i] = (uint8_t)(wide ? round_16_to_8(floor(y + 0.5)) : floor(y));
      continue;
    }
    for (int c = 0; c < 3; c++) {
      double x = rgb[color == STK__COLOR_BGR ? 2 - c : c];
      m.p[3 * (size_t)i + c] = (uint8_t)(wide ? round_16_to_8(x) : x);
    }
  }
  return m;
}

static img_t png_expected_rgb(const png_spec *s) { return png_expected(s, STK__COLOR_RGB); }

static void check_png(const png_spec *s, const char *what) {
  buf_t b = png_build(s);
  stk__image_info info;
  TU_OK(stk__image_peek(b.p, b.n, what, &info));
  assert_int_equal(info.width, s->w);
  assert_int_equal(info.height, s->h);
  assert_int_equal(info.bit_depth, s->depth);
  assert_int_equal(info.channels, s->ctype == 3 ? 3 : png_channels(s->ctype));
  for (int k = 0; k < 3; k++) {
    stk__decode_opts o = {.color = (stk__color)k};
    img_t want = png_expected(s, o.color);
    img_t got = decode(b, &o, NULL);
    char msg[160];
    snprintf(msg, sizeof msg, "%s colour %d", what, k);
    assert_img_eq(got, want, msg);
    free(got.p);
    for (int t = 0; t < 6; t++) {
      random_roi(s->w, s->h, &o.roi_x, &o.roi_y, &o.roi_w, &o.roi_h);
      got = decode(b, &o, NULL);
      img_t wc = crop(want, o.roi_x, o.roi_y, o.roi_w, o.roi_h);
      snprintf(msg, sizeof msg, "%s colour %d roi %d,%d %dx%d", what, k, o.roi_x, o.roi_y, o.roi_w,
               o.roi_h);
      assert_img_eq(got, wc, msg);
      free(got.p);
      free(wc.p);
    }
    free(want.p);
  }
  free(b.p);
}

static void test_png_color_types(void **state) {
  (void)state;
  static const struct {
    int ctype, depth;
  } types[] = {{0, 1}, {0, 2}, {0, 4}, {0, 8}, {0, 16}, {2, 8}, {2, 16}, {3, 1},
               {3, 2}, {3, 4}, {3, 8}, {4, 8}, {4, 16}, {6, 8}, {6, 16}};
  uint8_t plte[256 * 3];
  for (int i = 0; i < 256 * 3; i++) plte[i] = (uint8_t)(rnd() >> 11);
  uint8_t trns[5] = {0, 50, 100, 150, 255};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (int interlace = 0; interlace < 2; interlace++) {
      int w = interlace ? 37 : 13 + (int)t, h = interlace ? 23 : 7;
      int ch = png_channels(types[t].ctype), depth = types[t].depth;
      uint16_t *samples = malloc(sizeof(uint16_t) * w * h * ch);
      int limit = types[t].ctype == 3 ? (1 << depth) : (1 << depth);
      for (int i = 0; i < w * h * ch; i++) samples[i] = (uint16_t)(rnd() % (uint32_t)limit);
      png_spec s = {w,
                    h,
                    depth,
                    types[t].ctype,
                    interlace,
                    samples,
                    types[t].ctype == 3 ? plte : NULL,
                    1 << depth,
                    types[t].ctype == 3 ? trns : NULL,
                    5,
                    0};
      if (s.plte_n > 256) s.plte_n = 256;
      char what[80];
      snprintf(what, sizeof what, "PNG type %d depth %d%s", types[t].ctype, depth,
               interlace ? " interlaced" : "");
      check_png(&s, what);
      free(samples);
    }
}

static void test_png_photo_and_orientation(void **state) {
  (void)state;
  /* A real photo through our decoder vs libspng's own full decode. */
  buf_t b = load("data/photos/chelsea.png");
  img_t want = load_png_rgb("data/photos/chelsea.png");
  img_t got = decode(b, NULL, NULL);
  assert_img_eq(got, want, "chelsea.png");
  free(got.p);
  free(b.p);
  /* eXIf orientation on a PNG, with oriented ROIs. */
  int w = 41, h = 27;
  uint16_t *samples = malloc(sizeof(uint16_t) * w * h * 3);
  for (int i = 0; i < w * h * 3; i++) samples[i] = (uint16_t)(rnd() & 255);
  for (int o = 1; o <= 8; o++) {
    png_spec s = {w, h, 8, 2, o % 2, samples, NULL, 0, NULL, 0, o};
    buf_t p = png_build(&s);
    img_t rgb = png_expected_rgb(&s);
    img_t ow = orient_ref(rgb, o);
    got = decode(p, NULL, NULL);
    assert_img_eq(got, ow, "PNG eXIf orientation");
    free(got.p);
    stk__decode_opts r = {0};
    random_roi(ow.w, ow.h, &r.roi_x, &r.roi_y, &r.roi_w, &r.roi_h);
    got = decode(p, &r, NULL);
    img_t wc = crop(ow, r.roi_x, r.roi_y, r.roi_w, r.roi_h);
    assert_img_eq(got, wc, "PNG eXIf orientation roi");
    free(got.p);
    free(wc.p);
    free(ow.p);
    free(rgb.p);
    free(p.p);
  }
  free(samples);
  free(want.p);
}

/* ---------------------------------------------------------------------------------- */
/* Hostile input                                                                      */
/* ---------------------------------------------------------------------------------- */

static void expect_error(buf_t b, stk_status want, const char *what) {
  stk_clear_error();
  stk_status st = try_decode(b, NULL);
  if (st != want)
    fail_msg("%s: got %s (%s), want %s", what, stk_status_name(st), stk_last_error(),
             stk_status_name(want));
  if (!strstr(stk_last_error(), "bad.img"))
    fail_msg("%s: message does not name the file: %s", what, stk_last_error());
  stk__image_info info;
  (void)stk__image_peek(b.p, b.n, "peek", &info); /* must not crash either */
}

static void test_bad_input(void **state) {
  (void)state;
  expect_error((buf_t){NULL, 0}, STK_ERR_DECODE, "NULL");
  uint8_t one = 0xff;
  expect_error((buf_t){&one, 0}, STK_ERR_DECODE, "empty");
  expect_error((buf_t){&one, 1}, STK_ERR_DECODE, "one byte");
  uint8_t garbage[4096];
  for (int t = 0; t < 50; t++) {
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (uint8_t)rnd();
    expect_error((buf_t){garbage, 1 + rnd() % sizeof garbage}, STK_ERR_DECODE, "garbage");
  }
  expect_error((buf_t){(uint8_t *)"GIF89a\1\0\1\0", 10}, STK_ERR_UNSUPPORTED, "GIF");
  uint8_t soi_only[] = {0xff, 0xd8, 0xff, 0xd9};
  expect_error((buf_t){soi_only, sizeof soi_only}, STK_ERR_DECODE, "SOI EOI");

  /* Truncated JPEGs: errors wherever the cut falls in header or image data. */
  for (int i = 0; i < 3; i++) {
    buf_t j = set[i == 2 ? 8 : i].data; /* rocket, hubble, progressive */
    static const double cuts[] = {0.002, 0.05, 0.3, 0.5, 0.9, 0.99};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
      char what[80];
      snprintf(what, sizeof what, "%s cut at %.3f", set[i == 2 ? 8 : i].name, cuts[k]);
      expect_error((buf_t){j.p, (size_t)(j.n * cuts[k])}, STK_ERR_DECODE, what);
    }
    /* Only the EOI marker missing: the decoder still runs out of data (its bit buffer
     * reads ahead to the marker), so this is an error too. */
    expect_error((buf_t){j.p, j.n - 2}, STK_ERR_DECODE, "no EOI");
  }

  /* Arithmetic-coded data cut short. */
  {
    buf_t ar = set[12].data;
    assert_non_null(strstr(set[12].name, "arithmetic"));
    expect_error((buf_t){ar.p, ar.n / 2}, STK_ERR_DECODE, "arithmetic cut at 1/2");
  }

  /* Stray bytes between segments: libjpeg warns, the pixels are intact; accepted. */
  {
    buf_t r1 = set[0].data, junk = {malloc(r1.n + 3), r1.n + 3};
    assert_true(r1.p[20] == 0xff); /* rocket.jpg: SOI, then a 16-byte APP0 */
    memcpy(junk.p, r1.p, 20);
    memcpy(junk.p + 20, "\x00\x11\x22", 3);
    memcpy(junk.p + 23, r1.p + 20, r1.n - 20);
    img_t got = decode(junk, NULL, NULL);
    img_t want = tj_decode(r1, TJPF_RGB, 0, 0);
    assert_img_eq(got, want, "extraneous bytes");
    free(got.p);
    free(want.p);
    free(junk.p);
  }

  /* Lossless (SOF3) and 12-bit JPEGs: recognised, refused as unsupported. */
  buf_t r0 = load("data/photos/rocket.jpg");
  size_t sof = 2;
  while (sof + 1 < r0.n && !(r0.p[sof] == 0xff && r0.p[sof + 1] == 0xc0)) sof++;
  assert_true(sof + 4 < r0.n);
  r0.p[sof + 1] = 0xc3;
  expect_error(r0, STK_ERR_UNSUPPORTED, "SOF3");
  r0.p[sof + 1] = 0xc1; /* extended sequential, 12-bit */
  r0.p[sof + 4] = 12;
  expect_error(r0, STK_ERR_UNSUPPORTED, "12-bit");
  r0.p[sof + 4] = 8; /* SOF1 with 8 bits decodes like baseline */
  assert_int_equal(try_decode(r0, NULL), STK_OK);
  free(r0.p);

  /* PNG: truncation and a flipped CRC byte. */
  buf_t p = load("data/photos/chelsea.png");
  for (int k = 1; k < 8; k++) {
    char what[64];
    snprintf(what, sizeof what, "PNG cut at %d/8", k);
    expect_error((buf_t){p.p, p.n * k / 8}, STK_ERR_DECODE, what);
  }
  expect_error((buf_t){p.p, 20}, STK_ERR_DECODE, "PNG cut in IHDR");
  p.p[29] ^= 1; /* IHDR CRC */
  expect_error(p, STK_ERR_DECODE, "PNG bad IHDR CRC");
  p.p[29] ^= 1;
  p.p[p.n - 12 - 1] ^= 0x10; /* the CRC of the last IDAT (IEND is the last 12 bytes) */
  expect_error(p, STK_ERR_DECODE, "PNG bad IDAT CRC");
  p.p[p.n - 12 - 1] ^= 0x10;
  assert_int_equal(try_decode(p, NULL), STK_OK);
  free(p.p);

  /* Pixel limit, on the stored size. */
  buf_t r = set[0].data;
  stk__decode_opts lim = {.max_pixels = 640 * 427 - 1};
  assert_int_equal(try_decode(r, &lim), STK_ERR_LIMIT);
  lim.max_pixels = 640 * 427;
  assert_int_equal(try_decode(r, &lim), STK_OK);

  /* ROIs outside the image. */
  static const int rois[][4] = {{-1, 0, 10, 10},
                                {0, -1, 10, 10},
                                {631, 0, 10, 10},
                                {0, 418, 10, 10},
                                {0, 0, 10, 0},
                                {0, 0, -5, 10},
                                {0x7fffffff, 0, 0x7fffffff, 1}};
  for (size_t i = 0; i < sizeof rois / sizeof rois[0]; i++) {
    stk__decode_opts o = {
        .roi_x = rois[i][0], .roi_y = rois[i][1], .roi_w = rois[i][2], .roi_h = rois[i][3]};
    assert_int_equal(try_decode(r, &o), STK_ERR_INVALID_ARGUMENT);
  }
}

/* Random byte damage must give a status, never a crash or a hang. */
static void test_mutations_never_crash(void **state) {
  (void)state;
  buf_t srcs[3] = {set[0].data, set[8].data, load("data/photos/chelsea.png")};
  for (int s = 0; s < 3; s++) {
    buf_t m = {malloc(srcs[s].n), srcs[s].n};
    for (int t = 0; t < 150; t++) {
      memcpy(m.p, srcs[s].p, m.n);
      int flips = 1 + (int)(rnd() % 8);
      for (int f = 0; f < flips; f++) {
        /* Mostly in the headers, where the parsers live. */
        size_t at = rnd() % 4 ? rnd() % (m.n < 700 ? m.n : 700) : rnd() % m.n;
        m.p[at] = (uint8_t)rnd();
      }
      stk__decode_opts o = {.roi_x = 10, .roi_y = 10, .roi_w = 50, .roi_h = 40, .min_w = 10};
      stk_status st = try_decode(m, rnd() % 2 ? &o : NULL);
      if (st != STK_OK) assert_true(strlen(stk_last_error()) > 0);
    }
    free(m.p);
  }
  free(srcs[2].p);
}

static void test_scan_limit(void **state) {
  (void)state;
  /* A valid progressive JPEG with 3 * (1 + 63 * 3) = 570 scans: over the limit of 500. */
  static jpeg_scan_info scans[3 * 190];
  int n = 0;
  for (int c = 0; c < 3; c++) {
    scans[n++] = (jpeg_scan_info){1, {c}, 0, 0, 0, 0};
    for (int k = 1; k < 64; k++) {
      scans[n++] = (jpeg_scan_info){1, {c}, k, k, 0, 2};
      scans[n++] = (jpeg_scan_info){1, {c}, k, k, 2, 1};
      scans[n++] = (jpeg_scan_info){1, {c}, k, k, 1, 0};
    }
  }
  img_t src = img_new(16, 16, 3);
  for (int i = 0; i < 16 * 16 * 3; i++) src.p[i] = (uint8_t)rnd();
  lj_opts o = {JCS_RGB, JCS_YCbCr, false, true, 0, 90, scans, n, false};
  buf_t many = lj_encode(src, &o);
  expect_error(many, STK_ERR_DECODE, "570 scans");
  /* The same with a coarser refinement (2 passes per coefficient: 381 scans) decodes. */
  n = 0;
  for (int c = 0; c < 3; c++) {
    scans[n++] = (jpeg_scan_info){1, {c}, 0, 0, 0, 0};
    for (int k = 1; k < 64; k++) {
      scans[n++] = (jpeg_scan_info){1, {c}, k, k, 0, 1};
      scans[n++] = (jpeg_scan_info){1, {c}, k, k, 1, 0};
    }
  }
  o.num_scans = n;
  buf_t fewer = lj_encode(src, &o);
  img_t got = decode(fewer, NULL, NULL);
  img_t want = tj_decode(fewer, TJPF_RGB, 0, 0);
  assert_img_eq(got, want, "381 scans");
  free(got.p);
  free(want.p);
  free(fewer.p);
  free(many.p);
  free(src.p);
}

static void test_progressive_roi_and_scaling_with_gray_output(void **state) {
  (void)state;
  buf_t b = set[8].data; /* progressive 4:2:0 */
  stk__decode_opts o = {.color = STK__COLOR_GRAY,
                        .roi_x = 101,
                        .roi_y = 37,
                        .roi_w = 301,
                        .roi_h = 203,
                        .min_w = 150,
                        .min_h = 100};
  img_t got = decode(b, &o, NULL);
  img_t s2 = tj_decode(b, TJPF_GRAY, 300, 200);
  int x0, x1, y0, y1;
  span(101, 301, 600, 4, &x0, &x1);
  span(37, 203, 400, 4, &y0, &y1);
  img_t want = crop(s2, x0, y0, x1 - x0, y1 - y0);
  assert_img_eq(got, want, "progressive gray roi 1/2");
  free(got.p);
  free(want.p);
  free(s2.p);
}

/* ---------------------------------------------------------------------------------- */
/* The operators, through a pipeline                                                  */
/* ---------------------------------------------------------------------------------- */

static const char *OP_PHOTOS[] = {"rocket.jpg", "camera.png", "hubble_deep_field.jpg",
                                  "chelsea.png"};

/* readers.file over the photos (in order) followed by `body`. */
static stk_pipeline *op_pipeline(const char *body, int batch, int threads, const char *extra) {
  static char text[8192];
  char files[4096] = "";
  for (size_t i = 0; i < sizeof OP_PHOTOS / sizeof OP_PHOTOS[0]; i++) {
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "data/photos/%s", OP_PHOTOS[i]);
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s\"", i ? ", " : "",
             tu_path(path, sizeof path, rel));
  }
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = %d\nseed = 7\n"
           "enc, labels = readers.file(files=[%s%s], name=\"Reader\")\n%s",
           batch, threads, files, extra ? extra : "", body);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

static img_t sample_img(stk_tensor_list *tl, size_t i) {
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(tl, i, &d));
  assert_int_equal(d.ndim, 3);
  assert_int_equal(d.dtype, STK_DTYPE_UINT8);
  assert_string_equal(d.layout, "HWC");
  return (img_t){d.data, (int)d.shape[1], (int)d.shape[0], (int)d.shape[2]};
}

static void test_op_decoders_image_and_peek(void **state) {
  (void)state;
  stk_pipeline *p = op_pipeline(
      "rgb = decoders.image(enc)\n"
      "bgr = decoders.image(enc, output_type=\"BGR\", hw_decoder_load=0.9)\n"
      "gray = decoders.image(enc, output_type=\"GRAY\", use_fast_idct=false)\n"
      "shape = peek_image_shape(enc)\n"
      "shape32 = peek_image_shape(enc, dtype=\"int32\", image_type=\"ANY_DATA\")\n"
      "return rgb, bgr, gray, shape, shape32\n",
      4, 2, NULL);
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  for (size_t i = 0; i < 4; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "data/photos/%s", OP_PHOTOS[i]);
    buf_t f = load(rel);
    for (int k = 0; k < 3; k++) {
      stk__decode_opts o = {.color = (stk__color)k};
      img_t want = decode(f, &o, NULL);
      img_t got = sample_img(stk_batch_output(b, (size_t)k), i);
      assert_img_eq(got, want, rel);
      free(want.p);
    }
    stk__image_info info;
    TU_OK(stk__image_peek(f.p, f.n, rel, &info));
    stk_tensor_desc d;
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 3), i, &d));
    assert_int_equal(d.dtype, STK_DTYPE_INT64);
    assert_int_equal(d.shape[0], 3);
    const int64_t *s64 = d.data;
    assert_int_equal(s64[0], info.height);
    assert_int_equal(s64[1], info.width);
    assert_int_equal(s64[2], 3); /* image_type "RGB" by default, as DALI */
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 4), i, &d));
    assert_int_equal(d.dtype, STK_DTYPE_INT32);
    assert_int_equal(((const int32_t *)d.data)[1], info.width);
    assert_int_equal(((const int32_t *)d.data)[2], info.channels); /* ANY_DATA: the file's */
    free(f.p);
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* Where `sub` lies inside `full` (exact match), or -1. */
static int find_sub(img_t full, img_t sub, int *fx, int *fy) {
  for (int y = 0; y + sub.h <= full.h; y++)
    for (int x = 0; x + sub.w <= full.w; x++) {
      int r = 0;
      for (; r < sub.h; r++)
        if (memcmp(full.p + ((size_t)(y + r) * full.w + x) * full.c,
                   sub.p + (size_t)r * sub.w * sub.c, (size_t)sub.w * sub.c) != 0)
          break;
      if (r == sub.h) {
        *fx = x;
        *fy = y;
        return 0;
      }
    }
  return -1;
}

static void test_op_image_random_crop(void **state) {
  (void)state;
  const char *body =
      "crop = decoders.image_random_crop(enc, random_area=[0.1, 0.5])\n"
      "small = decoders.image_random_crop(enc, size=[40, 30])\n"
      "return crop, small\n";
  stk_pipeline *p = op_pipeline(body, 4, 1, NULL);
  stk_pipeline *q = op_pipeline(body, 4, 3, NULL); /* same seed, other thread count */
  stk_batch *b, *c;
  TU_OK(stk_pipeline_run(p, &b));
  TU_OK(stk_pipeline_run(q, &c));
  for (size_t i = 0; i < 4; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "data/photos/%s", OP_PHOTOS[i]);
    buf_t f = load(rel);
    img_t full = decode(f, NULL, NULL);
    img_t crop1 = sample_img(stk_batch_output(b, 0), i);
    img_t again = sample_img(stk_batch_output(c, 0), i);
    assert_img_eq(again, crop1, "same seed, other thread count");
    double area = (double)crop1.w * crop1.h / ((double)full.w * full.h);
    assert_true(area > 0.09 && area < 0.51);
    double ratio = (double)crop1.w / crop1.h;
    assert_true(ratio > 0.74 && ratio < 1.34);
    int x, y;
    if (find_sub(full, crop1, &x, &y) != 0)
      fail_msg("%s: the crop is not a window of the image", rel);
    /* With size: at least 30 wide and 40 high, DCT-downscaled when the window allows. */
    img_t s2 = sample_img(stk_batch_output(b, 1), i);
    assert_true(s2.w >= 30 && s2.h >= 40);
    /* Every window is >= 8% of the image and >= 2x the size, so JPEGs come out smaller
     * than any unscaled window could; PNGs are never scaled. */
    if (strstr(rel, ".jpg"))
      assert_true(s2.w * s2.h < 0.08 * full.w * full.h);
    else
      assert_true(s2.w * s2.h >= 0.07 * full.w * full.h);
    free(full.p);
    free(f.p);
  }
  stk_batch_release(b);
  stk_batch_release(c);
  stk_pipeline_destroy(p);
  stk_pipeline_destroy(q);
}

static void test_op_errors_name_the_file(void **state) {
  (void)state;
  char dir[256], path[1400], extra[1600];
  tu_tmpdir(dir, sizeof dir, "codecs");
  snprintf(path, sizeof path, "%s/broken.jpg", dir);
  buf_t r = load("data/photos/rocket.jpg");
  tu_write(path, r.p, r.n / 2);
  free(r.p);
  snprintf(extra, sizeof extra, ", \"%s\"", path);
  stk_pipeline *p = op_pipeline("img = decoders.image(enc)\nreturn img\n", 5, 1, extra);
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_run(p, &b);
  assert_int_equal(st, STK_ERR_DECODE);
  if (!strstr(stk_last_error(), "broken.jpg")) fail_msg("message: %s", stk_last_error());
  stk_pipeline_destroy(p);

  /* max_image_pixels reaches the decoder. */
  stk_pipeline *q;
  char text[4096], abs[1024];
  snprintf(text, sizeof text,
           "batch_size = 1\nmax_image_pixels = 1000\n"
           "enc, labels = readers.file(files=[\"%s\"])\nimg = decoders.image(enc)\nreturn img\n",
           tu_path(abs, sizeof abs, "data/photos/rocket.jpg"));
  TU_OK(stk_pipeline_from_text(text, &q));
  TU_OK(stk_pipeline_build(q));
  assert_int_equal(stk_pipeline_run(q, &b), STK_ERR_LIMIT);
  if (!strstr(stk_last_error(), "rocket.jpg")) fail_msg("message: %s", stk_last_error());
  stk_pipeline_destroy(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_peek),
      cmocka_unit_test(test_full_decode_matches_turbojpeg),
      cmocka_unit_test(test_fast_idct_matches_turbojpeg),
      cmocka_unit_test(test_roi_equals_crop_of_full),
      cmocka_unit_test(test_scaled_full_matches_turbojpeg),
      cmocka_unit_test(test_scaled_roi_matches_turbojpeg_crop),
      cmocka_unit_test(test_scale_choice),
      cmocka_unit_test(test_exif_orientation),
      cmocka_unit_test(test_exif_parser),
      cmocka_unit_test(test_cmyk),
      cmocka_unit_test(test_png_color_types),
      cmocka_unit_test(test_png_photo_and_orientation),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_mutations_never_crash),
      cmocka_unit_test(test_scan_limit),
      cmocka_unit_test(test_progressive_roi_and_scaling_with_gray_output),
      cmocka_unit_test(test_op_decoders_image_and_peek),
      cmocka_unit_test(test_op_image_random_crop),
      cmocka_unit_test(test_op_errors_name_the_file),
  };
  return cmocka_run_group_tests(tests, setup_set, teardown_set);
}
