/* One JPEG parsed for stoker's own GPU decoder, as a single host block: what
 * stk__jpeg_frame_parse (src/codecs/jpeg_frame.h) gives, followed by the restart offsets
 * and the un-stuffed entropy-coded bytes. The pipeline's CPU stage makes it
 * (src/ops/jpeg_own.c), the decoder's entry reads it (src/cuda/jpeg_own.cu and the CPU
 * stand-in backend). Plain C11; compiles as CUDA C++ too. */
#ifndef STOKER_SHARED_JPEG_PARSED_H
#define STOKER_SHARED_JPEG_PARSED_H

#include <stddef.h>
#include <stdint.h>

#include "jpeg_frame.h"
#include "jpeg_huffman.h"

typedef struct {
  stk_jpeg_frame frame;
  stk_jpeg_huffman tables;
  uint32_t scan_bytes; /* the un-stuffed scan's length */
  int32_t n_restarts;  /* restart intervals after the first */
  /* then: int32_t restarts[n_restarts] (byte offsets in the scan), uint8_t scan[scan_bytes] */
} stk_jpeg_parsed;

static inline size_t stk_jpeg_parsed_bytes(int32_t n_restarts, uint32_t scan_bytes) {
  return sizeof(stk_jpeg_parsed) + (size_t)n_restarts * sizeof(int32_t) + scan_bytes;
}
static inline const int32_t *stk_jpeg_parsed_restarts(const stk_jpeg_parsed *p) {
  return (const int32_t *)(p + 1);
}
static inline const uint8_t *stk_jpeg_parsed_scan(const stk_jpeg_parsed *p) {
  return (const uint8_t *)(stk_jpeg_parsed_restarts(p) + p->n_restarts);
}

#endif
