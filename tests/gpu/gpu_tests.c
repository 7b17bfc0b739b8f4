/*
 * gpu_tests: the GPU test program and parity harness (runs on a GPU machine only; see
 * scripts/gpu-check.sh). It loads libstoker_cuda.so the way the CPU library does (dlopen
 * + stk_cuda_get_api) and checks, against the CPU implementations in the stoker library
 * called directly:
 *   runtime   device, pools, copies, events, stats, error messages (no aborts)
 *   resample  resize / the fused crop-resize-mirror-normalise-cast on the bundled photos
 *             with random windows, sizes, filters, types, batched with per-sample
 *             parameters: uint8 within 1, float32 within 1e-5 of the data's scale,
 *             float16 within 1 ulp (+ the float32 tolerance); fused-quantized within
 *             one input level
 *   cmn       crop_mirror_normalize (exact), crop (exact), flip (exact), cast (exact)
 *   decode    nvJPEG (hardware and hybrid paths, ROI, gray) against the CPU decoder;
 *             header classification ahead and idle destinations against decode_batch's
 *             own parsing (byte-identical); host bytes overwritten once the caller's
 *             stream passed decode_batch's work (byte-identical), and as it returns
 *             (reported only: nvJPEG may read them later);
 *             differences measured and reported; fallbacks for PNG / CMYK / progressive /
 *             truncated files reported
 *   png       the GPU PNG decoder (api_png.h) on the photos' PNGs and the fuzz corpora's
 *             PNGs (every colour type, depth, interlacing) and bit-flipped copies, in
 *             RGB / BGR / GRAY, whole and random regions, in batches: per-sample status
 *             equal to the CPU run of the same routines (stk__png_decode_emulated) and
 *             pixels byte-identical to it and to libspng
 * usage: gpu_tests [--small] [--no-bad-inputs] [--lib PATH] [--dataset DIR] [--extra DIR]
 *                  [sections...]
 * Exit status 0 when every check passed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <zlib.h>

#include "ops/png_plan.h"
#include "cuda/api_png.h"
#include "gpu_testutil.h"

static const stk_gpu_api *G;
static stk_gpu_ctx *ctx;
static char err[STK_GPU_ERRLEN];
static int failures;
static int small_run;
static int only_pass = -1; /* --decode-pass K */
static int no_bad_inputs;  /* --no-bad-inputs: skip the corrupt / unusual files */
static uintptr_t S0;

