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

/* Caffe2's TensorProtos (caffe2.proto): `protos` (1) of TensorProto, each with dims (1),
 * data_type (2), float_data (3), int32_data (4), byte_data (5), string_data (6, the first
 * kept). Views into the message; packed and unpacked repeated numbers are both read. */
#define STK__CAFFE2_MAX_PROTOS 8
#define STK__CAFFE2_MAX_DIMS   8

typedef struct {
  int64_t dims[STK__CAFFE2_MAX_DIMS];
  int ndims;
  int64_t data_type;
  const uint8_t *floats, *int32s; /* the fields' bytes: packed floats; varints */
  size_t floats_size, int32s_size;
  int64_t num_floats, num_int32s;
  const uint8_t *bytes, *string0; /* byte_data; the first string_data */
  size_t bytes_size, string0_size;
  bool has_string;
} stk__caffe2_tensor;

typedef struct {
  stk__caffe2_tensor protos[STK__CAFFE2_MAX_PROTOS];
  int count;
} stk__caffe2_protos;

bool stk__caffe2_protos_parse(const uint8_t *msg, size_t size, stk__caffe2_protos *out);
/* Element i of a tensor's int32_data / float_data (i < num_*). */
int32_t stk__caffe2_int32(const stk__caffe2_tensor *t, int64_t i);
float stk__caffe2_float(const stk__caffe2_tensor *t, int64_t i);
