/*
 * Per-pixel arithmetic of the image-effect operators (water, sphere, jitter,
 * experimental.warp_perspective, experimental.remap, experimental.median_blur /
 * dilate / erode, experimental.debayer, clahe), shared by the CPU operators
 * (src/ops/effects_*.c) and the CUDA kernels (src/cuda/effects.cu): both backends call
 * the same inline functions for every output element, so the CPU tests exercise the
 * GPU's maths too.
 *
 * Common subset of C11 and C++ (STK_HD, gpu_common.h). Coordinates are pixel-edge
 * coordinates: (0, 0) is the top-left corner of the first pixel, whose centre is at
 * (0.5, 0.5). Sampling is in float32, each step rounded (STK_F*), so the device gives the
 * same sums as the host.
 */
#ifndef STOKER_SHARED_EFFECTS_PX_H
#define STOKER_SHARED_EFFECTS_PX_H

#include "gpu_common.h"
#include "noise_common.h"
#include "stoker/stoker.h" /* stk_dtype */

#if defined(__CUDA_ARCH__)
#define STK_FX_FSUB(a, b) __fsub_rn((a), (b))
#else
#define STK_FX_FSUB(a, b) ((a) - (b))
#endif

/* Border modes (DALI / CV-CUDA names), for out-of-image taps. */
enum {
  STK_FX_BORDER_CONSTANT = 0,    /* the fill value */
  STK_FX_BORDER_REPLICATE = 1,   /* aaa|abcd|ddd */
  STK_FX_BORDER_REFLECT = 2,     /* cba|abcd|dcb */
  STK_FX_BORDER_REFLECT_101 = 3, /* dcb|abcd|cba */
  STK_FX_BORDER_WRAP = 4         /* bcd|abcd|abc */
};
#define STK_FX_BORDER_CHOICES "constant|replicate|reflect|reflect_101|wrap"

/* Interpolation (the STK_GPU_INTERP_* values). */
enum { STK_FX_NEAREST = 0, STK_FX_LINEAR = 1, STK_FX_CUBIC = 2 };

/* Where index i of an axis of n >= 1 pixels reads from under `border`: an index in
 * [0, n), or -1 (constant border outside). Reflections repeat as often as needed. */
STK_HD long long stk_fx_border(long long i, long long n, int border) {
  if (i >= 0 && i < n) return i;
  if (border == STK_FX_BORDER_CONSTANT) return -1;
  if (border == STK_FX_BORDER_REPLICATE) return i < 0 ? 0 : n - 1;
  if (border == STK_FX_BORDER_WRAP) {
    long long r = i % n;
    return r < 0 ? r + n : r;
  }
  if (n == 1) return 0;
  /* reflect: period 2n, mirrored about -0.5; reflect_101: period 2n - 2, about 0 */
  long long p = border == STK_FX_BORDER_REFLECT ? 2 * n : 2 * n - 2;
  long long r = i % p;
  if (r < 0) r += p;
  if (r < n) return r;
  return border == STK_FX_BORDER_REFLECT ? p - 1 - r : p - r;
}

/* Element access for the effect operators' types: uint8, uint16, int16, float32. */
STK_HD float stk_fx_load(const void *p, int dtype, long long i) {
  switch (dtype) {
    case STK_DTYPE_UINT8:
      return (float)((const uint8_t *)p)[i];
    case STK_DTYPE_UINT16:
      return (float)((const uint16_t *)p)[i];
    case STK_DTYPE_INT16:
      return (float)((const int16_t *)p)[i];
    default:
      return ((const float *)p)[i];
  }
}

/* Stores v: integers rounded half away from zero and saturated (NaN gives 0). */
STK_HD void stk_fx_store(void *p, int dtype, long long i, float v) {
  if (dtype == STK_DTYPE_FLOAT32) {
    ((float *)p)[i] = v;
    return;
  }
  float lo = dtype == STK_DTYPE_INT16 ? -32768.0f : 0.0f;
  float hi = dtype == STK_DTYPE_UINT8 ? 255.0f : dtype == STK_DTYPE_UINT16 ? 65535.0f : 32767.0f;
  float r = !(v == v) ? 0.0f
            : v < lo  ? lo
            : v > hi  ? hi
                      : (v < 0 ? -floorf(0.5f - v) : floorf(v + 0.5f));
  if (dtype == STK_DTYPE_UINT8)
    ((uint8_t *)p)[i] = (uint8_t)r;
  else if (dtype == STK_DTYPE_UINT16)
    ((uint16_t *)p)[i] = (uint16_t)r;
  else
    ((int16_t *)p)[i] = (int16_t)r;
}

