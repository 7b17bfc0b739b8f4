/* CPU cost of every automatic-augmentation operation at 224x224 (issue 24 item 4), one
 * thread, CPU time (CLOCK_THREAD_CPUTIME_ID), built by CMake as build/bench_autoaug_cpu.
 *
 *   build/bench_autoaug_cpu [photo] [reps]      (default data/photos/astronaut.png, 301)
 *
 * For each convention (dali: linear warps, fill 128; torchvision: nearest, fill 0) and
 * each RandAugment operation at magnitude bin 9 of 31 (positive sign), and for whole
 * RandAugment(n=2, m=9) images (the draws of auto_augment.apply: two operations, random
 * sign, applied in sequence on ping-pong buffers, as apply_one does), it times the
 * general kernels (A: stk__aa_fast = false) and the specialised ones (B: true) alternately
 * in this process (A B A B ...) and prints the median and the 10th-90th percentile range
 * per call in microseconds, and whether A and B wrote the same bytes. The input is the
 * centre 224x224 crop of the photo.
 *
 * Last, the operator itself: a pipeline (one worker thread, batch 32) of external_source
 * and auto_augment.apply(policy="rand_augment", n=2, m=9), fed the crop, against the same
 * pipeline without auto_augment.apply; process CPU time per image of the difference,
 * A B A B over rounds of 4 batches (median and p10-p90 over the rounds). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoaug/autoaug.h"
#include "codecs/codecs.h"
#include "core/core.h"
#include "ops/autoaug_kernels.h"
#include "stoker/stoker.h"

#define SIDE 224

static int64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Scratch from one arena reset before each operation. */
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

typedef struct {
  stk__aa_convention conv;
  stk__interp interp;
  float fill[3];
  float row[SIDE * 3];
  arena ar;
} env;

static void die(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, stk_last_error());
  exit(1);
}

/* One operation, as auto_augment.apply's apply_one runs it. */
static void run_op(env *e, stk__aa_op op, double param, const stk__image *src,
                   const stk__image *dst) {
  e->ar.used = 0;
  if (!stk__aa_op_is_geometric(op)) {
    if (stk__aa_color(op, e->conv, &param, 1, src, dst, arena_alloc, &e->ar) != STK_OK)
      die(stk__aa_op_name(op));
    return;
  }
  bool y = op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_Y;
  double v[2] = {y ? 0.0 : param, y ? param : 0.0}, m[6];
  if (stk__aa_matrix(op, e->conv, v, src->h, src->w, m) != STK_OK) die("matrix");
  if (stk__aa_warp(src, dst, m, e->interp, true, e->fill, e->row) != STK_OK)
    die(stk__aa_op_name(op));
}

static stk__image crop_photo(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *bytes = malloc((size_t)size);
  if (fread(bytes, 1, (size_t)size, f) != (size_t)size) exit(1);
  fclose(f);
  stk__decode_opts o = {0};
  stk__decoded d;
  if (stk__image_decode(bytes, (size_t)size, path, &o, stk__image_alloc_malloc, NULL, &d) != STK_OK)
    die("decode");
  free(bytes);
  if (d.h < SIDE || d.w < SIDE) {
    fprintf(stderr, "%s is smaller than %dx%d\n", path, SIDE, SIDE);
    exit(1);
  }
  uint8_t *img = malloc(SIDE * SIDE * 3);
  int y0 = (d.h - SIDE) / 2, x0 = (d.w - SIDE) / 2;
  for (int y = 0; y < SIDE; y++)
    memcpy(img + (size_t)y * SIDE * 3, d.data + ((size_t)(y0 + y) * d.w + x0) * 3, SIDE * 3);
  free(d.data);
  return (stk__image){img, STK_DTYPE_UINT8, SIDE, SIDE, 3};
}

typedef struct {
  double med, lo, hi;
} stats;

static stats summarise(int64_t *t, int n) {
  qsort(t, (size_t)n, sizeof t[0], cmp_i64);
  return (stats){t[n / 2] / 1e3, t[n / 10] / 1e3, t[n - 1 - n / 10] / 1e3};
}

static void print_row(const char *conv, const char *name, stats a, stats b, bool same) {
  printf("%-11s %-14s %8.1f [%6.1f-%6.1f]  %8.1f [%6.1f-%6.1f]  x%4.2f  %s\n", conv, name, a.med,
         a.lo, a.hi, b.med, b.lo, b.hi, a.med / b.med, same ? "same bytes" : "DIFFERENT BYTES");
}

