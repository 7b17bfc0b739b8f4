/* .npy headers and region copies; see npy.h. */
#include <stdlib.h>
#include <string.h>

#include "npy.h"

#define MAGIC "\x93NUMPY"

stk_status stk__npy_header_length(const uint8_t *prefix, size_t n, const char *path, size_t *out) {
  if (n < 10 || memcmp(prefix, MAGIC, 6) != 0)
    return STK_FAIL(STK_ERR_DECODE, "'%s' is not a .npy file (wrong magic)", path);
  int major = prefix[6];
  if (major < 1 || major > 3)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "'%s': .npy format version %d.%d is not supported "
                    "(1.0, 2.0 and 3.0 are)",
                    path, major, prefix[7]);
  if (major == 1) {
    *out = 10 + ((size_t)prefix[8] | (size_t)prefix[9] << 8);
    return STK_OK;
  }
  if (n < 12) return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated inside its header", path);
  *out = 12 + ((size_t)prefix[8] | (size_t)prefix[9] << 8 | (size_t)prefix[10] << 16 |
               (size_t)prefix[11] << 24);
  return STK_OK;
}

/* ---- the header dict ---- */

typedef struct {
  const char *p, *end, *path;
} lexer;

static void skip_ws(lexer *lx) {
  while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' || *lx->p == '\r'))
    lx->p++;
}

static bool eat(lexer *lx, char c) {
  skip_ws(lx);
  if (lx->p < lx->end && *lx->p == c) {
    lx->p++;
    return true;
  }
  return false;
}

static stk_status bad_header(const lexer *lx, const char *what) {
  return STK_FAIL(STK_ERR_DECODE, "'%s': malformed .npy header (%s)", lx->path, what);
}

/* A quoted Python string (no escapes occur in .npy headers). */
static stk_status quoted(lexer *lx, const char **s, size_t *n) {
  skip_ws(lx);
  if (lx->p >= lx->end || (*lx->p != '\'' && *lx->p != '"'))
    return bad_header(lx, "expected a string");
  char q = *lx->p++;
  const char *start = lx->p;
  while (lx->p < lx->end && *lx->p != q) lx->p++;
  if (lx->p >= lx->end) return bad_header(lx, "unterminated string");
  *s = start;
  *n = (size_t)(lx->p++ - start);
  return STK_OK;
}

static bool word(lexer *lx, const char *w) {
  skip_ws(lx);
  size_t n = strlen(w);
  if ((size_t)(lx->end - lx->p) >= n && memcmp(lx->p, w, n) == 0) {
    lx->p += n;
    return true;
  }
  return false;
}

/* A tuple of non-negative integers: "()", "(5,)", "(2, 3)", "(2L, 3L)". */
static stk_status shape_tuple(lexer *lx, stk__npy_header *h) {
  if (!eat(lx, '(')) return bad_header(lx, "shape is not a tuple");
  h->ndim = 0;
  while (!eat(lx, ')')) {
    skip_ws(lx);
    int64_t v = 0;
    const char *start = lx->p;
    while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9' && v < ((int64_t)1 << 56))
      v = v * 10 + (*lx->p++ - '0');
    if (lx->p == start) return bad_header(lx, "a shape entry is not a non-negative integer");
    if (lx->p < lx->end && *lx->p == 'L') lx->p++;
    if (h->ndim == STK_MAX_NDIM)
      return STK_FAIL(STK_ERR_UNSUPPORTED,
                      "'%s': arrays of more than %d dimensions are not "
                      "supported",
                      lx->path, STK_MAX_NDIM);
    h->shape[h->ndim++] = v;
    if (!eat(lx, ',')) {
      if (!eat(lx, ')')) return bad_header(lx, "expected ',' or ')' in shape");
      break;
    }
  }
  return STK_OK;
}

