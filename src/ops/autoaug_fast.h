/*
 * Specialised CPU kernels of automatic augmentation for uint8 images: the same bytes as
 * the general colour / filter / warp kernels (color_pil.c, geometry.c) they stand in
 * for, computed with the same float operations in the same order, but in loops without
 * per-element dtype or channel-count branches that the compiler can vectorise. Each
 * returns false (and writes nothing) when its case does not apply, and the caller then
 * runs the general kernel. tests/c/test_autoaug_fast.c compares both byte for byte.
 */
#ifndef STOKER_OPS_AUTOAUG_FAST_H
#define STOKER_OPS_AUTOAUG_FAST_H

#include "filters.h"
#include "geometry.h"

/* True: the hand-written AVX2 code (warp coordinates, DALI saturation) is not taken even
 * where the CPU has it, so the tests compare the SSE2 / scalar code with the general
 * kernels too. Default false. (The row loops compiled twice by target_clones pick their
 * copy at load time and are not affected.) */
extern bool stk__aa_fast_no_avx2;

/* stk__warp_affine for uint8 -> uint8 with 3 channels and linear interpolation, or nearest
 * (without AVX2: only where a row keeps one source coordinate, m[0] or m[3] zero); `row`
 * is scratch of dst->w * 3 floats. */
bool stk__aa_fast_warp(const stk__image *src, const stk__image *dst, const double m[6],
                       stk__interp interp, bool constant, const float *fill, float *row);

/* stk__pil_sharpness (ImageEnhance.Sharpness) for uint8 images of any channel count. */
bool stk__aa_fast_pil_sharpness(const stk__image *src, const stk__image *dst, float factor);

/* stk__pil_color (ImageEnhance.Color) for uint8 RGB. */
bool stk__aa_fast_pil_color(const stk__image *src, const stk__image *dst, float factor);

/* stk__image_mean_luma of a uint8 image (same value, integer sums). */
double stk__aa_fast_mean_luma(const stk__image *img);

/* stk__conv2d of a uint8 image with a 3x3 kernel, anchor at the centre, border
 * reflect_101, into dst (h x w x c floats, not accumulated). */
bool stk__aa_fast_conv3x3(const stk__image *src, const float k[9], float *dst);

/* stk__affine_apply of a 3 -> 3 colour map (matrix m, offsets off) on uint8 RGB. */
bool stk__aa_fast_affine3(const stk__image *src, const stk__image *dst, const double m[9],
                          const double off[3]);

/* stk__histograms_u8 of a uint8 RGB image (hist: 3 x 256 counts, overwritten). */
bool stk__aa_fast_histograms3(const stk__image *src, uint64_t *hist);

#endif /* STOKER_OPS_AUTOAUG_FAST_H */
