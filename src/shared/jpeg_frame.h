/*
 * One baseline JPEG as stoker's own GPU decoder sees it: the frame's geometry, its
 * quantisation tables and where each component's 8x8 blocks live in the coefficient
 * array. Shared by the host parser (src/codecs/jpeg_frame.c), the Huffman stage
 * (src/cuda/jpeg_huffman.cu: bitstream -> coefficients) and the pixel stage
 * (src/cuda/jpeg_idct.cu: coefficients -> RGB / gray), and by their host tests. Plain C11
 * types only: it compiles in C and in CUDA C++.
 *
 * The coefficient array of one image: int16_t[total_blocks][64], each block in natural
 * (row-major, de-zigzagged) order, quantised values as coded (NOT multiplied by the
 * quantisation table), DC resolved (the differences summed, predictors reset at restart
 * markers). Blocks are component-planar: component c's blocks start at comp[c].block0 and
 * are laid out row by row over its padded block grid, block (bx, by) at
 * comp[c].block0 + by * comp[c].bw + bx, 0 <= bx < bw, 0 <= by < bh.
 *
 * Geometry (ITU T.81 A.1.1 and A.2):
 * - ncomp == 3, interleaved scan: an MCU holds h x v blocks of each component; the image
 *   has mcus_x = ceil(width / (8 hmax)) by mcus_y = ceil(height / (8 vmax)) MCUs, and
 *   component c's grid is bw = mcus_x * h by bh = mcus_y * v blocks (including the blocks
 *   that pad the last MCU row and column, which are coded in the stream).
 * - ncomp == 1 (non-interleaved): the parser sets h = v = hmax = vmax = 1 whatever the
 *   header says; an MCU is one block, mcus_x = bw = ceil(width / 8), mcus_y = bh =
 *   ceil(height / 8).
 * A component's samples cover bw * 8 by bh * 8; its real extent is
 * ceil(width * h / hmax) by ceil(height * v / vmax).
 */
#ifndef STOKER_SHARED_JPEG_FRAME_H
#define STOKER_SHARED_JPEG_FRAME_H

#include <stdint.h>

#define STK_JPEG_MAX_COMP 3

typedef struct {
  int h, v;               /* sampling factors, 1 or 2 */
  int quant;              /* index into stk_jpeg_frame.quant, 0..3 */
  int dc_table, ac_table; /* Huffman table indices, 0..3 */
  int bw, bh;             /* blocks per row and per column (padded, see above) */
  int64_t block0;         /* index of the component's first block */
} stk_jpeg_component;

typedef struct {
  int width, height; /* pixels */
  int ncomp;         /* 1 (gray) or 3 (YCbCr) */
  int hmax, vmax;    /* largest sampling factors */
  int mcus_x, mcus_y;
  int blocks_per_mcu;    /* sum of h * v over the components */
  int restart_interval;  /* MCUs per restart interval; 0: none */
  int64_t total_blocks;  /* sum of bw * bh over the components */
  uint16_t quant[4][64]; /* natural (row-major) order */
  stk_jpeg_component comp[STK_JPEG_MAX_COMP];
} stk_jpeg_frame;

#endif
