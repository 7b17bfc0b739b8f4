/*
 * gpu_bench: GPU benchmarks on a folder of JPEGs (scripts/make_dataset.py output), run by
 * scripts/gpu-check.sh on the GPU machine.
 *   bare     nvJPEG batched decoding with the hardware backend, called directly (no
 *            stoker code in the loop): the ceiling
 *   decode   stoker's decode_batch at several hw_load values (0: hybrid path only)
 *   fused    decode_batch + random_resized_crop 224 (torchvision's window, Philox draws
 *            as the CPU operator) + random flip + normalise + float16 CHW, one batch
 *            tensor per batch, all memory from the stream-ordered pool; also with the
 *            hardware decoder decoding only the crop window (ROI)
 *   kernel   the fused resample alone on one decoded batch: time per batch, bytes moved
 *   memory   the fused pipeline for 10 epochs: device memory after each epoch
 * Files are read into host memory first (pageable, as a reader would hand them over).
 * usage: gpu_bench DIR [--batch N] [--epochs N] [--threads N] [--lib PATH] [--only bare]
 *                  [--bare-pinned | --bare-registered] (bare decodes from pinned copies of
 *                  the files: cudaHostAlloc'd, or malloc'd and cudaHostRegister'ed)
 *                  [--bare-vary N] (bare's calls alternate between batch and batch - N images)
 *                  [--bare-shuffle] (bare's batches are random sets, drawn anew every epoch, as a
 *                  pipeline's shuffling reader makes them; default: the files in order)
 *                  [--bare-cycle] (one submitting thread; its calls take six arms in turn: the
 *                  files in order, then random sets submitted as drawn, desc, asc, rr, chunk;
 *                  prints each arm's ms per call and the median over cycles of its call time
 *                  over the ordered arm's in the same cycle: a paired comparison, immune to
 *                  the machine's drift between separate runs)
 *                  [--bare-cycle-stoker] (the same, with three arms on random sets: bare's call,
 *                  stoker's decode_batch as the pipeline calls it (hw_decoder_load 1, headers
 *                  classified beforehand, idle destinations), and decode_batch parsing the
 *                  headers itself: is the gap in stoker's wrapper?)
 *                  [--bare-cycle-fresh] (with --bare-pinned --bare-src-blocks 1; the same, four
 *                  arms on random sets: the pinned copies (one allocation each, written
 *                  once); the batch's files written a call ahead by a helper thread, packed
 *                  into one of three page-locked arenas; the one page-locked block holding
 *                  every file (packed, written once); the pinned copies rewritten in place
 *                  by the helper a call ahead: where the bitstreams lie, and how recently
 *                  they were written)
 *                  [--bare-order desc|asc|rr|chunk] (each batch's images submitted in another
 *                  order: by bitstream size, or balanced over --bare-engines E (default 7)
 *                  engines assuming nvJPEG deals them out in turn (rr) or in contiguous
 *                  chunks (chunk); the decoded images land in the same places)
 *                  [--bare-read-load N [--bare-read-rate F]] (N threads re-read the files
 *                  while bare decodes, F files/s together; flat out without a rate)
 *                  [--bare-pin-cpu N] (bare's submitting thread runs on CPU N only)
 *                  [--bare-classify-load N] [--bare-driver-load] (a pipeline's CPU-stage
 *                  classification or GPU-stage driver calls beside bare's call)
 *                  [--bare-dst-rotate K] (K destination buffers in turn, images packed)
 *                  [--bare-src-blocks K] (with --bare-pinned / --bare-registered: the files
 *                  packed into K pinned blocks, one copy of the dataset each, in turn)
 *                  [--bare-states K] (K decoder states per submitting thread, used in turn)
 *                  [--bare-format rgbi|rgb|yuv|y|unchanged] (nvJPEG's output format)
 *                  [--bare-padding MB] [--bare-prealloc] (nvJPEG's memory padding; its
 *                  state's buffers allocated up front)
 *                  [--bare-threads N [--bare-own-handles]] (bare also from 2..N submitting
 *                  threads: an experiment; with nvJPEG 13.0.1 on the H100 it hangs after a
 *                  few batches, bench/RESULTS.md 2026-11-23/24)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "gpu_testutil.h"
#include "../../bench/tools/engine_order.h"
#include "cuda/nvjpeg_min.h"
#include "ops/crop_window.h"

static const stk_gpu_api *G;
static stk_gpu_ctx *ctx;
static char err[STK_GPU_ERRLEN];
static uintptr_t S0;

#define DIE_IF(cond, ...)                \
  do {                                   \
    if (cond) {                          \
      printf("gpu_bench: " __VA_ARGS__); \
      printf(" (%s)\n", err);            \
      exit(1);                           \
    }                                    \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
  const uint8_t *data;
  size_t size;
  int w, h;
  const uint8_t *file; /* the file's bytes as read (pageable) */
} img_t;

static img_t *imgs;
static int nimg, batch = 256;
/* --bare-read-load N: N threads read the dataset's files over and over (fread into one
 * buffer each; from the warm-up epoch to the end) while bare decodes, as a pipeline's reader does:
 * does that traffic through the caches and memory slow nvJPEG's CPU-bound call? */
static int read_load;
static atomic_int read_load_stop;
static tu_file *read_files;
static int read_nfiles;

static double read_rate; /* --bare-read-rate F: the readers together read F files/s (0: flat out) */
static void sleep_until(double t);

static void *read_load_main(void *arg) {
  long id = (long)arg;
  uint8_t *buf = (uint8_t *)malloc(1 << 22);
  long bytes = 0;
  double per_file = read_rate > 0 ? read_load / read_rate : 0, t = now();
  for (int i = (int)(id % read_nfiles); buf && !atomic_load(&read_load_stop);
       i = (i + 1) % read_nfiles) {
    FILE *f = fopen(read_files[i].path, "rb");
    if (!f) continue;
    bytes += (long)fread(buf, 1, 1 << 22, f);
    fclose(f);
    if (per_file > 0) sleep_until(t += per_file);
  }
  free(buf);
  return (void *)bytes;
}

static int bare_cycle; /* --bare-cycle: arms in turn, call by call (see the header) */
#define CYCLE_ARMS 6
static const char *const cycle_arm_names[CYCLE_ARMS] = {"ordered",    "random",    "random_desc",
                                                        "random_asc", "random_rr", "random_chunk"};
static double *cycle_times; /* the timed pass's call times, call by call */
static int cycle_stoker; /* --bare-cycle-stoker: arms bare / stoker classified / stoker parsing */
static const char *const stoker_arm_names[3] = {"bare_random", "stoker_classified",
                                                "stoker_parsing"};
static stk_gpu_decode_class
    *classes;           /* each file's decode_classify verdict (--bare-cycle-stoker) */
static int cycle_fresh; /* --bare-cycle-fresh: arms pinned copies / freshly written arenas */
static const char *const fresh_arm_names[4] = {"pinned_copies", "fresh_packed", "one_block_stale",
                                               "fresh_in_place"};
static int cycle_arms(void) { return cycle_stoker ? 3 : cycle_fresh ? 4 : CYCLE_ARMS; }

/* --bare-cycle-fresh: a helper thread copies the files of the next fresh-arm batch into
 * one of three page-locked arenas (registered, as the host pool's blocks) while the
 * submitting thread decodes; the fresh arm then decodes from there. */
