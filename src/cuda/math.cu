/* GPU kernels for elementwise arithmetic and friends: math.binary, math.unary, math.clamp
 * and one_hot (api_math.h). Every element goes through the per-element functions of
 * math_common.h, the ones the CPU operators run, so both backends compute the same
 * values; this file only indexes.
 *
 * Launch shape (as kernels.cu's cast): the per-sample descriptors plus a table of each
 * sample's first block go to the device in one upload; one grid covers the batch, block
 * b belongs to the sample whose block range holds b (launch.cuh's binary search), and
 * each thread handles PER_THREAD elements THREADS apart (coalesced). The binary kernel is
 * a template over (operation, compute kind), so the operation's switch folds away; the
 * element types are warp-uniform runtime switches. */
#include <stdlib.h>
#include <string.h>

#include "api_math.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"
#include "../shared/math_common.h"

#define THREADS     256
#define PER_THREAD  4
#define BLOCK_ELEMS (THREADS * PER_THREAD)

/* ---------------------------------------------------------------------------------- */
/* Launch plumbing                                                                    */
/* ---------------------------------------------------------------------------------- */

static int64_t blocks_for(int64_t count) { return count > 0 ? stk_cdiv(count, BLOCK_ELEMS) : 0; }

static int math_dtype_size(int t) {
  switch (t) {
#define STK__DT_SIZE(name, value, text, size) \
  case value:                                 \
    return size;
    STK_DTYPE_MAP(STK__DT_SIZE)
#undef STK__DT_SIZE
    default:
      return 0;
  }
}
static bool dtype_ok(int t) { return math_dtype_size(t) > 0; }

/* A host staging block: n descriptors of `size` bytes, then first[0..n]. Fills first[]
 * from per-sample element counts; fails beyond 2^31 - 1 blocks. */
typedef struct {
  char *host;
  size_t desc_bytes, bytes;
  int *first;
} staging;

static int staging_init(staging *st, int n, size_t size, char *err, size_t errlen) {
  st->desc_bytes = (size_t)n * size;
  st->bytes = st->desc_bytes + (size_t)(n + 1) * sizeof(int);
  st->host = (char *)malloc(st->bytes);
  if (!st->host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  st->first = (int *)(st->host + st->desc_bytes);
  return 0;
}

static int staging_blocks(staging *st, int i, int64_t count, int64_t *total, char *err,
                          size_t errlen) {
  st->first[i] = (int)*total;
  *total += blocks_for(count);
  if (*total > INT32_MAX)
    return GPU_FAIL(STK_ERR_LIMIT, "batch needs more than 2^31 thread blocks");
  return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Binary                                                                             */
/* ---------------------------------------------------------------------------------- */

template <int OP, int K>
__global__ void __launch_bounds__(THREADS)
    binary_kernel(const stk_gpu_binary_sample *S, const int *first, int n, int at, int bt, int ot) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_binary_sample *s = &S[si];
  const void *pa = s->a.data ? s->a.data : (const void *)&s->a.scalar;
  const void *pb = s->b.data ? s->b.data : (const void *)&s->b.scalar;
  void *dst = s->dst;
  int ma = s->a.mode, mb = s->b.mode, ndim = s->ndim;
  int64_t count = s->count, pera = s->a.period, perb = s->b.period;
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= count) return;
    size_t ia = stk_ar_operand_index(ma, pera, s->a.stride, ndim, s->shape, count, e);
    size_t ib = stk_ar_operand_index(mb, perb, s->b.stride, ndim, s->shape, count, e);
    stk_ar_binary_elem(OP, K, pa, at, ia, pb, bt, ib, dst, ot, (size_t)e);
  }
}

/* Which kinds an operation runs in: 1 F, 2 I, 4 U (see stk__binop_type). */
static int binop_kinds(int op) {
  switch (op) {
    case STK__BIN_DIV:
    case STK__BIN_FPOW:
    case STK__BIN_ATAN2:
      return 1;
    case STK__BIN_AND:
    case STK__BIN_OR:
    case STK__BIN_XOR:
      return 6;
    default:
      return 7;
  }
}

typedef void (*binary_kernel_fn)(const stk_gpu_binary_sample *, const int *, int, int, int, int);

