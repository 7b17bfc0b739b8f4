/* JPEG region decoding's in-place rows (src/codecs/jpeg.c, read_shifted) against the
 * staging row they replace: a crop whose columns start inside the decoder's iMCU-aligned
 * output is decoded straight into the output, over its neighbour rows, whose bytes are put
 * back. stk__image_decode with stk__jpeg_rows_staged set (every row staged and copied)
 * and cleared must give the same bytes for random regions of photos and synthetic
 * images, every chroma subsampling TurboJPEG writes, progressive files, all eight EXIF
 * orientations (flips reverse the rows' order in the buffer, turns decode into a
 * transposing buffer), RGB, BGR and gray output, DCT scaling and regions one pixel wide
 * or tall. Independently, regions are checked against TurboJPEG's full decode, cropped. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "codecs/codecs.h"

static uint32_t rng_state = 0x1234567u;
static uint32_t rnd(void) { return tu_rand(&rng_state); }
static int rnd_in(int lo, int hi) { return tu_rand_in(&rng_state, lo, hi); }

typedef struct {
  uint8_t *p;
  size_t n;
} buf_t;

static buf_t encode(const uint8_t *px, int w, int h, int c, int subsamp, int flags) {
  buf_t b;
  b.p = tu_jpeg_encode(px, w, h, c, subsamp, 88, flags, &b.n);
  return b;
}

/* Smooth colour gradients with noise: fancy upsampling has something to blend. */
static uint8_t *synthetic(int w, int h, int c) {
  return tu_gradient_noise(w, h, c, 24, &rng_state);
}

/* An APP1 Exif block (little-endian TIFF, one IFD0 entry) with the orientation, after SOI. */
static buf_t with_orientation(buf_t j, int orientation) {
  static const uint8_t head[] = {0xff, 0xe1, 0, 32, 'E', 'x', 'i', 'f', 0, 0};
  uint8_t tiff[] = {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  tiff[18] = (uint8_t)orientation;
  buf_t r = {malloc(j.n + sizeof head + sizeof tiff), j.n + sizeof head + sizeof tiff};
  memcpy(r.p, j.p, 2);
  memcpy(r.p + 2, head, sizeof head);
  memcpy(r.p + 2 + sizeof head, tiff, sizeof tiff);
  memcpy(r.p + 2 + sizeof head + sizeof tiff, j.p + 2, j.n - 2);
  return r;
}

static uint8_t *decode(buf_t b, const stk__decode_opts *o, bool staged, stk__decoded *d) {
  stk__jpeg_rows_staged = staged;
  stk_status st = stk__image_decode(b.p, b.n, "rows.jpg", o, stk__image_alloc_malloc, NULL, d);
  stk__jpeg_rows_staged = false;
  if (st != STK_OK) fail_msg("decode: %s", stk_last_error());
  return d->data;
}

/* One random region of `b` (oriented size w x h), staged against in place. */
static void check_region(buf_t b, int w, int h, const char *what) {
  stk__decode_opts o = {.color = (stk__color)(rnd() % 3)};
  int kind = (int)(rnd() % 8);
  o.roi_w = kind == 0 ? 1 : rnd_in(1, w);
  o.roi_h = kind == 1 ? 1 : rnd_in(1, h);
  o.roi_x = rnd_in(0, w - o.roi_w);
  o.roi_y = rnd_in(0, h - o.roi_h);
  if (kind >= 6) { /* DCT scaling: a minimum below the region */
    o.min_w = rnd_in(1, o.roi_w);
    o.min_h = rnd_in(1, o.roi_h);
  }
  stk__decoded a, c;
  uint8_t *pa = decode(b, &o, true, &a), *pc = decode(b, &o, false, &c);
  assert_int_equal(a.w, c.w);
  assert_int_equal(a.h, c.h);
  assert_int_equal(a.c, c.c);
  if (memcmp(pa, pc, (size_t)a.w * a.h * a.c) != 0)
    fail_msg("%s: colour %d region x %d y %d w %d h %d min %dx%d: in-place rows differ", what,
             (int)o.color, o.roi_x, o.roi_y, o.roi_w, o.roi_h, o.min_w, o.min_h);
  free(pa);
  free(pc);
}

static void regions_all_orientations(buf_t b, int w, int h, int per, const char *what) {
  for (int orient = 1; orient <= 8; orient++) {
    buf_t e = with_orientation(b, orient);
    bool swap = orient >= 5;
    char label[160];
    snprintf(label, sizeof label, "%s orientation %d", what, orient);
    for (int t = 0; t < per; t++) check_region(e, swap ? h : w, swap ? w : h, label);
    free(e.p);
  }
}

static void test_synthetic_subsamplings(void **state) {
  (void)state;
  static const int subsamps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420,
                                 TJSAMP_440, TJSAMP_411, TJSAMP_GRAY};
  static const int sizes[][2] = {{451, 300}, {97, 131}, {64, 48}, {35, 17}, {1000, 40}};
  for (size_t s = 0; s < sizeof subsamps / sizeof subsamps[0]; s++)
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
      for (int prog = 0; prog < 2; prog++) {
        int w = sizes[z][0], h = sizes[z][1], c = subsamps[s] == TJSAMP_GRAY ? 1 : 3;
        uint8_t *px = synthetic(w, h, c);
        buf_t b = encode(px, w, h, c, subsamps[s], prog ? TJFLAG_PROGRESSIVE : 0);
        char what[96];
        snprintf(what, sizeof what, "subsampling %d %dx%d%s", subsamps[s], w, h,
                 prog ? " progressive" : "");
        regions_all_orientations(b, w, h, 6, what);
        free(px);
        free(b.p);
      }
}

