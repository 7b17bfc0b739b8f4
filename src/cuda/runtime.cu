/*
 * The device runtime of libstoker_cuda.so: context (device, streams, pools), memory,
 * copies, events, statistics, and the exported function table.
 *
 * Device memory comes from a CUDA memory pool owned by the context (stream-ordered
 * cudaMallocFromPoolAsync / cudaFreeAsync): freed blocks are reused by later
 * allocations on any stream once ordered after the free, and the pool keeps at most
 * `device_cache_bytes` cached beyond what is in use (release threshold), so memory stays
 * bounded across epochs. Pinned host memory is pooled in power-of-two classes; a block
 * freed "after a stream" becomes reusable only once an event recorded there completes.
 */
#include <type_traits>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_internal.h"
#include "gpu_kernels.h"

#define DEFAULT_WAIT_TIMEOUT_MS 300000

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                             */
/* ---------------------------------------------------------------------------------- */

int stk_gpu_fail(char *err, size_t errlen, int status, const char *func, const char *fmt, ...) {
  if (err && errlen > 0) {
    int n = snprintf(err, errlen, "%s: ", func);
    if (n >= 0 && (size_t)n < errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return status;
}

int stk_gpu_enter(stk_gpu_ctx *ctx, char *err, size_t errlen) {
  if (!ctx) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no context");
  CUDA_TRY(cudaSetDevice(ctx->device));
  return 0;
}

int64_t stk_gpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int stk_gpu_wait(stk_gpu_ctx *ctx, cudaEvent_t event, cudaStream_t stream, const char *who,
                 const char *what, char *err, size_t errlen) {
  int64_t start = stk_gpu_now_ns(), limit_ms = ctx && ctx->wait_timeout_ms > 0
                                                   ? ctx->wait_timeout_ms
                                                   : DEFAULT_WAIT_TIMEOUT_MS;
  int64_t deadline = start + limit_ms * 1000000, sleep_ns = 10000;
  for (;;) {
    cudaError_t e = event ? cudaEventQuery(event) : cudaStreamQuery(stream);
    if (e == cudaSuccess) return 0;
    if (e != cudaErrorNotReady)
      return stk_gpu_fail(err, errlen, STK_ERR_DEVICE, who, "waiting for %s failed: %s", what,
                          cudaGetErrorString(e));
    (void)cudaGetLastError(); /* not-ready is no error */
    int64_t now = stk_gpu_now_ns();
    if (now >= deadline)
      return stk_gpu_fail(
          err, errlen, STK_ERR_DEVICE, who,
          "%s has not completed after %lld ms (the pipeline's timeout_ms): the device stopped "
          "working on it (the kernel driver's log, dmesg, may say why)",
          what, (long long)((now - start) / 1000000));
    struct timespec ts = {0, (long)(sleep_ns < deadline - now ? sleep_ns : deadline - now)};
    nanosleep(&ts, NULL);
    if (sleep_ns < 1000000) sleep_ns *= 2;
  }
}

int stk_gpu_read_statuses(stk_gpu_ctx *ctx, const int *d_status, int n, int *status,
                          cudaStream_t stream, const char *who, const char *what, char *err,
                          size_t errlen) {
  cudaEvent_t ev;
  CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  int rc = 0;
  cudaError_t e = cudaEventRecord(ev, stream);
  if (e != cudaSuccess)
    rc = GPU_FAIL(STK_ERR_DEVICE, "cudaEventRecord failed: %s", cudaGetErrorString(e));
  if (rc == 0) rc = stk_gpu_wait(ctx, ev, NULL, who, what, err, errlen);
  if (rc == 0) {
    e = cudaMemcpy(status, d_status, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
      rc = GPU_FAIL(STK_ERR_DEVICE, "reading the statuses failed: %s", cudaGetErrorString(e));
  }
  cudaEventDestroy(ev);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Pinned host pool                                                                   */
/* ---------------------------------------------------------------------------------- */

#define PINNED_HEADER 64 /* bytes before the user pointer: the block's descriptor */

static size_t class_bytes(int cls) { return (size_t)4096 << cls; }

/* Moves pending blocks whose event completed to the free lists (lock held). */
static void pinned_reclaim(stk_pinned_pool *p) {
  stk_pinned_block **link = &p->pending;
  while (*link) {
    stk_pinned_block *b = *link;
    if (cudaEventQuery(b->event) == cudaErrorNotReady) {
      link = &b->next;
      continue;
    }
    (void)cudaGetLastError(); /* a failed query is a sticky error reported elsewhere */
    cudaEventDestroy(b->event);
    b->event = NULL;
    *link = b->next;
    size_t bytes = class_bytes(b->cls);
    p->in_use -= bytes;
    if (p->cached + bytes > p->max_cached) { /* over the cache bound: give it back */
      cudaFreeHost(b->base);
      free(b);
      continue;
    }
    b->next = p->free_list[b->cls];
    p->free_list[b->cls] = b;
    p->cached += bytes;
  }
}

static int gpu_pinned_alloc(stk_gpu_ctx *ctx, size_t size, void **out, char *err, size_t errlen) {
  if (!out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output pointer");
  *out = NULL;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  int cls = 0;
  while (cls < STK_PINNED_CLASSES && class_bytes(cls) < size + PINNED_HEADER) cls++;
  if (cls == STK_PINNED_CLASSES)
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY,
                    "%zu bytes of pinned memory is beyond the pool's "
                    "largest class",
                    size);
  stk_pinned_pool *p = &ctx->pinned;
  pthread_mutex_lock(&p->lock);
  pinned_reclaim(p);
  stk_pinned_block *b = p->free_list[cls];
  if (b) {
    p->free_list[cls] = b->next;
    p->cached -= class_bytes(cls);
  }
  pthread_mutex_unlock(&p->lock);
  if (!b) {
    b = (stk_pinned_block *)calloc(1, sizeof *b);
    if (!b) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for a block descriptor");
    cudaError_t e = cudaHostAlloc(&b->base, class_bytes(cls), cudaHostAllocPortable);
    if (e != cudaSuccess) {
      free(b);
      return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "cudaHostAlloc of %zu bytes failed: %s",
                      class_bytes(cls), cudaGetErrorString(e));
    }
    b->cls = cls;
  }
  b->next = NULL;
  memcpy(b->base, &b, sizeof b);
  pthread_mutex_lock(&p->lock);
  p->in_use += class_bytes(cls);
  if (p->in_use > p->peak) p->peak = p->in_use;
  pthread_mutex_unlock(&p->lock);
  *out = (char *)b->base + PINNED_HEADER;
  return 0;
}

static int gpu_pinned_free(stk_gpu_ctx *ctx, void *ptr, const uintptr_t *stream, char *err,
                           size_t errlen) {
  if (!ptr) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  stk_pinned_block *b;
  memcpy(&b, (char *)ptr - PINNED_HEADER, sizeof b);
  if (!b || (char *)b->base + PINNED_HEADER != (char *)ptr)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "%p is not a pinned block of this context", ptr);
  cudaEvent_t ev = NULL;
  if (stream) {
    CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaError_t e = cudaEventRecord(ev, (cudaStream_t)*stream);
    if (e != cudaSuccess) {
      cudaEventDestroy(ev);
      return GPU_FAIL(STK_ERR_DEVICE, "cudaEventRecord failed: %s", cudaGetErrorString(e));
    }
  }
  stk_pinned_pool *p = &ctx->pinned;
  pthread_mutex_lock(&p->lock);
  b->event = ev;
  if (ev) { /* reclaimed by a later alloc once the stream passed this point */
    b->next = p->pending;
    p->pending = b;
  } else {
    size_t bytes = class_bytes(b->cls);
    p->in_use -= bytes;
    if (p->cached + bytes > p->max_cached) {
      pthread_mutex_unlock(&p->lock);
      cudaFreeHost(b->base);
      free(b);
      return 0;
    }
    b->next = p->free_list[b->cls];
    p->free_list[b->cls] = b;
    p->cached += bytes;
  }
  pthread_mutex_unlock(&p->lock);
  return 0;
}

/* Frees every cached block; with `all`, pending ones too (after their events). */
static void pinned_drop(stk_pinned_pool *p, bool all) {
  pthread_mutex_lock(&p->lock);
  if (all)
    for (stk_pinned_block *b = p->pending; b; b = b->next)
      (void)stk_gpu_wait(NULL, b->event, NULL, "close", "a pinned block's last use", NULL, 0);
  pinned_reclaim(p);
  for (int c = 0; c < STK_PINNED_CLASSES; c++) {
    while (p->free_list[c]) {
      stk_pinned_block *b = p->free_list[c];
      p->free_list[c] = b->next;
      cudaFreeHost(b->base);
      free(b);
    }
  }
  p->cached = 0;
  pthread_mutex_unlock(&p->lock);
}

/* ---------------------------------------------------------------------------------- */
/* Context                                                                            */
/* ---------------------------------------------------------------------------------- */

static int gpu_device_count(int *count, char *err, size_t errlen) {
  if (!count) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output pointer");
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(count);
  if (e == cudaErrorNoDevice) {
    (void)cudaGetLastError();
    *count = 0;
    return 0;
  }
  if (e != cudaSuccess) {
    *count = 0;
    return GPU_FAIL(STK_ERR_DEVICE, "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorString(e),
                    cudaGetErrorName(e));
  }
  return 0;
}

/* ---- the idle pool's deferred frees ----
 * A block of the idle pool freed "after a stream" waits here, with an event recorded on
 * that stream, until the event completes; then it is freed on idle_stream, where the
 * pool hands it to the next idle allocation (same-stream reuse). So the pool reuses
 * memory, and only memory nothing queued can touch. (The driver's own opportunistic
 * reuse of completed cross-stream frees did not happen in practice: on the H100 the
 * pool grew to its 2 GiB threshold in 300 small batches, 2026-11-25.) */
typedef struct stk_idle_free {
  struct stk_idle_free *next;
  void *ptr;
  cudaEvent_t done;
} stk_idle_free;

/* Moves the completed frees to the pool (idle_lock held). */
static void idle_reclaim(stk_gpu_ctx *ctx) {
  stk_idle_free **link = &ctx->idle_pending;
  while (*link) {
    stk_idle_free *f = *link;
    cudaError_t q = cudaEventQuery(f->done);
    if (q == cudaErrorNotReady) {
      link = &f->next;
      continue;
    }
    (void)cudaGetLastError();
    cudaFreeAsync(f->ptr, ctx->idle_stream);
    *link = f->next;
    f->next = ctx->idle_spare;
    ctx->idle_spare = f;
  }
}

/* At close: every stream has been synchronised; the pending blocks go back. */
static void idle_release_all(stk_gpu_ctx *ctx) {
  for (stk_idle_free *f = ctx->idle_pending, *n; f; f = n) {
    n = f->next;
    (void)stk_gpu_wait(ctx, f->done, NULL, "close", "an idle block's last use", NULL, 0);
    cudaFreeAsync(f->ptr, ctx->idle_stream);
    cudaEventDestroy(f->done);
    free(f);
  }
  for (stk_idle_free *f = ctx->idle_spare, *n; f; f = n) {
    n = f->next;
    cudaEventDestroy(f->done);
    free(f);
  }
  ctx->idle_pending = ctx->idle_spare = NULL;
  if (ctx->idle_stream)
    (void)stk_gpu_wait(ctx, NULL, ctx->idle_stream, "close", "the idle pool's frees", NULL, 0);
}

/* Whether the context's streams drain within the wait bound (at close). */
static bool streams_drain(stk_gpu_ctx *ctx) {
  cudaStream_t streams[3] = {ctx->compute, ctx->copy, ctx->decode};
  for (int k = 0; k < 3; k++)
    if (streams[k] && stk_gpu_wait(ctx, NULL, streams[k], "close", "a stream's work", NULL, 0) != 0)
      return false;
  return true;
}

static void gpu_close(stk_gpu_ctx *ctx) {
  if (!ctx) return;
  cudaSetDevice(ctx->device);
  /* A device that stopped: its streams, pools, events and nvJPEG's objects stay allocated
   * (destroying them under work the device still holds may block for ever or fault);
   * the decoder's threads still stop. Leaked, for a process that is failing anyway. */
  bool drained = streams_drain(ctx);
  if (!stk_decoder_close(ctx, drained) || !drained) {
    fprintf(stderr,
            "stoker: GPU %d did not finish its queued work within %lld ms; its context is left "
            "allocated\n",
            ctx->device, (long long)ctx->wait_timeout_ms);
    return;
  }
  pinned_drop(&ctx->pinned, true);
  if (ctx->pool) cudaMemPoolDestroy(ctx->pool); /* released once outstanding frees finish */
  idle_release_all(ctx);
  if (ctx->idle_pool) cudaMemPoolDestroy(ctx->idle_pool);
  if (ctx->idle_ready) cudaEventDestroy(ctx->idle_ready);
  if (ctx->idle_stream) cudaStreamDestroy(ctx->idle_stream);
  pthread_mutex_destroy(&ctx->idle_lock);
  if (ctx->compute) cudaStreamDestroy(ctx->compute);
  if (ctx->copy) cudaStreamDestroy(ctx->copy);
  if (ctx->decode) cudaStreamDestroy(ctx->decode);
  pthread_mutex_destroy(&ctx->pinned.lock);
  pthread_mutex_destroy(&ctx->counters_lock);
  free(ctx);
}

static int open_device(stk_gpu_ctx *ctx, const stk_gpu_open_opts *o, char *err, size_t errlen) {
  int count = 0;
  STK_TRY_INT(gpu_device_count(&count, err, errlen));
  if (count == 0) return GPU_FAIL(STK_ERR_DEVICE, "no CUDA device is visible");
  if (o->device < 0 || o->device >= count)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "device %d does not exist (%d CUDA device%s)",
                    o->device, count, count == 1 ? "" : "s");
  CUDA_TRY(cudaSetDevice(ctx->device));
  CUDA_TRY(cudaGetDeviceProperties(&ctx->prop, ctx->device));
  int pools = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ctx->device));
  if (!pools)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "device %d (%s) has no stream-ordered memory pools",
                    ctx->device, ctx->prop.name);
  CUDA_TRY(cudaStreamCreateWithFlags(&ctx->compute, cudaStreamNonBlocking));
  CUDA_TRY(cudaStreamCreateWithFlags(&ctx->copy, cudaStreamNonBlocking));
  CUDA_TRY(cudaStreamCreateWithFlags(&ctx->decode, cudaStreamNonBlocking));
  cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ctx->device;
  CUDA_TRY(cudaMemPoolCreate(&ctx->pool, &props));
  uint64_t keep = o->device_cache_bytes ? o->device_cache_bytes : (uint64_t)2 << 30;
  CUDA_TRY(cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolAttrReleaseThreshold, &keep));
  /* The idle pool: no reuse through stream dependencies, only of completed frees. Its
   * allocations are made on idle_stream, which never gets work, so no free is ever
   * ordered before them on their own stream either. */
  CUDA_TRY(cudaMemPoolCreate(&ctx->idle_pool, &props));
  CUDA_TRY(cudaMemPoolSetAttribute(ctx->idle_pool, cudaMemPoolAttrReleaseThreshold, &keep));
  int off = 0, on = 1;
  CUDA_TRY(cudaMemPoolSetAttribute(ctx->idle_pool, cudaMemPoolReuseFollowEventDependencies, &off));
  CUDA_TRY(
      cudaMemPoolSetAttribute(ctx->idle_pool, cudaMemPoolReuseAllowInternalDependencies, &off));
  CUDA_TRY(cudaMemPoolSetAttribute(ctx->idle_pool, cudaMemPoolReuseAllowOpportunistic, &on));
  CUDA_TRY(cudaStreamCreateWithFlags(&ctx->idle_stream, cudaStreamNonBlocking));
  CUDA_TRY(cudaEventCreateWithFlags(&ctx->idle_ready, cudaEventDisableTiming));
  return 0;
}

