/* math.binary, math.unary and math.clamp: elementwise arithmetic on nodes with DALI's
 * type promotion (see arithmetic.h for the rules).
 *
 * Kernels work in blocks: both operands are converted into one of three compute kinds
 * (float64, int64, uint64), the operation runs over the block, and the result is stored
 * in the output type (floats rounded by IEEE rules, integers truncated, i.e. wrapped).
 * float64 holds every float32 result exactly before its final rounding, so float32
 * results equal float32 arithmetic for + - * / and sqrt. Broadcast operands are either
 * periodic in the output's flat index (a scalar, a [C] vector against HWC, or any operand
 * broadcast only along leading axes), converted once into a repeating tile, or gathered
 * element by element (any other numpy broadcast). */
#include "arithmetic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_math.h"
#include "gpu_util.h"
#include "image_util.h"

#define BLOCK 512

/* ---------------------------------------------------------------------------------- */
/* Names and types                                                                    */
/* ---------------------------------------------------------------------------------- */

static const char *const binop_names[] = {
#define STK__BINOP_NAME(name, text) text,
    STK__BINOP_MAP(STK__BINOP_NAME)
#undef STK__BINOP_NAME
};
static const char *const unop_names[] = {
#define STK__UNOP_NAME(name, text) text,
    STK__UNOP_MAP(STK__UNOP_NAME)
#undef STK__UNOP_NAME
};

bool stk__binop_parse(const char *name, stk__binop *out) {
  for (int i = 0; i < STK__BIN_COUNT; i++)
    if (name && strcmp(name, binop_names[i]) == 0) return *out = (stk__binop)i, true;
  return false;
}

bool stk__unop_parse(const char *name, stk__unop *out) {
  for (int i = 0; i < STK__UN_COUNT; i++)
    if (name && strcmp(name, unop_names[i]) == 0) return *out = (stk__unop)i, true;
  return false;
}

const char *stk__binop_name(stk__binop op) {
  return (unsigned)op < STK__BIN_COUNT ? binop_names[op] : "?";
}

static bool is_float(stk_dtype t) {
  return t == STK_DTYPE_FLOAT16 || t == STK_DTYPE_FLOAT32 || t == STK_DTYPE_FLOAT64;
}
static bool is_signed(stk_dtype t) {
  return t == STK_DTYPE_INT8 || t == STK_DTYPE_INT16 || t == STK_DTYPE_INT32 ||
         t == STK_DTYPE_INT64;
}
static stk_dtype signed_of_size(size_t bytes) {
  return bytes >= 8   ? STK_DTYPE_INT64
         : bytes == 4 ? STK_DTYPE_INT32
         : bytes == 2 ? STK_DTYPE_INT16
                      : STK_DTYPE_INT8;
}

stk_dtype stk__type_promote(stk_dtype a, stk_dtype b) {
  if (a == b) return a;
  size_t sa = stk_dtype_size(a), sb = stk_dtype_size(b);
  if (is_float(a) || is_float(b)) {
    if (is_float(a) && is_float(b)) return sa >= sb ? a : b;
    return is_float(a) ? a : b;
  }
  if (a == STK_DTYPE_BOOL) return b;
  if (b == STK_DTYPE_BOOL) return a;
  if (is_signed(a) == is_signed(b)) return sa >= sb ? a : b;
  size_t ssz = is_signed(a) ? sa : sb, usz = is_signed(a) ? sb : sa;
  return ssz > usz ? signed_of_size(ssz) : signed_of_size(2 * usz);
}

static bool is_compare(stk__binop op) { return op >= STK__BIN_EQ && op <= STK__BIN_GE; }
static bool is_bitwise(stk__binop op) { return op >= STK__BIN_AND && op <= STK__BIN_XOR; }

bool stk__binop_type(stk__binop op, stk_dtype a, stk_dtype b, stk_dtype *out) {
  if (!stk__dtype_valid(a) || !stk__dtype_valid(b)) return false;
  stk_dtype p = stk__type_promote(a, b);
  if (is_compare(op))
    *out = STK_DTYPE_BOOL;
  else if (is_bitwise(op)) {
    if (is_float(p)) return false;
    *out = p;
  } else if (op == STK__BIN_DIV || op == STK__BIN_FPOW || op == STK__BIN_ATAN2) {
    *out = is_float(p) ? p : STK_DTYPE_FLOAT32;
  } else {
    *out = p;
  }
  return true;
}

static bool unop_is_float_fn(stk__unop op) { return op >= STK__UN_SQRT && op <= STK__UN_TANH; }

