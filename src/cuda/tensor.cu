/* GPU kernels of the tensor toolbox (api_tensor.h): strided copies with fills, reductions,
 * normalize's affine pass and lookup tables. Every element goes through the functions of
 * src/shared/tensor_common.h, which the CPU operators run too; this file only launches.
 *
 * Launch shape (as math.cu): the per-sample plans plus a table of each sample's first
 * block go to the device in one upload; block b belongs to the sample whose block range
 * holds b, and each thread handles PER_THREAD elements THREADS apart. */
#include <stdlib.h>
#include <string.h>

#include "api_tensor.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"

#define THREADS     256
#define PER_THREAD  4
#define BLOCK_ELEMS (THREADS * PER_THREAD)

static int64_t blocks_for(int64_t count) { return count > 0 ? stk_cdiv(count, BLOCK_ELEMS) : 0; }

/* n plans of `size` bytes followed by first[0..n], in one host block. */
typedef struct {
  char *host;
  size_t desc_bytes, bytes;
  int *first;
  int64_t total;
} staging;

static int staging_init(staging *st, int n, size_t size, const void *plans, char *err,
                        size_t errlen) {
  st->desc_bytes = (size_t)n * size;
  st->bytes = st->desc_bytes + (size_t)(n + 1) * sizeof(int);
  st->host = (char *)malloc(st->bytes);
  if (!st->host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d plans", n);
  memcpy(st->host, plans, st->desc_bytes);
  st->first = (int *)(st->host + st->desc_bytes);
  st->total = 0;
  return 0;
}

static int staging_add(staging *st, int i, int64_t count, char *err, size_t errlen) {
  st->first[i] = (int)st->total;
  st->total += blocks_for(count);
  if (st->total > INT32_MAX)
    return GPU_FAIL(STK_ERR_LIMIT, "batch needs more than 2^31 thread blocks");
  st->first[i + 1] = (int)st->total;
  return 0;
}

/* ---- copy ---- */

__global__ void __launch_bounds__(THREADS)
    copy_kernel(const stk_tn_copy *P, const int *first, int n, int esize) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_tn_copy *p = &P[si];
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= p->count) return;
    stk_tn_copy_elem(p, esize, e);
  }
}

static int tn_copy(stk_gpu_ctx *ctx, int n, const stk_tn_copy *plans, int esize, uintptr_t stream_h,
                   char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !plans))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "element size %d", esize);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_tn_copy), plans, err, errlen));
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_tn_copy *p = &plans[i];
    if (p->count < 0 || p->ndim < 0 || p->ndim > STK_MAX_NDIM || (p->count > 0 && !p->dst))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "plan %d: bad count, ndim or NULL pointer", i);
    if (rc == 0) rc = staging_add(&st, i, p->count, err, errlen);
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && st.total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "tensor copy", err, errlen, [&](const char *dp) {
          copy_kernel<<<(unsigned)st.total, THREADS, 0, stream>>>(
              (const stk_tn_copy *)dp, (const int *)(dp + st.desc_bytes), n, esize);
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---- reduce ---- */

/* Small boxes: one output element per thread (stk_tn_reduce_elem). */
__global__ void __launch_bounds__(THREADS)
    reduce_kernel(const stk_tn_reduce *P, const int *first, int n, stk_tn_reduce_args a) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_tn_reduce *p = &P[si];
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t o = base + (int64_t)k * THREADS;
    if (o >= p->out_count) return;
    stk_tn_reduce_elem(p, &a, o);
  }
}

/* Large boxes (whole-image statistics): one block per output element, thread t taking
 * elements t, t + STK_TN_BLOCK, ..., merged in a tree in shared memory; the grouping of
 * stk_tn_reduce_elem_blockwise, which the fake GPU runs on the host. */
__global__ void __launch_bounds__(STK_TN_BLOCK)
    reduce_block_kernel(const stk_tn_reduce *P, const int *first, int n, stk_tn_reduce_args a) {
  __shared__ stk_tn_acc part[STK_TN_BLOCK];
  int b = blockIdx.x, si = stk_find_sample(first, n, b), t = threadIdx.x;
  const stk_tn_reduce *p = &P[si];
  int64_t o = b - first[si], base = stk_tn_box_base(p, o);
  double m = stk_tn_box_mean(p, &a, o);
  stk_tn_acc c;
  stk_tn_acc_init(&a, &c);
  for (int64_t r = t; r < p->red_count; r += STK_TN_BLOCK)
    stk_tn_acc_add(&a, p->src, stk_tn_box_index(p, base, r), m, &c);
  part[t] = c;
  __syncthreads();
  for (int half = STK_TN_BLOCK / 2; half > 0; half /= 2) {
    if (t < half) stk_tn_acc_merge(&a, &part[t], &part[t + half]);
    __syncthreads();
  }
  if (t == 0) stk_tn_acc_store(p, &a, o, &part[0]);
}