static stk_status dtype_of(const lexer *lx, const char *s, size_t n, stk__npy_header *h) {
  char d[16];
  if (n == 0 || n >= sizeof d) return bad_header(lx, "bad descr");
  memcpy(d, s, n);
  d[n] = '\0';
  char order = d[0];
  const char *t = strchr("<>|=", order) ? d + 1 : d;
  static const struct {
    const char *code;
    stk_dtype dtype;
  } table[] = {{"b1", STK_DTYPE_BOOL},    {"i1", STK_DTYPE_INT8},    {"u1", STK_DTYPE_UINT8},
               {"i2", STK_DTYPE_INT16},   {"u2", STK_DTYPE_UINT16},  {"i4", STK_DTYPE_INT32},
               {"u4", STK_DTYPE_UINT32},  {"i8", STK_DTYPE_INT64},   {"u8", STK_DTYPE_UINT64},
               {"f2", STK_DTYPE_FLOAT16}, {"f4", STK_DTYPE_FLOAT32}, {"f8", STK_DTYPE_FLOAT64}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(t, table[i].code) == 0) {
      h->dtype = table[i].dtype;
      h->elem = stk_dtype_size(h->dtype);
      h->swap = order == '>' && h->elem > 1; /* hosts are little-endian */
      return STK_OK;
    }
  if (t[0] == 'O')
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "'%s' holds an object array (pickled Python objects), "
                    "which cannot be read safely; save a numeric array instead",
                    lx->path);
  return STK_FAIL(STK_ERR_UNSUPPORTED,
                  "'%s': dtype '%s' is not supported (numeric dtypes are: "
                  "b1, i1-i8, u1-u8, f2, f4, f8)",
                  lx->path, d);
}

static stk_status dict_entry(lexer *lx, stk__npy_header *h, unsigned *seen) {
  const char *key;
  size_t klen;
  STK_TRY(quoted(lx, &key, &klen));
  if (!eat(lx, ':')) return bad_header(lx, "expected ':'");
  if (klen == 5 && memcmp(key, "descr", 5) == 0) {
    skip_ws(lx);
    if (lx->p < lx->end && *lx->p == '[')
      return STK_FAIL(STK_ERR_UNSUPPORTED,
                      "'%s' holds a structured array, which is not "
                      "supported",
                      lx->path);
    const char *s;
    size_t n;
    STK_TRY(quoted(lx, &s, &n));
    STK_TRY(dtype_of(lx, s, n, h));
    *seen |= 1;
  } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
    if (word(lx, "True"))
      h->fortran = true;
    else if (word(lx, "False"))
      h->fortran = false;
    else
      return bad_header(lx, "fortran_order is not True or False");
    *seen |= 2;
  } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
    STK_TRY(shape_tuple(lx, h));
    *seen |= 4;
  } else {
    return bad_header(lx, "unknown key");
  }
  return STK_OK;
}

static stk_status parse_dict(lexer *lx, stk__npy_header *h) {
  unsigned seen = 0;
  if (!eat(lx, '{')) return bad_header(lx, "expected '{'");
  while (!eat(lx, '}')) {
    STK_TRY(dict_entry(lx, h, &seen));
    if (!eat(lx, ',')) {
      if (!eat(lx, '}')) return bad_header(lx, "expected ',' or '}'");
      break;
    }
  }
  if (seen != 7) return bad_header(lx, "'descr', 'fortran_order' or 'shape' is missing");
  return STK_OK;
}

/* The data's size in bytes. The product of the non-zero extents is bounded too: an array
 * with a zero extent holds no data, but strides computed from its other extents (region
 * copies) must still fit in int64_t. */
static stk_status data_size(stk__npy_header *h, const char *path) {
  size_t bytes = h->elem, strided = h->elem;
  for (int d = 0; d < h->ndim; d++) {
    size_t extent = (size_t)h->shape[d];
    if (!stk__mul_size(bytes, extent, &bytes) ||
        !stk__mul_size(strided, extent ? extent : 1, &strided) || strided > ((size_t)1 << 62))
      return STK_FAIL(STK_ERR_LIMIT,
                      "'%s': the array's shape is too large (its size in bytes "
                      "overflows)",
                      path);
  }
  h->data_bytes = (int64_t)bytes;
  return STK_OK;
}

stk_status stk__npy_parse(const uint8_t *data, size_t size, int64_t file_size, const char *path,
                          stk__npy_header *out) {
  memset(out, 0, sizeof *out);
  size_t total;
  STK_TRY(stk__npy_header_length(data, size, path, &total));
  if (total > size || (int64_t)total > file_size)
    return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated inside its header (%zu bytes)", path, total);
  out->major = data[6];
  out->minor = data[7];
  size_t start = out->major == 1 ? 10 : 12;
  lexer lx = {(const char *)data + start, (const char *)data + total, path};
  STK_TRY(parse_dict(&lx, out));
  STK_TRY(data_size(out, path));
  out->data_offset = (int64_t)total;
  if (out->data_bytes > file_size - out->data_offset)
    return STK_FAIL(STK_ERR_DECODE,
                    "'%s' is truncated: the array needs %lld bytes from offset "
                    "%lld, the file ends at %lld",
                    path, (long long)out->data_bytes, (long long)out->data_offset,
                    (long long)file_size);
  return STK_OK;
}

