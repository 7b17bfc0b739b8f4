/* stoker's own GPU JPEG decoder's host half (src/codecs/jpeg_frame.c) and Huffman stage
 * (src/shared/jpeg_huffman.h, run on the host), differentially: whatever the file, the
 * parser and the decoder stay inside their buffers (ASan); when the parser takes it, the
 * parallel decoder (subsequences of 32 to 4127 bits, from the first byte) must agree with
 * the sequential one (one decode per segment) on success and, when both succeed, on every
 * coefficient: the guesses, links and resolve walk may only ever shortcut the sequential
 * decode, never change it. */
#include <stdlib.h>

#include "codecs/jpeg_frame.h"
#include "fuzz_util.h"

/* Frames beyond this many blocks are skipped (keeps each run fast). */
#define MAX_BLOCKS (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  uint32_t s = 32 + (uint32_t)data[0] * 16;
  data++, size--;
  stk_jpeg_frame f;
  stk_jpeg_huffman *t = malloc(sizeof *t);
  uint8_t *scan = malloc(size);
  int cap = (int)(size / 2 + 1);
  int32_t *rs = malloc(sizeof *rs * (size_t)cap);
  size_t sb;
  int nr;
  char why[128];
  if (t && scan && rs &&
      stk__jpeg_frame_parse(data, size, &f, t, scan, size, &sb, rs, cap, &nr, why, sizeof why) ==
          0 &&
      f.total_blocks <= MAX_BLOCKS) {
    size_t n = (size_t)f.total_blocks * 64;
    int16_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (a && b) {
      int ra = stk__jpeg_decode_coefficients(&f, t, scan, sb, rs, nr, s, a, NULL);
      int rb = stk__jpeg_decode_coefficients(&f, t, scan, sb, rs, nr, 1u << 30, b, NULL);
      if (ra != rb || (ra == 0 && memcmp(a, b, n * sizeof *a) != 0)) abort();
    }
    free(a);
    free(b);
  }
  free(t);
  free(scan);
  free(rs);
  return 0;
}