/* Times one operation A B A B ... */
static bool bench_op(env *e, stk__aa_op op, double param, const stk__image *src, uint8_t *out_a,
                     uint8_t *out_b, int reps, int64_t *ta, int64_t *tb) {
  stk__image da = {out_a, STK_DTYPE_UINT8, SIDE, SIDE, 3}, db = da;
  db.data = out_b;
  for (int i = 0; i < 10; i++) run_op(e, op, param, src, &da); /* warm up */
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < 2; k++) {
      stk__aa_fast = k == 1;
      int64_t t0 = cpu_ns();
      run_op(e, op, param, src, k ? &db : &da);
      (k ? tb : ta)[r] = cpu_ns() - t0;
    }
  }
  stk__aa_fast = true;
  return memcmp(out_a, out_b, SIDE * SIDE * 3) == 0;
}

/* RandAugment(n=2, m=9): `reps` images, each two draws from the suite with a random sign;
 * the same draws for A and B. */
static void bench_randaugment(env *e, const stk__aa_suite *suite, const stk__image *src, int reps,
                              int64_t *ta, int64_t *tb, bool *same) {
  uint8_t *buf = malloc(4 * SIDE * SIDE * 3);
  unsigned seed = 12345;
  *same = true;
  for (int r = 0; r < reps; r++) {
    int idx[2], neg[2];
    for (int k = 0; k < 2; k++) {
      seed = seed * 1103515245u + 12345u;
      idx[k] = (int)((seed >> 8) % (unsigned)suite->count);
      seed = seed * 1103515245u + 12345u;
      neg[k] = (int)((seed >> 8) & 1);
    }
    for (int k = 0; k < 2; k++) {
      stk__aa_fast = k == 1;
      uint8_t *p0 = buf + (size_t)(2 * k) * SIDE * SIDE * 3, *p1 = p0 + SIDE * SIDE * 3;
      stk__image a = {p0, STK_DTYPE_UINT8, SIDE, SIDE, 3}, b = a;
      b.data = p1;
      int64_t t0 = cpu_ns();
      const stk__image *cur = src;
      for (int s = 0; s < 2; s++) {
        const stk__aa_entry *en = &suite->e[idx[s]];
        double p = stk__aa_param(en, e->conv, 9, 31, neg[s] && en->negate, SIDE, SIDE);
        const stk__image *dst = cur == &a ? &b : &a;
        run_op(e, en->op, p, cur, dst);
        cur = dst;
      }
      (k ? tb : ta)[r] = cpu_ns() - t0;
      if (k == 1) {
        /* the A result sits in the same relative buffer of the first pair */
        size_t off = (size_t)((uint8_t *)cur->data - p0);
        if (memcmp(cur->data, buf + off, SIDE * SIDE * 3) != 0) *same = false;
      }
    }
  }
  stk__aa_fast = true;
  free(buf);
}

static int64_t process_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#define BATCH         32
#define ROUND_BATCHES 4

static stk_pipeline *make_pipeline(const char *conv) {
  char text[512];
  if (conv)
    snprintf(text, sizeof text,
             "batch_size = %d\nnum_threads = 1\nx = external_source(name=\"src\")\n"
             "y, m, b, d = auto_augment.apply(x, policy=\"rand_augment\", n=2, m=9, "
             "convention=\"%s\", seed=3)\nreturn y\n",
             BATCH, conv);
  else
    snprintf(text, sizeof text,
             "batch_size = %d\nnum_threads = 1\nx = external_source(name=\"src\")\n"
             "return x\n",
             BATCH);
  stk_pipeline *p;
  if (stk_pipeline_from_text(text, &p) != STK_OK || stk_pipeline_build(p) != STK_OK)
    die("pipeline");
  return p;
}

/* Process CPU time of ROUND_BATCHES batches, per image, in nanoseconds. */
static int64_t pipeline_round(stk_pipeline *p, const stk__image *img) {
  stk_tensor_desc d[BATCH];
  for (int i = 0; i < BATCH; i++) {
    memset(&d[i], 0, sizeof d[i]);
    d[i].data = img->data, d[i].ndim = 3, d[i].dtype = STK_DTYPE_UINT8;
    d[i].shape[0] = SIDE, d[i].shape[1] = SIDE, d[i].shape[2] = 3;
    d[i].strides[0] = SIDE * 3, d[i].strides[1] = 3, d[i].strides[2] = 1;
    strcpy(d[i].layout, "HWC");
  }
  int64_t t0 = process_ns();
  for (int b = 0; b < ROUND_BATCHES; b++) {
    stk_batch *out;
    if (stk_pipeline_feed(p, "src", d, BATCH) != STK_OK) die("feed");
    if (stk_pipeline_run(p, &out) != STK_OK) die("run");
    stk_batch_release(out);
  }
  return (process_ns() - t0) / (ROUND_BATCHES * BATCH);
}

