/* Makes the GPU's CUDA primary context acceptable to FFmpeg's CUDA device (video.h).
 *
 * FFmpeg 5.1 opens its CUDA device in the primary context (AV_CUDA_USE_PRIMARY_CONTEXT,
 * so its frames live where stoker's kernels run) only when that context's flags are
 * exactly CU_CTX_SCHED_BLOCKING_SYNC: a context already active with other flags is
 * refused ("Primary context already active with incompatible flags", ENOTSUP). stoker's
 * CUDA runtime, PyTorch or any earlier CUDA user activates it with the default flags. Since
 * CUDA 11 the flags of an active primary context may be changed (the _v2 entry point), so
 * they are set as FFmpeg wants before it looks. The cost: host threads waiting on that
 * device block instead of spinning, which suits a CPU-bound input pipeline. The driver is
 * loaded at run time, as FFmpeg does, so stoker links no CUDA library. */
#include "video.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

/* CUDA_MEMCPY2D of the driver API (cuda.h; CUmemorytype is an int-sized enum) */
typedef struct {
  size_t src_x_bytes, src_y;
  int src_type;
  const void *src_host;
  unsigned long long src_device;
  void *src_array;
  size_t src_pitch;
  size_t dst_x_bytes, dst_y;
  int dst_type;
  void *dst_host;
  unsigned long long dst_device;
  void *dst_array;
  size_t dst_pitch;
  size_t width_bytes, height;
} cu_memcpy2d;

#define STK__CU_MEMORYTYPE_DEVICE       2
#define STK__CU_CTX_SCHED_BLOCKING_SYNC 0x04u
#define STK__CU_STREAM_NON_BLOCKING     0x1u

/* The driver's functions this file calls, loaded once and kept for the process's life
 * (FFmpeg and the CUDA runtime hold the driver too). A missing one is NULL; without the
 * driver all are, and `missing` says why. */
typedef struct {
  int (*init)(unsigned flags);
  int (*device_get)(int *device, int ordinal);
  int (*state)(int device, unsigned *flags, int *active);
  int (*set_flags)(int device, unsigned flags);
  int (*push)(void *ctx);
  int (*pop)(void **ctx);
  int (*stream_create)(void **stream, unsigned flags);
  int (*stream_destroy)(void *stream);
  int (*stream_sync)(void *stream);
  int (*alloc)(unsigned long long *p, size_t bytes, void *stream);
  int (*ctx_get_device)(int *device);
  int (*pool_create)(void **pool, const void *props);
  int (*pool_set)(void *pool, int attribute, void *value);
  int (*alloc_from_pool)(unsigned long long *p, size_t bytes, void *pool, void *stream);
  int (*free)(unsigned long long p, void *stream);
  int (*copy2d)(const cu_memcpy2d *copy, void *stream);
  char missing[256];
} cu_driver;

static cu_driver cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

/* The _v2 entry point where the driver has one, else the original. */
static void *sym2(void *lib, const char *v2, const char *v1) {
  void *f = dlsym(lib, v2);
  return f ? f : dlsym(lib, v1);
}

static void load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(cu.missing, sizeof cu.missing, "%s", dlerror());
    return;
  }
  *(void **)&cu.init = dlsym(lib, "cuInit");
  *(void **)&cu.device_get = dlsym(lib, "cuDeviceGet");
  *(void **)&cu.state = dlsym(lib, "cuDevicePrimaryCtxGetState");
  /* the _v2 entry point accepts an active context; the original one refuses it */
  *(void **)&cu.set_flags =
      sym2(lib, "cuDevicePrimaryCtxSetFlags_v2", "cuDevicePrimaryCtxSetFlags");
  *(void **)&cu.push = sym2(lib, "cuCtxPushCurrent_v2", "cuCtxPushCurrent");
  *(void **)&cu.pop = sym2(lib, "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
  *(void **)&cu.stream_create = dlsym(lib, "cuStreamCreate");
  *(void **)&cu.stream_destroy = sym2(lib, "cuStreamDestroy_v2", "cuStreamDestroy");
  *(void **)&cu.stream_sync = dlsym(lib, "cuStreamSynchronize");
  *(void **)&cu.alloc = dlsym(lib, "cuMemAllocAsync");
  *(void **)&cu.free = dlsym(lib, "cuMemFreeAsync");
  *(void **)&cu.ctx_get_device = dlsym(lib, "cuCtxGetDevice");
  *(void **)&cu.pool_create = dlsym(lib, "cuMemPoolCreate");
  *(void **)&cu.pool_set = dlsym(lib, "cuMemPoolSetAttribute");
  *(void **)&cu.alloc_from_pool = dlsym(lib, "cuMemAllocFromPoolAsync");
  *(void **)&cu.copy2d = sym2(lib, "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync");
}

