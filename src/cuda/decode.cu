/*
 * nvJPEG, loaded at run time, and batched JPEG decoding into caller buffers.
 *
 * Loading: dlopen of $STK_NVJPEG_LIBRARY, libnvjpeg.so.13, libnvjpeg.so.12 (then the
 * same under /usr/local/cuda/lib64), every entry point by dlsym; no link-time
 * dependency. A missing library or symbol leaves the context without a decoder and says
 * why (device_info, decode_batch's refusal).
 *
 * Decoding a batch (stk_gpu_decode_batch):
 * 1. headers are parsed on the decode threads (one nvJPEG stream object per thread),
 *    unless the caller parsed them ahead with stk_gpu_decode_classify (the pipeline does,
 *    on the CPU stage's workers); a sample is routed to the hardware decoder when
 *    nvjpegDecodeBatchedSupported(Ex) accepts it, and the first hw_load share of those
 *    go there;
 * 2. the caller's thread submits them in one nvjpegDecodeBatched call on an internal
 *    stream, after waiting (bounded) for its previous batch and taking the process's
 *    engines lock (a region: the whole image goes to a temporary, the region is copied);
 * 3. the remaining samples go through the decoupled API on the decode threads: HYBRID
 *    (CPU Huffman) or, for baseline images over 1 Mpixel, GPU_HYBRID; each thread owns
 *    its decoder states, a device buffer and two pinned buffers used alternately (the
 *    host phase of image i + 1 overlaps the transfer of image i; an event guards reuse);
 * 4. the caller's stream waits for the hardware batch.
 * A batched hardware call that fails sends its samples through step 3 instead.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "decode_balance.h"
#include "../shared/gpu_common.h"
#include "gpu_internal.h"

#define HYBRID_GPU_THRESHOLD (1000 * 1000) /* pixels: GPU_HYBRID above (DALI's default) */

typedef struct {
  nvjpegJpegStream_t hdr;         /* header parsing (hardware handle when present) */
  nvjpegJpegStream_t stream;      /* full parse for the decoupled path */
  nvjpegDecodeParams_t params;    /* for the decoupled path (default handle) */
  nvjpegDecodeParams_t hw_params; /* for hardware ROI support checks */
  nvjpegJpegState_t state[2];     /* per decoder: HYBRID, GPU_HYBRID */
  nvjpegBufferPinned_t pinned[2];
  nvjpegBufferDevice_t device_buf;
  cudaEvent_t pinned_done[2];
  int pinned_used[2];
  int cur;
} slot_t;

typedef struct {
  int route; /* 0: settled (fallback), 1: hardware, 2: decoupled path, 3: retry there */
  int hw_ok;
  int roi; /* a region was requested */
} sample_t;

struct stk_decoder;
typedef void (*job_fn)(struct stk_decoder *d, int index, int slot);
/* A header parser of decode_classify's: a JPEG stream and decode parameters, taken
 * from the free list by one caller at a time. */
typedef struct parser {
  struct parser *next;
  nvjpegJpegStream_t hdr;
  nvjpegDecodeParams_t hw_params;
} parser_t;
static void parser_destroy(struct stk_decoder *d, parser_t *p);

struct stk_decoder {
  stk_gpu_ctx *ctx;
  void *lib;
  char soname[64];
  stk_nvjpeg_fns f;
  int version;
  nvjpegHandle_t handle;
  nvjpegJpegDecoder_t dec[2];
  nvjpegHandle_t hw_handle;
  /* The hardware path's one state and its stream (a second state, taken in turn, showed
   * no clear gain: bench/RESULTS.md, 2026-11-25). */
  nvjpegJpegState_t hw_state;
  unsigned hw_engines, hw_cores;
  cudaStream_t hw_stream;
  cudaEvent_t ev_in, ev_hw, ev_fence;
  /* The engines' last batch: recorded on the hardware stream after their call, and waited
   * for (bounded) before the next call. nvJPEG's call waits for it itself, with a spinning
   * cuEventSynchronize that never returns when the engines' work is lost (issue 27);
   * waiting first, here, turns that into an error naming the batch. */
  cudaEvent_t ev_engines;
  bool engines_used;
  /* a bounded wait of a worker thread that gave up (the device stopped): the batch fails */
  int wait_failed;
  char wait_err[STK_GPU_ERRLEN];
  int nslots;
  slot_t *slots;
  /* worker threads (nslots - 1; the caller is the last slot) */
  pthread_t *threads;
  int nthreads, started;
  pthread_mutex_t m;
  pthread_cond_t cv_work, cv_done;
  unsigned long generation;
  int stop, active;
  job_fn job;
  int job_count, next;
  /* the batch being decoded */
  const stk_gpu_decode_in *in;
  stk_gpu_decode_out *out;
  sample_t *info;
  int info_cap;
  nvjpegOutputFormat_t fmt;
  int channels;
  cudaStream_t user_stream;
  int64_t n_hybrid;
  stk_hw_balance balance;  /* the automatic engines / hybrid split (hw_load < 0) */
  int64_t workers_done_ns; /* when the worker threads finished the last parallel job */
  int64_t engines_ns;      /* the last hardware batch's nvjpegDecodeBatched call */
  /* decode_classify's header parsers (free list; grown on demand, one per concurrent caller) */
  pthread_mutex_t parsers_lock;
  struct parser *parsers;
  bool dst_idle; /* this batch's destinations need no fence (opts->dst_idle) */
  /* nvJPEG's memory padding as applied to the handles (-1: never set) and the hardware
   * state's pre-allocation so far (0: none) */
  int64_t device_padding, host_padding;
  int prealloc_n, prealloc_w, prealloc_h;
};

/* ---------------------------------------------------------------------------------- */
/* Loading                                                                            */
/* ---------------------------------------------------------------------------------- */

static int load_library(stk_decoder *d, char *why, size_t whylen) {
  const char *env = getenv("STK_NVJPEG_LIBRARY");
  const char *names[] = {env, "libnvjpeg.so.13", "libnvjpeg.so.12",
                         "/usr/local/cuda/lib64/libnvjpeg.so.13",
                         "/usr/local/cuda/lib64/libnvjpeg.so.12"};
  const char *last = "";
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !d->lib; i++) {
    if (!names[i] || !*names[i]) continue;
    d->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (d->lib)
      snprintf(d->soname, sizeof d->soname, "%s", names[i]);
    else
      last = dlerror();
  }
  if (!d->lib) {
    snprintf(why, whylen, "libnvjpeg.so.13 / .12 not found (%s)", last ? last : "");
    return -1;
  }
