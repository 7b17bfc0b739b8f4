/* The GPU program interpreter of the fused automatic augmentation
 * (src/cuda/autoaug_interp.h), run on the CPU with one thread, against the CPU operator's
 * kernels (stk__aa_color, stk__aa_warp): every operation of both conventions, each
 * encoded by stk__aa_gpu_step exactly as auto_augment.apply's GPU path encodes it, and
 * multi-step programs with a mask (the ping-pong and the mask's own parity). This is the
 * kernel's code; only the block's parallelism is missing, so a GPU run can differ from
 * here only through indexing across threads, not through arithmetic.
 *
 * Exact everywhere except where the CPU stores float32 rows to uint8 (linear and cubic
 * warps, DALI's sharpness): its bulk conversion adds 0.5f in float32 while a row's last
 * elements round in double, so values within an ulp of .5 may differ by one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../../src/cuda/autoaug_interp.h"
#include "../../src/ops/autoaug_kernels.h"
#include "../../src/ops/image_util.h"

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

/* A test image: kind 0 gradients and a texture, 1 the same in 60..179 (so auto-contrast
 * and equalize do something), 2 noise (every rounding case of the float sums). */
static uint8_t *make_image(int h, int w, int c, int seed, int kind) {
  uint8_t *p = malloc((size_t)(h * w * c));
  if (kind == 2) {
    uint32_t x = 2463534242u + (uint32_t)seed;
    for (int i = 0; i < h * w * c; i++)
      x ^= x << 13, x ^= x >> 17, x ^= x << 5, p[i] = (uint8_t)(x >> 7);
    return p;
  }
  bool narrow = kind == 1;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++) {
        int v = x * 7 + y * 3 + k * 50 + ((x * y + seed) % 17) * 5 + seed;
        p[(y * w + x) * c + k] = (uint8_t)(narrow ? 60 + v % 120 : v & 255);
      }
  return p;
}

typedef struct {
  int h, w, c;
  stk__aa_convention conv;
  stk__interp interp;
  bool constant;
  float fill[4];
} setup;

/* CPU reference of one operation (src -> dst). */
static void cpu_op(const setup *S, stk__aa_op op, double param, const uint8_t *src, uint8_t *dst) {
  stk__image a = {(void *)src, STK_DTYPE_UINT8, S->h, S->w, S->c},
             b = {dst, STK_DTYPE_UINT8, S->h, S->w, S->c};
  static char mem[1 << 22];
  arena ar = {mem, 0, sizeof mem};
  if (stk__aa_op_is_geometric(op)) {
    bool y = op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_Y;
    double v[2] = {y ? 0.0 : param, y ? param : 0.0}, m[6];
    if (op == STK__AA_ROTATE) v[0] = param;
    assert_int_equal(stk__aa_matrix(op, S->conv, v, S->h, S->w, m), STK_OK);
    float *row = arena_alloc(&ar, (size_t)(S->w * S->c) * sizeof(float));
    assert_int_equal(stk__aa_warp(&a, &b, m, S->interp, S->constant, S->fill, row), STK_OK);
    return;
  }
  assert_int_equal(stk__aa_color(op, S->conv, &param, 1, &a, &b, arena_alloc, &ar), STK_OK);
}

/* The CPU mask warp of a geometric operation (nearest, fill 0). */
static void cpu_mask(const setup *S, stk__aa_op op, double param, const uint8_t *src, uint8_t *dst,
                     int mc) {
  stk__image a = {(void *)src, STK_DTYPE_UINT8, S->h, S->w, mc},
             b = {dst, STK_DTYPE_UINT8, S->h, S->w, mc};
  bool y = op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_Y;
  double v[2] = {y ? 0.0 : param, y ? param : 0.0}, m[6];
  if (op == STK__AA_ROTATE) v[0] = param;
  assert_int_equal(stk__aa_matrix(op, S->conv, v, S->h, S->w, m), STK_OK);
  float zero[16] = {0}, *row = malloc((size_t)(S->w * mc) * sizeof(float));
  assert_int_equal(stk__aa_warp(&a, &b, m, STK__INTERP_NEAREST, true, zero, row), STK_OK);
  free(row);
}

