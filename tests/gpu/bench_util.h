/*
 * Shared by the per-operator GPU benchmarks (tests/gpu/bench_*.c, one program per family
 * of operators; CMake builds every bench_*.c found there): opens the CUDA backend, makes a
 * batch of decoded ImageNet-sized images on the device, times a kernel call with CUDA
 * events and prints one RESULT line per operator:
 *
 *   RESULT op NAME batch 256: median X ms (min Y) = Z img/s; B MB moved -> G GB/s = P% of HBM
 *
 * "Bytes moved" is what an ideal implementation must read and write (for an elementwise
 * operator on uint8 HWC: the input once and the output once); the caller states it. HBM
 * peak is the H100 SXM's 3350 GB/s (override with STK_HBM_GBPS).
 * usage of a bench program: bench_X [--batch N] [--lib PATH] [--size HxW]
 */
#ifndef STK_BENCH_UTIL_H
#define STK_BENCH_UTIL_H

#include <dlfcn.h>

#include "gpu_testutil.h"

typedef struct {
  const stk_gpu_api *api;
  stk_gpu_ctx *ctx;
  uintptr_t stream;
  char err[STK_GPU_ERRLEN];
  int batch, h, w, c; /* the batch: `batch` HWC uint8 images of h x w x c */
  uint8_t *images;    /* one device block: sample i at images + i * image_bytes */
  size_t image_bytes;
  void *scratch; /* a second block of the same size (outputs) */
  void *ev0, *ev1;
} bu_bench;

#define BU_DIE_IF(bb, cond, ...)     \
  do {                               \
    if (cond) {                      \
      printf("bench: " __VA_ARGS__); \
      printf(" (%s)\n", (bb)->err);  \
      exit(1);                       \
    }                                \
  } while (0)

/* Device pointer of sample i of the input batch / of the scratch (output) block. */
static inline uint8_t *bu_image(const bu_bench *b, int i) {
  return b->images + (size_t)i * b->image_bytes;
}
static inline uint8_t *bu_scratch(const bu_bench *b, int i) {
  return (uint8_t *)b->scratch + (size_t)i * b->image_bytes;
}

/* Parses the common options, opens the backend and uploads the batch: the bundled photos,
 * resampled (nearest) to h x w, cycled to fill the batch. Default 256 images of 375 x 500
 * x 3 (a typical ImageNet training image). */
static inline void bu_open(bu_bench *b, int argc, char **argv) {
  memset(b, 0, sizeof *b);
  const char *lib = STK_CUDA_LIB;
  b->batch = 256, b->h = 375, b->w = 500, b->c = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      b->batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
      lib = argv[++i];
    else if (!strcmp(argv[i], "--size") && i + 1 < argc)
      sscanf(argv[++i], "%dx%d", &b->h, &b->w);
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  stk_cuda_get_api_fn get = h ? (stk_cuda_get_api_fn)dlsym(h, "stk_cuda_get_api") : NULL;
  b->api = get ? get() : NULL;
  BU_DIE_IF(b, !b->api, "cannot load %s", lib);
  BU_DIE_IF(b, b->api->open(NULL, &b->ctx, b->err, sizeof b->err), "open");
  b->stream = b->api->stream(b->ctx, STK_GPU_STREAM_COMPUTE);
  tu_photo *ph = NULL;
  int np = tu_load_photos(&ph);
  BU_DIE_IF(b, np < 1, "no photos under %s/data/photos", STK_SOURCE_DIR);
  b->image_bytes = (size_t)b->h * b->w * b->c;
  size_t total = b->image_bytes * (size_t)b->batch;
  uint8_t *host = (uint8_t *)malloc(total);
  BU_DIE_IF(b, !host, "out of host memory");
  for (int i = 0; i < b->batch; i++) {
    const tu_photo *p = &ph[i % np];
    uint8_t *dst = host + (size_t)i * b->image_bytes;
    for (int y = 0; y < b->h; y++)
      for (int x = 0; x < b->w; x++) {
        /* a different offset per copy so that repeated photos are not identical */
        int sy = (int)(((int64_t)y * p->h / b->h + i / np) % p->h),
            sx = (int)((int64_t)x * p->w / b->w);
        for (int c = 0; c < b->c; c++)
          dst[((size_t)y * b->w + x) * b->c + c] = p->rgb[((size_t)sy * p->w + sx) * 3 + c % 3];
      }
  }
  BU_DIE_IF(
      b, b->api->device_alloc(b->ctx, total, b->stream, (void **)&b->images, b->err, sizeof b->err),
      "alloc");
  BU_DIE_IF(b, b->api->device_alloc(b->ctx, total, b->stream, &b->scratch, b->err, sizeof b->err),
            "alloc");
  BU_DIE_IF(b,
            b->api->memcpy_async(b->ctx, b->images, host, total, b->stream, b->err, sizeof b->err),
            "upload");
  BU_DIE_IF(b, b->api->stream_sync(b->ctx, b->stream, b->err, sizeof b->err), "sync");
  BU_DIE_IF(b, b->api->event_create(b->ctx, 1, &b->ev0, b->err, sizeof b->err), "event");
  BU_DIE_IF(b, b->api->event_create(b->ctx, 1, &b->ev1, b->err, sizeof b->err), "event");
  free(host);
  tu_free_photos(ph, np);
  printf("bench: batch %d of %dx%dx%d uint8 (%.1f MB)\n", b->batch, b->h, b->w, b->c, total / 1e6);
}

