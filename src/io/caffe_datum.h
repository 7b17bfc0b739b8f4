/* Caffe's Datum protobuf message (caffe.proto): channels (1), height (2), width (3),
 * data (4, bytes), label (5, int32), float_data (6, repeated float), encoded (7, bool).
 * Parsed without copying: `data` points into the message. */
#ifndef STOKER_IO_CAFFE_DATUM_H
#define STOKER_IO_CAFFE_DATUM_H

#include "../core/core.h"

typedef struct {
  int64_t channels, height, width, label;
  const uint8_t *data;
  size_t data_size;
  bool encoded, has_label;
} stk__caffe_datum;

/* False on a malformed message (bad varint, a length past the end, a wire type protobuf
 * does not have). Unknown fields are skipped. */
bool stk__caffe_datum_parse(const uint8_t *msg, size_t size, stk__caffe_datum *out);

#endif