bool stk__unop_type(stk__unop op, stk_dtype in, stk_dtype *out) {
  if (!stk__dtype_valid(in)) return false;
  if (op == STK__UN_NOT)
    *out = STK_DTYPE_BOOL;
  else if (unop_is_float_fn(op))
    *out = is_float(in) ? in : STK_DTYPE_FLOAT32;
  else if (op == STK__UN_NEG && in == STK_DTYPE_BOOL)
    return false;
  else
    *out = in;
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* Compute kinds, loads and stores                                                    */
/* ---------------------------------------------------------------------------------- */

typedef enum { K_F, K_I, K_U } kind;

typedef union {
  double f[BLOCK];
  int64_t i[BLOCK];
  uint64_t u[BLOCK];
} block;

static stk_dtype kind_dtype(kind k) {
  return k == K_F ? STK_DTYPE_FLOAT64 : k == K_I ? STK_DTYPE_INT64 : STK_DTYPE_UINT64;
}
static kind kind_of(stk_dtype t) { return is_float(t) ? K_F : is_signed(t) ? K_I : K_U; }

static const char *elem(const void *base, stk_dtype t, size_t i) {
  return (const char *)base + i * stk_dtype_size(t);
}

/* Converts n elements of type t into kind k (exact, but uint64 into int64 saturates and
 * 64-bit integers into float64 round). One loop per type: the generic stk__convert
 * switches per element. */
static void load_kind(void *dst, kind k, const void *src, stk_dtype t, size_t n) {
#define LOAD(CT, EXPR)                                                        \
  do {                                                                        \
    const CT *q = src;                                                        \
    if (k == K_F)                                                             \
      for (size_t i = 0; i < n; i++) ((double *)dst)[i] = (double)(EXPR);     \
    else if (k == K_I)                                                        \
      for (size_t i = 0; i < n; i++) ((int64_t *)dst)[i] = (int64_t)(EXPR);   \
    else                                                                      \
      for (size_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = (uint64_t)(EXPR); \
  } while (0)
  switch (t) {
    case STK_DTYPE_UINT8:
      LOAD(uint8_t, q[i]);
      return;
    case STK_DTYPE_INT8:
      LOAD(int8_t, q[i]);
      return;
    case STK_DTYPE_UINT16:
      LOAD(uint16_t, q[i]);
      return;
    case STK_DTYPE_INT16:
      LOAD(int16_t, q[i]);
      return;
    case STK_DTYPE_UINT32:
      LOAD(uint32_t, q[i]);
      return;
    case STK_DTYPE_INT32:
      LOAD(int32_t, q[i]);
      return;
    case STK_DTYPE_INT64:
      LOAD(int64_t, q[i]);
      return;
    case STK_DTYPE_BOOL:
      LOAD(uint8_t, q[i] != 0);
      return;
    case STK_DTYPE_UINT64:
      if (k == K_I)
        LOAD(uint64_t, q[i] > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)q[i]);
      else
        LOAD(uint64_t, q[i]);
      return;
    default:
      if (k == K_F && t == STK_DTYPE_FLOAT32)
        LOAD(float, q[i]);
      else if (k == K_F && t == STK_DTYPE_FLOAT64)
        memcpy(dst, src, n * sizeof(double));
      else
        stk__convert(dst, kind_dtype(k), src, t, n); /* float16; floats into integer kinds */
      return;
  }
#undef LOAD
}

/* Stores n integer results (bit patterns) into out[start...]: truncation (wrap-around),
 * bool as != 0. */
static void store_int(void *out, stk_dtype t, size_t start, const uint64_t *v, size_t n) {
  switch (t) {
/* The list reads as a table: kept out of clang-format. */
/* clang-format off */
#define ST(T, CT)                                                                          \
  case T:                                                                                  \
    for (size_t k = 0; k < n; k++) ((CT *)out)[start + k] = (CT)v[k];                      \
    break;
    ST(STK_DTYPE_UINT8, uint8_t) ST(STK_DTYPE_INT8, int8_t) ST(STK_DTYPE_UINT16, uint16_t)
    ST(STK_DTYPE_INT16, int16_t) ST(STK_DTYPE_UINT32, uint32_t) ST(STK_DTYPE_INT32, int32_t)
    ST(STK_DTYPE_UINT64, uint64_t) ST(STK_DTYPE_INT64, int64_t)
#undef ST
        /* clang-format on */
        case STK_DTYPE_BOOL : for (size_t k = 0; k < n; k++)((uint8_t *)out)[start + k] = v[k] != 0;
    break;
    default:
      break;
  }
}

/* Stores a block whose values are in kind k. */
static void store_block(void *out, stk_dtype t, size_t start, const block *r, kind k, size_t n) {
  if (t == STK_DTYPE_FLOAT32 && k == K_F) {
    float *o = (float *)out + start;
    for (size_t i = 0; i < n; i++) o[i] = (float)r->f[i]; /* IEEE round to nearest */
  } else if (is_float(t)) {
    stk__convert((char *)out + start * stk_dtype_size(t), t, r->f, kind_dtype(k), n);
  } else {
    store_int(out, t, start, r->u, n);
  }
}

/* How an operand's elements line up with the output's flat index. */
typedef struct {
  const stk__operand *o;
  kind k;
  int64_t period; /* periodic: element (i mod period); 0: gathered */
  bool tiled;     /* periodic with the repeating tile in `tile` */
  block tile;
  int ndim; /* gathered: the output's rank, */
  int64_t shape[STK_MAX_NDIM], stride[STK_MAX_NDIM], idx[STK_MAX_NDIM], off;
} reader;

static int64_t numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

/* Periodic when the operand is broadcast only along leading output axes. */
static int64_t find_period(const stk__operand *o, int ndim, const int64_t *shape) {
  int64_t n = numel(o->ndim, o->shape);
  if (n == 1) return 1;
  int lead = ndim - o->ndim;
  bool seen = false;
  for (int e = 0; e < o->ndim; e++) {
    if (!seen && o->shape[e] == 1) continue;
    seen = true;
    if (o->shape[e] != shape[e + lead]) return 0;
  }
  return n;
}

static void reader_init(reader *r, const stk__operand *o, kind k, int ndim, const int64_t *shape) {
  r->o = o, r->k = k, r->tiled = false, r->off = 0;
  r->period = find_period(o, ndim, shape);
  r->ndim = ndim;
  int lead = ndim - o->ndim;
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    int e = d - lead;
    r->shape[d] = shape[d];
    r->idx[d] = 0;
    r->stride[d] = (e < 0 || o->shape[e] == 1) ? 0 : st;
    if (e >= 0) st *= o->shape[e];
  }
}

