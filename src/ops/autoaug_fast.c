/* Specialised uint8 kernels of automatic augmentation (see autoaug_fast.h). Compiled with
 * -O3 -ffp-contract=off (CMakeLists.txt): vectorised, and no multiply-add fused that the
 * general kernels round in two steps. */
#include "autoaug_fast.h"

#include "../core/wide.h"

#include <math.h>
#include <string.h>

#include "../shared/color_math.h"
#include "../shared/geometry_px.h"
#include "image_util.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif

/* The row loops also get an AVX2 copy (WIDE, src/core/wide.h). */

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
static inline void axis_one(double start, double step, int64_t i, double off, double lo, double hi,
                            int *t, float *frac) {
  double v = stk_warp_step(start, step, i) - off;
  v = !(v > lo) ? lo : !(v < hi) ? hi : v;
  int f = (int)v;
  f -= v < (double)f;
  *t = f;
  *frac = (float)(v - (double)f);
}

#if defined(HAVE_AVX2_PATH)
/* axis_block's loop four pixels at a time (AVX2; each lane rounds as axis_one). Returns
 * the pixels done (a multiple of 4). */
__attribute__((target("avx2"))) static int axis_avx2(double start, double step, int64_t i0, int k,
                                                     double off, double lo, double hi, int *t,
                                                     float *frac) {
  const __m256d vlo = _mm256_set1_pd(lo), vhi = _mm256_set1_pd(hi), voff = _mm256_set1_pd(off);
  const __m256d one = _mm256_set1_pd(1.0), four = _mm256_set1_pd(4.0);
  const __m256d vstart = _mm256_set1_pd(start), vstep = _mm256_set1_pd(step);
  __m256d idx = _mm256_set_pd((double)(i0 + 3), (double)(i0 + 2), (double)(i0 + 1), (double)i0);
  int j = 0;
  for (; j + 4 <= k; j += 4, idx = _mm256_add_pd(idx, four)) {
    __m256d v = _mm256_sub_pd(_mm256_add_pd(vstart, _mm256_mul_pd(vstep, idx)), voff);
    v = _mm256_blendv_pd(vlo, v, _mm256_cmp_pd(v, vlo, _CMP_GT_OQ)); /* NaN: lo */
    v = _mm256_blendv_pd(vhi, v, _mm256_cmp_pd(v, vhi, _CMP_LT_OQ));
    __m256d tr = _mm256_cvtepi32_pd(_mm256_cvttpd_epi32(v));
    __m256d fl = _mm256_sub_pd(tr, _mm256_and_pd(_mm256_cmp_pd(v, tr, _CMP_LT_OQ), one));
    _mm_storeu_si128((__m128i *)(t + j), _mm256_cvttpd_epi32(fl));
    _mm_storeu_ps(frac + j, _mm256_cvtpd_ps(_mm256_sub_pd(v, fl)));
  }
  return j;
}
#endif

bool stk__aa_fast_no_avx2 = false;

