/*
 * Internals of libstoker_cuda.so shared by its .cu files (CUDA C++; never included by
 * the CPU library): the context, error helpers, the pinned pool, the parameter upload
 * used by every batched kernel entry point, and the decoder's state.
 */
#ifndef STOKER_CUDA_GPU_INTERNAL_H
#define STOKER_CUDA_GPU_INTERNAL_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "gpu_api.h"
#include "nvjpeg_min.h"

#define STK_HIDDEN __attribute__((visibility("hidden")))

/* ---- errors ---- */

/* Writes "<func>: <text>" into err (when given) and returns `status`. */
STK_HIDDEN int stk_gpu_fail(char *err, size_t errlen, int status, const char *func, const char *fmt,
                            ...) __attribute__((format(printf, 5, 6)));
#define GPU_FAIL(status, ...) stk_gpu_fail(err, errlen, (status), __func__, __VA_ARGS__)

/* On a CUDA error: message naming the call and cudaGetErrorString, STK_ERR_DEVICE (or
 * STK_ERR_OUT_OF_MEMORY for cudaErrorMemoryAllocation). Uses `err`, `errlen`. */
#define CUDA_TRY(call)                                                                            \
  do {                                                                                            \
    cudaError_t stk_e_ = (call);                                                                  \
    if (stk_e_ != cudaSuccess)                                                                    \
      return stk_gpu_fail(                                                                        \
          err, errlen,                                                                            \
          stk_e_ == cudaErrorMemoryAllocation ? STK_ERR_OUT_OF_MEMORY : STK_ERR_DEVICE, __func__, \
          "%s failed: %s (%s)", #call, cudaGetErrorString(stk_e_), cudaGetErrorName(stk_e_));     \
  } while (0)

#define STK_TRY_INT(expr)           \
  do {                              \
    int stk_r_ = (expr);            \
    if (stk_r_ != 0) return stk_r_; \
  } while (0)

/* ---- pinned host pool ---- */

#define STK_PINNED_CLASSES 40 /* power-of-two size classes from 2^12 */

typedef struct stk_pinned_block {
  struct stk_pinned_block *next;
  void *base;        /* from cudaHostAlloc */
  int cls;           /* size class */
  cudaEvent_t event; /* pending: reusable once this completed (NULL: at once) */
} stk_pinned_block;

typedef struct {
  pthread_mutex_t lock;
  stk_pinned_block *free_list[STK_PINNED_CLASSES];
  stk_pinned_block *pending; /* freed with an event still running */
  uint64_t max_cached, cached, in_use, peak;
} stk_pinned_pool;

/* ---- decoder (decode.cu) ---- */

typedef struct stk_decoder stk_decoder;
STK_HIDDEN int stk_decoder_open(stk_gpu_ctx *ctx, const stk_gpu_open_opts *opts, char *err,
                                size_t errlen);
/* Stops the decoder's threads; with `device_ok`, waits (bounded) for its hardware
 * streams and frees it. Returns false when the decoder's device objects were left
 * allocated (the device stopped: !device_ok or its streams did not drain). */
STK_HIDDEN bool stk_decoder_close(stk_gpu_ctx *ctx, bool device_ok);
STK_HIDDEN int stk_gpu_jpeg_header(stk_gpu_ctx *ctx, const uint8_t *data, size_t size,
                                   stk_gpu_jpeg_info *out, char *err, size_t errlen);
STK_HIDDEN int stk_gpu_decode_classify(stk_gpu_ctx *ctx, const uint8_t *data, size_t size,
                                       int roi_x, int roi_y, int roi_w, int roi_h,
                                       stk_gpu_decode_class *out, char *err, size_t errlen);
STK_HIDDEN int stk_gpu_decode_batch(stk_gpu_ctx *ctx, int n, const stk_gpu_decode_in *in,
                                    stk_gpu_decode_out *out, const stk_gpu_decode_opts *opts,
                                    uintptr_t stream, char *err, size_t errlen);
STK_HIDDEN void stk_decoder_info(stk_gpu_ctx *ctx, stk_gpu_device_info *out);

/* ---- the context ---- */

struct stk_gpu_ctx {
  int device;
  cudaDeviceProp prop;
  cudaStream_t compute, copy, decode;
  cudaMemPool_t pool;
  /* blocks no queued work touches (device_alloc_idle): a pool that reuses only frees
   * already completed on the device, allocated on a stream that never gets work */
  cudaMemPool_t idle_pool;
  cudaStream_t idle_stream;
  cudaEvent_t idle_ready;
  struct stk_idle_free *idle_pending; /* freed after a stream, waiting for its event */
  struct stk_idle_free *idle_spare;   /* records (with their events) to reuse */
  pthread_mutex_t idle_lock;          /* idle_ready and the lists */
  stk_pinned_pool pinned;
  stk_decoder *decoder;    /* NULL without nvJPEG */
  char nvjpeg_reason[256]; /* why decoder is NULL */
  pthread_mutex_t counters_lock;
  int64_t decoded_hw, decoded_hybrid, decode_fallbacks, decode_failures;
  int64_t decode_parse_ns, decode_fence_ns, decode_hw_call_ns,
      decode_hybrid_wait_ns; /* host time */
  double decode_hw_share;  /* the engines' share in the last batch (hw_decoder_load or the automatic
                              split) */
  int64_t wait_timeout_ms; /* the bound of every wait on the device (stk_gpu_wait) */
};

/* Makes the context's device current on the calling thread. */
STK_HIDDEN int stk_gpu_enter(stk_gpu_ctx *ctx, char *err, size_t errlen);

/* Waits until `event` has completed (event non-NULL) or `stream` is idle, for at most the
 * context's wait_timeout_ms. It polls with a sleep that grows from 10 us to 1 ms instead
 * of CUDA's synchronisation, which spins a core (with fewer contexts than cores) and
 * never returns when the device loses work (issue 27: nvJPEG's engines' batch never
 * completed after the kernel driver failed an internal allocation). Past the bound:
 * STK_ERR_DEVICE, "<who>: <what> has not completed after N ms". */
STK_HIDDEN int stk_gpu_wait(stk_gpu_ctx *ctx, cudaEvent_t event, cudaStream_t stream,
                            const char *who, const char *what, char *err, size_t errlen);
STK_HIDDEN int64_t stk_gpu_now_ns(void);
/* Waits (stk_gpu_wait, bounded) for the work queued on `stream` so far, then copies the n
 * per-sample statuses a batch's kernels wrote at d_status to `status` (host). */
STK_HIDDEN int stk_gpu_read_statuses(stk_gpu_ctx *ctx, const int *d_status, int n, int *status,
                                     cudaStream_t stream, const char *who, const char *what,
                                     char *err, size_t errlen);

STK_HIDDEN int stk_gpu_device_alloc(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out,
                                    char *err, size_t errlen);
STK_HIDDEN int stk_gpu_device_alloc_idle(stk_gpu_ctx *ctx, size_t size, uintptr_t stream,
                                         void **out, char *err, size_t errlen);
STK_HIDDEN int stk_gpu_device_free_idle(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err,
                                        size_t errlen);
STK_HIDDEN int stk_gpu_device_free(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err,
                                   size_t errlen);

/* Copies `bytes` of host parameters into a fresh stream-ordered device block (freed by
 * the caller with stk_gpu_device_free after the launches). */
STK_HIDDEN int stk_gpu_upload(stk_gpu_ctx *ctx, const void *host, size_t bytes, cudaStream_t stream,
                              void **dev, char *err, size_t errlen);
/* The same without the copy into pinned memory, for large parameter blocks: the caller
 * packs into a block from stk_gpu_staging_alloc (page-locked, from the context's pool)
 * and hands it to stk_gpu_upload_staged, which always releases it (reused once the
 * stream has passed the copy); stk_gpu_staging_free releases one not handed over. */
STK_HIDDEN int stk_gpu_staging_alloc(stk_gpu_ctx *ctx, size_t bytes, void **host, char *err,
                                     size_t errlen);
STK_HIDDEN int stk_gpu_staging_free(stk_gpu_ctx *ctx, void *host, char *err, size_t errlen);
STK_HIDDEN int stk_gpu_upload_staged(stk_gpu_ctx *ctx, void *host, size_t bytes,
                                     cudaStream_t stream, void **dev, char *err, size_t errlen);

/* ---- kernels (kernels.cu) ---- */

STK_HIDDEN int stk_gpu_resample(stk_gpu_ctx *ctx, int n, const stk_gpu_resample_sample *s,
                                const stk_gpu_resample_args *args, uintptr_t stream, char *err,
                                size_t errlen);
STK_HIDDEN int stk_gpu_cmn(stk_gpu_ctx *ctx, int n, const stk_gpu_cmn_sample *s,
                           const stk_gpu_cmn_args *args, uintptr_t stream, char *err,
                           size_t errlen);
STK_HIDDEN int stk_gpu_crop(stk_gpu_ctx *ctx, int n, const stk_gpu_crop_sample *s,
                            const stk_gpu_crop_args *args, uintptr_t stream, char *err,
                            size_t errlen);
STK_HIDDEN int stk_gpu_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_flip_sample *s, size_t esize,
                            uintptr_t stream, char *err, size_t errlen);
STK_HIDDEN int stk_gpu_mix(stk_gpu_ctx *ctx, int n, const stk_gpu_mix_sample *s, stk_dtype dtype,
                           uintptr_t stream, char *err, size_t errlen);
STK_HIDDEN int stk_gpu_cast(stk_gpu_ctx *ctx, int n, const stk_gpu_cast_sample *s,
                            stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream, char *err,
                            size_t errlen);

#endif /* STOKER_CUDA_GPU_INTERNAL_H */