#define STK__NVJPEG_LOAD(req, ret, name, params)            \
  d->f.name = (ret(*) params)dlsym(d->lib, #name);          \
  if (req && !d->f.name) {                                  \
    snprintf(why, whylen, "%s lacks %s", d->soname, #name); \
    return -1;                                              \
  }
  STK_NVJPEG_FUNCS(STK__NVJPEG_LOAD)
#undef STK__NVJPEG_LOAD
  int major = 0, minor = 0, patch = 0;
  d->f.nvjpegGetProperty(0, &major);
  d->f.nvjpegGetProperty(1, &minor);
  d->f.nvjpegGetProperty(2, &patch);
  d->version = major * 1000 + minor * 10 + patch;
  return 0;
}

#define NVJ_TRY(call)                                                                    \
  do {                                                                                   \
    nvjpegStatus_t stk_s_ = (call);                                                      \
    if (stk_s_ != NVJPEG_STATUS_SUCCESS)                                                 \
      return stk_gpu_fail(err, errlen, STK_ERR_DEVICE, __func__, "%s failed: %s", #call, \
                          stk_nvjpeg_status_name(stk_s_));                               \
  } while (0)

static int slot_open(stk_decoder *d, slot_t *s, char *err, size_t errlen) {
  NVJ_TRY(d->f.nvjpegJpegStreamCreate(d->hw_handle ? d->hw_handle : d->handle, &s->hdr));
  NVJ_TRY(d->f.nvjpegJpegStreamCreate(d->handle, &s->stream));
  NVJ_TRY(d->f.nvjpegDecodeParamsCreate(d->handle, &s->params));
  if (d->hw_handle) NVJ_TRY(d->f.nvjpegDecodeParamsCreate(d->hw_handle, &s->hw_params));
  NVJ_TRY(d->f.nvjpegBufferDeviceCreate(d->handle, NULL, &s->device_buf));
  for (int b = 0; b < 2; b++) {
    NVJ_TRY(d->f.nvjpegBufferPinnedCreate(d->handle, NULL, &s->pinned[b]));
    CUDA_TRY(cudaEventCreateWithFlags(&s->pinned_done[b], cudaEventDisableTiming));
  }
  for (int k = 0; k < 2; k++) {
    if (!d->dec[k]) continue;
    NVJ_TRY(d->f.nvjpegDecoderStateCreate(d->handle, d->dec[k], &s->state[k]));
    NVJ_TRY(d->f.nvjpegStateAttachDeviceBuffer(s->state[k], s->device_buf));
  }
  return 0;
}

static void slot_close(stk_decoder *d, slot_t *s) {
  for (int k = 0; k < 2; k++)
    if (s->state[k]) d->f.nvjpegJpegStateDestroy(s->state[k]);
  for (int b = 0; b < 2; b++) {
    if (s->pinned[b]) d->f.nvjpegBufferPinnedDestroy(s->pinned[b]);
    if (s->pinned_done[b]) cudaEventDestroy(s->pinned_done[b]);
  }
  if (s->device_buf) d->f.nvjpegBufferDeviceDestroy(s->device_buf);
  if (s->params) d->f.nvjpegDecodeParamsDestroy(s->params);
  if (s->hw_params) d->f.nvjpegDecodeParamsDestroy(s->hw_params);
  if (s->stream) d->f.nvjpegJpegStreamDestroy(s->stream);
  if (s->hdr) d->f.nvjpegJpegStreamDestroy(s->hdr);
}

/* ---------------------------------------------------------------------------------- */
/* Worker threads                                                                     */
/* ---------------------------------------------------------------------------------- */

static int64_t host_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs items of the current job until none is left; returns how many it ran. */
static int run_items(stk_decoder *d, int slot) {
  int ran = 0;
  for (;;) {
    int i = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
    if (i >= d->job_count) return ran;
    d->job(d, i, slot);
    ran++;
  }
}

static void *worker_main(void *arg) {
  stk_decoder *d = (stk_decoder *)arg;
  pthread_mutex_lock(&d->m);
  int slot = d->started++;
  unsigned long seen = d->generation;
  pthread_mutex_unlock(&d->m);
  char name[16]; /* as the library's threads are named (stk__name_thread) */
  snprintf(name, sizeof name, "stk-nvjpeg-%d", slot + 1);
  prctl(PR_SET_NAME, name, 0, 0, 0);
  cudaSetDevice(d->ctx->device);
  for (;;) {
    pthread_mutex_lock(&d->m);
    while (!d->stop && d->generation == seen) pthread_cond_wait(&d->cv_work, &d->m);
    if (d->stop) {
      pthread_mutex_unlock(&d->m);
      return NULL;
    }
    seen = d->generation;
    pthread_mutex_unlock(&d->m);
    run_items(d, slot);
    pthread_mutex_lock(&d->m);
    if (--d->active == 0) {
      d->workers_done_ns = host_now_ns();
      pthread_cond_signal(&d->cv_done);
    }
    pthread_mutex_unlock(&d->m);
  }
}

/* Starts job(index, slot) for index in [0, count) on the worker threads. */
static void start_parallel(stk_decoder *d, job_fn job, int count) {
  pthread_mutex_lock(&d->m);
  d->job = job;
  d->job_count = count;
  d->next = 0;
  d->active = d->nthreads;
  d->generation++;
  pthread_cond_broadcast(&d->cv_work);
  pthread_mutex_unlock(&d->m);
}

/* The caller joins the job started last, and returns when every index is done: the
 * time the last item finished (host clock). */
static int64_t finish_parallel(stk_decoder *d) {
  int64_t caller_done = run_items(d, d->nslots - 1) > 0 ? host_now_ns() : 0;
  pthread_mutex_lock(&d->m);
  while (d->active > 0) pthread_cond_wait(&d->cv_done, &d->m);
  int64_t done =
      d->nthreads > 0 && d->workers_done_ns > caller_done ? d->workers_done_ns : caller_done;
  pthread_mutex_unlock(&d->m);
  return done;
}

static void run_parallel(stk_decoder *d, job_fn job, int count) {
  start_parallel(d, job, count);
  finish_parallel(d);
}

/* ---------------------------------------------------------------------------------- */
/* Open / close                                                                       */
/* ---------------------------------------------------------------------------------- */

static int decoder_setup(stk_decoder *d, const stk_gpu_open_opts *o, char *err, size_t errlen) {
  d->device_padding = d->host_padding = -1;
  NVJ_TRY(
      d->f.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, NVJPEG_FLAGS_DEFAULT, &d->handle));
  NVJ_TRY(d->f.nvjpegDecoderCreate(d->handle, NVJPEG_BACKEND_HYBRID, &d->dec[0]));
  if (d->f.nvjpegDecoderCreate(d->handle, NVJPEG_BACKEND_GPU_HYBRID, &d->dec[1]) !=
      NVJPEG_STATUS_SUCCESS)
    d->dec[1] = NULL; /* optional: the CPU-Huffman decoder takes everything */
  if (!o->no_hw_decoder &&
      d->f.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, NVJPEG_FLAGS_DEFAULT,
                          &d->hw_handle) == NVJPEG_STATUS_SUCCESS) {
    if (d->f.nvjpegJpegStateCreate(d->hw_handle, &d->hw_state) != NVJPEG_STATUS_SUCCESS) {
      d->hw_state = NULL;
      d->f.nvjpegDestroy(d->hw_handle);
      d->hw_handle = NULL;
    } else if (d->f.nvjpegGetHardwareDecoderInfo) {
      d->f.nvjpegGetHardwareDecoderInfo(d->hw_handle, &d->hw_engines, &d->hw_cores);
    }
  } else {
    d->hw_handle = NULL;
  }
  /* The engines' stream at the greatest priority: nvJPEG's kernels after the engines
   * (colour conversion) go before other work queued at CUDA's default priority (the
   * least), such as the pipeline's kernels of earlier batches and stoker's own JPEG
   * decoder. Measured neutral on basic@gpu (bench/RESULTS.md, "Stream priorities"). */
  int least = 0, greatest = 0;
  CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUDA_TRY(cudaStreamCreateWithPriority(&d->hw_stream, cudaStreamNonBlocking, greatest));
  CUDA_TRY(cudaEventCreateWithFlags(&d->ev_in, cudaEventDisableTiming));
  CUDA_TRY(cudaEventCreateWithFlags(&d->ev_hw, cudaEventDisableTiming));
  CUDA_TRY(cudaEventCreateWithFlags(&d->ev_fence, cudaEventDisableTiming));
  CUDA_TRY(cudaEventCreateWithFlags(&d->ev_engines, cudaEventDisableTiming));
  d->nslots = o->decode_threads > 0 ? o->decode_threads : 4;
  if (d->nslots > 256) d->nslots = 256;
  d->slots = (slot_t *)calloc((size_t)d->nslots, sizeof(slot_t));
  if (!d->slots) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for decode slots");
  for (int i = 0; i < d->nslots; i++) STK_TRY_INT(slot_open(d, &d->slots[i], err, errlen));
  d->threads = (pthread_t *)calloc((size_t)d->nslots, sizeof(pthread_t));
  if (!d->threads) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for threads");
  for (int i = 0; i < d->nslots - 1; i++) {
    if (pthread_create(&d->threads[i], NULL, worker_main, d) != 0)
      return GPU_FAIL(STK_ERR_INTERNAL, "could not start decode thread %d", i);
    d->nthreads++;
  }
  return 0;
}

