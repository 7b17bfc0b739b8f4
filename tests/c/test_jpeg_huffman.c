/* stoker's own GPU JPEG decoder, host half (src/codecs/jpeg_frame.c, src/shared/
 * jpeg_huffman.h): the parser's frames, tables and refusals, and the parallel Huffman
 * decoder run on the host ("threads" in a loop, phases in order, threads in both
 * orders) against libjpeg's jpeg_read_coefficients, block for block over the padded
 * block grid, for photos and files libjpeg encodes in every sampling the decoder takes,
 * with and without restart intervals, optimised and standard tables, odd sizes and
 * subsequence lengths from 32 bits (many synchronisations) to the whole scan (the
 * sequential decoder). Corrupt scans must fail cleanly (run under `make sanitize`). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

#include "codecs/jpeg_frame.h"
#include "shared/jpeg_huffman_batch.h"

static uint32_t rng_state = 0x9e3779b9u;
static uint32_t rnd(void) { return tu_rand(&rng_state); }

typedef struct {
  uint8_t *p;
  size_t n;
} buf_t;

/* ---- encoding with libjpeg (every option the decoder must handle) ---- */

typedef struct {
  int ncomp;        /* 1 or 3 */
  int h, v;         /* luma sampling (chroma 1x1) */
  int restart_mcus; /* DRI in MCUs; 0 none */
  int restart_rows; /* DRI in MCU rows (libjpeg's restart_in_rows); 0 none */
  int optimize;     /* optimised Huffman tables */
  int progressive;  /* for the refusal test */
  int multiscan;    /* sequential, one scan per component: refused */
  int quality;
  int extended; /* quality not forced to baseline: 16-bit tables, SOF1 */
  int cmyk;     /* 4 components */
} enc_opts;

static buf_t encode(const uint8_t *px, int w, int h, const enc_opts *o) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr jerr;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&ci);
  unsigned char *out = NULL;
  unsigned long outn = 0;
  jpeg_mem_dest(&ci, &out, &outn);
  int nc = o->cmyk ? 4 : o->ncomp;
  ci.image_width = (JDIMENSION)w;
  ci.image_height = (JDIMENSION)h;
  ci.input_components = nc;
  ci.in_color_space = nc == 1 ? JCS_GRAYSCALE : nc == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, o->quality ? o->quality : 85, o->extended ? FALSE : TRUE);
  if (nc == 3) {
    ci.comp_info[0].h_samp_factor = o->h;
    ci.comp_info[0].v_samp_factor = o->v;
    ci.comp_info[1].h_samp_factor = ci.comp_info[1].v_samp_factor = 1;
    ci.comp_info[2].h_samp_factor = ci.comp_info[2].v_samp_factor = 1;
  }
  ci.restart_interval = (unsigned)o->restart_mcus;
  ci.restart_in_rows = o->restart_rows;
  ci.optimize_coding = o->optimize ? TRUE : FALSE;
  if (o->progressive) jpeg_simple_progression(&ci);
  static jpeg_scan_info scans[3];
  if (o->multiscan) {
    for (int k = 0; k < nc; k++)
      scans[k] = (jpeg_scan_info){.comps_in_scan = 1, .component_index = {k}, .Ss = 0, .Se = 63};
    ci.scan_info = scans;
    ci.num_scans = nc;
  }
  jpeg_start_compress(&ci, TRUE);
  {
    while (ci.next_scanline < ci.image_height) {
      JSAMPROW row = (JSAMPROW)(px + (size_t)ci.next_scanline * w * nc);
      jpeg_write_scanlines(&ci, &row, 1);
    }
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  buf_t b = {malloc(outn), outn};
  memcpy(b.p, out, outn);
  free(out);
  return b;
}

/* Smooth gradients plus noise (non-trivial AC coefficients, long and short codes). */
static uint8_t *synthetic(int w, int h, int c) {
  return tu_gradient_noise(w, h, c, 40, &rng_state);
}

/* ---- parsing and decoding ---- */

typedef struct {
  stk_jpeg_frame f;
  stk_jpeg_huffman t;
  uint8_t *scan;
  size_t scan_bytes;
  int32_t *restarts;
  int n_restarts;
  char why[256];
} parsed;

