/*
 * The pixel stage of stoker's own GPU JPEG decoder: coefficients -> pixels, written so
 * that its output equals libjpeg(-turbo)'s decode with JDCT_ISLOW, fancy upsampling and
 * JFIF colour conversion byte for byte. The same functions run in the CUDA kernels
 * (src/cuda/jpeg_idct.cu) and in the host test (tests/c/test_jpeg_pixels.c), which
 * compares them with libjpeg-turbo on real files.
 *
 * - Inverse DCT: the Loeffler-Ligtenberg-Moschytz factorisation in 32-bit integers with
 *   13 fractional bits for the rotation constants, columns first (results kept with 2
 *   extra bits, PASS1_BITS), then rows; each pass rounds half up at its final shift; the
 *   row outputs are level-shifted by 128 and clamped to 0..255 (libjpeg-turbo's SIMD
 *   IDCT saturates there too; values that far out only come from corrupt data).
 * - Chroma upsampling ("fancy"): each output sample is 3/4 of the nearer and 1/4 of the
 *   farther input sample per doubled axis (triangle filter), with libjpeg's alternating
 *   rounding biases; samples outside the component's real extent are its edge samples
 *   repeated (the padding blocks are never read). libjpeg uses plain replication for a
 *   horizontally doubled component only 1 or 2 samples wide.
 * - Colour: JFIF YCbCr -> RGB with 16-bit fixed-point factors, rounded as libjpeg's
 *   tables round them; gray output of a colour file is the Y component alone.
 */
#ifndef STOKER_SHARED_JPEG_PIXELS_H
#define STOKER_SHARED_JPEG_PIXELS_H

#include <stdint.h>

#include "gpu_common.h"
#include "jpeg_frame.h"

/* ---- inverse DCT ---- */

/* cos-derived rotation factors * 2^13, rounded (the islow constants). */
enum {
  STK_JP_F0_298 = 2446,
  STK_JP_F0_390 = 3196,
  STK_JP_F0_541 = 4433,
  STK_JP_F0_765 = 6270,
  STK_JP_F0_899 = 7373,
  STK_JP_F1_175 = 9633,
  STK_JP_F1_501 = 12299,
  STK_JP_F1_847 = 15137,
  STK_JP_F1_961 = 16069,
  STK_JP_F2_053 = 16819,
  STK_JP_F2_562 = 20995,
  STK_JP_F3_072 = 25172,
};

/* One 8-point inverse transform: x[0..7] (frequency order) -> o[0..7] (sample order),
 * scaled by 2^13; the caller rounds. Even half: a 2-point butterfly of x0, x4 and a
 * rotation of x2, x6; odd half: the four odd inputs through one shared rotation and
 * four individual ones. Unsigned arithmetic: the integer results equal the exact ones
 * for any real file, and corrupt coefficients wrap instead of overflowing (undefined). */
STK_HD void stk_jp_idct8(const int32_t *xs, uint32_t o[8]) {
  uint32_t x[8];
  for (int k = 0; k < 8; k++) x[k] = (uint32_t)xs[k];
  uint32_t r = (x[2] + x[6]) * STK_JP_F0_541;
  uint32_t e3 = r + x[2] * STK_JP_F0_765, e2 = r - x[6] * STK_JP_F1_847;
  uint32_t e0 = (x[0] + x[4]) << 13, e1 = (x[0] - x[4]) << 13;
  uint32_t s0 = e0 + e3, s3 = e0 - e3, s1 = e1 + e2, s2 = e1 - e2;

  uint32_t a = x[7], b = x[5], c = x[3], d = x[1];
  uint32_t ad = (a + d) * (uint32_t)-STK_JP_F0_899, bc = (b + c) * (uint32_t)-STK_JP_F2_562;
  uint32_t ac = (a + c) * (uint32_t)-STK_JP_F1_961, bd = (b + d) * (uint32_t)-STK_JP_F0_390;
  uint32_t z = (a + c + b + d) * STK_JP_F1_175;
  ac += z;
  bd += z;
  uint32_t t0 = a * STK_JP_F0_298 + ad + ac, t1 = b * STK_JP_F2_053 + bc + bd;
  uint32_t t2 = c * STK_JP_F3_072 + bc + ac, t3 = d * STK_JP_F1_501 + ad + bd;

  o[0] = s0 + t3;
  o[7] = s0 - t3;
  o[1] = s1 + t2;
  o[6] = s1 - t2;
  o[2] = s2 + t1;
  o[5] = s2 - t1;
  o[3] = s3 + t0;
  o[4] = s3 - t0;
}

/* (v + 2^(bits-1)) >> bits of a wrapped sum, rounding half up (arithmetic shift). */
STK_HD int32_t stk_jp_descale(uint32_t v, int bits) {
  return (int32_t)(v + (1u << (bits - 1))) >> bits;
}