/* A dense HWC image as the samplers see it. */
typedef struct {
  const void *data;
  int dtype;
  long long h, w, c;
} stk_fx_image;

/* Tap (x, y), channel ch, with the border rule; `fill` for constant borders. */
STK_HD float stk_fx_tap(const stk_fx_image *im, long long x, long long y, long long ch, int border,
                        float fill) {
  long long xi = stk_fx_border(x, im->w, border), yi = stk_fx_border(y, im->h, border);
  if (xi < 0 || yi < 0) return fill;
  return stk_fx_load(im->data, im->dtype, (yi * im->w + xi) * im->c + ch);
}

/* Keeps a coordinate (NaN included) within `margin` pixels of an axis of n pixels, so it
 * converts to an integer safely. The samplers use a margin of 2^30: reflect and wrap
 * borders must see far-away coordinates as they are. */
STK_HD double stk_fx_tame(double v, long long n, double margin) {
  if (!(v > -margin)) return -margin;
  if (!(v < (double)n + margin)) return (double)n + margin;
  return v;
}

#define STK_FX_FAR 1073741824.0

STK_HD long long stk_fx_floor(double v) {
  long long i = (long long)v;
  return i - (v < (double)i);
}

/* OpenCV's cubic convolution weight (a = -0.75), rounded step by step. */
STK_HD float stk_fx_cubic_w(float d) {
  const float a = -0.75f;
  float x = fabsf(d);
  if (x < 1.0f)
    return STK_FADD(STK_FMUL(STK_FMUL(STK_FX_FSUB(STK_FMUL(a + 2.0f, x), a + 3.0f), x), x), 1.0f);
  if (x < 2.0f)
    return STK_FX_FSUB(
        STK_FMUL(STK_FADD(STK_FMUL(STK_FX_FSUB(STK_FMUL(a, x), 5.0f * a), x), 8.0f * a), x),
        4.0f * a);
  return 0.0f;
}

/* Channel ch of the image at edge coordinates (X, Y): nearest (the pixel holding the
 * point), bilinear or cubic over the pixel centres, in float32. */
STK_HD float stk_fx_sample(const stk_fx_image *im, double X, double Y, long long ch, int interp,
                           int border, float fill) {
  if (interp == STK_FX_NEAREST) {
    long long xi = stk_fx_floor(stk_fx_tame(X, im->w, STK_FX_FAR));
    long long yi = stk_fx_floor(stk_fx_tame(Y, im->h, STK_FX_FAR));
    return stk_fx_tap(im, xi, yi, ch, border, fill);
  }
  double u = stk_fx_tame(STK_DSUB(X, 0.5), im->w, STK_FX_FAR);
  double v = stk_fx_tame(STK_DSUB(Y, 0.5), im->h, STK_FX_FAR);
  long long x0 = stk_fx_floor(u), y0 = stk_fx_floor(v);
  float ax = (float)STK_DSUB(u, (double)x0), ay = (float)STK_DSUB(v, (double)y0);
  if (interp == STK_FX_LINEAR) {
    float tl = stk_fx_tap(im, x0, y0, ch, border, fill);
    float tr = stk_fx_tap(im, x0 + 1, y0, ch, border, fill);
    float bl = stk_fx_tap(im, x0, y0 + 1, ch, border, fill);
    float br = stk_fx_tap(im, x0 + 1, y0 + 1, ch, border, fill);
    float t = STK_FADD(tl, STK_FMUL(STK_FX_FSUB(tr, tl), ax));
    float b = STK_FADD(bl, STK_FMUL(STK_FX_FSUB(br, bl), ax));
    return STK_FADD(t, STK_FMUL(STK_FX_FSUB(b, t), ay));
  }
  float acc = 0.0f;
  for (int j = 0; j < 4; j++) {
    float row = 0.0f, wy = stk_fx_cubic_w(STK_FX_FSUB(ay, (float)(j - 1)));
    for (int i = 0; i < 4; i++)
      row = STK_FADD(row, STK_FMUL(stk_fx_cubic_w(STK_FX_FSUB(ax, (float)(i - 1))),
                                   stk_fx_tap(im, x0 - 1 + i, y0 - 1 + j, ch, border, fill)));
    acc = STK_FADD(acc, STK_FMUL(wy, row));
  }
  return acc;
}

