/* The GPU PNG decoder's device routines (src/shared/inflate.h, png_common.h), run on the
 * CPU through stk__png_decode_emulated, against independent references: zlib for the
 * inflater, libspng (the CPU decoder, stk__image_decode) for whole PNG decodes. The PNGs
 * are written here (own filters, Adam7 packing, zlib at every level / window / strategy,
 * IDAT split at random) for every colour type and bit depth; the fuzz corpus' PNGs and
 * mutations of them check that the device path never accepts a file the CPU decoder
 * rejects, nor decodes one differently. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codecs/codecs.h"
#include "ops/png_plan.h"
#include "shared/inflate.h"
#include "testutil.h"

/* ---- a small deterministic generator (xorshift64*) ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }

/* ---- a PNG writer ---- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}
static void put32(buf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  put(b, x, 4);
}
static void chunk(buf *b, const char *type, const void *data, uint32_t len) {
  put32(b, len);
  size_t at = b->n;
  put(b, type, 4);
  if (len) put(b, data, len);
  put32(b, (uint32_t)crc32(0, b->p + at, len + 4));
}

typedef struct {
  int w, h, type, depth, interlace;
  int level, window_bits, strategy; /* deflate settings */
  int filter;                       /* 0..4 for all rows, 5: random per row */
  int npal;                         /* palette entries (type 3) */
  bool trns, extras;                /* a tRNS chunk; gAMA + sRGB + pHYs */
  int iccp;                         /* 0: none; 1: a valid iCCP; 2..: a damaged one */
  int text;                         /* 0: none; 1 + write_text's variant */
} png_spec;

static int forward_paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Filters one row of `n` bytes with type t (prev: the unfiltered row above or NULL). */
static void filter_row(int t, const uint8_t *row, const uint8_t *prev, int n, int bpp,
                       uint8_t *out) {
  for (int i = 0; i < n; i++) {
    int a = i >= bpp ? row[i - bpp] : 0, b = prev ? prev[i] : 0;
    int c = prev && i >= bpp ? prev[i - bpp] : 0;
    int pred = t == 1 ? a : t == 2 ? b : t == 3 ? (a + b) / 2 : t == 4 ? forward_paeth(a, b, c) : 0;
    out[i] = (uint8_t)(row[i] - pred);
  }
}

static int samples_of(int type) { return type == 2 ? 3 : type == 4 ? 2 : type == 6 ? 4 : 1; }

/* Packs pixel values (samples_of(type) values < 2^depth per pixel) of one pass row. */
static void pack_row(const png_spec *s, const uint16_t *img, int y, int x0, int dx, int pw,
                     uint8_t *row) {
  int ns = samples_of(s->type);
  int bytes = (pw * ns * s->depth + 7) / 8;
  memset(row, 0, (size_t)bytes);
  for (int i = 0; i < pw; i++)
    for (int k = 0; k < ns; k++) {
      unsigned v = img[((size_t)y * s->w + (size_t)(x0 + i * dx)) * ns + k];
      int idx = i * ns + k;
      if (s->depth == 16) {
        row[2 * idx] = (uint8_t)(v >> 8);
        row[2 * idx + 1] = (uint8_t)v;
      } else if (s->depth == 8) {
        row[idx] = (uint8_t)v;
      } else {
        int bit = idx * s->depth;
        row[bit / 8] |= (uint8_t)(v << (8 - s->depth - bit % 8));
      }
    }
}