#define FRESH_ARENAS 3
static struct {
  pthread_mutex_t m;
  pthread_cond_t cv;
  int pending, quit, n;
  uint8_t *arena[FRESH_ARENAS];
  size_t arena_bytes;
  int fill; /* the arena to fill; -1: rewrite the files' pinned copies in place */
  int idx[FRESH_ARENAS][1024]; /* each arena's files */
  const uint8_t *ptr[FRESH_ARENAS][1024];
  int in_place[1024]; /* the files to rewrite in place */
} fresh = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void *fresh_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&fresh.m);
  for (;;) {
    while (!fresh.pending && !fresh.quit) pthread_cond_wait(&fresh.cv, &fresh.m);
    if (fresh.quit) break;
    int a = fresh.fill, n = fresh.n;
    pthread_mutex_unlock(&fresh.m);
    size_t off = 0;
    for (int i = 0; a < 0 && i < n; i++) { /* in place: the copies' bytes again, from the files */
      const img_t *im = &imgs[fresh.in_place[i]];
      memcpy((uint8_t *)im->data, im->file, im->size);
    }
    for (int i = 0; a >= 0 && i < n; i++) {
      const img_t *im = &imgs[fresh.idx[a][i]];
      if (off + im->size > fresh.arena_bytes) off = 0; /* never: sized for the largest files */
      memcpy(fresh.arena[a] + off, im->data, im->size);
      fresh.ptr[a][i] = fresh.arena[a] + off;
      off += (im->size + 63) & ~(size_t)63;
    }
    pthread_mutex_lock(&fresh.m);
    fresh.pending = 0;
    pthread_cond_broadcast(&fresh.cv);
  }
  pthread_mutex_unlock(&fresh.m);
  return NULL;
}

/* Asks the helper to fill arena `a` with the files idx[0..n) (waits for the last fill). */
static void fresh_request(int a, const int *idx, int n) {
  pthread_mutex_lock(&fresh.m);
  while (fresh.pending) pthread_cond_wait(&fresh.cv, &fresh.m);
  memcpy(a >= 0 ? fresh.idx[a] : fresh.in_place, idx, sizeof(int) * (size_t)n);
  fresh.fill = a, fresh.n = n, fresh.pending = 1;
  pthread_cond_broadcast(&fresh.cv);
  pthread_mutex_unlock(&fresh.m);
}

static void fresh_wait(void) {
  pthread_mutex_lock(&fresh.m);
  while (fresh.pending) pthread_cond_wait(&fresh.cv, &fresh.m);
  pthread_mutex_unlock(&fresh.m);
}

/* --bare-cycle-stoker's stoker arms: decode_batch on the batch's files, destinations from
 * the idle pool (as the pipeline's output list), freed after the stream. Returns the
 * host time of the call. */
static double stoker_arm(const int *idx, int b, int classified) {
  static stk_gpu_decode_in in[1024];
  static stk_gpu_decode_out out[1024];
  size_t total = 0;
  for (int i = 0; i < b; i++)
    total += ((size_t)imgs[idx[i]].w * imgs[idx[i]].h * 3 + 255) & ~(size_t)255;
  uint8_t *buf = NULL;
  DIE_IF(G->device_alloc_idle(ctx, total, S0, (void **)&buf, err, sizeof err), "alloc_idle");
  for (int i = 0, off = 0; i < b; i++) {
    const img_t *im = &imgs[idx[i]];
    memset(&in[i], 0, sizeof in[i]);
    in[i].data = im->data;
    in[i].size = im->size;
    in[i].dst = buf + off;
    in[i].dst_pitch = (size_t)im->w * 3;
    in[i].cls = classified ? &classes[idx[i]] : NULL;
    off += (int)((in[i].dst_pitch * im->h + 255) & ~(size_t)255);
  }
  stk_gpu_decode_opts o = {STK_GPU_COLOR_RGB, 1.0};
  o.dst_idle = 1;
  double t = now();
  DIE_IF(G->decode_batch(ctx, b, in, out, &o, S0, err, sizeof err), "decode_batch");
  t = now() - t;
  DIE_IF(G->device_free_idle(ctx, buf, S0, err, sizeof err), "free_idle");
  return t;
}
static int bare_order; /* --bare-order: 0 as given, 1 desc, 2 asc, 3 rr, 4 chunk */
static int bare_engines = 7;
static int bare_shuffle; /* --bare-shuffle: batches are random sets of files, new each epoch */
static int bare_vary;    /* --bare-vary N: bare's calls alternate between batch and batch - N images
                            (as the automatic split's engine share varies): does nvJPEG pay for
                            a batch size that changes from call to call? */
static double host_decode, host_resample; /* host seconds inside the two calls */

/* ---- the ceiling: nvJPEG's hardware batched decode, called directly ---- */

/* nvJPEG's entry points, resolved once (libnvjpeg.so.13, then .12). */
typedef struct {
  nvjpegStatus_t (*create)(nvjpegBackend_t, nvjpegDevAllocator_t *, nvjpegPinnedAllocator_t *,
                           unsigned, nvjpegHandle_t *);
  nvjpegStatus_t (*state_create)(nvjpegHandle_t, nvjpegJpegState_t *);
  nvjpegStatus_t (*init)(nvjpegHandle_t, nvjpegJpegState_t, int, int, nvjpegOutputFormat_t);
  nvjpegStatus_t (*decode)(nvjpegHandle_t, nvjpegJpegState_t, const unsigned char *const *,
                           const size_t *, nvjpegImage_t *, struct CUstream_st *);
  int (*stream_create)(struct CUstream_st **, unsigned); /* cuStreamCreate (driver API) */
  int (*stream_sync)(struct CUstream_st *);              /* cuStreamSynchronize */
  int (*ctx_get)(void **);                               /* cuCtxGetCurrent */
  int (*ctx_set)(void *);                                /* cuCtxSetCurrent */
  nvjpegStatus_t (*prealloc)(nvjpegHandle_t, nvjpegJpegState_t, int, int, int,
                             nvjpegChromaSubsampling_t,
                             nvjpegOutputFormat_t);         /* nvjpegDecodeBatchedPreAllocate */
  nvjpegStatus_t (*dev_padding)(size_t, nvjpegHandle_t);    /* nvjpegSetDeviceMemoryPadding */
  nvjpegStatus_t (*pinned_padding)(size_t, nvjpegHandle_t); /* nvjpegSetPinnedMemoryPadding */
  nvjpegStatus_t (*stream_new)(nvjpegHandle_t, nvjpegJpegStream_t *); /* nvjpegJpegStreamCreate */
  nvjpegStatus_t (*parse_header)(nvjpegHandle_t, const unsigned char *, size_t, nvjpegJpegStream_t);
  nvjpegStatus_t (*supported)(nvjpegHandle_t, nvjpegJpegStream_t,
                              int *);                /* nvjpegDecodeBatchedSupported */
  nvjpegStatus_t (*stream_free)(nvjpegJpegStream_t); /* nvjpegJpegStreamDestroy */
  void *cu_ctx; /* the device's primary context, made current on every submitting thread */
  nvjpegHandle_t h;
} bare_nvjpeg;

/* --bare-padding MB: nvJPEG's device and pinned allocations padded by MB (fewer
 * reallocations inside the call when images grow); --bare-prealloc: the state's buffers
 * allocated up front for a batch of the largest image (nvjpegDecodeBatchedPreAllocate).
 * Does the call's host time include nvJPEG's own allocations? */
static int bare_padding_mb, bare_prealloc;
/* --bare-dst-rotate K: each call decodes into the next of K buffers, the images packed one
 * after the other (as into a pipeline's output list, whose address and offsets change from
 * batch to batch) instead of the same buffer at a fixed stride. */
static int bare_rotate;
/* --bare-states K: each submitting thread keeps K decoder states (and a stream each) and
 * uses them in turn, so that a call need not wait for the state's previous batch to leave
 * its buffers (does one state serialise the host's work with the engines'?) */
