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

#define STK__CU_CTX_SCHED_BLOCKING_SYNC 0x04u

typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_ctx_state_fn)(int device, unsigned *flags, int *active);
typedef int (*cu_ctx_set_flags_fn)(int device, unsigned flags);

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
