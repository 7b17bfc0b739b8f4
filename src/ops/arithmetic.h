/*
 * Elementwise arithmetic for expressions on pipeline nodes (math.binary, math.unary,
 * math.clamp): DALI's type promotion, numpy-style broadcasting, pure kernels.
 *
 * Type promotion (DALI's table; commutative; bool counts as the narrowest unsigned type):
 *   T      op T      -> T
 *   floatX op T      -> floatX            (T not a float)
 *   floatX op floatY -> float(max(X, Y))
 *   intX   op intY   -> int(max(X, Y))
 *   uintX  op uintY  -> uint(max(X, Y))
 *   intX   op uintY  -> intX if X > Y, else int(2Y) (int64 at most: uint64 with any signed
 *                       type gives int64, values above 2^63 - 1 saturate)
 *   bool   op T      -> T
 * Result types per operation:
 *   add sub mul floordiv mod min max pow   the promoted type; integers wrap around as in C
 *                                          (uint8 200 + 100 = 44)
 *   div fpow atan2                         the promoted type when it is a float, else float32
 *   eq ne lt le gt ge                      bool (compared in the promoted type)
 *   and or xor                             the promoted type, bitwise (logical on bool);
 *                                          floats are refused
 * Integer division by zero (floordiv, mod) gives 0; floordiv and mod round toward minus
 * infinity (Python's rules, for floats too). Integer pow with a negative exponent gives
 * 0 unless the base is 1 or -1.
 *
 * Broadcasting: equal shapes; an operand of one element against anything (the result has
 * the other operand's shape); otherwise numpy's rule (shapes aligned on the right, each
 * pair of extents equal or one of them 1), e.g. [C] against [H, W, C].
 */
#ifndef STOKER_OPS_ARITHMETIC_H
#define STOKER_OPS_ARITHMETIC_H

#include "../core/core.h"

/* The operation codes (STK__BINOP_MAP, STK__UNOP_MAP) and the per-element arithmetic,
 * shared with the CUDA kernels. */
#include "../cuda/api_math.h"
#include "../shared/math_common.h"

bool stk__binop_parse(const char *name, stk__binop *out);
bool stk__unop_parse(const char *name, stk__unop *out);
const char *stk__binop_name(stk__binop op);

/* DALI's promotion of two element types (the table above). */
stk_dtype stk__type_promote(stk_dtype a, stk_dtype b);
/* The result type of `op` on operands of types a and b; false when the operation does
 * not take them (bitwise on floats). */
bool stk__binop_type(stk__binop op, stk_dtype a, stk_dtype b, stk_dtype *out);
/* The result type of a unary op: neg/abs/floor/ceil/round keep the type (neg refuses
 * bool), not gives bool, the float functions give the input's float type or float32. */
bool stk__unop_type(stk__unop op, stk_dtype in, stk_dtype *out);

/* A dense operand. */
typedef struct {
  const void *data;
  stk_dtype dtype;
  int ndim;
  const int64_t *shape;
} stk__operand;

/* The broadcast shape of a and b (rules above); false when they do not broadcast. */
bool stk__broadcast_shape(const stk__operand *a, const stk__operand *b, int *ndim,
                          int64_t shape[STK_MAX_NDIM]);

/* out (dense, `ndim`/`shape` from stk__broadcast_shape, type from stk__binop_type) =
 * a op b. Thread-safe. */
void stk__binary(stk__binop op, const stk__operand *a, const stk__operand *b, void *out,
                 stk_dtype out_type, int ndim, const int64_t *shape);
/* out[i] = op(in[i]) for n elements, out_type from stk__unop_type. */
void stk__unary(stk__unop op, const void *in, stk_dtype in_type, void *out, stk_dtype out_type,
                size_t n);
/* out[i] = min(max(in[i], lo), hi) in the input's type (integers: lo rounded up, hi
 * down, both saturated to the type; NaN stays NaN). */
void stk__clamp(const void *in, void *out, stk_dtype dtype, size_t n, double lo, double hi);

/* ---- the GPU plan (the kernels in src/cuda/math.cu index with these) ---- */

/* How operand o of a broadcast to `shape` is read per output element (data, mode,
 * period, strides; the scalar bytes are the caller's). */
void stk__binary_gpu_operand(const stk__operand *o, int ndim, const int64_t *shape,
                             stk_gpu_math_operand *g);
/* The compute kind (STK_AK_*) of op on types a and b with result type out. */
int stk__binary_kind(stk__binop op, stk_dtype a, stk_dtype b, stk_dtype out);

#endif /* STOKER_OPS_ARITHMETIC_H */