static const cu_driver *driver(void) {
  pthread_once(&cu_once, load_driver);
  return &cu;
}

static stk_status align(const cu_driver *f, int ordinal) {
  int rc, dev = 0, active = 0;
  unsigned flags = 0;
  if ((rc = f->init(0)) != 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "the NVIDIA driver did not start (cuInit: error %d)", rc);
  if ((rc = f->device_get(&dev, ordinal)) != 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "no CUDA device %d (cuDeviceGet: error %d)", ordinal, rc);
  if ((rc = f->state(dev, &flags, &active)) != 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "cannot read device %d's context state (error %d)",
                    ordinal, rc);
  if (flags == STK__CU_CTX_SCHED_BLOCKING_SYNC) return STK_OK;
  if ((rc = f->set_flags(dev, STK__CU_CTX_SCHED_BLOCKING_SYNC)) != 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "cannot set device %d's primary context to blocking synchronisation, as "
                    "FFmpeg's NVDEC needs (error %d; the context was %s with flags 0x%x): open "
                    "the GPU video decoders before other CUDA work",
                    ordinal, rc, active ? "active" : "inactive", flags);
  return STK_OK;
}

stk_status stk__video_cuda_align(int device) {
  const cu_driver *d = driver();
  if (d->missing[0])
    return STK_FAIL(STK_ERR_UNSUPPORTED, "no NVIDIA driver (cannot load libcuda.so.1: %s)",
                    d->missing);
  if (!d->init || !d->device_get || !d->state || !d->set_flags)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "libcuda.so.1 lacks the primary context functions");
  return align(d, device);
}

void stk__video_cuda_align_early(int device) {
  if (stk__video_cuda_align(device) != STK_OK) stk_clear_error();
}

/* ---- FFmpeg's stream ----
 * Without one, FFmpeg copies each decoded surface on the legacy default stream, which
 * every waiter would then share with other libraries' work (PyTorch's default stream is
 * it). A non-blocking stream of its own in FFmpeg's context keeps the wait to the copies. */

stk_status stk__video_cuda_stream(void *cuda_ctx, void **stream) {
  *stream = NULL;
  const cu_driver *d = driver();
  if (!d->push || !d->pop || !d->stream_create)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "libcuda.so.1 lacks the stream functions");
  int rc = d->push(cuda_ctx);
  if (rc == 0) {
    void *prev = NULL;
    rc = d->stream_create(stream, STK__CU_STREAM_NON_BLOCKING);
    d->pop(&prev);
  }
  if (rc != 0) {
    *stream = NULL;
    return STK_FAIL(STK_ERR_DEVICE, "cannot create a stream for FFmpeg (error %d)", rc);
  }
  return STK_OK;
}

void stk__video_cuda_stream_destroy(void *stream) {
  const cu_driver *d = driver();
  if (stream && d->stream_destroy) d->stream_destroy(stream); /* deferred until its work is done */
}

stk_status stk__video_cuda_sync(void *cuda_ctx, void *stream) {
  const cu_driver *d = driver();
  if (!d->push || !d->pop || !d->stream_sync)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "libcuda.so.1 lacks the stream functions");
  int rc = d->push(cuda_ctx);
  if (rc == 0) {
    void *prev = NULL;
    rc = d->stream_sync(stream);
    d->pop(&prev);
  }
  return rc == 0 ? STK_OK
                 : STK_FAIL(STK_ERR_DEVICE, "copying decoded frames out of NVDEC failed (error %d)",
                            rc);
}

/* ---- frames copied out of NVDEC's surfaces ----
 * NVDEC's output surfaces are only lent, mapped (FFmpeg 5.1's hwaccel hands them out so,
 * and the direct decoder of nvdec.c maps each picture): a decoder has only as many as its
 * reference frames need plus two ("No decoder surfaces left" once a sample keeps more
 * frames than that). So each frame a sample keeps is copied, on the decoder's stream, into
 * device memory of its own, and the surface goes back at once. The memory comes from a
 * stream-ordered pool (frame_pool) and returns to it on the legacy default stream: by then
 * the GPU stage's kernel that read it has finished (prep_release), and the copy was
 * synchronised by the worker. */

/* CUmemPoolProps of the driver API (cuda.h): the enums are int-sized, the tail (reserved,
 * or in newer drivers fields whose zero is the default) is left zero. */
typedef struct {
  int alloc_type, handle_types, location_type, location_id;
  void *win32_security_attributes;
  unsigned char rest[64];
} cu_pool_props;

#define STK__CU_MEM_ALLOCATION_TYPE_PINNED     1
#define STK__CU_MEM_LOCATION_TYPE_DEVICE       1
#define STK__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define STK__VIDEO_MAX_DEVICES                 64

