/* Pure kernels shared by the image operators: dtype conversion, crop geometry, crop,
 * flip and the fused crop-mirror-normalise pass. No executor accessors here (see
 * image_util.h). */
#include "image_util.h"

#include <math.h>
#include <string.h>

#include "cmn_fast.h"

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* ---------------------------------------------------------------------------------- */
/* Conversions                                                                        */
/* ---------------------------------------------------------------------------------- */

bool stk__dtype_valid(stk_dtype dtype) { return (unsigned)dtype < STK_DTYPE_COUNT; }

static bool is_float(stk_dtype t) {
  return t == STK_DTYPE_FLOAT16 || t == STK_DTYPE_FLOAT32 || t == STK_DTYPE_FLOAT64;
}

/* Range of an integer dtype (bool: [0, 1]). */
static void int_range(stk_dtype t, int64_t *lo, uint64_t *hi) {
  switch (t) {
    case STK_DTYPE_UINT8:
      *lo = 0, *hi = UINT8_MAX;
      break;
    case STK_DTYPE_INT8:
      *lo = INT8_MIN, *hi = INT8_MAX;
      break;
    case STK_DTYPE_UINT16:
      *lo = 0, *hi = UINT16_MAX;
      break;
    case STK_DTYPE_INT16:
      *lo = INT16_MIN, *hi = INT16_MAX;
      break;
    case STK_DTYPE_UINT32:
      *lo = 0, *hi = UINT32_MAX;
      break;
    case STK_DTYPE_INT32:
      *lo = INT32_MIN, *hi = INT32_MAX;
      break;
    case STK_DTYPE_UINT64:
      *lo = 0, *hi = UINT64_MAX;
      break;
    case STK_DTYPE_INT64:
      *lo = INT64_MIN, *hi = INT64_MAX;
      break;
    default:
      *lo = 0, *hi = 1;
      break;
  }
}

static double load_float(const void *p, stk_dtype t, size_t i) {
  switch (t) {
    case STK_DTYPE_FLOAT16:
      return stk__f16_to_f32(((const uint16_t *)p)[i]);
    case STK_DTYPE_FLOAT32:
      return ((const float *)p)[i];
    default:
      return ((const double *)p)[i];
  }
}

/* An integer element as sign + magnitude-safe pair: *u for uint64, else *s. */
static bool load_int(const void *p, stk_dtype t, size_t i, int64_t *s, uint64_t *u) {
  switch (t) {
    case STK_DTYPE_UINT8:
      *s = ((const uint8_t *)p)[i];
      return false;
    case STK_DTYPE_INT8:
      *s = ((const int8_t *)p)[i];
      return false;
    case STK_DTYPE_UINT16:
      *s = ((const uint16_t *)p)[i];
      return false;
    case STK_DTYPE_INT16:
      *s = ((const int16_t *)p)[i];
      return false;
    case STK_DTYPE_UINT32:
      *s = ((const uint32_t *)p)[i];
      return false;
    case STK_DTYPE_INT32:
      *s = ((const int32_t *)p)[i];
      return false;
    case STK_DTYPE_INT64:
      *s = ((const int64_t *)p)[i];
      return false;
    case STK_DTYPE_UINT64:
      *u = ((const uint64_t *)p)[i];
      return true;
    default:
      *s = ((const uint8_t *)p)[i] != 0;
      return false; /* bool */
  }
}

/* Stores an in-range integer (already saturated) into an integer/bool dtype. */
static void store_int_raw(void *p, stk_dtype t, size_t i, int64_t s, uint64_t u, bool is_u) {
  switch (t) {
    case STK_DTYPE_UINT8:
      ((uint8_t *)p)[i] = (uint8_t)s;
      break;
    case STK_DTYPE_INT8:
      ((int8_t *)p)[i] = (int8_t)s;
      break;
    case STK_DTYPE_UINT16:
      ((uint16_t *)p)[i] = (uint16_t)s;
      break;
    case STK_DTYPE_INT16:
      ((int16_t *)p)[i] = (int16_t)s;
      break;
    case STK_DTYPE_UINT32:
      ((uint32_t *)p)[i] = (uint32_t)s;
      break;
    case STK_DTYPE_INT32:
      ((int32_t *)p)[i] = (int32_t)s;
      break;
    case STK_DTYPE_INT64:
      ((int64_t *)p)[i] = s;
      break;
    case STK_DTYPE_UINT64:
      ((uint64_t *)p)[i] = is_u ? u : (uint64_t)s;
      break;
    default:
      ((uint8_t *)p)[i] = (uint8_t)(is_u ? u != 0 : s != 0);
      break; /* bool */
  }
}

