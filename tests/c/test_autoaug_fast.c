/* The specialised uint8 kernels of automatic augmentation (src/ops/autoaug_fast.c) against
 * the general colour / filter / warp kernels they stand in for: stk__aa_color and
 * stk__aa_warp run with stk__aa_fast on and off must write the same bytes for random
 * images (noise and smooth ramps), random parameters (inside and outside the frameworks'
 * ranges, extrapolating blends, kernels with zero taps), random matrices (shears, turns,
 * scales, translations far outside), every interpolation and border, sizes from 1x1 to
 * wider than the fast paths' row limits, and 1, 3 and 4 channels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../../src/ops/autoaug_fast.h"
#include "../../src/ops/autoaug_kernels.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

static double uni(double lo, double hi) { return lo + (hi - lo) * (rnd() / 4294967296.0); }

typedef struct {
  char *buf;
  size_t used, cap;
} arena;

static void *arena_alloc(void *ctx, size_t bytes) {
  arena *a = ctx;
  size_t at = (a->used + 63) & ~(size_t)63;
  if (at + bytes > a->cap) return NULL;
  a->used = at + bytes;
  return a->buf + at;
}

/* Noise, or a ramp with a little noise (blends and warps of smooth content hit the
 * rounding boundaries more often than noise does). */
static void fill_image(uint8_t *p, int64_t h, int64_t w, int64_t c) {
  bool ramp = rnd() & 1;
  double a = uni(-3, 3), b = uni(-3, 3);
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++)
      for (int64_t k = 0; k < c; k++) {
        double v = ramp ? 128 + a * (double)x + b * (double)y + 20.0 * (double)k + (rnd() % 5)
                        : (double)(rnd() & 255);
        p[(y * w + x) * c + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
}

static const int64_t sizes[][2] = {{1, 1},   {1, 9},     {9, 1},    {2, 2},   {3, 5},
                                   {5, 3},   {4, 17},    {17, 33},  {31, 64}, {64, 31},
                                   {37, 97}, {224, 224}, {3, 1400}, {2, 6000}};

/* Runs fn with the fast kernels off (into a) and on (into b) and compares. */
typedef stk_status (*run_fn)(const stk__image *src, const stk__image *dst, void *ctx);

static void same_bytes(const char *what, const stk__image *src, run_fn fn, void *ctx) {
  size_t n = (size_t)(src->h * src->w * src->c);
  uint8_t *a = malloc(n), *b = malloc(n);
  memset(a, 0xAA, n), memset(b, 0x55, n);
  stk__image da = {a, STK_DTYPE_UINT8, src->h, src->w, src->c}, db = da;
  db.data = b;
  stk__aa_fast = false;
  stk_status sa = fn(src, &da, ctx);
  stk__aa_fast = true;
  stk_status sb = fn(src, &db, ctx);
  if (sa != sb) fail_msg("%s: status %d (general) != %d (fast)", what, sa, sb);
  if (sa == STK_OK && memcmp(a, b, n) != 0) {
    size_t i = 0;
    while (a[i] == b[i]) i++;
    fail_msg("%s on %lldx%lldx%lld: element %zu is %d (general) but %d (fast)", what,
             (long long)src->h, (long long)src->w, (long long)src->c, i, a[i], b[i]);
  }
  free(a), free(b);
}

typedef struct {
  stk__aa_op op;
  stk__aa_convention conv;
  double p[9];
  int np;
  arena ar;
} color_ctx;

static stk_status run_color(const stk__image *src, const stk__image *dst, void *ctx) {
  color_ctx *c = ctx;
  c->ar.used = 0;
  return stk__aa_color(c->op, c->conv, c->p, c->np, src, dst, arena_alloc, &c->ar);
}

/* A parameter for a colour operation: usual ranges, beyond them, and exact corners. */
static double color_param(stk__aa_op op) {
  static const double corners[] = {0.0, 1.0, -1.0, 2.0, 0.5};
  if (rnd() % 5 == 0) return corners[rnd() % 5];
  switch (op) {
    case STK__AA_POSTERIZE:
      return (double)(rnd() % 9);
    case STK__AA_SOLARIZE:
      return uni(0, 256);
    case STK__AA_SOLARIZE_ADD:
      return uni(-50, 120);
    default:
      return uni(-1.5, 3.0);
  }
}

static void colour_all_sizes(void);

static void test_colour_operations(void **state) {
  (void)state;
  for (int narrow = 0; narrow < 2; narrow++) { /* AVX2 code (if any), then without */
    stk__aa_fast_no_avx2 = narrow;
    colour_all_sizes();
  }
  stk__aa_fast_no_avx2 = false;
}

static void colour_all_sizes(void) {
  color_ctx *c = calloc(1, sizeof *c);
  c->ar.cap = 64u << 20;
  c->ar.buf = malloc(c->ar.cap);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int64_t ch = 1; ch <= 4; ch++) {
      if (ch == 2) continue;
      int64_t h = sizes[s][0], w = sizes[s][1];
      uint8_t *img = malloc((size_t)(h * w * ch));
      stk__image src = {img, STK_DTYPE_UINT8, h, w, ch};
      for (int op = STK__AA_BRIGHTNESS; op < STK__AA_NUM_OPS; op++)
        for (int conv = 0; conv < 2; conv++)
          for (int trial = 0; trial < (h * w > 10000 ? 2 : 6); trial++) {
            fill_image(img, h, w, ch);
            c->op = (stk__aa_op)op, c->conv = (stk__aa_convention)conv;
            c->p[0] = color_param(c->op), c->np = 1;
            if (op == STK__AA_SHARPNESS && conv == STK__AA_DALI && trial % 2) {
              c->np = 9; /* a free kernel, some taps zero */
              for (int k = 0; k < 9; k++) c->p[k] = rnd() % 4 == 0 ? 0.0 : uni(-1.0, 1.5);
            }
            char what[96];
            snprintf(what, sizeof what, "%s (%s, p %g, %d values)", stk__aa_op_name(c->op),
                     conv ? "torchvision" : "dali", c->p[0], c->np);
            same_bytes(what, &src, run_color, c);
          }
      free(img);
    }
  free(c->ar.buf), free(c);
}