/* ---------------------------------------------------------------------------------- */
/* Coordinate maps: output pixel (x, y) (indices) -> source edge coordinates           */
/* ---------------------------------------------------------------------------------- */

/* water (DALI's formula, measured on DALI 2.4's CPU operator): p = {ampl_x, ampl_y,
 * freq_x, freq_y, phase_x, phase_y}; X = x + ampl_x sin(freq_x y + phase_x),
 * Y = y + ampl_y cos(freq_y x + phase_y), in float32. */
STK_HD void stk_fx_water(long long x, long long y, const float p[6], double *X, double *Y) {
  float fx = (float)x, fy = (float)y;
  *X = (double)STK_FADD(fx, STK_FMUL(p[0], sinf(STK_FADD(STK_FMUL(p[2], fy), p[4]))));
  *Y = (double)STK_FADD(fy, STK_FMUL(p[1], cosf(STK_FADD(STK_FMUL(p[3], fx), p[5]))));
}

/* sphere (measured the same way): with the centre (w / 2, h / 2) and d = max(floor(w / 2),
 * floor(h / 2)), the pixel centre at offset t from the centre reads the source at
 * centre + t |t| / d. */
STK_HD void stk_fx_sphere(long long x, long long y, long long w, long long h, double *X,
                          double *Y) {
  double cx = 0.5 * (double)w, cy = 0.5 * (double)h;
  double d = (double)(w / 2 > h / 2 ? w / 2 : h / 2);
  double tx = STK_DSUB(STK_DADD((double)x, 0.5), cx), ty = STK_DSUB(STK_DADD((double)y, 0.5), cy);
  double r = sqrt(STK_DADD(STK_DMUL(tx, tx), STK_DMUL(ty, ty))) / (d > 0 ? d : 1.0);
  *X = STK_DADD(cx, STK_DMUL(r, tx));
  *Y = STK_DADD(cy, STK_DMUL(r, ty));
}

/* jitter: pixel (x, y) of a w-wide image moves by (dx, dy), each uniform in
 * [-n/2, n/2), from block y w + x of the sample's Philox stream (words 0 and 1). */
STK_HD void stk_fx_jitter(const stk_noise_stream *st, long long x, long long y, long long w, int n,
                          double *X, double *Y) {
  uint32_t wd[4];
  stk_noise_block(st, (uint64_t)(y * w + x), wd);
  double half = 0.5 * (double)n;
  double dx = STK_DSUB(STK_DMUL((double)wd[0] * (1.0 / 4294967296.0), (double)n), half);
  double dy = STK_DSUB(STK_DMUL((double)wd[1] * (1.0 / 4294967296.0), (double)n), half);
  *X = STK_DADD(STK_DADD((double)x, 0.5), dx);
  *Y = STK_DADD(STK_DADD((double)y, 0.5), dy);
}

/* Perspective: m (row-major 3x3) maps output to source; `center`: coordinates refer to
 * pixel centres (OpenCV), else to pixel corners. */
STK_HD void stk_fx_perspective(const double m[9], long long x, long long y, int center, double *X,
                               double *Y) {
  double off = center ? 0.0 : 0.5;
  double px = STK_DADD((double)x, off), py = STK_DADD((double)y, off);
  double u = STK_DADD(STK_DADD(STK_DMUL(m[0], px), STK_DMUL(m[1], py)), m[2]);
  double v = STK_DADD(STK_DADD(STK_DMUL(m[3], px), STK_DMUL(m[4], py)), m[5]);
  double z = STK_DADD(STK_DADD(STK_DMUL(m[6], px), STK_DMUL(m[7], py)), m[8]);
  z = z != 0.0 ? 1.0 / z : 0.0;
  *X = STK_DADD(STK_DMUL(u, z), 0.5 - off);
  *Y = STK_DADD(STK_DMUL(v, z), 0.5 - off);
}