static void store_float(void *p, stk_dtype t, size_t i, double v) {
  switch (t) {
    case STK_DTYPE_FLOAT16:
      ((uint16_t *)p)[i] = stk__f32_to_f16((float)v);
      break;
    case STK_DTYPE_FLOAT32:
      ((float *)p)[i] = (float)v;
      break;
    default:
      ((double *)p)[i] = v;
      break;
  }
}

void stk__store_double(void *dst, stk_dtype t, size_t i, double v) {
  if (is_float(t)) {
    store_float(dst, t, i, v);
    return;
  }
  if (t == STK_DTYPE_BOOL) {
    ((uint8_t *)dst)[i] = v != 0.0; /* NaN is "true", as C's conversion to _Bool */
    return;
  }
  int64_t lo;
  uint64_t hi;
  int_range(t, &lo, &hi);
  double r = isnan(v) ? 0.0 : round(v); /* half away from zero */
  if (r <= (double)lo) {
    store_int_raw(dst, t, i, lo, 0, false);
  } else if (r >= (double)hi) { /* (double)hi rounds up for 64-bit types: still saturates */
    store_int_raw(dst, t, i, (int64_t)(hi > INT64_MAX ? INT64_MAX : hi), hi, t == STK_DTYPE_UINT64);
  } else if (t == STK_DTYPE_UINT64 && r >= 9223372036854775808.0) {
    store_int_raw(dst, t, i, 0, (uint64_t)r, true);
  } else {
    store_int_raw(dst, t, i, (int64_t)r, 0, false);
  }
}

/* Integer to integer with saturation. */
static void store_int(void *dst, stk_dtype t, size_t i, int64_t s, uint64_t u, bool is_u) {
  int64_t lo;
  uint64_t hi;
  int_range(t, &lo, &hi);
  if (t == STK_DTYPE_BOOL) {
    store_int_raw(dst, t, i, s, u, is_u);
  } else if (is_u) {
    if (u > hi) u = hi;
    store_int_raw(dst, t, i, u > INT64_MAX ? INT64_MAX : (int64_t)u, u, true);
  } else if (s < lo) {
    store_int_raw(dst, t, i, lo, 0, false);
  } else if (s > 0 && (uint64_t)s > hi) {
    store_int_raw(dst, t, i, (int64_t)hi, hi, false);
  } else {
    store_int_raw(dst, t, i, s, (uint64_t)s, false);
  }
}

static void convert_generic(void *dst, stk_dtype dt, const void *src, stk_dtype st, size_t n) {
  if (is_float(st)) {
    for (size_t i = 0; i < n; i++) stk__store_double(dst, dt, i, load_float(src, st, i));
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t s = 0;
    uint64_t u = 0;
    bool is_u = load_int(src, st, i, &s, &u);
    if (is_float(dt)) {
      double v = is_u ? (double)u : (double)s;
      if (dt == STK_DTYPE_FLOAT32)
        ((float *)dst)[i] = is_u ? (float)u : (float)s;
      else
        store_float(dst, dt, i, v);
    } else {
      store_int(dst, dt, i, s, u, is_u);
    }
  }
}

static void u8_to_f32(float *restrict d, const uint8_t *restrict s, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; l++) d[i + l] = (float)s[i + l];
  for (; i < n; i++) d[i] = (float)s[i];
}

/* Round half away from zero and saturate; NaN -> 0 (the comparisons fail for NaN). */
static void f32_to_u8(uint8_t *restrict d, const float *restrict s, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    int32_t a[16];
    for (int l = 0; l < 16; l++) {
      float v = s[i + l] + 0.5f;
      v = v > 0.0f ? v : 0.0f;
      v = v < 255.0f ? v : 255.0f;
      a[l] = (int32_t)v;
    }
    for (int l = 0; l < 16; l++) d[i + l] = (uint8_t)a[l];
  }
  for (; i < n; i++) stk__store_double(d, STK_DTYPE_UINT8, i, s[i]);
}