/* The filtered scanlines of the whole image (all passes). */
static void scanlines(const png_spec *s, const uint16_t *img, buf *raw) {
  int ns = samples_of(s->type), bits = ns * s->depth, bpp = bits < 8 ? 1 : bits / 8;
  int np = s->interlace ? 7 : 1;
  size_t cap = (size_t)s->w * 8 + 16;
  uint8_t *row = malloc(cap), *prev = malloc(cap), *out = malloc(cap + 1);
  for (int p = 0; p < np; p++) {
    int x0 = 0, y0 = 0, dx = 1, dy = 1;
    if (s->interlace) stk_png_adam7(p, &x0, &y0, &dx, &dy);
    int pw = s->w > x0 ? (s->w - x0 + dx - 1) / dx : 0;
    if (pw == 0) continue;
    int bytes = (pw * bits + 7) / 8;
    bool first = true;
    for (int y = y0; y < s->h; y += dy) {
      pack_row(s, img, y, x0, dx, pw, row);
      int t = s->filter == 5 ? rnd_in(0, 4) : s->filter;
      out[0] = (uint8_t)t;
      filter_row(t, row, first ? NULL : prev, bytes, bpp, out + 1);
      put(raw, out, (size_t)bytes + 1);
      memcpy(prev, row, (size_t)bytes);
      first = false;
    }
  }
  free(row);
  free(prev);
  free(out);
}

static void deflate_all(const png_spec *s, const buf *raw, buf *z) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, s->level, Z_DEFLATED, s->window_bits, 8, s->strategy), Z_OK);
  size_t cap = deflateBound(&zs, raw->n) + 64;
  z->p = malloc(cap);
  zs.next_in = raw->p;
  zs.avail_in = (uInt)raw->n;
  zs.next_out = z->p;
  zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  z->n = zs.total_out;
  deflateEnd(&zs);
}

/* Random pixels: runs of repeated values and noise, so that every code path of the
 * compressor (literals, matches, stored blocks) is exercised. */
static uint16_t *random_pixels(const png_spec *s) {
  int ns = samples_of(s->type);
  size_t n = (size_t)s->w * s->h * ns;
  uint16_t *img = malloc(n * sizeof *img + 2);
  unsigned top = s->type == 3 ? (unsigned)s->npal : 1u << s->depth;
  for (size_t i = 0; i < n;) {
    int run = rnd_in(1, 40);
    unsigned v = rnd() % top;
    bool noise = rnd() % 3 == 0;
    for (int k = 0; k < run && i < n; k++, i++) img[i] = (uint16_t)(noise ? rnd() % top : v);
  }
  return img;
}

static void write_text(buf *f, int variant);

/* An iCCP chunk: variant 1 valid, the others each break one rule. */
static void write_iccp(buf *f, int variant) {
  uint8_t profile[600], body[1400];
  for (size_t i = 0; i < sizeof profile; i++) profile[i] = (uint8_t)(i % 13 * (i % 5));
  const char *kw = variant == 2   ? " ICC"
                   : variant == 3 ? "ICC  profile"
                   : variant == 4 ? "ICC\x7f"
                                  : "ICC profile";
  size_t k = strlen(kw);
  memcpy(body, kw, k + 1);
  body[k + 1] = variant == 5 ? 1 : 0; /* compression method */
  uLongf zn = sizeof body - k - 2;
  compress2(body + k + 2, &zn, profile, sizeof profile, 6);
  size_t len = k + 2 + zn;
  if (variant == 6) body[k + 2 + zn / 2] ^= 0x20; /* damaged stream */
  if (variant == 7) len -= 3;                     /* truncated stream */
  if (variant == 8) body[len++] = 0;              /* a byte after the stream */
  chunk(f, "iCCP", body, (uint32_t)len);
}