static int bare_states = 1;
/* --bare-format F: nvJPEG's output format for bare (rgbi, the default as in the pipeline;
 * rgb, yuv, y, unchanged: planar, each plane at its own third of the image's buffer).
 * Does the call's host work depend on the colour conversion nvJPEG does after the engines? */
static nvjpegOutputFormat_t bare_format = NVJPEG_OUTPUT_RGBI;
/* --bare-src-blocks K (with --bare-pinned or --bare-registered): the files' bytes packed
 * into K large pinned blocks, K copies of the dataset, call c reading copy c % K, as a
 * pipeline's reader packs a batch's files into the blocks of its host pool, which rotate
 * (bare otherwise reads each file from its own fixed pinned copy). */
static int src_blocks;
static const uint8_t **src_copy[8]; /* src_copy[k][i]: file i in block k */

/* --bare-backend B: the backend of bare's handle (hardware, the default; gpu =
 * GPU_HYBRID, nvJPEG's Huffman decoding on the CUDA cores; hybrid; default).
 * --bare-second-backend B (with --bare-threads 2): the second submitting thread gets its
 * own handle of backend B, so the engines and nvJPEG's CUDA-core path decode at once,
 * taking whole batches from one counter (the faster takes more): can the CUDA cores add
 * to the engines? */
static int bare_backend = 3 /* NVJPEG_BACKEND_HARDWARE */, bare_second_backend = -1;
static int backend_named(const char *b) {
  return !strcmp(b, "gpu")       ? NVJPEG_BACKEND_GPU_HYBRID
         : !strcmp(b, "hybrid")  ? NVJPEG_BACKEND_HYBRID
         : !strcmp(b, "default") ? NVJPEG_BACKEND_DEFAULT
                                 : NVJPEG_BACKEND_HARDWARE;
}

static int bare_load(bare_nvjpeg *n) {
  void *lib = dlopen("libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("/usr/local/cuda/lib64/libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libnvjpeg.so.12", RTLD_NOW | RTLD_LOCAL);
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib || !cu) return -1;
  *(void **)&n->create = dlsym(lib, "nvjpegCreateEx");
  *(void **)&n->state_create = dlsym(lib, "nvjpegJpegStateCreate");
  *(void **)&n->init = dlsym(lib, "nvjpegDecodeBatchedInitialize");
  *(void **)&n->decode = dlsym(lib, "nvjpegDecodeBatched");
  *(void **)&n->stream_create = dlsym(cu, "cuStreamCreate");
  *(void **)&n->stream_sync = dlsym(cu, "cuStreamSynchronize");
  *(void **)&n->ctx_get = dlsym(cu, "cuCtxGetCurrent");
  *(void **)&n->ctx_set = dlsym(cu, "cuCtxSetCurrent");
  *(void **)&n->prealloc = dlsym(lib, "nvjpegDecodeBatchedPreAllocate");
  *(void **)&n->stream_new = dlsym(lib, "nvjpegJpegStreamCreate");
  *(void **)&n->parse_header = dlsym(lib, "nvjpegJpegStreamParseHeader");
  *(void **)&n->supported = dlsym(lib, "nvjpegDecodeBatchedSupported");
  *(void **)&n->stream_free = dlsym(lib, "nvjpegJpegStreamDestroy");
  *(void **)&n->dev_padding = dlsym(lib, "nvjpegSetDeviceMemoryPadding");
  *(void **)&n->pinned_padding = dlsym(lib, "nvjpegSetPinnedMemoryPadding");
  if (!n->create || !n->state_create || !n->init || !n->decode || !n->stream_create ||
      !n->stream_sync || !n->ctx_get || !n->ctx_set || n->ctx_get(&n->cu_ctx) != 0 || !n->cu_ctx)
    return -1;
  if (n->create((nvjpegBackend_t)bare_backend, NULL, NULL, 0, &n->h) != NVJPEG_STATUS_SUCCESS)
    return -1;
  if (bare_padding_mb > 0) {
    size_t pad = (size_t)bare_padding_mb << 20;
    if (!n->dev_padding || !n->pinned_padding ||
        n->dev_padding(pad, n->h) != NVJPEG_STATUS_SUCCESS ||
        n->pinned_padding(pad, n->h) != NVJPEG_STATUS_SUCCESS)
      printf("bare: memory padding refused\n");
  }
  return 0;
}

/* Reorders the batch's file indices (idx[0..n)) for --bare-order: the decoder's own rules
 * (bench/tools/engine_order.h) on the bitstreams' sizes, or ascending size (the reverse of
 * desc). */
static void order_batch(int *idx, int n) {
  if (bare_order == 0 || n < 2) return;
  size_t *cost = (size_t *)malloc(sizeof(size_t) * (size_t)n);
  int *perm = (int *)malloc(sizeof(int) * (size_t)n),
      *scratch = (int *)malloc(sizeof(int) * 2 * (size_t)n);
  int *given = (int *)malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) cost[i] = imgs[idx[i]].size, given[i] = idx[i];
  int mode = bare_order == 3   ? STK_ORDER_DEALT
             : bare_order == 4 ? STK_ORDER_CHUNKS
                               : STK_ORDER_DESC;
  stk_engine_order(mode, n, cost, bare_engines, perm, scratch);
  for (int i = 0; i < n; i++) idx[bare_order == 2 ? n - 1 - i : i] = given[perm[i]];
  free(cost);
  free(perm);
  free(scratch);
  free(given);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* --bare-cycle: each arm's mean call time and the median over whole cycles of its call
 * time over the ordered arm's in the same cycle. */
static void report_cycle(long calls) {
  int arms = cycle_arms();
  long cycles = calls / arms;
  double *ratio = (double *)malloc(sizeof(double) * (size_t)(cycles > 0 ? cycles : 1));
  for (int a = 0; a < arms && cycles > 0; a++) {
    double sum = 0;
    for (long c = 0; c < cycles; c++) {
      sum += cycle_times[c * arms + a];
      ratio[c] = cycle_times[c * arms + a] / cycle_times[c * arms];
    }
    qsort(ratio, (size_t)cycles, sizeof *ratio, by_double);
    printf(
        "CYCLE %-17s %.3f ms per call; call time / %s's in the same cycle: median %.3f (quartiles "
        "%.3f "
        "%.3f, %ld cycles)\n",
        cycle_stoker  ? stoker_arm_names[a]
        : cycle_fresh ? fresh_arm_names[a]
                      : cycle_arm_names[a],
        sum / cycles * 1e3,
        cycle_stoker  ? stoker_arm_names[0]
        : cycle_fresh ? fresh_arm_names[0]
                      : cycle_arm_names[0],
        ratio[cycles / 2], ratio[cycles / 4], ratio[3 * cycles / 4], cycles);
  }
  free(ratio);
}

/* One submitting thread: its own decoder state, stream and destinations; takes batches
 * from a shared counter until `total` batches were taken. */
typedef struct {
  bare_nvjpeg *n;
  nvjpegHandle_t h;              /* the shared handle, or the thread's own (--bare-own-handles) */
  nvjpegJpegState_t st[4];       /* --bare-states K: K states, one per call in turn */
  struct CUstream_st *stream[4]; /* a stream for each state */
  uint8_t *out;
  uint8_t *rot[8]; /* --bare-dst-rotate K: K destination buffers, one per call in turn */
  long calls;
  size_t maxb;
  atomic_long *next;
  long total;
  long images, fails;
  double call_s; /* host time inside nvjpegDecodeBatched(Initialize) */
} bare_worker;

/* --bare-pin-cpu N: the submitting thread runs on CPU N only (does a busy SMT sibling or
 * busy cores elsewhere slow nvJPEG's CPU-bound call? bench/tools/cpu_contention.sh) */
