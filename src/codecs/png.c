/* PNG: header peeking (IHDR, eXIf) and decoding through libspng. Every bit depth and
 * colour type is decoded to 8-bit RGB (or 8-bit gray for gray files when gray is asked
 * for); alpha is dropped, not composited (as DALI does). The values are DALI 2.4's, set
 * by src/shared/png_common.h (stk_png_store), which the GPU decoder shares: 16-bit files
 * are decoded at 16 bits (libspng's RGBA16) and rounded to 8, not cut to their high byte
 * (libspng's RGB8 would do that); GRAY from colour uses DALI's weights. CRC and zlib
 * errors are errors in every chunk, whatever region is decoded (a region decode reads the
 * whole stream too). Non-interlaced images are decoded row by row into the output;
 * interlaced ones need the whole image first (8 bytes a pixel for 16-bit files).
 * Decompression is bounded: the pixel limit is checked before decoding, and libspng's
 * chunk limits keep ancillary chunks (zTXt, iCCP: zlib bombs) small. */
#include <stdlib.h>
#include <string.h>

#include <spng.h>

#include "../shared/png_common.h"
#include "codecs.h"

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool valid_depth(int color_type, int depth) {
  switch (color_type) {
    case 0:
      return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3:
      return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2:
    case 4:
    case 6:
      return depth == 8 || depth == 16;
    default:
      return false;
  }
}

/* Looks for an eXIf chunk before the image data. */
static int find_orientation(const uint8_t *d, size_t n) {
  size_t pos = 8;
  while (n - pos >= 12) {
    uint32_t len = be32(d + pos);
    if (len > n - pos - 12) break;
    const uint8_t *type = d + pos + 4;
    if (memcmp(type, "IDAT", 4) == 0 || memcmp(type, "IEND", 4) == 0) break;
    if (memcmp(type, "eXIf", 4) == 0) return stk__exif_orientation(d + pos + 8, len);
    pos += 12 + (size_t)len;
  }
  return 1;
}

stk_status stk__png_peek(const uint8_t *d, size_t n, const char *nm, stk__image_info *out) {
  static const int channels[7] = {1, 0, 3, 3, 2, 0, 4};
  out->format = STK__IMAGE_PNG;
  if (n < 33 || be32(d + 8) != 13 || memcmp(d + 12, "IHDR", 4) != 0)
    return STK_FAIL(STK_ERR_DECODE, "%s: PNG without a complete IHDR chunk", nm);
  uint32_t w = be32(d + 16), h = be32(d + 20);
  int depth = d[24], type = d[25];
  if (w == 0 || h == 0 || w > 0x7fffffffu || h > 0x7fffffffu)
    return STK_FAIL(STK_ERR_DECODE, "%s: PNG size %ux%u is invalid", nm, (unsigned)w, (unsigned)h);
  if (type > 6 || !valid_depth(type, depth))
    return STK_FAIL(STK_ERR_DECODE, "%s: PNG colour type %d with bit depth %d is invalid", nm, type,
                    depth);
  out->width = (int)w;
  out->height = (int)h;
  out->bit_depth = depth;
  out->channels = channels[type];
  out->progressive = d[28] != 0;
  out->orientation = find_orientation(d, n);
  bool swap = out->orientation >= 5;
  out->oriented_width = swap ? out->height : out->width;
  out->oriented_height = swap ? out->width : out->height;
  return STK_OK;
}

typedef struct {
  spng_ctx *ctx;
  uint8_t *row;   /* one decoded row (non-interlaced) */
  uint8_t *image; /* the whole decoded image (interlaced) */
  int fmt;
  size_t row_bytes;
} png_state;

static stk_status spng_failure(const stk__decode_job *job, int err, const char *what) {
  return stk__fail(err == SPNG_EMEM ? STK_ERR_OUT_OF_MEMORY : STK_ERR_DECODE, "stk__png_decode",
                   "%s: PNG %s: %s", job->name, what, spng_strerror(err));
}

/* n pixels of 8-bit RGB in `color` through the shared maths (GRAY's weights differ from
 * stk__convert_rgb_row's BT.601 luma; RGB and BGR are the same either way). */
static void store_rgb8(const uint8_t *src, uint8_t *dst, int n, stk__color color) {
  if (color != STK__COLOR_GRAY) {
    stk__convert_rgb_row(src, dst, n, color);
    return;
  }
  for (int i = 0; i < n; i++, src += 3) stk_png_store(src[0], src[1], src[2], 0, color, dst + i);
}

/* n pixels of host-endian RGBA16 in `color`, rounded to 8 bits. */
static void store_rgba16(const uint8_t *src, uint8_t *dst, int n, stk__color color) {
  int c = color == STK__COLOR_GRAY ? 1 : 3;
  for (int i = 0; i < n; i++, src += 8) {
    uint16_t v[4];
    memcpy(v, src, sizeof v);
    stk_png_store(v[0], v[1], v[2], 1, color, dst + (size_t)i * c);
  }
}

