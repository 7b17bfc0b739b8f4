/*
 * The per-element arithmetic of math.binary, math.unary, math.clamp and one_hot, shared
 * by the CPU operators (src/ops/arithmetic.c, misc_ops.c) and the CUDA kernels
 * (src/cuda/math.cu). C11 and CUDA C++ at once (STK_HD): the GPU computes every element
 * with the very functions the CPU runs, so parity reduces to indexing.
 *
 * Values travel in one of three compute kinds (arithmetic.c explains why): float64
 * (STK_AK_F), int64 (STK_AK_I) and uint64 (STK_AK_U). Loads convert an element of any
 * type into a kind, the operation runs in the kind, and a store writes the result into
 * the output type: floats rounded by IEEE rules, integers truncated (wrap-around), bool
 * as != 0. The only results that may differ between the backends are those of the libm
 * functions (exp, log, sin, pow, atan2, ...): glibc and CUDA's libdevice are both within
 * 1-2 ulp of float64 and almost always agree after rounding to the output type; + - * /,
 * sqrt, floor, fmod and the integer operations are exact on both.
 */
#ifndef STOKER_CUDA_MATH_COMMON_H
#define STOKER_CUDA_MATH_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "stoker/stoker.h" /* stk_dtype */

#ifdef __CUDACC__
#define STK_MHD static inline __host__ __device__
#else
#define STK_MHD static inline
#endif

/* The operations (codes shared by both backends and the GPU API's `op` fields). */
/* The list reads as a table: kept out of clang-format. */
/* clang-format off */
#define STK__BINOP_MAP(X)                                                                  \
  X(ADD, "add") X(SUB, "sub") X(MUL, "mul") X(DIV, "div") X(FLOORDIV, "floordiv")          \
  X(MOD, "mod") X(MIN, "min") X(MAX, "max") X(POW, "pow") X(FPOW, "fpow")                  \
  X(ATAN2, "atan2") X(EQ, "eq") X(NE, "ne") X(LT, "lt") X(LE, "le") X(GT, "gt")            \
  X(GE, "ge") X(AND, "and") X(OR, "or") X(XOR, "xor")

typedef enum {
#define STK__BINOP_ENUM(name, text) STK__BIN_##name,
  STK__BINOP_MAP(STK__BINOP_ENUM)
#undef STK__BINOP_ENUM
  STK__BIN_COUNT
} stk__binop;
/* clang-format on */

/* The list reads as a table: kept out of clang-format. */
/* clang-format off */
#define STK__UNOP_MAP(X)                                                                   \
  X(NEG, "neg") X(NOT, "not") X(ABS, "abs") X(SQRT, "sqrt") X(RSQRT, "rsqrt")              \
  X(CBRT, "cbrt") X(EXP, "exp") X(LOG, "log") X(LOG2, "log2") X(LOG10, "log10")            \
  X(SIN, "sin") X(COS, "cos") X(TAN, "tan") X(ASIN, "asin") X(ACOS, "acos")                \
  X(ATAN, "atan") X(SINH, "sinh") X(COSH, "cosh") X(TANH, "tanh") X(FLOOR, "floor")        \
  X(CEIL, "ceil") X(ROUND, "round")

typedef enum {
#define STK__UNOP_ENUM(name, text) STK__UN_##name,
  STK__UNOP_MAP(STK__UNOP_ENUM)
#undef STK__UNOP_ENUM
  STK__UN_COUNT
} stk__unop;
/* clang-format on */

/* How a binary operand's elements line up with the output's flat index (api_math.h). */
enum {
  STK_GPU_OPERAND_DENSE = 0,    /* the output's shape: element i */
  STK_GPU_OPERAND_SCALAR = 1,   /* one element for the whole sample */
  STK_GPU_OPERAND_PERIODIC = 2, /* broadcast along leading axes only: element i % period */
  STK_GPU_OPERAND_STRIDED = 3   /* any numpy broadcast: sum of idx[d] * stride[d] */
};

/* Compute kinds. */
enum { STK_AK_F = 0, STK_AK_I = 1, STK_AK_U = 2 };

