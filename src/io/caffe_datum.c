/* The Datum parser of caffe_datum.h: protobuf wire format, fields by number. */
#include "caffe_datum.h"

#include <string.h>

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/* Skips one field of wire type `wt`. */
static bool skip(const uint8_t **p, const uint8_t *end, unsigned wt) {
  uint64_t v;
  switch (wt) {
    case 0:
      return varint(p, end, &v);
    case 1:
      return (size_t)(end - *p) >= 8 ? (*p += 8, true) : false;
    case 5:
      return (size_t)(end - *p) >= 4 ? (*p += 4, true) : false;
    case 2:
      if (!varint(p, end, &v) || v > (uint64_t)(end - *p)) return false;
      *p += v;
      return true;
    default:
      return false;
  }
}

bool stk__caffe_datum_parse(const uint8_t *msg, size_t size, stk__caffe_datum *out) {
  memset(out, 0, sizeof *out);
  const uint8_t *p = msg, *end = msg + size;
  while (p < end) {
    uint64_t tag, v;
    if (!varint(&p, end, &tag)) return false;
    unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
    if (field == 4 && wt == 2) {
      if (!varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
      out->data = p, out->data_size = (size_t)v;
      p += v;
    } else if (field >= 1 && field <= 7 && field != 4 && field != 6 && wt == 0) {
      if (!varint(&p, end, &v)) return false;
      int64_t x = (int64_t)v;
      if (field == 1) out->channels = x;
      if (field == 2) out->height = x;
      if (field == 3) out->width = x;
      if (field == 5) out->label = (int32_t)(uint32_t)v, out->has_label = true;
      if (field == 7) out->encoded = v != 0;
    } else if (!skip(&p, end, wt)) {
      return false;
    }
  }
  return true;
}

/* ---- Caffe2 TensorProtos ---- */

/* Counts the varints in [p, end); false when one is malformed. */
static bool count_varints(const uint8_t *p, const uint8_t *end, int64_t *n) {
  uint64_t v;
  *n = 0;
  while (p < end) {
    if (!varint(&p, end, &v)) return false;
    (*n)++;
  }
  return true;
}

/* Numeric fields must be packed (what Caffe2 writes: [packed = true]); an unpacked one
 * is refused rather than misread. */
static bool tensor_field(stk__caffe2_tensor *t, unsigned field, unsigned wt, const uint8_t **p,
                         const uint8_t *end) {
  uint64_t v;
  if (field == 2 && wt == 0) return varint(p, end, (uint64_t *)&t->data_type);
  if (field == 1 && wt == 0) {
    if (!varint(p, end, &v)) return false;
    if (t->ndims < STK__CAFFE2_MAX_DIMS) t->dims[t->ndims] = (int64_t)v;
    t->ndims++;
    return true;
  }
  if (wt != 2) return skip(p, end, wt);
  if (!varint(p, end, &v) || v > (uint64_t)(end - *p)) return false;
  const uint8_t *q = *p;
  *p += v;
  if (field == 1) { /* packed dims */
    while (q < *p) {
      uint64_t d;
      if (!varint(&q, *p, &d)) return false;
      if (t->ndims < STK__CAFFE2_MAX_DIMS) t->dims[t->ndims] = (int64_t)d;
      t->ndims++;
    }
  } else if (field == 3) {
    if (v % 4) return false;
    t->floats = q, t->floats_size = (size_t)v, t->num_floats = (int64_t)(v / 4);
  } else if (field == 4) {
    t->int32s = q, t->int32s_size = (size_t)v;
    return count_varints(q, *p, &t->num_int32s);
  } else if (field == 5) {
    t->bytes = q, t->bytes_size = (size_t)v;
  } else if (field == 6 && !t->has_string) {
    t->string0 = q, t->string0_size = (size_t)v, t->has_string = true;
  }
  return true;
}

static bool parse_tensor(const uint8_t *p, const uint8_t *end, stk__caffe2_tensor *t) {
  memset(t, 0, sizeof *t);
  while (p < end) {
    uint64_t tag;
    if (!varint(&p, end, &tag) ||
        !tensor_field(t, (unsigned)(tag >> 3), (unsigned)(tag & 7), &p, end))
      return false;
  }
  return t->ndims <= STK__CAFFE2_MAX_DIMS;
}

bool stk__caffe2_protos_parse(const uint8_t *msg, size_t size, stk__caffe2_protos *out) {
  out->count = 0;
  const uint8_t *p = msg, *end = msg + size;
  while (p < end) {
    uint64_t tag, len;
    if (!varint(&p, end, &tag)) return false;
    if ((tag >> 3) != 1 || (tag & 7) != 2) {
      if (!skip(&p, end, (unsigned)(tag & 7))) return false;
      continue;
    }
    if (!varint(&p, end, &len) || len > (uint64_t)(end - p)) return false;
    if (out->count == STK__CAFFE2_MAX_PROTOS) return false;
    if (!parse_tensor(p, p + len, &out->protos[out->count++])) return false;
    p += len;
  }
  return true;
}

int32_t stk__caffe2_int32(const stk__caffe2_tensor *t, int64_t i) {
  const uint8_t *p = t->int32s, *end = t->int32s + t->int32s_size;
  uint64_t v = 0;
  for (int64_t k = 0; k <= i; k++)
    if (!varint(&p, end, &v)) return 0;
  return (int32_t)(uint32_t)v;
}

float stk__caffe2_float(const stk__caffe2_tensor *t, int64_t i) {
  float f;
  memcpy(&f, t->floats + 4 * i, 4); /* little-endian, as protobuf stores it */
  return f;
}