/* ---------------------------------------------------------------------------------- */
/* Window operators                                                                   */
/* ---------------------------------------------------------------------------------- */

/* The most elements a median window may have (both backends keep them in registers). */
#define STK_FX_MEDIAN_MAX 121

/* Median of the kh x kw window centred on (x, y) (replicated borders), channel ch: the
 * element of rank kh kw / 2 (odd windows). */
STK_HD float stk_fx_median(const stk_fx_image *im, long long x, long long y, long long ch, int kh,
                           int kw) {
  float v[STK_FX_MEDIAN_MAX];
  int n = 0;
  long long x0 = x - kw / 2, y0 = y - kh / 2;
  if (x0 >= 0 && y0 >= 0 && x0 + kw <= im->w && y0 + kh <= im->h) { /* inside: no border */
    for (int j = 0; j < kh; j++)
      for (int i = 0; i < kw; i++)
        v[n++] = stk_fx_load(im->data, im->dtype, ((y0 + j) * im->w + x0 + i) * im->c + ch);
  } else {
    for (int j = 0; j < kh; j++)
      for (int i = 0; i < kw; i++)
        v[n++] = stk_fx_tap(im, x0 + i, y0 + j, ch, STK_FX_BORDER_REPLICATE, 0.0f);
  }
  /* Wirth's selection of the element of rank n / 2 (exact: values are only compared) */
  int k = n / 2, lo = 0, hi = n - 1;
  while (lo < hi) {
    float pivot = v[k];
    int i = lo, j = hi;
    do {
      while (v[i] < pivot) i++;
      while (pivot < v[j]) j--;
      if (i <= j) {
        float t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++, j--;
      }
    } while (i <= j);
    if (j < k) lo = i;
    if (k < i) hi = j;
  }
  return v[k];
}

/* Maximum (dilate) or minimum (erode) over the kh x kw window with anchor (ay, ax) over
 * (x, y). Under the constant border, outside taps are ignored (OpenCV's default border
 * value for morphology); other borders read the mirrored / wrapped pixels. */
STK_HD float stk_fx_morph(const stk_fx_image *im, long long x, long long y, long long ch, int kh,
                          int kw, int ay, int ax, int border, int dilate) {
  int have = 0;
  float r = 0.0f;
  for (int j = 0; j < kh; j++) {
    long long yi = stk_fx_border(y - ay + j, im->h, border);
    if (yi < 0) continue;
    for (int i = 0; i < kw; i++) {
      long long xi = stk_fx_border(x - ax + i, im->w, border);
      if (xi < 0) continue;
      float t = stk_fx_load(im->data, im->dtype, (yi * im->w + xi) * im->c + ch);
      if (!have || (dilate ? t > r : t < r)) r = t;
      have = 1;
    }
  }
  return r;
}

/* ---------------------------------------------------------------------------------- */
/* Debayering (bilinear)                                                              */
/* ---------------------------------------------------------------------------------- */

/* Colour of sensor (x, y) for a pattern whose red sensors sit at parity (ry, rx):
 * 0 red, 1 green, 2 blue. */
STK_HD int stk_fx_cfa(long long x, long long y, int ry, int rx) {
  int py = (int)(y & 1), px = (int)(x & 1);
  if (py == ry && px == rx) return 0;
  if (py != ry && px != rx) return 2;
  return 1;
}

/* Channel `want` (0 R, 1 G, 2 B) at sensor (x, y) of a single-channel mosaic: the sensor
 * itself when it has that colour, else the mean of the nearest sensors of that colour
 * (2 or 4 of them), rounded half up in integers. Outside sensors mirror (reflect_101,
 * which keeps the pattern's parity). */