static void test_photos(void **state) {
  (void)state;
  static const char *photos[] = {"data/photos/rocket.jpg", "data/photos/retina.jpg",
                                 "data/photos/hubble_deep_field.jpg"};
  for (size_t i = 0; i < sizeof photos / sizeof photos[0]; i++) {
    char path[1024];
    buf_t b;
    b.p = tu_read(tu_path(path, sizeof path, photos[i]), &b.n);
    stk__image_info info;
    TU_OK(stk__image_peek(b.p, b.n, photos[i], &info));
    for (int t = 0; t < 60; t++)
      check_region(b, info.oriented_width, info.oriented_height, photos[i]);
    free(b.p);
  }
}

/* Regions against TurboJPEG's full decode, cropped (no DCT scaling, orientation 1). */
static void test_regions_match_full_decode(void **state) {
  (void)state;
  int w = 453, h = 301;
  uint8_t *px = synthetic(w, h, 3);
  buf_t b = encode(px, w, h, 3, TJSAMP_420, 0);
  tjhandle tj = tjInitDecompress();
  uint8_t *full = malloc((size_t)w * h * 3);
  if (tjDecompress2(tj, b.p, (unsigned long)b.n, full, w, 0, h, TJPF_RGB, 0))
    fail_msg("tjDecompress2: %s", tjGetErrorStr2(tj));
  tjDestroy(tj);
  for (int t = 0; t < 200; t++) {
    stk__decode_opts o = {.color = STK__COLOR_RGB};
    o.roi_w = rnd_in(1, w), o.roi_h = rnd_in(1, h);
    o.roi_x = rnd_in(0, w - o.roi_w), o.roi_y = rnd_in(0, h - o.roi_h);
    stk__decoded d;
    uint8_t *got = decode(b, &o, false, &d);
    for (int y = 0; y < o.roi_h; y++)
      if (memcmp(got + (size_t)y * o.roi_w * 3, full + ((size_t)(o.roi_y + y) * w + o.roi_x) * 3,
                 (size_t)o.roi_w * 3) != 0)
        fail_msg("region x %d y %d w %d h %d: row %d differs from the full decode", o.roi_x,
                 o.roi_y, o.roi_w, o.roi_h, y);
    free(got);
  }
  free(full);
  free(px);
  free(b.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_synthetic_subsamplings),
      cmocka_unit_test(test_photos),
      cmocka_unit_test(test_regions_match_full_decode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