/* Builds the tile of a periodic operand: `len` elements (a multiple of its period). */
static void reader_tile(reader *r, size_t len) {
  size_t p = (size_t)r->period;
  load_kind(r->tile.f, r->k, r->o->data, r->o->dtype, p);
  size_t es = 8;
  for (size_t k = p; k < len; k += p)
    memcpy((char *)r->tile.f + k * es, r->tile.f, (len - k < p ? len - k : p) * es);
  r->tiled = true;
}

/* The operand's values for output elements [start, start + n), in r's kind. */
static const block *reader_read(reader *r, size_t start, size_t n, block *buf) {
  if (r->tiled) return &r->tile;
  const stk__operand *o = r->o;
  if (r->period > 0) {
    size_t p = (size_t)r->period, pos = start % p, done = 0;
    while (done < n) {
      size_t len = p - pos < n - done ? p - pos : n - done;
      load_kind((char *)buf->f + done * 8, r->k, elem(o->data, o->dtype, pos), o->dtype, len);
      done += len, pos = 0;
    }
    return buf;
  }
  for (size_t k = 0; k < n; k++) { /* gather with an odometer over the output's axes */
    load_kind((char *)buf->f + k * 8, r->k, elem(o->data, o->dtype, (size_t)r->off), o->dtype, 1);
    for (int d = r->ndim - 1; d >= 0; d--) {
      r->off += r->stride[d];
      if (++r->idx[d] < r->shape[d]) break;
      r->off -= r->stride[d] * r->shape[d];
      r->idx[d] = 0;
    }
  }
  return buf;
}

/* ---------------------------------------------------------------------------------- */
/* Binary operations                                                                  */
/* ---------------------------------------------------------------------------------- */

/* The operation is chosen outside each loop and passed to the shared per-element
 * function as a constant, so the function's switch folds away and each loop is a plain
 * vectorisable loop running exactly the GPU's arithmetic (math_common.h). */
/* The list reads as a table: kept out of clang-format. */
/* clang-format off */
#define EACH(OUT, FN, OP) \
  case OP: \
    for (size_t k = 0; k < n; k++) OUT[k] = FN(OP, a[k], b[k]); \
    break;
#define COMPARISONS(FN) \
  EACH(c, FN, STK__BIN_EQ) EACH(c, FN, STK__BIN_NE) EACH(c, FN, STK__BIN_LT) \
  EACH(c, FN, STK__BIN_LE) EACH(c, FN, STK__BIN_GT) EACH(c, FN, STK__BIN_GE)
#define ARITH(FN) \
  EACH(o, FN, STK__BIN_ADD) EACH(o, FN, STK__BIN_SUB) EACH(o, FN, STK__BIN_MUL) \
  EACH(o, FN, STK__BIN_FLOORDIV) EACH(o, FN, STK__BIN_MOD) EACH(o, FN, STK__BIN_MIN) \
  EACH(o, FN, STK__BIN_MAX) EACH(o, FN, STK__BIN_POW)
#define BITWISE(FN) EACH(o, FN, STK__BIN_AND) EACH(o, FN, STK__BIN_OR) EACH(o, FN, STK__BIN_XOR)

static void compute_f(stk__binop op, const double *a, const double *b, block *r, size_t n) {
  double *o = r->f;
  uint64_t *c = r->u;
  switch (op) {
    ARITH(stk_ar_bin_f)
    EACH(o, stk_ar_bin_f, STK__BIN_DIV) EACH(o, stk_ar_bin_f, STK__BIN_FPOW)
    EACH(o, stk_ar_bin_f, STK__BIN_ATAN2)
    COMPARISONS(stk_ar_cmp_f)
  default: break; /* bitwise: refused for floats by stk__binop_type */
  }
}

static void compute_i(stk__binop op, const int64_t *a, const int64_t *b, block *r, size_t n) {
  int64_t *o = r->i;
  uint64_t *c = r->u;
  switch (op) {
    ARITH(stk_ar_bin_i)
    BITWISE(stk_ar_bin_i)
    COMPARISONS(stk_ar_cmp_i)
  default: for (size_t k = 0; k < n; k++) o[k] = 0; break;
  }
}

static void compute_u(stk__binop op, const uint64_t *a, const uint64_t *b, block *r, size_t n) {
  uint64_t *o = r->u, *c = r->u;
  switch (op) {
    ARITH(stk_ar_bin_u)
    BITWISE(stk_ar_bin_u)
    COMPARISONS(stk_ar_cmp_u)
  default: for (size_t k = 0; k < n; k++) o[k] = 0; break;
  }
}
#undef EACH
#undef COMPARISONS
#undef ARITH
#undef BITWISE
/* clang-format on */

bool stk__broadcast_shape(const stk__operand *a, const stk__operand *b, int *ndim,
                          int64_t shape[STK_MAX_NDIM]) {
  int64_t na = numel(a->ndim, a->shape), nb = numel(b->ndim, b->shape);
  const stk__operand *big = NULL;
  if (na == 1 && nb == 1)
    big = b->ndim > a->ndim ? b : a;
  else if (na == 1)
    big = b;
  else if (nb == 1)
    big = a;
  if (big) {
    *ndim = big->ndim;
    memcpy(shape, big->shape, (size_t)big->ndim * sizeof(int64_t));
    return true;
  }
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int d = 0; d < nd; d++) {
    int ea = d - (nd - a->ndim), eb = d - (nd - b->ndim);
    int64_t x = ea >= 0 ? a->shape[ea] : 1, y = eb >= 0 ? b->shape[eb] : 1;
    if (x != y && x != 1 && y != 1) return false;
    shape[d] = x == 1 ? y : x;
  }
  *ndim = nd;
  return true;
}

