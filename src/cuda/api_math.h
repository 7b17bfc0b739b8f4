/* The GPU entry points for elementwise arithmetic and friends: math.*, cast_like, one_hot.
 * Launched through gpu_api.h's launch() (ids and typed launchers: gpu_kernels.h);
 * implemented in
 * src/cuda/math.cu. The same conventions as gpu_api.h: every function returns 0 or a stk_status
 * with the message in err, queues its work on `stream` and never synchronises unless it says so.
 *
 * Every element is computed by the functions of math_common.h, which the CPU operators
 * (src/ops/arithmetic.c, misc_ops.c) run too: types, promotion results, wrap-around,
 * division by zero and NaN behave identically on both backends. The caller (the
 * operator) decides the output type and shape; these functions only index and compute.
 * One launch per call for the whole batch. (cast_like is the table's `cast`.) gather
 * serves subscript (src/ops/subscript.c). */
#ifndef STOKER_CUDA_API_MATH_H
#define STOKER_CUDA_API_MATH_H

#include "gpu_api.h"
#include "../shared/math_common.h" /* the operation codes, STK_AK_* and STK_GPU_OPERAND_* */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const void *data;             /* device; NULL with SCALAR: `scalar` holds the element */
  int mode;                     /* STK_GPU_OPERAND_* (math_common.h); SCALAR reads data[0], or
                                   `scalar` when data is NULL */
  int64_t period;               /* PERIODIC */
  int64_t stride[STK_MAX_NDIM]; /* STRIDED: elements per output axis step (0: broadcast) */
  uint64_t scalar;              /* one element of the operand's dtype (little-endian bytes) */
} stk_gpu_math_operand;

typedef struct {
  void *dst; /* device, dense: count elements of out_dtype */
  int64_t count;
  int ndim; /* the output's shape (used by STRIDED operands) */
  int64_t shape[STK_MAX_NDIM];
  stk_gpu_math_operand a, b;
} stk_gpu_binary_sample;

typedef struct {
  int op; /* stk__binop (math_common.h) */
  stk_dtype a_dtype, b_dtype, out_dtype;
  /* the compute kind (STK_AK_*): the output's for arithmetic, the promoted type's for
   * comparisons */
  int kind;
} stk_gpu_binary_args;

/* out = a op b; unary/clamp: out = f(in), count elements each. */
typedef struct {
  const void *src;
  void *dst;
  int64_t count;
  double lo, hi;     /* clamp, float inputs (NaN bounds already replaced) */
  int64_t ilo, ihi;  /* clamp, signed inputs (stk_ar_int_bounds) */
  uint64_t ulo, uhi; /* clamp, unsigned and bool inputs */
} stk_gpu_unary_sample;

typedef struct {
  int op; /* stk__unop, or -1 for clamp */
  stk_dtype in_dtype, out_dtype;
} stk_gpu_unary_args;

/* one_hot: `count` labels, output count * num_classes elements laid out as
 * [count / inner, num_classes, inner]. */
typedef struct {
  const void *src;
  void *dst;
  int64_t count, num_classes, inner;
  uint64_t on, off; /* one element of out_dtype each (stk__store_double) */
} stk_gpu_one_hot_sample;

/* gather (subscript): output element e (row-major over `shape`) is the source element at
 * stk_ar_gather_offset(ndim, shape, stride, e) elements from `src` (strides may be
 * negative or 0). */
typedef struct {
  const void *src; /* device: the source element of the output's origin */
  void *dst;       /* device, dense: count elements */
  int64_t count;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  int64_t stride[STK_MAX_NDIM]; /* source elements per step along each output axis */
} stk_gpu_gather_sample;

/* The kernels:
 * - binary, unary: see their records and args above;
 * - one_hot: the input's and the output's element types;
 * - gather: esize, bytes per element (1, 2, 4 or 8).
 */
#define STK_GPU_KERNELS_MATH(X)                                 \
  X(BINARY, binary, stk_gpu_binary_sample, stk_gpu_binary_args) \
  X(UNARY, unary, stk_gpu_unary_sample, stk_gpu_unary_args)     \
  X(ONE_HOT, one_hot, stk_gpu_one_hot_sample, stk_gpu_io_args)  \
  X(GATHER, gather, stk_gpu_gather_sample, stk_gpu_elem_args)

#ifdef __cplusplus
}
#endif

#endif
