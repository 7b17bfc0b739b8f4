/* The pixel stage of stoker's own GPU JPEG decoder (src/shared/jpeg_pixels.h, the code
 * the kernels of src/cuda/jpeg_idct.cu run) against libjpeg-turbo itself: the quantised
 * coefficients and tables of a file, read with jpeg_read_coefficients into the layout of
 * src/shared/jpeg_frame.h, go through the same per-block and per-pixel functions the
 * kernels call, and the pixels must equal libjpeg-turbo's decode of the file (JDCT_ISLOW,
 * fancy upsampling; RGB, BGR and gray output) byte for byte. Files: photographs and
 * synthetic images at odd sizes, encoded by TurboJPEG with every chroma subsampling it
 * writes for 3 components (4:4:4, 4:2:2, 4:2:0, 4:4:0) and gray, at qualities 50, 90 and
 * 100; regions are checked against the crop of the whole image; a variant fills the
 * blocks that only pad the MCU grid with random coefficients (the output must not
 * change: the upsampler repeats edge samples, it never reads padding). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <turbojpeg.h>

#include "codecs/codecs.h"
#include "jpeg_coefs.h"
#include "shared/jpeg_pixels.h"

static uint32_t rng_state = 0x2468aceu;
static int rnd_in(int lo, int hi) { return tu_rand_in(&rng_state, lo, hi); }

/* ---- the file's coefficients in jpeg_frame.h's layout (jpeg_coefs.h) ---- */

typedef jc_coded coded;

static coded read_coefficients(const uint8_t *jpeg, size_t n) {
  coded r;
  assert_int_equal(jc_read(jpeg, n, &r), 0);
  return r;
}

/* Random coefficients in every block outside the image's real blocks. */
static void garble_padding(coded *r) {
  for (int c = 0; c < r->f.ncomp; c++) {
    stk_jpeg_component *o = &r->f.comp[c];
    for (int by = 0; by < o->bh; by++)
      for (int bx = 0; bx < o->bw; bx++) {
        if (bx < r->real_bw[c] && by < r->real_bh[c]) continue;
        for (int i = 0; i < 64; i++)
          r->coef[(o->block0 + (int64_t)by * o->bw + bx) * 64 + i] =
              (int16_t)rnd_in(i ? -60 : -1000, i ? 60 : 1000);
      }
  }
}

/* ---- our pixels: the kernels' bodies on the host ---- */

/* The region (rx, ry, rw, rh) of the image decoded into a fresh rh x rw x channels buffer,
 * block by block then pixel by pixel as jpeg_idct.cu's two kernels do. The blocks the
 * region does not need are skipped: their samples stay garbage, which must not show. */
static uint8_t *ours(const coded *r, int color, int rx, int ry, int rw, int rh) {
  const stk_jpeg_frame *f = &r->f;
  assert_null(stk_jpeg_frame_problem(f));
  uint8_t *planes = malloc((size_t)f->total_blocks * 64);
  memset(planes, 0xA5, (size_t)f->total_blocks * 64);
  for (int64_t g = 0; g < f->total_blocks; g++)
    stk_jpeg_idct_at(f, r->coef, planes, g, color, rx, ry, rw, rh);
  stk_jpeg_plane pl[3];
  stk_jpeg_planes(f, planes, pl);
  int ch = stk_jpeg_out_channels(color);
  uint8_t *out = malloc((size_t)rw * rh * ch + 1);
  for (int y = 0; y < rh; y++)
    for (int x = 0; x < rw; x++)
      stk_jpeg_region_pixel(pl, f->ncomp, color, rx, ry, x, y, out, (int64_t)rw * ch);
  free(planes);
  return out;
}

/* ---- libjpeg-turbo's decode ---- */

static uint8_t *theirs(const uint8_t *jpeg, size_t n, int color, int *w, int *h) {
  uint8_t *out = jc_decode(jpeg, n, color, w, h);
  assert_non_null(out);
  return out;
}

