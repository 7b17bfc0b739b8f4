/* The real-input DFT of the audio operators (audio_fft.h).
 *
 * Layout: STK__RFFT_LANES signals side by side, element j of every signal in one vector
 * (`lanes`, GCC's vector extension: one AVX2 register in the WIDE copy, two SSE2 ones in
 * the baseline copy). The complex FFT keeps real and imaginary parts in two arrays of
 * half x LANES doubles. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/wide.h"
#include "../shared/audio_math.h"
#include "audio_fft.h"

#define L      STK__RFFT_LANES
/* The pieces of spectra_fast, compiled into each of its WIDE copies. */
#define INLINE static inline __attribute__((always_inline))

/* aligned(8): loads and stores of any double address (scratch, caller's buffers). */
typedef double lanes __attribute__((vector_size(8 * L), aligned(8)));
typedef float flanes __attribute__((vector_size(4 * L), aligned(4)));
#define AT(a, i) (*(lanes *)((a) + (int64_t)(i)*L))

/* cos and sin of 2 pi k / n, reduced to the first octant when 8 divides n, so that the
 * table's symmetric entries are exact mirror images (cos = sin at the octant, 0 and 1
 * exactly at the quadrants). */
static void unit_root(int64_t k, int64_t n, double *c, double *s) {
  if (n % 8 != 0) {
    double a = 2.0 * STK_AUDIO_PI * (double)k / (double)n;
    *c = cos(a), *s = sin(a);
    return;
  }
  int64_t q = n / 4, quad = (k / q) % 4, r = k % q;
  double cr, sr;
  if (2 * r > q) {
    double a = 2.0 * STK_AUDIO_PI * (double)(q - r) / (double)n;
    cr = sin(a), sr = cos(a);
  } else {
    double a = 2.0 * STK_AUDIO_PI * (double)r / (double)n;
    cr = cos(a), sr = sin(a);
  }
  double cs[4][2] = {{cr, sr}, {-sr, cr}, {-cr, -sr}, {sr, -cr}};
  *c = cs[quad][0], *s = cs[quad][1];
}

static bool plan_direct(stk__rfft_plan *p) {
  p->cos_t = malloc(sizeof(double) * (size_t)p->n);
  p->sin_t = malloc(sizeof(double) * (size_t)p->n);
  if (!p->cos_t || !p->sin_t) return false;
  for (int64_t j = 0; j < p->n; j++) unit_root(j, p->n, &p->cos_t[j], &p->sin_t[j]);
  return true;
}

static bool plan_fast(stk__rfft_plan *p) {
  int64_t n = p->n, half = n / 2;
  p->half = half;
  p->rev = malloc(sizeof(int32_t) * (size_t)half);
  p->tw = malloc(sizeof(double) * 2 * (size_t)(half > 1 ? half : 1));
  p->root = malloc(sizeof(double) * 2 * (size_t)(half + 1));
  if (!p->rev || !p->tw || !p->root) return false;
  int bits = 0;
  while (((int64_t)1 << bits) < half) bits++;
  for (int64_t j = 0; j < half; j++) {
    int64_t r = 0;
    for (int b = 0; b < bits; b++) r |= ((j >> b) & 1) << (bits - 1 - b);
    p->rev[j] = (int32_t)r;
  }
  for (int64_t len = 2; len <= half; len <<= 1) {
    double *w = p->tw + 2 * (len / 2 - 1);
    for (int64_t j = 0; j < len / 2; j++) {
      unit_root(j * (n / len), n, &w[2 * j], &w[2 * j + 1]);
      w[2 * j + 1] = -w[2 * j + 1];
    }
  }
  for (int64_t k = 0; k <= half; k++) {
    unit_root(k, n, &p->root[2 * k], &p->root[2 * k + 1]);
    p->root[2 * k + 1] = -p->root[2 * k + 1];
  }
  return true;
}

