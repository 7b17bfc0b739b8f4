/* PNG: header peek (IHDR, eXIf), whole and region-of-interest decodes, every colour type
 * and bit depth, interlaced or not. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0) return 0;
  fuzz_image(data, size);
  return 0;
}
