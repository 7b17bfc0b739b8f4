/* Stand-ins for runtime.cu's helpers (plain stream-ordered allocations, no context) for the
 * GPU test programs that compile a kernel file in whole (jpeg_huffman_gpu.cu,
 * jpeg_pixels_gpu.cu), and their CUDA check. Include once, after the kernel file. */
#ifndef STK_TESTS_GPU_RUNTIME_STANDINS_CUH
#define STK_TESTS_GPU_RUNTIME_STANDINS_CUH

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int stk_gpu_fail(char *err, size_t errlen, int status, const char *func, const char *fmt, ...) {
  if (err && errlen) {
    int k = snprintf(err, errlen, "%s: ", func);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < errlen) vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
  }
  return status;
}

int stk_gpu_enter(stk_gpu_ctx *ctx, char *err, size_t errlen) { return 0; }

int stk_gpu_device_alloc(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out, char *err,
                         size_t errlen) {
  *out = NULL;
  if (size == 0) return 0;
  CUDA_TRY(cudaMallocAsync(out, size, (cudaStream_t)stream));
  return 0;
}

int stk_gpu_device_free(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err, size_t errlen) {
  if (ptr) CUDA_TRY(cudaFreeAsync(ptr, (cudaStream_t)stream));
  return 0;
}

int stk_gpu_upload(stk_gpu_ctx *ctx, const void *host, size_t bytes, cudaStream_t stream,
                   void **dev, char *err, size_t errlen) {
  CUDA_TRY(cudaMallocAsync(dev, bytes, stream));
  /* from pageable memory: the source is consumed before this returns */
  CUDA_TRY(cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, stream));
  return 0;
}

int stk_gpu_staging_alloc(stk_gpu_ctx *ctx, size_t bytes, void **host, char *err, size_t errlen) {
  *host = malloc(bytes ? bytes : 1);
  return *host ? 0 : stk_gpu_fail(err, errlen, STK_ERR_OUT_OF_MEMORY, __func__, "no memory");
}

int stk_gpu_staging_free(stk_gpu_ctx *ctx, void *host, char *err, size_t errlen) {
  free(host);
  return 0;
}

int stk_gpu_upload_staged(stk_gpu_ctx *ctx, void *host, size_t bytes, cudaStream_t stream,
                          void **dev, char *err, size_t errlen) {
  int rc = stk_gpu_upload(ctx, host, bytes, stream, dev, err, errlen);
  free(host); /* pageable: the copy consumed it before returning */
  return rc;
}

/* A failed CUDA call in the test program itself: the setup failed (exit 2). */
#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

#endif
