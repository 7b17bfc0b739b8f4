/* The real-input DFT of the audio operators (audio_fft.h). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../shared/audio_math.h"
#include "audio_fft.h"

bool stk__rfft_plan_init(stk__rfft_plan *p, int64_t n) {
  *p = (stk__rfft_plan){.n = n, .pow2 = n > 0 && (n & (n - 1)) == 0};
  p->cos_t = malloc(sizeof(double) * (size_t)n);
  p->sin_t = malloc(sizeof(double) * (size_t)n);
  if (p->pow2) p->bitrev = malloc(sizeof(int64_t) * (size_t)n);
  if (!p->cos_t || !p->sin_t || (p->pow2 && !p->bitrev)) {
    stk__rfft_plan_free(p);
    return false;
  }
  for (int64_t j = 0; j < n; j++) {
    double a = 2.0 * STK_AUDIO_PI * (double)j / (double)n;
    p->cos_t[j] = cos(a);
    p->sin_t[j] = sin(a);
  }
  if (p->pow2) {
    int bits = 0;
    while (((int64_t)1 << bits) < n) bits++;
    for (int64_t j = 0; j < n; j++) {
      int64_t r = 0;
      for (int b = 0; b < bits; b++) r |= ((j >> b) & 1) << (bits - 1 - b);
      p->bitrev[j] = r;
    }
  }
  return true;
}

void stk__rfft_plan_free(stk__rfft_plan *p) {
  free(p->cos_t);
  free(p->sin_t);
  free(p->bitrev);
  p->cos_t = p->sin_t = NULL;
  p->bitrev = NULL;
}

size_t stk__rfft_scratch_doubles(const stk__rfft_plan *p) { return 2 * (size_t)p->n; }

static float magnitude(double re, double im, int power) {
  double m2 = re * re + im * im;
  return (float)(power == 2 ? m2 : sqrt(m2));
}

/* In-place iterative radix-2 FFT (forward, e^{-i...}) of re/im after bit reversal. */
static void fft_pow2(const stk__rfft_plan *p, double *re, double *im) {
  int64_t n = p->n;
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len >> 1, step = n / len;
    for (int64_t base = 0; base < n; base += len) {
      for (int64_t j = 0; j < half; j++) {
        double wr = p->cos_t[j * step], wi = -p->sin_t[j * step];
        int64_t a = base + j, b = a + half;
        double tr = re[b] * wr - im[b] * wi, ti = re[b] * wi + im[b] * wr;
        re[b] = re[a] - tr, im[b] = im[a] - ti;
        re[a] += tr, im[a] += ti;
      }
    }
  }
}

void stk__rfft_spectrum(const stk__rfft_plan *p, const double *in, int power, float *out,
                        int64_t out_stride, double *scratch) {
  int64_t n = p->n, bins = n / 2 + 1;
  if (p->pow2) {
    double *re = scratch, *im = scratch + n;
    for (int64_t j = 0; j < n; j++) re[p->bitrev[j]] = in[j], im[p->bitrev[j]] = 0.0;
    fft_pow2(p, re, im);
    for (int64_t k = 0; k < bins; k++) out[k * out_stride] = magnitude(re[k], im[k], power);
    return;
  }
  for (int64_t k = 0; k < bins; k++) {
    double re = 0.0, im = 0.0;
    int64_t idx = 0;
    for (int64_t j = 0; j < n; j++) {
      re += in[j] * p->cos_t[idx];
      im -= in[j] * p->sin_t[idx];
      idx += k;
      if (idx >= n) idx -= n;
    }
    out[k * out_stride] = magnitude(re, im, power);
  }
}
