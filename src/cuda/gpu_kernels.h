/*
 * Every kernel of the GPU backend, by id, and the typed launchers callers use.
 *
 * The list is made of the families' lists (STK_GPU_KERNELS_<FAMILY> in gpu_api.h and the
 * api_*.h headers): X(ID, name, sample type, args type). A kernel's id is its position
 * here (STK_GPU_K_<ID>); the backend describes each id (name, record sizes) and the
 * loader refuses a backend whose description differs, so ids never need to be stable
 * across builds. For each kernel:
 * - callers: stk_gpu_run_<name>(api, ctx, n, samples, args, stream, err, errlen), which
 *   fills a stk_gpu_launch and calls api->launch (the compiler checks the record types);
 * - the CUDA backend: a function stk_gpu_k_<name> with the same typed parameters (less
 *   the api), declared here for the .cu file that defines it and for the dispatch table
 *   of runtime.cu, which is generated from this list.
 * Adding a kernel: its records and a line in its family's list (api_<family>.h), its
 * stk_gpu_k_<name> in the family's .cu file, and the operator that launches it.
 */
#ifndef STOKER_CUDA_GPU_KERNELS_H
#define STOKER_CUDA_GPU_KERNELS_H

#include "api_audio.h"
#include "api_autoaug.h"
#include "api_boxes.h"
#include "api_color.h"
#include "api_effects.h"
#include "api_filter.h"
#include "api_geometry.h"
#include "api_inflate.h"
#include "api_jpeg.h"
#include "api_math.h"
#include "api_png.h"
#include "api_tensor.h"
#include "api_video.h"
#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STK_GPU_KERNELS(X)    \
  STK_GPU_KERNELS_CORE(X)     \
  STK_GPU_KERNELS_COLOR(X)    \
  STK_GPU_KERNELS_GEOMETRY(X) \
  STK_GPU_KERNELS_FILTER(X)   \
  STK_GPU_KERNELS_MATH(X)     \
  STK_GPU_KERNELS_AUTOAUG(X)  \
  STK_GPU_KERNELS_EFFECTS(X)  \
  STK_GPU_KERNELS_AUDIO(X)    \
  STK_GPU_KERNELS_TENSOR(X)   \
  STK_GPU_KERNELS_BOXES(X)    \
  STK_GPU_KERNELS_PNG(X)      \
  STK_GPU_KERNELS_INFLATE(X)  \
  STK_GPU_KERNELS_VIDEO(X)    \
  STK_GPU_KERNELS_JPEG(X)

#define STK__GPU_KERNEL_ID(ID, name, S, A) STK_GPU_K_##ID,
typedef enum { STK_GPU_KERNELS(STK__GPU_KERNEL_ID) STK_GPU_K_COUNT } stk_gpu_kernel;
#undef STK__GPU_KERNEL_ID

/* The description a backend gives of the list: its `kernels` array, in the list's order. */
#define STK_GPU_KERNEL_INFO(ID, name, S, A) {#name, sizeof(S), sizeof(A)},

/* The typed launchers. */
#define STK__GPU_LAUNCHER(ID, name, S, A)                                                 \
  static inline int stk_gpu_run_##name(const stk_gpu_api *api, stk_gpu_ctx *ctx, int n,   \
                                       const S *samples, const A *args, uintptr_t stream, \
                                       char *err, size_t errlen) {                        \
    stk_gpu_launch l = {n, samples, sizeof(S), args, sizeof(A), stream};                  \
    return api->launch(ctx, STK_GPU_K_##ID, &l, err, errlen);                             \
  }
STK_GPU_KERNELS(STK__GPU_LAUNCHER)
#undef STK__GPU_LAUNCHER

/* The CUDA backend's kernel functions (defined in the families' .cu files; not exported
 * from libstoker_cuda.so). */
#if defined(__GNUC__)
#define STK__GPU_KERNEL_VISIBILITY __attribute__((visibility("hidden")))
#else
#define STK__GPU_KERNEL_VISIBILITY
#endif
#define STK__GPU_KERNEL_FN(ID, name, S, A)                                                    \
  STK__GPU_KERNEL_VISIBILITY int stk_gpu_k_##name(stk_gpu_ctx *ctx, int n, const S *samples,  \
                                                  const A *args, uintptr_t stream, char *err, \
                                                  size_t errlen);
STK_GPU_KERNELS(STK__GPU_KERNEL_FN)
#undef STK__GPU_KERNEL_FN

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_GPU_KERNELS_H */