/* The instantiation for (op, kind); NULL for a pair no operator produces. */
static binary_kernel_fn binary_kernel_for(int op, int kind) {
#define KINDS(OP)                                           \
  case OP:                                                  \
    return kind == STK_AK_F   ? binary_kernel<OP, STK_AK_F> \
           : kind == STK_AK_I ? binary_kernel<OP, STK_AK_I> \
                              : binary_kernel<OP, STK_AK_U>;
#define FLOAT_ONLY(OP) \
  case OP:             \
    return kind == STK_AK_F ? binary_kernel<OP, STK_AK_F> : NULL;
#define INT_ONLY(OP)                                        \
  case OP:                                                  \
    return kind == STK_AK_I   ? binary_kernel<OP, STK_AK_I> \
           : kind == STK_AK_U ? binary_kernel<OP, STK_AK_U> \
                              : NULL;
  /* The list reads as a table: kept out of clang-format. */
  /* clang-format off */
  switch (op) {
    KINDS(STK__BIN_ADD) KINDS(STK__BIN_SUB) KINDS(STK__BIN_MUL) KINDS(STK__BIN_FLOORDIV)
    KINDS(STK__BIN_MOD) KINDS(STK__BIN_MIN) KINDS(STK__BIN_MAX) KINDS(STK__BIN_POW)
    FLOAT_ONLY(STK__BIN_DIV) FLOAT_ONLY(STK__BIN_FPOW) FLOAT_ONLY(STK__BIN_ATAN2)
    KINDS(STK__BIN_EQ) KINDS(STK__BIN_NE) KINDS(STK__BIN_LT) KINDS(STK__BIN_LE)
    KINDS(STK__BIN_GT) KINDS(STK__BIN_GE)
    INT_ONLY(STK__BIN_AND) INT_ONLY(STK__BIN_OR) INT_ONLY(STK__BIN_XOR)
  default: return NULL;
  }
/* clang-format on */
#undef KINDS
#undef FLOAT_ONLY
#undef INT_ONLY
}

static int check_binary_args(const stk_gpu_binary_args *a, char *err, size_t errlen) {
  if (!a) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "args is NULL");
  if (a->op < 0 || a->op >= STK__BIN_COUNT || a->kind < STK_AK_F || a->kind > STK_AK_U)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad operation %d or kind %d", a->op, a->kind);
  if (!dtype_ok(a->a_dtype) || !dtype_ok(a->b_dtype) || !dtype_ok(a->out_dtype))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "unknown dtype (%d, %d -> %d)", (int)a->a_dtype,
                    (int)a->b_dtype, (int)a->out_dtype);
  if (!(binop_kinds(a->op) & (1 << a->kind)))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "operation %d does not run in kind %d", a->op, a->kind);
  bool cmp = stk_ar_is_compare(a->op);
  if (cmp ? a->out_dtype != STK_DTYPE_BOOL : stk_ar_kind_of(a->out_dtype) != a->kind)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "output type %d does not match operation %d in kind %d", (int)a->out_dtype,
                    a->op, a->kind);
  return 0;
}

static int check_operand(const stk_gpu_math_operand *o, const stk_gpu_binary_sample *s, int i,
                         char which, char *err, size_t errlen) {
  bool ok = o->mode >= STK_GPU_OPERAND_DENSE && o->mode <= STK_GPU_OPERAND_STRIDED &&
            (o->data || o->mode == STK_GPU_OPERAND_SCALAR) &&
            (o->mode != STK_GPU_OPERAND_PERIODIC || o->period > 0) &&
            (o->mode != STK_GPU_OPERAND_STRIDED || (s->ndim >= 1 && s->ndim <= STK_MAX_NDIM));
  if (!ok)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: operand %c: bad mode %d, period %lld or NULL data", i, which,
                    o->mode, (long long)o->period);
  if (o->mode == STK_GPU_OPERAND_STRIDED)
    for (int d = 0; d < s->ndim; d++)
      if (s->shape[d] < 1)
        return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: extent %d is %lld", i, d,
                        (long long)s->shape[d]);
  return 0;
}

