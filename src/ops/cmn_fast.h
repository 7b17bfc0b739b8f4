/* crop_mirror_normalize's vectorised row kernel for uint8 input (image_util.c's stk__cmn).
 *
 * The general path looks every value up in a per-channel table computed in float64
 * ((v - mean) / std * scale + shift, rounded once to the output type). The kernel here
 * instead computes v * m + a in float64 with AVX2 (m = scale / std, a = shift - mean * m),
 * rounds to float32 and, for float16 output, on to float16 (F16C). That is not the same
 * formula, so it is only used when it gives the table's bytes for all 256 inputs of every
 * channel: stk__cmn_fast_init runs the kernel itself over a ramp of 0..255 and compares
 * with the table; any difference (or no AVX2/F16C) leaves the table path in charge. The
 * output is therefore the table's, byte for byte, whichever path runs. */
#ifndef STOKER_OPS_CMN_FAST_H
#define STOKER_OPS_CMN_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stoker/stoker.h"

typedef struct {
  double mul[4], add[4]; /* per channel */
  int c;                 /* input channels: 1 or 3 */
  bool half;             /* float16 output, else float32 */
} stk__cmn_fast;

/* Tests set this to run the table path only (the kernel is then never chosen). */
extern bool stk__cmn_fast_off;

/* Sets up the kernel for `c` uint8 channels to `out` (float32 or float16) with the
 * table `lut` (256 output elements per channel, as stk__cmn builds it). Returns false
 * when the kernel cannot stand in for the table (type, channels, CPU, or any of the
 * 256 * c values differing). */
bool stk__cmn_fast_init(stk__cmn_fast *f, int c, stk_dtype out, const double *mean,
                        const double *stddev, double scale, double shift, const char *lut);

/* Converts the first pixels of a span of n: output pixel i reads the source pixel at
 * s + i * c (or s - i * c when `mirror`); channel k of it goes to element i of
 * d + k * cstep (elements of the output type). Returns how many pixels it wrote (a
 * multiple of 8, at most n); the caller does the rest. */
int64_t stk__cmn_fast_span(const stk__cmn_fast *f, void *d, size_t cstep, const uint8_t *s,
                           int64_t n, bool mirror);

#endif