#define CHECK(cond, ...)                            \
  do {                                              \
    if (!(cond)) {                                  \
      failures++;                                   \
      printf("  FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                          \
      printf("\n");                                 \
    }                                               \
  } while (0)
#define GOK(call)                                                                  \
  do {                                                                             \
    err[0] = 0;                                                                    \
    int rc_ = (call);                                                              \
    if (rc_ != 0) {                                                                \
      failures++;                                                                  \
      printf("  FAIL %s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, rc_, err); \
    }                                                                              \
  } while (0)

static void *dev_upload(const void *host, size_t bytes) {
  void *d = NULL;
  GOK(G->device_alloc(ctx, bytes, S0, &d, err, sizeof err));
  GOK(G->memcpy_async(ctx, d, host, bytes, S0, err, sizeof err));
  return d;
}

static void *dev_poison(size_t bytes) {
  void *d = NULL;
  GOK(G->device_alloc(ctx, bytes, S0, &d, err, sizeof err));
  GOK(G->memset_async(ctx, d, 0xA5, bytes, S0, err, sizeof err)); /* unwritten: visible */
  return d;
}

static void dev_download(void *host, const void *dev, size_t bytes) {
  GOK(G->memcpy_async(ctx, host, dev, bytes, S0, err, sizeof err));
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
}

/* Whether two device buffers hold the same bytes. */
static bool same_device_bytes(const void *a, const void *b, size_t bytes) {
  uint8_t *x = (uint8_t *)malloc(bytes), *y = (uint8_t *)malloc(bytes);
  dev_download(x, a, bytes);
  dev_download(y, b, bytes);
  bool same = memcmp(x, y, bytes) == 0;
  free(x);
  free(y);
  return same;
}

/* The stored size of a JPEG as nvJPEG reads its header; 64 x 64 when it cannot. */
static void jpeg_dims(const tu_file *f, int *w, int *h) {
  stk_gpu_jpeg_info info;
  *w = *h = 64;
  if (G->jpeg_info(ctx, f->data, f->size, &info, err, sizeof err) == 0)
    *w = info.width, *h = info.height;
}

/* ---------------------------------------------------------------------------------- */
/* runtime                                                                            */
/* ---------------------------------------------------------------------------------- */

static void test_runtime(void) {
  printf("[runtime]\n");
  stk_gpu_ctx *bad = NULL;
  stk_gpu_open_opts o;
  memset(&o, 0, sizeof o);
  o.device = 99;
  int rc = G->open(&o, &bad, err, sizeof err);
  CHECK(rc == STK_ERR_INVALID_ARGUMENT && bad == NULL && strstr(err, "device 99"),
        "open(device 99) -> %d '%s'", rc, err);
  printf("  open(device 99): %s\n", err);
  stk_gpu_stats st0, st1;
  GOK(G->stats(ctx, &st0, err, sizeof err));
  /* device memory: allocate, write, read back through pinned memory */
  size_t n = 10 << 20;
  uint8_t *pin = NULL, *back = NULL;
  GOK(G->pinned_alloc(ctx, n, (void **)&pin, err, sizeof err));
  GOK(G->pinned_alloc(ctx, n, (void **)&back, err, sizeof err));
  for (size_t i = 0; i < n; i++) pin[i] = (uint8_t)(i * 7 + 3);
  void *d = NULL;
  GOK(G->device_alloc(ctx, n, S0, &d, err, sizeof err));
  void *ev0 = NULL, *ev1 = NULL;
  GOK(G->event_create(ctx, 1, &ev0, err, sizeof err));
  GOK(G->event_create(ctx, 1, &ev1, err, sizeof err));
  GOK(G->event_record(ctx, ev0, S0, err, sizeof err));
  GOK(G->memcpy_async(ctx, d, pin, n, S0, err, sizeof err));
  /* the copy stream orders after the compute stream through an event */
  uintptr_t s1 = G->stream(ctx, STK_GPU_STREAM_COPY);
  GOK(G->event_record(ctx, ev1, S0, err, sizeof err));
  GOK(G->stream_wait_event(ctx, s1, ev1, err, sizeof err));
  GOK(G->memcpy_async(ctx, back, d, n, s1, err, sizeof err));
  GOK(G->stream_sync(ctx, s1, err, sizeof err));
  CHECK(memcmp(pin, back, n) == 0, "round trip through device memory differs");
  float ms = -1;
  GOK(G->event_elapsed(ctx, ev0, ev1, &ms, err, sizeof err));
  printf("  H2D 10 MiB from pinned: %.3f ms (%.1f GB/s)\n", ms, n / (ms * 1e6));
  int done = 0;
  GOK(G->event_query(ctx, ev1, &done, err, sizeof err));
  CHECK(done == 1, "event not complete after a sync");
  GOK(G->device_free(ctx, d, S0, err, sizeof err));
  uintptr_t ss = S0;
  GOK(G->pinned_free(ctx, pin, &ss, err, sizeof err));
  GOK(G->pinned_free(ctx, back, NULL, err, sizeof err));
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  GOK(G->stats(ctx, &st1, err, sizeof err));
  CHECK(st1.device_in_use == st0.device_in_use, "device memory in use %lld -> %lld",
        (long long)st0.device_in_use, (long long)st1.device_in_use);
  CHECK(st1.pinned_peak >= (int64_t)(2 * n), "pinned peak %lld", (long long)st1.pinned_peak);
  /* the pool reuses: a second allocation of the same size does not grow reserved memory */
  GOK(G->device_alloc(ctx, n, S0, &d, err, sizeof err));
  GOK(G->device_free(ctx, d, S0, err, sizeof err));
  stk_gpu_stats st2;
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  GOK(G->stats(ctx, &st2, err, sizeof err));
  CHECK(st2.device_reserved <= st1.device_reserved, "pool grew on reuse: %lld -> %lld",
        (long long)st1.device_reserved, (long long)st2.device_reserved);
  GOK(G->trim(ctx, 0, err, sizeof err));
  /* errors are reported, never fatal */
  void *huge = NULL;
  rc = G->device_alloc(ctx, (size_t)1 << 50, S0, &huge, err, sizeof err);
  CHECK(rc == STK_ERR_OUT_OF_MEMORY && huge == NULL, "1 PiB allocation -> %d", rc);
  printf("  1 PiB: %s\n", err);
  stk_gpu_resample_args a;
  memset(&a, 0, sizeof a);
  a.channels = 5;
  a.in_dtype = STK_DTYPE_UINT8;
  a.out_dtype = STK_DTYPE_UINT8;
  stk_gpu_resample_sample s;
  memset(&s, 0, sizeof s);
  rc = stk_gpu_run_resample(G, ctx, 1, &s, &a, S0, err, sizeof err);
  CHECK(rc == STK_ERR_UNSUPPORTED, "5 channels -> %d", rc);
  printf("  5 channels: %s\n", err);
  a.channels = 3;
  rc = stk_gpu_run_resample(G, ctx, 1, &s, &a, S0, err, sizeof err);
  CHECK(rc == STK_ERR_INVALID_ARGUMENT && strstr(err, "sample 0"), "NULL sample -> %d", rc);
  printf("  NULL sample: %s\n", err);
  rc = G->stats(NULL, &st2, err, sizeof err);
  CHECK(rc != 0, "stats(NULL) succeeded");
  /* after all that the context still works */
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  G->event_destroy(ctx, ev0);
  G->event_destroy(ctx, ev1);
}

/* ---------------------------------------------------------------------------------- */
/* resample parity                                                                    */
/* ---------------------------------------------------------------------------------- */

static void test_resample(const tu_photo *ph, int np) {
  printf("[resample]\n");
  int batches = small_run ? 1 : 6, per = small_run ? 3 : 24;
  for (int kind = 0; kind < 3; kind++) {
    tu_stat st[STK_DTYPE_COUNT];
    memset(st, 0, sizeof st);
    for (int b = 0; b < batches; b++) {
      stk_gpu_resample_args a;
      tu_make_args(&a, kind);
      tu_trial *t = (tu_trial *)calloc((size_t)per, sizeof *t);
      stk_gpu_resample_sample *gs = (stk_gpu_resample_sample *)calloc((size_t)per, sizeof *gs);
      for (int i = 0; i < per; i++) {
        tu_make_trial_for(&t[i], &ph[tu_int(0, np - 1)], &a);
        gs[i] = t[i].s;
        gs[i].src = dev_upload(t[i].s.src, t[i].s.src_pitch * t[i].s.src_h);
        gs[i].dst = dev_poison(t[i].out_bytes);
      }
      GOK(stk_gpu_run_resample(G, ctx, per, gs, &a, S0, err, sizeof err));
      for (int i = 0; i < per; i++) {
        void *gpu = malloc(t[i].out_bytes), *cpu = malloc(t[i].out_bytes);
        dev_download(gpu, gs[i].dst, t[i].out_bytes);
        if (tu_cpu_resample(&t[i], cpu) != 0) failures++;
        tu_check_trial(&t[i], gpu, cpu, st);
        free(gpu);
        free(cpu);
        free((void *)t[i].s.src);
        G->device_free(ctx, (void *)gs[i].src, S0, err, sizeof err);
        G->device_free(ctx, gs[i].dst, S0, err, sizeof err);
      }
      free(t);
      free(gs);
    }
    int bad = tu_report("parity", tu_kind_name[kind], st);
    CHECK(!bad, "resample %s over tolerance", tu_kind_name[kind]);
  }
}

/* ---------------------------------------------------------------------------------- */
/* crop_mirror_normalize, crop, flip, cast                                            */
/* ---------------------------------------------------------------------------------- */

static const stk_dtype cmn_outs[] = {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16, STK_DTYPE_UINT8,
                                     STK_DTYPE_INT8};

static void test_cmn(const tu_photo *ph, int np) {
  printf("[crop_mirror_normalize / crop / flip]\n");
  int batches = small_run ? 1 : 8, per = small_run ? 3 : 16;
  tu_stat cst;
  memset(&cst, 0, sizeof cst);
  for (int b = 0; b < batches; b++) {
    stk_gpu_cmn_args a;
    memset(&a, 0, sizeof a);
    a.channels = tu_rand() % 4 == 0 ? 1 : 3;
    a.out_channels = a.channels == 3 && tu_rand() % 2 ? 4 : a.channels;
    a.in_dtype = tu_rand() % 3 ? STK_DTYPE_UINT8 : STK_DTYPE_FLOAT32;
    a.out_dtype = cmn_outs[tu_int(0, 3)];
    a.planar = tu_rand() % 2;
    a.scale = tu_rand() % 2 ? 1.0 : 1.0 / 255;
    a.shift = tu_rand() % 2 ? 0.0 : 0.25;
    stk_gpu_cmn_sample *gs = (stk_gpu_cmn_sample *)calloc((size_t)per, sizeof *gs);
    void **hsrc = (void **)calloc((size_t)per, sizeof(void *));
    size_t es = stk_dtype_size(a.out_dtype);
    for (int i = 0; i < per; i++) {
      const tu_photo *p = &ph[tu_int(0, np - 1)];
      int C = a.channels;
      size_t npx = (size_t)p->h * p->w * C, isz = stk_dtype_size(a.in_dtype);
      hsrc[i] = malloc(npx * isz);
      const uint8_t *px = C == 1 ? p->gray : p->rgb;
      for (size_t k = 0; k < npx; k++) {
        if (a.in_dtype == STK_DTYPE_UINT8)
          ((uint8_t *)hsrc[i])[k] = px[k];
        else
          ((float *)hsrc[i])[k] = px[k] * 0.731f - 3.5f;
      }
      stk_gpu_cmn_sample *s = &gs[i];
      s->src_h = p->h, s->src_w = p->w, s->src_pitch = (size_t)p->w * C * isz;
      s->win_h = tu_int(1, p->h), s->win_w = tu_int(1, p->w);
      s->win_y = tu_int(-s->win_h / 3, p->h - s->win_h + s->win_h / 3);
      s->win_x = tu_int(-s->win_w / 3, p->w - s->win_w + s->win_w / 3);
      s->mirror = tu_rand() % 2;
      for (int c = 0; c < 4; c++) {
        s->mean[c] = tu_uniform(0, 200) * a.scale;
        s->stddev[c] = tu_uniform(20, 80) * a.scale * (tu_rand() % 5 == 0 ? -1 : 1);
        s->fill[c] = tu_uniform(-2, 2);
      }
      s->src = dev_upload(hsrc[i], npx * isz);
      s->dst = dev_poison((size_t)s->win_h * s->win_w * a.out_channels * es);
    }
    GOK(stk_gpu_run_cmn(G, ctx, per, gs, &a, S0, err, sizeof err));
    for (int i = 0; i < per; i++) {
      stk_gpu_cmn_sample *s = &gs[i];
      size_t n = (size_t)s->win_h * s->win_w * a.out_channels;
      void *gpu = malloc(n * es), *cpu = malloc(n * es);
      dev_download(gpu, s->dst, n * es);
      stk__image src = {hsrc[i], a.in_dtype, s->src_h, s->src_w, a.channels};
      stk__image dst = {cpu, a.out_dtype, s->win_h, s->win_w, a.out_channels};
      stk__cmn_params p;
      memset(&p, 0, sizeof p);
      p.win.y = s->win_y, p.win.x = s->win_x, p.win.h = s->win_h, p.win.w = s->win_w;
      p.mirror = s->mirror, p.planar = a.planar, p.mean = s->mean, p.stddev = s->stddev;
      p.scale = a.scale, p.shift = a.shift, p.fill = s->fill;
      size_t need = stk__cmn_scratch_size(&src, &dst);
      void *scr = malloc(need);
      if (stk__cmn(&src, &dst, &p, scr, need) != STK_OK) {
        printf("  cpu cmn: %s\n", stk_last_error());
        failures++;
      }
      free(scr);
      tu_compare(&cst, gpu, cpu, a.out_dtype, n, 0.0);
      free(gpu);
      free(cpu);
      free(hsrc[i]);
      G->device_free(ctx, (void *)s->src, S0, err, sizeof err);
      G->device_free(ctx, s->dst, S0, err, sizeof err);
    }
    free(gs);
    free(hsrc);
  }
  /* float16 comparisons add one ulp in tu_compare; demand exact equality here */
  printf("parity cmn              %9ld values: %ld differ, max |d| %g\n", cst.n, cst.differ,
         cst.max_abs);
  CHECK(cst.differ == 0, "crop_mirror_normalize differs from the CPU in %ld values", cst.differ);

  /* crop: uint8 -> uint8 / float32 / float16 with padding, exact */
  static const stk_dtype crop_outs[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16};
  long crop_n = 0, crop_diff = 0;
  for (int b = 0; b < (small_run ? 1 : 4); b++) {
    stk_gpu_crop_args a = {3, STK_DTYPE_UINT8, crop_outs[b % 3]};
    size_t es = stk_dtype_size(a.out_dtype);
    int per2 = small_run ? 2 : 8;
    stk_gpu_crop_sample *cs = (stk_gpu_crop_sample *)calloc((size_t)per2, sizeof *cs);
    const tu_photo **pp = (const tu_photo **)calloc((size_t)per2, sizeof *pp);
    double fillv[3] = {7.0, -3.0, 300.0};
    for (int i = 0; i < per2; i++) {
      const tu_photo *p = pp[i] = &ph[tu_int(0, np - 1)];
      stk_gpu_crop_sample *s = &cs[i];
      s->src_h = p->h, s->src_w = p->w, s->src_pitch = (size_t)p->w * 3;
      s->dst_h = tu_int(1, p->h + 40), s->dst_w = tu_int(1, p->w + 40);
      s->y = tu_int(-30, p->h - 1), s->x = tu_int(-30, p->w - 1);
      stk__fill_pixel(s->fill, a.out_dtype, 3, fillv, 3);
      s->src = dev_upload(p->rgb, (size_t)p->h * p->w * 3);
      s->dst = dev_poison((size_t)s->dst_h * s->dst_w * 3 * es);
    }
    GOK(stk_gpu_run_crop(G, ctx, per2, cs, &a, S0, err, sizeof err));
    for (int i = 0; i < per2; i++) {
      stk_gpu_crop_sample *s = &cs[i];
      size_t bytes = (size_t)s->dst_h * s->dst_w * 3 * es;
      uint8_t *gpu = (uint8_t *)malloc(bytes), *cpu = (uint8_t *)malloc(bytes);
      dev_download(gpu, s->dst, bytes);
      stk__image src = {pp[i]->rgb, STK_DTYPE_UINT8, s->src_h, s->src_w, 3};
      stk__image dst = {cpu, a.out_dtype, s->dst_h, s->dst_w, 3};
      stk__crop_hwc(&src, s->y, s->x, &dst, s->fill);
      crop_n += (long)bytes;
      for (size_t k = 0; k < bytes; k++) crop_diff += gpu[k] != cpu[k];
      free(gpu);
      free(cpu);
      G->device_free(ctx, (void *)s->src, S0, err, sizeof err);
      G->device_free(ctx, s->dst, S0, err, sizeof err);
    }
    free(cs);
    free(pp);
  }
  printf("parity crop             %9ld bytes: %ld differ\n", crop_n, crop_diff);
  CHECK(crop_diff == 0, "crop differs from the CPU in %ld bytes", crop_diff);

  /* flip: HWC uint8 (block = 3 bytes) and CHW float32 (block = 4 bytes), exact */
  long flip_n = 0, flip_diff = 0;
  for (int mode = 0; mode < 2; mode++) {
    int per2 = np;
    stk_gpu_flip_sample *fs = (stk_gpu_flip_sample *)calloc((size_t)per2, sizeof *fs);
    size_t esize = mode == 0 ? 1 : 4;
    for (int i = 0; i < per2; i++) {
      const tu_photo *p = &ph[i];
      stk_gpu_flip_sample *s = &fs[i];
      if (mode == 0)
        s->outer = 1, s->h = p->h, s->mid = 1, s->w = p->w, s->inner = 3;
      else
        s->outer = 3, s->h = p->h, s->mid = 1, s->w = p->w, s->inner = 1;
      s->horizontal = i % 2 == 0 || i % 3 == 0;
      s->vertical = i % 2 == 1 || i % 3 == 0;
      size_t bytes = (size_t)p->h * p->w * 3 * esize;
      void *h = malloc(bytes);
      for (size_t k = 0; k < (size_t)p->h * p->w * 3; k++) {
        if (mode == 0)
          ((uint8_t *)h)[k] = p->rgb[k];
        else
          ((float *)h)[k] = p->rgb[k] * 1.5f + 0.25f;
      }
      s->src = dev_upload(h, bytes);
      s->dst = dev_poison(bytes);
      free(h);
    }
    GOK(stk_gpu_run_flip(G, ctx, per2, fs, &(stk_gpu_elem_args){esize}, S0, err, sizeof err));
    for (int i = 0; i < per2; i++) {
      stk_gpu_flip_sample *s = &fs[i];
      size_t bytes = (size_t)(s->outer * s->h * s->mid * s->w * s->inner) * esize;
      uint8_t *src = (uint8_t *)malloc(bytes), *gpu = (uint8_t *)malloc(bytes),
              *cpu = (uint8_t *)malloc(bytes);
      dev_download(src, s->src, bytes);
      dev_download(gpu, s->dst, bytes);
      stk__flip(src, cpu, esize, s->outer, s->h, s->mid, s->w, s->inner, s->horizontal != 0,
                s->vertical != 0);
      flip_n += (long)bytes;
      for (size_t k = 0; k < bytes; k++) flip_diff += gpu[k] != cpu[k];
      free(src);
      free(gpu);
      free(cpu);
      G->device_free(ctx, (void *)s->src, S0, err, sizeof err);
      G->device_free(ctx, s->dst, S0, err, sizeof err);
    }
    free(fs);
  }
  printf("parity flip             %9ld bytes: %ld differ\n", flip_n, flip_diff);
  CHECK(flip_diff == 0, "flip differs from the CPU in %ld bytes", flip_diff);
}

/* Random bytes of a dtype, with special values mixed in for the float types. */
static void fill_random(void *p, stk_dtype t, size_t n) {
  static const double specials[] = {0.0,     -0.0,    0.5,    -0.5,     1.5,       2.5,
                                    -2.5,    127.5,   128.5,  255.5,    -128.5,    65504.0,
                                    70000.0, 1e10,    -1e10,  3.4e38,   1e-8,      4294967296.0,
                                    9.3e18,  -9.3e18, 1.9e19, INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < n; i++) {
    double v;
    int pick = tu_rand() % 8;
    if (pick == 0)
      v = specials[tu_rand() % (sizeof specials / sizeof specials[0])];
    else if (pick < 4)
      v = tu_uniform(-300, 300);
    else
      v = tu_uniform(-70000, 70000);
    switch (t) {
      case STK_DTYPE_FLOAT16:
        ((uint16_t *)p)[i] = stk__f32_to_f16((float)v);
        break;
      case STK_DTYPE_FLOAT32:
        ((float *)p)[i] = (float)v;
        break;
      case STK_DTYPE_FLOAT64:
        ((double *)p)[i] = v;
        break;
      default: {
        uint8_t *b = (uint8_t *)p + i * stk_dtype_size(t);
        for (size_t k = 0; k < stk_dtype_size(t); k++) b[k] = (uint8_t)tu_rand();
        if (t == STK_DTYPE_BOOL) b[0] = tu_rand() % 3 == 0 ? 0 : b[0];
      }
    }
  }
}

static int is_nan_of(const void *p, stk_dtype t, size_t i) {
  if (t == STK_DTYPE_FLOAT16) return isnan(stk__f16_to_f32(((const uint16_t *)p)[i]));
  if (t == STK_DTYPE_FLOAT32) return isnan(((const float *)p)[i]);
  if (t == STK_DTYPE_FLOAT64) return isnan(((const double *)p)[i]);
  return 0;
}

static void test_cast(void) {
  printf("[cast]\n");
  long n_all = 0, diff_all = 0, pairs = 0;
  size_t count = small_run ? 1000 : 100000;
  for (int st = 0; st < STK_DTYPE_COUNT; st++)
    for (int dt = 0; dt < STK_DTYPE_COUNT; dt++) {
      size_t is = stk_dtype_size((stk_dtype)st), os = stk_dtype_size((stk_dtype)dt);
      void *h = malloc(count * is), *gpu = malloc(count * os), *cpu = malloc(count * os);
      fill_random(h, (stk_dtype)st, count);
      stk_gpu_cast_sample s[2];
      s[0].src = dev_upload(h, count * is);
      s[0].dst = dev_poison(count * os);
      s[0].count = (int64_t)count;
      s[1].src = s[0].src;
      s[1].dst = dev_poison(os * 10);
      s[1].count = 10;
      GOK(stk_gpu_run_cast(G, ctx, 2, s, &(stk_gpu_io_args){(stk_dtype)st, (stk_dtype)dt}, S0, err,
                           sizeof err));
      dev_download(gpu, s[0].dst, count * os);
      stk__convert(cpu, (stk_dtype)dt, h, (stk_dtype)st, count);
      long diff = 0;
      for (size_t i = 0; i < count; i++) {
        if (is_nan_of(gpu, (stk_dtype)dt, i) && is_nan_of(cpu, (stk_dtype)dt, i)) continue;
        if (memcmp((char *)gpu + i * os, (char *)cpu + i * os, os) != 0) {
          if (diff < 3)
            printf("  cast %s -> %s element %zu differs\n", stk_dtype_name((stk_dtype)st),
                   stk_dtype_name((stk_dtype)dt), i);
          diff++;
        }
      }
      n_all += (long)count;
      diff_all += diff;
      pairs++;
      G->device_free(ctx, (void *)s[0].src, S0, err, sizeof err);
      G->device_free(ctx, s[0].dst, S0, err, sizeof err);
      G->device_free(ctx, s[1].dst, S0, err, sizeof err);
      free(h);
      free(gpu);
      free(cpu);
    }
  printf("parity cast             %ld dtype pairs, %ld values: %ld differ\n", pairs, n_all,
         diff_all);
  CHECK(diff_all == 0, "cast differs from the CPU in %ld values", diff_all);
}

/* ---------------------------------------------------------------------------------- */
/* decode                                                                             */
/* ---------------------------------------------------------------------------------- */

static const char *status_name(int s) {
  return s == STK_GPU_DECODE_OK ? "ok" : s == STK_GPU_DECODE_FALLBACK ? "fallback" : "failed";
}
static const char *backend_name(int b) {
  return b == STK_GPU_BACKEND_HARDWARE     ? "hardware"
         : b == STK_GPU_BACKEND_HYBRID     ? "hybrid"
         : b == STK_GPU_BACKEND_GPU_HYBRID ? "gpu_hybrid"
                                           : "-";
}

/* Decodes files with hw_load and colour; compares decoded pixels with the CPU decoder
 * (roi: a random region each, compared with the region of the CPU's full decode). */
static void decode_pass(tu_file *f, int n, double load, int color, int roi, int verbose) {
  int C = color == STK_GPU_COLOR_GRAY ? 1 : 3;
  stk_gpu_decode_in *in = (stk_gpu_decode_in *)calloc((size_t)n, sizeof *in);
  stk_gpu_decode_out *out = (stk_gpu_decode_out *)calloc((size_t)n, sizeof *out);
  int *hh = (int *)calloc((size_t)n, sizeof(int)), *ww = (int *)calloc((size_t)n, sizeof(int));
  for (int i = 0; i < n; i++) {
    int w, h;
    jpeg_dims(&f[i], &w, &h);
    ww[i] = w, hh[i] = h;
    in[i].data = f[i].data;
    in[i].size = f[i].size;
    if (roi && w > 8 && h > 8) {
      in[i].roi_w = tu_int(1, w), in[i].roi_h = tu_int(1, h);
      in[i].roi_x = tu_int(0, w - in[i].roi_w), in[i].roi_y = tu_int(0, h - in[i].roi_h);
      w = in[i].roi_w, h = in[i].roi_h;
    }
    in[i].dst_pitch = (size_t)w * C + 64; /* a pitch wider than the row */
    in[i].dst = (uint8_t *)dev_poison(in[i].dst_pitch * h);
  }
  stk_gpu_decode_opts o = {color, load};
  GOK(G->decode_batch(ctx, n, in, out, &o, S0, err, sizeof err));
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  double sum = 0;
  long cnt = 0;
  int maxd = 0, n_ok = 0, by_backend[4] = {0}, roi_modes[3] = {0};
  for (int i = 0; i < n; i++) {
    int h = in[i].roi_w ? in[i].roi_h : hh[i], w = in[i].roi_w ? in[i].roi_w : ww[i];
    if (verbose)
      printf("  %-40s %s (%s, nvjpeg %d, roi %d)\n", strrchr(f[i].path, '/') + 1,
             status_name(out[i].status), backend_name(out[i].backend), out[i].nvjpeg_status,
             out[i].roi_mode);
    if (out[i].status != STK_GPU_DECODE_OK || verbose) { /* unusual inputs: status only */
      n_ok += out[i].status == STK_GPU_DECODE_OK;
      G->device_free(ctx, in[i].dst, S0, err, sizeof err);
      continue;
    }
    n_ok++;
    by_backend[out[i].backend]++;
    roi_modes[out[i].roi_mode]++;
    int ch = 0, cw = 0;
    uint8_t *ref = tu_cpu_decode(f[i].data, f[i].size, f[i].path, C == 1, &ch, &cw);
    uint8_t *gpu = (uint8_t *)malloc(in[i].dst_pitch * h);
    dev_download(gpu, in[i].dst, in[i].dst_pitch * h);
    if (ref && ch == hh[i] && cw == ww[i]) {
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w * C; x++) {
          int a = gpu[(size_t)y * in[i].dst_pitch + x];
          int b = ref[((size_t)(y + in[i].roi_y) * cw + in[i].roi_x) * C + x];
          int d = abs(a - b);
          sum += d;
          cnt++;
          if (d > maxd) maxd = d;
        }
    } else {
      CHECK(0, "%s: CPU decode %dx%d vs nvJPEG header %dx%d", f[i].path, ch, cw, hh[i], ww[i]);
    }
    free(ref);
    free(gpu);
    G->device_free(ctx, in[i].dst, S0, err, sizeof err);
  }
  printf(
      "decode %-4s load %.2f%s: %3d/%3d decoded (hw %d, hybrid %d, gpu_hybrid %d; roi by "
      "nvjpeg %d, cropped %d): |gpu - libjpeg-turbo islow| mean %.3f, max %d\n",
      C == 1 ? "gray" : "rgb", load, roi ? " roi" : "", n_ok, n, by_backend[1], by_backend[2],
      by_backend[3], roi_modes[1], roi_modes[2], cnt ? sum / cnt : 0.0, maxd);
  CHECK(cnt == 0 || sum / cnt < 8.0, "mean decode difference %.3f is implausible", sum / cnt);
  free(in);
  free(out);
  free(hh);
  free(ww);
}

/* Classification ahead: decode_classify on three threads, for batch B, while batch A
 * (the same files) decodes with decode_batch's own parsing and the fence; then B decodes
 * with those verdicts into idle destinations (device_alloc_idle, dst_idle). B must get
 * the same verdicts, sizes and bytes as A. */
typedef struct {
  tu_file *f;
  stk_gpu_decode_class *cls;
  int n, next, failures;
  pthread_mutex_t m;
} classify_job;

static void *classify_worker(void *arg) {
  classify_job *j = (classify_job *)arg;
  char e[STK_GPU_ERRLEN] = "";
  for (;;) {
    pthread_mutex_lock(&j->m);
    int i = j->next++;
    pthread_mutex_unlock(&j->m);
    if (i >= j->n) return NULL;
    if (G->decode_classify(ctx, j->f[i].data, j->f[i].size, 0, 0, 0, 0, &j->cls[i], e, sizeof e) !=
        0) {
      pthread_mutex_lock(&j->m);
      j->failures++;
      printf("  FAIL decode_classify %s: %s\n", j->f[i].path, e);
      pthread_mutex_unlock(&j->m);
    }
  }
}

static void decode_ahead_pass(tu_file *f, int n, double load) {
  stk_gpu_decode_in *a = (stk_gpu_decode_in *)calloc((size_t)n, sizeof *a),
                    *b = (stk_gpu_decode_in *)calloc((size_t)n, sizeof *b);
  stk_gpu_decode_out *oa = (stk_gpu_decode_out *)calloc((size_t)n, sizeof *oa),
                     *ob = (stk_gpu_decode_out *)calloc((size_t)n, sizeof *ob);
  stk_gpu_decode_class *cls = (stk_gpu_decode_class *)calloc((size_t)n, sizeof *cls);
  size_t *bytes = (size_t *)calloc((size_t)n, sizeof(size_t));
  for (int i = 0; i < n; i++) {
    int w, h;
    jpeg_dims(&f[i], &w, &h);
    a[i].data = b[i].data = f[i].data;
    a[i].size = b[i].size = f[i].size;
    a[i].dst_pitch = b[i].dst_pitch = (size_t)w * 3;
    bytes[i] = a[i].dst_pitch * (size_t)h;
    a[i].dst = (uint8_t *)dev_poison(bytes[i]);
    GOK(G->device_alloc_idle(ctx, bytes[i], S0, (void **)&b[i].dst, err, sizeof err));
    b[i].cls = &cls[i];
  }
  classify_job job = {f, cls, n, 0, 0, PTHREAD_MUTEX_INITIALIZER};
  pthread_t th[3];
  for (int t = 0; t < 3; t++) pthread_create(&th[t], NULL, classify_worker, &job);
  stk_gpu_decode_opts oo = {STK_GPU_COLOR_RGB, load, 0};
  GOK(G->decode_batch(ctx, n, a, oa, &oo, S0, err, sizeof err));
  for (int t = 0; t < 3; t++) pthread_join(th[t], NULL);
  failures += job.failures;
  stk_gpu_decode_opts oi = {STK_GPU_COLOR_RGB, load, 1};
  GOK(G->decode_batch(ctx, n, b, ob, &oi, S0, err, sizeof err));
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  int same = 0, decoded = 0;
  for (int i = 0; i < n; i++) {
    CHECK(oa[i].status == ob[i].status && oa[i].width == ob[i].width &&
              oa[i].height == ob[i].height && oa[i].components == ob[i].components,
          "%s: classified ahead %s %dx%dx%d, by decode_batch %s %dx%dx%d", f[i].path,
          status_name(ob[i].status), ob[i].width, ob[i].height, ob[i].components,
          status_name(oa[i].status), oa[i].width, oa[i].height, oa[i].components);
    CHECK((cls[i].status == STK_GPU_DECODE_OK) == (oa[i].status != STK_GPU_DECODE_FALLBACK),
          "%s: decode_classify says %s, decode_batch %s", f[i].path, status_name(cls[i].status),
          status_name(oa[i].status));
    if (oa[i].status == STK_GPU_DECODE_OK && ob[i].status == STK_GPU_DECODE_OK) {
      decoded++;
      bool equal = same_device_bytes(a[i].dst, b[i].dst, bytes[i]);
      same += equal;
      CHECK(equal, "%s: decoded with the verdict ahead into idle memory, the bytes differ",
            f[i].path);
    }
    G->device_free(ctx, a[i].dst, S0, err, sizeof err);
    G->device_free_idle(ctx, b[i].dst, S0, err, sizeof err);
  }
  printf(
      "decode ahead load %.2f: %d/%d classified on 3 threads during a decode; %d/%d decoded "
      "identical to decode_batch's own parsing\n",
      load, n - job.failures, n, same, decoded);
  free(a), free(b), free(oa), free(ob), free(cls), free(bytes);
}

/* The pipeline page-locks the files' bytes and recycles a batch's blocks once the compute
 * stream has passed an event recorded after the batch's work (executor.c, retire_job).
 * Decode from pinned copies in four calls back to back, as batches follow each other,
 * with an event on the caller's stream after each; overwrite each call's copies once its
 * event has completed (the later calls still in flight), then compare with a decode of
 * untouched bytes: they must be identical. `at_return`: overwrite the copies the moment
 * each call returns instead, and only report how many images changed. nvJPEG's hardware
 * path may read the bytes after its call has returned (2 of 11 images changed under
 * compute-sanitizer, 2026-11-25): what the pipeline once assumed it could not. */
static void decode_input_lifetime_pass(tu_file *f, int n, double load, bool at_return) {
  stk_gpu_decode_in *a = (stk_gpu_decode_in *)calloc((size_t)n, sizeof *a),
                    *b = (stk_gpu_decode_in *)calloc((size_t)n, sizeof *b);
  stk_gpu_decode_out *oa = (stk_gpu_decode_out *)calloc((size_t)n, sizeof *oa),
                     *ob = (stk_gpu_decode_out *)calloc((size_t)n, sizeof *ob);
  size_t *bytes = (size_t *)calloc((size_t)n, sizeof(size_t));
  for (int i = 0; i < n; i++) {
    int w, h;
    jpeg_dims(&f[i], &w, &h);
    void *pin = NULL;
    GOK(G->pinned_alloc(ctx, f[i].size, &pin, err, sizeof err));
    memcpy(pin, f[i].data, f[i].size);
    a[i].data = f[i].data, b[i].data = (const uint8_t *)pin;
    a[i].size = b[i].size = f[i].size;
    a[i].dst_pitch = b[i].dst_pitch = (size_t)w * 3;
    bytes[i] = a[i].dst_pitch * (size_t)h;
    GOK(G->device_alloc_idle(ctx, bytes[i], S0, (void **)&a[i].dst, err, sizeof err));
    GOK(G->device_alloc_idle(ctx, bytes[i], S0, (void **)&b[i].dst, err, sizeof err));
  }
  stk_gpu_decode_opts o = {STK_GPU_COLOR_RGB, load, 1};
  GOK(G->decode_batch(ctx, n, a, oa, &o, S0, err, sizeof err));
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  void *done[4] = {NULL, NULL, NULL, NULL};
  for (int c = 0; c < 4; c++) {
    int lo = n * c / 4, hi = n * (c + 1) / 4;
    if (hi == lo) continue;
    GOK(G->decode_batch(ctx, hi - lo, b + lo, ob + lo, &o, S0, err, sizeof err));
    if (at_return) {
      for (int i = lo; i < hi; i++)
        memset((void *)b[i].data, 0x5A, b[i].size); /* the pool reusing the blocks */
    } else {
      GOK(G->event_create(ctx, 0, &done[c], err, sizeof err));
      GOK(G->event_record(ctx, done[c], S0, err, sizeof err));
    }
  }
  for (int c = 0; c < 4; c++) {
    if (!done[c]) continue;
    GOK(G->event_sync(ctx, done[c], err, sizeof err));
    for (int i = n * c / 4; i < n * (c + 1) / 4; i++) memset((void *)b[i].data, 0x5A, b[i].size);
    G->event_destroy(ctx, done[c]);
  }
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  int same = 0, decoded = 0;
  for (int i = 0; i < n; i++) {
    if (oa[i].status == STK_GPU_DECODE_OK && ob[i].status == STK_GPU_DECODE_OK) {
      decoded++;
      bool equal = same_device_bytes(a[i].dst, b[i].dst, bytes[i]);
      same += equal;
      if (!at_return)
        CHECK(equal,
              "%s: the bytes were overwritten after the caller's stream passed the decode and the "
              "image "
              "changed: nvJPEG read them later still",
              f[i].path);
    }
    G->device_free_idle(ctx, a[i].dst, S0, err, sizeof err);
    G->device_free_idle(ctx, b[i].dst, S0, err, sizeof err);
    G->pinned_free(ctx, (void *)b[i].data, NULL, err, sizeof err);
  }
  printf(
      "decode input lifetime load %.2f: %d/%d decoded from pinned bytes overwritten %s, identical "
      "to "
      "untouched%s\n",
      load, same, decoded,
      at_return ? "as decode_batch returned" : "once the stream passed the decode",
      at_return ? " (reported, not checked: nvJPEG may read them later)" : "");
  free(a), free(b), free(oa), free(ob), free(bytes);
}

static void test_decode(const tu_photo *ph, int np, const char *dataset, const char *extra) {
  printf("[decode]\n");
  stk_gpu_device_info di;
  GOK(G->device_info(ctx, &di, err, sizeof err));
  if (!di.has_nvjpeg) {
    printf("  no nvJPEG: skipped\n");
    failures++;
    return;
  }
  int cap = 600;
  tu_file *f = (tu_file *)calloc((size_t)cap, sizeof *f);
  int n = 0;
  for (int i = 0; i < np; i++)
    if (ph[i].is_jpeg) {
      snprintf(f[n].path, sizeof f[n].path, "photos/%s", ph[i].name);
      f[n].data = ph[i].file;
      f[n].size = ph[i].file_size;
      n++;
    }
  int nphotos = n;
  if (dataset) n += tu_list_files(dataset, f + n, small_run ? 8 : 256, 0);
    /* only_pass >= 0 (--decode-pass K): that pass alone, so slow tools (racecheck) can run
     * the passes side by side */
#define DECODE_PASS(k, call) \
  if (only_pass < 0 || only_pass == (k)) call
  DECODE_PASS(0, decode_pass(f, n, 1.0, STK_GPU_COLOR_RGB, 0, 0));
  DECODE_PASS(1, decode_pass(f, n, 0.0, STK_GPU_COLOR_RGB, 0, 0));
  DECODE_PASS(2, decode_pass(f, n, 0.5, STK_GPU_COLOR_GRAY, 0, 0));
  DECODE_PASS(3, decode_pass(f, n, 1.0, STK_GPU_COLOR_RGB, 1, 0));
  DECODE_PASS(4, decode_pass(f, n, 0.0, STK_GPU_COLOR_RGB, 1, 0));
  DECODE_PASS(5, decode_ahead_pass(f, n, 1.0));
  DECODE_PASS(6, decode_ahead_pass(f, n, 0.0));
  DECODE_PASS(7, decode_input_lifetime_pass(f, n, 1.0, false));
  DECODE_PASS(8, decode_input_lifetime_pass(f, n, 0.0, false));
  DECODE_PASS(9, decode_input_lifetime_pass(f, n, 1.0, true));
#undef DECODE_PASS
  if (no_bad_inputs || only_pass >= 0) {
    free(f);
    return;
  }
  /* bad and unusual inputs: every one must come back with a status, none may crash */
  int m = 0;
  tu_file *g = (tu_file *)calloc(64, sizeof *g);
  for (int i = 0; i < np && m < 2; i++)
    if (!ph[i].is_jpeg) {
      snprintf(g[m].path, sizeof g[m].path, "photos/%s", ph[i].name);
      g[m].data = ph[i].file;
      g[m].size = ph[i].file_size;
      m++;
    }
  for (int i = 0; i < nphotos && i < 2; i++) { /* truncated to 60% and to 300 bytes */
    snprintf(g[m].path, sizeof g[m].path, "x/truncated60-%s", strrchr(f[i].path, '/') + 1);
    g[m].data = f[i].data;
    g[m].size = f[i].size * 6 / 10;
    m++;
    snprintf(g[m].path, sizeof g[m].path, "x/truncated300-%s", strrchr(f[i].path, '/') + 1);
    g[m].data = f[i].data;
    g[m].size = 300;
    m++;
  }
  if (extra) m += tu_list_files(extra, g + m, 64 - m, 0);
  printf("  unusual inputs (hw_load 1):\n");
  decode_pass(g, m, 1.0, STK_GPU_COLOR_RGB, 0, 1);
  decode_ahead_pass(g, m, 1.0);
  free(f);
  free(g);
}

/* ---------------------------------------------------------------------------------- */
/* png                                                                                */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  char name[1024];
  int damaged;
  uint8_t *data; /* owned copy (mutated ones differ from the file) */
  size_t size;
  stk__png_plan plan;
  uint8_t *z;
} png_case;

/* Flips one bit in the second half of the first IDAT payload and fixes the CRC, so the
 * planner takes the file and the device finds the damage (or decodes other pixels,
 * exactly as the CPU run does). */
static void png_damage(uint8_t *d, size_t n, uint32_t seed) {
  for (size_t pos = 8; pos <= n && n - pos >= 12;) {
    uint32_t len = (uint32_t)d[pos] << 24 | d[pos + 1] << 16 | d[pos + 2] << 8 | d[pos + 3];
    if (len > n - pos - 12) return;
    if (!memcmp(d + pos + 4, "IDAT", 4) && len > 4) {
      d[pos + 8 + len / 2 + seed % (len - len / 2)] ^= (uint8_t)(1u << (seed % 8));
      uint32_t c = (uint32_t)crc32(0, d + pos + 4, len + 4);
      d[pos + 8 + len] = (uint8_t)(c >> 24), d[pos + 9 + len] = (uint8_t)(c >> 16);
      d[pos + 10 + len] = (uint8_t)(c >> 8), d[pos + 11 + len] = (uint8_t)c;
      return;
    }
    pos += 12 + len;
  }
}

static int png_collect(const tu_photo *ph, int np, png_case *c, int cap) {
  int n = 0;
  tu_file *f = (tu_file *)calloc(400, sizeof *f);
  int nf = 0;
  char dir[1024];
  const char *corpora[] = {"tests/fuzz/corpus/fuzz_png", "tests/fuzz/corpus/fuzz_png_gpu"};
  for (int k = 0; k < 2; k++) {
    snprintf(dir, sizeof dir, "%s/%s", STK_SOURCE_DIR, corpora[k]);
    nf += tu_list_files(dir, f + nf, 200, 0);
  }
  for (int i = 0; i < np + nf && n < cap; i++) {
    const uint8_t *d = i < np ? ph[i].file : f[i - np].data;
    size_t size = i < np ? ph[i].file_size : f[i - np].size;
    if (i < np && ph[i].is_jpeg) continue;
    for (int damaged = 0; damaged < 2 && n < cap; damaged++) {
      png_case *p = &c[n];
      p->data = (uint8_t *)malloc(size);
      memcpy(p->data, d, size);
      p->size = size;
      snprintf(p->name, sizeof p->name, "%s%s", i < np ? ph[i].name : f[i - np].path,
               damaged ? " (damaged)" : "");
      p->damaged = damaged;
      if (damaged) png_damage(p->data, size, (uint32_t)i * 2654435761u);
      if (!stk__png_plan_file(p->data, size, &p->plan, NULL) ||
          (int64_t)p->plan.hdr.width * p->plan.hdr.height > (1 << 22)) {
        free(p->data);
        continue;
      }
      p->z = (uint8_t *)malloc(p->plan.zsize);
      stk__png_gather_idat(p->data, size, p->z);
      n++;
    }
  }
  for (int i = 0; i < nf; i++) free(f[i].data);
  free(f);
  return n;
}

/* One batch of all the cases in `color`; regions when `roi`. */
static void png_pass(png_case *c, int n, int color, int roi, uint32_t seed) {
  int ch = color == STK_GPU_COLOR_GRAY ? 1 : 3, ok = 0, failed = 0;
  stk_gpu_png_sample *s = (stk_gpu_png_sample *)calloc((size_t)n, sizeof *s);
  int *status = (int *)calloc((size_t)n, sizeof(int));
  for (int i = 0; i < n; i++) {
    const stk_png_header *h = &c[i].plan.hdr;
    int w = h->width, hh = h->height, x = 0, y = 0;
    if (roi) {
      seed = seed * 1103515245u + 12345u;
      w = 1 + (int)(seed >> 8) % h->width;
      hh = 1 + (int)(seed >> 4) % h->height;
      x = (int)(seed >> 12) % (h->width - w + 1);
      y = (int)(seed >> 16) % (h->height - hh + 1);
    }
    s[i] = (stk_gpu_png_sample){.zdata = c[i].z,
                                .zsize = c[i].plan.zsize,
                                .hdr = *h,
                                .roi_x = x,
                                .roi_y = y,
                                .roi_w = roi ? w : 0,
                                .roi_h = roi ? hh : 0,
                                .dst_pitch = (size_t)w * ch};
    s[i].dst = (uint8_t *)dev_poison((size_t)w * hh * ch);
  }
  GOK(stk_gpu_run_png_decode(G, ctx, n, s, &(stk_gpu_png_args){color, status}, S0, err,
                             sizeof err));
  for (int i = 0; i < n; i++) {
    int w = roi ? s[i].roi_w : s[i].hdr.width, hh = roi ? s[i].roi_h : s[i].hdr.height;
    size_t bytes = (size_t)w * hh * ch;
    uint8_t *dev = (uint8_t *)malloc(bytes), *emu = (uint8_t *)malloc(bytes);
    int detail, want = stk__png_decode_emulated(c[i].data, c[i].size, color, s[i].roi_x, s[i].roi_y,
                                                w, hh, emu, &detail);
    CHECK((status[i] == STK_GPU_DECODE_OK) == (want == STK__PNG_OK),
          "%s: device status %d, CPU run %d (detail %d)", c[i].name, status[i], want, detail);
    if (status[i] == STK_GPU_DECODE_OK && want == STK__PNG_OK) {
      dev_download(dev, s[i].dst, bytes);
      CHECK(memcmp(dev, emu, bytes) == 0, "%s: pixels differ from the CPU run (color %d)",
            c[i].name, color);
      stk__decode_opts o;
      memset(&o, 0, sizeof o);
      o.color = (stk__color)color, o.ignore_orientation = true;
      o.roi_x = s[i].roi_x, o.roi_y = s[i].roi_y, o.roi_w = w, o.roi_h = hh;
      stk__decoded ref;
      memset(&ref, 0, sizeof ref);
      stk_status st = stk__image_decode(c[i].data, c[i].size, c[i].name, &o,
                                        stk__image_alloc_malloc, NULL, &ref);
      CHECK(st == STK_OK && memcmp(ref.data, dev, bytes) == 0,
            "%s: pixels differ from libspng (color %d)", c[i].name, color);
      free(ref.data);
    }
    ok += status[i] == STK_GPU_DECODE_OK;
    failed += status[i] != STK_GPU_DECODE_OK;
    GOK(G->device_free(ctx, s[i].dst, S0, err, sizeof err));
    free(dev);
    free(emu);
  }
  printf("  color %d%s: %d decoded, %d failed (damaged)\n", color, roi ? " regions" : "", ok,
         failed);
  free(s);
  free(status);
}

/* Throughput of the decode call alone: a batch of `batch` images cycling over the first
 * `n` undamaged cases, decoded `reps` times. */
static void png_rate(png_case *all, int count, int n, int batch) {
  png_case *c = (png_case *)calloc((size_t)n, sizeof *c);
  int k = 0;
  for (int i = 0; i < count && k < n; i++)
    if (!all[i].damaged) c[k++] = all[i];
  n = k;
  if (n == 0) {
    free(c);
    return;
  }
  stk_gpu_png_sample *s = (stk_gpu_png_sample *)calloc((size_t)batch, sizeof *s);
  int *status = (int *)calloc((size_t)batch, sizeof(int));
  double pixels = 0;
  for (int i = 0; i < batch; i++) {
    const png_case *p = &c[i % n];
    s[i] = (stk_gpu_png_sample){.zdata = p->z,
                                .zsize = p->plan.zsize,
                                .hdr = p->plan.hdr,
                                .dst_pitch = (size_t)p->plan.hdr.width * 3};
    s[i].dst = (uint8_t *)dev_poison((size_t)p->plan.hdr.width * p->plan.hdr.height * 3);
    pixels += (double)p->plan.hdr.width * p->plan.hdr.height;
  }
  GOK(stk_gpu_run_png_decode(G, ctx, batch, s, &(stk_gpu_png_args){STK_GPU_COLOR_RGB, status}, S0,
                             err, sizeof err));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int reps = small_run ? 2 : 10;
  for (int r = 0; r < reps; r++)
    GOK(stk_gpu_run_png_decode(G, ctx, batch, s, &(stk_gpu_png_args){STK_GPU_COLOR_RGB, status}, S0,
                               err, sizeof err));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("  rate: batches of %d, %.0f images/s, %.1f Mpixel/s\n", batch, reps * batch / sec,
         reps * pixels / sec * 1e-6);
  for (int i = 0; i < batch; i++) GOK(G->device_free(ctx, s[i].dst, S0, err, sizeof err));
  free(s);
  free(status);
  free(c);
}

static void test_png(const tu_photo *ph, int np) {
  printf("[png]\n");
  if (!G->supports(ctx, STK_GPU_K_PNG_DECODE)) {
    printf("  no PNG decoder in this backend\n");
    failures++;
    return;
  }
  int cap = 512;
  png_case *c = (png_case *)calloc((size_t)cap, sizeof *c);
  int n = png_collect(ph, np, c, cap);
  printf("  %d files (the photos' PNGs, the corpora's, damaged copies)\n", n);
  CHECK(n > 20, "too few PNG cases: %d", n);
  for (int color = 0; color < 3; color++) png_pass(c, n, color, 0, 0);
  png_pass(c, n, STK_GPU_COLOR_RGB, 1, 7);
  png_pass(c, n, STK_GPU_COLOR_GRAY, 1, 11);
  /* the photos' PNGs (the first cases) repeated in one batch of 256 */
  png_rate(c, n, 8, 256);
  for (int i = 0; i < n; i++) {
    free(c[i].data);
    free(c[i].z);
  }
  free(c);
}

int main(int argc, char **argv) {
  const char *lib = STK_CUDA_LIB, *dataset = NULL, *extra = NULL;
  int want[6] = {0}, any = 0;
  const char *sections[] = {"runtime", "resample", "cmn", "cast", "decode", "png"};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--small"))
      small_run = 1;
    else if (!strcmp(argv[i], "--decode-pass") && i + 1 < argc)
      only_pass = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-bad-inputs"))
      no_bad_inputs = 1;
    else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
      lib = argv[++i];
    else if (!strcmp(argv[i], "--dataset") && i + 1 < argc)
      dataset = argv[++i];
    else if (!strcmp(argv[i], "--extra") && i + 1 < argc)
      extra = argv[++i];
    else
      for (int k = 0; k < 6; k++)
        if (!strcmp(argv[i], sections[k])) want[k] = any = 1;
  }
  if (!any)
    for (int k = 0; k < 6; k++) want[k] = 1;
  /* the library sets 32 hardware queues when it loads, unless the user chose (runtime.cu) */
  const bool queues_unset = getenv("CUDA_DEVICE_MAX_CONNECTIONS") == NULL;
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("gpu_tests: dlopen %s: %s\n", lib, dlerror());
    return 2;
  }
  stk_cuda_get_api_fn get = (stk_cuda_get_api_fn)dlsym(h, "stk_cuda_get_api");
  G = get ? get() : NULL;
  if (!G || G->abi_version != STK_GPU_ABI_VERSION || G->struct_size != sizeof(stk_gpu_api)) {
    printf("gpu_tests: %s has no usable stk_cuda_get_api\n", lib);
    return 2;
  }
  int count = 0;
  if (G->device_count(&count, err, sizeof err) != 0 || count == 0) {
    printf("gpu_tests: no CUDA device (%s)\n", err);
    return 2;
  }
  stk_gpu_open_opts o;
  memset(&o, 0, sizeof o);
  o.decode_threads = 8;
  if (G->open(&o, &ctx, err, sizeof err) != 0) {
    printf("gpu_tests: open: %s\n", err);
    return 2;
  }
  stk_gpu_device_info di;
  GOK(G->device_info(ctx, &di, err, sizeof err));
  printf(
      "device %s (sm_%d%d, %d SMs, %.1f GiB); nvJPEG %d (%s), hardware decoder %d (%d "
      "engines x %d cores), batched ROI %d\n",
      di.name, di.cc_major, di.cc_minor, di.sm_count, di.total_memory / 1073741824.0,
      di.nvjpeg_version, di.nvjpeg_path, di.has_hw_decoder, di.hw_engines, di.hw_cores_per_engine,
      di.has_batched_roi);
  const char *queues = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  CHECK(!queues_unset || (queues && strcmp(queues, "32") == 0),
        "CUDA_DEVICE_MAX_CONNECTIONS after loading the library: %s (expected 32)",
        queues ? queues : "unset");
  S0 = G->stream(ctx, STK_GPU_STREAM_COMPUTE);
  tu_photo *ph = NULL;
  int np = tu_load_photos(&ph);
  if (!np) {
    printf("gpu_tests: cannot load data/photos\n");
    return 2;
  }
  clock_t t0 = clock();
  if (want[0]) test_runtime();
  if (want[1]) test_resample(ph, np);
  if (want[2]) test_cmn(ph, np);
  if (want[3]) test_cast();
  if (want[4]) test_decode(ph, np, dataset, extra);
  if (want[5]) test_png(ph, np);
  stk_gpu_stats st;
  GOK(G->stream_sync(ctx, S0, err, sizeof err));
  GOK(G->stats(ctx, &st, err, sizeof err));
  printf("end: device pool in use %lld B, reserved %lld B, peak %lld B; pinned in use %lld B\n",
         (long long)st.device_in_use, (long long)st.device_reserved, (long long)st.device_peak,
         (long long)st.pinned_in_use);
  CHECK(st.device_in_use == 0, "device memory still in use at the end: %lld",
        (long long)st.device_in_use);
  G->close(ctx);
  printf("gpu_tests: %s (%d failure%s, %.1f s CPU)\n", failures ? "FAILED" : "ok", failures,
         failures == 1 ? "" : "s", (double)(clock() - t0) / CLOCKS_PER_SEC);
  return failures ? 1 : 0;
}