static int stk_gpu_math_binary(stk_gpu_ctx *ctx, int n, const stk_gpu_binary_sample *samples,
                               const stk_gpu_binary_args *args, uintptr_t stream_h, char *err,
                               size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  STK_TRY_INT(check_binary_args(args, err, errlen));
  binary_kernel_fn kernel = binary_kernel_for(args->op, args->kind);
  if (!kernel)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "no kernel for operation %d in kind %d", args->op,
                    args->kind);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_gpu_binary_sample), err, errlen));
  stk_gpu_binary_sample *S = (stk_gpu_binary_sample *)st.host;
  int64_t total = 0;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_binary_sample *s = &samples[i];
    if (s->count > 0 && !s->dst)
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL output", i);
    if (rc == 0 && s->count > 0) rc = check_operand(&s->a, s, i, 'a', err, errlen);
    if (rc == 0 && s->count > 0) rc = check_operand(&s->b, s, i, 'b', err, errlen);
    S[i] = *s;
    if (rc == 0) rc = staging_blocks(&st, i, s->count, &total, err, errlen);
  }
  st.first[n] = (int)total;
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "math binary", err, errlen, [&](const char *dp) {
          kernel<<<(unsigned)total, THREADS, 0, stream>>>(
              (const stk_gpu_binary_sample *)dp, (const int *)((char *)dp + st.desc_bytes), n,
              (int)args->a_dtype, (int)args->b_dtype, (int)args->out_dtype);
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Unary and clamp                                                                    */
/* ---------------------------------------------------------------------------------- */

#define CLAMP_OP (-1)

__global__ void __launch_bounds__(THREADS)
    unary_kernel(const stk_gpu_unary_sample *S, const int *first, int n, int op, int it, int ot) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_unary_sample *s = &S[si];
  /* clamp computes in its output's kind: the input is converted to the promoted type */
  int kind = op == CLAMP_OP ? stk_ar_kind_of(ot) : stk_ar_unary_kind(op, it);
  const void *src = s->src;
  void *dst = s->dst;
  double lo = s->lo, hi = s->hi;
  int64_t ilo = s->ilo, ihi = s->ihi;
  uint64_t ulo = s->ulo, uhi = s->uhi;
  int64_t count = s->count, base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= count) return;
    stk_ar_unary_elem(op, kind, src, it, dst, ot, (size_t)e, lo, hi, ilo, ihi, ulo, uhi);
  }
}

static int stk_gpu_math_unary(stk_gpu_ctx *ctx, int n, const stk_gpu_unary_sample *samples,
                              const stk_gpu_unary_args *args, uintptr_t stream_h, char *err,
                              size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (args->op != CLAMP_OP && (args->op < 0 || args->op >= STK__UN_COUNT))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad operation %d", args->op);
  if (!dtype_ok(args->in_dtype) || !dtype_ok(args->out_dtype))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "unknown dtype %d or %d", (int)args->in_dtype,
                    (int)args->out_dtype);
  int kind = args->op == CLAMP_OP ? stk_ar_kind_of(args->out_dtype)
                                  : stk_ar_unary_kind(args->op, args->in_dtype);
  bool out_float = stk_ar_is_float(args->out_dtype) != 0;
  if (args->op == STK__UN_NOT ? args->out_dtype != STK_DTYPE_BOOL : out_float != (kind == STK_AK_F))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "output type %d does not match operation %d on type %d", (int)args->out_dtype,
                    args->op, (int)args->in_dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_gpu_unary_sample), err, errlen));
  stk_gpu_unary_sample *S = (stk_gpu_unary_sample *)st.host;
  int64_t total = 0;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    if (samples[i].count > 0 && (!samples[i].src || !samples[i].dst))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
    S[i] = samples[i];
    if (rc == 0) rc = staging_blocks(&st, i, samples[i].count, &total, err, errlen);
  }
  st.first[n] = (int)total;
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, args->op == CLAMP_OP ? "math clamp" : "math unary", err,
        errlen, [&](const char *dp) {
          unary_kernel<<<(unsigned)total, THREADS, 0, stream>>>(
              (const stk_gpu_unary_sample *)dp, (const int *)((char *)dp + st.desc_bytes), n,
              args->op, (int)args->in_dtype, (int)args->out_dtype);
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* one_hot                                                                            */
/* ---------------------------------------------------------------------------------- */

__global__ void __launch_bounds__(THREADS)
    one_hot_kernel(const stk_gpu_one_hot_sample *S, const int *first, int n, int it, int esize) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_one_hot_sample *s = &S[si];
  int64_t ncls = s->num_classes, inner = s->inner, total = s->count * ncls;
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= total) return;
    stk_ar_one_hot_elem(s->src, it, s->dst, esize, ncls, inner, s->on, s->off, e);
  }
}

