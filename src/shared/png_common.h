/*
 * The per-row and per-pixel work of the GPU PNG decoder, shared by the CUDA kernels
 * (src/cuda/png.cu) and the host (src/codecs/png_gpu_host.c runs the whole chain on the
 * CPU for the tests and the fuzz target). It compiles as C11 and as CUDA C++ (STK_HD).
 *
 * After inflating, a PNG's data is a sequence of rows, each a filter-type byte and the
 * row's bytes; an interlaced image (Adam7) is seven such sub-images, one per pass, one
 * after the other (empty passes take no bytes). The functions here give that layout
 * (stk_png_layout), undo the filters one byte at a time (a byte needs the finished bytes
 * to its left and above, so the kernel runs the rows in order and, for Sub / Average /
 * Paeth, the bpp byte lanes of a row in parallel (stk_png_unfilter_lane); None / Up rows
 * fully in parallel, a byte each (stk_png_unfilter_byte)), and
 * turn one stored pixel into the output colour exactly as the CPU decoder does
 * (src/codecs/png.c passes libspng's samples through stk_png_store for 16-bit files and
 * GRAY), with DALI 2.4's values (its CPU decoders.image; tests/python/test_png_dali.py
 * compares byte for byte):
 *   - bit depths below 8 are scaled to 8 bits (v * 255 / (2^depth - 1));
 *   - 16-bit samples are rounded to 8 bits (round(v * 255 / 65535)), not cut to their
 *     high byte;
 *   - palette indices look up PLTE (an index past its end makes the sample fail, and
 *     the CPU decoder gives the verdict);
 *   - alpha (and tRNS) is dropped, not composited;
 *   - GRAY from a colour pixel weighs R, G, B by 9797, 19234, 3737 / 32768 (0.299 and
 *     0.587 in 15-bit fixed point, blue the rest): 8-bit pixels truncate, 16-bit ones
 *     round at 16 bits and are then rounded to 8 like any 16-bit sample. From gray it is
 *     the gray value itself (the weights add up to 32768, so the formula gives it too).
 */
#ifndef STOKER_SHARED_PNG_COMMON_H
#define STOKER_SHARED_PNG_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_common.h" /* STK_HD */

/* Output colours: the values of stk__color (src/codecs/codecs.h) and STK_GPU_COLOR_*. */
enum { STK_PNG_RGB = 0, STK_PNG_BGR = 1, STK_PNG_GRAY = 2 };

/* What the kernels need from the header chunks. */
typedef struct {
  int32_t width, height;
  int32_t depth;      /* 1, 2, 4, 8, 16 */
  int32_t color_type; /* 0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGBA */
  int32_t interlace;  /* 0 or 1 (Adam7) */
  int32_t palette_size;
  uint8_t palette[256][3];
} stk_png_header;

/* One pass (or the whole image) in the inflated data. */
typedef struct {
  int32_t w, h;     /* pixels; 0 x 0 for an empty pass */
  int64_t offset;   /* of its first row's filter byte */
  int64_t row_size; /* bytes per row, the filter byte excluded */
} stk_png_pass;

typedef struct {
  int npass;     /* 1 or 7 */
  int bpp;       /* bytes per complete pixel, at least 1 (the filters' step) */
  int bits;      /* bits per pixel */
  int64_t total; /* inflated bytes */
  stk_png_pass pass[7];
} stk_png_layout;

STK_HD int stk_png_samples(int color_type) {
  return color_type == 2 ? 3 : color_type == 4 ? 2 : color_type == 6 ? 4 : 1;
}

/* Adam7: pass p starts at (x0, y0) and steps (dx, dy). */
STK_HD void stk_png_adam7(int p, int *x0, int *y0, int *dx, int *dy) {
  const int X0[7] = {0, 4, 0, 2, 0, 1, 0}, Y0[7] = {0, 0, 4, 0, 2, 0, 1};
  const int DX[7] = {8, 8, 4, 4, 2, 2, 1}, DY[7] = {8, 8, 8, 4, 4, 2, 2};
  *x0 = X0[p], *y0 = Y0[p], *dx = DX[p], *dy = DY[p];
}