/* auto_augment.apply per image: the pipeline with it minus the pipeline without it, A B
 * A B (the bare pipeline timed between them). */
static void bench_apply(const char *conv, const stk__image *img, int rounds) {
  stk_pipeline *with = make_pipeline(conv), *bare = make_pipeline(NULL);
  int64_t *t[2] = {malloc(sizeof(int64_t) * (size_t)rounds),
                   malloc(sizeof(int64_t) * (size_t)rounds)};
  pipeline_round(with, img), pipeline_round(bare, img); /* warm up */
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < 2; k++) {
      stk__aa_fast = k == 1;
      int64_t a = pipeline_round(with, img), b = pipeline_round(bare, img);
      t[k][r] = a - b;
    }
  stk__aa_fast = true;
  printf("%-11s %-14s %8.1f [%6.1f-%6.1f]  %8.1f [%6.1f-%6.1f]  x%4.2f\n", conv, "apply op/img",
         summarise(t[0], rounds).med, summarise(t[0], rounds).lo, summarise(t[0], rounds).hi,
         summarise(t[1], rounds).med, summarise(t[1], rounds).lo, summarise(t[1], rounds).hi,
         summarise(t[0], rounds).med / summarise(t[1], rounds).med);
  free(t[0]), free(t[1]);
  stk_pipeline_destroy(with), stk_pipeline_destroy(bare);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "data/photos/astronaut.png";
  int reps = argc > 2 ? atoi(argv[2]) : 301;
  if (reps < 11) reps = 11;
  stk__image src = crop_photo(path);
  uint8_t *out_a = malloc(SIDE * SIDE * 3), *out_b = malloc(SIDE * SIDE * 3);
  int64_t *ta = malloc(sizeof(int64_t) * 4 * (size_t)reps);
  int64_t *tb = malloc(sizeof(int64_t) * 4 * (size_t)reps);
  env *e = calloc(1, sizeof *e);
  e->ar.cap = 16u << 20;
  e->ar.buf = malloc(e->ar.cap);
  printf("%s centre %dx%d, %d repeats, CPU time per call in us: median [p10-p90]\n", path, SIDE,
         SIDE, reps);
  printf("%-11s %-14s %-26s  %-26s  %s\n", "convention", "operation", "A: general kernels",
         "B: specialised", "A/B");
  for (int conv = 0; conv < 2; conv++) {
    e->conv = conv ? STK__AA_TORCHVISION : STK__AA_DALI;
    e->interp = conv ? STK__INTERP_NEAREST : STK__INTERP_LINEAR;
    float f = conv ? 0.0f : 128.0f;
    e->fill[0] = e->fill[1] = e->fill[2] = f;
    const char *cname = conv ? "torchvision" : "dali";
    stk__aa_translate tr = {false, {-1, -1}, {-1, -1}};
    stk__aa_suite suite;
    if (stk__aa_default_suite(STK__AA_RAND_AUGMENT, e->conv, true, NULL, &tr, &suite) != STK_OK)
      die("suite");
    for (int i = 0; i < suite.count; i++) {
      const stk__aa_entry *en = &suite.e[i];
      double p = stk__aa_param(en, e->conv, 9, 31, false, SIDE, SIDE);
      bool same = bench_op(e, en->op, p, &src, out_a, out_b, reps, ta, tb);
      print_row(cname, stk__aa_op_name(en->op), summarise(ta, reps), summarise(tb, reps), same);
    }
    bool same;
    bench_randaugment(e, &suite, &src, reps * 4, ta, tb, &same);
    print_row(cname, "RandAug(2,9)", summarise(ta, reps * 4), summarise(tb, reps * 4), same);
  }
  for (int conv = 0; conv < 2; conv++)
    bench_apply(conv ? "torchvision" : "dali", &src, reps / 4 > 11 ? reps / 4 : 11);
  return 0;
}