static int bare_pin_cpu = -1;

static void *bare_thread(void *arg) {
  bare_worker *w = (bare_worker *)arg;
  if (bare_pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(bare_pin_cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
      printf("bare: cannot pin to CPU %d\n", bare_pin_cpu);
  }
  const unsigned char **data = (const unsigned char **)malloc(sizeof(void *) * batch);
  size_t *len = (size_t *)malloc(sizeof(size_t) * batch);
  nvjpegImage_t *dst = (nvjpegImage_t *)calloc((size_t)batch, sizeof *dst);
  int per_epoch = (nimg + batch - 1) / batch;
  int *order =
      (int *)malloc(sizeof(int) * (size_t)nimg); /* the files of the epoch, in batch order */
  for (int i = 0; i < nimg; i++) order[i] = i;
  int *idx = (int *)malloc(sizeof(int) * (size_t)batch);
  unsigned rng = 12345u + (unsigned)w->calls;
  w->n->ctx_set(w->n->cu_ctx);
  for (;;) {
    long k = atomic_fetch_add(w->next, 1);
    if (k >= w->total) break;
    if (bare_shuffle && k % per_epoch == 0) /* a new epoch: Fisher-Yates (one submitting thread) */
      for (int i = nimg - 1; i > 0; i--) {
        rng = rng * 1103515245u + 12345u;
        int j = (int)((rng >> 8) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
      }
    int s = (int)(k % per_epoch) * batch, b = nimg - s < batch ? nimg - s : batch;
    if (bare_vary > 0 && bare_vary < b && k % 2) b -= bare_vary;
    for (int i = 0; i < b; i++) idx[i] = order[s + i];
    if (bare_cycle) { /* arm k % arms: full batches, neighbouring files or a random set */
      int arm = (int)(k % cycle_arms());
      if (cycle_stoker || cycle_fresh) arm = 1; /* every arm: a random set, as drawn */
      b = batch < nimg ? batch : nimg;
      for (int i = 0; i < b; i++) {
        if (arm == 0) {
          idx[i] = (int)(((k / cycle_arms()) * batch + i) % nimg);
          continue;
        }
        rng = rng * 1103515245u + 12345u; /* a partial Fisher-Yates draw over `order` */
        int j = i + (int)((rng >> 8) % (unsigned)(nimg - i)), t = order[i];
        order[i] = order[j], order[j] = t;
        idx[i] = order[i];
      }
      bare_order = arm <= 1 ? 0 : arm == 2 ? 1 : arm == 3 ? 2 : arm == 4 ? 3 : 4;
    }
    int fresh_arena = -1, fresh_arm = cycle_fresh ? (int)(k % 4) : -1;
    if (fresh_arm == 3) { /* decode the batch rewritten in place a call ahead; queue the next */
      static int next_in_place[1024], have;
      fresh_wait();
      int cur[1024];
      memcpy(cur, idx, sizeof(int) * (size_t)b);
      if (have)
        memcpy(idx, next_in_place, sizeof(int) * (size_t)b);
      else
        fresh_request(-1, cur, b), fresh_wait();
      memcpy(next_in_place, cur, sizeof(int) * (size_t)b);
      fresh_request(-1, next_in_place, b);
      have = 1;
    }
    if (fresh_arm == 1) { /* decode the batch the helper wrote; have it write this one */
      long turn = k / 4;
      fresh_arena = (int)(turn % FRESH_ARENAS);
      fresh_wait();
      int next[1024];
      memcpy(next, idx, sizeof(int) * (size_t)b);
      if (turn == 0) { /* nothing written yet: write this batch now */
        fresh_request(fresh_arena, next, b);
        fresh_wait();
      }
      memcpy(idx, fresh.idx[fresh_arena], sizeof(int) * (size_t)b);
      fresh_request((int)((turn + 1) % FRESH_ARENAS), next, b);
    }
    order_batch(idx, b); /* the submission order (the destinations follow the images) */
    size_t packed = 0;
    for (int i = 0; i < b; i++) {
      const img_t *im = &imgs[idx[i]];
      data[i] = src_blocks > 0 ? src_copy[w->calls % src_blocks][idx[i]] : im->data;
      if (fresh_arena >= 0) data[i] = fresh.ptr[fresh_arena][i];
      if (cycle_fresh)
        data[i] = fresh_arm == 2 && src_copy[0] ? src_copy[0][idx[i]]
                  : fresh_arena >= 0            ? data[i]
                                                : im->data;
      len[i] = im->size;
      dst[i].channel[0] = w->out + w->maxb * i;
      if (bare_rotate > 0) { /* packed as a pipeline's output list: each image after the last */
        dst[i].channel[0] = w->rot[w->calls % bare_rotate] + packed;
        packed += ((size_t)im->w * im->h * 3 + 255) & ~(size_t)255;
      }
      dst[i].pitch[0] = (size_t)im->w * 3;
      if (bare_format != NVJPEG_OUTPUT_RGBI && bare_format != NVJPEG_OUTPUT_BGRI) { /* planes */
        size_t plane = (size_t)im->w * im->h;
        for (int c = 0; c < 3; c++) {
          dst[i].channel[c] = dst[i].channel[0] + plane * c;
          dst[i].pitch[c] = (size_t)im->w;
        }
      }
    }
    if (cycle_stoker && k % 3 != 0) { /* stoker's arms */
      double ts = stoker_arm(idx, b, k % 3 == 1);
      w->call_s += ts;
      if (cycle_times) cycle_times[k] = ts;
      w->images += b;
      w->calls++;
      continue;
    }
    double t = now();
    int k_state = (int)(w->calls % bare_states);
    nvjpegStatus_t st = w->n->init(w->h, w->st[k_state], b, 1, bare_format);
    if (st == NVJPEG_STATUS_SUCCESS)
      st = w->n->decode(w->h, w->st[k_state], data, len, dst, w->stream[k_state]);
    if (st != NVJPEG_STATUS_SUCCESS && w->fails++ == 0)
      printf("bare: nvjpegDecodeBatched: status %d\n", (int)st);
    w->call_s += now() - t;
    if (cycle_times) cycle_times[k] = now() - t;
    w->images += b;
    w->calls++;
  }
  for (int k = 0; k < bare_states; k++) w->n->stream_sync(w->stream[k]);
  free(order);
  free(idx);
  free(data);
  free(len);
  free(dst);
  return NULL;
}

/* The ceiling: nvJPEG's hardware batched decode, called directly, from `submitters`
 * threads at once (1: the usual single caller; more: whether the engines are fed faster
 * than one calling thread can feed them; measured to hang inside nvJPEG, see above). */
static int bare_own_handles; /* --bare-own-handles: one nvJPEG handle per submitting thread */
static int bare_pinned; /* --bare-pinned: the files' bytes in pinned host memory (an experiment);
                          2: --bare-registered, malloc'd copies page-locked with cudaHostRegister,
                          as the pipeline's host pool does */

/* Loads that stand in for parts of a pipeline, run beside bare's call (the pipeline's
 * engines' call is 10-15% slower than bare's, bench/RESULTS.md 2026-11-25):
 *   --bare-classify-load N: N threads parse headers and ask nvjpegDecodeBatchedSupported
 *     on bare's own handle, at 30k images/s together, as the CPU stage classifies;
 *   --bare-driver-load: one thread makes 20 stream-ordered allocations and frees and one
 *     synchronisation on another stream every 8 ms, as the GPU stage does. */
static int classify_load, driver_load;
static atomic_int loads_stop;
static atomic_long classified;

typedef struct {
  bare_nvjpeg *n;
  int id, threads;
} load_arg;

static void sleep_until(double t) {
  double d = t - now();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - (time_t)d) * 1e9)};
  nanosleep(&ts, NULL);
}

