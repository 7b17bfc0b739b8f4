/*
 * bench_own_jpeg: stoker's own GPU JPEG decoder (src/cuda/api_jpeg.h) on a folder of JPEGs,
 * outside any pipeline, on the GPU machine.
 *   check    every file the decoder takes, decoded once and compared with libjpeg-turbo
 *            (TurboJPEG, accurate IDCT, fancy upsampling): the count of exact images
 *   own      the decoder alone: batches of --batch images, one launch and one wait each;
 *            images/s, and the host time of the launch call per image (the decoder's cost
 *            on the thread that would also feed nvJPEG's engines)
 *   beside   the engines (stoker's decode_batch at hw_load 1, the files in pinned copies,
 *            idle destinations) on one thread, alone, then with the own decoder decoding
 *            other batches on a second thread at the same time: each one's images/s
 * The host parse (stk__jpeg_frame_parse) is done once up front and timed separately.
 * usage: bench_own_jpeg DIR [--batch N] [--own-batch N] [--seconds S] [--rounds R] [--lib PATH]
 *                       [--beside-only]   (no check, only the rounds of both decoders at once:
 *                                          for sampling the threads' stacks meanwhile)
 *                       [--queues N]      (CUDA_DEVICE_MAX_CONNECTIONS set before the
 *                                          CUDA library is loaded)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <turbojpeg.h>

#include "gpu_testutil.h"
#include "ops/jpeg_own.h"
#include "shared/jpeg_parsed.h"

#define MAX_FILES 4096

static const stk_gpu_api *G;
static stk_gpu_ctx *ctx;
static int nfiles, nparsed, batch = 128;
static int own_batch; /* --own-batch N: the own decoder's batches (default: --batch) */
static double seconds = 4;
static tu_file *files;
static stk_jpeg_parsed **parsed; /* pinned; NULL: refused */
static uint8_t **pinned_file;    /* pinned copies for the engines */

