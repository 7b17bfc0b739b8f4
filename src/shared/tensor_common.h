/*
 * The per-element work of the tensor toolbox (src/ops/tensor_*.c, reductions.c), shared by
 * the CPU operators and the CUDA kernels (src/cuda/tensor.cu). C11 and CUDA C++ at once:
 * the GPU computes each element with the functions the CPU runs, so the CPU tests check
 * the GPU's maths and CPU/GPU parity reduces to the plans the operators build.
 *
 * Three plans cover the operators:
 * - stk_tn_copy: a strided copy of a region with a fill outside a window. transpose,
 *   slice, pad, cat, stack, element_extract, sequence_rearrange and the copying shape
 *   operators are all one or more such copies.
 * - stk_tn_reduce: one output element is a reduction over a strided sub-box of the input
 *   (reductions.*, and normalize's statistics).
 * - stk_tn_affine: out = (x - mean) * factor + shift, mean and factor broadcast through
 *   strides (normalize).
 */
#ifndef STOKER_SHARED_TENSOR_COMMON_H
#define STOKER_SHARED_TENSOR_COMMON_H

#include "math_common.h"

/* The most fill values a copy carries (one per channel; slice's fill_values). */
#define STK_TN_MAX_FILL 16

/* Region element e (row-major over `shape`) goes to dst + sum(c[d] * dst_stride[d]); it is
 * copied from src + sum((c[d] - lo[d]) * src_stride[d]) when lo[d] <= c[d] < hi[d] on every
 * axis, else it takes fill[min(c[fill_axis], nfill - 1)] (fill[0] when fill_axis < 0).
 * Strides count elements; src points at the element of coordinate lo. */
typedef struct {
  const void *src;
  void *dst;
  int ndim;
  int64_t count; /* product of shape */
  int64_t shape[STK_MAX_NDIM];
  int64_t src_stride[STK_MAX_NDIM];
  int64_t dst_stride[STK_MAX_NDIM];
  int64_t lo[STK_MAX_NDIM], hi[STK_MAX_NDIM];
  int fill_axis, nfill;
  uint64_t fill[STK_TN_MAX_FILL]; /* one element each, little-endian bytes */
} stk_tn_copy;

STK_MHD void stk_tn_put(void *dst, const void *src, int esize) {
  switch (esize) {
    case 1:
      *(uint8_t *)dst = *(const uint8_t *)src;
      break;
    case 2:
      *(uint16_t *)dst = *(const uint16_t *)src;
      break;
    case 4:
      *(uint32_t *)dst = *(const uint32_t *)src;
      break;
    default:
      *(uint64_t *)dst = *(const uint64_t *)src;
      break;
  }
}

/* Copies (or fills) element e of the region. */
STK_MHD void stk_tn_copy_elem(const stk_tn_copy *p, int esize, int64_t e) {
  int64_t soff = 0, doff = 0, fc = 0;
  int inside = 1;
  for (int d = p->ndim - 1; d >= 0; d--) {
    int64_t q = e / p->shape[d], c = e - q * p->shape[d];
    e = q;
    doff += c * p->dst_stride[d];
    if (c < p->lo[d] || c >= p->hi[d])
      inside = 0;
    else
      soff += (c - p->lo[d]) * p->src_stride[d];
    if (d == p->fill_axis) fc = c;
  }
  char *dst = (char *)p->dst + doff * esize;
  if (inside) {
    stk_tn_put(dst, (const char *)p->src + soff * esize, esize);
  } else {
    int k = p->fill_axis < 0 ? 0 : (int)(fc < p->nfill - 1 ? fc : p->nfill - 1);
    stk_tn_put(dst, &p->fill[k < 0 ? 0 : k], esize);
  }
}

/* ---- saturating stores (DALI's ConvertSat: round half away from zero, clamp) ---- */

