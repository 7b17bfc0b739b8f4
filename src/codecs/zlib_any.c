/* DEFLATE through zlib, wrapping detected (zlib_any.h). */
#include "zlib_any.h"

#include <stdbool.h>
#include <string.h>
#include <zlib.h>

int64_t stk__zlib_inflate_any(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  /* gzip's magic, or a zlib header (deflate method, header check a multiple of 31) */
  bool wrapped = n >= 2 && ((src[0] == 0x1f && src[1] == 0x8b) ||
                            ((src[0] & 0x0f) == 8 && ((src[0] << 8) | src[1]) % 31 == 0));
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, wrapped ? 15 + 32 : -15) != Z_OK) return -1;
  z.next_in = (Bytef *)src, z.avail_in = (uInt)n;
  z.next_out = dst, z.avail_out = (uInt)cap;
  int rc = inflate(&z, Z_FINISH);
  int64_t out = (int64_t)z.total_out;
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : -1;
}
