/* Caffe Datum and Caffe2 TensorProtos records (io/caffe_datum.c): parse both ways, and
 * when they parse, check that every view lies inside the record and read every label
 * value as readers.caffe2 does. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/caffe_datum.h"

static void inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size) {
  if (n && (p < data || p + n > data + size)) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  stk__caffe_datum d;
  if (stk__caffe_datum_parse(copy, size, &d)) inside(d.data, d.data_size, copy, size);
  stk__caffe2_protos pr;
  if (stk__caffe2_protos_parse(copy, size, &pr)) {
    for (int i = 0; i < pr.count; i++) {
      const stk__caffe2_tensor *t = &pr.protos[i];
      inside(t->floats, t->floats_size, copy, size);
      inside(t->int32s, t->int32s_size, copy, size);
      inside(t->bytes, t->bytes_size, copy, size);
      inside(t->string0, t->string0_size, copy, size);
      volatile float f = 0;
      for (int64_t k = 0; k < t->num_floats && k < 4096; k++) f += stk__caffe2_float(t, k);
      for (int64_t k = 0; k < t->num_int32s && k < 256; k++) f += (float)stk__caffe2_int32(t, k);
      (void)f;
    }
  }
  free(copy);
  return 0;
}