STK_MHD int stk_ar_is_float(int t) {
  return t == STK_DTYPE_FLOAT16 || t == STK_DTYPE_FLOAT32 || t == STK_DTYPE_FLOAT64;
}
STK_MHD int stk_ar_is_signed(int t) {
  return t == STK_DTYPE_INT8 || t == STK_DTYPE_INT16 || t == STK_DTYPE_INT32 ||
         t == STK_DTYPE_INT64;
}
STK_MHD int stk_ar_kind_of(int t) {
  return stk_ar_is_float(t) ? STK_AK_F : stk_ar_is_signed(t) ? STK_AK_I : STK_AK_U;
}
STK_MHD int stk_ar_is_compare(int op) { return op >= STK__BIN_EQ && op <= STK__BIN_GE; }
/* Unary operations computed in float64 whatever the input (the libm functions). */
STK_MHD int stk_ar_unop_is_float_fn(int op) { return op >= STK__UN_SQRT && op <= STK__UN_TANH; }

/* ---- float16 ----
 * In software on both sides, bit for bit the CPU's conversions (src/core/util.c: round to
 * nearest even, subnormals, the same quiet-NaN pattern), so even NaN payloads agree;
 * CUDA's __float2half_rn would give another NaN pattern. */

STK_MHD uint32_t stk_ar_f32_bits(float f) {
#ifdef __CUDA_ARCH__
  return (uint32_t)__float_as_uint(f);
#else
  union {
    float f;
    uint32_t u;
  } v;
  v.f = f;
  return v.u;
#endif
}

STK_MHD float stk_ar_bits_f32(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(x);
#else
  union {
    float f;
    uint32_t u;
  } v;
  v.u = x;
  return v.f;
#endif
}

STK_MHD uint16_t stk_ar_f32_to_f16(float f) {
  uint32_t x = stk_ar_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0)); /* inf/nan */
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
  if (e <= 0) {                                   /* subnormal or zero */
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; /* may carry into exp */
  return (uint16_t)half;
}

STK_MHD float stk_ar_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else { /* subnormal: normalise */
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        exp--;
      }
      x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  return stk_ar_bits_f32(x);
}

STK_MHD double stk_ar_f16_load(uint16_t h) { return (double)stk_ar_f16_to_f32(h); }

/* float64 -> float32 -> float16 (both roundings to nearest even), as stk__convert. */
STK_MHD uint16_t stk_ar_f16_store(double v) { return stk_ar_f32_to_f16((float)v); }

/* ---- loads: element i of p (type t) in a kind ---- */

STK_MHD double stk_ar_load_f(const void *p, int t, size_t i) {
  switch (t) {
    case STK_DTYPE_UINT8:
      return (double)((const uint8_t *)p)[i];
    case STK_DTYPE_INT8:
      return (double)((const int8_t *)p)[i];
    case STK_DTYPE_UINT16:
      return (double)((const uint16_t *)p)[i];
    case STK_DTYPE_INT16:
      return (double)((const int16_t *)p)[i];
    case STK_DTYPE_UINT32:
      return (double)((const uint32_t *)p)[i];
    case STK_DTYPE_INT32:
      return (double)((const int32_t *)p)[i];
    case STK_DTYPE_UINT64:
      return (double)((const uint64_t *)p)[i];
    case STK_DTYPE_INT64:
      return (double)((const int64_t *)p)[i];
    case STK_DTYPE_FLOAT16:
      return stk_ar_f16_load(((const uint16_t *)p)[i]);
    case STK_DTYPE_FLOAT32:
      return (double)((const float *)p)[i];
    case STK_DTYPE_FLOAT64:
      return ((const double *)p)[i];
    default:
      return ((const uint8_t *)p)[i] != 0 ? 1.0 : 0.0; /* bool */
  }
}

/* A float into int64 as stk__convert: round half away from zero, saturate, NaN -> 0. */
STK_MHD int64_t stk_ar_f_to_i(double v) {
  double r = isnan(v) ? 0.0 : round(v);
  if (r <= -9223372036854775808.0) return INT64_MIN;
  if (r >= 9223372036854775807.0) return INT64_MAX;
  return (int64_t)r;
}
STK_MHD uint64_t stk_ar_f_to_u(double v) {
  double r = isnan(v) ? 0.0 : round(v);
  if (r <= 0.0) return 0;
  if (r >= 18446744073709551615.0) return UINT64_MAX;
  return (uint64_t)r;
}