static void *classify_load_main(void *arg) {
  load_arg *a = (load_arg *)arg;
  nvjpegJpegStream_t js;
  if (!a->n->stream_new || !a->n->stream_free || !a->n->parse_header || !a->n->supported ||
      a->n->stream_new(a->n->h, &js) != NVJPEG_STATUS_SUCCESS)
    return NULL;
  double per_image = a->threads / 30000.0, t = now();
  for (long i = a->id; !atomic_load(&loads_stop); i += a->threads) {
    const img_t *im = &imgs[i % nimg];
    int ok = 0;
    if (a->n->parse_header(a->n->h, im->data, im->size, js) == NVJPEG_STATUS_SUCCESS)
      a->n->supported(a->n->h, js, &ok);
    atomic_fetch_add(&classified, 1);
    t += per_image;
    sleep_until(t);
  }
  a->n->stream_free(js);
  return NULL;
}

static void *driver_load_main(void *arg) {
  (void)arg;
  uintptr_t s = G->stream(ctx, STK_GPU_STREAM_COPY);
  double t = now();
  char e[STK_GPU_ERRLEN];
  while (!atomic_load(&loads_stop)) {
    for (int k = 0; k < 20; k++) {
      void *p = NULL;
      if (G->device_alloc(ctx, (size_t)1 << 20, s, &p, e, sizeof e) == 0)
        G->device_free(ctx, p, s, e, sizeof e);
    }
    G->stream_sync(ctx, s, e, sizeof e);
    t += 0.008;
    sleep_until(t);
  }
  return NULL;
}

static void bench_bare(int epochs, int submitters) {
  static bare_nvjpeg n;
  static int loaded = 0;
  if (!loaded) loaded = bare_load(&n) == 0 ? 1 : -1;
  if (loaded < 0) {
    printf("bare: no libnvjpeg / libcuda, or the hardware backend is unavailable\n");
    return;
  }
  size_t maxb = 0;
  int maxw = 0, maxh = 0; /* for --bare-prealloc */
  for (int i = 0; i < nimg; i++) {
    if ((size_t)imgs[i].w * imgs[i].h * 3 > maxb) maxb = (size_t)imgs[i].w * imgs[i].h * 3;
    if (imgs[i].w > maxw) maxw = imgs[i].w;
    if (imgs[i].h > maxh) maxh = imgs[i].h;
  }
  bare_worker w[8];
  pthread_t th[8];
  if (submitters < 1 || submitters > 8) submitters = 1;
  if (bare_cycle) submitters = 1; /* the arms take calls in turn: one caller */
  atomic_long next;
  int per_epoch = (nimg + batch - 1) / batch;
  for (int t = 0; t < submitters; t++) {
    memset(&w[t], 0, sizeof w[t]);
    w[t].n = &n;
    w[t].maxb = maxb;
    w[t].next = &next;
    w[t].h = n.h;
    if (bare_own_handles && submitters > 1)
      DIE_IF(n.create(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &w[t].h) != NVJPEG_STATUS_SUCCESS,
             "nvjpegCreateEx");
    if (t == 1 && bare_second_backend >= 0)
      DIE_IF(n.create((nvjpegBackend_t)bare_second_backend, NULL, NULL, 0, &w[t].h) !=
                 NVJPEG_STATUS_SUCCESS,
             "nvjpegCreateEx (second backend)");
    for (int k = 0; k < bare_states; k++) {
      DIE_IF(n.state_create(w[t].h, &w[t].st[k]) != NVJPEG_STATUS_SUCCESS, "nvjpegJpegStateCreate");
      if (bare_prealloc) {
        nvjpegStatus_t ps = n.prealloc ? n.prealloc(w[t].h, w[t].st[k], batch, maxw, maxh,
                                                    NVJPEG_CSS_444, bare_format)
                                       : NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
        if (ps != NVJPEG_STATUS_SUCCESS)
          printf("bare: nvjpegDecodeBatchedPreAllocate: status %d\n", (int)ps);
      }
      DIE_IF(n.stream_create(&w[t].stream[k], 1 /* CU_STREAM_NON_BLOCKING */) != 0,
             "cuStreamCreate");
    }
    DIE_IF(G->device_alloc(ctx, maxb * batch, S0, (void **)&w[t].out, err, sizeof err), "alloc");
    for (int k = 0; k < bare_rotate; k++)
      DIE_IF(G->device_alloc(ctx, (maxb + 256) * batch + 4096 * (size_t)k, S0,
                             (void **)&w[t].rot[k], err, sizeof err),
             "alloc");
  }
  G->stream_sync(ctx, S0, err, sizeof err);
  pthread_t loaders[64];
  atomic_store(&read_load_stop, 0);
  if (read_nfiles == 0) read_load = 0;
  double read_t0 = now(); /* the readers run through the warm-up epoch too */
  for (long i = 0; i < read_load && i < 64; i++)
    pthread_create(&loaders[i], NULL, read_load_main, (void *)(i * 97));
  pthread_t cl_threads[16], drv_thread;
  load_arg cl_args[16];
  atomic_store(&loads_stop, 0);
  atomic_store(&classified, 0);
  if (classify_load > 16) classify_load = 16;
  for (int i = 0; i < classify_load; i++) {
    cl_args[i] = (load_arg){&n, i, classify_load};
    pthread_create(&cl_threads[i], NULL, classify_load_main, &cl_args[i]);
  }
  if (driver_load) pthread_create(&drv_thread, NULL, driver_load_main, NULL);
  double t0 = 0;
  for (int pass = 0; pass < 2; pass++) { /* pass 0: one epoch of warm-up */
    atomic_store(&next, 0);
    for (int t = 0; t < submitters; t++) {
      w[t].total = (long)per_epoch * (pass ? epochs : 1);
      w[t].images = w[t].fails = 0;
      w[t].call_s = 0;
    }
    if (pass && bare_cycle) cycle_times = (double *)calloc((size_t)w[0].total, sizeof(double));
    if (pass) t0 = now();
    for (int t = 0; t < submitters; t++) pthread_create(&th[t], NULL, bare_thread, &w[t]);
    for (int t = 0; t < submitters; t++) pthread_join(th[t], NULL);
  }
  double t = now() - t0;
  atomic_store(&read_load_stop, 1);
  atomic_store(&loads_stop, 1);
  for (int i = 0; i < classify_load; i++) pthread_join(cl_threads[i], NULL);
  if (driver_load) pthread_join(drv_thread, NULL);
  if (classify_load)
    printf("bare: %d threads classified %.0f images/s meanwhile\n", classify_load,
           atomic_load(&classified) / (now() - read_t0));
  double read_bytes = 0;
  for (int i = 0; i < read_load && i < 64; i++) {
    void *r;
    pthread_join(loaders[i], &r);
    read_bytes += (double)(long)r;
  }
  if (read_load)
    printf("bare: %d reading threads read %.0f MB/s meanwhile\n", read_load,
           read_bytes / (now() - read_t0) / 1e6);
  long done = 0, fails = 0, calls = (long)per_epoch * epochs;
  double call_s = 0;
  for (int i = 0; i < submitters; i++) {
    done += w[i].images;
    fails += w[i].fails;
    call_s += w[i].call_s;
  }
  if (cycle_times) {
    report_cycle(calls);
    free(cycle_times);
    cycle_times = NULL;
  }
  printf(
      "RESULT bare_nvjpeg_hw%s%s%s batch %d: %ld images in %.3f s = %.0f img/s (%ld failed "
      "batches; %.2f ms per call, %d thread%s%s, %d state%s)\n",
      submitters > 1 ? "_mt" : "",
      bare_pinned == 2 ? "_registered"
      : bare_pinned    ? "_pinned"
                       : "",
      bare_vary       ? "_vary"
      : bare_order    ? "_order"
      : bare_shuffle  ? "_shuffle"
      : bare_rotate   ? "_rotate"
      : src_blocks    ? "_srcblocks"
      : read_load     ? "_readload"
      : classify_load ? "_classifyload"
      : driver_load   ? "_driverload"
                      : "",
      batch, done, t, done / t, fails, call_s / calls * 1e3, submitters, submitters > 1 ? "s" : "",
      bare_own_handles && submitters > 1 ? ", a handle each" : "", bare_states,
      bare_states > 1 ? "s each" : "");
  if (bare_backend != NVJPEG_BACKEND_HARDWARE || bare_second_backend >= 0)
    for (int i = 0; i < submitters; i++)
      printf("bare: thread %d (backend %d) decoded %ld images, %.2f ms per call\n", i,
             i == 1 && bare_second_backend >= 0 ? bare_second_backend : bare_backend, w[i].images,
             w[i].calls ? w[i].call_s / w[i].calls * 1e3 : 0.0);
  for (int i = 0; i < submitters; i++) {
    G->device_free(ctx, w[i].out, S0, err, sizeof err);
    for (int k = 0; k < bare_rotate; k++) G->device_free(ctx, w[i].rot[k], S0, err, sizeof err);
  }
}

