/*
 * The host half of the GPU PNG decoder: reading a PNG's chunk structure before its
 * image data goes to the device (src/cuda/png.cu), and the same decode run on the CPU
 * with the device code's own routines (src/shared/inflate.h, png_common.h), which is
 * how the tests and the fuzz target check the device code without a GPU.
 *
 * The planner is deliberately narrow. Anything the device path might accept where the
 * CPU decoder (libspng) would not is left to the CPU decoder: the planner says "not
 * here" (stk__png_plan returns false with a reason) and the caller decodes on the CPU,
 * which decodes the file or gives the error. So every chunk's CRC must match, IHDR must
 * be valid, PLTE / tRNS must follow the PNG rules for the colour type, IDAT chunks must
 * be consecutive and end with IEND, and the only other chunks taken are gAMA, sRGB,
 * pHYs, iCCP and tEXt before the image data, with valid contents (an iCCP profile must
 * inflate completely; tEXt: a valid keyword and printable text); any other chunk (zTXt,
 * iTXt, eXIf, APNG's, private ones, ...) sends the file to the CPU.
 */
#ifndef STOKER_OPS_PNG_PLAN_H
#define STOKER_OPS_PNG_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../shared/png_common.h"

typedef struct {
  stk_png_header hdr;
  stk_png_layout layout;
  size_t zsize; /* bytes of the zlib stream (all IDAT payloads) */
} stk__png_plan;

/* Reads the chunks of the PNG in data[0..size). true: the device path takes it; false:
 * decode it on the CPU (*why says why, a static string). */
bool stk__png_plan_file(const uint8_t *data, size_t size, stk__png_plan *out, const char **why);

/* Copies the IDAT payloads of a planned file, in order, to dst (plan->zsize bytes). */
void stk__png_gather_idat(const uint8_t *data, size_t size, uint8_t *dst);

/* Results of stk__png_decode_emulated and of the device decoder, per sample. */
enum { STK__PNG_OK = 0, STK__PNG_FALLBACK = 1, STK__PNG_FAILED = 2 };

/* The device path on the CPU: plan, inflate, unfilter, expand the region (x, y, w, h of
 * the stored image; w <= 0: all of it) into dst (dense h x w x channels, 3 or 1 for
 * GRAY). Returns STK__PNG_OK, _FALLBACK (the planner refused) or _FAILED (the data did
 * not decode: the CPU decoder gives the verdict); *detail gets the inflate result
 * (STK_INF_*) or -1 for a bad filter type / palette index. */
int stk__png_decode_emulated(const uint8_t *data, size_t size, int color, int x, int y, int w,
                             int h, uint8_t *dst, int *detail);

#endif /* STOKER_OPS_PNG_PLAN_H */