/* Stops the worker threads (idle between batches: each job's items are bounded). */
static void decoder_stop_threads(stk_decoder *d) {
  if (!d->nthreads) return;
  pthread_mutex_lock(&d->m);
  d->stop = 1;
  pthread_cond_broadcast(&d->cv_work);
  pthread_mutex_unlock(&d->m);
  for (int i = 0; i < d->nthreads; i++) pthread_join(d->threads[i], NULL);
  d->nthreads = 0;
}

/* Whether the hardware streams drain within the wait bound. */
static bool decoder_streams_drain(stk_decoder *d) {
  return !d->hw_stream ||
         stk_gpu_wait(d->ctx, NULL, d->hw_stream, "close", "the engines' last batch", NULL, 0) == 0;
}

static void decoder_free(stk_decoder *d) {
  if (!d) return;
  decoder_stop_threads(d);
  for (int i = 0; d->slots && i < d->nslots; i++) slot_close(d, &d->slots[i]);
  if (d->hw_state) d->f.nvjpegJpegStateDestroy(d->hw_state);
  if (d->hw_handle) d->f.nvjpegDestroy(d->hw_handle);
  for (int k = 0; k < 2; k++)
    if (d->dec[k]) d->f.nvjpegDecoderDestroy(d->dec[k]);
  if (d->handle) d->f.nvjpegDestroy(d->handle);
  if (d->ev_in) cudaEventDestroy(d->ev_in);
  if (d->ev_hw) cudaEventDestroy(d->ev_hw);
  if (d->ev_fence) cudaEventDestroy(d->ev_fence);
  if (d->ev_engines) cudaEventDestroy(d->ev_engines);
  if (d->hw_stream) cudaStreamDestroy(d->hw_stream);
  /* the library stays loaded: nvJPEG may keep threads or atexit handlers around */
  pthread_mutex_destroy(&d->m);
  pthread_cond_destroy(&d->cv_work);
  pthread_cond_destroy(&d->cv_done);
  while (d->parsers) {
    struct parser *p = d->parsers;
    d->parsers = p->next;
    parser_destroy(d, p);
  }
  pthread_mutex_destroy(&d->parsers_lock);
  free(d->slots);
  free(d->threads);
  free(d->info);
  free(d);
}

int stk_decoder_open(stk_gpu_ctx *ctx, const stk_gpu_open_opts *o, char *err, size_t errlen) {
  stk_decoder *d = (stk_decoder *)calloc(1, sizeof *d);
  if (!d) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for the decoder");
  d->ctx = ctx;
  stk_hw_balance_init(&d->balance);
  pthread_mutex_init(&d->m, NULL);
  pthread_cond_init(&d->cv_work, NULL);
  pthread_cond_init(&d->cv_done, NULL);
  pthread_mutex_init(&d->parsers_lock, NULL);
  if (load_library(d, ctx->nvjpeg_reason, sizeof ctx->nvjpeg_reason) != 0) {
    if (d->lib) dlclose(d->lib);
    pthread_mutex_destroy(&d->parsers_lock);
    pthread_mutex_destroy(&d->m);
    pthread_cond_destroy(&d->cv_work);
    pthread_cond_destroy(&d->cv_done);
    free(d);
    return 0; /* not an error: the context works without decoding */
  }
  int st = decoder_setup(d, o, err, errlen);
  if (st != 0) {
    decoder_free(d);
    return st;
  }
  ctx->decoder = d;
  return 0;
}

bool stk_decoder_close(stk_gpu_ctx *ctx, bool device_ok) {
  stk_decoder *d = ctx->decoder;
  if (!d) return true;
  decoder_stop_threads(d);
  if (!device_ok || !decoder_streams_drain(d))
    return false; /* nvJPEG's objects stay: the engines may hold them */
  decoder_free(d);
  ctx->decoder = NULL;
  return true;
}