static int parse(buf_t b, parsed *p) {
  memset(p, 0, sizeof *p);
  p->scan = malloc(b.n + 1);
  p->restarts = malloc(sizeof(int32_t) * (b.n / 2 + 1));
  return stk__jpeg_frame_parse(b.p, b.n, &p->f, &p->t, p->scan, b.n, &p->scan_bytes, p->restarts,
                               (int)(b.n / 2 + 1), &p->n_restarts, p->why, sizeof p->why);
}

static void parsed_free(parsed *p) {
  free(p->scan);
  free(p->restarts);
}

/* The parallel decoder's phases, each "thread" run in a loop, phases in order: guesses,
 * resolve per segment, write. Threads of a phase are independent (each writes only its
 * own records), so any order gives what the GPU gives; `descending` runs them backwards
 * to show it. Returns 0 or -1 (corrupt stream); *misses: subsequences the resolve pass
 * decoded itself (no guess passed through their true start). */
static int decode_parallel(const parsed *p, uint32_t s, bool descending, int16_t *coef,
                           int *misses) {
  int64_t nsubs = stk_jpeg_plan_count((uint32_t)p->scan_bytes, p->restarts, p->n_restarts, s);
  int nsegs = p->n_restarts + 1;
  stk_jpeg_segment *segs = malloc(sizeof *segs * nsegs);
  stk_jpeg_subseq *subs = malloc(sizeof *subs * nsubs);
  stk_jpeg_plan_fill(&p->f, (uint32_t)p->scan_bytes, p->restarts, p->n_restarts, s, segs, subs);
  stk_jpeg_image_view im = {p->scan, &p->f, &p->t, segs, subs};
  const int64_t np = nsubs * STK_JPEG_GUESSES, nm = np * STK_JPEG_GUESS_MARKS;
  stk_jpeg_guesses gs = {malloc(sizeof *gs.end * np), malloc(sizeof *gs.mark * nm),
                         malloc(sizeof *gs.rest * nm)};
  /* Records nobody writes stay garbage: the phases must never read them. */
  memset(gs.end, 0xA5, sizeof *gs.end * np);
  memset(gs.mark, 0xA5, sizeof *gs.mark * nm);
  memset(gs.rest, 0xA5, sizeof *gs.rest * nm);
  uint64_t *start = malloc(sizeof *start * nsubs);
  int64_t *unit0 = malloc(sizeof *unit0 * nsubs);
  int32_t *dcpred = malloc(sizeof *dcpred * nsubs * STK_JPEG_MAX_COMP);
  for (int64_t i = 0; i < np; i++) {
    int64_t t = descending ? np - 1 - i : i;
    stk_jpeg_guess_step(&im, (int32_t)(t / STK_JPEG_GUESSES), (int)(t % STK_JPEG_GUESSES), &gs);
  }
  int rc = 0;
  int32_t miss = 0;
  for (int k = 0; k < nsegs; k++) {
    int seg = descending ? nsegs - 1 - k : k;
    if (stk_jpeg_resolve_segment(&im, seg, (int32_t)nsubs, &gs, start, unit0, dcpred, &miss) != 0)
      rc = -1;
  }
  *misses = miss;
  if (rc == 0)
    for (int64_t i = 0; i < nsubs; i++) {
      int32_t g = (int32_t)(descending ? nsubs - 1 - i : i);
      stk_jpeg_write_step(&im, g, start, unit0, dcpred, coef);
    }
  free(segs), free(subs), free(gs.end), free(gs.mark), free(gs.rest), free(start), free(unit0),
      free(dcpred);
  return rc;
}

/* ---- libjpeg's coefficients ---- */

typedef struct {
  int ncomp, bw[3], bh[3];
  JBLOCKARRAY rows[3]; /* unused: read per row below */
} lj_info;

/* Compares our coefficients with jpeg_read_coefficients' over each component's padded
 * grid (libjpeg's arrays are rounded up to whole MCUs, as ours are); fails with the first
 * differing block. */