STK_MHD void stk_tn_store_sat(void *p, int t, size_t i, double v) {
  if (stk_ar_is_float(t)) {
    stk_ar_store_f(p, t, i, v);
    return;
  }
  if (t == STK_DTYPE_BOOL) {
    ((uint8_t *)p)[i] = v != 0;
    return;
  }
  double lo, hi;
  switch (t) {
    case STK_DTYPE_UINT8:
      lo = 0, hi = 255;
      break;
    case STK_DTYPE_INT8:
      lo = -128, hi = 127;
      break;
    case STK_DTYPE_UINT16:
      lo = 0, hi = 65535;
      break;
    case STK_DTYPE_INT16:
      lo = -32768, hi = 32767;
      break;
    case STK_DTYPE_UINT32:
      lo = 0, hi = 4294967295.0;
      break;
    case STK_DTYPE_INT32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case STK_DTYPE_UINT64:
      lo = 0, hi = 18446744073709551615.0;
      break;
    default:
      lo = -9223372036854775808.0, hi = 9223372036854775807.0;
      break;
  }
  double r = isnan(v) ? 0.0 : round(v);
  r = r < lo ? lo : r > hi ? hi : r;
  if (t == STK_DTYPE_UINT64)
    stk_ar_store_u(p, t, i, r >= hi ? UINT64_MAX : (uint64_t)r);
  else if (t == STK_DTYPE_INT64)
    stk_ar_store_u(p, t, i, (uint64_t)(r >= hi ? INT64_MAX : (int64_t)r));
  else
    stk_ar_store_u(p, t, i, (uint64_t)(int64_t)r);
}

/* A plain C cast, as DALI's static_cast of fill values (pad, slice): floats truncate toward
 * zero, integers wrap to the type (-1 into uint8 is 255; NaN gives 0). */
STK_MHD void stk_tn_store_cast(void *p, int t, size_t i, double v) {
  if (stk_ar_is_float(t)) {
    stk_ar_store_f(p, t, i, v);
  } else if (t == STK_DTYPE_BOOL) {
    ((uint8_t *)p)[i] = v != 0;
  } else if (isnan(v)) {
    stk_ar_store_u(p, t, i, 0);
  } else if (v >= 9223372036854775808.0) {
    stk_ar_store_u(p, t, i, v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v);
  } else {
    int64_t k = v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
    stk_ar_store_u(p, t, i, (uint64_t)k);
  }
}

/* ---- reductions ---- */

enum {
  STK_TN_MIN = 0,
  STK_TN_MAX,
  STK_TN_SUM,
  STK_TN_MEAN,
  STK_TN_MEAN_SQUARE,
  STK_TN_RMS,
  STK_TN_STD_DEV,
  STK_TN_VARIANCE,
  STK_TN_INV_STD, /* normalize: scale / sqrt(var + epsilon), 0 where that is 0 */
  /* normalize(batch=True) on the GPU, over per-sample partial results: */
  STK_TN_SQ_DEV_SUM, /* sum((x - mean)^2), undivided */
  STK_TN_INV_STD_SUM /* scale / sqrt(sum(v) / divisor + epsilon) of partial sums v */
};

/* Output element o (row-major over out_shape) reduces the box red_shape of the input
 * starting at src + sum(c[d] * out_stride[d]); red_stride steps through the box. `mean`
 * (std_dev, variance, INV_STD; NULL elsewhere) holds one value per output element, of
 * mean_dtype (one value for all with mean_one); `mean_scalar` replaces it when mean is NULL
 * for those operations. */
typedef struct {
  const void *src, *mean;
  void *dst;
  int out_ndim, red_ndim;
  int64_t out_count, red_count;
  int64_t out_shape[STK_MAX_NDIM], out_stride[STK_MAX_NDIM];
  int64_t red_shape[STK_MAX_NDIM], red_stride[STK_MAX_NDIM];
  double mean_scalar;
  int mean_one; /* `mean` holds one value for every output element */
} stk_tn_reduce;

typedef struct {
  int op;
  stk_dtype in_dtype, out_dtype, mean_dtype;
  double ddof;    /* std_dev, variance, INV_STD */
  double divisor; /* MEAN, INV_STD_SUM: divide by this instead of the box's count (> 0) */
  double epsilon; /* INV_STD */
  double scale;   /* INV_STD */
} stk_tn_reduce_args;

/* The range of the integer types (bool: 0..1). */
STK_MHD int64_t stk_tn_int_lowest(int t) {
  return t == STK_DTYPE_INT8    ? INT8_MIN
         : t == STK_DTYPE_INT16 ? INT16_MIN
         : t == STK_DTYPE_INT32 ? INT32_MIN
                                : INT64_MIN;
}
STK_MHD int64_t stk_tn_int_highest(int t) {
  return t == STK_DTYPE_INT8    ? INT8_MAX
         : t == STK_DTYPE_INT16 ? INT16_MAX
         : t == STK_DTYPE_INT32 ? INT32_MAX
                                : INT64_MAX;
}
STK_MHD uint64_t stk_tn_uint_highest(int t) {
  return t == STK_DTYPE_UINT8    ? UINT8_MAX
         : t == STK_DTYPE_UINT16 ? UINT16_MAX
         : t == STK_DTYPE_UINT32 ? UINT32_MAX
         : t == STK_DTYPE_BOOL   ? 1
                                 : UINT64_MAX;
}

