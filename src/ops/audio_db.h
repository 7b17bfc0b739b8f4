/*
 * to_decibels' CPU loop: y = multiplier log10(max(x inv_ref, min_ratio)), as
 * stk_to_db (src/shared/audio_math.h) computes it one value at a time, four values at a
 * time with a log10 of its own (libm's log10 cannot be vectorised; it was most of the
 * operator's time).
 *
 * The log10 is computed in float64 to within a few units in the last place of float64,
 * then multiplied and rounded to float32 like stk_to_db's: the float32 results equal
 * stk_to_db's except where its float64 value lies within those few units of a float32
 * rounding boundary (one value in tens of millions, off by one float32 unit;
 * tests/c/test_audio_fft.c counts them). Values whose ratio is not a positive normal
 * finite number (a floor of 0, infinities) take stk_to_db itself.
 */
#ifndef STOKER_OPS_AUDIO_DB_H
#define STOKER_OPS_AUDIO_DB_H

#include <stdint.h>

/* x: n float32 (xf) or float64 (xd) values, one of them non-NULL; y: n float32. */
void stk__to_db_row(const float *xf, const double *xd, int64_t n, double inv_ref, double min_ratio,
                    double multiplier, float *y);

#endif /* STOKER_OPS_AUDIO_DB_H */
