/*
 * The LZ4 block decoder (raw blocks, no frame) of decoders.inflate, compiled as C11 for the
 * CPU operator and as CUDA C++ (STK_HD) for its GPU kernel (src/cuda/inflate.cu), so both
 * devices accept and refuse exactly the same blocks.
 *
 * A block is a run of sequences (token, literals, 2-byte offset, match); the last one has
 * literals only. Bounded: every read is checked against the input's end and every write
 * against the output's capacity, so a hostile block can do no harm.
 */
#ifndef STOKER_SHARED_LZ4_H
#define STOKER_SHARED_LZ4_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_common.h" /* STK_HD */

/* A length's continuation bytes (255 means more follow) added to *len; -1 when the input
 * ends inside them. */
STK_HD int stk_lz4_more(const uint8_t *src, size_t n, size_t *i, size_t *len) {
  unsigned b;
  do {
    if (*i >= n) return -1;
    b = src[(*i)++];
    *len += b;
  } while (b == 255);
  return 0;
}

/* Decodes the block src[0..n) into dst (cap bytes). Returns the bytes written, or -1 on a
 * malformed block or one that would overflow dst. */
STK_HD int64_t stk_lz4_block_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  size_t i = 0, o = 0;
  while (i < n) {
    unsigned token = src[i++];
    size_t lit = token >> 4;
    if (lit == 15 && stk_lz4_more(src, n, &i, &lit) != 0) return -1;
    if (lit > n - i || lit > cap - o) return -1;
    for (size_t k = 0; k < lit; k++) dst[o + k] = src[i + k];
    i += lit, o += lit;
    if (i == n) return (int64_t)o; /* the last sequence */
    if (n - i < 2) return -1;
    size_t off = (size_t)src[i] | (size_t)src[i + 1] << 8;
    i += 2;
    if (off == 0 || off > o) return -1;
    size_t len = (token & 15u) + 4;
    if ((token & 15u) == 15 && stk_lz4_more(src, n, &i, &len) != 0) return -1;
    if (len > cap - o) return -1;
    for (size_t k = 0; k < len; k++, o++) dst[o] = dst[o - off]; /* may overlap: byte-wise */
  }
  return (int64_t)o;
}

#endif /* STOKER_SHARED_LZ4_H */
