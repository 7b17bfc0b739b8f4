/* DEFLATE through zlib with the wrapping detected as decoders.inflate's CPU path does it:
 * a gzip or zlib header, else a raw deflate stream; bytes after the stream are ignored. The
 * GPU decoders (src/shared/inflate.h's stk_inflate_any) are tested against this. */
#ifndef STOKER_CODECS_ZLIB_ANY_H
#define STOKER_CODECS_ZLIB_ANY_H

#include <stddef.h>
#include <stdint.h>

/* Inflates `n` bytes of src into dst (cap bytes): the bytes written, or -1 when the stream
 * is damaged, incomplete or does not fit. */
int64_t stk__zlib_inflate_any(const uint8_t *src, size_t n, uint8_t *dst, size_t cap);

#endif /* STOKER_CODECS_ZLIB_ANY_H */
