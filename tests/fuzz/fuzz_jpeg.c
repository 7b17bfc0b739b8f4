/* JPEG: header peek, whole and region-of-interest decodes (with DCT scaling). Inputs
 * that are not JPEG are turned into one by their SOI marker, so the fuzzer spends its
 * time inside the JPEG paths. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3 || data[0] != 0xff || data[1] != 0xd8 || data[2] != 0xff) return 0;
  fuzz_image(data, size);
  return 0;
}