STK_HD float stk_fx_debayer(const stk_fx_image *im, long long x, long long y, int ry, int rx,
                            int want) {
  int own = stk_fx_cfa(x, y, ry, rx);
  if (own == want) return stk_fx_tap(im, x, y, 0, STK_FX_BORDER_REFLECT_101, 0.0f);
  long long sum = 0;
  int n = 0;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      if (!dx && !dy) continue;
      /* green from the 4-neighbours only; red/blue from the nearest of their colour */
      if (want == 1 && dx && dy) continue;
      if (stk_fx_cfa(x + dx, y + dy, ry, rx) != want) continue;
      sum += (long long)stk_fx_tap(im, x + dx, y + dy, 0, STK_FX_BORDER_REFLECT_101, 0.0f);
      n++;
    }
  return n ? (float)((sum + n / 2) / n) : 0.0f;
}

/* ---------------------------------------------------------------------------------- */
/* CLAHE: bilinear blending of the tiles' tables (OpenCV's interpolation)              */
/* ---------------------------------------------------------------------------------- */

/* Output of value `v` at pixel (x, y): luts holds tiles_y x tiles_x tables of 256 bytes;
 * tile extents th x tw. Computed in float32 and rounded to nearest. */
STK_HD uint8_t stk_fx_clahe_px(const uint8_t *luts, int tiles_y, int tiles_x, int th, int tw,
                               long long x, long long y, int v) {
  float inv_w = 1.0f / (float)tw, inv_h = 1.0f / (float)th;
  float txf = STK_FX_FSUB(STK_FMUL((float)x, inv_w), 0.5f);
  float tyf = STK_FX_FSUB(STK_FMUL((float)y, inv_h), 0.5f);
  int tx1 = (int)floorf(txf), ty1 = (int)floorf(tyf);
  float xa = STK_FX_FSUB(txf, (float)tx1), ya = STK_FX_FSUB(tyf, (float)ty1);
  int tx2 = tx1 + 1 < tiles_x ? tx1 + 1 : tiles_x - 1,
      ty2 = ty1 + 1 < tiles_y ? ty1 + 1 : tiles_y - 1;
  if (tx1 < 0) tx1 = 0;
  if (ty1 < 0) ty1 = 0;
  float a = luts[((long long)ty1 * tiles_x + tx1) * 256 + v];
  float b = luts[((long long)ty1 * tiles_x + tx2) * 256 + v];
  float c = luts[((long long)ty2 * tiles_x + tx1) * 256 + v];
  float d = luts[((long long)ty2 * tiles_x + tx2) * 256 + v];
  float top = STK_FADD(STK_FMUL(a, STK_FX_FSUB(1.0f, xa)), STK_FMUL(b, xa));
  float bot = STK_FADD(STK_FMUL(c, STK_FX_FSUB(1.0f, xa)), STK_FMUL(d, xa));
  float r = STK_FADD(STK_FMUL(top, STK_FX_FSUB(1.0f, ya)), STK_FMUL(bot, ya));
  r = rintf(r);
  return (uint8_t)(r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r);
}

/* The table of one tile from its histogram of `area` pixels (OpenCV's rule): clip at
 * `limit`, spread the excess evenly and its remainder at a stride, then the scaled
 * cumulative sum, rounded to nearest. hist is modified. */
STK_HD void stk_fx_clahe_lut(int *hist, int area, int limit, uint8_t *lut) {
  if (limit > 0) {
    int excess = 0;
    for (int i = 0; i < 256; i++)
      if (hist[i] > limit) excess += hist[i] - limit, hist[i] = limit;
    int batch = excess / 256, residual = excess - batch * 256;
    for (int i = 0; i < 256; i++) hist[i] += batch;
    if (residual) {
      int step = 256 / residual > 1 ? 256 / residual : 1;
      for (int i = 0; i < 256 && residual > 0; i += step, residual--) hist[i]++;
    }
  }
  float scale = 255.0f / (float)area;
  int sum = 0;
  for (int i = 0; i < 256; i++) {
    sum += hist[i];
    float r = rintf(STK_FMUL((float)sum, scale));
    lut[i] = (uint8_t)(r > 255.0f ? 255.0f : r);
  }
}

/* ---------------------------------------------------------------------------------- */
/* RGB <-> CIE Lab (8-bit scaling as OpenCV: L * 255 / 100, a + 128, b + 128), for       */
/* clahe's luma_only mode. Float64, sRGB transfer curve, D65 white.                     */
/* ---------------------------------------------------------------------------------- */