/* ---- stoker: decode, optionally fused random_resized_crop + flip + normalise ---- */

typedef struct {
  double load;
  int fused, roi;
  long ok, hw, hybrid, fallback, failed;
} run_cfg;

static const double mean[3] = {0.485 * 255, 0.456 * 255, 0.406 * 255};
static const double stdv[3] = {0.229 * 255, 0.224 * 255, 0.225 * 255};

/* The random_resized_crop window and flip of image `ordinal` (Philox, as the CPU ops). */
static void draw(int64_t ordinal, const img_t *im, stk__crop_window *w, int *flip) {
  stk__philox g;
  stk__philox_init(&g, 0x5EED, (uint64_t)ordinal);
  *w = stk__random_crop_window(&g, im->w, im->h, 0.08, 1.0, 3.0 / 4, 4.0 / 3, 10);
  *flip = (int)(stk__philox_u32(&g) & 1);
}

/* One batch [s, s + b): decode (+ fused); all memory stream-ordered on S0. */
static void run_batch(run_cfg *c, int s, int b, int64_t ord0, stk_gpu_decode_in *in,
                      stk_gpu_decode_out *out, stk_gpu_resample_sample *rs, void **keep) {
  size_t total = 0;
  stk__crop_window win[1024];
  int flip[1024];
  for (int i = 0; i < b; i++) {
    const img_t *im = &imgs[s + i];
    draw(ord0 + i, im, &win[i], &flip[i]);
    int w = c->roi ? win[i].w : im->w, h = c->roi ? win[i].h : im->h;
    memset(&in[i], 0, sizeof in[i]);
    in[i].data = im->data;
    in[i].size = im->size;
    if (c->roi) in[i].roi_x = win[i].x, in[i].roi_y = win[i].y, in[i].roi_w = w, in[i].roi_h = h;
    in[i].dst_pitch = (size_t)w * 3;
    total += (in[i].dst_pitch * h + 255) & ~(size_t)255;
  }
  uint8_t *buf = NULL;
  DIE_IF(G->device_alloc(ctx, total, S0, (void **)&buf, err, sizeof err), "alloc");
  for (int i = 0, off = 0; i < b; i++) {
    int h = c->roi ? win[i].h : imgs[s + i].h;
    in[i].dst = buf + off;
    off += (int)((in[i].dst_pitch * h + 255) & ~(size_t)255);
  }
  stk_gpu_decode_opts o = {STK_GPU_COLOR_RGB, c->load};
  double t0 = now();
  DIE_IF(G->decode_batch(ctx, b, in, out, &o, S0, err, sizeof err), "decode_batch");
  host_decode += now() - t0;
  for (int i = 0; i < b; i++) {
    c->ok += out[i].status == STK_GPU_DECODE_OK;
    c->fallback += out[i].status == STK_GPU_DECODE_FALLBACK;
    c->failed += out[i].status == STK_GPU_DECODE_FAILED;
    c->hw += out[i].status == STK_GPU_DECODE_OK && out[i].backend == STK_GPU_BACKEND_HARDWARE;
    c->hybrid += out[i].status == STK_GPU_DECODE_OK && out[i].backend != STK_GPU_BACKEND_HARDWARE;
  }
  void *tensor = NULL;
  if (c->fused) {
    size_t per = (size_t)3 * 224 * 224 * 2;
    DIE_IF(G->device_alloc(ctx, per * b, S0, &tensor, err, sizeof err), "alloc");
    stk_gpu_resample_args a;
    memset(&a, 0, sizeof a);
    a.channels = 3;
    a.in_dtype = STK_DTYPE_UINT8;
    a.out_dtype = STK_DTYPE_FLOAT16;
    a.interp = STK_GPU_INTERP_LINEAR;
    a.antialias = 1;
    a.planar = 1;
    a.normalize = 1;
    a.quantize = 1;
    a.scale = 1.0;
    for (int i = 0; i < b; i++) {
      stk_gpu_resample_sample *r = &rs[i];
      memset(r, 0, sizeof *r);
      r->src = in[i].dst;
      r->src_pitch = in[i].dst_pitch;
      r->src_h = c->roi ? win[i].h : imgs[s + i].h;
      r->src_w = c->roi ? win[i].w : imgs[s + i].w;
      r->dst = (char *)tensor + per * i;
      r->dst_h = r->dst_w = 224;
      r->x0 = c->roi ? 0 : win[i].x;
      r->y0 = c->roi ? 0 : win[i].y;
      r->x1 = r->x0 + win[i].w;
      r->y1 = r->y0 + win[i].h;
      r->mirror = flip[i];
      for (int k = 0; k < 3; k++) r->mean[k] = mean[k], r->stddev[k] = stdv[k];
    }
    t0 = now();
    DIE_IF(stk_gpu_run_resample(G, ctx, b, rs, &a, S0, err, sizeof err), "resample");
    host_resample += now() - t0;
  }
  if (keep) { /* the caller keeps the decoded batch (kernel timing) */
    keep[0] = buf;
    keep[1] = tensor;
    return;
  }
  G->device_free(ctx, buf, S0, err, sizeof err);
  if (tensor) G->device_free(ctx, tensor, S0, err, sizeof err);
}

static double run(run_cfg *c, int epochs, const char *name) {
  stk_gpu_decode_in *in = (stk_gpu_decode_in *)calloc((size_t)batch, sizeof *in);
  stk_gpu_decode_out *out = (stk_gpu_decode_out *)calloc((size_t)batch, sizeof *out);
  stk_gpu_resample_sample *rs = (stk_gpu_resample_sample *)calloc((size_t)batch, sizeof *rs);
  run_batch(c, 0, nimg < batch ? nimg : batch, 0, in, out, rs, NULL); /* warm-up */
  c->ok = c->hw = c->hybrid = c->fallback = c->failed = 0;
  G->stream_sync(ctx, S0, err, sizeof err);
  host_decode = host_resample = 0;
  double t0 = now();
  long done = 0;
  for (int e = 0; e < epochs; e++)
    for (int s = 0; s < nimg; s += batch) {
      int b = nimg - s < batch ? nimg - s : batch;
      run_batch(c, s, b, (int64_t)e * nimg + s, in, out, rs, NULL);
      done += b;
    }
  DIE_IF(G->stream_sync(ctx, S0, err, sizeof err), "sync");
  double t = now() - t0;
  printf(
      "RESULT %s hw_load %.2f batch %d: %ld images in %.3f s = %.0f img/s (ok %ld: hw %ld, "
      "hybrid %ld; fallback %ld, failed %ld; host time in decode_batch %.3f s, in "
      "resample %.3f s)\n",
      name, c->load, batch, done, t, done / t, c->ok, c->hw, c->hybrid, c->fallback, c->failed,
      host_decode, host_resample);
  free(in);
  free(out);
  free(rs);
  return done / t;
}