void stk_decoder_info(stk_gpu_ctx *ctx, stk_gpu_device_info *out) {
  stk_decoder *d = ctx->decoder;
  if (!d) return;
  out->has_nvjpeg = 1;
  out->nvjpeg_version = d->version;
  snprintf(out->nvjpeg_path, sizeof out->nvjpeg_path, "%s", d->soname);
  out->has_hw_decoder = d->hw_handle != NULL;
  out->hw_engines = (int)d->hw_engines;
  out->hw_cores_per_engine = (int)d->hw_cores;
  out->has_batched_roi = d->hw_handle && d->f.nvjpegDecodeBatchedEx != NULL;
}

int stk_gpu_jpeg_header(stk_gpu_ctx *ctx, const uint8_t *data, size_t size, stk_gpu_jpeg_info *out,
                        char *err, size_t errlen) {
  if (!ctx || !data || !out || size == 0)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL or empty argument");
  if (!ctx->decoder)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "nvJPEG is not available: %s", ctx->nvjpeg_reason);
  int nc = 0, w[NVJPEG_MAX_COMPONENT] = {0}, h[NVJPEG_MAX_COMPONENT] = {0};
  nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
  nvjpegStatus_t s =
      ctx->decoder->f.nvjpegGetImageInfo(ctx->decoder->handle, data, size, &nc, &css, w, h);
  if (s != NVJPEG_STATUS_SUCCESS)
    return GPU_FAIL(STK_ERR_DECODE, "nvjpegGetImageInfo refused the header: %s",
                    stk_nvjpeg_status_name(s));
  out->width = w[0];
  out->height = h[0];
  out->components = nc;
  out->subsampling = (int)css;
  return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Decoding                                                                           */
/* ---------------------------------------------------------------------------------- */

static void count(stk_decoder *d, int64_t *counter) {
  pthread_mutex_lock(&d->ctx->counters_lock);
  (*counter)++;
  pthread_mutex_unlock(&d->ctx->counters_lock);
}

/* Records a sample's final failure. It leaves info[i] alone: during the hybrid phase the
 * hardware submission reads the routes concurrently (classification settles samples
 * before any route is set, so theirs stays 0). */
static void settle(stk_decoder *d, int i, int status, int nvjpeg_status) {
  d->out[i].status = status;
  d->out[i].nvjpeg_status = nvjpeg_status;
  count(d,
        status == STK_GPU_DECODE_FALLBACK ? &d->ctx->decode_fallbacks : &d->ctx->decode_failures);
}

/* Phase 1 for one JPEG: header, components, ROI check, hardware support, parsed with
 * `hdr` and checked with `hw_params` (a caller's own pair: neither is thread-safe). */
static void classify(stk_decoder *d, const stk_gpu_decode_in *in, nvjpegJpegStream_t hdr,
                     nvjpegDecodeParams_t hw_params, stk_gpu_decode_class *c) {
  memset(c, 0, sizeof *c);
  c->status = STK_GPU_DECODE_FALLBACK;
  /* nvJPEG decodes truncated streams without complaint; the CPU decoder refuses data
   * that ends before EOI: such files go to it, so both backends apply one policy */
  if (!stk_gpu_jpeg_has_eoi(in->data, in->size)) {
    c->nvjpeg_status = NVJPEG_STATUS_INCOMPLETE_BITSTREAM;
    return;
  }
  nvjpegHandle_t h = d->hw_handle ? d->hw_handle : d->handle;
  nvjpegStatus_t st = d->f.nvjpegJpegStreamParseHeader(h, in->data, in->size, hdr);
  if (st != NVJPEG_STATUS_SUCCESS) {
    c->nvjpeg_status = st;
    return;
  }
  unsigned w = 0, hh = 0, nc = 0, prec = 8;
  nvjpegJpegEncoding_t enc = NVJPEG_ENCODING_UNKNOWN;
  d->f.nvjpegJpegStreamGetFrameDimensions(hdr, &w, &hh);
  d->f.nvjpegJpegStreamGetComponentsNum(hdr, &nc);
  d->f.nvjpegJpegStreamGetJpegEncoding(hdr, &enc);
  if (d->f.nvjpegJpegStreamGetSamplePrecision) d->f.nvjpegJpegStreamGetSamplePrecision(hdr, &prec);
  c->width = (int)w;
  c->height = (int)hh;
  c->components = (int)nc;
  bool encoding_ok = enc == NVJPEG_ENCODING_BASELINE_DCT ||
                     enc == NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN ||
                     enc == NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN;
  if ((nc != 1 && nc != 3) || prec != 8 || !encoding_ok || w == 0 || hh == 0) {
    c->nvjpeg_status = NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
    return;
  }
  c->roi = in->roi_w > 0 && in->roi_h > 0;
  if (c->roi && (in->roi_x < 0 || in->roi_y < 0 || (unsigned)in->roi_x + in->roi_w > w ||
                 (unsigned)in->roi_y + in->roi_h > hh)) {
    c->nvjpeg_status = NVJPEG_STATUS_INVALID_PARAMETER;
    return;
  }
  c->status = STK_GPU_DECODE_OK;
  if (!d->hw_handle) return;
  int unsupported = 1;
  if (c->roi && d->f.nvjpegDecodeBatchedSupportedEx && d->f.nvjpegDecodeBatchedEx) {
    d->f.nvjpegDecodeParamsSetROI(hw_params, in->roi_x, in->roi_y, in->roi_w, in->roi_h);
    st = d->f.nvjpegDecodeBatchedSupportedEx(d->hw_handle, hdr, hw_params, &unsupported);
  } else {
    st = d->f.nvjpegDecodeBatchedSupported(d->hw_handle, hdr, &unsupported);
  }
  c->hw_ok = st == NVJPEG_STATUS_SUCCESS && unsupported == 0;
}

/* Sample i takes its classification: settled (to the CPU decoder) or routed to the
 * decoupled path, the engines' share being picked afterwards. */
static void apply_class(stk_decoder *d, int i, const stk_gpu_decode_class *c) {
  stk_gpu_decode_out *out = &d->out[i];
  out->width = c->width;
  out->height = c->height;
  out->components = c->components;
  if (c->status != STK_GPU_DECODE_OK)
    return settle(d, i, STK_GPU_DECODE_FALLBACK, c->nvjpeg_status);
  d->info[i].roi = c->roi;
  d->info[i].hw_ok = c->hw_ok && d->hw_handle != NULL;
  d->info[i].route = 2;
}

/* The samples decode_batch classifies itself, compacted: stored after the hybrid list. */
static int *classify_list(stk_decoder *d) { return (int *)(d->info + d->info_cap) + d->info_cap; }

