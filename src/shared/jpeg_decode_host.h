/* The pixel stage of stoker's own GPU JPEG decoder run on the host, block by block and
 * pixel by pixel, with the very functions the kernels run (jpeg_pixels.h): for the CPU
 * stand-in backend (tests/fake_gpu), which runs the Huffman stage's host form
 * (stk__jpeg_decode_coefficients, src/codecs/jpeg_frame.c) before it. Plain C11. */
#ifndef STOKER_SHARED_JPEG_DECODE_HOST_H
#define STOKER_SHARED_JPEG_DECODE_HOST_H

#include <stdlib.h>
#include <string.h>

#include "jpeg_pixels.h"

/* The pixel stage: region (rx, ry, rw, rh) of the image (rw <= 0: all of it) in colour
 * `color` (STK_JPEG_OUT_*) into dst, `pitch` bytes per row. Returns 0, or -1 for no memory
 * or a frame the stage does not handle. */
static inline int stk_jpeg_pixels_host(const stk_jpeg_frame *f, const int16_t *coef, int color,
                                       int rx, int ry, int rw, int rh, uint8_t *dst,
                                       int64_t pitch) {
  if (rw <= 0 || rh <= 0) rx = 0, ry = 0, rw = f->width, rh = f->height;
  if (stk_jpeg_frame_problem(f)) return -1;
  uint8_t *planes = malloc((size_t)f->total_blocks * 64);
  if (!planes) return -1;
  for (int64_t g = 0; g < f->total_blocks; g++)
    stk_jpeg_idct_at(f, coef, planes, g, color, rx, ry, rw, rh);
  stk_jpeg_plane pl[STK_JPEG_MAX_COMP];
  stk_jpeg_planes(f, planes, pl);
  for (int y = 0; y < rh; y++)
    for (int x = 0; x < rw; x++)
      stk_jpeg_region_pixel(pl, f->ncomp, color, rx, ry, x, y, dst, pitch);
  free(planes);
  return 0;
}

#endif