typedef struct {
  double m[6];
  stk__interp interp;
  bool constant;
  float fill[4];
  float *row;
} warp_ctx;

static stk_status run_warp(const stk__image *src, const stk__image *dst, void *ctx) {
  warp_ctx *c = ctx;
  return stk__aa_warp(src, dst, c->m, c->interp, c->constant, c->fill, c->row);
}

/* A matrix: an operation's own (both conventions), or a random affine map. */
static void random_matrix(int64_t h, int64_t w, double m[6]) {
  int kind = (int)(rnd() % 7);
  if (kind < 5) {
    static const stk__aa_op ops[] = {STK__AA_SHEAR_X, STK__AA_SHEAR_Y, STK__AA_TRANSLATE_X,
                                     STK__AA_TRANSLATE_Y, STK__AA_ROTATE};
    stk__aa_op op = ops[kind];
    double v[2] = {0, 0}, p = op == STK__AA_ROTATE ? uni(-180, 180)
                              : op == STK__AA_SHEAR_X || op == STK__AA_SHEAR_Y
                                  ? uni(-1, 1)
                                  : uni(-1.2, 1.2) * (double)w;
    if (rnd() & 1) p = round(p); /* torchvision's integer translations */
    bool y = op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_Y;
    v[y ? 1 : 0] = p;
    if (op == STK__AA_ROTATE) v[0] = p;
    TU_OK(stk__aa_matrix(op, rnd() & 1 ? STK__AA_TORCHVISION : STK__AA_DALI, v, h, w, m));
    return;
  }
  for (int i = 0; i < 6; i++) m[i] = uni(-2, 2);
  m[2] = uni(-2.0, 2.0) * (double)w, m[5] = uni(-2.0, 2.0) * (double)h;
  if (kind == 6) m[1] = m[3] = 0.0; /* axis-aligned: one coordinate constant along a row */
}