/* Copies the ROI columns of one decoded row into sink row r. */
static void emit_row(stk__decode_job *job, const png_state *P, const uint8_t *src, int r) {
  uint8_t *dst = stk__sink_row(job, r);
  if (P->fmt == SPNG_FMT_G8)
    memcpy(dst, src + job->rx, (size_t)job->rw);
  else if (P->fmt == SPNG_FMT_RGBA16)
    store_rgba16(src + (size_t)job->rx * 8, dst, job->rw, job->color);
  else
    store_rgb8(src + (size_t)job->rx * 3, dst, job->rw, job->color);
  stk__sink_row_done(job, r);
}

/* Interlaced: the passes cover the whole image, so decode it all, then copy rows. */
static stk_status decode_interlaced(stk__decode_job *job, png_state *P, size_t total) {
  P->image = stk__malloc(total, "PNG image buffer");
  if (!P->image) return STK_ERR_OUT_OF_MEMORY;
  int err = spng_decode_image(P->ctx, P->image, total, P->fmt, 0);
  if (err) return spng_failure(job, err, "decode");
  STK_TRY(stk__sink_begin(job, job->rw, job->rh, job->c));
  for (int r = 0; r < job->rh; r++)
    emit_row(job, P, P->image + (size_t)(job->ry + r) * P->row_bytes, r);
  return STK_OK;
}

/* Non-interlaced: rows above the ROI are decoded and dropped (PNG has no random
 * access); so are the rows below it: a damaged file is an error whatever window is
 * asked for, and only decoding to the end checks the zlib stream (its Adler-32) and
 * every chunk's CRC. (Stopping after the window let single-bit flips in IDAT through as
 * altered pixels in 187 of 750 trials.) */
static stk_status decode_rows(stk__decode_job *job, png_state *P) {
  int err = spng_decode_image(P->ctx, NULL, 0, P->fmt, SPNG_DECODE_PROGRESSIVE);
  if (err) return spng_failure(job, err, "decode");
  STK_TRY(stk__sink_begin(job, job->rw, job->rh, job->c));
  bool direct =
      job->rx == 0 && job->rw == job->info->width &&
      (P->fmt == SPNG_FMT_G8 || (P->fmt == SPNG_FMT_RGB8 && job->color == STK__COLOR_RGB));
  if (!direct || job->ry > 0 || job->ry + job->rh < job->info->height) {
    P->row = stk__malloc(P->row_bytes, "PNG row buffer");
    if (!P->row) return STK_ERR_OUT_OF_MEMORY;
  }
  for (int y = 0; y < job->info->height; y++) {
    int r = y - job->ry;
    bool inside = r >= 0 && r < job->rh;
    uint8_t *dst = direct && inside ? stk__sink_row(job, r) : P->row;
    err = spng_decode_row(P->ctx, dst, P->row_bytes);
    if (err != 0 && !(err == SPNG_EOI && y == job->info->height - 1))
      return spng_failure(job, err, "row decode");
    if (!inside) continue;
    if (direct)
      stk__sink_row_done(job, r);
    else
      emit_row(job, P, dst, r);
  }
  return STK_OK;
}

static stk_status run_png(stk__decode_job *job, png_state *P) {
  P->ctx = spng_ctx_new(0);
  if (!P->ctx) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: cannot create a PNG decoder", job->name);
  int err = spng_set_crc_action(P->ctx, SPNG_CRC_ERROR, SPNG_CRC_ERROR);
  /* Ancillary chunks: at most 16 MiB each and 64 MiB in all (decompressed included). */
  if (!err) err = spng_set_chunk_limits(P->ctx, (size_t)16 << 20, (size_t)64 << 20);
  if (!err) err = spng_set_png_buffer(P->ctx, job->data, job->size);
  if (err) return spng_failure(job, err, "setup");
  bool gray_file = job->info->channels == 1 && job->info->bit_depth <= 8;
  if (job->info->bit_depth == 16)
    P->fmt = SPNG_FMT_RGBA16; /* rounded to 8 bits by emit_row */
  else
    P->fmt = job->color == STK__COLOR_GRAY && gray_file ? SPNG_FMT_G8 : SPNG_FMT_RGB8;
  job->c = job->color == STK__COLOR_GRAY ? 1 : 3;
  size_t total;
  err = spng_decoded_image_size(P->ctx, P->fmt, &total);
  if (err) return spng_failure(job, err, "header");
  P->row_bytes = total / (size_t)job->info->height;
  size_t px_bytes = P->fmt == SPNG_FMT_G8 ? 1 : P->fmt == SPNG_FMT_RGBA16 ? 8 : 3;
  if (P->row_bytes < (size_t)job->info->width * px_bytes)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: PNG row size %zu is too small", job->name, P->row_bytes);
  STK_TRY(job->info->progressive ? decode_interlaced(job, P, total) : decode_rows(job, P));
  /* All image data was read: read on to IEND so the last chunks' CRCs are checked
   * (libspng stops inside the last IDAT once the pixels are complete). */
  err = spng_decode_chunks(P->ctx);
  if (err) return spng_failure(job, err, "trailing chunks");
  stk__sink_finish(job);
  return STK_OK;
}

stk_status stk__png_decode(stk__decode_job *job) {
  png_state P;
  memset(&P, 0, sizeof P);
  stk_status st = run_png(job, &P);
  spng_ctx_free(P.ctx);
  free(P.row);
  free(P.image);
  return st;
}