/* The interpreter on a program of `count` operations (with an optional mask). */
static void emulate(const setup *S, const stk__aa_op *ops, const double *params, int count,
                    const uint8_t *src, uint8_t *dst, const uint8_t *mask, uint8_t *mask_dst,
                    int mc) {
  size_t n = (size_t)(S->h * S->w * S->c), mn = (size_t)(S->h * S->w * mc);
  stk_gpu_aa_step steps[16];
  uint8_t luts[16 * 256];
  int num_steps = 0, num_luts = 0;
  for (int i = 0; i < count; i++) {
    double m[6];
    bool uses = false;
    assert_int_equal(stk__aa_gpu_step(ops[i], S->conv, params[i], S->h, S->w, &steps[num_steps], m,
                                      luts + num_luts * 256, &uses),
                     STK_OK);
    if (uses) steps[num_steps].lut = num_luts++;
    if (steps[num_steps].code != STK_GPU_AA_COPY) num_steps++;
  }
  if (num_steps == 0) memset(&steps[num_steps++], 0, sizeof steps[0]);
  stk_gpu_aa_sample s;
  memset(&s, 0, sizeof s);
  uint8_t *scratch = malloc(n), *mscratch = malloc(mn ? mn : 1);
  memset(scratch, 0xAB, n);
  s.src = src, s.dst = dst, s.scratch = scratch, s.h = S->h, s.w = S->w, s.c = S->c;
  if (mask) s.mask_src = mask, s.mask_dst = mask_dst, s.mask_scratch = mscratch, s.mask_c = mc;
  s.num_steps = num_steps;
  memcpy(s.fill, S->fill, sizeof s.fill);
  stk__convert(s.fill8, STK_DTYPE_UINT8, S->fill, STK_DTYPE_FLOAT32, (size_t)S->c);
  float payload[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dec[3] = {0}, box[4] = {0};
  s.dec_dst = dec, s.dec_off = 1, s.dec_count = 3, s.box_dst = box, s.box_off = 4, s.box_count = 4;
  stk_aa_shared *sh = malloc(sizeof *sh);
  int interp = S->interp == STK__INTERP_NEAREST  ? STK_GPU_INTERP_NEAREST
               : S->interp == STK__INTERP_LINEAR ? STK_GPU_INTERP_LINEAR
                                                 : STK_GPU_INTERP_CUBIC;
  stk_aa_run_sample(&s, steps, luts, payload, interp, S->constant, sh, 0, 1);
  assert_true(dec[0] == 2 && dec[2] == 4 && box[0] == 5 && box[3] == 8);
  free(sh), free(scratch), free(mscratch);
}

/* Compares; returns the elements off by one (more is a failure). */
static size_t compare(const uint8_t *a, const uint8_t *b, size_t n, bool exact, const char *what) {
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)a[i] - (int)b[i]);
    if (d == 0) continue;
    if (exact || d > 1) {
      fprintf(stderr, "%s: element %zu CPU %d interpreter %d\n", what, i, a[i], b[i]);
      fail();
    }
    off++;
  }
  return off;
}

typedef struct {
  stk__aa_op op;
  double dali[3], tv[3];
} op_params;

static const op_params OPS[] = {
    {STK__AA_IDENTITY, {0, 0, 0}, {0, 0, 0}},
    {STK__AA_SHEAR_X, {0.3, -0.21, 0.05}, {0.3, -0.21, 0.05}},
    {STK__AA_SHEAR_Y, {-0.3, 0.17, 0.0}, {-0.3, 0.17, 0.0}},
    {STK__AA_TRANSLATE_X, {7.4, -12.9, 0.6}, {7, -12, 1}},
    {STK__AA_TRANSLATE_Y, {-5.5, 9.25, 30}, {-5, 9, 30}},
    {STK__AA_ROTATE, {23.5, -30, 90}, {23.5, -30, 90}},
    {STK__AA_BRIGHTNESS, {0.3, 1.0, 1.8}, {0.1, 1.0, 1.9}},
    {STK__AA_CONTRAST, {0.2, 1.5, 0.0}, {0.1, 1.7, 0.0}},
    {STK__AA_COLOR, {0.1, 1.9, 0.0}, {0.1, 1.9, 0.0}},
    {STK__AA_SHARPNESS, {0.9, -0.9, 0.0}, {0.1, 1.9, 1.0}},
    {STK__AA_POSTERIZE, {0xF0, 0xFE, 0x80}, {4, 8, 1}},
    {STK__AA_SOLARIZE, {128, 256, 0}, {128, 255.9, 0}},
    {STK__AA_SOLARIZE_ADD, {40, 110, 0}, {40, 110, 0}},
    {STK__AA_INVERT, {0, 0, 0}, {0, 0, 0}},
    {STK__AA_EQUALIZE, {0, 0, 0}, {0, 0, 0}},
    {STK__AA_AUTO_CONTRAST, {0, 0, 0}, {0, 0, 0}},
};