static void compare_libjpeg(buf_t b, const parsed *p, const int16_t *coef, const char *what) {
  struct jpeg_decompress_struct di;
  struct jpeg_error_mgr jerr;
  di.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&di);
  jpeg_mem_src(&di, b.p, (unsigned long)b.n);
  jpeg_read_header(&di, TRUE);
  jvirt_barray_ptr *arr = jpeg_read_coefficients(&di);
  assert_int_equal(di.num_components, p->f.ncomp);
  for (int c = 0; c < p->f.ncomp; c++) {
    jpeg_component_info *ci = &di.comp_info[c];
    const stk_jpeg_component *cp = &p->f.comp[c];
    /* Our grid is libjpeg's, rounded up to whole MCUs (interleaved) or not (gray). */
    int h = p->f.ncomp == 1 ? 1 : ci->h_samp_factor, v = p->f.ncomp == 1 ? 1 : ci->v_samp_factor;
    int lbw = (int)(ci->width_in_blocks + h - 1) / h * h;
    int lbh = (int)(ci->height_in_blocks + v - 1) / v * v;
    if (cp->bw != lbw || cp->bh != lbh)
      fail_msg("%s: component %d grid %dx%d, libjpeg %dx%d", what, c, cp->bw, cp->bh, lbw, lbh);
    for (int k = 0; k < 64; k++)
      if (p->f.quant[cp->quant][k] != ci->quant_table->quantval[k])
        fail_msg("%s: component %d quantisation value %d: %d, libjpeg %d", what, c, k,
                 p->f.quant[cp->quant][k], ci->quant_table->quantval[k]);
    for (int by = 0; by < cp->bh; by++) {
      JBLOCKARRAY row =
          (*di.mem->access_virt_barray)((j_common_ptr)&di, arr[c], (JDIMENSION)by, 1, FALSE);
      for (int bx = 0; bx < cp->bw; bx++) {
        const int16_t *ours = coef + (cp->block0 + (int64_t)by * cp->bw + bx) * 64;
        for (int k = 0; k < 64; k++)
          if (ours[k] != row[0][bx][k])
            fail_msg("%s: component %d block (%d,%d) coef %d: %d, libjpeg %d", what, c, bx, by, k,
                     ours[k], row[0][bx][k]);
      }
    }
  }
  jpeg_finish_decompress(&di);
  jpeg_destroy_decompress(&di);
}

/* Parses b, decodes it with each subsequence length in both thread orders and compares
 * with libjpeg. Returns the misses (see decode_parallel) at the default length, and its
 * subsequences in *subs_out (when not NULL). */
static int check_file_subs(buf_t b, const char *what, int64_t *subs_out) {
  static const uint32_t lengths[] = {32, 77, 1024, 2048, STK_JPEG_SUBSEQ_DEFAULT, 1u << 30};
  parsed p;
  if (parse(b, &p) != 0) fail_msg("%s: refused: %s", what, p.why);
  int most = 0;
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++)
    for (int d = 0; d < 2; d++) {
      int16_t *coef = malloc(sizeof(int16_t) * 64 * (size_t)p.f.total_blocks);
      memset(coef, 0x55, sizeof(int16_t) * 64 * (size_t)p.f.total_blocks);
      int misses;
      char label[256];
      snprintf(label, sizeof label, "%s S=%u %s", what, lengths[i], d ? "desc" : "asc");
      if (decode_parallel(&p, lengths[i], d, coef, &misses) != 0)
        fail_msg("%s: decode failed", label);
      compare_libjpeg(b, &p, coef, label);
      if (lengths[i] == STK_JPEG_SUBSEQ_DEFAULT) most = misses;
      free(coef);
    }
  /* The library's host run of the same phases (the fallback and the fuzz target's). */
  int16_t *coef = malloc(sizeof(int16_t) * 64 * (size_t)p.f.total_blocks);
  if (stk__jpeg_decode_coefficients(&p.f, &p.t, p.scan, p.scan_bytes, p.restarts, p.n_restarts,
                                    STK_JPEG_SUBSEQ_DEFAULT, coef, NULL) != 0)
    fail_msg("%s: stk__jpeg_decode_coefficients failed", what);
  compare_libjpeg(b, &p, coef, what);
  free(coef);
  if (subs_out)
    *subs_out = stk_jpeg_plan_count((uint32_t)p.scan_bytes, p.restarts, p.n_restarts,
                                    STK_JPEG_SUBSEQ_DEFAULT);
  parsed_free(&p);
  return most;
}

static int check_file(buf_t b, const char *what) { return check_file_subs(b, what, NULL); }

/* ---- tests ---- */

static const char *const photo_files[] = {"data/photos/rocket.jpg", "data/photos/retina.jpg",
                                          "data/photos/hubble_deep_field.jpg"};