/* Integers exactly; uint64 above INT64_MAX saturates. */
STK_MHD int64_t stk_ar_load_i(const void *p, int t, size_t i) {
  switch (t) {
    case STK_DTYPE_UINT8:
      return ((const uint8_t *)p)[i];
    case STK_DTYPE_INT8:
      return ((const int8_t *)p)[i];
    case STK_DTYPE_UINT16:
      return ((const uint16_t *)p)[i];
    case STK_DTYPE_INT16:
      return ((const int16_t *)p)[i];
    case STK_DTYPE_UINT32:
      return ((const uint32_t *)p)[i];
    case STK_DTYPE_INT32:
      return ((const int32_t *)p)[i];
    case STK_DTYPE_INT64:
      return ((const int64_t *)p)[i];
    case STK_DTYPE_UINT64: {
      uint64_t u = ((const uint64_t *)p)[i];
      return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    case STK_DTYPE_FLOAT16:
    case STK_DTYPE_FLOAT32:
    case STK_DTYPE_FLOAT64:
      return stk_ar_f_to_i(stk_ar_load_f(p, t, i));
    default:
      return ((const uint8_t *)p)[i] != 0; /* bool */
  }
}

/* Integers as their two's-complement bit patterns (C's conversion to uint64). */
STK_MHD uint64_t stk_ar_load_u(const void *p, int t, size_t i) {
  switch (t) {
    case STK_DTYPE_UINT64:
      return ((const uint64_t *)p)[i];
    case STK_DTYPE_FLOAT16:
    case STK_DTYPE_FLOAT32:
    case STK_DTYPE_FLOAT64:
      return stk_ar_f_to_u(stk_ar_load_f(p, t, i));
    default:
      return (uint64_t)stk_ar_load_i(p, t, i);
  }
}

/* ---- stores ---- */

/* A float64 result into a float type. */
STK_MHD void stk_ar_store_f(void *p, int t, size_t i, double v) {
  if (t == STK_DTYPE_FLOAT32)
    ((float *)p)[i] = (float)v;
  else if (t == STK_DTYPE_FLOAT64)
    ((double *)p)[i] = v;
  else
    ((uint16_t *)p)[i] = stk_ar_f16_store(v);
}

/* An integer result (bit pattern) into an integer type: truncation; bool: != 0. */
STK_MHD void stk_ar_store_u(void *p, int t, size_t i, uint64_t v) {
  switch (t) {
    case STK_DTYPE_UINT8:
    case STK_DTYPE_INT8:
      ((uint8_t *)p)[i] = (uint8_t)v;
      return;
    case STK_DTYPE_UINT16:
    case STK_DTYPE_INT16:
      ((uint16_t *)p)[i] = (uint16_t)v;
      return;
    case STK_DTYPE_UINT32:
    case STK_DTYPE_INT32:
      ((uint32_t *)p)[i] = (uint32_t)v;
      return;
    case STK_DTYPE_UINT64:
    case STK_DTYPE_INT64:
      ((uint64_t *)p)[i] = v;
      return;
    default:
      ((uint8_t *)p)[i] = v != 0;
      return; /* bool */
  }
}

/* ---- binary operations ---- */

/* Python's modulo: the sign of the divisor. */
STK_MHD double stk_ar_py_mod(double a, double b) {
  double r = fmod(a, b);
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
  return r;
}

STK_MHD uint64_t stk_ar_ipow_u(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}

/* A negative exponent gives 0 unless the base is 1 or -1. */
STK_MHD int64_t stk_ar_ipow_i(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  return (int64_t)stk_ar_ipow_u((uint64_t)base, (uint64_t)e);
}

/* Arithmetic in float64 (the bitwise operations never reach it). */
STK_MHD double stk_ar_bin_f(int op, double a, double b) {
  switch (op) {
    case STK__BIN_ADD:
      return a + b;
    case STK__BIN_SUB:
      return a - b;
    case STK__BIN_MUL:
      return a * b;
    case STK__BIN_DIV:
      return a / b;
    case STK__BIN_FLOORDIV:
      return floor(a / b);
    case STK__BIN_MOD:
      return stk_ar_py_mod(a, b);
    case STK__BIN_MIN:
      return b < a ? b : a;
    case STK__BIN_MAX:
      return b > a ? b : a;
    case STK__BIN_POW:
    case STK__BIN_FPOW:
      return pow(a, b);
    case STK__BIN_ATAN2:
      return atan2(a, b);
    default:
      return 0.0;
  }
}

/* Signed integers: + - * on uint64 bit patterns (defined wrap-around); division by zero
 * gives 0, floordiv and mod round toward minus infinity. */
STK_MHD int64_t stk_ar_bin_i(int op, int64_t a, int64_t b) {
  switch (op) {
    case STK__BIN_ADD:
      return (int64_t)((uint64_t)a + (uint64_t)b);
    case STK__BIN_SUB:
      return (int64_t)((uint64_t)a - (uint64_t)b);
    case STK__BIN_MUL:
      return (int64_t)((uint64_t)a * (uint64_t)b);
    case STK__BIN_MIN:
      return b < a ? b : a;
    case STK__BIN_MAX:
      return b > a ? b : a;
    case STK__BIN_AND:
      return a & b;
    case STK__BIN_OR:
      return a | b;
    case STK__BIN_XOR:
      return a ^ b;
    case STK__BIN_POW:
      return stk_ar_ipow_i(a, b);
    case STK__BIN_FLOORDIV:
      if (b == 0) return 0;
      if (b == -1) return (int64_t)(0 - (uint64_t)a);
      return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
    case STK__BIN_MOD: {
      int64_t m = (b == 0 || b == -1) ? 0 : a % b;
      return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
    }
    default:
      return 0;
  }
}

STK_MHD uint64_t stk_ar_bin_u(int op, uint64_t a, uint64_t b) {
  switch (op) {
    case STK__BIN_ADD:
      return a + b;
    case STK__BIN_SUB:
      return a - b;
    case STK__BIN_MUL:
      return a * b;
    case STK__BIN_FLOORDIV:
      return b ? a / b : 0;
    case STK__BIN_MOD:
      return b ? a % b : 0;
    case STK__BIN_MIN:
      return b < a ? b : a;
    case STK__BIN_MAX:
      return b > a ? b : a;
    case STK__BIN_POW:
      return stk_ar_ipow_u(a, b);
    case STK__BIN_AND:
      return a & b;
    case STK__BIN_OR:
      return a | b;
    case STK__BIN_XOR:
      return a ^ b;
    default:
      return 0;
  }
}

/* Comparisons (1 or 0; NaN compares unequal to everything). */
#define STK_AR_CMP(NAME, T)                 \
  STK_MHD uint64_t NAME(int op, T a, T b) { \
    switch (op) {                           \
      case STK__BIN_EQ:                     \
        return a == b;                      \
      case STK__BIN_NE:                     \
        return a != b;                      \
      case STK__BIN_LT:                     \
        return a < b;                       \
      case STK__BIN_LE:                     \
        return a <= b;                      \
      case STK__BIN_GT:                     \
        return a > b;                       \
      default:                              \
        return a >= b;                      \
    }                                       \
  }
STK_AR_CMP(stk_ar_cmp_f, double)
STK_AR_CMP(stk_ar_cmp_i, int64_t)
STK_AR_CMP(stk_ar_cmp_u, uint64_t)
#undef STK_AR_CMP

/* ---- unary operations ---- */

STK_MHD double stk_ar_un_f(int op, double x) {
  switch (op) {
    case STK__UN_NEG:
      return -x;
    case STK__UN_ABS:
      return fabs(x);
    case STK__UN_SQRT:
      return sqrt(x);
    case STK__UN_RSQRT:
      return 1.0 / sqrt(x);
    case STK__UN_CBRT:
      return cbrt(x);
    case STK__UN_EXP:
      return exp(x);
    case STK__UN_LOG:
      return log(x);
    case STK__UN_LOG2:
      return log2(x);
    case STK__UN_LOG10:
      return log10(x);
    case STK__UN_SIN:
      return sin(x);
    case STK__UN_COS:
      return cos(x);
    case STK__UN_TAN:
      return tan(x);
    case STK__UN_ASIN:
      return asin(x);
    case STK__UN_ACOS:
      return acos(x);
    case STK__UN_ATAN:
      return atan(x);
    case STK__UN_SINH:
      return sinh(x);
    case STK__UN_COSH:
      return cosh(x);
    case STK__UN_TANH:
      return tanh(x);
    case STK__UN_FLOOR:
      return floor(x);
    case STK__UN_CEIL:
      return ceil(x);
    case STK__UN_ROUND:
      return round(x);
    default:
      return x;
  }
}

/* Integer kinds: neg and abs wrap around (abs(INT8_MIN) stays -128 after the store);
 * floor/ceil/round are the identity. */
STK_MHD uint64_t stk_ar_un_i(int op, int64_t x) {
  uint64_t v = (uint64_t)x;
  return op == STK__UN_NEG || (op == STK__UN_ABS && x < 0) ? 0 - v : v;
}
STK_MHD uint64_t stk_ar_un_u(int op, uint64_t x) { return op == STK__UN_NEG ? 0 - x : x; }

/* ---- clamp ---- */

/* The bounds of an integer clamp in the input type t: lo rounded up, hi down, both
 * saturated to the type (the kind's pair is filled: ilo and ihi, or ulo and uhi). */
STK_MHD void stk_ar_int_bounds(int t, double lo, double hi, int64_t *ilo, int64_t *ihi,
                               uint64_t *ulo, uint64_t *uhi) {
  int bits = t == STK_DTYPE_UINT8 || t == STK_DTYPE_INT8 || t == STK_DTYPE_BOOL ? 8
             : t == STK_DTYPE_UINT16 || t == STK_DTYPE_INT16                    ? 16
             : t == STK_DTYPE_UINT32 || t == STK_DTYPE_INT32                    ? 32
                                                                                : 64;
  double cl = ceil(lo), fh = floor(hi);
  if (stk_ar_is_signed(t)) {
    int64_t tmax = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1, tmin = -tmax - 1;
    *ilo = !(cl > (double)tmin) ? tmin : cl >= (double)tmax ? tmax : (int64_t)cl;
    *ihi = !(fh < (double)tmax) ? tmax : fh <= (double)tmin ? tmin : (int64_t)fh;
  } else {
    uint64_t tmax = t == STK_DTYPE_BOOL ? 1 : bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    *ulo = !(cl > 0.0) ? 0 : cl >= (double)tmax ? tmax : (uint64_t)cl;
    *uhi = !(fh < (double)tmax) ? tmax : fh <= 0.0 ? 0 : (uint64_t)fh;
  }
}

STK_MHD double stk_ar_clamp_f(double x, double lo, double hi) {
  double v = x < lo ? lo : x;
  return v > hi ? hi : v;
}
STK_MHD int64_t stk_ar_clamp_i(int64_t x, int64_t lo, int64_t hi) {
  int64_t v = x < lo ? lo : x;
  return v > hi ? hi : v;
}
STK_MHD uint64_t stk_ar_clamp_u(uint64_t x, uint64_t lo, uint64_t hi) {
  uint64_t v = x < lo ? lo : x;
  return v > hi ? hi : v;
}

/* ---- one_hot ---- */

/* The class of a label (any type, converted to float64 as stk__convert does, fractions
 * truncated toward zero), or -1 when it lies outside [0, ncls). */
STK_MHD int64_t stk_ar_one_hot_class(const void *p, int t, size_t i, int64_t ncls) {
  double l = trunc(stk_ar_load_f(p, t, i));
  return l >= 0.0 && l < (double)ncls ? (int64_t)l : -1;
}

/* ---- whole elements: what one GPU thread does for one output element ---- */

/* The operand's element index for output element e of a sample with `count` elements
 * and shape [ndim] (STRIDED only reads the shape and the strides). */
STK_MHD size_t stk_ar_operand_index(int mode, int64_t period, const int64_t *stride, int ndim,
                                    const int64_t *shape, int64_t count, int64_t e) {
  switch (mode) {
    case STK_GPU_OPERAND_DENSE:
      return (size_t)e;
    case STK_GPU_OPERAND_SCALAR:
      return 0;
    case STK_GPU_OPERAND_PERIODIC: /* 32-bit division where it fits: much cheaper on a GPU */
      if (count <= (int64_t)UINT32_MAX) return (size_t)((uint32_t)e % (uint32_t)period);
      return (size_t)(e % period);
    default: {
      int64_t off = 0, rest = e;
      for (int d = ndim - 1; d >= 0; d--) {
        off += (rest % shape[d]) * stride[d];
        rest /= shape[d];
      }
      return (size_t)off;
    }
  }
}

/* out[e] = a[ia] op b[ib] in compute kind `kind` (math.binary: the output's kind, or the
 * promoted type's for comparisons). With op and kind compile-time constants (the
 * kernel's template) the switches fold away. */
STK_MHD void stk_ar_binary_elem(int op, int kind, const void *a, int at, size_t ia, const void *b,
                                int bt, size_t ib, void *out, int ot, size_t e) {
  if (kind == STK_AK_F) {
    double x = stk_ar_load_f(a, at, ia), y = stk_ar_load_f(b, bt, ib);
    if (stk_ar_is_compare(op))
      stk_ar_store_u(out, ot, e, stk_ar_cmp_f(op, x, y));
    else
      stk_ar_store_f(out, ot, e, stk_ar_bin_f(op, x, y));
  } else if (kind == STK_AK_I) {
    int64_t x = stk_ar_load_i(a, at, ia), y = stk_ar_load_i(b, bt, ib);
    stk_ar_store_u(
        out, ot, e,
        stk_ar_is_compare(op) ? stk_ar_cmp_i(op, x, y) : (uint64_t)stk_ar_bin_i(op, x, y));
  } else {
    uint64_t x = stk_ar_load_u(a, at, ia), y = stk_ar_load_u(b, bt, ib);
    stk_ar_store_u(out, ot, e,
                   stk_ar_is_compare(op) ? stk_ar_cmp_u(op, x, y) : stk_ar_bin_u(op, x, y));
  }
}

/* The kind math.unary (op >= 0) or math.clamp (op < 0) computes in on type `in`. */
STK_MHD int stk_ar_unary_kind(int op, int in) {
  if (op >= 0 && (stk_ar_unop_is_float_fn(op) || op == STK__UN_NOT)) return STK_AK_F;
  return stk_ar_kind_of(in);
}

/* out[i] = op(in[i]) (op >= 0), or the clamp of in[i] to the bounds of its kind. */
STK_MHD void stk_ar_unary_elem(int op, int kind, const void *in, int it, void *out, int ot,
                               size_t i, double lo, double hi, int64_t ilo, int64_t ihi,
                               uint64_t ulo, uint64_t uhi) {
  if (op < 0) {
    if (kind == STK_AK_F)
      stk_ar_store_f(out, ot, i, stk_ar_clamp_f(stk_ar_load_f(in, it, i), lo, hi));
    else if (kind == STK_AK_I)
      stk_ar_store_u(out, ot, i, (uint64_t)stk_ar_clamp_i(stk_ar_load_i(in, it, i), ilo, ihi));
    else
      stk_ar_store_u(out, ot, i, stk_ar_clamp_u(stk_ar_load_u(in, it, i), ulo, uhi));
  } else if (op == STK__UN_NOT) {
    stk_ar_store_u(out, ot, i, stk_ar_load_f(in, it, i) == 0.0);
  } else if (kind == STK_AK_F) {
    stk_ar_store_f(out, ot, i, stk_ar_un_f(op, stk_ar_load_f(in, it, i)));
  } else if (kind == STK_AK_I) {
    stk_ar_store_u(out, ot, i, stk_ar_un_i(op, stk_ar_load_i(in, it, i)));
  } else {
    stk_ar_store_u(out, ot, i, stk_ar_un_u(op, stk_ar_load_u(in, it, i)));
  }
}

/* The source offset (elements) of element e of a row-major output of `shape`, each of
 * whose axes steps `stride` source elements (subscript's gather, CPU and GPU). */
STK_MHD int64_t stk_ar_gather_offset(int ndim, const int64_t *shape, const int64_t *stride,
                                     int64_t e) {
  int64_t off = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    int64_t q = e / shape[d];
    off += (e - q * shape[d]) * stride[d];
    e = q;
  }
  return off;
}

/* Element e of a one_hot output [count / inner, ncls, inner] (esize-byte elements; on and
 * off hold one element each, little-endian). */
STK_MHD void stk_ar_one_hot_elem(const void *src, int it, void *dst, int esize, int64_t ncls,
                                 int64_t inner, uint64_t on, uint64_t off, int64_t e) {
  int64_t row = ncls * inner, o = e / row, r = e - o * row, cls = r / inner, j = r - cls * inner;
  uint64_t v = stk_ar_one_hot_class(src, it, (size_t)(o * inner + j), ncls) == cls ? on : off;
  switch (esize) {
    case 1:
      ((uint8_t *)dst)[e] = (uint8_t)v;
      break;
    case 2:
      ((uint16_t *)dst)[e] = (uint16_t)v;
      break;
    case 4:
      ((uint32_t *)dst)[e] = (uint32_t)v;
      break;
    default:
      ((uint64_t *)dst)[e] = v;
      break;
  }
}

#endif /* STOKER_CUDA_MATH_COMMON_H */
