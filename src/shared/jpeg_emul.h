/*
 * jpeg_compression_distortion on the GPU: a JPEG round trip computed directly (no
 * bitstream), the same steps a baseline libjpeg encoder and decoder take:
 *
 *   RGB -> YCbCr with JFIF's weights in 16-bit fixed point; chroma averaged over 2x2
 *   pixels (4:2:0, alternating rounding bias 1, 2); the image padded to 16 x 16 MCUs by
 *   repeating its last column and row; each 8x8 block level-shifted by 128, transformed
 *   (DCT-II), divided by the quality-scaled quantisation table (ITU T.81 Annex K tables,
 *   IJG quality scaling) and rounded half away from zero; then dequantised, inverse
 *   transformed, shifted back, rounded and clamped; chroma brought back to full size with
 *   the triangle ("fancy") filter, 3/4 nearer + 1/4 further sample in each direction;
 *   YCbCr -> RGB in fixed point.
 *
 * The transforms are evaluated in floating point, where libjpeg uses its integer
 * approximation (islow): a coefficient whose value lies within that approximation's error
 * of a rounding boundary may quantise one step apart, so the GPU matches the CPU operator
 * (libjpeg itself) on most pixels, not all. Both halves compile as C11 and CUDA (STK_HD)
 * and run unchanged on the host in the fake GPU and the tests.
 */
#ifndef STOKER_SHARED_JPEG_EMUL_H
#define STOKER_SHARED_JPEG_EMUL_H

#include "gpu_common.h"

/* 16-bit fixed point of a JFIF weight, rounded. */
#define STK_JE_FIX(x) ((int32_t)((x)*65536.0 + 0.5))

/* Bytes of the intermediate planes of an h x w image: Y (16-aligned extents) and the two
 * half-size chroma planes. */
STK_HD size_t stk_je_planes_bytes(long long h, long long w) {
  long long H = (h + 15) / 16 * 16, W = (w + 15) / 16 * 16;
  return (size_t)(H * W + 2 * (H / 2) * (W / 2));
}

/* YCbCr of an RGB pixel (the encoder's colour conversion). */
STK_HD void stk_je_ycc(int r, int g, int b, int *y, int *cb, int *cr) {
  const int32_t half = 1 << 15, off = 128 << 16;
  *y = (STK_JE_FIX(0.29900) * r + STK_JE_FIX(0.58700) * g + STK_JE_FIX(0.11400) * b + half) >> 16;
  *cb =
      (-STK_JE_FIX(0.16874) * r - STK_JE_FIX(0.33126) * g + STK_JE_FIX(0.5) * b + off + half - 1) >>
      16;
  *cr =
      (STK_JE_FIX(0.5) * r - STK_JE_FIX(0.41869) * g - STK_JE_FIX(0.08131) * b + off + half - 1) >>
      16;
}

/* One 8x8 block through DCT, quantisation (q: 64 divisors, natural order) and back:
 * in-place on `b` (values 0..255). */
STK_HD void stk_je_block(int b[64], const uint16_t q[64]) {
  double c[8][8], coef[64], tmp[64];
  for (int u = 0; u < 8; u++)
    for (int x = 0; x < 8; x++)
      c[u][x] = (u ? 0.5 : 0.35355339059327373) * cos((2 * x + 1) * u * STK_GPU_PI / 16.0);
  /* forward: rows then columns */
  for (int y = 0; y < 8; y++)
    for (int u = 0; u < 8; u++) {
      double s = 0;
      for (int x = 0; x < 8; x++) s += c[u][x] * (double)(b[y * 8 + x] - 128);
      tmp[y * 8 + u] = s;
    }
  for (int v = 0; v < 8; v++)
    for (int u = 0; u < 8; u++) {
      double s = 0;
      for (int y = 0; y < 8; y++) s += c[v][y] * tmp[y * 8 + u];
      double r = s / (double)q[v * 8 + u];
      double k = r < 0 ? -floor(0.5 - r) : floor(r + 0.5);
      coef[v * 8 + u] = k * (double)q[v * 8 + u];
    }
  /* inverse: columns then rows */
  for (int y = 0; y < 8; y++)
    for (int u = 0; u < 8; u++) {
      double s = 0;
      for (int v = 0; v < 8; v++) s += c[v][y] * coef[v * 8 + u];
      tmp[y * 8 + u] = s;
    }
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 8; x++) {
      double s = 128.0;
      for (int u = 0; u < 8; u++) s += c[u][x] * tmp[y * 8 + u];
      double r = floor(s + 0.5);
      b[y * 8 + x] = r < 0 ? 0 : r > 255 ? 255 : (int)r;
    }
}

/* The MCU at (mx, my) of an h x w RGB image: its four Y blocks and two chroma blocks,
 * reconstructed into the planes (Y: W16 a row; chroma: W16 / 2). ql, qc: luminance and
 * chrominance tables. */