/* stoker's CPU decoder (src/codecs/jpeg.c), whole image or region: what the GPU
 * decoder must reproduce. */
static uint8_t *stokers(const uint8_t *jpeg, size_t n, int color, int rx, int ry, int rw, int rh) {
  stk__decode_opts o = {.color = color == STK_JPEG_OUT_GRAY  ? STK__COLOR_GRAY
                                 : color == STK_JPEG_OUT_BGR ? STK__COLOR_BGR
                                                             : STK__COLOR_RGB,
                        .roi_x = rx,
                        .roi_y = ry,
                        .roi_w = rw,
                        .roi_h = rh};
  stk__decoded d;
  if (stk__image_decode(jpeg, n, "pixels.jpg", &o, stk__image_alloc_malloc, NULL, &d) != STK_OK)
    fail_msg("stk__image_decode: %s", stk_last_error());
  return d.data;
}

/* ---- comparison ---- */

typedef struct {
  long long diff; /* bytes that differ */
  int maxd;       /* largest difference */
  int x, y, k;    /* the first one */
} cmp_t;

static cmp_t compare(const uint8_t *a, const uint8_t *b, int w, int h, int ch, int64_t bpitch) {
  cmp_t c = {0, 0, -1, -1, -1};
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w * ch; x++) {
      int d = abs((int)a[(int64_t)y * w * ch + x] - (int)b[y * bpitch + x]);
      if (!d) continue;
      if (!c.diff) c.x = x / ch, c.y = y, c.k = x % ch;
      c.diff++;
      if (d > c.maxd) c.maxd = d;
    }
  return c;
}

static const char *color_name(int color) {
  return color == STK_JPEG_OUT_GRAY ? "gray" : color == STK_JPEG_OUT_BGR ? "bgr" : "rgb";
}

/* Whole image and `regions` random regions of one file, every output colour. */
static void check_file(const uint8_t *jpeg, size_t n, const char *what, int garble, int regions) {
  coded r = read_coefficients(jpeg, n);
  if (garble) garble_padding(&r);
  for (int color = 0; color < 3; color++) {
    int w, h, ch = stk_jpeg_out_channels(color);
    uint8_t *ref = theirs(jpeg, n, color, &w, &h);
    assert_int_equal(w, r.f.width);
    assert_int_equal(h, r.f.height);
    uint8_t *got = ours(&r, color, 0, 0, w, h);
    cmp_t c = compare(got, ref, w, h, ch, (int64_t)w * ch);
    if (c.diff)
      fail_msg("%s %s%s: %lld bytes differ (max %d), first at x=%d y=%d channel %d", what,
               color_name(color), garble ? " (garbage padding)" : "", c.diff, c.maxd, c.x, c.y,
               c.k);
    if (!garble) { /* stoker's decoder is libjpeg-turbo too: the same bytes */
      uint8_t *st = stokers(jpeg, n, color, 0, 0, 0, 0);
      if (compare(got, st, w, h, ch, (int64_t)w * ch).diff)
        fail_msg("%s %s: stoker's CPU decoder differs", what, color_name(color));
      free(st);
    }
    free(got);
    for (int i = 0; i < regions; i++) {
      int rw = rnd_in(1, w), rh = rnd_in(1, h);
      int rx = rnd_in(0, w - rw), ry = rnd_in(0, h - rh);
      got = ours(&r, color, rx, ry, rw, rh);
      c = compare(got, ref + ((int64_t)ry * w + rx) * ch, rw, rh, ch, (int64_t)w * ch);
      if (c.diff)
        fail_msg("%s %s region %dx%d at (%d,%d): %lld bytes differ, first at x=%d y=%d", what,
                 color_name(color), rw, rh, rx, ry, c.diff, c.x, c.y);
      /* stoker's region decode (jpeg_crop_scanline + skip) is the crop as well */
      uint8_t *st = stokers(jpeg, n, color, rx, ry, rw, rh);
      c = compare(got, st, rw, rh, ch, (int64_t)rw * ch);
      if (c.diff)
        fail_msg("%s %s region %dx%d at (%d,%d): stoker's CPU decoder differs in %lld bytes", what,
                 color_name(color), rw, rh, rx, ry, c.diff);
      free(st);
      free(got);
    }
    free(ref);
  }
  free(r.coef);
}