STK_HD double stk_fx_srgb_lin(double v) {
  v /= 255.0;
  return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}
STK_HD double stk_fx_srgb_enc(double v) {
  v = v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1.0 / 2.4) - 0.055;
  return v * 255.0;
}
STK_HD double stk_fx_lab_f(double t) { return t > 0.008856 ? cbrt(t) : 7.787 * t + 16.0 / 116.0; }
STK_HD double stk_fx_lab_finv(double f) {
  return f > 0.206893 ? f * f * f : (f - 16.0 / 116.0) / 7.787;
}
/* Lab of an RGB pixel, 8-bit scaled (L in [0, 255], a and b offset by 128), unrounded. */
STK_HD void stk_fx_rgb2lab(double r, double g, double b, double lab[3]) {
  r = stk_fx_srgb_lin(r), g = stk_fx_srgb_lin(g), b = stk_fx_srgb_lin(b);
  double X = (0.412453 * r + 0.357580 * g + 0.180423 * b) / 0.950456;
  double Y = 0.212671 * r + 0.715160 * g + 0.072169 * b;
  double Z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / 1.088754;
  double fx = stk_fx_lab_f(X), fy = stk_fx_lab_f(Y), fz = stk_fx_lab_f(Z);
  double L = Y > 0.008856 ? 116.0 * fy - 16.0 : 903.3 * Y;
  lab[0] = L * 255.0 / 100.0;
  lab[1] = 500.0 * (fx - fy) + 128.0;
  lab[2] = 200.0 * (fy - fz) + 128.0;
}
/* Channel ch (0 R, 1 G, 2 B) of the RGB pixel of 8-bit-scaled Lab values. */
STK_HD double stk_fx_lab2rgb(const double lab[3], int ch) {
  double L = lab[0] * 100.0 / 255.0, a = lab[1] - 128.0, bb = lab[2] - 128.0;
  double fy = (L + 16.0) / 116.0, fx = fy + a / 500.0, fz = fy - bb / 200.0;
  double Y = L > 7.9996 ? fy * fy * fy : L / 903.3;
  double X = stk_fx_lab_finv(fx) * 0.950456, Z = stk_fx_lab_finv(fz) * 1.088754;
  double lin = ch == 0   ? 3.240479 * X - 1.537150 * Y - 0.498535 * Z
               : ch == 1 ? -0.969256 * X + 1.875992 * Y + 0.041556 * Z
                         : 0.055648 * X - 0.204043 * Y + 1.057311 * Z;
  return stk_fx_srgb_enc(lin < 0.0 ? 0.0 : lin > 1.0 ? 1.0 : lin);
}
/* The value clahe equalises at pixel i of an image: the channel itself, or the rounded
 * Lab lightness of an RGB pixel (luma). */
STK_HD int stk_fx_clahe_value(const uint8_t *px, int luma) {
  if (!luma) return px[0];
  double lab[3];
  stk_fx_rgb2lab(px[0], px[1], px[2], lab);
  double L = floor(lab[0] + 0.5);
  return (int)(L < 0 ? 0 : L > 255 ? 255 : L);
}

/* The value clahe counts for pixel (x, y) of the image padded to whole tiles (mirrored,
 * reflect_101, as OpenCV pads), channel ch. */
STK_HD int stk_fx_clahe_padded(const uint8_t *src, long long h, long long w, long long c,
                               long long x, long long y, long long ch, int luma) {
  long long xi = stk_fx_border(x, w, STK_FX_BORDER_REFLECT_101);
  long long yi = stk_fx_border(y, h, STK_FX_BORDER_REFLECT_101);
  const uint8_t *px = src + (yi * w + xi) * c;
  return luma ? stk_fx_clahe_value(px, 1) : px[ch];
}

/* ---------------------------------------------------------------------------------- */
/* One description for every per-pixel effect, evaluated alike by both backends         */
/* ---------------------------------------------------------------------------------- */