/* Whether the hand-written AVX2 code runs (warp coordinates, saturation). */
static bool use_avx2(void) {
#if defined(HAVE_AVX2_PATH)
  return !stk__aa_fast_no_avx2 && __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

/* axis_one for pixels i0 .. i0 + k - 1, for linear interpolation (off 0.5, margin 3) or
 * nearest (stk_warp_nearest: off 0, margin 2; v - 0 is v). */
static void axis_block(double start, double step, int64_t i0, int k, int64_t n, double off,
                       double margin, int *t, float *frac) {
  const double lo = -margin, hi = (double)n + margin;
  int j = 0;
  if (step == 0.0) { /* start + 0 * i: the same for every pixel */
    axis_one(start, step, i0, off, lo, hi, t, frac);
    for (j = 1; j < k; j++) t[j] = t[0], frac[j] = frac[0];
    return;
  }
#if defined(HAVE_AVX2_PATH)
  if (use_avx2()) {
    j = axis_avx2(start, step, i0, k, off, lo, hi, t, frac);
    for (; j < k; j++) axis_one(start, step, i0 + j, off, lo, hi, t + j, frac + j);
    return;
  }
#endif
#if defined(__SSE2__)
  /* two pixels per step, each lane rounding as axis_one */
  const __m128d vlo = _mm_set1_pd(lo), vhi = _mm_set1_pd(hi), half = _mm_set1_pd(off);
  const __m128d one = _mm_set1_pd(1.0), vstart = _mm_set1_pd(start), vstep = _mm_set1_pd(step);
  const __m128d two = _mm_set1_pd(2.0);
  __m128d idx = _mm_set_pd((double)(i0 + 1), (double)i0); /* integers: exact sums */
  for (; j + 2 <= k; j += 2, idx = _mm_add_pd(idx, two)) {
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
  for (; j < k; j++) axis_one(start, step, i0 + j, off, lo, hi, t + j, frac + j);
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
    axis_block(x, dx, i0, k, S->w, 0.5, 3.0, xs, ax);
    axis_block(y, dy, i0, k, S->h, 0.5, 3.0, ys, ay);
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
                                      tap3(S, x0, y0 + 1, ch), tap3(S, x0 + 1, y0 + 1, ch), fx, fy);
      }
    }
  }
}

#if defined(HAVE_AVX2_PATH)
/* load4 with SSE4.1's widening load (the same floats). */
__attribute__((target("avx2"))) static inline __m128 load4_avx2(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(v)));
}

__attribute__((target("avx2"))) static inline void bilinear3_avx2(const uint8_t *p,
                                                                  const uint8_t *q, float fx,
                                                                  float fy, float *out) {
  __m128 ax = _mm_set1_ps(fx), ay = _mm_set1_ps(fy);
  __m128 t = lerp4(load4_avx2(p), load4_avx2(p + 3), ax);
  __m128 b = lerp4(load4_avx2(q), load4_avx2(q + 3), ax);
  __m128 r = lerp4(t, b, ay);
  _mm_storel_pi((__m64 *)out, r);
  _mm_store_ss(out + 2, _mm_movehl_ps(r, r));
}

/* row_linear3 compiled for AVX2 (VEX encoding, the widening loads). */
__attribute__((target("avx2"))) static void row_linear3_avx2(const src3 *S, double x, double y,
                                                             double dx, double dy, int64_t n,
                                                             float *out) {
  int xs[BLOCK], ys[BLOCK];
  float ax[BLOCK], ay[BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
    int k = n - i0 < BLOCK ? (int)(n - i0) : BLOCK;
    axis_block(x, dx, i0, k, S->w, 0.5, 3.0, xs, ax);
    axis_block(y, dy, i0, k, S->h, 0.5, 3.0, ys, ay);
    for (int j = 0; j < k; j++, out += 3) {
      int64_t x0 = xs[j], y0 = ys[j];
      float fx = ax[j], fy = ay[j];
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < S->w && y0 + 1 < S->h) {
        const uint8_t *p = S->s + (size_t)y0 * S->stride + (size_t)x0 * 3, *q = p + S->stride;
#if defined(__SSE2__)
        if ((size_t)(q - S->s) + 7 <= S->size) {
          bilinear3_avx2(p, q, fx, fy, out);
          continue;
        }
#endif
        out[0] = stk_warp_bilinear(p[0], p[3], q[0], q[3], fx, fy);
        out[1] = stk_warp_bilinear(p[1], p[4], q[1], q[4], fx, fy);
        out[2] = stk_warp_bilinear(p[2], p[5], q[2], q[5], fx, fy);
      } else {
        for (int ch = 0; ch < 3; ch++)
          out[ch] = stk_warp_bilinear(tap3(S, x0, y0, ch), tap3(S, x0 + 1, y0, ch),
                                      tap3(S, x0, y0 + 1, ch), tap3(S, x0 + 1, y0 + 1, ch), fx, fy);
      }
    }
  }
}