void stk__convert(void *dst, stk_dtype dt, const void *src, stk_dtype st, size_t n) {
  if (dt == st) {
    memcpy(dst, src, n * stk_dtype_size(dt));
  } else if (st == STK_DTYPE_UINT8 && dt == STK_DTYPE_FLOAT32) {
    u8_to_f32(dst, src, n);
  } else if (st == STK_DTYPE_FLOAT32 && dt == STK_DTYPE_UINT8) {
    f32_to_u8(dst, src, n);
  } else if (st == STK_DTYPE_FLOAT32 && dt == STK_DTYPE_FLOAT16) {
    for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = stk__f32_to_f16(((const float *)src)[i]);
  } else if (st == STK_DTYPE_FLOAT16 && dt == STK_DTYPE_FLOAT32) {
    for (size_t i = 0; i < n; i++) ((float *)dst)[i] = stk__f16_to_f32(((const uint16_t *)src)[i]);
  } else if (st == STK_DTYPE_UINT8 && dt == STK_DTYPE_FLOAT16) {
    for (size_t i = 0; i < n; i++)
      ((uint16_t *)dst)[i] = stk__f32_to_f16(((const uint8_t *)src)[i]);
  } else {
    convert_generic(dst, dt, src, st, n);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Crop geometry                                                                      */
/* ---------------------------------------------------------------------------------- */

bool stk__oob_parse(const char *name, stk__oob_policy *out) {
  static const char *const names[] = {"error", "pad", "trim_to_shape"};
  for (int i = 0; i < 3; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (stk__oob_policy)i;
      return true;
    }
  return false;
}

/* One axis: extent, anchor, and trimming. Returns false when out of bounds. */
static bool crop_axis(int64_t in, double crop, double pos, bool truncate, stk__oob_policy policy,
                      int64_t *anchor, int64_t *extent) {
  int64_t e = crop >= 1.0 && crop < 9e15 ? (int64_t)crop : 0; /* DALI truncates extents */
  if (e <= 0) {
    *anchor = 0, *extent = in;
    return true;
  }
  double a = pos * (double)(in - e);
  int64_t anc = (int64_t)(truncate ? trunc(a) : round(a));
  bool inside = anc >= 0 && anc + e <= in;
  if (policy == STK__OOB_TRIM && !inside) {
    int64_t lo = anc < 0 ? 0 : anc, hi = anc + e > in ? in : anc + e;
    anc = lo > in ? in : lo;
    e = hi > anc ? hi - anc : 0;
    inside = true;
  }
  *anchor = anc, *extent = e;
  return inside || policy == STK__OOB_PAD;
}

bool stk__crop_rect(int64_t in_h, int64_t in_w, double crop_h, double crop_w, double pos_y,
                    double pos_x, bool truncate_anchor, stk__oob_policy policy, stk__rect *out) {
  bool ok_y = crop_axis(in_h, crop_h, pos_y, truncate_anchor, policy, &out->y, &out->h);
  bool ok_x = crop_axis(in_w, crop_w, pos_x, truncate_anchor, policy, &out->x, &out->w);
  return ok_y && ok_x;
}

/* ---------------------------------------------------------------------------------- */
/* Crop and flip                                                                      */
/* ---------------------------------------------------------------------------------- */

void stk__fill_pixel(void *px, stk_dtype dtype, size_t count, const double *values,
                     size_t nvalues) {
  for (size_t c = 0; c < count; c++)
    stk__store_double(px, dtype, c, nvalues == 1 ? values[0] : c < nvalues ? values[c] : 0.0);
}

/* Writes n copies of a pixel of `bytes` bytes. */
static void fill_span(char *d, const void *px, size_t bytes, int64_t n) {
  if (n <= 0) return;
  memcpy(d, px, bytes);
  size_t done = 1, total = (size_t)n; /* doubling copies */
  while (done < total) {
    size_t k = done < total - done ? done : total - done;
    memcpy(d + done * bytes, d, k * bytes);
    done += k;
  }
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void stk__crop_hwc(const stk__image *src, int64_t y, int64_t x, const stk__image *dst,
                   const void *fill_px) {
  size_t c = (size_t)src->c, ses = stk_dtype_size(src->dtype), des = stk_dtype_size(dst->dtype);
  size_t dpx = c * des, drow = (size_t)dst->w * dpx;
  /* output columns [x0, x1) come from the source */
  int64_t x0 = clamp64(-x, 0, dst->w), x1 = clamp64(src->w - x, x0, dst->w);
  for (int64_t r = 0; r < dst->h; r++) {
    char *d = (char *)dst->data + (size_t)r * drow;
    int64_t sy = y + r;
    if (sy < 0 || sy >= src->h) {
      fill_span(d, fill_px, dpx, dst->w);
      continue;
    }
    fill_span(d, fill_px, dpx, x0);
    const char *s =
        (const char *)src->data + ((size_t)sy * (size_t)src->w + (size_t)(x + x0)) * c * ses;
    stk__convert(d + (size_t)x0 * dpx, dst->dtype, s, src->dtype, (size_t)(x1 - x0) * c);
    fill_span(d + (size_t)x1 * dpx, fill_px, dpx, dst->w - x1);
  }
}

/* Mirrors one row of n blocks of `bytes` bytes; constant sizes let memcpy inline. */
static ALWAYS_INLINE void mirror_blocks(char *restrict d, const char *restrict s, size_t bytes,
                                        int64_t n) {
  for (int64_t i = 0; i < n; i++)
    memcpy(d + (size_t)i * bytes, s + (size_t)(n - 1 - i) * bytes, bytes);
}

static void mirror_row(char *restrict d, const char *restrict s, size_t bytes, int64_t n) {
  switch (bytes) {
    case 1:
      mirror_blocks(d, s, 1, n);
      break;
    case 2:
      mirror_blocks(d, s, 2, n);
      break;
    case 3:
      mirror_blocks(d, s, 3, n);
      break;
    case 4:
      mirror_blocks(d, s, 4, n);
      break;
    case 8:
      mirror_blocks(d, s, 8, n);
      break;
    case 12:
      mirror_blocks(d, s, 12, n);
      break;
    case 16:
      mirror_blocks(d, s, 16, n);
      break;
    default:
      mirror_blocks(d, s, bytes, n);
      break;
  }
}

void stk__flip(const void *src, void *dst, size_t esize, int64_t outer, int64_t h, int64_t mid,
               int64_t w, int64_t inner, bool horizontal, bool vertical) {
  size_t block = (size_t)inner * esize, wrow = (size_t)w * block, hrow = (size_t)mid * wrow;
  for (int64_t o = 0; o < outer; o++) {
    const char *so = (const char *)src + (size_t)o * (size_t)h * hrow;
    char *dd = (char *)dst + (size_t)o * (size_t)h * hrow;
    for (int64_t y = 0; y < h; y++) {
      const char *s = so + (size_t)(vertical ? h - 1 - y : y) * hrow;
      char *d = dd + (size_t)y * hrow;
      if (!horizontal) {
        memcpy(d, s, hrow);
        continue;
      }
      for (int64_t m = 0; m < mid; m++)
        mirror_row(d + (size_t)m * wrow, s + (size_t)m * wrow, block, w);
    }
  }
}

/* ---------------------------------------------------------------------------------- */
/* Fused crop + mirror + normalise + cast + layout                                    */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  const stk__image *src, *dst;
  const stk__cmn_params *p;
  size_t es;                 /* output element size */
  const char *lut;           /* uint8 input: 256 output elements per channel */
  const float *mul, *add;    /* float input: out = in * mul + add, per channel */
  const char *fill;          /* dst->c output elements */
  const stk__cmn_fast *fast; /* uint8 input: the vectorised kernel, when it matches the table */
} cmn_ctx;

/* Output element offsets (in elements) of pixel (y, x) channel c, and the step between
 * channels and between neighbouring pixels. */
static size_t cmn_offset(const cmn_ctx *k, int64_t y, int64_t x, int64_t c) {
  const stk__image *d = k->dst;
  return k->p->planar ? ((size_t)c * (size_t)d->h + (size_t)y) * (size_t)d->w + (size_t)x
                      : ((size_t)y * (size_t)d->w + (size_t)x) * (size_t)d->c + (size_t)c;
}

/* Writes the fill value of every channel for output pixels [x0, x1) of row y. */
static void cmn_fill(const cmn_ctx *k, int64_t y, int64_t x0, int64_t x1, int64_t c0) {
  char *d = k->dst->data;
  for (int64_t c = c0; c < k->dst->c; c++)
    for (int64_t x = x0; x < x1; x++)
      memcpy(d + cmn_offset(k, y, x, c) * k->es, k->fill + (size_t)c * k->es, k->es);
}

/* Table lookups for n pixels of uint8 input: channel c of each pixel goes to
 * dst + c * cstep, the next pixel to dst + pstep (element units). */
static ALWAYS_INLINE void cmn_span_lut(char *restrict d, size_t es, size_t cstep, size_t pstep,
                                       const uint8_t *s, ptrdiff_t sstep, int64_t n, int C,
                                       const char *restrict lut) {
  if (C == 3) { /* the common case, with the channel loop unrolled */
    char *d0 = d, *d1 = d + cstep * es, *d2 = d + 2 * cstep * es;
    const char *l0 = lut, *l1 = lut + 256 * es, *l2 = lut + 512 * es;
    for (int64_t i = 0; i < n; i++, s += sstep) {
      size_t o = (size_t)i * pstep * es;
      memcpy(d0 + o, l0 + (size_t)s[0] * es, es);
      memcpy(d1 + o, l1 + (size_t)s[1] * es, es);
      memcpy(d2 + o, l2 + (size_t)s[2] * es, es);
    }
    return;
  }
  for (int64_t i = 0; i < n; i++, s += sstep)
    for (int c = 0; c < C; c++)
      memcpy(d + ((size_t)c * cstep + (size_t)i * pstep) * es, lut + ((size_t)c * 256 + s[c]) * es,
             es);
}

static void cmn_span_u8(const cmn_ctx *k, char *d, size_t cstep, size_t pstep, const uint8_t *s,
                        ptrdiff_t sstep, int64_t n) {
  int C = (int)k->src->c;
  if (k->fast && pstep == 1) { /* the kernel's blocks of 8, then the table for the rest */
    int64_t done = stk__cmn_fast_span(k->fast, d, cstep, s, n, sstep < 0);
    d += (size_t)done * k->es, s += done * sstep, n -= done;
  }
  switch (k->es) {
    case 4:
      cmn_span_lut(d, 4, cstep, pstep, s, sstep, n, C, k->lut);
      break;
    case 2:
      cmn_span_lut(d, 2, cstep, pstep, s, sstep, n, C, k->lut);
      break;
    default:
      cmn_span_lut(d, 1, cstep, pstep, s, sstep, n, C, k->lut);
      break;
  }
}

static void cmn_span_f32(const cmn_ctx *k, char *d, size_t cstep, size_t pstep, const float *s,
                         ptrdiff_t sstep, int64_t n) {
  int C = (int)k->src->c;
  stk_dtype t = k->dst->dtype;
  for (int64_t i = 0; i < n; i++, s += sstep)
    for (int c = 0; c < C; c++) {
      float v = s[c] * k->mul[c] + k->add[c];
      size_t o = (size_t)c * cstep + (size_t)i * pstep;
      if (t == STK_DTYPE_FLOAT32)
        ((float *)d)[o] = v;
      else
        stk__store_double(d, t, o, v);
    }
}

static void cmn_row(const cmn_ctx *k, int64_t y) {
  const stk__cmn_params *p = k->p;
  const stk__image *src = k->src, *dst = k->dst;
  int64_t sy = p->win.y + y, w = dst->w;
  if (sy < 0 || sy >= src->h) {
    cmn_fill(k, y, 0, w, 0);
    return;
  }
  /* output columns [x0, x1) read source columns inside the image */
  int64_t x0, x1;
  if (p->mirror) {
    x0 = clamp64(p->win.x + w - src->w, 0, w), x1 = clamp64(p->win.x + w, x0, w);
  } else {
    x0 = clamp64(-p->win.x, 0, w), x1 = clamp64(src->w - p->win.x, x0, w);
  }
  cmn_fill(k, y, 0, x0, 0);
  cmn_fill(k, y, x1, w, 0);
  if (x1 > x0) {
    int64_t sx = p->win.x + (p->mirror ? w - 1 - x0 : x0);
    ptrdiff_t sstep = p->mirror ? -(ptrdiff_t)src->c : (ptrdiff_t)src->c;
    size_t cstep = p->planar ? (size_t)dst->h * (size_t)w : 1;
    size_t pstep = p->planar ? 1 : (size_t)dst->c;
    char *d = (char *)dst->data + cmn_offset(k, y, x0, 0) * k->es;
    size_t first = ((size_t)sy * (size_t)src->w + (size_t)sx) * (size_t)src->c;
    if (src->dtype == STK_DTYPE_UINT8)
      cmn_span_u8(k, d, cstep, pstep, (const uint8_t *)src->data + first, sstep, x1 - x0);
    else
      cmn_span_f32(k, d, cstep, pstep, (const float *)src->data + first, sstep, x1 - x0);
  }
  if (dst->c > src->c) cmn_fill(k, y, x0, x1, src->c); /* pad channels */
}

static size_t a64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t stk__cmn_scratch_size(const stk__image *src, const stk__image *dst) {
  size_t es = stk_dtype_size(dst->dtype), c = (size_t)src->c, oc = (size_t)dst->c;
  return a64(256 * c * es) + a64(2 * c * sizeof(float)) + a64(oc * (es ? es : 8)) + 64;
}

stk_status stk__cmn(const stk__image *src, const stk__image *dst, const stk__cmn_params *p,
                    void *scratch, size_t scratch_size) {
  if (src->dtype != STK_DTYPE_UINT8 && src->dtype != STK_DTYPE_FLOAT32)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "input type %s (uint8 or float32 expected)",
                    stk_dtype_name(src->dtype) ? stk_dtype_name(src->dtype) : "?");
  stk_dtype t = dst->dtype;
  if (t != STK_DTYPE_FLOAT32 && t != STK_DTYPE_FLOAT16 && t != STK_DTYPE_UINT8 &&
      t != STK_DTYPE_INT8)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "output type %s (float32, float16, uint8 or int8 "
                    "expected)",
                    stk_dtype_name(t) ? stk_dtype_name(t) : "?");
  if (src->c < 1 || dst->c < src->c || dst->h != p->win.h || dst->w != p->win.w)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "output %lldx%lldx%lld does not fit a %lldx%lld "
                    "window of %lld channels",
                    (long long)dst->h, (long long)dst->w, (long long)dst->c, (long long)p->win.h,
                    (long long)p->win.w, (long long)src->c);
  for (int64_t c = 0; c < src->c; c++)
    if (p->stddev[c] == 0.0 || !isfinite(p->stddev[c]) || !isfinite(p->mean[c]))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "std[%lld] = %g, mean[%lld] = %g: std must be "
                      "non-zero and both finite",
                      (long long)c, p->stddev[c], (long long)c, p->mean[c]);
  if (!scratch || scratch_size < stk__cmn_scratch_size(src, dst))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "scratch of %zu bytes, %zu needed", scratch_size,
                    stk__cmn_scratch_size(src, dst));
  size_t es = stk_dtype_size(t), C = (size_t)src->c;
  char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
  char *lut = base;
  float *mul = (float *)(base + a64(256 * C * es)), *add = mul + C;
  char *fill = (char *)mul + a64(2 * C * sizeof(float));
  for (size_t c = 0; c < C; c++) {
    double m = p->scale / p->stddev[c];
    mul[c] = (float)m;
    add[c] = (float)(p->shift - p->mean[c] * m);
    if (src->dtype == STK_DTYPE_UINT8) /* the published formula, in float64 */
      for (int v = 0; v < 256; v++)
        stk__store_double(lut + c * 256 * es, t, (size_t)v,
                          ((double)v - p->mean[c]) / p->stddev[c] * p->scale + p->shift);
  }
  for (int64_t c = 0; c < dst->c; c++) stk__store_double(fill, t, (size_t)c, p->fill[c]);
  /* the kernel writes planes (one element per pixel and channel plane): CHW, or HWC with
   * one channel */
  stk__cmn_fast fast;
  bool use_fast = src->dtype == STK_DTYPE_UINT8 && (p->planar || dst->c == 1) &&
                  stk__cmn_fast_init(&fast, (int)C, t, p->mean, p->stddev, p->scale, p->shift, lut);
  cmn_ctx k = {src, dst, p, es, lut, mul, add, fill, use_fast ? &fast : NULL};
  for (int64_t y = 0; y < dst->h; y++) cmn_row(&k, y);
  return STK_OK;
}