static int tn_reduce(stk_gpu_ctx *ctx, int n, const stk_tn_reduce *plans,
                     const stk_tn_reduce_args *args, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && (!plans || !args)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  int64_t outs = 0, elems = 0;
  for (int i = 0; i < n; i++)
    outs += plans[i].out_count, elems += plans[i].out_count * plans[i].red_count;
  bool blockwise = stk_tn_reduce_blockwise(outs, elems);
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_tn_reduce), plans, err, errlen));
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    if (!blockwise) {
      rc = staging_add(&st, i, plans[i].out_count, err, errlen);
      continue;
    }
    st.first[i] = (int)st.total; /* one block per output element */
    st.total += plans[i].out_count;
    st.first[i + 1] = (int)st.total;
    if (st.total > INT32_MAX) rc = GPU_FAIL(STK_ERR_LIMIT, "more than 2^31 outputs");
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  stk_tn_reduce_args a = *args;
  if (rc == 0 && st.total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "tensor reduce", err, errlen, [&](const char *dp) {
          const stk_tn_reduce *dplans = (const stk_tn_reduce *)dp;
          const int *dfirst = (const int *)(dp + st.desc_bytes);
          if (blockwise)
            reduce_block_kernel<<<(unsigned)st.total, STK_TN_BLOCK, 0, stream>>>(dplans, dfirst, n,
                                                                                 a);
          else
            reduce_kernel<<<(unsigned)st.total, THREADS, 0, stream>>>(dplans, dfirst, n, a);
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---- affine (normalize) ---- */

__global__ void __launch_bounds__(THREADS)
    affine_kernel(const stk_tn_affine *P, const int *first, int n, stk_dtype it, stk_dtype ot,
                  double shift) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_tn_affine *p = &P[si];
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= p->count) return;
    stk_tn_affine_elem(p, it, ot, shift, e);
  }
}

static int tn_affine(stk_gpu_ctx *ctx, int n, const stk_tn_affine *plans, stk_dtype it,
                     stk_dtype ot, double shift, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !plans))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_tn_affine), plans, err, errlen));
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) rc = staging_add(&st, i, plans[i].count, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && st.total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "tensor affine", err, errlen, [&](const char *dp) {
          affine_kernel<<<(unsigned)st.total, THREADS, 0, stream>>>(
              (const stk_tn_affine *)dp, (const int *)(dp + st.desc_bytes), n, it, ot, shift);
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---- lookup ---- */

/* A sample is the API's record (api_tensor.h), uploaded as it is. */
typedef stk_gpu_tn_lookup_sample lookup_sample;

__global__ void __launch_bounds__(THREADS)
    lookup_kernel(const lookup_sample *S, const int *first, int n, stk_dtype it, int esize,
                  const void *table, int64_t len, uint64_t dflt) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const lookup_sample *s = &S[si];
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= s->count) return;
    stk_tn_lookup_elem(s->src, it, s->dst, esize, table, len, dflt, e);
  }
}

/* The table travels after the samples and the block table, in the same upload. */
static int tn_lookup(stk_gpu_ctx *ctx, int n, const lookup_sample *S, stk_dtype it, int esize,
                     const void *table, int64_t table_len, uint64_t dflt, uintptr_t stream_h,
                     char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !S) || table_len < 0 || (table_len && !table))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "element size %d", esize);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  int rc = staging_init(&st, n, sizeof *S, S, err, errlen);
  if (rc) return rc;
  for (int i = 0; i < n && rc == 0; i++) rc = staging_add(&st, i, S[i].count, err, errlen);
  size_t tbytes = (size_t)table_len * (size_t)esize, at = (st.bytes + 15) / 16 * 16;
  char *host = rc == 0 ? (char *)malloc(at + tbytes + 1) : NULL;
  if (rc == 0 && !host) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for the table");
  if (rc == 0) {
    memcpy(host, st.host, st.bytes);
    if (tbytes) memcpy(host + at, table, tbytes);
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && st.total > 0)
    rc = stk_upload_and_launch(ctx, host, at + tbytes + 1, stream_h, "lookup_table", err, errlen,
                               [&](const char *dp) {
                                 lookup_kernel<<<(unsigned)st.total, THREADS, 0, stream>>>(
                                     (const lookup_sample *)dp, (const int *)(dp + st.desc_bytes),
                                     n, it, esize, dp + at, table_len, dflt);
                                 return 0;
                               });
  free(host);
  free(st.host);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_tn_copy(stk_gpu_ctx *ctx, int n, const stk_tn_copy *samples,
                      const stk_gpu_elem_args *args, uintptr_t stream, char *err, size_t errlen) {
  return tn_copy(ctx, n, samples, (int)args->esize, stream, err, errlen);
}

int stk_gpu_k_tn_reduce(stk_gpu_ctx *ctx, int n, const stk_tn_reduce *samples,
                        const stk_tn_reduce_args *args, uintptr_t stream, char *err,
                        size_t errlen) {
  return tn_reduce(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_tn_affine(stk_gpu_ctx *ctx, int n, const stk_tn_affine *samples,
                        const stk_gpu_tn_affine_args *args, uintptr_t stream, char *err,
                        size_t errlen) {
  return tn_affine(ctx, n, samples, args->in_dtype, args->out_dtype, args->shift, stream, err,
                   errlen);
}

int stk_gpu_k_tn_lookup(stk_gpu_ctx *ctx, int n, const stk_gpu_tn_lookup_sample *samples,
                        const stk_gpu_tn_lookup_args *args, uintptr_t stream, char *err,
                        size_t errlen) {
  return tn_lookup(ctx, n, samples, args->in_dtype, args->esize, args->table, args->table_len,
                   args->dflt, stream, err, errlen);
}