/* CUDA maps streams onto CUDA_DEVICE_MAX_CONNECTIONS hardware work queues (8 unless set),
 * and two streams sharing a queue run one after the other. nvJPEG's engines and stoker's
 * own JPEG decoder, each on its stream, then slowed each other (on the H100 together 36k
 * images/s with 8 queues, 43k-48k with 32), and DDP ranks waited for batches queued behind
 * NCCL's kernels (docs/gpu.md, "Hardware queues"). So 32, unless the user chose a value.
 * It only counts for a context created afterwards, so it is set when this library is
 * loaded, before its first CUDA call (the Python package sets it at import, earlier
 * still: torch usually creates the context before stoker's library loads). */
__attribute__((constructor)) static void default_connections(void) {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0); /* 0: a value already set is kept */
}

static int gpu_open(const stk_gpu_open_opts *opts, stk_gpu_ctx **out, char *err, size_t errlen) {
  if (!out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output pointer");
  *out = NULL;
  stk_gpu_open_opts o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  stk_gpu_ctx *ctx = (stk_gpu_ctx *)calloc(1, sizeof *ctx);
  if (!ctx) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for the context");
  ctx->device = o.device;
  ctx->wait_timeout_ms = o.wait_timeout_ms > 0 ? o.wait_timeout_ms : DEFAULT_WAIT_TIMEOUT_MS;
  pthread_mutex_init(&ctx->pinned.lock, NULL);
  pthread_mutex_init(&ctx->counters_lock, NULL);
  pthread_mutex_init(&ctx->idle_lock, NULL);
  ctx->pinned.max_cached = o.pinned_cache_bytes ? o.pinned_cache_bytes : (uint64_t)256 << 20;
  int st = open_device(ctx, &o, err, errlen);
  if (st == 0 && !o.no_nvjpeg)
    st = stk_decoder_open(ctx, &o, err, errlen);
  else if (st == 0)
    snprintf(ctx->nvjpeg_reason, sizeof ctx->nvjpeg_reason, "disabled by no_nvjpeg");
  if (st != 0) {
    gpu_close(ctx);
    return st;
  }
  *out = ctx;
  return 0;
}

static int gpu_device_info(stk_gpu_ctx *ctx, stk_gpu_device_info *out, char *err, size_t errlen) {
  if (!ctx || !out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no context or output");
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", ctx->prop.name);
  out->device = ctx->device;
  out->cc_major = ctx->prop.major;
  out->cc_minor = ctx->prop.minor;
  out->sm_count = ctx->prop.multiProcessorCount;
  out->total_memory = (int64_t)ctx->prop.totalGlobalMem;
  stk_decoder_info(ctx, out);
  return 0;
}

static uintptr_t gpu_stream(stk_gpu_ctx *ctx, int which) {
  if (!ctx) return 0;
  return (uintptr_t)(which == STK_GPU_STREAM_COPY     ? ctx->copy
                     : which == STK_GPU_STREAM_DECODE ? ctx->decode
                                                      : ctx->compute);
}

static int gpu_stats(stk_gpu_ctx *ctx, stk_gpu_stats *out, char *err, size_t errlen) {
  if (!out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output");
  memset(out, 0, sizeof *out);
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  pthread_mutex_lock(&ctx->idle_lock); /* completed idle frees count as returned */
  idle_reclaim(ctx);
  int synced = stk_gpu_wait(ctx, NULL, ctx->idle_stream, "stats", "the idle pool's frees", err,
                            errlen); /* only frees run there */
  pthread_mutex_unlock(&ctx->idle_lock);
  if (synced != 0) return synced;
  cudaMemPool_t pools[2] = {ctx->pool, ctx->idle_pool};
  for (int k = 0; k < 2; k++) { /* the two pools together (the peaks may not coincide) */
    uint64_t v = 0;
    CUDA_TRY(cudaMemPoolGetAttribute(pools[k], cudaMemPoolAttrUsedMemCurrent, &v));
    out->device_in_use += (int64_t)v;
    CUDA_TRY(cudaMemPoolGetAttribute(pools[k], cudaMemPoolAttrReservedMemCurrent, &v));
    out->device_reserved += (int64_t)v;
    CUDA_TRY(cudaMemPoolGetAttribute(pools[k], cudaMemPoolAttrUsedMemHigh, &v));
    out->device_peak += (int64_t)v;
  }
  size_t fr = 0, tot = 0;
  CUDA_TRY(cudaMemGetInfo(&fr, &tot));
  out->device_free = (int64_t)fr;
  out->device_total = (int64_t)tot;
  pthread_mutex_lock(&ctx->pinned.lock);
  pinned_reclaim(&ctx->pinned);
  out->pinned_in_use = (int64_t)ctx->pinned.in_use;
  out->pinned_cached = (int64_t)ctx->pinned.cached;
  out->pinned_peak = (int64_t)ctx->pinned.peak;
  pthread_mutex_unlock(&ctx->pinned.lock);
  pthread_mutex_lock(&ctx->counters_lock);
  out->decoded_hw = ctx->decoded_hw;
  out->decoded_hybrid = ctx->decoded_hybrid;
  out->decode_fallbacks = ctx->decode_fallbacks;
  out->decode_failures = ctx->decode_failures;
  out->decode_parse_ns = ctx->decode_parse_ns;
  out->decode_fence_ns = ctx->decode_fence_ns;
  out->decode_hw_share = ctx->decode_hw_share;
  out->decode_hw_call_ns = ctx->decode_hw_call_ns;
  out->decode_hybrid_wait_ns = ctx->decode_hybrid_wait_ns;
  pthread_mutex_unlock(&ctx->counters_lock);
  return 0;
}

static int gpu_trim(stk_gpu_ctx *ctx, uint64_t keep, char *err, size_t errlen) {
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaMemPoolTrimTo(ctx->pool, (size_t)keep));
  pthread_mutex_lock(&ctx->idle_lock);
  idle_reclaim(ctx);
  pthread_mutex_unlock(&ctx->idle_lock);
  CUDA_TRY(cudaMemPoolTrimTo(ctx->idle_pool, 0));
  pinned_drop(&ctx->pinned, false);
  return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Device memory, copies                                                              */
/* ---------------------------------------------------------------------------------- */

int stk_gpu_device_alloc(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out, char *err,
                         size_t errlen) {
  if (!out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output pointer");
  *out = NULL;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  if (size == 0) return 0;
  cudaError_t e = cudaMallocFromPoolAsync(out, size, ctx->pool, (cudaStream_t)stream);
  if (e != cudaSuccess) {
    *out = NULL;
    (void)cudaGetLastError(); /* allocation failures are not sticky */
    return GPU_FAIL(e == cudaErrorMemoryAllocation ? STK_ERR_OUT_OF_MEMORY : STK_ERR_DEVICE,
                    "cudaMallocFromPoolAsync of %zu bytes failed: %s", size, cudaGetErrorString(e));
  }
  return 0;
}

static int gpu_host_register(stk_gpu_ctx *ctx, void *ptr, size_t bytes, char *err, size_t errlen) {
  if (!ptr || bytes == 0) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL or empty host range");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return GPU_FAIL(STK_ERR_DEVICE, "cudaHostRegister of %zu bytes at %p failed: %s", bytes, ptr,
                    cudaGetErrorString(e));
  }
  return 0;
}

static int gpu_host_alloc(stk_gpu_ctx *ctx, size_t bytes, void **out, char *err, size_t errlen) {
  if (!out || bytes == 0) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output or 0 bytes");
  *out = NULL;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  cudaError_t e = cudaHostAlloc(out, bytes, cudaHostAllocDefault);
  if (e != cudaSuccess) {
    *out = NULL;
    (void)cudaGetLastError();
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "cudaHostAlloc of %zu bytes failed: %s", bytes,
                    cudaGetErrorString(e));
  }
  return 0;
}

static void gpu_host_free(stk_gpu_ctx *ctx, void *ptr) {
  if (!ptr || stk_gpu_enter(ctx, NULL, 0) != 0) return;
  if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

static void gpu_host_unregister(stk_gpu_ctx *ctx, void *ptr) {
  if (!ptr || stk_gpu_enter(ctx, NULL, 0) != 0) return;
  if (cudaHostUnregister(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* nvJPEG's hardware engines write their outputs when the batched call is made, whatever
 * the stream says (decode.cu): their destinations must be blocks that no queued work
 * reads or writes. The idle pool hands out only such blocks (fresh memory or completed
 * frees), so the caller need not wait for its streams. `stream` is ordered after the
 * allocation (a formality: idle_stream has no work). */
int stk_gpu_device_alloc_idle(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out,
                              char *err, size_t errlen) {
  if (!out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output pointer");
  *out = NULL;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  if (size == 0) return 0;
  pthread_mutex_lock(&ctx->idle_lock);
  idle_reclaim(ctx);
  cudaError_t e = cudaMallocFromPoolAsync(out, size, ctx->idle_pool, ctx->idle_stream);
  if (e == cudaSuccess) e = cudaEventRecord(ctx->idle_ready, ctx->idle_stream);
  if (e == cudaSuccess) e = cudaStreamWaitEvent((cudaStream_t)stream, ctx->idle_ready, 0);
  pthread_mutex_unlock(&ctx->idle_lock);
  if (e != cudaSuccess) {
    if (*out) cudaFreeAsync(*out, ctx->idle_stream);
    *out = NULL;
    (void)cudaGetLastError();
    return GPU_FAIL(e == cudaErrorMemoryAllocation ? STK_ERR_OUT_OF_MEMORY : STK_ERR_DEVICE,
                    "allocating %zu idle bytes failed: %s", size, cudaGetErrorString(e));
  }
  return 0;
}

int stk_gpu_device_free_idle(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err,
                             size_t errlen) {
  if (!ptr) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  pthread_mutex_lock(&ctx->idle_lock);
  stk_idle_free *f = ctx->idle_spare;
  if (f) ctx->idle_spare = f->next;
  cudaError_t e = cudaSuccess;
  if (!f && (f = (stk_idle_free *)calloc(1, sizeof *f)) != NULL) {
    e = cudaEventCreateWithFlags(&f->done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      free(f);
      f = NULL;
    }
  }
  if (f) e = cudaEventRecord(f->done, (cudaStream_t)stream);
  if (f && e == cudaSuccess) {
    f->ptr = ptr;
    f->next = ctx->idle_pending;
    ctx->idle_pending = f;
  } else if (f) {
    f->next = ctx->idle_spare;
    ctx->idle_spare = f;
  }
  pthread_mutex_unlock(&ctx->idle_lock);
  if (!f ||
      e != cudaSuccess) { /* no record: the block is leaked to the pool's end, not reused early */
    (void)cudaGetLastError();
    return GPU_FAIL(f ? STK_ERR_DEVICE : STK_ERR_OUT_OF_MEMORY,
                    "freeing an idle block after stream %p failed: %s", (void *)stream,
                    f ? cudaGetErrorString(e) : "no host memory");
  }
  return 0;
}

int stk_gpu_device_free(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err, size_t errlen) {
  if (!ptr) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaFreeAsync(ptr, (cudaStream_t)stream));
  return 0;
}

int stk_gpu_staging_alloc(stk_gpu_ctx *ctx, size_t bytes, void **host, char *err, size_t errlen) {
  return gpu_pinned_alloc(ctx, bytes, host, err, errlen);
}

int stk_gpu_staging_free(stk_gpu_ctx *ctx, void *host, char *err, size_t errlen) {
  return gpu_pinned_free(ctx, host, NULL, err, errlen);
}

int stk_gpu_upload_staged(stk_gpu_ctx *ctx, void *host, size_t bytes, cudaStream_t stream,
                          void **dev, char *err, size_t errlen) {
  *dev = NULL;
  uintptr_t sh = (uintptr_t)stream;
  int rc = stk_gpu_device_alloc(ctx, bytes, sh, dev, err, errlen);
  if (rc == 0) {
    cudaError_t e = cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) {
      cudaFreeAsync(*dev, stream);
      *dev = NULL;
      rc = GPU_FAIL(STK_ERR_DEVICE, "copying %zu bytes of parameters failed: %s", bytes,
                    cudaGetErrorString(e));
    }
  }
  /* reused only once the stream has passed the copy */
  int rc2 = gpu_pinned_free(ctx, host, rc == 0 ? &sh : NULL, err, errlen);
  return rc ? rc : rc2;
}

int stk_gpu_upload(stk_gpu_ctx *ctx, const void *host, size_t bytes, cudaStream_t stream,
                   void **dev, char *err, size_t errlen) {
  /* through a pinned block: a copy from pageable memory may synchronise with the stream,
   * which would stall the host behind the decoder's work */
  void *pin = NULL;
  STK_TRY_INT(stk_gpu_staging_alloc(ctx, bytes, &pin, err, errlen));
  memcpy(pin, host, bytes);
  return stk_gpu_upload_staged(ctx, pin, bytes, stream, dev, err, errlen);
}

static int gpu_memcpy_async(stk_gpu_ctx *ctx, void *dst, const void *src, size_t bytes,
                            uintptr_t stream, char *err, size_t errlen) {
  if (bytes == 0) return 0;
  if (!dst || !src) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL pointer");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
  return 0;
}

static int gpu_memcpy2d_async(stk_gpu_ctx *ctx, void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height, uintptr_t stream,
                              char *err, size_t errlen) {
  if (width == 0 || height == 0) return 0;
  if (!dst || !src) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL pointer");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault,
                             (cudaStream_t)stream));
  return 0;
}

static int gpu_memset_async(stk_gpu_ctx *ctx, void *dst, int value, size_t bytes, uintptr_t stream,
                            char *err, size_t errlen) {
  if (bytes == 0) return 0;
  if (!dst) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL pointer");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaMemsetAsync(dst, value, bytes, (cudaStream_t)stream));
  return 0;
}

static int gpu_stream_sync(stk_gpu_ctx *ctx, uintptr_t stream, char *err, size_t errlen) {
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  return stk_gpu_wait(ctx, NULL, (cudaStream_t)stream, "stream_sync", "the stream's queued work",
                      err, errlen);
}

/* ---------------------------------------------------------------------------------- */
/* Events                                                                             */
/* ---------------------------------------------------------------------------------- */

static int gpu_event_create(stk_gpu_ctx *ctx, int timing, void **out, char *err, size_t errlen) {
  if (!out) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no output pointer");
  *out = NULL;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  cudaEvent_t ev;
  CUDA_TRY(cudaEventCreateWithFlags(&ev, timing ? cudaEventDefault : cudaEventDisableTiming));
  *out = (void *)ev;
  return 0;
}

static int gpu_event_record(stk_gpu_ctx *ctx, void *event, uintptr_t stream, char *err,
                            size_t errlen) {
  if (!event) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no event");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
  return 0;
}

static int gpu_stream_wait_event(stk_gpu_ctx *ctx, uintptr_t stream, void *event, char *err,
                                 size_t errlen) {
  if (!event) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no event");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
  return 0;
}

static int gpu_event_sync(stk_gpu_ctx *ctx, void *event, char *err, size_t errlen) {
  if (!event) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no event");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  return stk_gpu_wait(ctx, (cudaEvent_t)event, NULL, "event_sync", "the work before the event", err,
                      errlen);
}

static int gpu_event_query(stk_gpu_ctx *ctx, void *event, int *done, char *err, size_t errlen) {
  if (!event || !done) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "no event or output");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *done = 0;
    return 0;
  }
  CUDA_TRY(e);
  *done = 1;
  return 0;
}