enum {
  STK_FX_OP_COPY = 0, /* mask = 0: the input unchanged */
  STK_FX_OP_WATER,
  STK_FX_OP_SPHERE,
  STK_FX_OP_JITTER,
  STK_FX_OP_PERSPECTIVE,
  STK_FX_OP_REMAP,
  STK_FX_OP_MEDIAN,
  STK_FX_OP_DILATE,
  STK_FX_OP_ERODE,
  STK_FX_OP_DEBAYER,
  STK_FX_OP_CLAHE,
  STK_FX_OP_PASTE /* multi_paste: regions of several images on a zeroed canvas */
};

/* multi_paste's regions: h x w elements from (iy, ix) of `src` (src_w pixels a row, the
 * canvas's channel count and type) to (oy, ox) of the canvas. */
#define STK_FX_MAX_REGIONS 16
typedef struct {
  const void *src;
  int iy, ix, h, w, oy, ox, src_w;
} stk_fx_region;

#define STK_FX_MAX_FILL 16

typedef struct {
  int op;
  int interp, border;
  int nfill; /* fill[c] for c < nfill, else fill[0] */
  float fill[STK_FX_MAX_FILL];
  float wave[6];            /* water */
  double m[9];              /* perspective: output -> input */
  int center;               /* perspective, remap: coordinates of pixel centres */
  stk_noise_stream rng;     /* jitter */
  int jitter_n;             /* jitter: nDegree */
  const float *mapx, *mapy; /* remap: out_h x out_w each (host or device memory) */
  int kh, kw, ay, ax;       /* median, dilate, erode */
  int ry, rx;               /* debayer: parity of the red sensors */
  const uint8_t *luts;      /* clahe: tiles_y x tiles_x x 256 */
  int tiles_y, tiles_x, th, tw, luma;
  int nregions; /* multi_paste */
  stk_fx_region regions[STK_FX_MAX_REGIONS];
} stk_fx_params;

/* multi_paste: channel ch of canvas pixel (x, y): the last region covering it, else 0. */
STK_HD float stk_fx_paste(const stk_fx_params *p, const stk_fx_image *im, long long x, long long y,
                          long long ch) {
  for (int r = p->nregions - 1; r >= 0; r--) {
    const stk_fx_region *g = &p->regions[r];
    if (y < g->oy || y >= (long long)g->oy + g->h || x < g->ox || x >= (long long)g->ox + g->w)
      continue;
    long long sy = g->iy + (y - g->oy), sx = g->ix + (x - g->ox);
    return stk_fx_load(g->src, im->dtype, (sy * g->src_w + sx) * im->c + ch);
  }
  return 0.0f;
}

/* Output element (x, y, ch) of the effect `p` on image `im` (x, y: output indices). */
STK_HD float stk_fx_eval(const stk_fx_params *p, const stk_fx_image *im, long long x, long long y,
                         long long ch, long long out_w) {
  float fill = p->fill[ch < p->nfill ? ch : 0];
  double X = 0.0, Y = 0.0;
  switch (p->op) {
    case STK_FX_OP_COPY:
      return stk_fx_tap(im, x, y, ch, STK_FX_BORDER_CONSTANT, fill);
    case STK_FX_OP_WATER:
      stk_fx_water(x, y, p->wave, &X, &Y);
      break;
    case STK_FX_OP_SPHERE:
      stk_fx_sphere(x, y, im->w, im->h, &X, &Y);
      break;
    case STK_FX_OP_JITTER:
      stk_fx_jitter(&p->rng, x, y, out_w, p->jitter_n, &X, &Y);
      break;
    case STK_FX_OP_PERSPECTIVE:
      stk_fx_perspective(p->m, x, y, p->center, &X, &Y);
      break;
    case STK_FX_OP_REMAP:
      X = (double)p->mapx[y * out_w + x] + (p->center ? 0.5 : 0.0);
      Y = (double)p->mapy[y * out_w + x] + (p->center ? 0.5 : 0.0);
      break;
    case STK_FX_OP_MEDIAN:
      return stk_fx_median(im, x, y, ch, p->kh, p->kw);
    case STK_FX_OP_DILATE:
    case STK_FX_OP_ERODE:
      return stk_fx_morph(im, x, y, ch, p->kh, p->kw, p->ay, p->ax, p->border,
                          p->op == STK_FX_OP_DILATE);
    case STK_FX_OP_DEBAYER:
      return stk_fx_debayer(im, x, y, p->ry, p->rx, (int)ch);
    case STK_FX_OP_PASTE:
      return stk_fx_paste(p, im, x, y, ch);
    case STK_FX_OP_CLAHE: {
      const uint8_t *px = (const uint8_t *)im->data + (y * im->w + x) * im->c;
      if (!p->luma)
        return stk_fx_clahe_px(p->luts + ch * (long long)p->tiles_y * p->tiles_x * 256, p->tiles_y,
                               p->tiles_x, p->th, p->tw, x, y, px[ch]);
      double lab[3];
      stk_fx_rgb2lab(px[0], px[1], px[2], lab);
      lab[1] = floor(lab[1] + 0.5), lab[2] = floor(lab[2] + 0.5); /* 8-bit Lab, as OpenCV */
      lab[0] = stk_fx_clahe_px(p->luts, p->tiles_y, p->tiles_x, p->th, p->tw, x, y,
                               stk_fx_clahe_value(px, 1));
      return (float)stk_fx_lab2rgb(lab, (int)ch);
    }
    default:
      return 0.0f;
  }
  return stk_fx_sample(im, X, Y, ch, p->interp, p->border, fill);
}

