/*
 * 2D convolution kernels on the CPU (gaussian_blur, laplacian, filter).
 *
 * All of them compute a correlation (the kernel is not flipped, as DALI's filter and
 * OpenCV's filter2D): out(y, x) = sum_i sum_j K[i][j] in(y - ay + i, x - ax + j) with
 * anchor (ay, ax), for every channel of an HWC image. Positions outside the image follow
 * the border mode (DALI's names):
 *   reflect_101   dcb|abcd|cba   (OpenCV BORDER_REFLECT_101; the default)
 *   reflect_1001  cba|abcd|dcb   (OpenCV BORDER_REFLECT)
 *   wrap          bcd|abcd|abc
 *   clamp         aaa|abcd|ddd   (OpenCV BORDER_REPLICATE)
 *   constant      the fill value
 * Reflections and wraps repeat as often as a large kernel needs.
 *
 * Implementation: the input is converted once into a float32 image padded by the
 * border (so the inner loops have no branches); a separable kernel runs as a horizontal
 * pass into a float32 intermediate and a vertical pass; others run tap by tap. Each tap
 * is an 8-lane multiply-add over a whole row. Outputs are float32; the operators convert
 * them (integers: rounded half away from zero and saturated).
 */
#ifndef STOKER_OPS_FILTERS_H
#define STOKER_OPS_FILTERS_H

#include "resample.h"

typedef enum {
  STK__BORDER_REFLECT_101 = 0,
  STK__BORDER_REFLECT_1001 = 1,
  STK__BORDER_WRAP = 2,
  STK__BORDER_CLAMP = 3,
  STK__BORDER_CONSTANT = 4
} stk__border;

#define STK__BORDER_CHOICES "reflect_101|reflect_1001|wrap|clamp|constant"

bool stk__border_parse(const char *name, stk__border *out);
/* Where coordinate i of an axis of n pixels reads from: an index in [0, n), or -1 for
 * the fill value (constant border outside). n >= 1. */
int64_t stk__border_index(int64_t i, int64_t n, stk__border border);

/* Output geometry of one convolution. */
typedef struct {
  int64_t out_h, out_w; /* "same": the input size; "valid": in - k + 1 (anchors 0) */
  int kh, kw;           /* kernel extents (>= 1) */
  int ay, ax;           /* anchor: kernel element over the output pixel */
  stk__border border;
  float fill; /* constant border */
} stk__conv_geom;

/* Scratch bytes for a call on `src` (0 when sizes are out of bounds). */
size_t stk__conv_scratch_size(const stk__image *src, const stk__conv_geom *g);

/* dst (out_h x out_w x src->c floats, dense) = correlation of src with the kh x kw
 * row-major kernel k, or += with `accumulate`. src: any dtype. */
stk_status stk__conv2d(const stk__image *src, float *dst, const stk__conv_geom *g, const float *k,
                       bool accumulate, void *scratch, size_t scratch_size);

/* The same for the separable kernel K[i][j] = ky[i] * kx[j] (ky: kh values, kx: kw). */
stk_status stk__conv_sep(const stk__image *src, float *dst, const stk__conv_geom *g,
                         const float *ky, const float *kx, bool accumulate, void *scratch,
                         size_t scratch_size);

/* True when the kh x kw kernel is (to 1e-6 of its largest element) an outer product;
 * then ky (kh) and kx (kw) receive the factors. */
bool stk__kernel_separable(const float *k, int kh, int kw, float *ky, float *kx);

/* A normalised Gaussian window of `size` taps (odd) for sigma > 0. */
void stk__gaussian_window(float *w, int size, double sigma);
/* DALI's defaults: window 2 ceil(3 sigma) + 1; sigma from a window: (r - 1) 0.3 + 0.8
 * with r = (window - 1) / 2 (OpenCV's rule). */
int stk__gaussian_size(double sigma);
double stk__gaussian_sigma(int window);

/* The windows of DALI's (and OpenCV's Sobel-based) Laplacian: smoothing window of n
 * taps = binomial coefficients C(n-1, k); derivative window of n >= 3 taps = the
 * smoothing window of n - 2 taps convolved with [1, -2, 1]. */
void stk__binomial_window(float *w, int size);
void stk__second_derivative_window(float *w, int size);

#endif /* STOKER_OPS_FILTERS_H */