static void test_photos(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof photo_files / sizeof *photo_files; i++) {
    char path[1024];
    buf_t b;
    b.p = tu_read(tu_path(path, sizeof path, photo_files[i]), &b.n);
    int64_t subs;
    int misses = check_file_subs(b, photo_files[i], &subs);
    print_message("%s: %zu bytes, S = %d: %d subsequences of %lld resolved sequentially\n",
                  photo_files[i], b.n, STK_JPEG_SUBSEQ_DEFAULT, misses, (long long)subs);
    /* The guesses synchronise within their lead almost always: the resolve pass (serial
     * on a GPU) must stay cheap. */
    assert_true((int64_t)misses * 50 < subs);
    free(b.p);
  }
}

/* Every sampling the decoder takes, restart intervals (in MCUs and rows), optimised and
 * standard tables, on photos re-encoded and on synthetic images of odd sizes. */
static void test_encoded_variants(void **state) {
  (void)state;
  static const int samp[][3] = {{3, 1, 1}, {3, 2, 1}, {3, 2, 2}, {3, 1, 2}, {1, 1, 1}};
  static const int sizes[][2] = {{1, 1}, {7, 9}, {17, 33}, {4000, 3}, {3, 300}, {161, 97}};
  tu_image ph = tu_load_photo("data/photos/chelsea.png");
  int64_t photo_misses = 0, photo_subs = 0;
  for (size_t s = 0; s < sizeof samp / sizeof *samp; s++)
    for (int variant = 0; variant < 4; variant++) {
      enc_opts o = {.ncomp = samp[s][0], .h = samp[s][1], .v = samp[s][2], .quality = 90};
      o.optimize = variant & 1;
      if (variant == 2) o.restart_mcus = 7;
      if (variant == 3) o.restart_rows = 1;
      char what[128];
      const uint8_t *px = ph.p;
      uint8_t *gray = NULL;
      if (o.ncomp == 1) {
        gray = malloc((size_t)ph.w * ph.h);
        for (size_t k = 0; k < (size_t)ph.w * ph.h; k++) gray[k] = ph.p[3 * k + 1];
        px = gray;
      }
      buf_t b = encode(px, ph.w, ph.h, &o);
      snprintf(what, sizeof what, "chelsea %dc %dx%d opt %d dri %d/%d", o.ncomp, o.h, o.v,
               o.optimize, o.restart_mcus, o.restart_rows);
      int64_t subs;
      photo_misses += check_file_subs(b, what, &subs);
      photo_subs += subs;
      free(b.p);
      free(gray);
      for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        int w = sizes[z][0], h = sizes[z][1];
        uint8_t *syn = synthetic(w, h, o.ncomp);
        b = encode(syn, w, h, &o);
        snprintf(what, sizeof what, "synthetic %dx%d %dc %dx%d opt %d dri %d/%d", w, h, o.ncomp,
                 o.h, o.v, o.optimize, o.restart_mcus, o.restart_rows);
        check_file(b, what);
        free(b.p);
        free(syn);
      }
    }
  print_message(
      "chelsea re-encoded (20 variants), S = %d: %lld of %lld subsequences resolved "
      "sequentially\n",
      STK_JPEG_SUBSEQ_DEFAULT, (long long)photo_misses, (long long)photo_subs);
  assert_true(photo_misses * 50 < photo_subs);
  free(ph.p);
}

/* Quality 3 without the baseline limit: quantisation values above 255 (16-bit DQT) in
 * an extended sequential frame (SOF1); tables and coefficients as libjpeg reads them. */
static void test_extended_16bit_tables(void **state) {
  (void)state;
  uint8_t *px = synthetic(64, 40, 3);
  enc_opts o = {.ncomp = 3, .h = 2, .v = 2, .quality = 3, .extended = 1};
  buf_t b = encode(px, 64, 40, &o);
  bool sof1 = false, dqt16 = false;
  for (size_t i = 2; i + 4 < b.n; i++) {
    if (b.p[i] != 0xFF) continue;
    sof1 |= b.p[i + 1] == 0xC1;
    dqt16 |= b.p[i + 1] == 0xDB && (b.p[i + 4] >> 4) == 1;
  }
  assert_true(sof1 && dqt16);
  parsed p;
  if (parse(b, &p) != 0) fail_msg("refused: %s", p.why);
  int big = 0;
  for (int k = 0; k < 64; k++) big |= p.f.quant[0][k] > 255;
  assert_true(big);
  parsed_free(&p);
  check_file(b, "quality 3, 16-bit tables");
  free(b.p);
  free(px);
}