/* The frames' memory comes from a pool of stoker's own per device, which keeps what it
 * has: the device's default pool gives its unused memory back to the driver at every
 * synchronisation (release threshold 0), and the decoders synchronise once per picture,
 * so every frame's allocation was a fresh one from the driver, under its lock. */
static void *frame_pools[STK__VIDEO_MAX_DEVICES];
static pthread_mutex_t frame_pools_lock = PTHREAD_MUTEX_INITIALIZER;

/* With a context current: its device's pool, made on first use; NULL: the default pool. */
static void *frame_pool(const cu_driver *d) {
  int dev = -1;
  if (!d->ctx_get_device || !d->pool_create || !d->pool_set || !d->alloc_from_pool ||
      d->ctx_get_device(&dev) != 0 || dev < 0 || dev >= STK__VIDEO_MAX_DEVICES)
    return NULL;
  pthread_mutex_lock(&frame_pools_lock);
  if (!frame_pools[dev]) {
    cu_pool_props props = {.alloc_type = STK__CU_MEM_ALLOCATION_TYPE_PINNED,
                           .location_type = STK__CU_MEM_LOCATION_TYPE_DEVICE,
                           .location_id = dev};
    void *pool = NULL;
    uint64_t keep = UINT64_MAX;
    if (d->pool_create(&pool, &props) == 0) {
      d->pool_set(pool, STK__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
      frame_pools[dev] = pool;
    }
  }
  void *pool = frame_pools[dev];
  pthread_mutex_unlock(&frame_pools_lock);
  return pool;
}

static int copy_plane(const uint8_t *src, int64_t src_pitch, unsigned long long dst, size_t pitch,
                      size_t row_bytes, size_t rows, void *stream) {
  cu_memcpy2d c = {.src_type = STK__CU_MEMORYTYPE_DEVICE,
                   .src_device = (unsigned long long)(uintptr_t)src,
                   .src_pitch = (size_t)src_pitch,
                   .dst_type = STK__CU_MEMORYTYPE_DEVICE,
                   .dst_device = dst,
                   .dst_pitch = pitch,
                   .width_bytes = row_bytes,
                   .height = rows};
  return driver()->copy2d(&c, stream);
}

stk_status stk__video_cuda_copy(void *cuda_ctx, void *stream, const stk_nv12_view *src,
                                stk_nv12_view *dst, void **mem) {
  *mem = NULL;
  const cu_driver *d = driver();
  if (!d->push || !d->pop || !d->alloc || !d->free || !d->copy2d)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "libcuda.so.1 lacks the stream-ordered memory "
                    "functions (CUDA 11.2 or later is needed)");
  size_t bps = (size_t)src->bytes_per_sample, w = (size_t)src->width, h = (size_t)src->height;
  size_t pitch = ((w + 1) & ~(size_t)1) * bps; /* a luma row; a chroma row of (w+1)/2 pairs */
  size_t chroma_rows = (h + 1) / 2, bytes = pitch * (h + chroma_rows);
  unsigned long long p = 0;
  void *prev = NULL;
  int rc = d->push(cuda_ctx);
  if (rc != 0) return STK_FAIL(STK_ERR_DEVICE, "cannot use FFmpeg's CUDA context (error %d)", rc);
  void *pool = frame_pool(d);
  rc = pool ? d->alloc_from_pool(&p, bytes, pool, stream) : d->alloc(&p, bytes, stream);
  if (rc == 0) rc = copy_plane(src->luma, src->luma_pitch, p, pitch, w * bps, h, stream);
  if (rc == 0)
    rc = copy_plane(src->chroma, src->chroma_pitch, p + pitch * h, pitch, ((w + 1) / 2) * 2 * bps,
                    chroma_rows, stream);
  if (rc != 0 && p) d->free(p, stream);
  d->pop(&prev);
  if (rc != 0)
    return STK_FAIL(STK_ERR_DEVICE,
                    "cannot copy a decoded %zux%zu frame out of NVDEC's "
                    "surface (error %d)",
                    w, h, rc);
  *dst = *src;
  dst->luma = (const uint8_t *)(uintptr_t)p;
  dst->chroma = (const uint8_t *)(uintptr_t)(p + pitch * h);
  dst->luma_pitch = dst->chroma_pitch = (int64_t)pitch;
  *mem = (void *)(uintptr_t)p;
  return STK_OK;
}

void stk__video_cuda_free(void *cuda_ctx, void *mem) {
  const cu_driver *d = driver();
  void *prev = NULL;
  if (!mem || !d->push || !d->pop || !d->free || d->push(cuda_ctx) != 0) return;
  d->free((unsigned long long)(uintptr_t)mem, NULL);
  d->pop(&prev);
}