static void job_classify(stk_decoder *d, int k, int slot) {
  int i = classify_list(d)[k];
  stk_gpu_decode_class c;
  classify(d, &d->in[i], d->slots[slot].hdr, d->slots[slot].hw_params, &c);
  apply_class(d, i, &c);
}

static void parser_destroy(stk_decoder *d, parser_t *p) {
  if (p->hdr) d->f.nvjpegJpegStreamDestroy(p->hdr);
  if (p->hw_params) d->f.nvjpegDecodeParamsDestroy(p->hw_params);
  free(p);
}

static parser_t *parser_take(stk_decoder *d, char *err, size_t errlen) {
  pthread_mutex_lock(&d->parsers_lock);
  parser_t *p = d->parsers;
  if (p) d->parsers = p->next;
  pthread_mutex_unlock(&d->parsers_lock);
  if (p) return p;
  p = (parser_t *)calloc(1, sizeof *p);
  nvjpegStatus_t st =
      p ? d->f.nvjpegJpegStreamCreate(d->hw_handle ? d->hw_handle : d->handle, &p->hdr)
        : NVJPEG_STATUS_ALLOCATOR_FAILURE;
  if (st == NVJPEG_STATUS_SUCCESS && d->hw_handle)
    st = d->f.nvjpegDecodeParamsCreate(d->hw_handle, &p->hw_params);
  if (st != NVJPEG_STATUS_SUCCESS) {
    if (p) parser_destroy(d, p);
    GPU_FAIL(STK_ERR_DEVICE, "could not make a JPEG header parser: %s", stk_nvjpeg_status_name(st));
    return NULL;
  }
  return p;
}

static void parser_give(stk_decoder *d, parser_t *p) {
  pthread_mutex_lock(&d->parsers_lock);
  p->next = d->parsers;
  d->parsers = p;
  pthread_mutex_unlock(&d->parsers_lock);
}

int stk_gpu_decode_classify(stk_gpu_ctx *ctx, const uint8_t *data, size_t size, int roi_x,
                            int roi_y, int roi_w, int roi_h, stk_gpu_decode_class *out, char *err,
                            size_t errlen) {
  if (!ctx || !data || size == 0 || !out)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL or empty argument");
  stk_decoder *d = ctx->decoder;
  if (!d) return GPU_FAIL(STK_ERR_UNSUPPORTED, "nvJPEG is not available: %s", ctx->nvjpeg_reason);
  parser_t *p = parser_take(d, err, errlen);
  if (!p) return STK_ERR_DEVICE;
  stk_gpu_decode_in in;
  memset(&in, 0, sizeof in);
  in.data = data;
  in.size = size;
  in.roi_x = roi_x, in.roi_y = roi_y, in.roi_w = roi_w, in.roi_h = roi_h;
  classify(d, &in, p->hdr, p->hw_params, out);
  parser_give(d, p);
  return 0;
}

/* Waits (bounded) until a slot's pinned buffer has fed its last transfer. A wait that
 * gives up is kept as the batch's error (decode_batch returns it). */
static bool pinned_buffer_free(stk_decoder *d, cudaEvent_t done) {
  char err[STK_GPU_ERRLEN];
  pthread_mutex_lock(&d->m);
  int failed = d->wait_failed; /* one wait gives up for the batch, not one per sample */
  pthread_mutex_unlock(&d->m);
  if (failed) return false;
  if (stk_gpu_wait(d->ctx, done, NULL, "stk_gpu_decode_batch",
                   "a hybrid sample's transfer (nvJPEG's decoupled path)", err, sizeof err) == 0)
    return true;
  pthread_mutex_lock(&d->m);
  if (!d->wait_failed) snprintf(d->wait_err, sizeof d->wait_err, "%s", err);
  d->wait_failed = 1;
  pthread_mutex_unlock(&d->m);
  return false;
}

/* The error of a worker's wait that gave up (after the parallel job has finished). */
static int worker_wait_failure(stk_decoder *d, char *err, size_t errlen) {
  if (err && errlen) snprintf(err, errlen, "%s", d->wait_err);
  return STK_ERR_DEVICE;
}

/* Decodes sample i through the decoupled API on `slot`. */
static void hybrid_decode(stk_decoder *d, int i, int slot) {
  const stk_gpu_decode_in *in = &d->in[i];
  stk_gpu_decode_out *out = &d->out[i];
  slot_t *s = &d->slots[slot];
  nvjpegStatus_t st = d->f.nvjpegJpegStreamParse(d->handle, in->data, in->size, 0, 0, s->stream);
  if (st != NVJPEG_STATUS_SUCCESS) return settle(d, i, STK_GPU_DECODE_FALLBACK, st);
  bool roi = d->info[i].roi;
  d->f.nvjpegDecodeParamsSetOutputFormat(s->params, d->fmt);
  if (roi)
    d->f.nvjpegDecodeParamsSetROI(s->params, in->roi_x, in->roi_y, in->roi_w, in->roi_h);
  else
    d->f.nvjpegDecodeParamsSetROI(s->params, 0, 0, -1, -1);
  nvjpegJpegEncoding_t enc = NVJPEG_ENCODING_UNKNOWN;
  d->f.nvjpegJpegStreamGetJpegEncoding(s->stream, &enc);
  int k = 0, unsupported = 1;
  if (d->dec[1] && enc == NVJPEG_ENCODING_BASELINE_DCT &&
      (int64_t)out->width * out->height > HYBRID_GPU_THRESHOLD &&
      d->f.nvjpegDecoderJpegSupported(d->dec[1], s->stream, s->params, &unsupported) ==
          NVJPEG_STATUS_SUCCESS &&
      unsupported == 0)
    k = 1;
  if (k == 0) {
    st = d->f.nvjpegDecoderJpegSupported(d->dec[0], s->stream, s->params, &unsupported);
    if (st != NVJPEG_STATUS_SUCCESS || unsupported != 0)
      return settle(d, i, STK_GPU_DECODE_FALLBACK,
                    st != NVJPEG_STATUS_SUCCESS ? st : NVJPEG_STATUS_JPEG_NOT_SUPPORTED);
  }
  out->backend = k ? STK_GPU_BACKEND_GPU_HYBRID : STK_GPU_BACKEND_HYBRID;
  out->roi_mode = roi ? STK_GPU_ROI_NVJPEG : STK_GPU_ROI_NONE;
  /* the pinned buffer about to be overwritten must be done feeding its last transfer */
  int b = s->cur;
  if (s->pinned_used[b] && !pinned_buffer_free(d, s->pinned_done[b]))
    return settle(d, i, STK_GPU_DECODE_FAILED, 0);
  d->f.nvjpegStateAttachPinnedBuffer(s->state[k], s->pinned[b]);
  st = d->f.nvjpegDecodeJpegHost(d->handle, d->dec[k], s->state[k], s->params, s->stream);
  if (st != NVJPEG_STATUS_SUCCESS) return settle(d, i, STK_GPU_DECODE_FAILED, st);
  st = d->f.nvjpegDecodeJpegTransferToDevice(d->handle, d->dec[k], s->state[k], s->stream,
                                             d->user_stream);
  cudaEventRecord(s->pinned_done[b], d->user_stream);
  s->pinned_used[b] = 1;
  s->cur ^= 1;
  if (st != NVJPEG_STATUS_SUCCESS) return settle(d, i, STK_GPU_DECODE_FAILED, st);
  nvjpegImage_t img;
  memset(&img, 0, sizeof img);
  img.channel[0] = in->dst;
  img.pitch[0] = in->dst_pitch;
  st = d->f.nvjpegDecodeJpegDevice(d->handle, d->dec[k], s->state[k], &img, d->user_stream);
  if (st != NVJPEG_STATUS_SUCCESS) return settle(d, i, STK_GPU_DECODE_FAILED, st);
  out->status = STK_GPU_DECODE_OK;
  out->nvjpeg_status = 0;
  count(d, &d->ctx->decoded_hybrid);
}