static int gpu_event_elapsed(stk_gpu_ctx *ctx, void *start, void *end, float *ms, char *err,
                             size_t errlen) {
  if (!start || !end || !ms) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  CUDA_TRY(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
  return 0;
}

static void gpu_event_destroy(stk_gpu_ctx *ctx, void *event) {
  if (!event || !ctx) return;
  cudaSetDevice(ctx->device);
  cudaEventDestroy((cudaEvent_t)event);
}

/* ---------------------------------------------------------------------------------- */
/* The table                                                                          */
/* ---------------------------------------------------------------------------------- */

/* The kernels: their description, generated from gpu_kernels.h's list, and one adapter
 * per kernel that turns the generic launch record back into the kernel's typed call. */
static const stk_gpu_kernel_info kernel_infos[STK_GPU_K_COUNT] = {
    STK_GPU_KERNELS(STK_GPU_KERNEL_INFO)};

typedef int (*kernel_adapter)(stk_gpu_ctx *ctx, const stk_gpu_launch *l, char *err, size_t errlen);
typedef struct {
  kernel_adapter run;
  bool needs_args; /* the args type is not stk_gpu_no_args: NULL args is refused */
} kernel_entry;

#define KERNEL_ADAPTER(ID, name, S, A)                                                            \
  static int run_##name(stk_gpu_ctx *ctx, const stk_gpu_launch *l, char *err, size_t errlen) {    \
    return stk_gpu_k_##name(ctx, l->n, (const S *)l->samples, (const A *)l->args, l->stream, err, \
                            errlen);                                                              \
  }