/* ---- accumulators ----
 * A partial reduction over some elements of a box: a float64 sum (floating sums, means,
 * squares, squared deviations), a 64-bit wrapping integer sum (integer sums, as DALI's
 * int64/uint64 accumulators), or the min/max so far in the input's own kind (exact for
 * 64-bit integers). Partials merge in any grouping, so the GPU may split a box across a
 * block's threads and combine them in a tree (the float64 sums then differ from the
 * CPU's sequential ones only in the last bits, which float32 outputs almost never
 * show). */
typedef struct {
  double f;
  int64_t i;
  uint64_t u;
} stk_tn_acc;

enum { STK_TN_ACC_FLOAT, STK_TN_ACC_INT_SUM, STK_TN_ACC_MIN_MAX };

STK_MHD int stk_tn_acc_mode(const stk_tn_reduce_args *a) {
  if (a->op == STK_TN_MIN || a->op == STK_TN_MAX) return STK_TN_ACC_MIN_MAX;
  if (a->op == STK_TN_SUM && !stk_ar_is_float(a->in_dtype)) return STK_TN_ACC_INT_SUM;
  return STK_TN_ACC_FLOAT;
}

/* The identity: 0, or for min/max the type's largest / lowest value (so an empty box
 * gives them, as DALI). */
STK_MHD void stk_tn_acc_init(const stk_tn_reduce_args *a, stk_tn_acc *c) {
  int is_max = a->op == STK_TN_MAX, t = a->in_dtype;
  c->f = 0, c->i = 0, c->u = 0;
  if (stk_tn_acc_mode(a) != STK_TN_ACC_MIN_MAX) return;
  c->f = is_max ? -INFINITY : INFINITY;
  c->i = is_max ? stk_tn_int_lowest(t) : stk_tn_int_highest(t);
  c->u = is_max ? 0 : stk_tn_uint_highest(t);
}

/* Adds element i of the input; m is the mean (squared deviations). */
STK_MHD void stk_tn_acc_add(const stk_tn_reduce_args *a, const void *src, size_t i, double m,
                            stk_tn_acc *c) {
  int mode = stk_tn_acc_mode(a), kind = stk_ar_kind_of(a->in_dtype), is_max = a->op == STK_TN_MAX;
  if (mode == STK_TN_ACC_INT_SUM) {
    c->u += kind == STK_AK_I ? (uint64_t)stk_ar_load_i(src, a->in_dtype, i)
                             : stk_ar_load_u(src, a->in_dtype, i);
  } else if (mode == STK_TN_ACC_FLOAT) {
    double v = stk_ar_load_f(src, a->in_dtype, i);
    if (a->op == STK_TN_SUM || a->op == STK_TN_MEAN || a->op == STK_TN_INV_STD_SUM)
      c->f += v;
    else if (a->op == STK_TN_MEAN_SQUARE || a->op == STK_TN_RMS)
      c->f += v * v;
    else
      c->f += (v - m) * (v - m);
  } else if (kind == STK_AK_F) {
    double v = stk_ar_load_f(src, a->in_dtype, i);
    if (!isnan(c->f) && ((is_max ? v > c->f : v < c->f) || isnan(v))) c->f = v;
  } else if (kind == STK_AK_I) {
    int64_t v = stk_ar_load_i(src, a->in_dtype, i);
    if (is_max ? v > c->i : v < c->i) c->i = v;
  } else {
    uint64_t v = stk_ar_load_u(src, a->in_dtype, i);
    if (is_max ? v > c->u : v < c->u) c->u = v;
  }
}