/* The frame against libjpeg's header: sizes, sampling, MCU grid, quantisation tables. */
static void test_frame_fields(void **state) {
  (void)state;
  uint8_t *px = synthetic(45, 29, 3);
  enc_opts o = {.ncomp = 3, .h = 2, .v = 2, .quality = 75, .restart_mcus = 2};
  buf_t b = encode(px, 45, 29, &o);
  parsed p;
  if (parse(b, &p) != 0) fail_msg("refused: %s", p.why);
  assert_int_equal(p.f.width, 45);
  assert_int_equal(p.f.height, 29);
  assert_int_equal(p.f.ncomp, 3);
  assert_int_equal(p.f.hmax, 2);
  assert_int_equal(p.f.vmax, 2);
  assert_int_equal(p.f.mcus_x, 3); /* ceil(45 / 16) */
  assert_int_equal(p.f.mcus_y, 2); /* ceil(29 / 16) */
  assert_int_equal(p.f.blocks_per_mcu, 6);
  assert_int_equal(p.f.restart_interval, 2);
  assert_int_equal(p.n_restarts, 2); /* 6 MCUs in intervals of 2 */
  assert_int_equal(p.f.comp[0].bw, 6);
  assert_int_equal(p.f.comp[0].bh, 4);
  assert_int_equal(p.f.comp[1].bw, 3);
  assert_int_equal(p.f.comp[2].block0, 24 + 6);
  assert_int_equal(p.f.total_blocks, 36);
  struct jpeg_decompress_struct di;
  struct jpeg_error_mgr jerr;
  di.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&di);
  jpeg_mem_src(&di, b.p, (unsigned long)b.n);
  jpeg_read_header(&di, TRUE);
  for (int c = 0; c < 3; c++) {
    JQUANT_TBL *q = di.quant_tbl_ptrs[di.comp_info[c].quant_tbl_no];
    assert_int_equal(p.f.comp[c].quant, di.comp_info[c].quant_tbl_no);
    for (int k = 0; k < 64; k++) assert_int_equal(p.f.quant[p.f.comp[c].quant][k], q->quantval[k]);
  }
  jpeg_destroy_decompress(&di);
  parsed_free(&p);
  free(b.p);
  free(px);
}

static void expect_refusal(buf_t b, const char *needle, const char *what) {
  parsed p;
  int rc = parse(b, &p);
  if (rc == 0) fail_msg("%s: taken, should be refused", what);
  if (!strstr(p.why, needle))
    fail_msg("%s: reason \"%s\" does not name \"%s\"", what, p.why, needle);
  parsed_free(&p);
}