static uint8_t *write_png(const png_spec *s, size_t *size) {
  uint16_t *img = random_pixels(s);
  buf raw = {0}, z = {0}, f = {0};
  scanlines(s, img, &raw);
  deflate_all(s, &raw, &z);
  put(&f, "\x89PNG\r\n\x1a\n", 8);
  uint8_t ihdr[13] = {0};
  for (int i = 0; i < 4; i++) ihdr[i] = (uint8_t)(s->w >> (24 - 8 * i));
  for (int i = 0; i < 4; i++) ihdr[4 + i] = (uint8_t)(s->h >> (24 - 8 * i));
  ihdr[8] = (uint8_t)s->depth, ihdr[9] = (uint8_t)s->type, ihdr[12] = (uint8_t)s->interlace;
  chunk(&f, "IHDR", ihdr, 13);
  if (s->extras) {
    uint8_t gama[4] = {0, 0, 0xb1, 0x8f}, srgb[1] = {0},
            phys[9] = {0, 0, 0x0b, 0x13, 0, 0, 0x0b, 0x13, 1};
    chunk(&f, "gAMA", gama, 4);
    chunk(&f, "sRGB", srgb, 1);
    chunk(&f, "pHYs", phys, 9);
  }
  if (s->iccp) write_iccp(&f, s->iccp);
  if (s->text) write_text(&f, s->text - 1);
  if (s->type == 3) {
    uint8_t pal[768];
    for (int i = 0; i < 3 * s->npal; i++) pal[i] = (uint8_t)rnd();
    chunk(&f, "PLTE", pal, (uint32_t)(3 * s->npal));
  }
  if (s->trns && s->type != 4 && s->type != 6) {
    uint8_t t[6] = {0};
    uint32_t len = s->type == 0 ? 2 : s->type == 2 ? 6 : (uint32_t)rnd_in(1, s->npal);
    for (uint32_t i = 0; i < len; i++) t[i % 6] = (uint8_t)(s->type == 3 ? rnd() : 0);
    uint8_t big[256] = {0};
    chunk(&f, "tRNS", s->type == 3 ? big : t, len);
  }
  for (size_t at = 0; at < z.n;) { /* IDAT split at random */
    size_t part = rnd() % 4 == 0 ? z.n - at : (size_t)rnd_in(1, (int)(z.n - at));
    chunk(&f, "IDAT", z.p + at, (uint32_t)part);
    at += part;
  }
  chunk(&f, "IEND", NULL, 0);
  free(img);
  free(raw.p);
  free(z.p);
  *size = f.n;
  return f.p;
}

static png_spec random_spec(void) {
  static const int types[5] = {0, 2, 3, 4, 6};
  static const int strategies[5] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
  png_spec s = {0};
  s.type = types[rnd_in(0, 4)];
  static const int low[5] = {1, 2, 4, 8, 16};
  s.depth = s.type == 0   ? low[rnd_in(0, 4)]
            : s.type == 3 ? low[rnd_in(0, 3)]
                          : (rnd() % 2 ? 8 : 16);
  s.w = rnd_in(1, 70);
  s.h = rnd_in(1, 70);
  s.interlace = rnd() % 2;
  s.level = rnd_in(0, 9);
  s.window_bits = rnd_in(9, 15);
  s.strategy = strategies[rnd_in(0, 4)];
  s.filter = rnd_in(0, 5);
  s.npal = rnd_in(1, 1 << s.depth > 256 ? 256 : 1 << s.depth);
  s.trns = rnd() % 4 == 0;
  s.extras = rnd() % 4 == 0;
  s.iccp = !s.extras && rnd() % 4 == 0; /* not beside sRGB */
  return s;
}

/* The kernel's two ways of unfiltering a row (byte by byte in parallel, for None / Up;
 * by byte lanes, for the others) both invert the test's own forward filters. */
static void test_unfilter_inverts_filters(void **state) {
  (void)state;
  uint8_t prev[300], row[300], filtered[300], a[300], b[300];
  for (int it = 0; it < 3000; it++) {
    int n = 1 + (int)(rnd() % 300u), bpp = rnd_in(1, 8), t = rnd_in(0, 4), first = rnd() % 4 == 0;
    for (int i = 0; i < n; i++) prev[i] = (uint8_t)rnd(), row[i] = (uint8_t)(rnd() % 7 * 40);
    filter_row(t, row, first ? NULL : prev, n, bpp, filtered);
    memcpy(a, filtered, sizeof a); /* whole arrays: n <= 300 */
    memcpy(b, filtered, sizeof b);
    for (int i = 0; i < n; i++) stk_png_unfilter_byte(t, a, first ? NULL : prev, i, bpp);
    stk_png_unfilter_row(t, b, first ? NULL : prev, n, bpp);
    assert_memory_equal(a, row, (size_t)n);
    assert_memory_equal(b, row, (size_t)n);
  }
}