/* c = c (+) d. NaN wins min/max, as in the sequential walk. */
STK_MHD void stk_tn_acc_merge(const stk_tn_reduce_args *a, stk_tn_acc *c, const stk_tn_acc *d) {
  int is_max = a->op == STK_TN_MAX;
  switch (stk_tn_acc_mode(a)) {
    case STK_TN_ACC_INT_SUM:
      c->u += d->u;
      break;
    case STK_TN_ACC_FLOAT:
      c->f += d->f;
      break;
    default:
      if (!isnan(c->f) && ((is_max ? d->f > c->f : d->f < c->f) || isnan(d->f))) c->f = d->f;
      if (is_max ? d->i > c->i : d->i < c->i) c->i = d->i;
      if (is_max ? d->u > c->u : d->u < c->u) c->u = d->u;
      break;
  }
}

/* Where output element o's box starts, and the input index of its element r. */
STK_MHD int64_t stk_tn_box_base(const stk_tn_reduce *p, int64_t o) {
  return stk_ar_gather_offset(p->out_ndim, p->out_shape, p->out_stride, o);
}
STK_MHD size_t stk_tn_box_index(const stk_tn_reduce *p, int64_t base, int64_t r) {
  if (p->red_ndim == 1) return (size_t)(base + r * p->red_stride[0]); /* no division */
  return (size_t)(base + stk_ar_gather_offset(p->red_ndim, p->red_shape, p->red_stride, r));
}
/* The mean of output element o (squared deviations). */
STK_MHD double stk_tn_box_mean(const stk_tn_reduce *p, const stk_tn_reduce_args *a, int64_t o) {
  return p->mean ? stk_ar_load_f(p->mean, a->mean_dtype, p->mean_one ? 0 : (size_t)o)
                 : p->mean_scalar;
}

/* Stores output element o from its whole box's accumulator. Divisions are plain, as
 * DALI's: an empty box's mean is NaN; n - ddof <= 0 gives NaN, inf or a negative
 * variance. */
STK_MHD void stk_tn_acc_store(const stk_tn_reduce *p, const stk_tn_reduce_args *a, int64_t o,
                              const stk_tn_acc *c) {
  int kind = stk_ar_kind_of(a->in_dtype);
  if (stk_tn_acc_mode(a) == STK_TN_ACC_MIN_MAX) {
    if (kind == STK_AK_F)
      stk_ar_store_f(p->dst, a->out_dtype, (size_t)o, c->f);
    else
      stk_ar_store_u(p->dst, a->out_dtype, (size_t)o, kind == STK_AK_I ? (uint64_t)c->i : c->u);
    return;
  }
  if (stk_tn_acc_mode(a) == STK_TN_ACC_INT_SUM) {
    if (stk_ar_is_float(a->out_dtype))
      stk_ar_store_f(p->dst, a->out_dtype, (size_t)o,
                     kind == STK_AK_I ? (double)(int64_t)c->u : (double)c->u);
    else
      stk_ar_store_u(p->dst, a->out_dtype, (size_t)o, c->u);
    return;
  }
  double n = (double)p->red_count, acc = c->f, res;
  switch (a->op) {
    case STK_TN_SUM:
      res = acc;
      break;
    case STK_TN_MEAN:
      res = acc / (a->divisor > 0 ? a->divisor : n);
      break;
    case STK_TN_MEAN_SQUARE:
      res = acc / n;
      break;
    case STK_TN_SQ_DEV_SUM:
      res = acc;
      break;
    case STK_TN_INV_STD_SUM: {
      double sd = sqrt(acc / a->divisor + a->epsilon);
      res = sd > 0 ? a->scale / sd : 0.0;
      break;
    }
    case STK_TN_RMS:
      res = sqrt(acc / n);
      break;
    case STK_TN_VARIANCE:
      res = acc / (n - a->ddof);
      break;
    case STK_TN_STD_DEV:
      res = sqrt(acc / (n - a->ddof));
      break;
    default: { /* INV_STD: a zero deviation (or none to speak of) scales to 0 */
      double var = n - a->ddof > 0 ? acc / (n - a->ddof) : 0.0, sd = sqrt(var + a->epsilon);
      res = sd > 0 ? a->scale / sd : 0.0;
      break;
    }
  }
  /* DALI casts means into integer types (static_cast): toward zero, then saturated */
  if ((a->op == STK_TN_MEAN || a->op == STK_TN_MEAN_SQUARE || a->op == STK_TN_RMS) &&
      !stk_ar_is_float(a->out_dtype))
    res = trunc(res);
  stk_tn_store_sat(p->dst, a->out_dtype, (size_t)o, res);
}

/* Computes output element o sequentially (the CPU, and the GPU's thread-per-output
 * kernel). */
