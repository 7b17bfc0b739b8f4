/*
 * The operations of automatic augmentation on uint8 HWC images, in DALI's or
 * torchvision's definition (see src/autoaug/autoaug.h for the parameters). Pure
 * functions over the colour / filter / warp kernels; scratch memory comes from a
 * callback (the sample's scratch in operators, malloc in tests).
 */
#ifndef STOKER_OPS_AUTOAUG_KERNELS_H
#define STOKER_OPS_AUTOAUG_KERNELS_H

#include "../autoaug/autoaug.h"
#include "../cuda/api_autoaug.h"
#include "resample.h"

/* True (the default): uint8 images take the specialised kernels of autoaug_fast.c where
 * they apply, which write the same bytes as the general colour / filter / warp kernels;
 * false: always the general kernels (benchmarks and the exactness tests compare both). */
extern bool stk__aa_fast;

/* Returns `bytes` of scratch living at least until the operation returns (NULL: none). */
typedef void *(*stk__aa_scratch_fn)(void *ctx, size_t bytes);

/* The output -> input matrix (pixel-edge coordinates) of a geometric operation for an
 * h x w image: p = [sx, sy] for shears, [tx, ty] pixels for translations, [degrees, -]
 * for rotations (about the centre, same size). DALI: the forward matrix is rounded to
 * float32 and inverted, as warp_affine(transforms.*, inverse_map=False) does;
 * torchvision: the matrix of its affine (ShearX: x_in = x + s y). */
stk_status stk__aa_matrix(stk__aa_op op, stk__aa_convention conv, const double p[2], int64_t h,
                          int64_t w, double m[6]);

/* Warps src into dst (same size and channels) with matrix m; `row` is scratch of
 * dst->w * dst->c floats. constant: outside taps read fill (src->c values), else the
 * edge pixels repeat. */
stk_status stk__aa_warp(const stk__image *src, const stk__image *dst, const double m[6],
                        stk__interp interp, bool constant, const float *fill, float *row);

/* Moves `count` boxes [l, t, r, b] (pixels, or fractions of w / h when normalized) the way
 * the warp with output -> input matrix m moves the image: each becomes the box enclosing
 * its four moved corners, clipped to the h x w canvas (a box pushed outside becomes
 * empty; none is removed). */
stk_status stk__aa_boxes(float *boxes, int64_t count, const double m[6], int64_t h, int64_t w,
                         bool normalized);

/* A colour operation (or identity) from src to dst (uint8, same shape, no aliasing) with
 * parameter p (np values; DALI's sharpness also takes a 9-value kernel). */
stk_status stk__aa_color(stk__aa_op op, stk__aa_convention conv, const double *p, int np,
                         const stk__image *src, const stk__image *dst, stk__aa_scratch_fn scratch,
                         void *sctx);

/* DALI's sharpness kernel (1 + s) delta - s blur in float32 (or k9 as float32); true when
 * it is the identity (the operation copies). Shared by the CPU and GPU paths. */
bool stk__aa_dali_sharp_kernel(double s, const double *k9, float k[9]);

/* Encodes one operation with parameter `param` on an h x w image as a step of the GPU
 * program (api_autoaug.h): warp matrix (also returned in m, for the boxes), colour
 * matrix, sharpness kernel, or a 256-byte table written to `lut` (*uses_lut) computed by
 * stk__aa_color itself on the ramp 0..255. An identity step is STK_GPU_AA_COPY. */
stk_status stk__aa_gpu_step(stk__aa_op op, stk__aa_convention conv, double param, int64_t h,
                            int64_t w, stk_gpu_aa_step *step, double m[6], uint8_t *lut,
                            bool *uses_lut);

/* The same from a parameter vector as auto_augment.augment takes it (p[0..np)): the 2-value
 * vector of a geometric operation (translations in pixels), the 9-value kernel of DALI's
 * sharpness, else p[0] (np 0: none), as stk__aa_matrix and stk__aa_color read them. */
stk_status stk__aa_gpu_step_vec(stk__aa_op op, stk__aa_convention conv, const double *p, int np,
                                int64_t h, int64_t w, stk_gpu_aa_step *step, double m[6],
                                uint8_t *lut, bool *uses_lut);

#endif /* STOKER_OPS_AUTOAUG_KERNELS_H */