/* Every channel of output pixel (x, y): element base + ch of `dst` (out_dtype) for ch <
 * out_c. Coordinates (and clahe's Lab conversion) are computed once per pixel; the
 * values are stk_fx_eval's. This is the loop body of both backends. */
STK_HD void stk_fx_eval_pixel(const stk_fx_params *p, const stk_fx_image *im, long long x,
                              long long y, long long out_w, long long out_c, void *dst,
                              int out_dtype, long long base) {
  double X = 0.0, Y = 0.0;
  int mapped = 1;
  switch (p->op) {
    case STK_FX_OP_WATER:
      stk_fx_water(x, y, p->wave, &X, &Y);
      break;
    case STK_FX_OP_SPHERE:
      stk_fx_sphere(x, y, im->w, im->h, &X, &Y);
      break;
    case STK_FX_OP_JITTER:
      stk_fx_jitter(&p->rng, x, y, out_w, p->jitter_n, &X, &Y);
      break;
    case STK_FX_OP_PERSPECTIVE:
      stk_fx_perspective(p->m, x, y, p->center, &X, &Y);
      break;
    case STK_FX_OP_REMAP:
      X = (double)p->mapx[y * out_w + x] + (p->center ? 0.5 : 0.0);
      Y = (double)p->mapy[y * out_w + x] + (p->center ? 0.5 : 0.0);
      break;
    default:
      mapped = 0;
  }
  if (mapped) {
    for (long long ch = 0; ch < out_c; ch++)
      stk_fx_store(
          dst, out_dtype, base + ch,
          stk_fx_sample(im, X, Y, ch, p->interp, p->border, p->fill[ch < p->nfill ? ch : 0]));
    return;
  }
  if (p->op == STK_FX_OP_CLAHE && p->luma) {
    const uint8_t *px = (const uint8_t *)im->data + (y * im->w + x) * im->c;
    double lab[3];
    stk_fx_rgb2lab(px[0], px[1], px[2], lab);
    double L = floor(lab[0] + 0.5);
    lab[1] = floor(lab[1] + 0.5), lab[2] = floor(lab[2] + 0.5); /* 8-bit Lab, as OpenCV */
    lab[0] = stk_fx_clahe_px(p->luts, p->tiles_y, p->tiles_x, p->th, p->tw, x, y,
                             (int)(L < 0     ? 0
                                   : L > 255 ? 255
                                             : L));
    for (int ch = 0; ch < 3; ch++)
      stk_fx_store(dst, out_dtype, base + ch, (float)stk_fx_lab2rgb(lab, ch));
    return;
  }
  for (long long ch = 0; ch < out_c; ch++)
    stk_fx_store(dst, out_dtype, base + ch, stk_fx_eval(p, im, x, y, ch, out_w));
}

#endif /* STOKER_SHARED_EFFECTS_PX_H */