STK_GPU_KERNELS(KERNEL_ADAPTER)
#undef KERNEL_ADAPTER

#define KERNEL_ENTRY(ID, name, S, A) {run_##name, !std::is_same<A, stk_gpu_no_args>::value},
static const kernel_entry kernel_entries[STK_GPU_K_COUNT] = {STK_GPU_KERNELS(KERNEL_ENTRY)};
#undef KERNEL_ENTRY

static int gpu_supports(stk_gpu_ctx *ctx, int kernel) {
  (void)ctx;
  return kernel >= 0 && kernel < STK_GPU_K_COUNT;
}

/* Checks the record against the kernel's description, then runs the kernel's adapter. */
static int gpu_launch(stk_gpu_ctx *ctx, int kernel, const stk_gpu_launch *l, char *err,
                      size_t errlen) {
  if (kernel < 0 || kernel >= STK_GPU_K_COUNT)
    return stk_gpu_fail(err, errlen, STK_ERR_UNSUPPORTED, "launch",
                        "kernel id %d is not one of this backend's %d kernels", kernel,
                        (int)STK_GPU_K_COUNT);
  const stk_gpu_kernel_info *k = &kernel_infos[kernel];
  if (!ctx || !l)
    return stk_gpu_fail(err, errlen, STK_ERR_INVALID_ARGUMENT, k->name,
                        "no context or launch record");
  if (l->n < 0 || (l->n > 0 && !l->samples))
    return stk_gpu_fail(err, errlen, STK_ERR_INVALID_ARGUMENT, k->name, "bad batch (n = %d)", l->n);
  if (l->sample_size != k->sample_size || l->args_size != k->args_size)
    return stk_gpu_fail(err, errlen, STK_ERR_INVALID_ARGUMENT, k->name,
                        "records of %zu / %zu bytes, the kernel takes %zu / %zu (sample / args): "
                        "caller and backend were built from different headers",
                        l->sample_size, l->args_size, k->sample_size, k->args_size);
  if (kernel_entries[kernel].needs_args && !l->args)
    return stk_gpu_fail(err, errlen, STK_ERR_INVALID_ARGUMENT, k->name, "no batch arguments");
  return kernel_entries[kernel].run(ctx, l, err, errlen);
}

