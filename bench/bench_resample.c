/* Micro-benchmark of the CPU image kernels on one core (not built by CMake).
 *
 *   cmake --build build && gcc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc \
 *       bench/bench_resample.c build/libstoker_internal.a -ljpeg -lspng -lz -lm -lpthread \
 *       -ldl -o /tmp/bench_resample
 *   /tmp/bench_resample
 *
 * Prints the median time per call of: resize 500x375 RGB -> 224x224 for each filter
 * (antialias on), a random-resized-crop-like window, the fused crop_mirror_normalize
 * 224x224x3 uint8 -> float32 CHW, flip and cast. The input is a synthetic image with
 * photo-like gradients and noise (timings do not depend on content). Every kernel runs
 * with the hand-written AVX2 row loops (src/ops/resample_rows.c, src/ops/cmn_fast.c)
 * where the CPU has them, and with the portable loops only, call by call alternately (a
 * busy machine slows both alike); both give the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "ops/cmn_fast.h"
#include "ops/image_util.h"
#include "ops/resample.h"
#include "ops/resample_rows.h"

#define REPS 301

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

typedef void (*bench_fn)(void *ctx);

static void portable_only(bool on) {
  stk__resample_rows_off = on;
  stk__cmn_fast_off = on;
}

/* Prints the median time of REPS calls, in microseconds, with the AVX2 loops and
 * with the portable ones, after `label`. */
static void report(const char *label, bench_fn fn, void *ctx) {
  static int64_t t[2][REPS];
  for (int i = 0; i < 20; i++) fn(ctx); /* warm up */
  for (int i = 0; i < REPS; i++)
    for (int m = 0; m < 2; m++) {
      portable_only(m == 1);
      int64_t t0 = stk__now_ns();
      fn(ctx);
      t[m][i] = stk__now_ns() - t0;
    }
  portable_only(false);
  qsort(t[0], REPS, sizeof t[0][0], cmp_i64);
  qsort(t[1], REPS, sizeof t[1][0], cmp_i64);
  printf("%-54s %8.1f %9.1f\n", label, (double)t[0][REPS / 2] / 1000.0,
         (double)t[1][REPS / 2] / 1000.0);
}

typedef struct {
  stk__image src, dst;
  stk__resample_args args;
  void *scratch;
  size_t scratch_size;
} resize_ctx;

static void run_resize(void *p) {
  resize_ctx *c = p;
  if (stk__resample(&c->src, &c->dst, &c->args, c->scratch, c->scratch_size) != STK_OK) {
    fprintf(stderr, "resample failed: %s\n", stk_last_error());
    exit(1);
  }
}

typedef struct {
  stk__image src, dst;
  stk__cmn_params p;
  void *scratch;
  size_t scratch_size;
} cmn_ctx;

static void run_cmn(void *p) {
  cmn_ctx *c = p;
  if (stk__cmn(&c->src, &c->dst, &c->p, c->scratch, c->scratch_size) != STK_OK) exit(1);
}

typedef struct {
  const stk__image *src;
  void *dst;
} simple_ctx;

static void run_flip(void *p) {
  simple_ctx *c = p;
  stk__flip(c->src->data, c->dst, 1, 1, c->src->h, 1, c->src->w, c->src->c, true, false);
}

static void run_cast(void *p) {
  simple_ctx *c = p;
  stk__convert(c->dst, STK_DTYPE_FLOAT32, c->src->data, STK_DTYPE_UINT8,
               (size_t)(c->src->h * c->src->w * c->src->c));
}

static void bench_resize(const char *label, stk__image *src, int64_t oh, int64_t ow,
                         stk__resample_args a) {
  resize_ctx c = {
      *src, {malloc((size_t)(oh * ow * src->c)), STK_DTYPE_UINT8, oh, ow, src->c}, a, NULL, 0};
  c.scratch_size = stk__resample_scratch_size(src, oh, ow, &a);
  c.scratch = malloc(c.scratch_size);
  report(label, run_resize, &c);
  free(c.scratch);
  free(c.dst.data);
}

int main(void) {
  int64_t H = 375, W = 500, C = 3;
  uint8_t *img = malloc((size_t)(H * W * C));
  uint32_t r = 12345;
  for (int64_t y = 0; y < H; y++)
    for (int64_t x = 0; x < W; x++)
      for (int64_t c = 0; c < C; c++) {
        r = r * 1664525u + 1013904223u;
        int v = (int)((x * 255 / W + y * 128 / H + c * 40) % 256) + (int)(r >> 28) - 8;
        img[(y * W + x) * C + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
  stk__image src = {img, STK_DTYPE_UINT8, H, W, C};
  const char *names[] = {"nearest", "linear", "cubic", "lanczos3"};
  char label[96];
  printf("%-54s %8s %9s\n", "kernel (median us)", "AVX2", "portable");
  for (int f = 0; f < 4; f++) {
    stk__resample_args a = {0, 0, (double)W, (double)H, (stk__interp)f, true};
    snprintf(label, sizeof label, "resize 500x375x3 u8 -> 224x224 %s antialias", names[f]);
    bench_resize(label, &src, 224, 224, a);
  }
  for (int order = 1; order <= 2; order++) {
    stk__resample_args a = {0, 0, (double)W, (double)H, STK__INTERP_LINEAR, true, order};
    snprintf(label, sizeof label, "resize 500x375x3 u8 -> 224x224 linear AA, %s first",
             order == 1 ? "horiz" : "vert");
    bench_resize(label, &src, 224, 224, a);
  }
  stk__resample_args na = {0, 0, (double)W, (double)H, STK__INTERP_LINEAR, false};
  bench_resize("resize 500x375x3 u8 -> 224x224 linear no AA", &src, 224, 224, na);
  stk__resample_args win = {37.5, 20.25, 337.5, 270.25, STK__INTERP_LINEAR, true};
  bench_resize("rrc-like window 300x250 -> 224x224 linear AA", &src, 224, 224, win);
  stk__resample_args up = {0, 0, 200, 150, STK__INTERP_LINEAR, true};
  bench_resize("upscale window 200x150 -> 448x336 linear", &src, 336, 448, up);

  /* fused crop_mirror_normalize on a 224x224 crop */
  double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255},
         sd[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};
  double fill[4] = {0, 0, 0, 0};
  const char *types[] = {"float32", "float16", "uint8"};
  stk_dtype dts[] = {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16, STK_DTYPE_UINT8};
  for (int t = 0; t < 3; t++)
    for (int planar = 1; planar >= 0; planar--) {
      cmn_ctx c = {src,
                   {NULL, dts[t], 224, 224, 3},
                   {{75, 138, 224, 224}, true, planar != 0, mean, sd, 1.0, 0.0, fill},
                   NULL,
                   0};
      c.dst.data = malloc(224 * 224 * 3 * 4);
      c.scratch_size = stk__cmn_scratch_size(&c.src, &c.dst);
      c.scratch = malloc(c.scratch_size);
      snprintf(label, sizeof label, "cmn 224x224x3 u8 -> %s %s mirror", types[t],
               planar ? "CHW" : "HWC");
      report(label, run_cmn, &c);
      free(c.scratch);
      free(c.dst.data);
    }
  stk__image small = {img, STK_DTYPE_UINT8, 224, 224, 3};
  simple_ctx sc = {&small, malloc(224 * 224 * 3 * 4)};
  report("flip 224x224x3 u8 horizontal", run_flip, &sc);
  report("cast 224x224x3 u8 -> float32", run_cast, &sc);
  free(sc.dst);
  free(img);
  return 0;
}