static const int subsamps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440, TJSAMP_GRAY};
static const char *subsamp_names[] = {"4:4:4", "4:2:2", "4:2:0", "4:4:0", "gray"};
static const int qualities[] = {50, 90, 100};

static void check_image(const uint8_t *px, int w, int h, const char *name, int regions) {
  for (size_t s = 0; s < sizeof subsamps / sizeof *subsamps; s++)
    for (size_t q = 0; q < sizeof qualities / sizeof *qualities; q++) {
      size_t n;
      uint8_t *jpeg = tu_jpeg_encode(px, w, h, 3, subsamps[s], qualities[q], 0, &n);
      char what[160];
      snprintf(what, sizeof what, "%s %dx%d %s q%d", name, w, h, subsamp_names[s], qualities[q]);
      check_file(jpeg, n, what, 0, regions);
      check_file(jpeg, n, what, 1, 0);
      free(jpeg);
    }
}

/* Smooth gradients, sharp steps and noise: saturated colours push YCbCr -> RGB to its
 * clamps, steps give the IDCT overshoot to range-limit. */
static uint8_t *synthetic(int w, int h) {
  uint8_t *p = malloc((size_t)w * h * 3);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < 3; k++) {
        int v = (x * 255 / w + y * 131 / h + k * 85) & 255;
        if (((x / 5) + (y / 3) + k) % 4 == 0) v = k == 1 ? 255 : 0;
        p[((size_t)y * w + x) * 3 + k] = (uint8_t)((v + rnd_in(0, 40)) & 255);
      }
  return p;
}

static void test_photos(void **state) {
  (void)state;
  static const char *photos[] = {"data/photos/astronaut.png", "data/photos/chelsea.png",
                                 "data/photos/coffee.png", "data/photos/rocket.jpg"};
  for (size_t i = 0; i < sizeof photos / sizeof *photos; i++) {
    tu_image im = tu_load_photo(photos[i]);
    assert_int_equal(im.c, 3);
    check_image(im.p, im.w, im.h, photos[i], 3);
    free(im.p);
  }
}

static void test_odd_sizes(void **state) {
  (void)state;
  static const int sizes[][2] = {{1, 1},   {2, 2},    {3, 1},   {1, 3},   {7, 9},
                                 {17, 33}, {33, 17},  {16, 16}, {15, 31}, {35, 2},
                                 {2, 35},  {4000, 3}, {3, 4000}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    uint8_t *px = synthetic(sizes[i][0], sizes[i][1]);
    check_image(px, sizes[i][0], sizes[i][1], "synthetic", 8);
    free(px);
  }
}

/* A photograph cut to odd sizes (real texture at every edge phase of the MCU grid). */
static void test_photo_crops(void **state) {
  (void)state;
  tu_image im = tu_load_photo("data/photos/chelsea.png");
  for (int i = 0; i < 12; i++) {
    int w = rnd_in(1, 70), h = rnd_in(1, 70), x0 = rnd_in(0, im.w - w), y0 = rnd_in(0, im.h - h);
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
      memcpy(px + (size_t)y * w * 3, im.p + ((size_t)(y0 + y) * im.w + x0) * 3, (size_t)w * 3);
    check_image(px, w, h, "chelsea crop", 4);
    free(px);
  }
  free(im.p);
}

/* An RGB image encoded by libjpeg with the given sampling factors per component
 * (TurboJPEG writes only the usual ones): h[c] x v[c], 1 or 2. */