bool stk__rfft_plan_init(stk__rfft_plan *p, int64_t n) {
  *p = (stk__rfft_plan){.n = n, .fast = n >= 2 && (n & (n - 1)) == 0};
  if (n >= 1 && (p->fast ? plan_fast(p) : plan_direct(p))) return true;
  stk__rfft_plan_free(p);
  return false;
}

void stk__rfft_plan_free(stk__rfft_plan *p) {
  free(p->cos_t);
  free(p->sin_t);
  free(p->rev);
  free(p->tw);
  free(p->root);
  *p = (stk__rfft_plan){0};
}

size_t stk__rfft_scratch_doubles(const stk__rfft_plan *p) { return (size_t)p->n * L; }

/* ---- the fast path: complex FFT of half points, then the split step ---- */

/* Packs z[j] = x[2j] + i x[2j+1] in bit-reversed order and runs the first two stages
 * (spans 1 and 2; twiddles 1 and -i) on the way: output block 4m..4m+3 gathers
 * z[q], z[q + h/2], z[q + h/4], z[q + 3h/4] with q = rev[4m]. Needs half >= 4. */
INLINE void first_radix4(const stk__rfft_plan *p, const double *in, double *re, double *im) {
  int64_t h = p->half, q1 = h / 2, q2 = h / 4, q3 = 3 * h / 4;
  for (int64_t m = 0; m < h; m += 4) {
    int64_t q = p->rev[m];
    lanes y0r = AT(in, 2 * q), y0i = AT(in, 2 * q + 1);
    lanes y1r = AT(in, 2 * (q + q1)), y1i = AT(in, 2 * (q + q1) + 1);
    lanes y2r = AT(in, 2 * (q + q2)), y2i = AT(in, 2 * (q + q2) + 1);
    lanes y3r = AT(in, 2 * (q + q3)), y3i = AT(in, 2 * (q + q3) + 1);
    lanes a0r = y0r + y1r, a0i = y0i + y1i, a1r = y0r - y1r, a1i = y0i - y1i;
    lanes a2r = y2r + y3r, a2i = y2i + y3i, a3r = y2r - y3r, a3i = y2i - y3i;
    AT(re, m) = a0r + a2r, AT(im, m) = a0i + a2i;
    AT(re, m + 2) = a0r - a2r, AT(im, m + 2) = a0i - a2i;
    /* (-i) a3 = a3i - i a3r */
    AT(re, m + 1) = a1r + a3i, AT(im, m + 1) = a1i - a3r;
    AT(re, m + 3) = a1r - a3i, AT(im, m + 3) = a1i + a3r;
  }
}

/* Packs z in bit-reversed order without computing (half < 4). */
INLINE void pack(const stk__rfft_plan *p, const double *in, double *re, double *im) {
  for (int64_t j = 0; j < p->half; j++) {
    AT(re, p->rev[j]) = AT(in, 2 * j);
    AT(im, p->rev[j]) = AT(in, 2 * j + 1);
  }
}

/* One radix-2 butterfly: (a, b) <- (a + w b, a - w b). */
INLINE void bfly2(double *re, double *im, int64_t a, int64_t b, double wr, double wi) {
  lanes br = AT(re, b), bi = AT(im, b), ar = AT(re, a), ai = AT(im, a);
  lanes tr = br * wr - bi * wi, ti = br * wi + bi * wr;
  AT(re, b) = ar - tr, AT(im, b) = ai - ti;
  AT(re, a) = ar + tr, AT(im, a) = ai + ti;
}

/* Two radix-2 stages at once (spans s and 2s) over blocks of 4s: each element is loaded
 * and stored once instead of twice. The butterflies are the radix-2 ones, operation for
 * operation: the second stage's twiddle for j + s is -i times the one for j exactly
 * (unit_root's symmetry), applied as a swap and a sign. */