/* Adds host time to one of the context's decode timers (stats). */
static void add_time(stk_decoder *d, int64_t *timer, int64_t ns) {
  pthread_mutex_lock(&d->ctx->counters_lock);
  *timer += ns;
  pthread_mutex_unlock(&d->ctx->counters_lock);
}

/* The samples routed to the decoupled path, compacted: stored after info[info_cap]. */
static int *hybrid_list(stk_decoder *d) { return (int *)(d->info + d->info_cap); }

static void job_hybrid_list(stk_decoder *d, int k, int slot) {
  hybrid_decode(d, hybrid_list(d)[k], slot);
}

/* Grows the per-batch tables: info[cap] followed by cap ints of the hybrid list and cap
 * ints of the classify list. */
static int ensure_tables(stk_decoder *d, int n, char *err, size_t errlen) {
  if (n <= d->info_cap) return 0;
  void *p = malloc((size_t)n * (sizeof(sample_t) + 2 * sizeof(int)));
  if (!p) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d samples", n);
  free(d->info);
  d->info = (sample_t *)p;
  d->info_cap = n;
  return 0;
}

/* The engines write into their destinations when nvjpegDecodeBatched is called, not
 * when the stream it is given reaches the decode: on the H100, with nvJPEG 12.3 to 13.2,
 * a pending cudaStreamWaitEvent does not hold them back (meta-pytorch/torchcodec#1634,
 * pytorch/vision#9606). Destinations come from the stream-ordered pool, so they may be
 * blocks that queued kernels of the previous batch, or a consumer, still read; here the
 * engines once overwrote the next kernels' parameter blocks (illegal addresses in
 * basic@gpu, 2026-11-23). So the host waits, before the call, until the hardware stream
 * has passed everything queued before it: the compute stream's work up to the allocation
 * of this batch's destinations (ev_in, marked on the hardware stream as ev_fence when
 * decode_batch starts, so the header parsing overlaps the wait) and the temporaries
 * allocated on the hardware stream since (`moved`: marked again). */
static int fence_engines(stk_decoder *d, bool moved, char *err, size_t errlen) {
  int64_t t0 = host_now_ns();
  if (moved) CUDA_TRY(cudaEventRecord(d->ev_fence, d->hw_stream));
  STK_TRY_INT(stk_gpu_wait(d->ctx, d->ev_fence, NULL, "stk_gpu_decode_batch",
                           "the work queued before the engines' destinations (fence)", err,
                           errlen));
  add_time(d, &d->ctx->decode_fence_ns, host_now_ns() - t0);
  return 0;
}

/* A temporary the engines write: from the idle pool when the destinations are idle too
 * (nothing to wait for), else from the stream-ordered pool on the hardware stream (the
 * fence then covers it). */
static int engines_alloc(stk_decoder *d, size_t bytes, void **out, char *err, size_t errlen) {
  return d->dst_idle
             ? stk_gpu_device_alloc_idle(d->ctx, bytes, (uintptr_t)d->hw_stream, out, err, errlen)
             : stk_gpu_device_alloc(d->ctx, bytes, (uintptr_t)d->hw_stream, out, err, errlen);
}

/* nvJPEG's memory padding on both handles, when the caller's values changed. A refusal
 * is no error: padding only spares reallocations. */
static void apply_padding(stk_decoder *d, const stk_gpu_decode_opts *opts) {
  int64_t dev = opts && opts->device_padding > 0 ? opts->device_padding : 0;
  int64_t host = opts && opts->host_padding > 0 ? opts->host_padding : 0;
  if (dev == d->device_padding && host == d->host_padding) return;
  nvjpegHandle_t handles[2] = {d->handle, d->hw_handle};
  for (int i = 0; i < 2; i++) {
    if (!handles[i]) continue;
    if (d->f.nvjpegSetDeviceMemoryPadding)
      d->f.nvjpegSetDeviceMemoryPadding((size_t)dev, handles[i]);
    if (d->f.nvjpegSetPinnedMemoryPadding)
      d->f.nvjpegSetPinnedMemoryPadding((size_t)host, handles[i]);
  }
  d->device_padding = dev;
  d->host_padding = host;
}

/* The hardware state's buffers for a batch of `batch` images of up to the hinted size
 * (4:4:4, the largest), allocated before the call when the batch is larger than any
 * before or the hint grew. A failure is reported: the hint asked for memory the device
 * may not have. */
static int engines_preallocate(stk_decoder *d, int batch, const stk_gpu_decode_opts *opts,
                               char *err, size_t errlen) {
  if (!opts || opts->prealloc_width <= 0 || opts->prealloc_height <= 0 ||
      !d->f.nvjpegDecodeBatchedPreAllocate)
    return 0;
  if (batch <= d->prealloc_n && opts->prealloc_width <= d->prealloc_w &&
      opts->prealloc_height <= d->prealloc_h)
    return 0;
  int n = batch > d->prealloc_n ? batch : d->prealloc_n;
  int w = opts->prealloc_width > d->prealloc_w ? opts->prealloc_width : d->prealloc_w;
  int h = opts->prealloc_height > d->prealloc_h ? opts->prealloc_height : d->prealloc_h;
  nvjpegStatus_t st = NVJPEG_STATUS_SUCCESS;
  st = d->f.nvjpegDecodeBatchedPreAllocate(d->hw_handle, d->hw_state, n, w, h, NVJPEG_CSS_444,
                                           d->fmt);
  if (st != NVJPEG_STATUS_SUCCESS)
    return GPU_FAIL(STK_ERR_DEVICE,
                    "nvjpegDecodeBatchedPreAllocate(%d images of %dx%d) failed: %s (the "
                    "preallocate_width_hint / preallocate_height_hint may be too large)",
                    n, w, h, stk_nvjpeg_status_name(st));
  d->prealloc_n = n;
  d->prealloc_w = w;
  d->prealloc_h = h;
  return 0;
}

