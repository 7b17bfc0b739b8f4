/* decoders.inflate's GPU decoders (src/shared/inflate.h's stk_inflate_any, src/shared/lz4.h),
 * differentially: byte 0 picks the algorithm (even: DEFLATE, odd: LZ4), the next three give
 * the expected output size (below 1 MiB), the rest is the chunk. Whatever the chunk, the
 * decoders stay inside their buffers (ASan); a DEFLATE chunk is accepted exactly when the
 * CPU operator's zlib path accepts it, with the same bytes (tests/c/test_inflate_any.c
 * checks the same on generated streams). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codecs/zlib_any.h"
#include "fuzz_util.h"
#include "shared/inflate.h"
#include "shared/lz4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  bool lz4 = data[0] & 1;
  size_t want = ((size_t)data[1] << 16 | (size_t)data[2] << 8 | data[3]) & 0xfffff;
  const uint8_t *z = data + 4;
  size_t zn = size - 4;
  uint8_t *mine = malloc(want + 1), *ref = malloc(want + 1);
  stk_inf_tables *t = malloc(sizeof *t);
  if (mine && ref && t && lz4) {
    (void)stk_lz4_block_decode(z, zn, mine, want);
  } else if (mine && ref && t) {
    bool ours = stk_inflate_any(t, z, zn, mine, want) == STK_INF_OK;
    bool theirs = stk__zlib_inflate_any(z, zn, ref, want) == (int64_t)want;
    /* the one allowed difference: zlib distances beyond the header's window (refused) */
    if (ours && (!theirs || memcmp(ref, mine, want) != 0)) abort();
  }
  free(mine);
  free(ref);
  free(t);
  return 0;
}