/* ---- comparing with the CPU decoder ---- */

/* Decodes with libspng (stk__image_decode); NULL when it fails. */
static uint8_t *cpu_decode(const uint8_t *d, size_t n, int color, int x, int y, int w, int h) {
  stk__decode_opts o;
  memset(&o, 0, sizeof o);
  o.color = (stk__color)color;
  o.ignore_orientation = true;
  o.roi_x = x, o.roi_y = y, o.roi_w = w, o.roi_h = h;
  stk__decoded dec;
  memset(&dec, 0, sizeof dec);
  if (stk__image_decode(d, n, "t", &o, stk__image_alloc_malloc, NULL, &dec) != STK_OK) {
    free(dec.data);
    return NULL;
  }
  return dec.data;
}

/* The device path must give the CPU's pixels whenever it decodes; returns its result. */
static int check_against_cpu(const uint8_t *d, size_t n, int color, int x, int y, int w, int h,
                             int W, int H) {
  if (w <= 0) w = W, h = H;
  int c = color == STK_PNG_GRAY ? 1 : 3;
  uint8_t *gpu = malloc((size_t)w * h * c + 1);
  int detail;
  int rc = stk__png_decode_emulated(d, n, color, x, y, w, h, gpu, &detail);
  if (rc == STK__PNG_OK) {
    uint8_t *cpu = cpu_decode(d, n, color, x, y, w, h);
    if (!cpu) fail_msg("the device path decoded a file the CPU decoder rejects");
    if (memcmp(cpu, gpu, (size_t)w * h * c) != 0) {
      for (size_t i = 0; i < (size_t)w * h * c; i++)
        if (cpu[i] != gpu[i])
          fail_msg("pixels differ at byte %zu (cpu %d, device %d), color %d, %dx%d", i, cpu[i],
                   gpu[i], color, w, h);
    }
    free(cpu);
  }
  free(gpu);
  return rc;
}

static void test_random_pngs_match_libspng(void **state) {
  (void)state;
  int decoded = 0;
  for (int it = 0; it < 1500; it++) {
    png_spec s = random_spec();
    size_t n;
    uint8_t *png = write_png(&s, &n);
    for (int color = 0; color < 3; color++) {
      int rc = check_against_cpu(png, n, color, 0, 0, 0, 0, s.w, s.h);
      if (rc != STK__PNG_OK)
        fail_msg("iteration %d: type %d depth %d interlace %d %dx%d: device path result %d", it,
                 s.type, s.depth, s.interlace, s.w, s.h, rc);
      decoded++;
    }
    int rw = rnd_in(1, s.w), rh = rnd_in(1, s.h);
    int rx = rnd_in(0, s.w - rw), ry = rnd_in(0, s.h - rh);
    assert_int_equal(check_against_cpu(png, n, rnd_in(0, 2), rx, ry, rw, rh, s.w, s.h),
                     STK__PNG_OK);
    free(png);
  }
  assert_int_equal(decoded, 4500);
}

/* A few large images: long matches across rows, 32 KiB windows, many IDAT chunks. */
static void test_large_pngs_match_libspng(void **state) {
  (void)state;
  for (int it = 0; it < 12; it++) {
    png_spec s = random_spec();
    s.w = rnd_in(300, 600), s.h = rnd_in(200, 520);
    size_t n;
    uint8_t *png = write_png(&s, &n);
    assert_int_equal(check_against_cpu(png, n, it % 3, 0, 0, 0, 0, s.w, s.h), STK__PNG_OK);
    free(png);
  }
}

/* Damaged files: never decoded differently from, nor accepted against, the CPU decoder.
 * Bit flips in the IDAT payload with the CRC fixed up reach the inflater. */
