/* The GPU PNG decoder's host half: chunk planning and the CPU run of the device
 * routines (png_plan.h). */
#include "png_plan.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../shared/inflate.h"

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool valid_depth(int type, int depth) {
  switch (type) {
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

/* What the chunk walk has seen so far. */
typedef struct {
  bool ihdr, plte, trns, gama, srgb, phys, iccp;
  int texts; /* tEXt chunks so far */
  int idat;  /* 0 none yet, 1 inside the IDAT run, 2 after it */
  size_t zsize;
} walk_state;

static bool read_ihdr(const uint8_t *p, uint32_t len, stk_png_header *h, const char **why) {
  if (len != 13) return *why = "IHDR length is not 13", false;
  uint32_t w = be32(p), ht = be32(p + 4);
  if (w == 0 || ht == 0 || w > 0x7fffffffu || ht > 0x7fffffffu) return *why = "invalid size", false;
  if (!valid_depth(p[9], p[8])) return *why = "invalid colour type / bit depth", false;
  if (p[10] != 0 || p[11] != 0 || p[12] > 1)
    return *why = "unknown compression, filter or interlace method", false;
  memset(h, 0, sizeof *h);
  h->width = (int32_t)w, h->height = (int32_t)ht;
  h->depth = p[8], h->color_type = p[9], h->interlace = p[12];
  return true;
}

static bool read_plte(const uint8_t *p, uint32_t len, walk_state *W, stk_png_header *h,
                      const char **why) {
  if (h->color_type != 3) return *why = "PLTE in a non-palette image", false;
  if (W->plte || W->trns || W->idat) return *why = "PLTE out of order", false;
  if (len % 3 != 0 || len == 0 || len / 3 > (1u << h->depth))
    return *why = "invalid PLTE length", false;
  h->palette_size = (int32_t)(len / 3);
  memcpy(h->palette, p, len);
  W->plte = true;
  return true;
}

static bool read_trns(const uint8_t *p, uint32_t len, walk_state *W, const stk_png_header *h,
                      const char **why) {
  if (W->trns || W->idat) return *why = "tRNS out of order", false;
  uint32_t top = h->depth == 16 ? 0xffffu : (1u << h->depth) - 1u;
  switch (h->color_type) {
    case 0:
      if (len != 2 || (uint32_t)(p[0] << 8 | p[1]) > top) return *why = "invalid tRNS", false;
      break;
    case 2:
      if (len != 6) return *why = "invalid tRNS", false;
      for (int i = 0; i < 3; i++)
        if ((uint32_t)(p[2 * i] << 8 | p[2 * i + 1]) > top) return *why = "invalid tRNS", false;
      break;
    case 3:
      if (!W->plte || len == 0 || len > (uint32_t)h->palette_size)
        return *why = "invalid tRNS", false;
      break;
    default:
      return *why = "tRNS in an image with alpha", false;
  }
  W->trns = true;
  return true;
}

/* A keyword as the PNG specification allows it: 1 to 79 Latin-1 printable characters,
 * no leading, trailing or consecutive spaces. */
static bool valid_keyword(const uint8_t *p, size_t n) {
  if (n < 1 || n > 79 || p[0] == ' ' || p[n - 1] == ' ') return false;
  for (size_t i = 0; i < n; i++) {
    if (!((p[i] >= 32 && p[i] <= 126) || p[i] >= 161)) return false;
    if (p[i] == ' ' && i > 0 && p[i - 1] == ' ') return false;
  }
  return true;
}

/* iCCP (an ICC profile: most photos' PNGs carry one): a valid keyword, compression
 * method 0 and a zlib stream that inflates completely to at most 16 MiB (the CPU
 * decoder's limit for an ancillary chunk); not beside sRGB, before PLTE and IDAT. */
static bool read_iccp(const uint8_t *p, uint32_t len, walk_state *W) {
  if (W->iccp || W->srgb || W->plte || W->idat) return false;
  const uint8_t *nul = memchr(p, 0, len < 81 ? len : 81);
  if (!nul || !valid_keyword(p, (size_t)(nul - p))) return false;
  size_t at = (size_t)(nul - p) + 1;
  if (len - at < 3 || p[at] != 0) return false; /* method byte, then a stream */
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit(&zs) != Z_OK) return false;
  uint8_t sink[4096];
  zs.next_in = (Bytef *)(p + at + 1);
  zs.avail_in = (uInt)(len - at - 1);
  int rc = Z_OK;
  while (rc == Z_OK && zs.total_out <= ((uLong)16 << 20)) {
    zs.next_out = sink;
    zs.avail_out = sizeof sink;
    rc = inflate(&zs, Z_NO_FLUSH);
  }
  bool ok = rc == Z_STREAM_END && zs.avail_in == 0 && zs.total_out <= ((uLong)16 << 20);
  inflateEnd(&zs);
  return ok && (W->iccp = true);
}

/* tEXt (a keyword, a NUL, Latin-1 text; matplotlib and many tools write one): a valid
 * keyword, printable text (newlines allowed), at most 64 KiB, at most 16 of them. */
static bool read_text(const uint8_t *p, uint32_t len, walk_state *W) {
  if (len > 65536 || W->texts >= 16) return false;
  const uint8_t *nul = memchr(p, 0, len < 81 ? len : 81);
  if (!nul || !valid_keyword(p, (size_t)(nul - p))) return false;
  for (const uint8_t *q = nul + 1; q < p + len; q++)
    if (!((*q >= 32 && *q <= 126) || *q >= 161 || *q == '\n')) return false;
  W->texts++;
  return true;
}

/* gAMA, sRGB, pHYs (simple fixed-size chunks), iCCP and tEXt, taken when valid and in place. */
static bool read_simple(const uint8_t *type, const uint8_t *p, uint32_t len, walk_state *W,
                        const char **why) {
  *why = "ancillary chunk the GPU path does not take";
  if (W->idat) return false;
  if (memcmp(type, "gAMA", 4) == 0) {
    if (W->gama || W->plte || len != 4 || be32(p) == 0 || be32(p) > 0x7fffffffu) return false;
    return W->gama = true;
  }
  if (memcmp(type, "iCCP", 4) == 0) return read_iccp(p, len, W);
  if (memcmp(type, "tEXt", 4) == 0) return read_text(p, len, W);
  if (memcmp(type, "sRGB", 4) == 0) {
    if (W->srgb || W->iccp || W->plte || len != 1 || p[0] > 3) return false;
    return W->srgb = true;
  }
  if (memcmp(type, "pHYs", 4) == 0) {
    if (W->phys || len != 9 || p[8] > 1 || be32(p) > 0x7fffffffu || be32(p + 4) > 0x7fffffffu)
      return false;
    return W->phys = true;
  }
  return false;
}

/* One chunk (its CRC already checked). *end: IEND reached. */
static bool read_chunk(const uint8_t *type, const uint8_t *p, uint32_t len, walk_state *W,
                       stk_png_header *h, bool *end, const char **why) {
  if (!W->ihdr) {
    if (memcmp(type, "IHDR", 4) != 0) return *why = "IHDR is not the first chunk", false;
    return W->ihdr = read_ihdr(p, len, h, why);
  }
  if (memcmp(type, "IDAT", 4) == 0) {
    if (W->idat == 2) return *why = "IDAT chunks are not consecutive", false;
    if (h->color_type == 3 && !W->plte) return *why = "palette image without PLTE", false;
    W->idat = 1;
    W->zsize += len;
    return true;
  }
  if (W->idat == 1) W->idat = 2;
  if (memcmp(type, "IEND", 4) == 0) {
    if (len != 0 || W->idat != 2) return *why = "IEND misplaced or not empty", false;
    return *end = true;
  }
  if (memcmp(type, "PLTE", 4) == 0) return read_plte(p, len, W, h, why);
  if (memcmp(type, "tRNS", 4) == 0) return read_trns(p, len, W, h, why);
  return read_simple(type, p, len, W, why);
}

/* Walks the chunks; with `gather`, copies the IDAT payloads there. */
static bool walk(const uint8_t *d, size_t n, stk_png_header *h, size_t *zsize, uint8_t *gather,
                 const char **why) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n < 8 || memcmp(d, sig, 8) != 0) return *why = "not a PNG", false;
  walk_state W;
  memset(&W, 0, sizeof W);
  size_t pos = 8;
  bool end = false;
  while (!end) {
    if (n - pos < 12) return *why = "truncated", false;
    uint32_t len = be32(d + pos);
    if (len > 0x7fffffffu || len > n - pos - 12) return *why = "truncated", false;
    const uint8_t *type = d + pos + 4, *p = d + pos + 8;
    if ((uint32_t)crc32(0, type, len + 4) != be32(p + len)) return *why = "CRC mismatch", false;
    size_t before = W.zsize;
    if (!read_chunk(type, p, len, &W, h, &end, why)) return false;
    if (gather && W.zsize > before) memcpy(gather + before, p, len);
    pos += 12 + (size_t)len;
  }
  if (W.zsize == 0) return *why = "no image data", false;
  *zsize = W.zsize;
  return true;
}