/* ---- copies ---- */

static void swap_bytes(uint8_t *p, size_t count, size_t elem) {
  for (size_t i = 0; i < count; i++, p += elem)
    for (size_t a = 0, b = elem - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* The box as up to STK_MAX_NDIM loops of (count, source stride, destination stride);
 * adjacent loops that are contiguous in both arrays are merged, so a whole C-order
 * array is one memcpy and an HWC image's rows are long runs, not 3-byte pieces. */
typedef struct {
  int n;
  int64_t count[STK_MAX_NDIM], src[STK_MAX_NDIM], dst[STK_MAX_NDIM];
  size_t elem;
  bool swap;
} box_plan;

/* One run of `n` elements with a source stride: contiguous runs are one memcpy. */
static void copy_run(const box_plan *b, const uint8_t *src, uint8_t *dst, int64_t n,
                     int64_t stride) {
  size_t e = b->elem;
  if (stride == (int64_t)e) {
    memcpy(dst, src, (size_t)n * e);
  } else {
    switch (e) { /* a gather (Fortran order): typed moves, not memcpy calls */
      case 1:
        for (int64_t i = 0; i < n; i++) dst[i] = src[i * stride];
        break;
      case 2:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 2 * i, src + i * stride, 2);
        break;
      case 4:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * i, src + i * stride, 4);
        break;
      default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 8 * i, src + i * stride, 8);
        break;
    }
  }
  if (b->swap) swap_bytes(dst, (size_t)n, e);
}

static void copy_loop(const box_plan *b, int d, const uint8_t *src, uint8_t *dst) {
  if (d == b->n - 1) {
    copy_run(b, src, dst, b->count[d], b->src[d]);
    return;
  }
  for (int64_t i = 0; i < b->count[d]; i++)
    copy_loop(b, d + 1, src + i * b->src[d], dst + i * b->dst[d]);
}

void stk__npy_copy_box(const stk__npy_header *h, const uint8_t *src, const int64_t *start,
                       const int64_t *count, uint8_t *dst, const int64_t *dst_shape,
                       const int64_t *dst_start) {
  box_plan b = {.n = 0, .elem = h->elem, .swap = h->swap};
  int64_t src_stride[STK_MAX_NDIM], dst_stride[STK_MAX_NDIM];
  int64_t s = (int64_t)h->elem, t = (int64_t)h->elem;
  for (int d = 0; d < h->ndim; d++) { /* Fortran: the first axis varies fastest */
    int k = h->fortran ? d : h->ndim - 1 - d;
    src_stride[k] = s;
    s *= h->shape[k];
  }
  for (int d = h->ndim - 1; d >= 0; d--) {
    dst_stride[d] = t;
    t *= dst_shape[d];
  }
  for (int d = 0; d < h->ndim; d++) {
    if (count[d] == 0) return;
    src += start[d] * src_stride[d];
    dst += dst_start[d] * dst_stride[d];
  }
  for (int d = 0; d < h->ndim; d++) {
    if (count[d] == 1) continue; /* a loop of one changes nothing */
    int last = b.n - 1;
    if (b.n > 0 && b.src[last] == src_stride[d] * count[d] &&
        b.dst[last] == dst_stride[d] * count[d]) {
      b.count[last] *= count[d]; /* contiguous with the outer loop: merge */
      b.src[last] = src_stride[d];
      b.dst[last] = dst_stride[d];
      continue;
    }
    b.count[b.n] = count[d];
    b.src[b.n] = src_stride[d];
    b.dst[b.n++] = dst_stride[d];
  }
  if (b.n == 0) { /* a single element */
    b.n = 1;
    b.count[0] = 1;
    b.src[0] = b.dst[0] = (int64_t)h->elem;
  }
  copy_loop(&b, 0, src, dst);
}