static void fix_crcs(uint8_t *d, size_t n) {
  for (size_t pos = 8; pos <= n && n - pos >= 12;) {
    uint32_t len = (uint32_t)d[pos] << 24 | d[pos + 1] << 16 | d[pos + 2] << 8 | d[pos + 3];
    if (len > n - pos - 12) return;
    uint32_t crc = (uint32_t)crc32(0, d + pos + 4, len + 4);
    d[pos + 8 + len] = (uint8_t)(crc >> 24), d[pos + 9 + len] = (uint8_t)(crc >> 16);
    d[pos + 10 + len] = (uint8_t)(crc >> 8), d[pos + 11 + len] = (uint8_t)crc;
    pos += 12 + len;
  }
}

static void test_mutations_never_accepted_against_libspng(void **state) {
  (void)state;
  int refused = 0, total = 0;
  for (int it = 0; it < 600; it++) {
    png_spec s = random_spec();
    size_t n;
    uint8_t *png = write_png(&s, &n);
    for (int m = 0; m < 4; m++) {
      uint8_t *d = malloc(n);
      memcpy(d, png, n);
      int flips = rnd_in(1, 3);
      for (int k = 0; k < flips; k++) d[rnd_in(33, (int)n - 13)] ^= (uint8_t)(1u << rnd_in(0, 7));
      if (rnd() % 4) fix_crcs(d, n);
      refused += check_against_cpu(d, n, m % 3, 0, 0, 0, 0, s.w, s.h) != STK__PNG_OK;
      total++;
      free(d);
    }
    free(png);
  }
  /* most flips are found (CRC, Adler-32, codes); the rest must have matched above */
  assert_true(refused > total / 2);
}

/* iCCP chunks: the valid one is taken; each broken one is either left to the CPU
 * decoder or, if taken, decoded exactly as libspng does. */
static void test_iccp_variants(void **state) {
  (void)state;
  int taken[9] = {0};
  for (int it = 0; it < 40; it++)
    for (int v = 1; v <= 8; v++) {
      png_spec s = random_spec();
      s.extras = false;
      s.iccp = v;
      size_t n;
      uint8_t *png = write_png(&s, &n);
      taken[v] += check_against_cpu(png, n, it % 3, 0, 0, 0, 0, s.w, s.h) == STK__PNG_OK;
      free(png);
    }
  assert_int_equal(taken[1], 40);
  for (int v = 2; v <= 8; v++) assert_int_equal(taken[v], 0); /* all refused by the planner */
}

/* tEXt chunks: variant 0 valid (with newlines); the others break a rule or sit where the
 * planner does not take them; none may be taken where libspng refuses the file. */
static void write_text(buf *f, int variant) {
#define TEXT(lit) \
  { lit, sizeof(lit) - 1 }
  static const struct {
    const char *body;
    size_t len;
  } texts[] = {TEXT("Software\0matplotlib version 3.8\nhttps://matplotlib.org"),
               TEXT(" Software\0leading space"),
               TEXT("Soft  ware\0two spaces"),
               TEXT("\0empty keyword"),
               TEXT("Comment\0a control \x01 byte"),
               TEXT("no separator at all"),
               TEXT("Comment\0tab\there"),
               TEXT("Comment\0")};
#undef TEXT
  chunk(f, "tEXt", texts[variant].body, (uint32_t)texts[variant].len);
}

static void test_text_variants(void **state) {
  (void)state;
  int taken[8] = {0};
  for (int it = 0; it < 30; it++)
    for (int v = 0; v < 8; v++) {
      png_spec s = random_spec();
      s.iccp = 0;
      s.text = v + 1;
      size_t n;
      uint8_t *png = write_png(&s, &n);
      taken[v] += check_against_cpu(png, n, it % 3, 0, 0, 0, 0, s.w, s.h) == STK__PNG_OK;
      free(png);
    }
  assert_int_equal(taken[0], 30);
  assert_int_equal(taken[7], 30); /* an empty text is valid */
  for (int v = 1; v < 7; v++) assert_int_equal(taken[v], 0);
}