/* One caller of the hardware engines at a time in the process: two threads calling
 * nvjpegDecodeBatched at once (one handle each or a shared one, nvJPEG 13.0.1 and 13.3.2)
 * hung inside nvJPEG within a few runs (bench/RESULTS.md, 2026-11-23/24), and two
 * pipelines in one process each have a decoder. Taken with the context's wait bound: a
 * caller stuck inside nvJPEG holds it for ever. */
static pthread_mutex_t engines_mutex = PTHREAD_MUTEX_INITIALIZER;

static int engines_lock(stk_decoder *d, char *err, size_t errlen) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  int64_t ns = until.tv_nsec + (d->ctx->wait_timeout_ms % 1000) * 1000000;
  until.tv_sec += (time_t)(d->ctx->wait_timeout_ms / 1000 + ns / 1000000000);
  until.tv_nsec = (long)(ns % 1000000000);
  int rc = pthread_mutex_timedlock(&engines_mutex, &until);
  if (rc == 0) return 0;
  return GPU_FAIL(STK_ERR_DEVICE,
                  "another decoder of this process (another pipeline) has been inside nvJPEG's "
                  "hardware call for over %lld ms",
                  (long long)d->ctx->wait_timeout_ms);
}

/* Waits (bounded) for the engines' previous batch; see ev_engines. */
static int engines_idle(stk_decoder *d, char *err, size_t errlen) {
  if (!d->engines_used) return 0;
  int64_t t0 = host_now_ns();
  int rc = stk_gpu_wait(d->ctx, d->ev_engines, NULL, "stk_gpu_decode_batch",
                        "the hardware engines' previous batch (nvJPEG)", err, errlen);
  add_time(d, &d->ctx->decode_fence_ns, host_now_ns() - t0);
  return rc;
}

/* Phase 2: the hardware batch. On a batched failure its samples are marked route 3, to
 * be retried on the decoupled path. Returns non-zero only for host / CUDA failures.
 * Temporaries for regions without BatchedEx are freed on the hardware stream. */
static int hw_batch(stk_decoder *d, int n, const stk_gpu_decode_opts *opts, char *err,
                    size_t errlen) {
  int k = 0;
  for (int i = 0; i < n; i++) k += d->info[i].route == 1;
  if (k == 0) return 0;
  STK_TRY_INT(engines_preallocate(d, n, opts, err, errlen));
  /* A region is decoded whole by the engines into a temporary and copied out, not by
   * nvjpegDecodeBatchedEx: that was slower on the H100 than whole-image decoding + the
   * fused crop (19.1k vs 23.5k images/s in gpu_bench), and writing regions straight into
   * region-sized buffers was followed, under compute-sanitizer, by corrupted kernel
   * parameters (bench/RESULTS.md, 2026-11-22/23; the experiment's switch was removed). */
  const unsigned char **data = (const unsigned char **)malloc((size_t)k * sizeof(void *));
  size_t *len = (size_t *)malloc((size_t)k * sizeof(size_t));
  nvjpegImage_t *img = (nvjpegImage_t *)calloc((size_t)k, sizeof(nvjpegImage_t));
  int *idx = (int *)malloc((size_t)k * sizeof(int));
  void **tmp = (void **)calloc((size_t)k, sizeof(void *));
  int rc = 0;
  bool temporaries = false; /* allocated on the hardware stream: the fence is marked again */
  if (!data || !len || !img || !idx || !tmp) {
    rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for the hardware batch");
    goto done;
  }
  for (int i = 0, j = 0; i < n; i++) {
    if (d->info[i].route != 1) continue;
    const stk_gpu_decode_in *in = &d->in[i];
    data[j] = in->data;
    len[j] = in->size;
    idx[j] = i;
    img[j].channel[0] = in->dst;
    img[j].pitch[0] = in->dst_pitch;
    d->out[i].roi_mode = STK_GPU_ROI_NONE;
    if (d->info[i].roi) { /* whole image into a temporary; region copied below */
      size_t pitch = (size_t)d->out[i].width * d->channels;
      rc = engines_alloc(d, pitch * d->out[i].height, &tmp[j], err, errlen);
      if (rc) goto done;
      img[j].channel[0] = (unsigned char *)tmp[j];
      img[j].pitch[0] = pitch;
      d->out[i].roi_mode = STK_GPU_ROI_CROPPED;
    }
    j++;
  }
  for (int j = 0; j < k; j++) temporaries |= tmp[j] != NULL;
  if (!d->dst_idle && (rc = fence_engines(d, temporaries, err, errlen)) != 0) goto done;
  if ((rc = engines_idle(d, err, errlen)) != 0) goto done;
  {
    int64_t t0 = host_now_ns();
    if ((rc = engines_lock(d, err, errlen)) != 0) goto done;
    nvjpegStatus_t st = d->f.nvjpegDecodeBatchedInitialize(d->hw_handle, d->hw_state, k, 1, d->fmt);
    if (st == NVJPEG_STATUS_SUCCESS)
      st = d->f.nvjpegDecodeBatched(d->hw_handle, d->hw_state, data, len, img, d->hw_stream);
    pthread_mutex_unlock(&engines_mutex);
    d->engines_ns = host_now_ns() - t0;
    if (st != NVJPEG_STATUS_SUCCESS) { /* retry each sample on the decoupled path */
      for (int j = 0; j < k; j++) {
        d->info[idx[j]].route = 3;
        d->out[idx[j]].nvjpeg_status = st;
      }
      goto done;
    }
  }
  for (int j = 0; j < k; j++) {
    int i = idx[j];
    const stk_gpu_decode_in *in = &d->in[i];
    if (tmp[j]) { /* the whole image in the temporary: its region goes to the destination */
      size_t pitch = img[j].pitch[0];
      size_t origin = (size_t)in->roi_y * pitch + (size_t)in->roi_x * d->channels;
      cudaError_t e = cudaMemcpy2DAsync(in->dst, in->dst_pitch, (const uint8_t *)tmp[j] + origin,
                                        pitch, (size_t)in->roi_w * d->channels, (size_t)in->roi_h,
                                        cudaMemcpyDeviceToDevice, d->hw_stream);
      if (e != cudaSuccess) {
        rc = GPU_FAIL(STK_ERR_DEVICE, "copying the region of sample %d failed: %s", i,
                      cudaGetErrorString(e));
        goto done;
      }
    }
    d->out[i].status = STK_GPU_DECODE_OK;
    d->out[i].backend = STK_GPU_BACKEND_HARDWARE;
    d->out[i].nvjpeg_status = 0;
    count(d, &d->ctx->decoded_hw);
  }
done:
  for (int j = 0; tmp && j < k; j++)
    if (tmp[j] && d->dst_idle)
      stk_gpu_device_free_idle(d->ctx, tmp[j], (uintptr_t)d->hw_stream, NULL, 0);
    else if (tmp[j])
      stk_gpu_device_free(d->ctx, tmp[j], (uintptr_t)d->hw_stream, NULL, 0);
  free(data);
  free(len);
  free(img);
  free(idx);
  free(tmp);
  return rc;
}