static void warp_all_sizes(void) {
  warp_ctx c;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int64_t ch = 1; ch <= 4; ch++) {
      if (ch == 2) continue;
      int64_t h = sizes[s][0], w = sizes[s][1];
      uint8_t *img = malloc((size_t)(h * w * ch));
      c.row = malloc(sizeof(float) * (size_t)(w * ch));
      stk__image src = {img, STK_DTYPE_UINT8, h, w, ch};
      for (int trial = 0; trial < (h * w > 10000 ? 8 : 40); trial++) {
        fill_image(img, h, w, ch);
        random_matrix(h, w, c.m);
        c.interp =
            (stk__interp[]){STK__INTERP_NEAREST, STK__INTERP_LINEAR, STK__INTERP_CUBIC}[rnd() % 3];
        c.constant = rnd() % 4 != 0;
        for (int k = 0; k < 4; k++) /* fractional, half-way and out-of-range fills */
          c.fill[k] = (float[]){0.0f, 128.0f, 127.5f, -3.7f, 300.2f, 0.49999997f}[rnd() % 6];
        char what[160];
        snprintf(what, sizeof what, "warp [%g %g %g; %g %g %g] interp %d constant %d", c.m[0],
                 c.m[1], c.m[2], c.m[3], c.m[4], c.m[5], (int)c.interp, (int)c.constant);
        same_bytes(what, &src, run_warp, &c);
      }
      free(img), free(c.row);
    }
}

static void test_warps(void **state) {
  (void)state;
  for (int narrow = 0; narrow < 2; narrow++) { /* AVX2 coordinates (if any), then SSE2 */
    stk__aa_fast_no_avx2 = narrow;
    warp_all_sizes();
  }
  stk__aa_fast_no_avx2 = false;
}

/* The fast paths do take the cases they are meant for (else the comparisons above would
 * compare the general kernels with themselves), and decline the others. */
static void test_fast_paths_engage(void **state) {
  (void)state;
  uint8_t img[8 * 8 * 4] = {0}, out[8 * 8 * 4];
  float row[64], fill[4] = {0}, acc[8 * 8 * 4];
  double m[6] = {1, 0.2, 0.5, 0.1, 1, -0.5};
  stk__image s3 = {img, STK_DTYPE_UINT8, 8, 8, 3}, d3 = {out, STK_DTYPE_UINT8, 8, 8, 3};
  stk__image s4 = {img, STK_DTYPE_UINT8, 8, 8, 4}, d4 = {out, STK_DTYPE_UINT8, 8, 8, 4};
  assert_true(stk__aa_fast_warp(&s3, &d3, m, STK__INTERP_LINEAR, true, fill, row));
  double shear_x[6] = {1, 0.3, -2, 0, 1, 0};
  assert_true(stk__aa_fast_warp(&s3, &d3, shear_x, STK__INTERP_NEAREST, false, fill, row));
  assert_false(stk__aa_fast_warp(&s3, &d3, m, STK__INTERP_CUBIC, true, fill, row));
  assert_false(stk__aa_fast_warp(&s4, &d4, m, STK__INTERP_LINEAR, true, fill, row));
  m[2] = NAN; /* the general kernel reports it */
  assert_false(stk__aa_fast_warp(&s3, &d3, m, STK__INTERP_LINEAR, true, fill, row));
  assert_true(stk__aa_fast_pil_sharpness(&s4, &d4, 1.5f));
  assert_true(stk__aa_fast_pil_color(&s3, &d3, 0.3f));
  assert_false(stk__aa_fast_pil_color(&s4, &d4, 0.3f));
  float k[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
  assert_true(stk__aa_fast_conv3x3(&s4, k, acc));
  /* integer sums: 100 pixels of (10, 20, 30) */
  uint8_t px[300];
  for (int i = 0; i < 300; i++) px[i] = (uint8_t)(10 * (i % 3 + 1));
  stk__image p3 = {px, STK_DTYPE_UINT8, 10, 10, 3};
  assert_true(stk__aa_fast_mean_luma(&p3) == (0.299 * 1000 + 0.587 * 2000 + 0.114 * 3000) / 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fast_paths_engage),
      cmocka_unit_test(test_colour_operations),
      cmocka_unit_test(test_warps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