STK_MHD void stk_tn_reduce_elem(const stk_tn_reduce *p, const stk_tn_reduce_args *a, int64_t o) {
  int64_t base = stk_tn_box_base(p, o);
  double m = stk_tn_box_mean(p, a, o);
  stk_tn_acc c;
  stk_tn_acc_init(a, &c);
  for (int64_t r = 0; r < p->red_count; r++)
    stk_tn_acc_add(a, p->src, stk_tn_box_index(p, base, r), m, &c);
  stk_tn_acc_store(p, a, o, &c);
}

/* The GPU's block-per-output kernel: STK_TN_BLOCK threads, thread t taking elements t,
 * t + STK_TN_BLOCK, ..., then a tree of merges. Used for a launch when its boxes are large
 * (stk_tn_reduce_blockwise); the host copy below runs the same grouping (the fake GPU and
 * the tests use it). */
#define STK_TN_BLOCK 256
STK_MHD int stk_tn_reduce_blockwise(int64_t outputs, int64_t elements) {
  return outputs > 0 && elements / outputs >= 4 * STK_TN_BLOCK;
}

#ifndef __CUDACC__
/* Output element o with the block kernel's grouping, on the host. */
static inline void stk_tn_reduce_elem_blockwise(const stk_tn_reduce *p, const stk_tn_reduce_args *a,
                                                int64_t o) {
  stk_tn_acc part[STK_TN_BLOCK];
  int64_t base = stk_tn_box_base(p, o);
  double m = stk_tn_box_mean(p, a, o);
  for (int t = 0; t < STK_TN_BLOCK; t++) {
    stk_tn_acc_init(a, &part[t]);
    for (int64_t r = t; r < p->red_count; r += STK_TN_BLOCK)
      stk_tn_acc_add(a, p->src, stk_tn_box_index(p, base, r), m, &part[t]);
  }
  for (int half = STK_TN_BLOCK / 2; half > 0; half /= 2)
    for (int t = 0; t < half; t++) stk_tn_acc_merge(a, &part[t], &part[t + half]);
  stk_tn_acc_store(p, a, o, &part[0]);
}
#endif

/* ---- normalize's element-wise pass ---- */

/* out[e] = (in[e] - mean) * factor + shift, mean and factor read from float64 arrays at
 * sum(c[d] * stat_stride[d]) (stride 0 along the reduced axes), or the scalars when the
 * arrays are NULL. */
typedef struct {
  const void *src;
  void *dst;
  const double *mean, *factor;
  double mean_scalar, factor_scalar;
  int ndim;
  int64_t count;
  int64_t shape[STK_MAX_NDIM], stat_stride[STK_MAX_NDIM];
} stk_tn_affine;

STK_MHD void stk_tn_affine_elem(const stk_tn_affine *p, stk_dtype in_dtype, stk_dtype out_dtype,
                                double shift, int64_t e) {
  int64_t k = stk_ar_gather_offset(p->ndim, p->shape, p->stat_stride, e);
  double m = p->mean ? p->mean[k] : p->mean_scalar;
  double f = p->factor ? p->factor[k] : p->factor_scalar;
  double v = stk_ar_load_f(p->src, in_dtype, (size_t)e);
  stk_tn_store_sat(p->dst, out_dtype, (size_t)e, (v - m) * f + shift);
}

/* ---- lookup_table ---- */

/* out[e] = table[key] for integer keys in [0, table_len), else the default value (stored
 * by the host in `dflt`); table holds table_len elements of the output type. */
STK_MHD void stk_tn_lookup_elem(const void *src, stk_dtype in_dtype, void *dst, int esize,
                                const void *table, int64_t table_len, uint64_t dflt, int64_t e) {
  int64_t key = stk_ar_kind_of(in_dtype) == STK_AK_U
                    ? (int64_t)(stk_ar_load_u(src, in_dtype, (size_t)e) > (uint64_t)INT64_MAX
                                    ? -1
                                    : (int64_t)stk_ar_load_u(src, in_dtype, (size_t)e))
                    : stk_ar_load_i(src, in_dtype, (size_t)e);
  const void *v = key >= 0 && key < table_len ? (const char *)table + key * esize : (void *)&dflt;
  stk_tn_put((char *)dst + e * esize, v, esize);
}

#endif /* STOKER_SHARED_TENSOR_COMMON_H */