INLINE void stage_pair(const stk__rfft_plan *p, double *re, double *im, int64_t s) {
  const double *wa = p->tw + 2 * (s - 1), *wb = p->tw + 2 * (2 * s - 1);
  for (int64_t base = 0; base < p->half; base += 4 * s) {
    for (int64_t j = 0; j < s; j++) {
      int64_t i0 = base + j, i1 = i0 + s, i2 = i1 + s, i3 = i2 + s;
      double ar = wa[2 * j], ai = wa[2 * j + 1], br = wb[2 * j], bi = wb[2 * j + 1];
      lanes x0r = AT(re, i0), x0i = AT(im, i0), x1r = AT(re, i1), x1i = AT(im, i1);
      lanes x2r = AT(re, i2), x2i = AT(im, i2), x3r = AT(re, i3), x3i = AT(im, i3);
      lanes t1r = x1r * ar - x1i * ai, t1i = x1r * ai + x1i * ar;
      lanes t3r = x3r * ar - x3i * ai, t3i = x3r * ai + x3i * ar;
      lanes y0r = x0r + t1r, y0i = x0i + t1i, y1r = x0r - t1r, y1i = x0i - t1i;
      lanes y2r = x2r + t3r, y2i = x2i + t3i, y3r = x2r - t3r, y3i = x2i - t3i;
      lanes u2r = y2r * br - y2i * bi, u2i = y2r * bi + y2i * br;
      /* (-i w) y3 = -i (w y3): real part Im(w y3), imaginary part -Re(w y3) */
      lanes u3r = y3r * bi + y3i * br, u3i = -(y3r * br - y3i * bi);
      AT(re, i0) = y0r + u2r, AT(im, i0) = y0i + u2i;
      AT(re, i2) = y0r - u2r, AT(im, i2) = y0i - u2i;
      AT(re, i1) = y1r + u3r, AT(im, i1) = y1i + u3i;
      AT(re, i3) = y1r - u3r, AT(im, i3) = y1i - u3i;
    }
  }
}

/* The stages of butterfly span `from` and above: in pairs, the last one alone. */
INLINE void stages(const stk__rfft_plan *p, double *re, double *im, int64_t from) {
  int64_t span = from;
  for (; 2 * span < p->half; span <<= 2) stage_pair(p, re, im, span);
  for (; span < p->half; span <<= 1) {
    const double *w = p->tw + 2 * (span - 1);
    for (int64_t base = 0; base < p->half; base += 2 * span)
      for (int64_t j = 0; j < span; j++)
        bfly2(re, im, base + j, base + j + span, w[2 * j], w[2 * j + 1]);
  }
}

/* Writes one bin's values (vector v) of the used lanes. */
INLINE void put_bin(float *out, int64_t lane_stride, int used, const double *v) {
  if (lane_stride == 1 && used == L) {
    *(flanes *)out = __builtin_convertvector(*(const lanes *)v, flanes);
    return;
  }
  for (int l = 0; l < used; l++) out[l * lane_stride] = (float)v[l];
}

/* The split step: X_k = E_k + W^k O_k with E, O the transforms of the even and odd
 * samples, E_k = (Z_k + conj Z_{h-k}) / 2, O_k = -i (Z_k - conj Z_{h-k}) / 2,
 * W = e^{-2 pi i / n}; computed as 2 X_k (the halvings folded into a final exact 1/4). */
INLINE void split_power(const stk__rfft_plan *p, const double *re, const double *im, int used,
                        int power, float *out, int64_t bin_stride, int64_t lane_stride) {
  int64_t h = p->half;
  for (int64_t k = 0; k <= h; k++) {
    int64_t a = k == h ? 0 : k, b = k == 0 ? 0 : h - k;
    lanes ar = AT(re, a), ai = AT(im, a), br = AT(re, b), bi = -AT(im, b);
    lanes er = ar + br, ei = ai + bi, odr = ai - bi, odi = br - ar;
    double wr = p->root[2 * k], wi = p->root[2 * k + 1];
    lanes xr = er + (odr * wr - odi * wi), xi = ei + (odr * wi + odi * wr);
    lanes pw = (xr * xr + xi * xi) * 0.25;
    double v[L];
    memcpy(v, &pw, sizeof v);
    if (power == 1)
      for (int l = 0; l < L; l++) v[l] = sqrt(v[l]);
    put_bin(out + k * bin_stride, lane_stride, used, v);
  }
}

