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

#endif