int stk_gpu_decode_batch(stk_gpu_ctx *ctx, int n, const stk_gpu_decode_in *in,
                         stk_gpu_decode_out *out, const stk_gpu_decode_opts *opts, uintptr_t stream,
                         char *err, size_t errlen) {
  if (n < 0 || (n > 0 && (!in || !out)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  stk_decoder *d = ctx->decoder;
  if (!d) return GPU_FAIL(STK_ERR_UNSUPPORTED, "nvJPEG is not available: %s", ctx->nvjpeg_reason);
  int color = opts ? opts->color : STK_GPU_COLOR_RGB;
  if (color < 0 || color > 2) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown color %d", color);
  for (int i = 0; i < n; i++)
    if (!in[i].data || in[i].size == 0 || !in[i].dst)
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "sample %d: NULL or empty data or no "
                      "destination",
                      i);
  if (n == 0) return 0;
  bool automatic = !opts || opts->hw_load < 0;
  double load = automatic             ? stk_hw_balance_plan(&d->balance)
                : opts->hw_load > 1.0 ? 1.0
                                      : opts->hw_load;
  STK_TRY_INT(ensure_tables(d, n, err, errlen));
  memset(out, 0, (size_t)n * sizeof *out);
  memset(d->info, 0, (size_t)n * sizeof(sample_t));
  d->in = in;
  d->out = out;
  d->fmt = color == STK_GPU_COLOR_RGB   ? NVJPEG_OUTPUT_RGBI
           : color == STK_GPU_COLOR_BGR ? NVJPEG_OUTPUT_BGRI
                                        : NVJPEG_OUTPUT_Y;
  d->channels = color == STK_GPU_COLOR_GRAY ? 1 : 3;
  d->user_stream = (cudaStream_t)stream;
  d->dst_idle = opts && opts->dst_idle;
  apply_padding(d, opts);
  d->wait_failed = 0;

  /* Unless the destinations are idle, the hardware stream starts after the work queued
   * so far (the destinations' allocations) and the fence before the engines' call waits
   * for this point. Idle destinations need no order: the hardware stream then does not
   * wait for the caller's stream either, as nvJPEG's call appears to wait for its stream
   * (the engines' call took 10.1 ms in the pipeline against bare's 9.0, 2026-11-25). */
  if (!d->dst_idle) {
    CUDA_TRY(cudaEventRecord(d->ev_in, d->user_stream));
    CUDA_TRY(cudaStreamWaitEvent(d->hw_stream, d->ev_in, 0));
    CUDA_TRY(cudaEventRecord(d->ev_fence, d->hw_stream));
  }
  int64_t t0 = host_now_ns();
  int *unclassified = classify_list(d), u = 0;
  for (int i = 0; i < n; i++) {
    if (in[i].cls)
      apply_class(d, i, in[i].cls);
    else
      unclassified[u++] = i;
  }
  if (u > 0) run_parallel(d, job_classify, u);
  add_time(d, &d->ctx->decode_parse_ns, host_now_ns() - t0);
  int capable = 0;
  for (int i = 0; i < n; i++) capable += d->info[i].route == 2 && d->info[i].hw_ok;
  int take = (int)floor(load * capable + 0.5);
  pthread_mutex_lock(&d->ctx->counters_lock);
  d->ctx->decode_hw_share = load;
  pthread_mutex_unlock(&d->ctx->counters_lock);
  for (int i = 0; i < n && take > 0; i++)
    if (d->info[i].route == 2 && d->info[i].hw_ok) {
      d->info[i].route = 1;
      take--;
    }
  /* the decoupled path runs on the worker threads while this thread submits the
   * hardware batch (nvjpegDecodeBatched returns only when the engines took it), then
   * this thread joins them */
  int *list = hybrid_list(d), m = 0;
  double hw_pixels = 0, hybrid_pixels = 0;
  for (int i = 0; i < n; i++) {
    double pixels = (double)out[i].width * out[i].height;
    if (d->info[i].route == 1) hw_pixels += pixels;
    if (d->info[i].route == 2) list[m++] = i, hybrid_pixels += pixels;
  }
  int64_t t1 = host_now_ns();
  if (m > 0) start_parallel(d, job_hybrid_list, m);
  d->engines_ns = 0;
  int rc = hw_batch(d, n, opts, err, errlen);
  int64_t t2 = host_now_ns();
  int64_t hybrid_done = m > 0 ? finish_parallel(d) : t1;
  add_time(d, &d->ctx->decode_hw_call_ns, t2 - t1);
  add_time(d, &d->ctx->decode_hybrid_wait_ns, host_now_ns() - t2);
  if (d->hw_handle) { /* the engines' batch, for the next call's bounded wait */
    CUDA_TRY(cudaEventRecord(d->ev_engines, d->hw_stream));
    d->engines_used = true;
  }
  if (rc != 0) return rc;
  if (d->wait_failed) return worker_wait_failure(d, err, errlen);
  m = 0;
  for (int i = 0; i < n; i++)
    if (d->info[i].route == 3) d->info[i].route = 2, list[m++] = i;
  if (m > 0) run_parallel(d, job_hybrid_list, m);
  if (d->wait_failed) return worker_wait_failure(d, err, errlen);
  if (m == 0 && automatic &&
      d->hw_handle) /* a clean batch: both paths timed as they ran together */
    stk_hw_balance_update(&d->balance, hw_pixels, d->engines_ns * 1e-9, hybrid_pixels,
                          (hybrid_done - t1) * 1e-9, (host_now_ns() - t1) * 1e-9);
  CUDA_TRY(cudaEventRecord(d->ev_hw, d->hw_stream));
  CUDA_TRY(cudaStreamWaitEvent(d->user_stream, d->ev_hw, 0));
  return 0;
}