/* Every PNG of the fuzz corpus (and truncations of it): device result == CPU result. */
static void test_fuzz_corpus(void **state) {
  (void)state;
  char dir[1024];
  tu_path(dir, sizeof dir, "tests/fuzz/corpus/fuzz_png");
  DIR *ls = opendir(dir);
  assert_non_null(ls);
  int files = 0, ok = 0;
  for (struct dirent *e; (e = readdir(ls)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[1600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *d = tu_read(path, &n);
    stk__image_info info;
    if (n >= 8 && stk__image_peek(d, n, "t", &info) == STK_OK && info.format == STK__IMAGE_PNG &&
        (int64_t)info.width * info.height <= 1 << 22) {
      for (int color = 0; color < 3; color++)
        ok += check_against_cpu(d, n, color, 0, 0, 0, 0, info.width, info.height) == STK__PNG_OK;
      for (size_t cut = n / 2; cut < n; cut += (n - cut + 1) / 2)
        check_against_cpu(d, cut, 0, 0, 0, 0, 0, info.width, info.height);
    }
    files++;
    free(d);
  }
  closedir(ls);
  assert_true(files > 50);
  assert_true(ok > 0); /* some seeds are valid files the device path takes */
}

/* ---- the inflater against zlib ---- */

static void test_inflate_matches_zlib(void **state) {
  (void)state;
  stk_inf_tables *s = malloc(sizeof *s);
  static const int strategies[5] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
  for (int it = 0; it < 400; it++) {
    size_t n = (size_t)rnd_in(0, 200000 >> rnd_in(0, 8));
    uint8_t *src = malloc(n + 1);
    for (size_t i = 0; i < n;) { /* text-like: a small alphabet with repeats */
      int run = rnd_in(1, 300);
      uint8_t v = (uint8_t)(rnd() % (rnd() % 2 ? 4 : 256));
      for (int k = 0; k < run && i < n; k++, i++) src[i] = rnd() % 5 ? v : (uint8_t)rnd();
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, rnd_in(0, 9), Z_DEFLATED, rnd_in(9, 15), rnd_in(1, 9),
                                  strategies[rnd_in(0, 4)]),
                     Z_OK);
    size_t cap = deflateBound(&zs, n) + 64;
    uint8_t *z = malloc(cap), *out = malloc(n + 1);
    zs.next_in = src, zs.avail_in = (uInt)n, zs.next_out = z, zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t zn = zs.total_out;
    deflateEnd(&zs);
    assert_int_equal(stk_inflate_zlib(s, z, zn, out, n), STK_INF_OK);
    assert_memory_equal(out, src, n);
    /* exactness: one byte less room, one more expected, a trailing byte */
    if (n > 0) assert_int_equal(stk_inflate_zlib(s, z, zn, out, n - 1), STK_INF_TOO_LONG);
    uint8_t *big = malloc(n + 2);
    assert_int_equal(stk_inflate_zlib(s, z, zn, big, n + 1), STK_INF_TOO_SHORT);
    free(big);
    uint8_t *zt = malloc(zn + 1);
    memcpy(zt, z, zn);
    zt[zn] = 0;
    assert_int_equal(stk_inflate_zlib(s, zt, zn + 1, out, n), STK_INF_TRAILING);
    assert_int_equal(stk_inflate_zlib(s, z, zn - 1, out, n), STK_INF_TRUNCATED);
    /* the Adler-32 is checked */
    zt[zn - 1 - rnd_in(0, 3)] ^= (uint8_t)(1u << rnd_in(0, 7));
    assert_int_equal(stk_inflate_zlib(s, zt, zn, out, n), STK_INF_BAD_ADLER);
    free(zt);
    free(src);
    free(z);
    free(out);
  }
  free(s);
}

/* The Adler-32 summed in spans (as the kernel's lanes do) equals zlib's. */
static void test_adler_spans_match_zlib(void **state) {
  (void)state;
  for (int it = 0; it < 200; it++) {
    size_t n = (size_t)rnd_in(0, 300000);
    uint8_t *p = malloc(n + 1);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(rnd() % 2 ? 255 : rnd());
    int spans = rnd_in(1, 40);
    uint32_t A = 1, B = 0;
    for (int k = 0; k < spans; k++) {
      size_t lo = n * k / spans, hi = n * (k + 1) / spans, sa, sb;
      uint32_t a, b;
      stk_adler_span(p + lo, hi - lo, &a, &b);
      sa = a, sb = b;
      stk_adler_extend(&A, &B, hi - lo, (uint32_t)sa, (uint32_t)sb);
    }
    assert_int_equal(B << 16 | A, (uint32_t)adler32(1, p, (uInt)n));
    free(p);
  }
}

/* Random and mutated streams: whenever ours succeeds, zlib gives the same bytes. */
static void test_inflate_garbage_never_beyond_zlib(void **state) {
  (void)state;
  stk_inf_tables *s = malloc(sizeof *s);
  int accepted = 0;
  for (int it = 0; it < 20000; it++) {
    uint8_t src[600], z[1200], mine[600], ref[601];
    size_t n = (size_t)rnd_in(1, 600);
    for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(rnd() % 7);
    uLongf zn = sizeof z;
    compress2(z, &zn, src, n, rnd_in(0, 9));
    int flips = rnd_in(0, 2);
    for (int k = 0; k < flips; k++) z[rnd() % zn] ^= (uint8_t)(1u << rnd_in(0, 7));
    if (stk_inflate_zlib(s, z, zn, mine, n) != STK_INF_OK) continue;
    accepted++;
    uLongf rn = sizeof ref;
    assert_int_equal(uncompress(ref, &rn, z, zn), Z_OK);
    assert_int_equal(rn, n);
    assert_memory_equal(ref, mine, n);
  }
  assert_true(accepted > 5000);
  free(s);
}

/* Hand-made streams: a stored block, a bad block type, a far distance. */
static void test_inflate_hand_made(void **state) {
  (void)state;
  stk_inf_tables s;
  uint8_t out[8];
  /* stored "abc": 78 01, final stored block, LEN 3, NLEN, bytes, Adler-32 of "abc" */
  const uint8_t stored[] = {0x78, 0x01, 0x01, 0x03, 0x00, 0xfc, 0xff,
                            'a',  'b',  'c',  0x02, 0x4d, 0x01, 0x27};
  assert_int_equal(stk_inflate_zlib(&s, stored, sizeof stored, out, 3), STK_INF_OK);
  assert_memory_equal(out, "abc", 3);
  uint8_t bad[sizeof stored];
  memcpy(bad, stored, sizeof bad);
  bad[5] = 0xfd; /* NLEN no longer the complement */
  assert_int_equal(stk_inflate_zlib(&s, bad, sizeof bad, out, 3), STK_INF_BAD_BLOCK);
  memcpy(bad, stored, sizeof bad);
  bad[2] = 0x07; /* final block of type 3 */
  assert_int_equal(stk_inflate_zlib(&s, bad, sizeof bad, out, 3), STK_INF_BAD_BLOCK);
  memcpy(bad, stored, sizeof bad);
  bad[1] = 0x02; /* header check bits wrong */
  assert_int_equal(stk_inflate_zlib(&s, bad, sizeof bad, out, 3), STK_INF_BAD_HEADER);
  /* fixed block starting with a match (distance 1 before any output) */
  const uint8_t far[] = {0x78, 0x9c, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  int rc = stk_inflate_zlib(&s, far, sizeof far, out, 8);
  assert_true(rc != STK_INF_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inflate_hand_made),
      cmocka_unit_test(test_inflate_matches_zlib),
      cmocka_unit_test(test_adler_spans_match_zlib),
      cmocka_unit_test(test_inflate_garbage_never_beyond_zlib),
      cmocka_unit_test(test_unfilter_inverts_filters),
      cmocka_unit_test(test_random_pngs_match_libspng),
      cmocka_unit_test(test_large_pngs_match_libspng),
      cmocka_unit_test(test_iccp_variants),
      cmocka_unit_test(test_text_variants),
      cmocka_unit_test(test_mutations_never_accepted_against_libspng),
      cmocka_unit_test(test_fuzz_corpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
