/*
 * Affine warps on the CPU (rotate, warp_affine) and the 2x3 matrix helpers shared with
 * the transforms.* operators.
 *
 * Coordinates. Pixel-edge convention, as DALI's warp_affine ("[0, 0] is the corner of the
 * first pixel"), Pillow's transform and torchvision's tensor affine_grid with
 * align_corners=False: pixel (x, y) covers [x, x + 1) x [y, y + 1) and its centre is
 * (x + 0.5, y + 0.5); the centre of a w x h image is (w / 2, h / 2), which is
 * ((w - 1) / 2, (h - 1) / 2) in pixel-index coordinates. A 2x3 matrix m maps a point
 * (x, y) to (m0 x + m1 y + m2, m3 x + m4 y + m5).
 *
 * Sampling. Output pixel (x, y) reads the source at m * (x + 0.5, y + 0.5) (m maps the
 * output to the input). nearest: the source pixel containing that point (floor of the
 * edge coordinates; a point exactly on a pixel edge takes the pixel to its right/below).
 * linear: bilinear over the four nearest pixel centres. cubic: Keys' cubic with a = -0.5
 * over 4x4 centres (resample.h's filter; Pillow's *resize* uses the same, its transform
 * uses a = -1). Taps outside the image read the fill value (constant border; torchvision's
 * tensor rotate/affine with `fill` and DALI's warp with fill_value behave the same way),
 * or, with the clamp border, the nearest edge pixel (DALI's default when fill_value is
 * not given). Arithmetic is float32 per tap from double coordinates; integer outputs are
 * rounded half away from zero and saturated.
 *
 * Agreement, measured on a 451x300 photo (rotations of 23.5, -41 and 7.25 degrees, two
 * affine maps with shear and scale): Pillow's rotate/transform(AFFINE) within 1 level for
 * bilinear (Pillow truncates, we round) where all four taps are inside, and identical for
 * nearest but where the source point is within 0.02 px of a pixel edge (Pillow's 16.16
 * fixed point) -- both in test_geometry. torchvision 0.26's functional rotate/affine on
 * uint8 tensors (a one-off run): bilinear within 1 level on every pixel with fill=None
 * (zero padding, torchvision's default); with a fill value, within 1 level except on the
 * one-pixel ring where taps straddle the image edge: there torchvision computes
 * m*S + (1 - m)*fill with S the zero-padded sample and m the coverage, weighting S by m
 * twice, while DALI and this kernel compute S + (1 - m)*fill. Nearest: identical but for
 * 2-3 pixels in 135,000 (its float32 grid lands on the other side of a pixel edge).
 */
#ifndef STOKER_OPS_GEOMETRY_H
#define STOKER_OPS_GEOMETRY_H

#include "resample.h"

typedef struct {
  double m[6];          /* output -> input, pixel-edge coordinates */
  stk__interp interp;   /* nearest, linear or cubic */
  bool constant_border; /* true: outside taps read `fill`; false: clamp to the edge */
  const float *fill;    /* src->c values (with constant_border) */
} stk__warp_params;

/* Warps `src` into `dst` (same channel count). src->dtype and dst->dtype: uint8 or
 * float32. `row` is scratch of dst->w * dst->c floats (unused, may be NULL, when dst is
 * float32). Thread-safe. Errors: STK_ERR_INVALID_ARGUMENT (empty images, channel
 * mismatch, non-finite matrix, lanczos3), STK_ERR_UNSUPPORTED (dtypes). */
stk_status stk__warp_affine(const stk__image *src, const stk__image *dst, const stk__warp_params *p,
                            float *row);

/* out = a * b as 3x3 affine matrices (b applied first). out may alias a or b. */
void stk__affine_mul(const double a[6], const double b[6], double out[6]);
/* Inverts m; false (out untouched) when m is singular or not finite. */
bool stk__affine_invert(const double m[6], double out[6]);

/* DALI's rotated canvas: w' = ceil(|cos| w + |sin| h - 0.01), h' likewise, then each
 * extent is bumped by one where its parity differs from that of the input extent it is
 * mostly made of (w for w' when |sin| <= |cos|, else h), so the centre stays on the
 * pixel grid. */
void stk__rotate_canvas(int64_t in_h, int64_t in_w, double angle_deg, int64_t *out_h,
                        int64_t *out_w);
/* The output -> input matrix of a counter-clockwise rotation by `angle_deg` (as seen with
 * y pointing down) that maps the output's centre to the input's:
 * T(in_w / 2, in_h / 2) * [[c, -s], [s, c]] * T(-out_w / 2, -out_h / 2). */
void stk__rotate_matrix(double angle_deg, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                        double m[6]);

#endif /* STOKER_OPS_GEOMETRY_H */
