/* The host half of stoker's own GPU JPEG decoder: parses one JPEG, says whether the
 * decoder takes it (baseline, 8-bit, gray or YCbCr in one scan) and prepares what the
 * Huffman stage reads: the frame (src/shared/jpeg_frame.h), the decode tables
 * (src/shared/jpeg_huffman.h) and the entropy-coded bytes with stuffing and restart
 * markers removed. */
#ifndef STOKER_CODECS_JPEG_FRAME_H
#define STOKER_CODECS_JPEG_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "../shared/jpeg_frame.h"
#include "../shared/jpeg_huffman.h"

/* Parses `data` (`size` bytes). On success returns 0 and fills *frame, *tables, the
 * un-stuffed scan (scan[0..*scan_bytes); scan_cap >= size always suffices) and the byte
 * offsets in it where restart intervals 1, 2, ... start (restarts[0..*n_restarts);
 * restarts_cap >= size / 2 always suffices). Otherwise returns -1 with the reason in
 * `why` (what the decoder does not take, or what is corrupt). Never reads outside
 * data[0..size) nor writes outside the given capacities. */
int stk__jpeg_frame_parse(const uint8_t *data, size_t size, stk_jpeg_frame *frame,
                          stk_jpeg_huffman *tables, uint8_t *scan, size_t scan_cap,
                          size_t *scan_bytes, int32_t *restarts, int restarts_cap, int *n_restarts,
                          char *why, size_t whylen);

/* Removes the 0xFF00 stuffing and RSTn markers of the entropy-coded data starting at
 * data[0]; returns the number of input bytes consumed (the offset of the marker that ends
 * the scan, or `size` if none does), or -1 when `scan` or `restarts` is too small. */
int64_t stk__jpeg_unstuff(const uint8_t *data, size_t size, uint8_t *scan, size_t scan_cap,
                          size_t *scan_bytes, int32_t *restarts, int restarts_cap, int *n_restarts);

/* The Huffman stage on the host: the GPU kernels' phases (src/shared/jpeg_huffman.h)
 * run one "thread" after another, subsequences of `subseq_bits` bits (>= 32; 2^30 or more
 * decodes each segment in one go: the sequential decoder). coef: frame->total_blocks * 64
 * int16 (jpeg_frame.h's layout). Returns 0; -1 for a corrupt stream (coef unspecified);
 * -2 out of memory. *misses (may be NULL): subsequences the resolve pass decoded itself. */
int stk__jpeg_decode_coefficients(const stk_jpeg_frame *frame, const stk_jpeg_huffman *tables,
                                  const uint8_t *scan, size_t scan_bytes, const int32_t *restarts,
                                  int n_restarts, uint32_t subseq_bits, int16_t *coef, int *misses);

#endif