static void test_every_operation(void **state) {
  (void)state;
  int shapes[][3] = {{29, 37, 3}, {16, 23, 1}, {2, 3, 3}, {64, 48, 3}};
  size_t off_by_one = 0, total = 0;
  for (int conv = 0; conv < 2; conv++)
    for (int si = 0; si < 4; si++)
      for (int narrow = 0; narrow < 3; narrow++)
        for (int mode = 0; mode < 4;
             mode++) { /* default interp + constant, nearest + clamp, linear, cubic + clamp */
          setup S = {shapes[si][0],
                     shapes[si][1],
                     shapes[si][2],
                     (stk__aa_convention)conv,
                     conv ? STK__INTERP_NEAREST : STK__INTERP_LINEAR,
                     true,
                     {128.f, 10.4f, 200.5f, 0.f}};
          if (mode == 1) S.interp = STK__INTERP_NEAREST, S.constant = false;
          if (mode == 2) S.interp = STK__INTERP_LINEAR;
          if (mode == 3) S.interp = STK__INTERP_CUBIC, S.constant = false;
          size_t n = (size_t)(S.h * S.w * S.c);
          uint8_t *src = make_image(S.h, S.w, S.c, si * 11 + narrow, narrow), *a = malloc(n),
                  *b = malloc(n);
          for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
            for (int j = 0; j < 3; j++) {
              double p = conv ? OPS[k].tv[j] : OPS[k].dali[j];
              cpu_op(&S, OPS[k].op, p, src, a);
              memset(b, 0x55, n);
              emulate(&S, &OPS[k].op, &p, 1, src, b, NULL, NULL, 0);
              char what[128];
              snprintf(what, sizeof what, "%s %s(%g) %dx%dx%d mode %d",
                       conv ? "torchvision" : "dali", stk__aa_op_name(OPS[k].op), p, S.h, S.w, S.c,
                       mode);
              bool exact =
                  !(S.interp != STK__INTERP_NEAREST && stk__aa_op_is_geometric(OPS[k].op)) &&
                  !(OPS[k].op == STK__AA_SHARPNESS && conv == 0);
              off_by_one += compare(a, b, n, exact, what);
              total += n;
            }
          free(src), free(a), free(b);
        }
  /* the off-by-one stores are ties of the CPU's own two conversions: rare */
  fprintf(stderr, "interpreter vs CPU: %zu of %zu elements off by one\n", off_by_one, total);
  assert_true(off_by_one * 200 < total);
}

/* Programs of several steps, both parities, with a 2-channel mask. */
static void test_programs_with_masks(void **state) {
  (void)state;
  const stk__aa_op prog[] = {STK__AA_SHEAR_X,  STK__AA_COLOR,       STK__AA_ROTATE,
                             STK__AA_EQUALIZE, STK__AA_TRANSLATE_Y, STK__AA_POSTERIZE};
  const double dali_p[] = {0.2, 1.6, -17.0, 0, 6.5, 0xF0}, tv_p[] = {0.2, 1.6, -17.0, 0, 6, 3};
  for (int conv = 0; conv < 2; conv++)
    for (int count = 0; count <= 6; count++)
      for (int start = 0; start + count <= 6; start += 3) {
        setup S = {31,
                   27,
                   3,
                   (stk__aa_convention)conv,
                   conv ? STK__INTERP_NEAREST : STK__INTERP_LINEAR,
                   true,
                   {conv ? 0.f : 128.f, conv ? 0.f : 128.f, conv ? 0.f : 128.f, 0.f}};
        const double *ps = (conv ? tv_p : dali_p) + start;
        const stk__aa_op *os = prog + start;
        int mc = 2;
        size_t n = (size_t)(S.h * S.w * S.c), mn = (size_t)(S.h * S.w * mc);
        uint8_t *src = make_image(S.h, S.w, S.c, 3, false),
                *mask = make_image(S.h, S.w, mc, 9, false);
        uint8_t *a = malloc(n), *t = malloc(n), *b = malloc(n), *ma = malloc(mn), *mt = malloc(mn),
                *mb = malloc(mn);
        memcpy(a, src, n), memcpy(ma, mask, mn);
        for (int i = 0; i < count; i++) {
          cpu_op(&S, os[i], ps[i], a, t);
          memcpy(a, t, n);
          if (stk__aa_op_is_geometric(os[i])) {
            cpu_mask(&S, os[i], ps[i], ma, mt, mc);
            memcpy(ma, mt, mn);
          }
        }
        emulate(&S, os, ps, count, src, b, mask, mb, mc);
        char what[96];
        snprintf(what, sizeof what, "%s program [%d, +%d)", conv ? "torchvision" : "dali", start,
                 count);
        size_t off = compare(a, b, n, conv == 1, what);
        assert_true(off * 50 < n);
        compare(ma, mb, mn, true, "mask");
        free(src), free(mask), free(a), free(t), free(b), free(ma), free(mt), free(mb);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_operation),
      cmocka_unit_test(test_programs_with_masks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