static void test_refusals(void **state) {
  (void)state;
  uint8_t *px = synthetic(40, 24, 4);
  enc_opts o = {.ncomp = 3, .h = 2, .v = 2, .progressive = 1};
  buf_t b = encode(px, 40, 24, &o);
  expect_refusal(b, "progressive", "progressive");
  free(b.p);
  o = (enc_opts){.cmyk = 1, .h = 1, .v = 1};
  b = encode(px, 40, 24, &o);
  expect_refusal(b, "4 components", "CMYK");
  free(b.p);
  o = (enc_opts){.ncomp = 3, .h = 2, .v = 2, .multiscan = 1};
  b = encode(px, 40, 24, &o);
  expect_refusal(b, "one scan of all only", "sequential, one scan per component");
  free(b.p);
  /* 12-bit: this libjpeg writes 8-bit only, so the frame header's precision is patched
   * (the parser must refuse on the header alone). */
  o = (enc_opts){.ncomp = 3, .h = 2, .v = 2};
  b = encode(px, 40, 24, &o);
  for (size_t i = 2; i + 4 < b.n; i++)
    if (b.p[i] == 0xFF && b.p[i + 1] == 0xC0) {
      b.p[i + 4] = 12;
      break;
    }
  expect_refusal(b, "12-bit", "12-bit");
  free(b.p);
  /* A good file, then cut: at each length it must be refused, never read past the end
   * (ASan build) and never taken. */
  o = (enc_opts){.ncomp = 3, .h = 2, .v = 1, .restart_mcus = 1};
  b = encode(px, 40, 24, &o);
  for (size_t n = 0; n < b.n - 1; n++) {
    buf_t cut = {malloc(n ? n : 1), n};
    memcpy(cut.p, b.p, n);
    parsed p;
    if (parse(cut, &p) == 0) fail_msg("truncated to %zu of %zu bytes: taken", n, b.n);
    parsed_free(&p);
    free(cut.p);
  }
  {
    buf_t cut = {b.p, b.n - 2};
    expect_refusal(cut, "truncated", "no EOI");
  }
  /* Adobe APP14, transform 0, inserted after SOI: RGB-coded. */
  static const uint8_t adobe[] = {0xFF, 0xEE, 0,   14, 'A', 'd', 'o', 'b',
                                  'e',  0,    100, 0,  0,   0,   0,   0};
  buf_t a = {malloc(b.n + sizeof adobe), b.n + sizeof adobe};
  memcpy(a.p, b.p, 2);
  memcpy(a.p + 2, adobe, sizeof adobe);
  memcpy(a.p + 2 + sizeof adobe, b.p + 2, b.n - 2);
  expect_refusal(a, "Adobe", "Adobe transform 0");
  a.p[2 + 15] = 1; /* transform 1: YCbCr, taken */
  parsed p;
  if (parse(a, &p) != 0) fail_msg("Adobe transform 1 refused: %s", p.why);
  parsed_free(&p);
  free(a.p);
  /* Odd sampling: chroma 2x1. */
  buf_t odd = {malloc(b.n), b.n};
  memcpy(odd.p, b.p, b.n);
  for (size_t i = 2; i + 1 < odd.n; i++)
    if (odd.p[i] == 0xFF && odd.p[i + 1] == 0xC0) {
      odd.p[i + 4 + 6 + 3 + 1] = 0x21; /* component 1's HV */
      break;
    }
  expect_refusal(odd, "chroma 1x1", "chroma 2x1");
  free(odd.p);
  free(b.p);
  /* An over-full Huffman table (the standard luma DC counts 0 1 5 ... made 1 1 4 ...). */
  o = (enc_opts){.ncomp = 3, .h = 1, .v = 1};
  b = encode(px, 40, 24, &o);
  for (size_t i = 2; i + 8 < b.n; i++)
    if (b.p[i] == 0xFF && b.p[i + 1] == 0xC4) {
      assert_int_equal(b.p[i + 4], 0x00); /* DC table 0 */
      assert_int_equal(b.p[i + 5], 0);
      assert_int_equal(b.p[i + 7], 5);
      b.p[i + 5] = 1, b.p[i + 7] = 4;
      break;
    }
  expect_refusal(b, "invalid code lengths", "over-full Huffman table");
  free(b.p);
  static const uint8_t garbage[] = {0x12, 0x34, 0x56, 0x78, 0x9a};
  expect_refusal((buf_t){(uint8_t *)garbage, sizeof garbage}, "SOI", "garbage");
  expect_refusal((buf_t){(uint8_t *)garbage, 0}, "SOI", "empty");
  free(px);
}

/* Byte flips in the scan: decoding must stay in bounds (ASan) and either fail or give some
 * coefficients; most flips must be reported. */
static void test_corrupt_scans(void **state) {
  (void)state;
  uint8_t *px = synthetic(120, 80, 3);
  enc_opts o = {.ncomp = 3, .h = 2, .v = 2, .quality = 90};
  buf_t good = encode(px, 120, 80, &o);
  int failed = 0, runs = 0;
  for (int t = 0; t < 200; t++) {
    buf_t b = {malloc(good.n), good.n};
    memcpy(b.p, good.p, good.n);
    parsed p0;
    assert_int_equal(parse(good, &p0), 0);
    size_t scan_at = good.n - 2 - p0.scan_bytes; /* roughly: no stuffing in the tail */
    parsed_free(&p0);
    for (int k = 0; k < 1 + t % 4; k++) {
      size_t at = scan_at + rnd() % (good.n - 2 - scan_at);
      uint8_t v = (uint8_t)rnd();
      b.p[at] = v == 0xFF ? 0x7F : v; /* no new markers: the scan still parses */
    }
    parsed p;
    if (parse(b, &p) == 0) {
      static const uint32_t lengths[] = {32, 300, 1u << 30};
      for (int i = 0; i < 3; i++) {
        int16_t *coef = malloc(sizeof(int16_t) * 64 * (size_t)p.f.total_blocks);
        int misses;
        failed += decode_parallel(&p, lengths[i], t & 1, coef, &misses) != 0;
        runs++;
        free(coef);
      }
    }
    parsed_free(&p);
    free(b.p);
  }
  print_message("corrupt scans: %d of %d decodes reported failure\n", failed, runs);
  assert_true(failed > 0);
  free(good.p);
  free(px);
}

