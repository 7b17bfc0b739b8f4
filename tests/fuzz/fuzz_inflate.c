/* The GPU PNG decoder's inflater (src/shared/inflate.h), differentially: the first three
 * bytes give the expected output size (below 1 MiB), the rest is a zlib stream. Whatever
 * the stream, the inflater stays inside its buffers (ASan) and, when it accepts the
 * stream, zlib must accept it too and give the same bytes: the device decoder must never
 * take a stream the CPU decoder (libspng on zlib) rejects. */
#include <stdlib.h>
#include <zlib.h>

#include "fuzz_util.h"
#include "shared/inflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  size_t want = ((size_t)data[0] << 16 | (size_t)data[1] << 8 | data[2]) & 0xfffff;
  const uint8_t *z = data + 3;
  size_t zn = size - 3;
  uint8_t *mine = malloc(want + 1), *ref = malloc(want + 1);
  stk_inf_tables *s = malloc(sizeof *s);
  if (mine && ref && s && stk_inflate_zlib(s, z, zn, mine, want) == STK_INF_OK) {
    uLongf rn = (uLongf)want + 1; /* room for one byte more: zlib must stop at `want` */
    if (uncompress(ref, &rn, z, (uLong)zn) != Z_OK || rn != want || memcmp(ref, mine, want) != 0)
      abort();
  }
  free(mine);
  free(ref);
  free(s);
  return 0;
}