bool stk__png_plan_file(const uint8_t *data, size_t size, stk__png_plan *out, const char **why) {
  const char *reason = NULL;
  bool ok = walk(data, size, &out->hdr, &out->zsize, NULL, &reason);
  if (ok) stk_png_layout_of(&out->hdr, &out->layout);
  if (why) *why = ok ? NULL : reason;
  return ok;
}

void stk__png_gather_idat(const uint8_t *data, size_t size, uint8_t *dst) {
  stk_png_header h;
  size_t z;
  const char *why;
  walk(data, size, &h, &z, dst, &why);
}

/* ---- the device chain, run on the CPU ---- */

/* Unfilters every pass in place; -1 for a filter type above 4. */
static int unfilter_all(const stk_png_layout *L, uint8_t *raw) {
  for (int p = 0; p < L->npass; p++) {
    const stk_png_pass *P = &L->pass[p];
    const uint8_t *prev = NULL;
    for (int32_t y = 0; y < P->h; y++) {
      uint8_t *row = raw + P->offset + (int64_t)y * (P->row_size + 1);
      if (row[0] > 4) return -1;
      stk_png_unfilter_row(row[0], row + 1, prev, P->row_size, L->bpp);
      prev = row + 1;
    }
  }
  return 0;
}

static int expand(const stk__png_plan *plan, const uint8_t *raw, int color, int x, int y, int w,
                  int h, uint8_t *dst) {
  int c = color == STK_PNG_GRAY ? 1 : 3;
  for (int r = 0; r < h; r++)
    for (int i = 0; i < w; i++)
      if (stk_png_pixel(&plan->hdr, &plan->layout, raw, x + i, y + r, color,
                        dst + ((size_t)r * w + i) * c) != 0)
        return -1;
  return 0;
}

int stk__png_decode_emulated(const uint8_t *data, size_t size, int color, int x, int y, int w,
                             int h, uint8_t *dst, int *detail) {
  stk__png_plan plan;
  *detail = 0;
  if (!stk__png_plan_file(data, size, &plan, NULL)) return STK__PNG_FALLBACK;
  if (w <= 0 || h <= 0) x = y = 0, w = plan.hdr.width, h = plan.hdr.height;
  uint8_t *z = malloc(plan.zsize), *raw = malloc((size_t)plan.layout.total + 1);
  stk_inf_tables *s = malloc(sizeof *s);
  int rc = STK__PNG_FAILED;
  if (!z || !raw || !s) goto done;
  stk__png_gather_idat(data, size, z);
  *detail = stk_inflate_zlib(s, z, plan.zsize, raw, (size_t)plan.layout.total);
  if (*detail != STK_INF_OK) goto done;
  *detail = -1;
  if (unfilter_all(&plan.layout, raw) != 0) goto done;
  if (expand(&plan, raw, color, x, y, w, h, dst) != 0) goto done;
  *detail = 0;
  rc = STK__PNG_OK;
done:
  free(z);
  free(raw);
  free(s);
  return rc;
}