STK_HD uint8_t stk_jp_clamp8(int32_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* The transform in three steps over a 64-value int32 workspace whose rows are
 * STK_JPEG_WS_ROW apart (9: the GPU's shared-memory copy then has no bank conflicts, see
 * jpeg_idct.cu), so the kernel can give each row and column of a block to a thread and
 * the host runs the same steps in loops. */
#define STK_JPEG_WS_ROW 9

/* Step 1: one row of a block's coefficients dequantised into the workspace's row
 * (coef, q: that row of the block and of its table, natural order). */
STK_HD void stk_jpeg_dequant_row(const int16_t *coef, const uint16_t *q, int32_t *ws_row) {
  for (int k = 0; k < 8; k++) ws_row[k] = (int32_t)coef[k] * (int32_t)q[k];
}

/* Step 2: column c transformed in place, 2 extra fractional bits kept. */
STK_HD void stk_jpeg_idct_col(int32_t *ws, int c) {
  int32_t x[8];
  uint32_t o[8];
  for (int k = 0; k < 8; k++) x[k] = ws[k * STK_JPEG_WS_ROW + c];
  stk_jp_idct8(x, o);
  for (int k = 0; k < 8; k++) ws[k * STK_JPEG_WS_ROW + c] = stk_jp_descale(o[k], 11);
}

/* Step 3: row r transformed to 8 samples (/8 of the 2-D transform and the 2 bits,
 * level shift, clamp). */
STK_HD void stk_jpeg_idct_row(const int32_t *ws, int r, uint8_t out[8]) {
  uint32_t o[8];
  stk_jp_idct8(ws + r * STK_JPEG_WS_ROW, o);
  for (int k = 0; k < 8; k++) out[k] = stk_jp_clamp8(stk_jp_descale(o[k], 18) + 128);
}

/* Dequantises one block (coef: 64 quantised values, q: its table, both in natural
 * order) and inverse-transforms it into 8 rows of 8 samples at out + r * pitch. */
STK_HD void stk_jpeg_idct_block(const int16_t *coef, const uint16_t *q, uint8_t *out,
                                int64_t pitch) {
  int32_t ws[8 * STK_JPEG_WS_ROW];
  for (int r = 0; r < 8; r++)
    stk_jpeg_dequant_row(coef + r * 8, q + r * 8, ws + r * STK_JPEG_WS_ROW);
  for (int c = 0; c < 8; c++) stk_jpeg_idct_col(ws, c);
  for (int r = 0; r < 8; r++) stk_jpeg_idct_row(ws, r, out + r * pitch);
}

/* ---- upsampling ---- */

/* A component's decoded samples as the upsampler reads them: a plane of bw*8 x bh*8
 * samples (pitch bytes per row) of which w x h are real, enlarged fx x fy (1 or 2) to
 * the image; `fancy` = 0 where libjpeg replicates instead of filtering. */
typedef struct {
  const uint8_t *p;
  int64_t pitch;
  int w, h, fx, fy, fancy;
} stk_jpeg_plane;

/* The geometry of component c of frame f (everything but p and pitch). */
STK_HD void stk_jpeg_plane_geom(const stk_jpeg_frame *f, int c, stk_jpeg_plane *pl) {
  const stk_jpeg_component *k = &f->comp[c];
  pl->pitch = (int64_t)k->bw * 8;
  pl->w = (int)(((int64_t)f->width * k->h + f->hmax - 1) / f->hmax);
  pl->h = (int)(((int64_t)f->height * k->v + f->vmax - 1) / f->vmax);
  pl->fx = f->hmax / k->h;
  pl->fy = f->vmax / k->v;
  /* libjpeg-turbo filters doubled columns only when the component is wider than 2 */
  pl->fancy = pl->fx == 1 || pl->w > 2;
}

STK_HD int stk_jp_at(const stk_jpeg_plane *pl, int x, int y) { return pl->p[y * pl->pitch + x]; }

STK_HD int stk_jp_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The component's value at image pixel (x, y). */
STK_HD int stk_jpeg_sample(const stk_jpeg_plane *pl, int x, int y) {
  int cx = pl->fx == 2 ? x >> 1 : x, cy = pl->fy == 2 ? y >> 1 : y;
  if (pl->fx == 1 && pl->fy == 1) return stk_jp_at(pl, cx, cy);
  if (!pl->fancy) return stk_jp_at(pl, cx, cy); /* narrow h2: plain replication */
  /* the farther neighbour: towards the side of the pixel within its pair, edge repeated */
  int nx = stk_jp_clampi(x & 1 ? cx + 1 : cx - 1, 0, pl->w - 1);
  int ny = stk_jp_clampi(y & 1 ? cy + 1 : cy - 1, 0, pl->h - 1);
  if (pl->fy == 1) /* h2v1 */
    return (3 * stk_jp_at(pl, cx, cy) + stk_jp_at(pl, nx, cy) + (x & 1 ? 2 : 1)) >> 2;
  if (pl->fx == 1) /* h1v2 */
    return (3 * stk_jp_at(pl, cx, cy) + stk_jp_at(pl, cx, ny) + (y & 1 ? 2 : 1)) >> 2;
  /* h2v2: vertical sums (x4) first, then the horizontal blend (x16 in all) */
  int here = 3 * stk_jp_at(pl, cx, cy) + stk_jp_at(pl, cx, ny);
  int side = 3 * stk_jp_at(pl, nx, cy) + stk_jp_at(pl, nx, ny);
  return (3 * here + side + (x & 1 ? 7 : 8)) >> 4;
}

/* ---- colour ---- */

#define STK_JP_FIX(v) ((int32_t)((v)*65536.0 + 0.5))

/* JFIF YCbCr -> RGB in 16-bit fixed point: rgb[0..2] = R, G, B. */
STK_HD void stk_jpeg_ycc_rgb(int y, int cb, int cr, uint8_t rgb[3]) {
  const int32_t half = 1 << 15;
  int32_t b = cb - 128, r = cr - 128;
  int32_t dr = (STK_JP_FIX(1.40200) * r + half) >> 16;
  int32_t db = (STK_JP_FIX(1.77200) * b + half) >> 16;
  int32_t dg = (-STK_JP_FIX(0.34414) * b - STK_JP_FIX(0.71414) * r + half) >> 16;
  rgb[0] = stk_jp_clamp8(y + dr);
  rgb[1] = stk_jp_clamp8(y + dg);
  rgb[2] = stk_jp_clamp8(y + db);
}

/* Output colour orders (as STK_GPU_COLOR_* in src/cuda/gpu_api.h). */
enum { STK_JPEG_OUT_RGB = 0, STK_JPEG_OUT_BGR = 1, STK_JPEG_OUT_GRAY = 2 };

STK_HD int stk_jpeg_out_channels(int color) { return color == STK_JPEG_OUT_GRAY ? 1 : 3; }

/* The output pixel (x, y) of an image whose components' planes are pl[0..ncomp-1]
 * (ncomp 1: gray, 3: YCbCr), written to out[0..channels-1]. */
STK_HD void stk_jpeg_pixel(const stk_jpeg_plane *pl, int ncomp, int color, int x, int y,
                           uint8_t *out) {
  int Y = stk_jpeg_sample(&pl[0], x, y);
  if (color == STK_JPEG_OUT_GRAY) {
    out[0] = (uint8_t)Y;
    return;
  }
  uint8_t rgb[3];
  if (ncomp == 1) {
    rgb[0] = rgb[1] = rgb[2] = (uint8_t)Y;
  } else {
    stk_jpeg_ycc_rgb(Y, stk_jpeg_sample(&pl[1], x, y), stk_jpeg_sample(&pl[2], x, y), rgb);
  }
  int bgr = color == STK_JPEG_OUT_BGR; /* constant indices: rgb stays in registers */
  out[0] = bgr ? rgb[2] : rgb[0];
  out[1] = rgb[1];
  out[2] = bgr ? rgb[0] : rgb[2];
}

/* ---- one image: the bodies of the kernels ---- */

/* The planes of an image: component c's samples at planes + comp[c].block0 * 64, i.e.
 * block g of the coefficient array decodes to the 64 bytes at planes + g * 64 of a
 * buffer of total_blocks * 64 bytes (laid out as the component's plane, not blockwise). */
STK_HD void stk_jpeg_planes(const stk_jpeg_frame *f, const uint8_t *planes, stk_jpeg_plane *pl) {
  for (int c = 0; c < f->ncomp; c++) {
    stk_jpeg_plane_geom(f, c, &pl[c]);
    pl[c].p = planes + f->comp[c].block0 * 64;
  }
}

/* Which component's block g (0 <= g < total_blocks) of an image is: sets *c, *bx, *by
 * and returns 1, or returns 0 for a g outside every component's grid. */
STK_HD int stk_jpeg_block_locate(const stk_jpeg_frame *f, int64_t g, int *c, int *bx, int *by) {
  for (int k = 0; k < f->ncomp; k++) {
    int64_t b = g - f->comp[k].block0;
    if (b < 0 || b >= (int64_t)f->comp[k].bw * f->comp[k].bh) continue;
    *c = k;
    *by = (int)(b / f->comp[k].bw);
    *bx = (int)(b % f->comp[k].bw);
    return 1;
  }
  return 0;
}

/* The samples [*lo, *hi] of one axis of a component that outputs lo0..hi0 read: the
 * ones they fall on, and one more either side when the axis is doubled (the filter's
 * farther neighbour), within the real extent n. */
STK_HD void stk_jp_axis_need(int lo0, int hi0, int f, int n, int *lo, int *hi) {
  int a = lo0 / f, b = hi0 / f;
  if (f == 2) a--, b++;
  *lo = a < 0 ? 0 : a;
  *hi = b > n - 1 ? n - 1 : b;
}

/* Whether block (bx, by) of component c holds samples the region (rx, ry, rw, rh)'s
 * pixels read (padding blocks never do). */
STK_HD int stk_jpeg_block_needed(const stk_jpeg_frame *f, int c, int bx, int by, int rx, int ry,
                                 int rw, int rh) {
  stk_jpeg_plane pl;
  stk_jpeg_plane_geom(f, c, &pl);
  int x0, x1, y0, y1;
  stk_jp_axis_need(rx, rx + rw - 1, pl.fx, pl.w, &x0, &x1);
  stk_jp_axis_need(ry, ry + rh - 1, pl.fy, pl.h, &y0, &y1);
  return bx >= x0 / 8 && bx <= x1 / 8 && by >= y0 / 8 && by <= y1 / 8;
}

/* Where block g's samples go: sets *c (its component), *at (its top-left sample in the
 * planes) and *pitch, and returns 1, or 0 when the region (rx, ry, rw, rh) in colour
 * `color` does not need the block (gray output reads Y alone) or g is in no grid. */
STK_HD int stk_jpeg_block_target(const stk_jpeg_frame *f, uint8_t *planes, int64_t g, int color,
                                 int rx, int ry, int rw, int rh, int *c, uint8_t **at,
                                 int64_t *pitch) {
  int bx, by;
  if (!stk_jpeg_block_locate(f, g, c, &bx, &by)) return 0;
  if (color == STK_JPEG_OUT_GRAY && *c > 0) return 0;
  if (!stk_jpeg_block_needed(f, *c, bx, by, rx, ry, rw, rh)) return 0;
  const stk_jpeg_component *k = &f->comp[*c];
  *pitch = (int64_t)k->bw * 8;
  *at = planes + k->block0 * 64 + (int64_t)by * 8 * *pitch + (int64_t)bx * 8;
  return 1;
}

/* Decodes block g of an image's coefficients into its planes when the region needs it
 * (the host's form of jpeg_idct.cu's first kernel). */
STK_HD void stk_jpeg_idct_at(const stk_jpeg_frame *f, const int16_t *coef, uint8_t *planes,
                             int64_t g, int color, int rx, int ry, int rw, int rh) {
  int c;
  uint8_t *at;
  int64_t pitch;
  if (!stk_jpeg_block_target(f, planes, g, color, rx, ry, rw, rh, &c, &at, &pitch)) return;
  stk_jpeg_idct_block(coef + g * 64, f->quant[f->comp[c].quant], at, pitch);
}

/* NULL when the frame's geometry is one the functions above handle within its arrays
 * (what the kernels rely on), else what is wrong. */
STK_HD const char *stk_jpeg_frame_problem(const stk_jpeg_frame *f) {
  if (f->width < 1 || f->height < 1) return "empty image";
  if (f->ncomp != 1 && f->ncomp != 3) return "not 1 or 3 components";
  if (f->hmax < 1 || f->hmax > 2 || f->vmax < 1 || f->vmax > 2) return "sampling factor not 1 or 2";
  if (f->total_blocks < 1) return "no blocks";
  for (int c = 0; c < f->ncomp; c++) {
    const stk_jpeg_component *k = &f->comp[c];
    if (k->h < 1 || k->h > f->hmax || k->v < 1 || k->v > f->vmax)
      return "component sampling factor not 1 or 2, or above the frame's";
    if (k->quant < 0 || k->quant > 3) return "quantisation table index not 0..3";
    stk_jpeg_plane pl;
    stk_jpeg_plane_geom(f, c, &pl);
    if ((int64_t)k->bw * 8 < pl.w || (int64_t)k->bh * 8 < pl.h)
      return "component block grid smaller than its samples";
    if (k->block0 < 0 || k->block0 + (int64_t)k->bw * k->bh > f->total_blocks)
      return "component blocks outside total_blocks";
  }
  return 0;
}

/* Output pixel (x, y) of a region (rx, ry = its top-left corner in the image) into
 * dst (pitch bytes per row): pixel (rx + x, ry + y) of the image. */
STK_HD void stk_jpeg_region_pixel(const stk_jpeg_plane *pl, int ncomp, int color, int rx, int ry,
                                  int x, int y, uint8_t *dst, int64_t pitch) {
  int ch = stk_jpeg_out_channels(color);
  stk_jpeg_pixel(pl, ncomp, color, rx + x, ry + y, dst + y * pitch + (int64_t)x * ch);
}

#endif /* STOKER_SHARED_JPEG_PIXELS_H */