void stk__binary(stk__binop op, const stk__operand *a, const stk__operand *b, void *out,
                 stk_dtype out_type, int ndim, const int64_t *shape) {
  stk_dtype p = stk__type_promote(a->dtype, b->dtype);
  kind k = is_compare(op) ? kind_of(p) : kind_of(out_type);
  size_t n = (size_t)numel(ndim, shape);
  /* About 25 KB of stack: the blocks are small enough for any worker thread. */
  reader sra, srb, *ra = &sra, *rb = &srb;
  block sba, sbb, sbr, *ba = &sba, *bb = &sbb, *br = &sbr;
  reader_init(ra, a, k, ndim, shape);
  reader_init(rb, b, k, ndim, shape);
  /* One operand with a short period sets the block length to a multiple of it; scalars
   * fit any block. */
  size_t len = BLOCK;
  reader *small = NULL;
  if (ra->period > 1 && ra->period <= BLOCK / 2)
    small = ra;
  else if (rb->period > 1 && rb->period <= BLOCK / 2)
    small = rb;
  if (small) len = BLOCK - BLOCK % (size_t)small->period, reader_tile(small, len);
  if (ra->period == 1) reader_tile(ra, len);
  if (rb->period == 1) reader_tile(rb, len);
  for (size_t start = 0; start < n; start += len) {
    size_t m = n - start < len ? n - start : len;
    const block *x = reader_read(ra, start, m, ba), *y = reader_read(rb, start, m, bb);
    if (k == K_F)
      compute_f(op, x->f, y->f, br, m);
    else if (k == K_I)
      compute_i(op, x->i, y->i, br, m);
    else
      compute_u(op, x->u, y->u, br, m);
    store_block(out, out_type, start, br, is_compare(op) ? K_U : k, m);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Unary operations and clamp                                                         */
/* ---------------------------------------------------------------------------------- */

void stk__unary(stk__unop op, const void *in, stk_dtype in_type, void *out, stk_dtype out_type,
                size_t n) {
  block x, r;
  kind k = (unop_is_float_fn(op) || op == STK__UN_NOT) ? K_F : kind_of(in_type);
  for (size_t start = 0; start < n; start += BLOCK) {
    size_t m = n - start < BLOCK ? n - start : BLOCK;
    load_kind(x.f, k, elem(in, in_type, start), in_type, m);
    if (op == STK__UN_NOT) {
      for (size_t i = 0; i < m; i++) r.u[i] = x.f[i] == 0.0;
      store_int(out, out_type, start, r.u, m);
      continue;
    }
    if (k == K_F) {
      for (size_t i = 0; i < m; i++) r.f[i] = stk_ar_un_f(op, x.f[i]);
    } else if (k == K_I) {
      for (size_t i = 0; i < m; i++) r.u[i] = stk_ar_un_i(op, x.i[i]);
    } else {
      for (size_t i = 0; i < m; i++) r.u[i] = stk_ar_un_u(op, x.u[i]);
    }
    store_block(out, out_type, start, &r, k, m);
  }
}

void stk__clamp(const void *in, void *out, stk_dtype dtype, size_t n, double lo, double hi) {
  if (isnan(lo)) lo = -INFINITY;
  if (isnan(hi)) hi = INFINITY;
  block x;
  kind k = kind_of(dtype);
  int64_t ilo = 0, ihi = 0;
  uint64_t ulo = 0, uhi = 0;
  if (k != K_F) stk_ar_int_bounds(dtype, lo, hi, &ilo, &ihi, &ulo, &uhi);
  for (size_t start = 0; start < n; start += BLOCK) {
    size_t m = n - start < BLOCK ? n - start : BLOCK;
    load_kind(x.f, k, elem(in, dtype, start), dtype, m);
    for (size_t i = 0; i < m; i++) {
      if (k == K_F)
        x.f[i] = stk_ar_clamp_f(x.f[i], lo, hi);
      else if (k == K_I)
        x.i[i] = stk_ar_clamp_i(x.i[i], ilo, ihi);
      else
        x.u[i] = stk_ar_clamp_u(x.u[i], ulo, uhi);
    }
    store_block(out, dtype, start, &x, k, m);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Operators                                                                          */
/* ---------------------------------------------------------------------------------- */

#define SCALAR_DTYPES \
  "bool|uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64"
#define BINOP_CHOICES \
  "add|sub|mul|div|floordiv|mod|min|max|pow|fpow|atan2|eq|ne|lt|le|gt|ge|and|or|xor"
#define UNOP_CHOICES                                                                     \
  "neg|not|abs|sqrt|rsqrt|cbrt|exp|log|log2|log10|sin|cos|tan|asin|acos|atan|sinh|cosh|" \
  "tanh|floor|ceil|round"

static const stk_port_schema any_out[] = {{"output", "the result"}};

/* Output layout: the layout of an input that has the output's rank and size. */
static const char *result_layout(const stk__tensor *a, const stk__tensor *b, int ndim, int64_t n) {
  const stk__tensor *c[2] = {a, b};
  for (int i = 0; i < 2; i++)
    if (c[i] && c[i]->ndim == ndim && numel(c[i]->ndim, c[i]->shape) == n) return c[i]->layout;
  return "";
}

static stk_status output_shaped(stk__sample *s, stk_dtype t, int ndim, const int64_t *shape,
                                const char *layout, stk__tensor **out) {
  return stk__output(s, 0, t, ndim, shape, layout, out);
}

static const char *dname(stk_dtype t) {
  const char *n = stk_dtype_name(t);
  return n ? n : "?";
}

/* ---- math.binary ---- */
enum { B_OP, B_SCALAR, B_SCALAR_SIDE, B_SCALAR_DTYPE, BINARY_ARGS_COUNT_ };
static const stk_arg_schema binary_args[] = {
    [B_OP] =
        {.name = "op",
         .type = STK_ARG_STRING,
         .flags = STK_ARGF_REQUIRED,
         .choices = BINOP_CHOICES,
         .doc =
             "the operation: add sub mul div (true division) floordiv mod (Python's rounding) min "
             "max pow (in the promoted type) fpow (floating) atan2, comparisons eq ne lt le gt ge "
             "(bool result), and or xor (bitwise; logical on bool)"},
    [B_SCALAR] = {.name = "scalar",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "the constant operand when there is one input"},
    [B_SCALAR_SIDE] = {.name = "scalar_side",
                       .type = STK_ARG_STRING,
                       .default_text = "\"right\"",
                       .choices = "left|right",
                       .doc = "where the constant goes: \"right\" computes input op scalar, "
                              "\"left\" scalar op input"},
    [B_SCALAR_DTYPE] =
        {.name = "scalar_dtype",
         .type = STK_ARG_STRING,
         .default_text = "\"float32\"",
         .choices = SCALAR_DTYPES,
         .doc =
             "the constant's type for promotion (DALI: a Python int is int32, a float float32, a "
             "bool bool); the value is rounded and saturated to it"},
};
STK__CHECK_ARGS(binary_args, BINARY_ARGS_COUNT_);
static const stk_port_schema binary_in[] = {{"left", "left operand"},
                                            {"right", "right operand (absent with `scalar`)"}};

typedef struct {
  stk__binop op;
  bool scalar_left;
  stk_dtype scalar_dtype;
} binary_state;

static stk_status binary_init(stk__node *node) {
  bool two = stk__node_num_inputs(node) == 2, has_scalar = stk__arg_given(node, B_SCALAR);
  if (two == has_scalar)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      two ? "takes two inputs or one input and 'scalar', not both"
                          : "with one input, 'scalar' must be given");
  binary_state *st = stk__malloc(sizeof *st, "math.binary state");
  if (!st) return STK_ERR_OUT_OF_MEMORY;
  if (!stk__binop_parse(stk__arg_string(node, B_OP), &st->op)) {
    free(st);
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "op = \"%s\" is not an operation",
                      stk__arg_string(node, B_OP));
  }
  st->scalar_left = strcmp(stk__arg_string(node, B_SCALAR_SIDE), "left") == 0;
  st->scalar_dtype = stk__dtype_arg(stk__arg_string(node, B_SCALAR_DTYPE));
  *stk__node_state(node) = st;
  return STK_OK;
}

static void state_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

static stk_status binary_run(stk__node *node, stk__sample *s) {
  const binary_state *st = *stk__node_state(node);
  const stk__tensor *t0 = stk__input(s, 0), *t1 = NULL;
  stk__operand a = {t0->data, t0->dtype, t0->ndim, t0->shape}, b;
  uint64_t scalar_buf; /* one element of any type */
  static const int64_t one = 1;
  if (stk__node_num_inputs(node) == 2) {
    t1 = stk__input(s, 1);
    b = (stk__operand){t1->data, t1->dtype, t1->ndim, t1->shape};
  } else {
    stk__store_double(&scalar_buf, st->scalar_dtype, 0, stk__arg_float(node, s, B_SCALAR));
    b = (stk__operand){&scalar_buf, st->scalar_dtype, 0, &one};
    if (st->scalar_left) {
      stk__operand tmp = a;
      a = b, b = tmp;
    }
  }
  stk_dtype ot;
  if (!stk__binop_type(st->op, a.dtype, b.dtype, &ot))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' does not take %s and %s",
                      stk__binop_name(st->op), dname(a.dtype), dname(b.dtype));
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  if (!stk__broadcast_shape(&a, &b, &ndim, shape))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s': shapes of %d and %d dimensions do not broadcast (first extents "
                      "%lld and %lld)",
                      stk__binop_name(st->op), a.ndim, b.ndim, (long long)(a.ndim ? a.shape[0] : 1),
                      (long long)(b.ndim ? b.shape[0] : 1));
  stk__tensor *out;
  STK_TRY(output_shaped(s, ot, ndim, shape, result_layout(t0, t1, ndim, numel(ndim, shape)), &out));
  stk__binary(st->op, &a, &b, out->data, ot, ndim, shape);
  return STK_OK;
}