static int stk_gpu_math_one_hot(stk_gpu_ctx *ctx, int n, const stk_gpu_one_hot_sample *samples,
                                stk_dtype in_dtype, stk_dtype out_dtype, uintptr_t stream_h,
                                char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (!dtype_ok(in_dtype) || !dtype_ok(out_dtype))
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "unknown dtype %d or %d", (int)in_dtype, (int)out_dtype);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_gpu_one_hot_sample), err, errlen));
  stk_gpu_one_hot_sample *S = (stk_gpu_one_hot_sample *)st.host;
  int64_t total = 0;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_one_hot_sample *s = &samples[i];
    if (s->count < 0 || s->num_classes < 1 || s->inner < 1 ||
        (s->count > 0 && s->count % s->inner != 0) || (s->count > 0 && (!s->src || !s->dst)) ||
        s->count > INT64_MAX / s->num_classes)
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: bad count %lld, num_classes %lld, inner %lld or NULL "
                    "pointer",
                    i, (long long)s->count, (long long)s->num_classes, (long long)s->inner);
    S[i] = *s;
    if (rc == 0) rc = staging_blocks(&st, i, s->count * s->num_classes, &total, err, errlen);
  }
  st.first[n] = (int)total;
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "one_hot", err, errlen, [&](const char *dp) {
          one_hot_kernel<<<(unsigned)total, THREADS, 0, stream>>>(
              (const stk_gpu_one_hot_sample *)dp, (const int *)((char *)dp + st.desc_bytes), n,
              (int)in_dtype, math_dtype_size(out_dtype));
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* gather (subscript)                                                                  */
/* ---------------------------------------------------------------------------------- */

template <typename T>
__global__ void __launch_bounds__(THREADS)
    gather_kernel(const stk_gpu_gather_sample *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_gather_sample *s = &S[si];
  const T *src = (const T *)s->src;
  T *dst = (T *)s->dst;
  int64_t base = (int64_t)(b - first[si]) * BLOCK_ELEMS + threadIdx.x;
  for (int k = 0; k < PER_THREAD; k++) {
    int64_t e = base + (int64_t)k * THREADS;
    if (e >= s->count) return;
    dst[e] = src[stk_ar_gather_offset(s->ndim, s->shape, s->stride, e)];
  }
}

static int stk_gpu_math_gather(stk_gpu_ctx *ctx, int n, const stk_gpu_gather_sample *samples,
                               size_t esize, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "element size %zu", esize);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  staging st{};
  STK_TRY_INT(staging_init(&st, n, sizeof(stk_gpu_gather_sample), err, errlen));
  stk_gpu_gather_sample *S = (stk_gpu_gather_sample *)st.host;
  int64_t total = 0;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_gather_sample *s = &samples[i];
    if (s->count < 0 || s->ndim < 0 || s->ndim > STK_MAX_NDIM ||
        (s->count > 0 && (!s->src || !s->dst)))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad count %lld, ndim %d or NULL pointer",
                    i, (long long)s->count, s->ndim);
    S[i] = *s;
    if (rc == 0) rc = staging_blocks(&st, i, s->count, &total, err, errlen);
  }
  st.first[n] = (int)total;
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && total > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "gather", err, errlen, [&](const char *dp) {
          const stk_gpu_gather_sample *ds = (const stk_gpu_gather_sample *)dp;
          const int *df = (const int *)((char *)dp + st.desc_bytes);
          switch (esize) {
            case 1:
              gather_kernel<uint8_t><<<(unsigned)total, THREADS, 0, stream>>>(ds, df, n);
              break;
            case 2:
              gather_kernel<uint16_t><<<(unsigned)total, THREADS, 0, stream>>>(ds, df, n);
              break;
            case 4:
              gather_kernel<uint32_t><<<(unsigned)total, THREADS, 0, stream>>>(ds, df, n);
              break;
            default:
              gather_kernel<uint64_t><<<(unsigned)total, THREADS, 0, stream>>>(ds, df, n);
              break;
          }
          return 0;
        });
  free(st.host);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_binary(stk_gpu_ctx *ctx, int n, const stk_gpu_binary_sample *samples,
                     const stk_gpu_binary_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_math_binary(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_unary(stk_gpu_ctx *ctx, int n, const stk_gpu_unary_sample *samples,
                    const stk_gpu_unary_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_math_unary(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_one_hot(stk_gpu_ctx *ctx, int n, const stk_gpu_one_hot_sample *samples,
                      const stk_gpu_io_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_math_one_hot(ctx, n, samples, args->in_dtype, args->out_dtype, stream, err,
                              errlen);
}

int stk_gpu_k_gather(stk_gpu_ctx *ctx, int n, const stk_gpu_gather_sample *samples,
                     const stk_gpu_elem_args *args, uintptr_t stream, char *err, size_t errlen) {
  return stk_gpu_math_gather(ctx, n, samples, args->esize, stream, err, errlen);
}