static const stk_gpu_api api_table = {
    STK_GPU_ABI_VERSION,
    sizeof(stk_gpu_api),
    gpu_device_count,
    gpu_open,
    gpu_close,
    gpu_device_info,
    gpu_stream,
    gpu_stats,
    gpu_trim,
    stk_gpu_device_alloc,
    stk_gpu_device_free,
    gpu_pinned_alloc,
    gpu_pinned_free,
    gpu_memcpy_async,
    gpu_memcpy2d_async,
    gpu_memset_async,
    gpu_stream_sync,
    gpu_event_create,
    gpu_event_record,
    gpu_stream_wait_event,
    gpu_event_sync,
    gpu_event_query,
    gpu_event_elapsed,
    gpu_event_destroy,
    stk_gpu_jpeg_header,
    stk_gpu_decode_batch,
    STK_GPU_K_COUNT,
    kernel_infos,
    gpu_supports,
    gpu_launch,
    stk_gpu_device_alloc_idle,
    stk_gpu_decode_classify,
    stk_gpu_device_free_idle,
    gpu_host_register,
    gpu_host_unregister,
    gpu_host_alloc,
    gpu_host_free,
};

extern "C" __attribute__((visibility("default"))) const stk_gpu_api *stk_cuda_get_api(void) {
  return &api_table;
}