/* A subsequence decode started anywhere (any bit, any unit of the MCU) stays finite and
 * in bounds: what the sync's guesses do. */
static void test_any_start_is_safe(void **state) {
  (void)state;
  char path[1024];
  buf_t b;
  b.p = tu_read(tu_path(path, sizeof path, "data/photos/rocket.jpg"), &b.n);
  parsed p;
  assert_int_equal(parse(b, &p), 0);
  stk_jpeg_segment seg;
  stk_jpeg_subseq sub;
  stk_jpeg_plan_fill(&p.f, (uint32_t)p.scan_bytes, p.restarts, 0, 1u << 30, &seg, &sub);
  stk_jpeg_image_view im = {p.scan, &p.f, &p.t, &seg, &sub};
  for (int t = 0; t < 300; t++) {
    uint32_t pos = rnd() % (uint32_t)(p.scan_bytes * 8);
    sub.first = pos;
    sub.limit = pos + 1 + rnd() % 4096;
    if (sub.limit > seg.end * 8) sub.limit = seg.end * 8;
    stk_jpeg_subresult r =
        stk_jpeg_decode_subseq(&im, 0, STK_JPEG_STATE(pos, rnd() % 4), NULL, 0, NULL);
    assert_true(stk_jpeg_state_pos(r.end) <= seg.end * 8 + 64);
  }
  parsed_free(&p);
  free(b.p);
}

/* The host's share per image: parse + un-stuff a ~60-110 KB photo. Prints the time. */
static void test_parse_speed(void **state) {
  (void)state;
  tu_image ph = tu_load_photo("data/photos/chelsea.png");
  enc_opts o = {.ncomp = 3, .h = 2, .v = 2, .quality = 95};
  buf_t b = encode(ph.p, ph.w, ph.h, &o);
  parsed p;
  assert_int_equal(parse(b, &p), 0);
  struct timespec t0, t1;
  const int reps = 2000;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < reps; i++)
    stk__jpeg_frame_parse(b.p, b.n, &p.f, &p.t, p.scan, b.n, &p.scan_bytes, p.restarts,
                          (int)(b.n / 2 + 1), &p.n_restarts, p.why, sizeof p.why);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / reps;
  print_message("parse + un-stuff: %zu bytes (%dx%d 4:2:0 q95) in %.1f us\n", b.n, ph.w, ph.h, us);
  parsed_free(&p);
  free(b.p);
  free(ph.p);
}

/* The batched form (src/shared/jpeg_huffman_batch.h, what src/cuda/jpeg_huffman.cu
 * launches): a batch packed as the GPU entry packs it, every launch's thread blocks and
 * threads run in loops, launch after launch (the kernels add only the shared-memory copy
 * of frame and tables). Photos, restart intervals, gray and colour mixed, and one image
 * whose scan holds 16 bytes of 1-bits (no code is all ones): that one alone is flagged. */
