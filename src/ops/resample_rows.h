/* Hand-written AVX2 copies of the resampler's row loops (resample.c). GCC's clones of
 * those loops (WIDE) stay 128 bits wide, so these do the same IEEE operations per element
 * in the same order on 256-bit registers: the output bytes are the same on every path.
 * resample.c calls them when stk__resample_rows_avx2() says the CPU has AVX2. */
#ifndef STOKER_OPS_RESAMPLE_ROWS_H
#define STOKER_OPS_RESAMPLE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tests set this to run the portable loops only. */
extern bool stk__resample_rows_off;

/* Whether the AVX2 loops may run (CPU support, not switched off). */
bool stk__resample_rows_avx2(void);

/* d[i] = (float)s[i] for the first n - n % 16 values; returns how many were done. */
size_t stk__u8_to_f32_avx2(float *restrict d, const uint8_t *restrict s, size_t n);

/* resample.c's bounded_to_u8 (values in (-1000, 1000): +1024.5, truncate, -1024, clamp to
 * [0, 255]) for the first n - n % 16 values; returns how many were done. */
size_t stk__bounded_to_u8_avx2(uint8_t *restrict d, const float *restrict s, size_t n);

/* acc[i] = sum over k < n, in order, of w[k] * rows[k][i] from 0.0f (multiply, then add),
 * for i < len; len is a multiple of 32. */
void stk__vpass_avx2(float *restrict acc, const float *const *rows, const float *w, int n,
                     size_t len);

/* The horizontal pass for 3 or 4 channels, two output pixels per 256-bit register:
 * dst[x * C + l] = sum over k < K, in order, of w(x, k) * row[(start[x] - xlo + k) * C + l]
 * from 0.0f, for l < 4 (lanes past C spill into the next pixel, which is written after,
 * or into the row's spill room), as resample.c's hpass_lanes. `pairs` holds, for pixel
 * pair x / 2 and tap k, 8 floats: w(x, k) 4 times, then w(x + 1, k) 4 times (zeros past
 * an odd out_w: that pixel, out_w, is written into the spill room too). */
void stk__hpass_pairs_avx2(const float *restrict row, int C, int K, const int32_t *start,
                           const float *pairs, int32_t xlo, int64_t out_w, float *restrict dst);

#endif
