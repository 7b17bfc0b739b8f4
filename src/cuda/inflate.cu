/* decoders.inflate on the GPU (api_inflate.h): one thread per chunk runs the shared
 * decoder (src/shared/lz4.h or inflate.h's stk_inflate_any) from the chunk's device bytes
 * into its destination and writes the chunk's status; the host reads the statuses after a
 * bounded wait and the operator turns a failure into an error naming the sample.
 *
 * Decoding is serial within a chunk (DEFLATE and LZ4 streams have no independent parts),
 * so the parallelism is the batch's chunk count: split large samples into chunks
 * (chunk_offsets / chunk_sizes) to keep the device busy. */
#include <stdlib.h>
#include <string.h>

#include "api_inflate.h"
#include "gpu_internal.h"
#include "gpu_kernels.h"
#include "launch.cuh"
#include "../shared/inflate.h"
#include "../shared/lz4.h"

#define INFLATE_THREADS 64

/* The DEFLATE Huffman tables (3.4 KiB a chunk) live in a global scratch block, not in the
 * thread's local memory: a stack frame that size would be reserved for every thread the
 * device can hold (see png.cu). LZ4 needs none (tables NULL). */
__global__ void inflate_kernel(const stk_gpu_inflate_sample *s, int n, int algorithm,
                               stk_inf_tables *tables, int *status) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const stk_gpu_inflate_sample *c = &s[i];
  bool ok;
  if (algorithm == STK_GPU_INFLATE_LZ4)
    ok = stk_lz4_block_decode(c->src, (size_t)c->src_size, c->dst, (size_t)c->dst_size) ==
         (int64_t)c->dst_size;
  else
    ok = stk_inflate_any(&tables[i], c->src, (size_t)c->src_size, c->dst, (size_t)c->dst_size) ==
         STK_INF_OK;
  status[i] = ok ? STK_GPU_DECODE_OK : STK_GPU_DECODE_FAILED;
}

static int check_chunks(int n, const stk_gpu_inflate_sample *s, const stk_gpu_inflate_args *a,
                        char *err, size_t errlen) {
  if (!a || n < 0 || (n > 0 && (!s || !a->status)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d) or no status array", n);
  if (a->algorithm != STK_GPU_INFLATE_LZ4 && a->algorithm != STK_GPU_INFLATE_DEFLATE)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown algorithm %d", a->algorithm);
  for (int i = 0; i < n; i++)
    if ((s[i].src_size && !s[i].src) || (s[i].dst_size && !s[i].dst))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "chunk %d: no source or destination", i);
  return 0;
}

static int inflate_launch(stk_gpu_ctx *ctx, int n, const stk_gpu_inflate_sample *s,
                          const stk_gpu_inflate_args *a, uintptr_t stream, char *err,
                          size_t errlen) {
  cudaStream_t st = (cudaStream_t)stream;
  void *dev = NULL, *tables = NULL, *d_status = NULL;
  bool deflate = a->algorithm == STK_GPU_INFLATE_DEFLATE;
  int rc = stk_gpu_upload(ctx, s, (size_t)n * sizeof *s, st, &dev, err, errlen);
  if (rc == 0 && deflate)
    rc =
        stk_gpu_device_alloc(ctx, (size_t)n * sizeof(stk_inf_tables), stream, &tables, err, errlen);
  if (rc == 0)
    rc = stk_gpu_device_alloc(ctx, (size_t)n * sizeof(int), stream, &d_status, err, errlen);
  if (rc == 0) {
    inflate_kernel<<<(unsigned)stk_cdiv(n, INFLATE_THREADS), INFLATE_THREADS, 0, st>>>(
        (const stk_gpu_inflate_sample *)dev, n, a->algorithm, (stk_inf_tables *)tables,
        (int *)d_status);
    rc = stk_check_launch("inflate", err, errlen);
  }
  if (rc == 0)
    rc = stk_gpu_read_statuses(ctx, (const int *)d_status, n, a->status, st, "stk_gpu_inflate",
                               "the inflate batch", err, errlen);
  stk_gpu_device_free(ctx, dev, stream, NULL, 0);
  stk_gpu_device_free(ctx, tables, stream, NULL, 0);
  stk_gpu_device_free(ctx, d_status, stream, NULL, 0);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_inflate(stk_gpu_ctx *ctx, int n, const stk_gpu_inflate_sample *samples,
                      const stk_gpu_inflate_args *args, uintptr_t stream, char *err,
                      size_t errlen) {
  STK_TRY_INT(check_chunks(n, samples, args, err, errlen));
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  return inflate_launch(ctx, n, samples, args, stream, err, errlen);
}