static stk_status binary_run_gpu(stk__node *node, stk__gpu_batch *b);

static const stk_op_schema binary_schema = {
    .name = "math.binary",
    .doc =
        "Elementwise binary arithmetic, comparisons and bitwise logic on two inputs or on one "
        "input and a constant (what expressions on nodes become: `0.5 * image + edges`). Type "
        "promotion (DALI's table, commutative): T op T -> T; floatX op T -> floatX (T not a "
        "float); floatX op floatY -> the wider float; intX op intY and uintX op uintY -> the "
        "wider; intX op uintY -> intX if X > Y, else int(2Y) (int64 at most); bool op T -> T "
        "(bool is the narrowest unsigned type). Result: the promoted type for add sub mul "
        "floordiv mod min max pow and the bitwise ops (floats refused); div, fpow and atan2 "
        "give float32 for integers; comparisons give bool. Integer results wrap around as in "
        "C (uint8 200 + 100 = 44). Shapes: equal, one side a single element, or numpy "
        "broadcasting ([C] against HWC).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = binary_in,
    .num_outputs = 1,
    .outputs = any_out,
    .num_args = sizeof binary_args / sizeof binary_args[0],
    .args = binary_args,
    .gpu_check =
        "f = cast(IN, dtype=\"float32\", device=@)\n"
        "g = flip(f, horizontal=1, device=@)\n"
        "return math.binary(f, g, op=\"atan2\", device=@)",
};
const stk__op_def stk__op_math_binary = {.schema = &binary_schema,
                                         .init = binary_init,
                                         .destroy = state_destroy,
                                         .run_sample = binary_run,
                                         .run_gpu = binary_run_gpu};

