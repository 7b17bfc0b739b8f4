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
    case 0: return varint(p, end, &v);
    case 1: return (size_t)(end - *p) >= 8 ? (*p += 8, true) : false;
    case 5: return (size_t)(end - *p) >= 4 ? (*p += 4, true) : false;
    case 2:
      if (!varint(p, end, &v) || v > (uint64_t)(end - *p)) return false;
      *p += v;
      return true;
    default: return false;
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