#define DIE_IF(cond, ...)                     \
  do {                                        \
    if (cond) {                               \
      printf("bench_own_jpeg: " __VA_ARGS__); \
      printf("\n");                           \
      exit(1);                                \
    }                                         \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* A pinned block for the parse (the pipeline's host pool is page-locked too). */
static void *pinned_block(void *unused, size_t bytes) {
  (void)unused;
  char err[STK_GPU_ERRLEN];
  void *p = NULL;
  DIE_IF(G->pinned_alloc(ctx, bytes, &p, err, sizeof err), "pinned_alloc: %s", err);
  return p;
}

/* Parses every file into a pinned block, as the pipeline's CPU stage does. */
static void parse_all(void) {
  parsed = calloc((size_t)nfiles, sizeof *parsed);
  double t0 = now();
  for (int i = 0; i < nfiles; i++) {
    parsed[i] = stk__jpeg_parse_block(files[i].data, files[i].size, pinned_block, NULL);
    nparsed += parsed[i] != NULL;
  }
  double t = now() - t0;
  printf(
      "parse: %d of %d files taken, %.1f us per file (one thread, incl. the copy into pinned "
      "memory)\n",
      nparsed, nfiles, t / nfiles * 1e6);
}

/* The batch of parsed files starting at parsed-file index k (wrapping): requests into
 * `out` (device blocks of max_bytes per image). */
static int make_batch(int k, int count, stk_gpu_jpeg_decode_sample *req, uint8_t *out,
                      size_t max_bytes, int *index) {
  int n = 0;
  for (int j = 0; n < count && j < nfiles; j++) {
    int i = (k + j) % nfiles;
    if (!parsed[i]) continue;
    const stk_jpeg_frame *f = &parsed[i]->frame;
    req[n] = (stk_gpu_jpeg_decode_sample){
        .parsed = parsed[i], .dst = out + (size_t)n * max_bytes, .dst_pitch = (size_t)f->width * 3};
    if (index) index[n] = i;
    n++;
  }
  return n;
}

static size_t max_image_bytes(void) {
  size_t m = 0;
  for (int i = 0; i < nfiles; i++)
    if (parsed[i]) {
      size_t b = (size_t)parsed[i]->frame.width * parsed[i]->frame.height * 3;
      if (b > m) m = b;
    }
  return m;
}

static void check(void) {
  size_t mb = max_image_bytes();
  uintptr_t s = G->stream(ctx, STK_GPU_STREAM_COMPUTE);
  char err[STK_GPU_ERRLEN];
  uint8_t *out = NULL;
  DIE_IF(G->device_alloc(ctx, mb * batch, s, (void **)&out, err, sizeof err), "alloc: %s", err);
  uint8_t *host = malloc(mb * batch);
  stk_gpu_jpeg_decode_sample *req = calloc((size_t)batch, sizeof *req);
  int *index = calloc((size_t)batch, sizeof *index), *status = NULL;
  DIE_IF(G->pinned_alloc(ctx, sizeof(int) * batch, (void **)&status, err, sizeof err), "pinned");
  int exact = 0, failed = 0, differ = 0, done = 0, maxd = 0;
  for (int k = 0; done < nparsed; k += batch) {
    int n = make_batch(k, batch, req, out, mb, index);
    if (n > nparsed - done) n = nparsed - done;
    stk_gpu_jpeg_decode_args a = {STK_GPU_COLOR_RGB, status};
    DIE_IF(stk_gpu_run_jpeg_decode(G, ctx, n, req, &a, s, err, sizeof err), "decode: %s", err);
    DIE_IF(G->memcpy_async(ctx, host, out, mb * (size_t)n, s, err, sizeof err), "copy: %s", err);
    DIE_IF(G->stream_sync(ctx, s, err, sizeof err), "sync: %s", err);
    for (int j = 0; j < n; j++) {
      const tu_file *f = &files[index[j]];
      int w = parsed[index[j]]->frame.width, h = parsed[index[j]]->frame.height;
      if (status[j] != STK_GPU_DECODE_OK) {
        if (failed++ < 5) printf("check: %s: the decoder reported a failure\n", f->path);
        continue;
      }
      int rw = 0, rh = 0;
      uint8_t *ref = tu_cpu_decode(f->data, f->size, f->path, 0, &rh, &rw);
      if (ref && (rw != w || rh != h)) free(ref), ref = NULL;
      int d = 0;
      for (size_t q = 0; ref && q < (size_t)w * h * 3; q++) {
        int e = abs((int)host[(size_t)j * mb + q] - (int)ref[q]);
        if (e > d) d = e;
      }
      if (d > maxd) maxd = d;
      if (!ref || d) {
        if (differ++ < 5) printf("check: %s differs from libjpeg-turbo (max %d)\n", f->path, d);
      } else {
        exact++;
      }
      free(ref);
    }
    done += n;
  }
  printf(
      "RESULT check own: %d of %d images exact (libjpeg-turbo), %d differ (max |d| %d), %d "
      "reported failed\n",
      exact, nparsed, differ, maxd, failed);
  G->device_free(ctx, out, s, err, sizeof err);
  G->pinned_free(ctx, status, NULL, err, sizeof err);
  free(host), free(req), free(index);
}

/* ---- timed loops, each on its own thread and stream ---- */

typedef struct {
  int engines; /* 1: decode_batch at hw_load 1; 0: the own decoder */
  atomic_int *stop;
  long images;
  double launch_s, wall_s;
} loop_arg;

static void *own_loop(loop_arg *a, uintptr_t s) {
  size_t mb = max_image_bytes();
  int ob = own_batch > 0 ? own_batch : batch;
  char err[STK_GPU_ERRLEN];
  uint8_t *out = NULL;
  int *status = NULL;
  DIE_IF(G->device_alloc(ctx, mb * ob, s, (void **)&out, err, sizeof err), "alloc: %s", err);
  DIE_IF(G->pinned_alloc(ctx, sizeof(int) * ob, (void **)&status, err, sizeof err), "pinned");
  stk_gpu_jpeg_decode_sample *req = calloc((size_t)ob, sizeof *req);
  double t0 = now();
  for (int k = 0; !atomic_load(a->stop); k += ob) {
    int n = make_batch(k % nfiles, ob, req, out, mb, NULL);
    stk_gpu_jpeg_decode_args args = {STK_GPU_COLOR_RGB, status};
    double t1 = now();
    DIE_IF(stk_gpu_run_jpeg_decode(G, ctx, n, req, &args, s, err, sizeof err), "own: %s", err);
    a->launch_s += now() - t1;
    DIE_IF(G->stream_sync(ctx, s, err, sizeof err), "sync: %s", err);
    a->images += n;
  }
  a->wall_s = now() - t0;
  G->device_free(ctx, out, s, err, sizeof err);
  G->pinned_free(ctx, status, NULL, err, sizeof err);
  free(req);
  return NULL;
}

static void *engines_loop(loop_arg *a, uintptr_t s) {
  char err[STK_GPU_ERRLEN];
  stk_gpu_decode_in *in = calloc((size_t)batch, sizeof *in);
  stk_gpu_decode_out *out = calloc((size_t)batch, sizeof *out);
  size_t mb = 0;
  int *w = calloc((size_t)nfiles, sizeof *w), *h = calloc((size_t)nfiles, sizeof *h);
  for (int i = 0; i < nfiles; i++) {
    stk_gpu_jpeg_info info;
    DIE_IF(G->jpeg_info(ctx, files[i].data, files[i].size, &info, err, sizeof err), "info: %s",
           err);
    w[i] = info.width, h[i] = info.height;
    if ((size_t)w[i] * h[i] * 3 > mb) mb = (size_t)w[i] * h[i] * 3;
  }
  /* one block for the batch, idle between batches (each batch is waited for) */
  uint8_t *dst = NULL;
  DIE_IF(G->device_alloc_idle(ctx, mb * batch, s, (void **)&dst, err, sizeof err), "alloc: %s",
         err);
  stk_gpu_decode_opts o = {.color = STK_GPU_COLOR_RGB, .hw_load = 1.0, .dst_idle = 1};
  double t0 = now();
  for (int k = 0; !atomic_load(a->stop); k += batch) {
    for (int j = 0; j < batch; j++) {
      int i = (k + j) % nfiles;
      in[j] = (stk_gpu_decode_in){.data = pinned_file[i],
                                  .size = files[i].size,
                                  .dst = dst + (size_t)j * mb,
                                  .dst_pitch = (size_t)w[i] * 3};
    }
    DIE_IF(G->decode_batch(ctx, batch, in, out, &o, s, err, sizeof err), "engines: %s", err);
    DIE_IF(G->stream_sync(ctx, s, err, sizeof err), "sync: %s", err);
    a->images += batch;
  }
  a->wall_s = now() - t0;
  G->device_free_idle(ctx, dst, s, err, sizeof err);
  free(in), free(out), free(w), free(h);
  return NULL;
}

/* The own decoder on the context's compute stream, the engines' caller on its copy stream
 * (decode_batch queues the engines' work on a hardware stream of its own). */
static void *loop_main(void *p) {
  loop_arg *a = p;
  uintptr_t s = G->stream(ctx, a->engines ? STK_GPU_STREAM_COPY : STK_GPU_STREAM_COMPUTE);
  return a->engines ? engines_loop(a, s) : own_loop(a, s);
}

/* Runs the loops named (own, engines) at once for `seconds`; prints their rates. */
static void timed(const char *label, int with_own, int with_engines) {
  atomic_int stop = 0;
  loop_arg a[2] = {{0, &stop, 0, 0, 0}, {1, &stop, 0, 0, 0}};
  pthread_t th[2];
  int run[2] = {with_own, with_engines};
  for (int k = 0; k < 2; k++)
    if (run[k]) pthread_create(&th[k], NULL, loop_main, &a[k]);
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  atomic_store(&stop, 1);
  for (int k = 0; k < 2; k++)
    if (run[k]) pthread_join(th[k], NULL);
  double own = run[0] ? a[0].images / a[0].wall_s : 0, eng = run[1] ? a[1].images / a[1].wall_s : 0;
  printf(
      "RESULT %s batch %d: own %.0f img/s (launch %.1f us of host per image), engines %.0f "
      "img/s, together %.0f img/s\n",
      label, batch, own, run[0] && a[0].images ? a[0].launch_s / a[0].images * 1e6 : 0.0, eng,
      own + eng);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *lib = STK_CUDA_LIB, *dir = argc > 1 ? argv[1] : NULL;
  int rounds = 2, beside_only = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--own-batch") && i + 1 < argc)
      own_batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
      lib = argv[++i];
    else if (!strcmp(argv[i], "--beside-only"))
      beside_only = 1;
    else if (!strcmp(argv[i], "--queues") && i + 1 < argc)
      setenv("CUDA_DEVICE_MAX_CONNECTIONS", argv[++i], 1); /* before the library loads */
  }
  DIE_IF(!dir,
         "usage: bench_own_jpeg DIR [--batch N] [--own-batch N] [--seconds S] [--rounds R] "
         "[--lib PATH] [--beside-only] [--queues N]");
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  stk_cuda_get_api_fn get = h ? (stk_cuda_get_api_fn)dlsym(h, "stk_cuda_get_api") : NULL;
  G = get ? get() : NULL;
  DIE_IF(!G, "cannot load %s", lib);
  char err[STK_GPU_ERRLEN];
  DIE_IF(G->open(NULL, &ctx, err, sizeof err), "open: %s", err);
  DIE_IF(!G->supports(ctx, STK_GPU_K_JPEG_DECODE), "the backend has no jpeg_decode kernel");
  files = calloc(MAX_FILES, sizeof *files);
  nfiles = tu_list_files(dir, files, MAX_FILES, 0);
  DIE_IF(nfiles < 1, "no files under %s", dir);
  parse_all();
  DIE_IF(nparsed < 1, "the decoder takes none of the files");
  pinned_file = calloc((size_t)nfiles, sizeof *pinned_file);
  for (int i = 0; i < nfiles; i++) {
    DIE_IF(G->pinned_alloc(ctx, files[i].size, (void **)&pinned_file[i], err, sizeof err),
           "pinned");
    memcpy(pinned_file[i], files[i].data, files[i].size);
  }
  if (!beside_only) check();
  for (int r = 0; r < rounds; r++) {
    if (!beside_only) timed("own alone", 1, 0);
    if (!beside_only) timed("engines alone", 0, 1);
    timed("own beside the engines", 1, 1);
  }
  G->close(ctx);
  return 0;
}