static uint8_t *encode_sampled(const uint8_t *px, int w, int h, const int *hs, const int *vs,
                               int quality, size_t *n) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr jerr;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&ci);
  unsigned char *out = NULL;
  unsigned long size = 0;
  jpeg_mem_dest(&ci, &out, &size);
  ci.image_width = (JDIMENSION)w;
  ci.image_height = (JDIMENSION)h;
  ci.input_components = 3;
  ci.in_color_space = JCS_RGB;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, quality, TRUE);
  for (int c = 0; c < 3; c++) {
    ci.comp_info[c].h_samp_factor = hs[c];
    ci.comp_info[c].v_samp_factor = vs[c];
  }
  jpeg_start_compress(&ci, TRUE);
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)ci.next_scanline * w * 3);
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  uint8_t *copy = malloc(size);
  memcpy(copy, out, size);
  free(out);
  *n = size;
  return copy;
}

/* Sampling factors TurboJPEG never writes: chroma finer than luma, the two chroma
 * components sampled differently, luma not at the maximum. */
static void test_unusual_sampling(void **state) {
  (void)state;
  static const int factors[][6] = {
      {2, 2, 1, 2, 1, 2}, /* Y 2x2, Cb 2x1, Cr 1x2 (h then v per component) */
      {1, 2, 1, 1, 1, 1}, /* Y 1x2, chroma 1x1 */
      {2, 2, 1, 2, 2, 1}, /* Y 2x2, Cb 1x2, Cr 2x1 */
      {1, 1, 2, 2, 1, 1}, /* Y 1x1, Cb 2x2: luma upsampled */
      {2, 1, 1, 1, 2, 1}, /* Y 2x1, Cb 1x1, Cr 2x1 */
  };
  static const int sizes[][2] = {{1, 1}, {3, 5}, {4, 4}, {5, 3}, {37, 29}, {64, 48}, {201, 133}};
  for (size_t i = 0; i < sizeof factors / sizeof *factors; i++)
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
      const int *F = factors[i];
      int hs[3] = {F[0], F[2], F[4]}, vs[3] = {F[1], F[3], F[5]};
      uint8_t *px = synthetic(sizes[z][0], sizes[z][1]);
      size_t n;
      uint8_t *jpeg = encode_sampled(px, sizes[z][0], sizes[z][1], hs, vs, 85, &n);
      char what[160];
      snprintf(what, sizeof what, "%dx%d sampled %dx%d,%dx%d,%dx%d", sizes[z][0], sizes[z][1],
               hs[0], vs[0], hs[1], vs[1], hs[2], vs[2]);
      coded r = read_coefficients(jpeg, n); /* the file has the factors asked for */
      for (int c = 0; c < 3; c++) {
        assert_int_equal(r.f.comp[c].h, hs[c]);
        assert_int_equal(r.f.comp[c].v, vs[c]);
      }
      free(r.coef);
      check_file(jpeg, n, what, 0, 4);
      check_file(jpeg, n, what, 1, 0);
      free(jpeg);
      free(px);
    }
}

/* The test itself can fail: a wrong coefficient or a wrong rounding bias is seen. */
static void test_detects_changes(void **state) {
  (void)state;
  uint8_t *px = synthetic(40, 24);
  size_t n;
  uint8_t *jpeg = tu_jpeg_encode(px, 40, 24, 3, TJSAMP_420, 90, 0, &n);
  coded r = read_coefficients(jpeg, n);
  int w, h;
  uint8_t *ref = theirs(jpeg, n, STK_JPEG_OUT_RGB, &w, &h);
  uint8_t *got = ours(&r, STK_JPEG_OUT_RGB, 0, 0, w, h);
  assert_int_equal(compare(got, ref, w, h, 3, w * 3).diff, 0);
  free(got);
  r.coef[1 * 64 + 9] += 3; /* one AC coefficient of a real luma block (bx 1) */
  got = ours(&r, STK_JPEG_OUT_RGB, 0, 0, w, h);
  assert_true(compare(got, ref, w, h, 3, w * 3).diff > 0);
  free(got);
  free(ref);
  free(r.coef);
  free(jpeg);
  free(px);
}