/* ---- math.unary ---- */
enum { U_OP, UNARY_ARGS_COUNT_ };
static const stk_arg_schema unary_args[] = {
    [U_OP] =
        {.name = "op",
         .type = STK_ARG_STRING,
         .flags = STK_ARGF_REQUIRED,
         .choices = UNOP_CHOICES,
         .doc =
             "neg, not (logical, bool result), abs, floor, ceil, round (half away from zero) keep "
             "the type; sqrt rsqrt cbrt exp log log2 log10 sin cos tan asin acos atan sinh cosh "
             "tanh "
             "give the input's float type, or float32 for integers"},
};
STK__CHECK_ARGS(unary_args, UNARY_ARGS_COUNT_);
static const stk_port_schema unary_in[] = {{"input", "a tensor of any type"}};

static stk_status unary_init(stk__node *node) {
  stk__unop *op = stk__malloc(sizeof *op, "math.unary state");
  if (!op) return STK_ERR_OUT_OF_MEMORY;
  if (!stk__unop_parse(stk__arg_string(node, U_OP), op)) {
    free(op);
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "op = \"%s\" is not an operation",
                      stk__arg_string(node, U_OP));
  }
  *stk__node_state(node) = op;
  return STK_OK;
}

static stk_status unary_run(stk__node *node, stk__sample *s) {
  stk__unop op = *(const stk__unop *)*stk__node_state(node);
  const stk__tensor *in = stk__input(s, 0);
  stk_dtype ot;
  if (!stk__unop_type(op, in->dtype, &ot))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' does not take %s", unop_names[op],
                      dname(in->dtype));
  stk__tensor *out;
  STK_TRY(output_shaped(s, ot, in->ndim, in->shape, in->layout, &out));
  stk__unary(op, in->data, in->dtype, out->data, ot, (size_t)numel(in->ndim, in->shape));
  return STK_OK;
}

static stk_status unary_run_gpu(stk__node *node, stk__gpu_batch *b);

static const stk_op_schema unary_schema = {
    .name = "math.unary",
    .doc =
        "Elementwise unary operations (negation, logical not, abs, rounding, "
        "and the floating-point functions).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = unary_in,
    .num_outputs = 1,
    .outputs = any_out,
    .num_args = sizeof unary_args / sizeof unary_args[0],
    .args = unary_args,
    .gpu_check =
        "# atol=0.000001\n"
        "f = cast(IN, dtype=\"float32\", device=@)\n"
        "return math.unary(f, op=\"sqrt\", device=@)",
};
const stk__op_def stk__op_math_unary = {.schema = &unary_schema,
                                        .init = unary_init,
                                        .destroy = state_destroy,
                                        .run_sample = unary_run,
                                        .run_gpu = unary_run_gpu};

/* ---- math.clamp ---- */
enum { C_LO, C_HI, C_LO_DTYPE, C_HI_DTYPE, CLAMP_ARGS_COUNT_ };
static const stk_arg_schema clamp_args[] = {
    [C_LO] = {.name = "lo",
              .type = STK_ARG_FLOAT,
              .flags = STK_ARGF_PER_SAMPLE,
              .doc = "lower bound (none when absent)"},
    [C_HI] = {.name = "hi",
              .type = STK_ARG_FLOAT,
              .flags = STK_ARGF_PER_SAMPLE,
              .doc =
                  "upper bound (none when absent); when lo > hi the result is hi, as numpy.clip"},
    [C_LO_DTYPE] =
        {.name = "lo_dtype",
         .type = STK_ARG_STRING,
         .choices = SCALAR_DTYPES,
         .doc =
             "the type of a constant lo (a Python int is int32, a float float32): the output "
             "type is promoted with it, as DALI does; when lo is fed by a node, the node's type"},
    [C_HI_DTYPE] = {.name = "hi_dtype",
                    .type = STK_ARG_STRING,
                    .choices = SCALAR_DTYPES,
                    .doc = "the same for hi"},
};
STK__CHECK_ARGS(clamp_args, CLAMP_ARGS_COUNT_);

/* The output type: the input's promoted with the bounds' types (DALI's rule), where the
 * bound is fed by a node or its type is given. */
static stk_dtype clamp_type(const stk__node *node, const stk__sample *s, stk_dtype in) {
  static const int bound[2][2] = {{C_LO, C_LO_DTYPE}, {C_HI, C_HI_DTYPE}};
  stk_dtype t = in;
  for (int k = 0; k < 2; k++) {
    if (!stk__arg_given(node, bound[k][0])) continue;
    stk_dtype b = stk__arg_fed_dtype(node, s, bound[k][0]);
    if (b == STK_DTYPE_COUNT && stk__arg_given(node, bound[k][1]))
      b = stk__dtype_arg(stk__arg_string(node, bound[k][1]));
    if (b != STK_DTYPE_COUNT && stk__dtype_valid(b)) t = stk__type_promote(t, b);
  }
  return t;
}