#endif

/* geometry.c's row_nearest_u8 for 3 channels. */
static void row_nearest3(const src3 *S, const uint8_t *fill, double x, double y, double dx,
                         double dy, int64_t n, uint8_t *out) {
  int xs[BLOCK], ys[BLOCK];
  float unused[BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
    int k = n - i0 < BLOCK ? (int)(n - i0) : BLOCK;
    axis_block(x, dx, i0, k, S->w, 0.0, 2.0, xs, unused);
    axis_block(y, dy, i0, k, S->h, 0.0, 2.0, ys, unused);
    for (int j = 0; j < k; j++, out += 3) {
      int64_t xi = xs[j], yi = ys[j];
      if (!(xi >= 0 && yi >= 0 && xi < S->w && yi < S->h)) {
        if (S->constant) {
          out[0] = fill[0], out[1] = fill[1], out[2] = fill[2];
          continue;
        }
        xi = xi < 0 ? 0 : xi >= S->w ? S->w - 1 : xi;
        yi = yi < 0 ? 0 : yi >= S->h ? S->h - 1 : yi;
      }
      const uint8_t *px = S->s + (size_t)yi * S->stride + (size_t)xi * 3;
      out[0] = px[0], out[1] = px[1], out[2] = px[2];
    }
  }
}

/* stk__convert float32 -> uint8 (image_util.c's f32_to_u8, here with an AVX2 copy): whole
 * blocks of 16 add 0.5f, saturate and truncate; the rest round half away from zero in
 * double. */
WIDE static void row_to_u8(const float *restrict s, uint8_t *restrict d, size_t n) {
  size_t body = n - n % 16;
  for (size_t i = 0; i < body; i++) {
    float v = s[i] + 0.5f;
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    d[i] = (uint8_t)(int32_t)v;
  }
  for (size_t i = body; i < n; i++) stk__store_double(d, STK_DTYPE_UINT8, i, s[i]);
}

