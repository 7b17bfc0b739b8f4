/* .npy: the header (magic, version, length, the dict literal) and a region copy of the
 * data it describes when the data is all there and small. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stk__npy_header h;
  if (stk__npy_parse(data, size, (int64_t)size, "fuzz.npy", &h) != STK_OK) return 0;
  if (h.data_offset < 0 || h.data_bytes < 0 || h.data_offset + h.data_bytes > (int64_t)size)
    __builtin_trap(); /* parse promised the data lies inside the file */
  if (h.data_bytes > (1 << 20)) return 0;
  /* The whole array, then its second half along the first axis. */
  int64_t start[STK_MAX_NDIM] = {0}, zero[STK_MAX_NDIM] = {0};
  uint8_t *dst = malloc(h.data_bytes ? (size_t)h.data_bytes : 1);
  if (!dst) return 0;
  stk__npy_copy_box(&h, data + h.data_offset, start, h.shape, dst, h.shape, zero);
  if (h.ndim > 0 && h.shape[0] > 1) {
    int64_t count[STK_MAX_NDIM];
    memcpy(count, h.shape, sizeof count);
    start[0] = h.shape[0] / 2;
    count[0] = h.shape[0] - start[0];
    stk__npy_copy_box(&h, data + h.data_offset, start, count, dst, count, zero);
  }
  free(dst);
  return 0;
}