static void test_batch_launches(void **state) {
  (void)state;
  enum { N = 7, BAD = 4 };
  buf_t files[N];
  char path[1024];
  files[0].p = tu_read(tu_path(path, sizeof path, "data/photos/rocket.jpg"), &files[0].n);
  files[1].p = tu_read(tu_path(path, sizeof path, "data/photos/retina.jpg"), &files[1].n);
  uint8_t *px = synthetic(203, 77, 3), *gray = synthetic(203, 77, 1);
  enc_opts o = {.ncomp = 3, .h = 2, .v = 2, .quality = 90, .restart_mcus = 3};
  files[2] = encode(px, 203, 77, &o);
  o = (enc_opts){.ncomp = 1, .h = 1, .v = 1, .quality = 70, .restart_rows = 2, .optimize = 1};
  files[3] = encode(gray, 203, 77, &o);
  o = (enc_opts){.ncomp = 3, .h = 2, .v = 1, .quality = 95};
  files[BAD] = encode(px, 203, 77, &o);
  o = (enc_opts){.ncomp = 3, .h = 1, .v = 2, .quality = 85, .restart_mcus = 1};
  files[5] = encode(px, 203, 77, &o);
  o = (enc_opts){.ncomp = 3, .h = 1, .v = 1, .quality = 60};
  files[6] = encode(px, 1, 1, &o);
  parsed p[N];
  stk_jpeg_frame frames[N];
  stk_jpeg_huffman *tables = malloc(sizeof *tables * N);
  const uint8_t *scan[N];
  size_t bytes[N];
  const int32_t *rs[N];
  int nrs[N];
  int16_t *coef[N];
  for (int i = 0; i < N; i++) {
    if (parse(files[i], &p[i]) != 0) fail_msg("file %d refused: %s", i, p[i].why);
    if (i == BAD) memset(p[i].scan + p[i].scan_bytes / 2, 0xFF, 16);
    frames[i] = p[i].f, tables[i] = p[i].t, scan[i] = p[i].scan, bytes[i] = p[i].scan_bytes;
    rs[i] = p[i].restarts, nrs[i] = p[i].n_restarts;
    coef[i] = malloc(sizeof(int16_t) * 64 * (size_t)p[i].f.total_blocks);
    memset(coef[i], 0x5A, sizeof(int16_t) * 64 * (size_t)p[i].f.total_blocks);
  }
  stk_jpeg_batch_layout L;
  assert_int_equal(stk_jpeg_batch_plan(N, frames, bytes, rs, nrs, 256, &L), 0);
  char *block = malloc(L.bytes);
  stk_jpeg_batch_fill(&L, block, N, frames, tables, scan, bytes, rs, nrs, coef, 256);
  stk_jpeg_batch_tmp t;
  void *tmp = malloc(stk_jpeg_batch_tmp_carve(L.total_subs, N, 0, &t));
  stk_jpeg_batch_tmp_carve(L.total_subs, N, (uintptr_t)tmp, &t);
  memset(t.failed, 0, sizeof(int32_t) * N);
  const stk_jpeg_frame *bf = (const stk_jpeg_frame *)(block + L.frames_at);
  const stk_jpeg_huffman *bt = (const stk_jpeg_huffman *)(block + L.tables_at);
  int reported[N] = {0};
  for (int launch = 0; launch < 3; launch++) {
    int kind = launch == 0   ? STK_JPEG_BY_PHASE
               : launch == 1 ? STK_JPEG_BY_SEGMENT
                             : STK_JPEG_BY_SUBSEQ;
    for (int64_t b = 0; b < L.blocks[kind]; b++) {
      int i = stk_jpeg_batch_image_of(block, &L, N, kind, b);
      stk_jpeg_image_view v = stk_jpeg_batch_view(block, &L, i, &bf[i], &bt[i]);
      for (int th = 0; th < STK_JPEG_BATCH_THREADS; th++) {
        int64_t k = stk_jpeg_batch_thread(block, &L, N, kind, i, b, th);
        if (launch == 0) stk_jpeg_batch_guess(block, &L, i, k, &v, &t);
        if (launch == 1) reported[i] |= stk_jpeg_batch_resolve(block, &L, i, k, &v, &t);
        if (launch == 2) stk_jpeg_batch_write(block, &L, i, k, &v, &t);
      }
    }
  }
  for (int i = 0; i < N; i++) {
    char what[64];
    snprintf(what, sizeof what, "batch image %d", i);
    assert_int_equal(t.failed[i], i == BAD);
    assert_int_equal(reported[i], i == BAD);
    if (i != BAD) compare_libjpeg(files[i], &p[i], coef[i], what);
    for (int64_t j = 0; i == BAD && j < 64 * p[i].f.total_blocks; j++)
      if (coef[i][j] != 0x5A5A) fail_msg("the failed image's output was written");
    parsed_free(&p[i]);
    free(coef[i]);
    free(files[i].p);
  }
  free(tmp), free(block), free(tables), free(px), free(gray);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_frame_fields),
      cmocka_unit_test(test_extended_16bit_tables),
      cmocka_unit_test(test_photos),
      cmocka_unit_test(test_encoded_variants),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_corrupt_scans),
      cmocka_unit_test(test_any_start_is_safe),
      cmocka_unit_test(test_parse_speed),
      cmocka_unit_test(test_batch_launches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