bool stk__aa_fast_warp(const stk__image *src, const stk__image *dst, const double m[6],
                       stk__interp interp, bool constant, const float *fill, float *row) {
  const int64_t lim = (int64_t)1 << 30;
  /* nearest: with SSE2 alone, only where one coordinate is constant along a row
   * (shear_x, translations); with both moving geometry.c's scalar loop was as fast */
  bool nearest_ok = interp == STK__INTERP_NEAREST && (use_avx2() || m[0] == 0.0 || m[3] == 0.0);
  if ((interp != STK__INTERP_LINEAR && !nearest_ok) || src->dtype != STK_DTYPE_UINT8 ||
      dst->dtype != STK_DTYPE_UINT8 || src->c != 3 || dst->c != 3)
    return false;
  if (src->h < 1 || src->w < 1 || dst->h < 1 || dst->w < 1 || src->h >= lim || src->w >= lim)
    return false;
  for (int i = 0; i < 6; i++)
    if (!isfinite(m[i])) return false; /* the general kernel reports it */
  src3 S = {src->data, src->w,  src->h, (size_t)src->w * 3, (size_t)(src->h * src->w * 3),
            fill,      constant};
  size_t n = (size_t)dst->w * 3;
  uint8_t fill8[3] = {0, 0, 0}; /* rounded as any output (geometry.c) */
  if (constant) stk__convert(fill8, STK_DTYPE_UINT8, fill, STK_DTYPE_FLOAT32, 3);
  for (int64_t y = 0; y < dst->h; y++) {
    double sx, sy;
    stk_warp_row_origin(m, y, &sx, &sy);
    if (interp == STK__INTERP_NEAREST) {
      row_nearest3(&S, fill8, sx, sy, m[0], m[3], dst->w, (uint8_t *)dst->data + (size_t)y * n);
      continue;
    }
#if defined(HAVE_AVX2_PATH)
    if (use_avx2())
      row_linear3_avx2(&S, sx, sy, m[0], m[3], dst->w, row);
    else
#endif
      row_linear3(&S, sx, sy, m[0], m[3], dst->w, row);
    row_to_u8(row, (uint8_t *)dst->data + (size_t)y * n, n);
  }
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* Pillow's sharpness                                                                 */
/* ---------------------------------------------------------------------------------- */

/* ImageFilter.SMOOTH of the interior elements [c, rowb - c) of row s (stk_color_smooth_at,
 * the same float32 operations in the same order). */
WIDE static void smooth_row(const uint8_t *restrict s, size_t rowb, size_t c,
                            uint8_t *restrict out) {
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
WIDE static void blend_row(const uint8_t *restrict a, const uint8_t *restrict b, size_t lo,
                           size_t hi, float alpha, uint8_t *restrict out) {
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

/* stk__pil_color (ImageEnhance.Color) for 3 channels: the Pillow luma of each pixel
 * spread over its three elements, then blended with the row as blend_row does. */
bool stk__aa_fast_pil_color(const stk__image *src, const stk__image *dst, float factor) {
  size_t w = (size_t)src->w, rowb = w * 3;
  if (src->dtype != STK_DTYPE_UINT8 || src->c != 3 || rowb > 16384) return false;
  uint8_t l[16384];
  for (int64_t y = 0; y < src->h; y++) {
    const uint8_t *s = (const uint8_t *)src->data + (size_t)y * rowb;
    for (size_t x = 0; x < rowb; x += 3)
      l[x] = l[x + 1] = l[x + 2] = stk_color_pil_luma(s[x], s[x + 1], s[x + 2]);
    blend_row(l, s, 0, rowb, factor, (uint8_t *)dst->data + (size_t)y * rowb);
  }
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* DALI's contrast centre and sharpness                                               */
/* ---------------------------------------------------------------------------------- */

double stk__aa_fast_mean_luma(const stk__image *img) {
  /* The general code sums the elements in double: every partial sum is an integer below
   * 2^53, so exact, and integer sums give the same totals in any order. */
  size_t c = (size_t)img->c, row = (size_t)img->w * c;
  uint64_t sums[3] = {0, 0, 0};
  for (int64_t y = 0; y < img->h; y++) {
    const uint8_t *p = (const uint8_t *)img->data + (size_t)y * row;
    size_t i = 0;
    while (i + 48 <= row) {   /* at most 2^16 pieces per pass: lanes stay below 2^32 */
      uint32_t acc[48] = {0}; /* element j of each 48-element piece: channel j % 3 */
      for (size_t end = i + 48 * (size_t)65536; i + 48 <= row && i < end; i += 48)
        for (int j = 0; j < 48; j++) acc[j] += p[i + (size_t)j];
      for (int j = 0; j < 48; j++) sums[c == 3 ? j % 3 : 0] += acc[j];
    }
    for (; i < row; i++) sums[c == 3 ? i % 3 : 0] += p[i];
  }
  double n = (double)(img->h * img->w) * (c == 3 ? 1.0 : (double)c);
  if (n == 0) return 0.0;
  if (c != 3) return (double)sums[0] / n;
  return (0.299 * (double)sums[0] + 0.587 * (double)sums[1] + 0.114 * (double)sums[2]) / n;
}

/* Row r of the image bordered by one pixel each side with reflect_101, as floats. */
static void padded_row(const stk__image *src, int64_t r, float *out) {
  size_t c = (size_t)src->c, w = (size_t)src->w;
  const uint8_t *s = (const uint8_t *)src->data + (size_t)r * w * c;
  size_t l = (size_t)stk__border_index(-1, src->w, STK__BORDER_REFLECT_101) * c;
  size_t rr = (size_t)stk__border_index(src->w, src->w, STK__BORDER_REFLECT_101) * c;
  for (size_t k = 0; k < w * c; k++) out[c + k] = (float)s[k];
  for (size_t k = 0; k < c; k++) out[k] = (float)s[l + k], out[(w + 1) * c + k] = (float)s[rr + k];
}

/* One output row: filters.c's nine axpy passes (acc = 0, then acc += w * x per tap in
 * kernel order) folded into one pass, each element's sum in the same order. The passes
 * skip zero weights; adding w * x = +-0 to a sum that starts at +0 never changes it (a sum
 * is -0 only when both terms are), so including them gives the same floats. */
WIDE static void conv3_row(const float *restrict r0, const float *restrict r1,
                           const float *restrict r2, size_t c, const float *restrict k,
                           float *restrict out, size_t n) {
  const float k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4], k5 = k[5], k6 = k[6],
              k7 = k[7], k8 = k[8];
  for (size_t i = 0; i < n; i++) {
    float a = 0.0f;
    a = a + k0 * r0[i];
    a = a + k1 * r0[i + c];
    a = a + k2 * r0[i + 2 * c];
    a = a + k3 * r1[i];
    a = a + k4 * r1[i + c];
    a = a + k5 * r1[i + 2 * c];
    a = a + k6 * r2[i];
    a = a + k7 * r2[i + c];
    a = a + k8 * r2[i + 2 * c];
    out[i] = a;
  }
}

#define MAX_ROW 4096 /* elements of a padded row */

bool stk__aa_fast_conv3x3(const stk__image *src, const float k[9], float *dst) {
  size_t c = (size_t)src->c, n = (size_t)src->w * c;
  if (src->dtype != STK_DTYPE_UINT8 || c < 1 || src->h < 1 || src->w < 1 || n + 2 * c > MAX_ROW)
    return false;
  if (stk__border_index(-1, src->h, STK__BORDER_REFLECT_101) < 0 ||
      stk__border_index(src->h, src->h, STK__BORDER_REFLECT_101) < 0 ||
      stk__border_index(-1, src->w, STK__BORDER_REFLECT_101) < 0 ||
      stk__border_index(src->w, src->w, STK__BORDER_REFLECT_101) < 0)
    return false;
  float rows[3][MAX_ROW];
  int64_t held[3] = {-1, -1, -1}; /* source row in each slot */
  for (int64_t y = 0; y < src->h; y++) {
    const float *r[3];
    for (int i = 0; i < 3; i++) {
      int64_t sy = stk__border_index(y - 1 + i, src->h, STK__BORDER_REFLECT_101);
      int slot = (int)(sy % 3);
      if (held[slot] != sy) padded_row(src, sy, rows[slot]), held[slot] = sy;
      r[i] = rows[slot];
    }
    conv3_row(r[0], r[1], r[2], c, k, dst + (size_t)y * n, n);
  }
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* DALI's saturation: a 3x3 colour matrix                                             */
/* ---------------------------------------------------------------------------------- */

/* One row of color.c's affine_row_u8 + stk__from_f64 for 3 -> 3 channels: its tables
 * hold m[k] * v, computed here directly (the same double product), summed in the same
 * order and rounded by the same rule. */
WIDE static void affine3_row(const uint8_t *restrict in, uint8_t *restrict out, size_t w,
                             const double *restrict m, const double *restrict off) {
  for (size_t x = 0; x < w; x++) {
    double r = in[3 * x], g = in[3 * x + 1], b = in[3 * x + 2];
    for (int o = 0; o < 3; o++) {
      double v = off[o] + m[3 * o] * r + m[3 * o + 1] * g + m[3 * o + 2] * b;
      out[3 * x + (size_t)o] = !(v > 0.0) ? 0 : v >= 254.5 ? 255 : (uint8_t)(int)(v + 0.5);
    }
  }
}

#if defined(HAVE_AVX2_PATH)
/* affine3_row with the three outputs of a pixel in the lanes of one AVX2 register: lane o
 * sums ((off[o] + m[3o] r) + m[3o + 1] g) + m[3o + 2] b and rounds as stk__from_f64. */
__attribute__((target("avx2"))) static void affine3_row_avx2(const uint8_t *in, uint8_t *out,
                                                             size_t w, const double *m,
                                                             const double *off) {
  const __m256d c0 = _mm256_set_pd(0, m[6], m[3], m[0]), c1 = _mm256_set_pd(0, m[7], m[4], m[1]);
  const __m256d c2 = _mm256_set_pd(0, m[8], m[5], m[2]),
                f = _mm256_set_pd(0, off[2], off[1], off[0]);
  const __m256d half = _mm256_set1_pd(0.5), zero = _mm256_setzero_pd();
  const __m256d top = _mm256_set1_pd(254.5), full = _mm256_set1_pd(255.0);
  for (size_t x = 0; x < w; x++, in += 3, out += 3) {
    __m256d v = _mm256_add_pd(f, _mm256_mul_pd(c0, _mm256_set1_pd((double)in[0])));
    v = _mm256_add_pd(v, _mm256_mul_pd(c1, _mm256_set1_pd((double)in[1])));
    v = _mm256_add_pd(v, _mm256_mul_pd(c2, _mm256_set1_pd((double)in[2])));
    __m256d r = _mm256_blendv_pd(_mm256_add_pd(v, half), full, _mm256_cmp_pd(v, top, _CMP_GE_OQ));
    r = _mm256_blendv_pd(zero, r, _mm256_cmp_pd(v, zero, _CMP_GT_OQ)); /* NaN: 0 */
    __m128i i = _mm256_cvttpd_epi32(r);
    i = _mm_packus_epi16(_mm_packs_epi32(i, i), i);
    uint32_t b = (uint32_t)_mm_cvtsi128_si32(i);
    out[0] = (uint8_t)b, out[1] = (uint8_t)(b >> 8), out[2] = (uint8_t)(b >> 16);
  }
}
#endif

bool stk__aa_fast_affine3(const stk__image *src, const stk__image *dst, const double m[9],
                          const double off[3]) {
  if (src->dtype != STK_DTYPE_UINT8 || dst->dtype != STK_DTYPE_UINT8 || src->c != 3 ||
      dst->c != 3 || src->h != dst->h || src->w != dst->w)
    return false;
  size_t row = (size_t)src->w * 3;
  for (int64_t y = 0; y < src->h; y++)
#if defined(HAVE_AVX2_PATH)
    if (use_avx2())
      affine3_row_avx2((const uint8_t *)src->data + (size_t)y * row,
                       (uint8_t *)dst->data + (size_t)y * row, (size_t)src->w, m, off);
    else
#endif
      affine3_row((const uint8_t *)src->data + (size_t)y * row,
                  (uint8_t *)dst->data + (size_t)y * row, (size_t)src->w, m, off);
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* Histograms (equalize, auto_contrast)                                               */
/* ---------------------------------------------------------------------------------- */

bool stk__aa_fast_histograms3(const stk__image *src, uint64_t *hist) {
  size_t n = (size_t)(src->h * src->w);
  if (src->dtype != STK_DTYPE_UINT8 || src->c != 3 || n >= ((size_t)1 << 31)) return false;
  /* two sets of counts, even and odd pixels, so that runs of equal values do not wait on
   * the previous increment of the same counter; the same integer totals */
  uint32_t h[2][3 * 256];
  memset(h, 0, sizeof h);
  const uint8_t *p = src->data;
  size_t i = 0;
  for (; i + 2 <= n; i += 2, p += 6) {
    h[0][p[0]]++, h[0][256 + p[1]]++, h[0][512 + p[2]]++;
    h[1][p[3]]++, h[1][256 + p[4]]++, h[1][512 + p[5]]++;
  }
  if (i < n) h[0][p[0]]++, h[0][256 + p[1]]++, h[0][512 + p[2]]++;
  for (int k = 0; k < 3 * 256; k++) hist[k] = (uint64_t)h[0][k] + h[1][k];
  return true;
}