STK_HD void stk_png_layout_of(const stk_png_header *h, stk_png_layout *L) {
  L->bits = h->depth * stk_png_samples(h->color_type);
  L->bpp = L->bits < 8 ? 1 : L->bits / 8;
  L->npass = h->interlace ? 7 : 1;
  int64_t off = 0;
  for (int p = 0; p < L->npass; p++) {
    int x0 = 0, y0 = 0, dx = 1, dy = 1;
    if (h->interlace) stk_png_adam7(p, &x0, &y0, &dx, &dy);
    int32_t w = h->width > x0 ? (h->width - x0 + dx - 1) / dx : 0;
    int32_t hh = h->height > y0 ? (h->height - y0 + dy - 1) / dy : 0;
    if (w == 0 || hh == 0) w = hh = 0;
    stk_png_pass *P = &L->pass[p];
    P->w = w, P->h = hh, P->offset = off;
    P->row_size = ((int64_t)w * L->bits + 7) / 8;
    off += (int64_t)hh * (P->row_size + (w ? 1 : 0));
  }
  L->total = off;
}

/* ---- filters ---- */

STK_HD int stk_png_paeth(int a, int b, int c) {
  int p = a + b - c;
  int pa = p > a ? p - a : a - p, pb = p > b ? p - b : b - p, pc = p > c ? p - c : c - p;
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Unfilters byte i of a row in place. `row` is the row's bytes (after its filter byte),
 * `prev` the previous, already unfiltered row of the same pass or NULL for the first;
 * bytes i - bpp of `row` must be final. Filter types above 4 are the caller's check. */
STK_HD void stk_png_unfilter_byte(int type, uint8_t *row, const uint8_t *prev, int64_t i, int bpp) {
  int a = i >= bpp ? row[i - bpp] : 0;
  int b = prev ? prev[i] : 0;
  int c = prev && i >= bpp ? prev[i - bpp] : 0;
  int x = row[i];
  switch (type) {
    case 1:
      x += a;
      break;
    case 2:
      x += b;
      break;
    case 3:
      x += (a + b) >> 1;
      break;
    case 4:
      x += stk_png_paeth(a, b, c);
      break;
    default:
      break;
  }
  row[i] = (uint8_t)x;
}

/* Unfilters byte lane `lane` (< bpp) of a row: bytes lane, lane + bpp, ... in order,
 * carrying the left (a) and upper-left (c) bytes in registers. The lanes are independent:
 * the kernel runs them on bpp threads, the host one after the other. Same arithmetic as
 * stk_png_unfilter_byte. */
STK_HD void stk_png_unfilter_lane(int type, uint8_t *row, const uint8_t *prev, int64_t size,
                                  int bpp, int lane) {
  int a = 0, c = 0;
  for (int64_t i = lane; i < size; i += bpp) {
    int b = prev ? prev[i] : 0;
    int x = row[i];
    switch (type) {
      case 1:
        x += a;
        break;
      case 2:
        x += b;
        break;
      case 3:
        x += (a + b) >> 1;
        break;
      case 4:
        x += stk_png_paeth(a, b, c);
        break;
      default:
        break;
    }
    row[i] = (uint8_t)x;
    a = x & 255;
    c = b;
  }
}

/* Unfilters one whole row, sequentially (the host's loop; the kernel spreads it). */
STK_HD void stk_png_unfilter_row(int type, uint8_t *row, const uint8_t *prev, int64_t size,
                                 int bpp) {
  if (type == 0) return;
  for (int lane = 0; lane < bpp; lane++) stk_png_unfilter_lane(type, row, prev, size, bpp, lane);
}

/* ---- pixels ---- */

/* Sample s (channel) of pixel x of an unfiltered row, at the file's depth. */
STK_HD unsigned stk_png_sample(const uint8_t *row, int64_t x, int s, const stk_png_header *h) {
  int n = stk_png_samples(h->color_type);
  if (h->depth == 8) return row[x * n + s];
  if (h->depth == 16) return (unsigned)row[2 * (x * n + s)] << 8 | row[2 * (x * n + s) + 1];
  int64_t bit = x * h->depth; /* below 8 bits: one sample per pixel, MSB first */
  unsigned byte = row[bit >> 3];
  int shift = 8 - h->depth - (int)(bit & 7);
  return (byte >> shift) & ((1u << h->depth) - 1u);
}

/* A 16-bit sample rounded to 8 bits: round(v * 255 / 65535) = round(v / 257), never a
 * tie (257 is odd). libspng's RGB8 format, OpenCV and Pillow keep the high byte instead. */
STK_HD uint8_t stk_png_16to8(unsigned v) { return (uint8_t)((v * 255u + 32767u) / 65535u); }

/* A sample scaled to 8 bits: depths below 8 as libspng does, 16 rounded. */
STK_HD uint8_t stk_png_to8(unsigned v, int depth) {
  switch (depth) {
    case 1:
      return (uint8_t)(v * 255u);
    case 2:
      return (uint8_t)(v * 85u);
    case 4:
      return (uint8_t)(v * 17u);
    case 16:
      return stk_png_16to8(v);
    default:
      return (uint8_t)v;
  }
}

/* R, G, B weighted for GRAY, in units of 1/32768 (at most 32768 * 65535 < 2^31). */
STK_HD uint32_t stk_png_gray_sum(unsigned r, unsigned g, unsigned b) {
  return 9797u * r + 19234u * g + 3737u * b;
}

/* GRAY of an 8-bit colour: the weighted sum truncated (DALI's values, not stk__luma601's). */
STK_HD uint8_t stk_png_gray8(unsigned r, unsigned g, unsigned b) {
  return (uint8_t)(stk_png_gray_sum(r, g, b) >> 15);
}

/* GRAY of a 16-bit colour: rounded to 16 bits, then to 8. */
STK_HD uint8_t stk_png_gray16(unsigned r, unsigned g, unsigned b) {
  return stk_png_16to8((stk_png_gray_sum(r, g, b) + 16384u) >> 15);
}

/* Stores one pixel, given as R, G, B samples of 8 bits (wide == 0) or 16 bits (wide ==
 * 1; gray files as R = G = B), in `color` (3 bytes, or 1 for GRAY). */
STK_HD void stk_png_store(unsigned r, unsigned g, unsigned b, int wide, int color, uint8_t *out) {
  if (color == STK_PNG_GRAY) {
    out[0] = wide ? stk_png_gray16(r, g, b) : stk_png_gray8(r, g, b);
    return;
  }
  if (wide) r = stk_png_16to8(r), g = stk_png_16to8(g), b = stk_png_16to8(b);
  if (color == STK_PNG_BGR)
    out[0] = (uint8_t)b, out[1] = (uint8_t)g, out[2] = (uint8_t)r;
  else
    out[0] = (uint8_t)r, out[1] = (uint8_t)g, out[2] = (uint8_t)b;
}

/* Where stored pixel (x, y) is in the inflated data: its pass's row and column. */
STK_HD const uint8_t *stk_png_locate(const stk_png_header *h, const stk_png_layout *L,
                                     const uint8_t *data, int32_t x, int32_t y, int64_t *col) {
  int p = 0;
  if (h->interlace) { /* the pass holding (x, y): the first whose grid contains it */
    for (p = 0; p < 7; p++) {
      int x0, y0, dx, dy;
      stk_png_adam7(p, &x0, &y0, &dx, &dy);
      if (x % dx == x0 && y % dy == y0) {
        x = (x - x0) / dx;
        y = (y - y0) / dy;
        break;
      }
    }
  }
  const stk_png_pass *P = &L->pass[p];
  *col = x;
  return data + P->offset + (int64_t)y * (P->row_size + 1) + 1;
}

/* Writes stored pixel (x, y) in `color` to out (3 bytes, or 1 for GRAY). Returns 0, or
 * -1 for a palette index past PLTE's end. */
STK_HD int stk_png_pixel(const stk_png_header *h, const stk_png_layout *L, const uint8_t *data,
                         int32_t x, int32_t y, int color, uint8_t *out) {
  int64_t col;
  const uint8_t *row = stk_png_locate(h, L, data, x, y, &col);
  unsigned r, g, b;
  int wide = h->depth == 16; /* samples stay at 16 bits until stk_png_store */
  switch (h->color_type) {
    case 3: {
      unsigned i = stk_png_sample(row, col, 0, h);
      if ((int)i >= h->palette_size) return -1;
      r = h->palette[i][0], g = h->palette[i][1], b = h->palette[i][2];
      break;
    }
    case 2:
    case 6:
      /* 8 or 16 bits: stored as stk_png_store takes them */
      r = stk_png_sample(row, col, 0, h);
      g = stk_png_sample(row, col, 1, h);
      b = stk_png_sample(row, col, 2, h);
      break;
    default: /* 0, 4 */
      r = stk_png_sample(row, col, 0, h);
      if (!wide) r = stk_png_to8(r, h->depth);
      g = b = r;
      break;
  }
  stk_png_store(r, g, b, wide, color, out);
  return 0;
}

#endif /* STOKER_SHARED_PNG_COMMON_H */