/* Hand-computed values of the formulas (JFIF colour, the triangle filter). */
static void test_formulas(void **state) {
  (void)state;
  uint8_t rgb[3];
  stk_jpeg_ycc_rgb(128, 128, 128, rgb);
  assert_memory_equal(rgb, ((uint8_t[]){128, 128, 128}), 3);
  /* Cr = 255: R = 100 + round(1.402 * 127) = 278 -> 255; G = 100 - round(0.71414 * 127) */
  stk_jpeg_ycc_rgb(100, 128, 255, rgb);
  assert_memory_equal(rgb, ((uint8_t[]){255, 9, 100}), 3);
  stk_jpeg_ycc_rgb(100, 0, 128, rgb); /* Cb = 0: B = 100 - 226.8 -> 0, G = 100 + 44.05 */
  assert_memory_equal(rgb, ((uint8_t[]){100, 144, 0}), 3);
  /* a DC-only block: every sample = 128 + DC * q / 8 */
  int16_t coef[64] = {0};
  uint16_t q[64];
  for (int i = 0; i < 64; i++) q[i] = 16;
  coef[0] = -20; /* -320 / 8 = -40 */
  uint8_t blk[64];
  stk_jpeg_idct_block(coef, q, blk, 8);
  for (int i = 0; i < 64; i++) assert_int_equal(blk[i], 88);
  /* h2v1 from samples 10, 50, 90 (4 samples wide, so filtered): outputs 2..3 =
   * (3*50 + 10 + 1) / 4 = 40, (3*50 + 90 + 2) / 4 = 60 */
  uint8_t row[8] = {10, 50, 90, 90};
  stk_jpeg_plane pl = {row, 8, 4, 1, 2, 1, 1};
  assert_int_equal(stk_jpeg_sample(&pl, 2, 0), 40);
  assert_int_equal(stk_jpeg_sample(&pl, 3, 0), 60);
  assert_int_equal(stk_jpeg_sample(&pl, 0, 0), 10);
}

/* Frames the kernels must refuse (they would read or write outside the arrays). */
static void test_bad_frames(void **state) {
  (void)state;
  uint8_t *px = synthetic(20, 12);
  size_t n;
  uint8_t *jpeg = tu_jpeg_encode(px, 20, 12, 3, TJSAMP_420, 90, 0, &n);
  coded r = read_coefficients(jpeg, n);
  assert_null(stk_jpeg_frame_problem(&r.f));
  stk_jpeg_frame f = r.f;
  f.ncomp = 2;
  assert_string_equal(stk_jpeg_frame_problem(&f), "not 1 or 3 components");
  f = r.f;
  f.comp[1].bw = 1; /* chroma is 10 samples wide: 2 blocks */
  assert_string_equal(stk_jpeg_frame_problem(&f), "component block grid smaller than its samples");
  f = r.f;
  f.total_blocks--;
  assert_string_equal(stk_jpeg_frame_problem(&f), "component blocks outside total_blocks");
  f = r.f;
  f.comp[2].quant = 4;
  assert_string_equal(stk_jpeg_frame_problem(&f), "quantisation table index not 0..3");
  f = r.f;
  f.comp[0].h = 3;
  assert_non_null(stk_jpeg_frame_problem(&f));
  f = r.f;
  f.width = 0;
  assert_string_equal(stk_jpeg_frame_problem(&f), "empty image");
  free(r.coef);
  free(jpeg);
  free(px);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_formulas),   cmocka_unit_test(test_detects_changes),
      cmocka_unit_test(test_bad_frames), cmocka_unit_test(test_unusual_sampling),
      cmocka_unit_test(test_odd_sizes),  cmocka_unit_test(test_photo_crops),
      cmocka_unit_test(test_photos),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
