/* Specialised uint8 kernels of automatic augmentation (see autoaug_fast.h). Compiled with
 * -O3 -ffp-contract=off (CMakeLists.txt): vectorised, and no multiply-add fused that the
 * general kernels round in two steps. */
#include "autoaug_fast.h"

#include <math.h>
#include <string.h>

#include "../shared/color_math.h"
#include "../shared/geometry_px.h"
#include "image_util.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---------------------------------------------------------------------------------- */
/* Linear warp, 3 channels                                                            */
/* ---------------------------------------------------------------------------------- */

/* Pixels whose coordinates are computed together (vectorised), then sampled. */
#define BLOCK 64

typedef struct {
  const uint8_t *s;
  int64_t w, h;
  size_t stride, size; /* bytes per row, in all */
  const float *fill;
  bool constant;
} src3;

/* geometry.c's tap(): channel ch of (x, y), which may lie outside. */
static float tap3(const src3 *S, int64_t x, int64_t y, int ch) {
  if (x < 0 || y < 0 || x >= S->w || y >= S->h) {
    if (S->constant) return S->fill[ch];
    x = x < 0 ? 0 : x >= S->w ? S->w - 1 : x;
    y = y < 0 ? 0 : y >= S->h ? S->h - 1 : y;
  }
  return S->s[(size_t)y * S->stride + (size_t)x * 3 + (size_t)ch];
}

/* stk_warp_linear_setup's one axis for pixel i: coordinate start + step * i, minus 0.5,
 * tamed, floored (as int: the tamed value lies within n + 3 of the axis, and n < 2^30)
 * and its fraction in float32. */
static inline void axis_one(double start, double step, int64_t i, double hi, int *t,
                            float *frac) {
  double v = stk_warp_step(start, step, i) - 0.5;
  v = !(v > -3.0) ? -3.0 : !(v < hi) ? hi : v;
  int f = (int)v;
  f -= v < (double)f;
  *t = f;
  *frac = (float)(v - (double)f);
}

/* axis_one for pixels i0 .. i0 + k - 1. */
static void axis_block(double start, double step, int64_t i0, int k, int64_t n, int *t,
                       float *frac) {
  const double hi = (double)n + 3.0;
  int j = 0;
  if (step == 0.0) { /* start + 0 * i: the same for every pixel */
    axis_one(start, step, i0, hi, t, frac);
    for (j = 1; j < k; j++) t[j] = t[0], frac[j] = frac[0];
    return;
  }
#if defined(__SSE2__)
  /* two pixels per step, each lane rounding as axis_one */
  const __m128d vlo = _mm_set1_pd(-3.0), vhi = _mm_set1_pd(hi), half = _mm_set1_pd(0.5);
  const __m128d one = _mm_set1_pd(1.0), vstart = _mm_set1_pd(start), vstep = _mm_set1_pd(step);
  for (; j + 2 <= k; j += 2) {
    __m128d idx = _mm_set_pd((double)(i0 + j + 1), (double)(i0 + j));
    __m128d v = _mm_sub_pd(_mm_add_pd(vstart, _mm_mul_pd(vstep, idx)), half);
    __m128d gt = _mm_cmpgt_pd(v, vlo); /* false for NaN */
    v = _mm_or_pd(_mm_and_pd(gt, v), _mm_andnot_pd(gt, vlo));
    __m128d lt = _mm_cmplt_pd(v, vhi);
    v = _mm_or_pd(_mm_and_pd(lt, v), _mm_andnot_pd(lt, vhi));
    __m128d tr = _mm_cvtepi32_pd(_mm_cvttpd_epi32(v));
    __m128d fl = _mm_sub_pd(tr, _mm_and_pd(_mm_cmplt_pd(v, tr), one));
    _mm_storel_epi64((__m128i *)(t + j), _mm_cvttpd_epi32(fl));
    _mm_storel_pi((__m64 *)(frac + j), _mm_cvtpd_ps(_mm_sub_pd(v, fl)));
  }
#endif
  for (; j < k; j++) axis_one(start, step, i0 + j, hi, t + j, frac + j);
}

#if defined(__SSE2__)
/* Elements p[0..3] as floats. */
static inline __m128 load4(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  __m128i z = _mm_setzero_si128();
  __m128i x = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(v), z), z);
  return _mm_cvtepi32_ps(x);
}

/* stk_warp_lerp on four lanes: a + (b - a) * t, each step rounded to float32. */
static inline __m128 lerp4(__m128 a, __m128 b, __m128 t) {
  return _mm_add_ps(a, _mm_mul_ps(_mm_sub_ps(b, a), t));
}

/* stk_warp_bilinear of the three channels of the pixel at p (lower row q); reads one
 * element past each right tap (the caller checks it lies in the image). */
static inline void bilinear3(const uint8_t *p, const uint8_t *q, float fx, float fy, float *out) {
  __m128 ax = _mm_set1_ps(fx), ay = _mm_set1_ps(fy);
  __m128 t = lerp4(load4(p), load4(p + 3), ax), b = lerp4(load4(q), load4(q + 3), ax);
  __m128 r = lerp4(t, b, ay);
  _mm_storel_pi((__m64 *)out, r);
  _mm_store_ss(out + 2, _mm_movehl_ps(r, r));
}
#endif

