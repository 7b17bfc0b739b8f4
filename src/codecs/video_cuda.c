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

#define STK__CU_CTX_SCHED_BLOCKING_SYNC 0x04u

typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_ctx_state_fn)(int device, unsigned *flags, int *active);
typedef int (*cu_ctx_set_flags_fn)(int device, unsigned flags);
typedef int (*cu_ctx_push_fn)(void *ctx);
typedef int (*cu_ctx_pop_fn)(void **ctx);
typedef int (*cu_stream_create_fn)(void **stream, unsigned flags);
typedef int (*cu_stream_destroy_fn)(void *stream);

typedef struct {
  cu_init_fn init;
  cu_device_get_fn device_get;
  cu_ctx_state_fn state;
  cu_ctx_set_flags_fn set_flags;
} cu_fns;

static bool load_fns(void *lib, cu_fns *f) {
  f->init = (cu_init_fn)dlsym(lib, "cuInit");
  f->device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
  f->state = (cu_ctx_state_fn)dlsym(lib, "cuDevicePrimaryCtxGetState");
  /* the _v2 entry point accepts an active context; the original one refuses it */
  f->set_flags = (cu_ctx_set_flags_fn)dlsym(lib, "cuDevicePrimaryCtxSetFlags_v2");
  if (!f->set_flags) f->set_flags = (cu_ctx_set_flags_fn)dlsym(lib, "cuDevicePrimaryCtxSetFlags");
  return f->init && f->device_get && f->state && f->set_flags;
}

static stk_status align(const cu_fns *f, int ordinal) {
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
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "no NVIDIA driver (cannot load libcuda.so.1: %s)",
                    dlerror());
  cu_fns f;
  stk_status st = load_fns(lib, &f) ? align(&f, device)
                                    : STK_FAIL(STK_ERR_UNSUPPORTED,
                                               "libcuda.so.1 lacks the "
                                               "primary context functions");
  dlclose(lib); /* FFmpeg loads it again; the context and its flags stay */
  return st;
}

void stk__video_cuda_align_early(int device) {
  if (stk__video_cuda_align(device) != STK_OK) stk_clear_error();
}

/* ---- FFmpeg's stream ----
 * Without one, FFmpeg copies each decoded surface on the legacy default stream, which
 * every waiter would then share with other libraries' work (PyTorch's default stream is
 * it). A non-blocking stream of its own in FFmpeg's context keeps the wait to the copies. */

#define STK__CU_STREAM_NON_BLOCKING 0x1u

static void *sym2(void *lib, const char *v2, const char *v1) {
  void *f = dlsym(lib, v2);
  return f ? f : dlsym(lib, v1);
}