static stk_status clamp_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  double lo = stk__arg_given(node, C_LO) ? stk__arg_float(node, s, C_LO) : -INFINITY;
  double hi = stk__arg_given(node, C_HI) ? stk__arg_float(node, s, C_HI) : INFINITY;
  stk_dtype ot = clamp_type(node, s, in->dtype);
  size_t n = (size_t)numel(in->ndim, in->shape);
  stk__tensor *out;
  STK_TRY(output_shaped(s, ot, in->ndim, in->shape, in->layout, &out));
  if (ot == in->dtype) {
    stk__clamp(in->data, out->data, ot, n, lo, hi);
  } else { /* promoted: convert (exact: the promoted type holds every input value), clamp */
    stk__convert(out->data, ot, in->data, in->dtype, n);
    stk__clamp(out->data, out->data, ot, n, lo, hi);
  }
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* GPU backends: the same checks, types and shapes per sample as the CPU operators,    */
/* then one call of the math table (src/cuda/math.cu, the same per-element functions). */
/* ---------------------------------------------------------------------------------- */

/* Sample i of a list as a tensor view. */
static void list_sample(const stk_tensor_list *tl, size_t i, stk__tensor *t) {
  stk_tensor_desc d;
  stk_tensor_list_sample(tl, i, &d);
  memset(t, 0, sizeof *t);
  t->data = d.data, t->ndim = d.ndim, t->dtype = d.dtype;
  memcpy(t->shape, d.shape, sizeof t->shape);
  memcpy(t->layout, d.layout, sizeof t->layout);
}

/* How operand o lines up with the output (the reader's rules above). */
void stk__binary_gpu_operand(const stk__operand *o, int ndim, const int64_t *shape,
                             stk_gpu_math_operand *g) {
  memset(g, 0, sizeof *g);
  g->data = o->data;
  int64_t n = numel(o->ndim, o->shape), total = numel(ndim, shape),
          period = find_period(o, ndim, shape);
  if (n == 1)
    g->mode = STK_GPU_OPERAND_SCALAR;
  else if (n == total)
    g->mode = STK_GPU_OPERAND_DENSE;
  else if (period > 0)
    g->mode = STK_GPU_OPERAND_PERIODIC, g->period = period;
  else {
    reader r;
    reader_init(&r, o, K_F, ndim, shape);
    g->mode = STK_GPU_OPERAND_STRIDED;
    memcpy(g->stride, r.stride, sizeof g->stride);
  }
}

int stk__binary_kind(stk__binop op, stk_dtype a, stk_dtype b, stk_dtype out) {
  return is_compare(op) ? (int)kind_of(stk__type_promote(a, b)) : (int)kind_of(out);
}

typedef struct {
  stk_tensor_list *in[2];
  bool owned[2];
  int64_t *shapes;
  stk_gpu_binary_sample *smp;
  stk_tensor_list *out;
} binary_gpu_plan;

/* Plans sample i: operands, types (checked), output shape; *ndim0 is the batch's rank. */
static stk_status binary_gpu_sample(stk__node *node, stk__gpu_batch *b, const binary_state *st,
                                    binary_gpu_plan *p, size_t i, int *ndim0, char *layout) {
  stk__sample *s = stk__gpu_sample(b, i);
  static const int64_t one = 1;
  stk__tensor t0, t1;
  list_sample(p->in[0], i, &t0);
  stk__operand a = {t0.data, t0.dtype, t0.ndim, t0.shape}, c;
  stk_gpu_binary_sample *g = &p->smp[i];
  if (p->in[1]) {
    list_sample(p->in[1], i, &t1);
    c = (stk__operand){t1.data, t1.dtype, t1.ndim, t1.shape};
  } else {
    c = (stk__operand){NULL, st->scalar_dtype, 0, &one};
  }
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  if (!stk__broadcast_shape(&a, &c, &ndim, shape))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s': shapes of %d and %d dimensions do not broadcast (first extents "
                      "%lld and %lld)",
                      stk__binop_name(st->op), a.ndim, c.ndim, (long long)(a.ndim ? a.shape[0] : 1),
                      (long long)(c.ndim ? c.shape[0] : 1));
  if (i == 0)
    *ndim0 = ndim;
  else if (ndim != *ndim0)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "'%s': the result has %d dimensions here and %d in sample "
                      "0; a GPU batch needs one rank",
                      stk__binop_name(st->op), ndim, *ndim0);
  memset(g, 0, sizeof *g);
  g->count = numel(ndim, shape);
  g->ndim = ndim;
  memcpy(g->shape, shape, (size_t)ndim * sizeof(int64_t));
  memcpy(p->shapes + i * (size_t)ndim, shape,
         (size_t)ndim * sizeof(int64_t)); /* one rank: checked above */
  if (i == 0)
    snprintf(layout, STK_MAX_LAYOUT + 1, "%s",
             result_layout(&t0, p->in[1] ? &t1 : NULL, ndim, g->count));
  stk__binary_gpu_operand(&a, ndim, shape, &g->a);
  stk__binary_gpu_operand(&c, ndim, shape, &g->b);
  if (!p->in[1]) {
    stk__store_double(&g->b.scalar, st->scalar_dtype, 0, stk__arg_float(node, s, B_SCALAR));
    if (st->scalar_left) {
      stk_gpu_math_operand tmp = g->a;
      g->a = g->b, g->b = tmp;
    }
  }
  return STK_OK;
}