static void row_linear3(const src3 *S, double x, double y, double dx, double dy, int64_t n,
                        float *out) {
  int xs[BLOCK], ys[BLOCK];
  float ax[BLOCK], ay[BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
    int k = n - i0 < BLOCK ? (int)(n - i0) : BLOCK;
    axis_block(x, dx, i0, k, S->w, xs, ax);
    axis_block(y, dy, i0, k, S->h, ys, ay);
    for (int j = 0; j < k; j++, out += 3) {
      int64_t x0 = xs[j], y0 = ys[j];
      float fx = ax[j], fy = ay[j];
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < S->w && y0 + 1 < S->h) {
        const uint8_t *p = S->s + (size_t)y0 * S->stride + (size_t)x0 * 3, *q = p + S->stride;
#if defined(__SSE2__)
        if ((size_t)(q - S->s) + 7 <= S->size) {
          bilinear3(p, q, fx, fy, out);
          continue;
        }
#endif
        out[0] = stk_warp_bilinear(p[0], p[3], q[0], q[3], fx, fy);
        out[1] = stk_warp_bilinear(p[1], p[4], q[1], q[4], fx, fy);
        out[2] = stk_warp_bilinear(p[2], p[5], q[2], q[5], fx, fy);
      } else {
        for (int ch = 0; ch < 3; ch++)
          out[ch] = stk_warp_bilinear(tap3(S, x0, y0, ch), tap3(S, x0 + 1, y0, ch),
                                      tap3(S, x0, y0 + 1, ch), tap3(S, x0 + 1, y0 + 1, ch), fx,
                                      fy);
      }
    }
  }
}

bool stk__aa_fast_warp(const stk__image *src, const stk__image *dst, const double m[6],
                       stk__interp interp, bool constant, const float *fill, float *row) {
  const int64_t lim = (int64_t)1 << 30;
  if (interp != STK__INTERP_LINEAR || src->dtype != STK_DTYPE_UINT8 ||
      dst->dtype != STK_DTYPE_UINT8 || src->c != 3 || dst->c != 3)
    return false;
  if (src->h < 1 || src->w < 1 || dst->h < 1 || dst->w < 1 || src->h >= lim || src->w >= lim)
    return false;
  for (int i = 0; i < 6; i++)
    if (!isfinite(m[i])) return false; /* the general kernel reports it */
  src3 S = {src->data, src->w,   src->h, (size_t)src->w * 3, (size_t)(src->h * src->w * 3),
            fill,      constant};
  size_t n = (size_t)dst->w * 3;
  for (int64_t y = 0; y < dst->h; y++) {
    double sx, sy;
    stk_warp_row_origin(m, y, &sx, &sy);
    row_linear3(&S, sx, sy, m[0], m[3], dst->w, row);
    stk__convert((uint8_t *)dst->data + (size_t)y * n, STK_DTYPE_UINT8, row, STK_DTYPE_FLOAT32,
                 n);
  }
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* Pillow's sharpness                                                                 */
/* ---------------------------------------------------------------------------------- */

/* ImageFilter.SMOOTH of the interior elements [c, rowb - c) of row s (stk_color_smooth_at,
 * the same float32 operations in the same order). */
static void smooth_row(const uint8_t *restrict s, size_t rowb, size_t c, uint8_t *restrict out) {
  const float k1 = (float)(1.0 / 13.0), k5 = (float)(5.0 / 13.0);
  const uint8_t *b = s + rowb, *a = s - rowb;
  for (size_t i = c; i < rowb - c; i++) {
    float ss = 0.5f;
    ss = ss + ((float)b[i - c] * k1 + (float)b[i] * k1 + (float)b[i + c] * k1);
    ss = ss + ((float)s[i - c] * k1 + (float)s[i] * k5 + (float)s[i + c] * k1);
    ss = ss + ((float)a[i - c] * k1 + (float)a[i] * k1 + (float)a[i + c] * k1);
    ss = ss < 0.0f ? 0.0f : ss > 255.0f ? 255.0f : ss;
    out[i] = (uint8_t)(int)ss;
  }
}

/* stk_color_blend1(a[i], b[i], alpha) over [lo, hi), the alpha test out of the loop. */
static void blend_row(const uint8_t *restrict a, const uint8_t *restrict b, size_t lo, size_t hi,
                      float alpha, uint8_t *restrict out) {
  if (alpha >= 0.0f && alpha <= 1.0f) {
    for (size_t i = lo; i < hi; i++) {
      float t = (float)a[i] + alpha * (float)((int)b[i] - (int)a[i]);
      out[i] = (uint8_t)(int)t;
    }
    return;
  }
  for (size_t i = lo; i < hi; i++) {
    float t = (float)a[i] + alpha * (float)((int)b[i] - (int)a[i]);
    t = t <= 0.0f ? 0.0f : t >= 255.0f ? 255.0f : t;
    out[i] = (uint8_t)(int)t;
  }
}

bool stk__aa_fast_pil_sharpness(const stk__image *src, const stk__image *dst, float factor) {
  size_t c = (size_t)src->c, w = (size_t)src->w, rowb = w * c;
  if (src->dtype != STK_DTYPE_UINT8 || rowb > 16384 || c < 1) return false;
  uint8_t sm[16384];
  memcpy(dst->data, src->data, (size_t)src->h * rowb); /* borders: the image itself */
  if (src->h < 3 || src->w < 3) return true;
  for (int64_t y = 1; y + 1 < src->h; y++) {
    const uint8_t *s = (const uint8_t *)src->data + (size_t)y * rowb;
    smooth_row(s, rowb, c, sm);
    blend_row(sm, s, c, rowb - c, factor, (uint8_t *)dst->data + (size_t)y * rowb);
  }
  return true;
}