/* ---- the fused kernel alone ---- */

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static void bench_kernel(void) {
  int b = nimg < batch ? nimg : batch;
  stk_gpu_decode_in *in = (stk_gpu_decode_in *)calloc((size_t)b, sizeof *in);
  stk_gpu_decode_out *out = (stk_gpu_decode_out *)calloc((size_t)b, sizeof *out);
  stk_gpu_resample_sample *rs = (stk_gpu_resample_sample *)calloc((size_t)b, sizeof *rs);
  run_cfg c = {1.0, 1, 0, 0, 0, 0, 0, 0};
  void *keep[2];
  run_batch(&c, 0, b, 0, in, out, rs, keep);
  stk_gpu_resample_args a;
  memset(&a, 0, sizeof a);
  a.channels = 3, a.in_dtype = STK_DTYPE_UINT8, a.out_dtype = STK_DTYPE_FLOAT16;
  a.interp = STK_GPU_INTERP_LINEAR, a.antialias = 1, a.planar = 1, a.normalize = 1;
  a.quantize = 1, a.scale = 1.0;
  /* bytes: the source pixels of each window, the intermediate written and read once,
   * the output written */
  double win_bytes = 0, tmp_bytes = 0, out_bytes = 0;
  for (int i = 0; i < b; i++) {
    double ww = fabs(rs[i].x1 - rs[i].x0), wh = fabs(rs[i].y1 - rs[i].y0);
    win_bytes += ww * wh * 3;
    tmp_bytes += 2.0 * (wh + 2) * 224 * 3 * 4;
    out_bytes += 224.0 * 224 * 3 * 2;
  }
  void *e0, *e1;
  G->event_create(ctx, 1, &e0, err, sizeof err);
  G->event_create(ctx, 1, &e1, err, sizeof err);
  float ms[30];
  for (int r = -3; r < 30; r++) {
    G->event_record(ctx, e0, S0, err, sizeof err);
    DIE_IF(stk_gpu_run_resample(G, ctx, b, rs, &a, S0, err, sizeof err), "resample");
    G->event_record(ctx, e1, S0, err, sizeof err);
    G->event_sync(ctx, e1, err, sizeof err);
    if (r >= 0) G->event_elapsed(ctx, e0, e1, &ms[r], err, sizeof err);
  }
  qsort(ms, 30, sizeof(float), cmp_float);
  double med = ms[15] * 1e-3;
  printf(
      "RESULT fused_kernel batch %d: median %.3f ms (min %.3f, max %.3f) = %.0f img/s; "
      "window+output %.1f MB -> %.0f GB/s; with the float intermediate %.1f MB -> %.0f GB/s\n",
      b, ms[15], ms[0], ms[29], b / med, (win_bytes + out_bytes) / 1e6,
      (win_bytes + out_bytes) / med / 1e9, (win_bytes + out_bytes + tmp_bytes) / 1e6,
      (win_bytes + out_bytes + tmp_bytes) / med / 1e9);
  G->device_free(ctx, keep[0], S0, err, sizeof err);
  G->device_free(ctx, keep[1], S0, err, sizeof err);
  G->stream_sync(ctx, S0, err, sizeof err);
  free(in);
  free(out);
  free(rs);
}

static void bench_memory(int epochs) {
  run_cfg c = {1.0, 1, 0, 0, 0, 0, 0, 0};
  stk_gpu_decode_in *in = (stk_gpu_decode_in *)calloc((size_t)batch, sizeof *in);
  stk_gpu_decode_out *out = (stk_gpu_decode_out *)calloc((size_t)batch, sizeof *out);
  stk_gpu_resample_sample *rs = (stk_gpu_resample_sample *)calloc((size_t)batch, sizeof *rs);
  printf("memory (fused pipeline, after each epoch): in_use / reserved / device used MiB\n ");
  int64_t first_used = 0, last_used = 0, first_res = 0, last_res = 0;
  for (int e = 0; e < epochs; e++) {
    for (int s = 0; s < nimg; s += batch) {
      int b = nimg - s < batch ? nimg - s : batch;
      run_batch(&c, s, b, (int64_t)e * nimg + s, in, out, rs, NULL);
    }
    G->stream_sync(ctx, S0, err, sizeof err);
    stk_gpu_stats st;
    G->stats(ctx, &st, err, sizeof err);
    int64_t used = st.device_total - st.device_free;
    printf(" %lld/%lld/%lld", (long long)(st.device_in_use >> 20),
           (long long)(st.device_reserved >> 20), (long long)(used >> 20));
    if (e == 0) first_used = used, first_res = st.device_reserved;
    last_used = used, last_res = st.device_reserved;
  }
  printf(
      "\nRESULT memory %d epochs: device used %lld -> %lld MiB, pool reserved %lld -> %lld MiB\n",
      epochs, (long long)(first_used >> 20), (long long)(last_used >> 20),
      (long long)(first_res >> 20), (long long)(last_res >> 20));
  free(in);
  free(out);
  free(rs);
}