static stk_status binary_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const binary_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_BINARY));
  binary_gpu_plan p;
  memset(&p, 0, sizeof p);
  stk_status rc = stk__gpu_device_input(b, 0, &p.in[0], &p.owned[0]);
  if (rc == STK_OK && stk__node_num_inputs(node) == 2)
    rc = stk__gpu_device_input(b, 1, &p.in[1], &p.owned[1]);
  if (rc != STK_OK) {
    if (p.owned[0]) stk_tensor_list_release(p.in[0]);
    return rc;
  }
  stk_dtype ta = stk_tensor_list_dtype(p.in[0]),
            tb = p.in[1] ? stk_tensor_list_dtype(p.in[1]) : st->scalar_dtype;
  if (!p.in[1] && st->scalar_left) {
    stk_dtype tmp = ta;
    ta = tb, tb = tmp;
  }
  stk_dtype ot = STK_DTYPE_BOOL;
  if (!stk__binop_type(st->op, ta, tb, &ot))
    rc = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, n ? stk__gpu_sample(b, 0) : NULL,
                    "'%s' does not take %s and %s", stk__binop_name(st->op), dname(ta), dname(tb));
  p.smp = stk__calloc(n ? n : 1, sizeof *p.smp, "a math.binary plan");
  p.shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  if (rc == STK_OK && (!p.smp || !p.shapes)) rc = STK_ERR_OUT_OF_MEMORY;
  int ndim = 0;
  char layout[STK_MAX_LAYOUT + 1] = "";
  for (size_t i = 0; i < n && rc == STK_OK; i++)
    rc = binary_gpu_sample(node, b, st, &p, i, &ndim, layout);
  if (rc == STK_OK) {
    rc = stk__gpu_alloc_list(b, ot, ndim, p.shapes, layout,
                             stk__gpu_shapes_equal(p.shapes, n, ndim), &p.out);
  }
  if (rc == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(p.out, i, &d);
      p.smp[i].dst = d.data;
    }
    stk_gpu_binary_args args = {(int)st->op, ta, tb, ot, stk__binary_kind(st->op, ta, tb, ot)};
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    rc = stk__gpu_op_check(node,
                           stk_gpu_run_binary(g->api, g->ctx, (int)n, p.smp, &args,
                                              stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(p.smp);
  free(p.shapes);
  if (p.owned[1]) stk_tensor_list_release(p.in[1]);
  return stk__gpu_finish(b, p.in[0], p.owned[0], p.out, rc);
}

/* math.unary (op >= 0) and math.clamp (op < 0): same shape, one call. */
static stk_status unary_like_run_gpu(stk__node *node, stk__gpu_batch *b, int op) {
  size_t n = stk__gpu_batch_size(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_UNARY));
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_dtype it = stk_tensor_list_dtype(in), ot = it;
  stk_status rc = STK_OK;
  if (op < 0 && n > 0) { /* clamp: the promoted type; per-sample bounds must agree on it */
    ot = clamp_type(node, stk__gpu_sample(b, 0), it);
    for (size_t i = 1; i < n && rc == STK_OK; i++)
      if (clamp_type(node, stk__gpu_sample(b, i), it) != ot)
        rc = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                        "the bounds' types give another output type here than in sample 0");
  }
  if (op >= 0 && !stk__unop_type((stk__unop)op, it, &ot))
    rc = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, n ? stk__gpu_sample(b, 0) : NULL,
                    "'%s' does not take %s", unop_names[op], dname(it));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_unary_sample *us = stk__calloc(n ? n : 1, sizeof *us, "a math plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  if (rc == STK_OK && (!us || !shapes)) rc = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && rc == STK_OK; i++) {
    stk__tensor t;
    list_sample(in, i, &t);
    memcpy(shapes + i * (size_t)ndim, t.shape, (size_t)ndim * sizeof(int64_t));
    us[i].src = t.data;
    us[i].count = numel(t.ndim, t.shape);
    if (op < 0) { /* clamp: the CPU's bounds, per sample */
      stk__sample *s = stk__gpu_sample(b, i);
      double lo = stk__arg_given(node, C_LO) ? stk__arg_float(node, s, C_LO) : -INFINITY;
      double hi = stk__arg_given(node, C_HI) ? stk__arg_float(node, s, C_HI) : INFINITY;
      us[i].lo = isnan(lo) ? -INFINITY : lo;
      us[i].hi = isnan(hi) ? INFINITY : hi;
      if (!is_float(ot))
        stk_ar_int_bounds(ot, us[i].lo, us[i].hi, &us[i].ilo, &us[i].ihi, &us[i].ulo, &us[i].uhi);
    }
  }
  if (rc == STK_OK)
    rc = stk__gpu_alloc_list(b, ot, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (rc == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      us[i].dst = d.data;
    }
    stk_gpu_unary_args args = {op, it, ot};
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    rc = stk__gpu_op_check(
        node,
        stk_gpu_run_unary(g->api, g->ctx, (int)n, us, &args, stk__gpu_stream(b), err, sizeof err),
        err);
  }
  free(us);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, rc);
}

static stk_status unary_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return unary_like_run_gpu(node, b, (int)*(const stk__unop *)*stk__node_state(node));
}

static stk_status clamp_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return unary_like_run_gpu(node, b, -1);
}

static const stk_op_schema clamp_schema = {
    .name = "math.clamp",
    .doc =
        "Clamps every element to [lo, hi] (DALI's math.clamp): the output type is the input's "
        "promoted with the bounds' types (lo_dtype / hi_dtype, or the feeding nodes' types), as "
        "DALI's arithmetic promotes; integer outputs: lo rounded up, hi down, saturated to the "
        "type.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = unary_in,
    .num_outputs = 1,
    .outputs = any_out,
    .num_args = sizeof clamp_args / sizeof clamp_args[0],
    .args = clamp_args,
    .gpu_check = "return math.clamp(IN, lo=40, hi=200, device=@)",
};
const stk__op_def stk__op_math_clamp = {
    .schema = &clamp_schema, .run_sample = clamp_run, .run_gpu = clamp_run_gpu};