static inline int bu_cmp_float(const void *x, const void *y) {
  float a = *(const float *)x, c = *(const float *)y;
  return (a > c) - (a < c);
}

/* Times `call(b, user)` (one batch; it returns non-zero on failure, with b->err set):
 * 3 warm-up calls, then 20 timed ones; prints the RESULT line. `bytes`: what an ideal
 * implementation moves per batch. Returns the median in ms (-1 on failure). */
static inline double bu_time(bu_bench *b, const char *name, double bytes,
                             int (*call)(bu_bench *, void *), void *user) {
  enum { RUNS = 20 };
  float ms[RUNS];
  for (int r = -3; r < RUNS; r++) {
    b->api->event_record(b->ctx, b->ev0, b->stream, b->err, sizeof b->err);
    if (call(b, user)) {
      printf("RESULT op %s: FAILED (%s)\n", name, b->err);
      return -1;
    }
    b->api->event_record(b->ctx, b->ev1, b->stream, b->err, sizeof b->err);
    if (b->api->event_sync(b->ctx, b->ev1, b->err, sizeof b->err)) {
      printf("RESULT op %s: FAILED (%s)\n", name, b->err);
      return -1;
    }
    if (r >= 0) b->api->event_elapsed(b->ctx, b->ev0, b->ev1, &ms[r], b->err, sizeof b->err);
  }
  qsort(ms, RUNS, sizeof(float), bu_cmp_float);
  double med = ms[RUNS / 2];
  const char *env = getenv("STK_HBM_GBPS");
  double peak = env ? atof(env) : 3350.0, gbps = bytes / (med * 1e-3) / 1e9;
  printf(
      "RESULT op %s batch %d: median %.3f ms (min %.3f) = %.0f img/s; %.1f MB moved -> %.0f GB/s = "
      "%.0f%% of "
      "HBM\n",
      name, b->batch, med, ms[0], b->batch / (med * 1e-3), bytes / 1e6, gbps, 100.0 * gbps / peak);
  fflush(stdout);
  return med;
}

static inline void bu_close(bu_bench *b) {
  b->api->device_free(b->ctx, b->images, b->stream, b->err, sizeof b->err);
  b->api->device_free(b->ctx, b->scratch, b->stream, b->err, sizeof b->err);
  b->api->event_destroy(b->ctx, b->ev0);
  b->api->event_destroy(b->ctx, b->ev1);
  b->api->close(b->ctx);
}

#endif