int main(int argc, char **argv) {
  const char *lib = STK_CUDA_LIB, *dir = NULL, *only = NULL; /* --only bare: the ceiling alone */
  int epochs = 3, threads = 15, submitters = 0; /* --bare-threads N: also bare from 2..N threads */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
      epochs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
      lib = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--bare-threads") && i + 1 < argc)
      submitters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bare-own-handles"))
      bare_own_handles = 1;
    else if (!strcmp(argv[i], "--bare-pinned"))
      bare_pinned = 1;
    else if (!strcmp(argv[i], "--bare-backend") && i + 1 < argc)
      bare_backend = backend_named(argv[++i]);
    else if (!strcmp(argv[i], "--bare-second-backend") && i + 1 < argc)
      bare_second_backend = backend_named(argv[++i]);
    else if (!strcmp(argv[i], "--bare-registered"))
      bare_pinned = 2;
    else if (!strcmp(argv[i], "--bare-prealloc"))
      bare_prealloc = 1;
    else if (!strcmp(argv[i], "--bare-classify-load") && i + 1 < argc)
      classify_load = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bare-driver-load"))
      driver_load = 1;
    else if (!strcmp(argv[i], "--bare-src-blocks") && i + 1 < argc) {
      src_blocks = atoi(argv[++i]);
      if (src_blocks > 8) src_blocks = 8;
    } else if (!strcmp(argv[i], "--bare-dst-rotate") && i + 1 < argc) {
      bare_rotate = atoi(argv[++i]);
      if (bare_rotate > 8) bare_rotate = 8;
    } else if (!strcmp(argv[i], "--bare-read-rate") && i + 1 < argc)
      read_rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--bare-format") && i + 1 < argc) {
      const char *f = argv[++i];
      bare_format = !strcmp(f, "rgb")         ? NVJPEG_OUTPUT_RGB
                    : !strcmp(f, "yuv")       ? NVJPEG_OUTPUT_YUV
                    : !strcmp(f, "y")         ? NVJPEG_OUTPUT_Y
                    : !strcmp(f, "unchanged") ? NVJPEG_OUTPUT_UNCHANGED
                                              : NVJPEG_OUTPUT_RGBI;
    } else if (!strcmp(argv[i], "--bare-states") && i + 1 < argc) {
      bare_states = atoi(argv[++i]);
      if (bare_states < 1 || bare_states > 4) bare_states = 1;
    } else if (!strcmp(argv[i], "--bare-padding") && i + 1 < argc)
      bare_padding_mb = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bare-pin-cpu") && i + 1 < argc)
      bare_pin_cpu = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bare-vary") && i + 1 < argc)
      bare_vary = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bare-shuffle"))
      bare_shuffle = 1;
    else if (!strcmp(argv[i], "--bare-cycle"))
      bare_cycle = 1;
    else if (!strcmp(argv[i], "--bare-cycle-stoker"))
      bare_cycle = cycle_stoker = 1;
    else if (!strcmp(argv[i], "--bare-cycle-fresh"))
      bare_cycle = cycle_fresh = 1;
    else if (!strcmp(argv[i], "--bare-engines") && i + 1 < argc)
      bare_engines = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bare-order") && i + 1 < argc) {
      const char *m = argv[++i];
      bare_order = !strcmp(m, "desc")    ? 1
                   : !strcmp(m, "asc")   ? 2
                   : !strcmp(m, "rr")    ? 3
                   : !strcmp(m, "chunk") ? 4
                                         : 0;
    } else if (!strcmp(argv[i], "--bare-read-load") && i + 1 < argc)
      read_load = atoi(argv[++i]);
    else
      dir = argv[i];
  }
  if (!dir || batch < 1 || batch > 1024) {
    printf(
        "usage: gpu_bench DIR [--batch N<=1024] [--epochs N] [--threads N] [--lib PATH] [--only "
        "bare] [--bare-threads N<=8]\n");
    return 2;
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  stk_cuda_get_api_fn get = h ? (stk_cuda_get_api_fn)dlsym(h, "stk_cuda_get_api") : NULL;
  G = get ? get() : NULL;
  DIE_IF(!G, "cannot load %s", lib);
  stk_gpu_open_opts o;
  memset(&o, 0, sizeof o);
  o.decode_threads = threads;
  DIE_IF(G->open(&o, &ctx, err, sizeof err), "open");
  S0 = G->stream(ctx, STK_GPU_STREAM_COMPUTE);
  tu_file *files = (tu_file *)calloc(8192, sizeof *files);
  int nf = tu_list_files(dir, files, 8192, 0);
  read_files = files;
  read_nfiles = nf;
  imgs = (img_t *)calloc((size_t)nf, sizeof *imgs);
  double bytes = 0;
  for (int i = 0; i < nf; i++) {
    stk_gpu_jpeg_info info;
    if (G->jpeg_info(ctx, files[i].data, files[i].size, &info, err, sizeof err) != 0) continue;
    imgs[nimg].data = imgs[nimg].file = files[i].data;
    imgs[nimg].size = files[i].size;
    imgs[nimg].w = info.width;
    imgs[nimg].h = info.height;
    bytes += files[i].size;
    nimg++;
  }
  DIE_IF(nimg == 0, "no JPEGs under %s", dir);
  pthread_t fresh_thread;
  if (cycle_fresh) { /* the helper and its arenas, sized for a batch of the largest files */
    size_t maxf = 0;
    for (int i = 0; i < nimg; i++) maxf = imgs[i].size > maxf ? imgs[i].size : maxf;
    fresh.arena_bytes = ((size_t)batch * ((maxf + 63) & ~(size_t)63) + 4095) & ~(size_t)4095;
    for (int a = 0; a < FRESH_ARENAS; a++) {
      fresh.arena[a] = (uint8_t *)aligned_alloc(4096, fresh.arena_bytes);
      DIE_IF(!fresh.arena[a] ||
                 G->host_register(ctx, fresh.arena[a], fresh.arena_bytes, err, sizeof err),
             "arena");
    }
    pthread_create(&fresh_thread, NULL, fresh_main, NULL);
  }
  if (cycle_stoker) { /* the CPU stage's header classification, done beforehand */
    classes = (stk_gpu_decode_class *)calloc((size_t)nimg, sizeof *classes);
    for (int i = 0; i < nimg; i++)
      DIE_IF(G->decode_classify(ctx, imgs[i].data, imgs[i].size, 0, 0, 0, 0, &classes[i], err,
                                sizeof err),
             "classify");
  }
  stk_gpu_device_info di;
  memset(&di, 0, sizeof di);
  G->device_info(ctx, &di, err, sizeof err);
  printf(
      "dataset %s: %d JPEGs, mean %.1f KB; batch %d, %d epochs, %d decode threads; nvJPEG %d "
      "(%s)\n",
      dir, nimg, bytes / nimg / 1e3, batch, epochs, threads, di.nvjpeg_version, di.nvjpeg_path);
  if (bare_pinned) /* the same bytes, copied into pinned blocks: does nvJPEG's call get faster? */
    for (int i = 0; i < nimg; i++) {
      void *pin = NULL;
      if (bare_pinned == 2) {
        pin = aligned_alloc(64, (imgs[i].size + 63) & ~(size_t)63);
        DIE_IF(
            !pin || G->host_register(ctx, pin, (imgs[i].size + 63) & ~(size_t)63, err, sizeof err),
            "host_register");
      } else {
        DIE_IF(G->pinned_alloc(ctx, imgs[i].size, &pin, err, sizeof err), "pinned_alloc");
      }
      memcpy(pin, imgs[i].data, imgs[i].size);
      imgs[i].data = (const uint8_t *)pin;
    }
  if (bare_pinned && src_blocks > 0) { /* K packed copies, one block each */
    size_t total = 0;
    for (int i = 0; i < nimg; i++) total += (imgs[i].size + 63) & ~(size_t)63;
    for (int k = 0; k < src_blocks; k++) {
      uint8_t *block = NULL;
      if (bare_pinned == 2) {
        block = (uint8_t *)aligned_alloc(4096, (total + 4095) & ~(size_t)4095);
        DIE_IF(
            !block || G->host_register(ctx, block, (total + 4095) & ~(size_t)4095, err, sizeof err),
            "host_register");
      } else {
        DIE_IF(G->pinned_alloc(ctx, total, (void **)&block, err, sizeof err), "pinned_alloc");
      }
      src_copy[k] = (const uint8_t **)malloc(sizeof(uint8_t *) * (size_t)nimg);
      DIE_IF(!src_copy[k], "malloc");
      size_t off = 0;
      for (int i = 0; i < nimg; i++) {
        memcpy(block + off, imgs[i].data, imgs[i].size);
        src_copy[k][i] = block + off;
        off += (imgs[i].size + 63) & ~(size_t)63;
      }
    }
  } else {
    src_blocks = 0;
  }
  bench_bare(epochs, 1);
  for (int t = 2; t <= submitters && t <= 8; t++) bench_bare(epochs, t);
  if (only && !strcmp(only, "bare")) {
    G->close(ctx);
    return 0;
  }
  static const double loads[] = {1.0, 0.9, 0.75, 0.0};
  for (int i = 0; i < 4; i++) {
    run_cfg c = {loads[i], 0, 0, 0, 0, 0, 0, 0};
    run(&c, loads[i] == 0.0 ? 1 : epochs, "decode");
  }
  for (int i = 0; i < 3; i++) {
    run_cfg c = {loads[i], 1, 0, 0, 0, 0, 0, 0};
    run(&c, epochs, "decode+rrc224+flip+norm_f16");
  }
  run_cfg cr = {1.0, 1, 1, 0, 0, 0, 0, 0};
  run(&cr, epochs, "roi_decode+rrc224+flip+norm_f16");
  bench_kernel();
  bench_memory(10);
  G->close(ctx);
  return 0;
}