WIDE static void spectra_fast(const stk__rfft_plan *p, const double *in, int used, int power,
                              float *out, int64_t bin_stride, int64_t lane_stride,
                              double *scratch) {
  double *re = scratch, *im = scratch + p->half * L;
  if (p->half >= 4) {
    first_radix4(p, in, re, im);
    stages(p, re, im, 4);
  } else {
    pack(p, in, re, im);
    stages(p, re, im, 1);
  }
  split_power(p, re, im, used, power, out, bin_stride, lane_stride);
}

/* ---- loading ---- */

typedef int64_t lane_idx __attribute__((vector_size(8 * L)));

/* Rows r[l] (4 samples of signal l) to columns (sample j of the 4 signals) at dst. */
INLINE void transpose4(const lanes r[4], double *dst) {
  lanes t0 = __builtin_shuffle(r[0], r[1], (lane_idx){0, 4, 2, 6});
  lanes t1 = __builtin_shuffle(r[0], r[1], (lane_idx){1, 5, 3, 7});
  lanes t2 = __builtin_shuffle(r[2], r[3], (lane_idx){0, 4, 2, 6});
  lanes t3 = __builtin_shuffle(r[2], r[3], (lane_idx){1, 5, 3, 7});
  AT(dst, 0) = __builtin_shuffle(t0, t2, (lane_idx){0, 1, 4, 5});
  AT(dst, 1) = __builtin_shuffle(t1, t3, (lane_idx){0, 1, 4, 5});
  AT(dst, 2) = __builtin_shuffle(t0, t2, (lane_idx){2, 3, 6, 7});
  AT(dst, 3) = __builtin_shuffle(t1, t3, (lane_idx){2, 3, 6, 7});
}

WIDE void stk__rfft_load(const stk__rfft_plan *p, const double *const src[STK__RFFT_LANES],
                         const double *window, int64_t len, double *buf) {
  int64_t t = 0;
#if STK__RFFT_LANES == 4
  for (; t + 4 <= len; t += 4) {
    lanes w = *(const lanes *)(window + t), r[4];
    for (int l = 0; l < 4; l++) r[l] = *(const lanes *)(src[l] + t) * w;
    transpose4(r, buf + t * L);
  }
#endif
  for (; t < len; t++)
    for (int l = 0; l < L; l++) buf[t * L + l] = src[l][t] * window[t];
  memset(buf + len * L, 0, sizeof(double) * (size_t)((p->n - len) * L));
}

/* ---- any n: the direct DFT, one lane at a time ---- */

static void spectrum_direct(const stk__rfft_plan *p, const double *x, int power, float *out,
                            int64_t bin_stride) {
  int64_t n = p->n;
  for (int64_t k = 0; k <= n / 2; k++) {
    double re = 0.0, im = 0.0;
    int64_t idx = 0;
    for (int64_t j = 0; j < n; j++) {
      re += x[j] * p->cos_t[idx];
      im -= x[j] * p->sin_t[idx];
      idx += k;
      if (idx >= n) idx -= n;
    }
    double m2 = re * re + im * im;
    out[k * bin_stride] = (float)(power == 2 ? m2 : sqrt(m2));
  }
}

void stk__rfft_spectra(const stk__rfft_plan *p, const double *in, int used, int power, float *out,
                       int64_t bin_stride, int64_t lane_stride, double *scratch) {
  if (p->fast) {
    spectra_fast(p, in, used, power, out, bin_stride, lane_stride, scratch);
    return;
  }
  for (int l = 0; l < used; l++) {
    for (int64_t j = 0; j < p->n; j++) scratch[j] = in[j * L + l];
    spectrum_direct(p, scratch, power, out + l * lane_stride, bin_stride);
  }
}