stk_status stk__video_cuda_stream(void *cuda_ctx, void **stream) {
  *stream = NULL;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return STK_FAIL(STK_ERR_UNSUPPORTED, "cannot load libcuda.so.1: %s", dlerror());
  cu_ctx_push_fn push = (cu_ctx_push_fn)sym2(lib, "cuCtxPushCurrent_v2", "cuCtxPushCurrent");
  cu_ctx_pop_fn pop = (cu_ctx_pop_fn)sym2(lib, "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
  cu_stream_create_fn create = (cu_stream_create_fn)dlsym(lib, "cuStreamCreate");
  stk_status st = STK_OK;
  int rc = -1;
  if (!push || !pop || !create)
    st = STK_FAIL(STK_ERR_UNSUPPORTED, "libcuda.so.1 lacks the stream functions");
  else if ((rc = push(cuda_ctx)) == 0) {
    void *prev = NULL;
    rc = create(stream, STK__CU_STREAM_NON_BLOCKING);
    pop(&prev);
  }
  if (st == STK_OK && rc != 0) {
    *stream = NULL;
    st = STK_FAIL(STK_ERR_DEVICE, "cannot create a stream for FFmpeg (error %d)", rc);
  }
  dlclose(lib); /* the driver stays loaded: FFmpeg and the runtime hold it */
  return st;
}

void stk__video_cuda_stream_destroy(void *stream) {
  if (!stream) return;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  cu_stream_destroy_fn destroy =
      (cu_stream_destroy_fn)sym2(lib, "cuStreamDestroy_v2", "cuStreamDestroy");
  if (destroy) destroy(stream); /* deferred by the driver until its work is done */
  dlclose(lib);
}

/* ---- frames copied out of NVDEC's surfaces ----
 * FFmpeg 5.1 hands out NVDEC's output surfaces mapped, not copied: a frame kept holds a
 * decode surface and a mapping, and a decoder has only as many as its reference frames
 * need plus two ("No decoder surfaces left" once a sample keeps more frames than that).
 * So each frame a sample keeps is copied, on FFmpeg's stream, into device memory of its
 * own, and the surface goes back at once. The memory comes from the driver's stream-ordered
 * pool and returns to it on the legacy default stream: by then the GPU stage's kernel that
 * read it has finished (prep_release), and the copy was synchronised by the worker. */

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

#define STK__CU_MEMORYTYPE_DEVICE 2

typedef int (*cu_alloc_async_fn)(unsigned long long *p, size_t bytes, void *stream);
typedef int (*cu_free_async_fn)(unsigned long long p, void *stream);
typedef int (*cu_copy2d_fn)(const cu_memcpy2d *copy, void *stream);

static struct {
  cu_ctx_push_fn push;
  cu_ctx_pop_fn pop;
  cu_alloc_async_fn alloc;
  cu_free_async_fn free;
  cu_copy2d_fn copy2d;
} cu_mem;
static pthread_once_t cu_mem_once = PTHREAD_ONCE_INIT;

static void load_cu_mem(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return; /* kept open: the functions are used for the process's life */
  cu_mem.push = (cu_ctx_push_fn)sym2(lib, "cuCtxPushCurrent_v2", "cuCtxPushCurrent");
  cu_mem.pop = (cu_ctx_pop_fn)sym2(lib, "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
  cu_mem.alloc = (cu_alloc_async_fn)dlsym(lib, "cuMemAllocAsync");
  cu_mem.free = (cu_free_async_fn)dlsym(lib, "cuMemFreeAsync");
  cu_mem.copy2d = (cu_copy2d_fn)sym2(lib, "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync");
}

static bool have_cu_mem(void) {
  pthread_once(&cu_mem_once, load_cu_mem);
  return cu_mem.push && cu_mem.pop && cu_mem.alloc && cu_mem.free && cu_mem.copy2d;
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
  return cu_mem.copy2d(&c, stream);
}

stk_status stk__video_cuda_copy(void *cuda_ctx, void *stream, const stk_nv12_view *src,
                                stk_nv12_view *dst, void **mem) {
  *mem = NULL;
  if (!have_cu_mem())
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "libcuda.so.1 lacks the stream-ordered memory "
                    "functions (CUDA 11.2 or later is needed)");
  size_t bps = (size_t)src->bytes_per_sample, w = (size_t)src->width, h = (size_t)src->height;
  size_t pitch = ((w + 1) & ~(size_t)1) * bps; /* a luma row; a chroma row of (w+1)/2 pairs */
  size_t chroma_rows = (h + 1) / 2, bytes = pitch * (h + chroma_rows);
  unsigned long long p = 0;
  void *prev = NULL;
  int rc = cu_mem.push(cuda_ctx);
  if (rc != 0) return STK_FAIL(STK_ERR_DEVICE, "cannot use FFmpeg's CUDA context (error %d)", rc);
  rc = cu_mem.alloc(&p, bytes, stream);
  if (rc == 0) rc = copy_plane(src->luma, src->luma_pitch, p, pitch, w * bps, h, stream);
  if (rc == 0)
    rc = copy_plane(src->chroma, src->chroma_pitch, p + pitch * h, pitch, ((w + 1) / 2) * 2 * bps,
                    chroma_rows, stream);
  if (rc != 0 && p) cu_mem.free(p, stream);
  cu_mem.pop(&prev);
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
  if (!mem || !have_cu_mem()) return;
  void *prev = NULL;
  if (cu_mem.push(cuda_ctx) != 0) return;
  cu_mem.free((unsigned long long)(uintptr_t)mem, NULL);
  cu_mem.pop(&prev);
}