STK_HD void stk_je_mcu(const uint8_t *src, long long h, long long w, const uint16_t *ql,
                       const uint16_t *qc, long long mx, long long my, uint8_t *planes) {
  long long W = (w + 15) / 16 * 16, H = (h + 15) / 16 * 16;
  uint8_t *py = planes, *pcb = planes + H * W, *pcr = pcb + (H / 2) * (W / 2);
  int yb[4][64], cb[64], cr[64];
  /* luminance: the image's last column and row repeated over the MCU */
  for (int ly = 0; ly < 16; ly++)
    for (int lx = 0; lx < 16; lx++) {
      long long y = my * 16 + ly, x = mx * 16 + lx;
      const uint8_t *p = src + ((y < h ? y : h - 1) * w + (x < w ? x : w - 1)) * 3;
      int Y, Cb, Cr;
      stk_je_ycc(p[0], p[1], p[2], &Y, &Cb, &Cr);
      yb[(ly / 8) * 2 + lx / 8][(ly % 8) * 8 + lx % 8] = Y;
    }
  /* chroma: 2x2 means of the column-padded rows; below the last chroma row (ceil(h / 2)),
   * that row repeats (libjpeg pads the downsampled plane, not the image) */
  long long last = (h + 1) / 2 - 1;
  for (int j = 0; j < 8; j++)
    for (int i = 0; i < 8; i++) {
      long long gj = my * 8 + j;
      gj = gj < last ? gj : last;
      int scb = 0, scr = 0;
      for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++) {
          long long y = 2 * gj + dy, x = mx * 16 + 2 * i + dx;
          const uint8_t *p = src + ((y < h ? y : h - 1) * w + (x < w ? x : w - 1)) * 3;
          int Y, Cb, Cr;
          stk_je_ycc(p[0], p[1], p[2], &Y, &Cb, &Cr);
          scb += Cb, scr += Cr;
        }
      int bias = (i & 1) ? 2 : 1; /* libjpeg's alternating 2x2 rounding */
      cb[j * 8 + i] = (scb + bias) >> 2;
      cr[j * 8 + i] = (scr + bias) >> 2;
    }
  for (int k = 0; k < 4; k++) stk_je_block(yb[k], ql);
  stk_je_block(cb, qc);
  stk_je_block(cr, qc);
  for (int ly = 0; ly < 16; ly++)
    for (int lx = 0; lx < 16; lx++)
      py[(my * 16 + ly) * W + mx * 16 + lx] =
          (uint8_t)yb[(ly / 8) * 2 + lx / 8][(ly % 8) * 8 + lx % 8];
  for (int j = 0; j < 8; j++)
    for (int i = 0; i < 8; i++) {
      pcb[(my * 8 + j) * (W / 2) + mx * 8 + i] = (uint8_t)cb[j * 8 + i];
      pcr[(my * 8 + j) * (W / 2) + mx * 8 + i] = (uint8_t)cr[j * 8 + i];
    }
}

/* A chroma sample of output pixel (x, y) from a plane of cw x ch samples (row pitch
 * `pitch`): the triangle filter (weights 3/4, 1/4 vertically, then horizontally, as
 * libjpeg's h2v2 fancy upsampling with its rounding), or the nearest sample for planes
 * two or fewer samples wide (libjpeg does not filter those). */
STK_HD int stk_je_chroma(const uint8_t *p, long long pitch, long long cw, long long ch, long long x,
                         long long y) {
  long long i = x / 2, j = y / 2;
  if (cw <= 2) return p[j * pitch + i];
  long long jn = (y & 1) ? j + 1 : j - 1;
  jn = jn < 0 ? 0 : jn >= ch ? ch - 1 : jn;
  long long in = (x & 1) ? i + 1 : i - 1;
  int t = 3 * p[j * pitch + i] + p[jn * pitch + i];
  if (in < 0) return (t * 4 + 8) >> 4;
  if (in >= cw) return (t * 4 + 7) >> 4;
  int o = 3 * p[j * pitch + in] + p[jn * pitch + in];
  return (x & 1) ? (t * 3 + o + 7) >> 4 : (t * 3 + o + 8) >> 4;
}

/* Output pixel (x, y) of an h x w image from the planes: RGB into dst[0..2]. */
STK_HD void stk_je_pixel(const uint8_t *planes, long long h, long long w, long long x, long long y,
                         uint8_t *dst) {
  long long W = (w + 15) / 16 * 16, H = (h + 15) / 16 * 16;
  const uint8_t *pcb = planes + H * W, *pcr = pcb + (H / 2) * (W / 2);
  long long cw = (w + 1) / 2, chh = (h + 1) / 2;
  int Y = planes[y * W + x];
  int cb = stk_je_chroma(pcb, W / 2, cw, chh, x, y) - 128;
  int cr = stk_je_chroma(pcr, W / 2, cw, chh, x, y) - 128;
  const int32_t half = 1 << 15;
  int v[3];
  v[0] = Y + ((STK_JE_FIX(1.40200) * cr + half) >> 16);
  v[1] = Y + ((-STK_JE_FIX(0.34414) * cb + half - STK_JE_FIX(0.71414) * cr) >> 16);
  v[2] = Y + ((STK_JE_FIX(1.77200) * cb + half) >> 16);
  for (int k = 0; k < 3; k++) dst[k] = (uint8_t)(v[k] < 0 ? 0 : v[k] > 255 ? 255 : v[k]);
}

#endif /* STOKER_SHARED_JPEG_EMUL_H */
