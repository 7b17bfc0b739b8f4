/* EXIF: the orientation reader over a TIFF header and IFD0 (with or without the
 * "Exif\0\0" prefix of a JPEG APP1 segment). */
#include "codecs/codecs.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int o = stk__exif_orientation(data, size);
  if (o < 1 || o > 8) __builtin_trap(); /* the documented range */
  return 0;
}
