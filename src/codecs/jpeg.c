/* JPEG: header peeking by walking the markers, and decoding through libjpeg-turbo's
 * libjpeg API with region-of-interest (jpeg_crop_scanline + jpeg_skip_scanlines) and
 * DCT-domain downscaling (scale_num / 8).
 *
 * libjpeg reports errors through error_exit, which must not return: ours longjmps back
 * to run_decode, which turns the message into a status. Warnings that mean lost or
 * corrupt image data (truncation, bad Huffman codes, markers inside entropy data) are
 * raised as errors too, so a damaged file is never returned as a grey-padded image.
 * Warnings about harmless oddities (extraneous bytes between markers, unknown JFIF
 * revisions, bad ICC markers, invalid SOS parameters in baseline files) are ignored. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

/* After jpeglib.h (and its jconfig.h): jerror.h numbers its messages according to
 * JPEG_LIB_VERSION and the arithmetic-coding macros. */
#include <jerror.h>

#include "codecs.h"

/* A progressive JPEG may hold any number of tiny scans, each costing a pass over the
 * coefficients; hostile files use this to burn CPU. TurboJPEG's default limit is 500. */
#define MAX_SCANS 500

#ifndef CROP_MARGIN
#define CROP_MARGIN 2
#endif

/* ---------------------------------------------------------------------------------- */
/* Peek                                                                               */
/* ---------------------------------------------------------------------------------- */

static bool is_sof(unsigned m) {
  return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
}

static stk_status parse_sof(const uint8_t *seg, size_t len, unsigned marker, const char *nm,
                            stk__image_info *out) {
  if (len < 6) return STK_FAIL(STK_ERR_DECODE, "%s: JPEG frame header too short", nm);
  out->bit_depth = seg[0];
  out->height = seg[1] << 8 | seg[2];
  out->width = seg[3] << 8 | seg[4];
  out->channels = seg[5];
  out->progressive = marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce;
  if ((size_t)6 + 3u * out->channels > len)
    return STK_FAIL(STK_ERR_DECODE, "%s: JPEG frame header too short for %d components", nm,
                    out->channels);
  if (out->width == 0 || out->channels == 0)
    return STK_FAIL(STK_ERR_DECODE, "%s: JPEG frame header gives width %d, %d components", nm,
                    out->width, out->channels);
  if (out->height == 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: JPEG height defined by a DNL marker is not supported",
                    nm);
  return STK_OK;
}

stk_status stk__jpeg_peek(const uint8_t *d, size_t n, const char *nm, stk__image_info *out) {
  size_t pos = 2; /* after SOI */
  bool have_exif = false;
  out->format = STK__IMAGE_JPEG;
  out->orientation = 1;
  for (;;) {
    /* Like libjpeg, skip stray bytes before a marker and any 0xFF fill bytes. */
    while (pos < n && d[pos] != 0xff) pos++;
    while (pos < n && d[pos] == 0xff) pos++;
    if (pos >= n) return STK_FAIL(STK_ERR_DECODE, "%s: JPEG data ends before the frame header", nm);
    unsigned m = d[pos++];
    if (m == 0x00 || m == 0x01 || m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) continue;
    if (m == 0xd9 || m == 0xda)
      return STK_FAIL(STK_ERR_DECODE, "%s: JPEG has no frame header before %s", nm,
                      m == 0xd9 ? "EOI" : "its first scan");
    if (n - pos < 2) return STK_FAIL(STK_ERR_DECODE, "%s: JPEG header truncated", nm);
    size_t len = (size_t)d[pos] << 8 | d[pos + 1];
    if (len < 2 || len > n - pos)
      return STK_FAIL(STK_ERR_DECODE, "%s: JPEG marker 0x%02x segment truncated or corrupt", nm, m);
    const uint8_t *seg = d + pos + 2;
    if (m == 0xe1 && !have_exif && len - 2 >= 6 && memcmp(seg, "Exif\0\0", 6) == 0) {
      out->orientation = stk__exif_orientation(seg, len - 2);
      have_exif = true;
    }
    if (is_sof(m)) {
      STK_TRY(parse_sof(seg, len - 2, m, nm, out));
      bool swap = out->orientation >= 5;
      out->oriented_width = swap ? out->height : out->width;
      out->oriented_height = swap ? out->width : out->height;
      return STK_OK;
    }
    pos += len;
  }
}

/* Offset just past the first SOS marker, by walking the segments as the peek does; 0
 * when there is none. */
static size_t first_scan(const uint8_t *d, size_t n) {
  size_t pos = 2;
  for (;;) {
    while (pos < n && d[pos] != 0xff) pos++;
    while (pos < n && d[pos] == 0xff) pos++;
    if (pos >= n) return 0;
    unsigned m = d[pos++];
    if (m == 0x00 || m == 0x01 || m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) continue;
    if (m == 0xda) return pos;
    if (m == 0xd9 || n - pos < 2) return 0;
    size_t len = (size_t)d[pos] << 8 | d[pos + 1];
    if (len < 2 || len > n - pos) return 0;
    pos += len;
  }
}

stk_status stk__jpeg_check_complete(const uint8_t *d, size_t n, const char *nm) {
  /* Entropy-coded data never holds 0xFF 0xD9 (0xFF is stuffed), so an EOI after the first
   * scan's start is the end of the image; an EOI inside an Exif thumbnail, before it,
   * does not count. Searching backwards from the end costs two byte reads for the usual
   * file that ends with its EOI. */
  size_t scan = first_scan(d, n);
  if (scan == 0)
    return STK_FAIL(STK_ERR_DECODE, "%s: JPEG has no scan (truncated in its header)", nm);
  for (size_t i = n; i >= scan + 2; i--)
    if (d[i - 2] == 0xff && d[i - 1] == 0xd9) return STK_OK;
  return STK_FAIL(STK_ERR_DECODE, "%s: JPEG is truncated (%zu bytes, no end-of-image marker)", nm,
                  n);
}

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                             */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  int code; /* libjpeg message code of the failure, -1 for ours */
  char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void on_error_exit(j_common_ptr cinfo) {
  jpeg_err *e = (jpeg_err *)cinfo->err;
  e->code = cinfo->err->msg_code;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jump, 1);
}

static bool is_fatal_warning(int code) {
  return code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_HUFF_BAD_CODE ||
         code == JWRN_ARITH_BAD_CODE || code == JWRN_MUST_RESYNC;
}

/* level -1: a warning; level >= 0: trace messages, which we never want. */
static void on_emit_message(j_common_ptr cinfo, int level) {
  if (level < 0 && is_fatal_warning(cinfo->err->msg_code)) on_error_exit(cinfo);
}

static void on_output_message(j_common_ptr cinfo) { (void)cinfo; /* never print */ }

static void on_progress(j_common_ptr cinfo) {
  j_decompress_ptr d = (j_decompress_ptr)cinfo;
  if (d->input_scan_number > MAX_SCANS) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    e->code = -1;
    snprintf(e->msg, sizeof e->msg, "more than %d progressive scans", MAX_SCANS);
    longjmp(e->jump, 1);
  }
}

static stk_status status_of(const jpeg_err *e, const char *nm) {
  stk_status st = STK_ERR_DECODE;
  switch (e->code) {
    case JERR_OUT_OF_MEMORY:
      st = STK_ERR_OUT_OF_MEMORY;
      break;
    case JERR_SOF_UNSUPPORTED:
    case JERR_NOT_COMPILED:
    case JERR_NOTIMPL:
    case JERR_BAD_PRECISION:
    case JERR_ARITH_NOTIMPL:
    case JERR_CONVERSION_NOTIMPL:
      st = STK_ERR_UNSUPPORTED;
      break;
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
      st = STK_ERR_LIMIT;
      break;
    default:
      break;
  }
  /* Named after the entry point: the static helper's name would tell users nothing. */
  return stk__fail(st, "stk__jpeg_decode", "%s: JPEG: %s", nm, e->msg);
}

/* ---------------------------------------------------------------------------------- */
/* Decode                                                                             */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  struct jpeg_decompress_struct cinfo;
  jpeg_err err;
  struct jpeg_progress_mgr progress;
  bool created;
  bool cmyk;      /* decoding to CMYK, converted by us */
  uint8_t *row;   /* one row of the (column-cropped) decoder output */
  JSAMPROW *rows; /* row pointers for decoding straight into the sink */
} jpeg_state;

/* The decoded span of [start, start + len) of an image dimension of `size` pixels at
 * scale n/8: endpoints rounded, so the decoded region stays centred on the requested
 * one; a region reaching the image's end keeps the last (partial) scaled pixel. */
static void scaled_span(int start, int len, int size, int n, int *s0, int *s1) {
  int64_t full = ((int64_t)size * n + 7) / 8;
  int64_t a = ((int64_t)start * n + 4) / 8, b = ((int64_t)(start + len) * n + 4) / 8;
  if (start + len >= size || b > full) b = full;
  if (b <= a) { /* never empty */
    if (a >= full) a = full - 1;
    b = a + 1;
  }
  *s0 = (int)a;
  *s1 = (int)b;
}

/* Columns [x0, x1) widened by CROP_MARGIN each side (inside [0, full)): a cropped
 * decode treats its own edges as image edges, so fancy chroma upsampling near them
 * differs from a full decode. The margin keeps those columns outside the ROI. */
static void crop_request(int x0, int x1, int full, JDIMENSION *xoff, JDIMENSION *cw) {
  int a = x0 > CROP_MARGIN ? x0 - CROP_MARGIN : 0;
  int b = x1 + CROP_MARGIN < full ? x1 + CROP_MARGIN : full;
  *xoff = (JDIMENSION)a;
  *cw = (JDIMENSION)(b - a);
}

/* The smallest of 1/8, 2/8, 4/8 keeping the decoded region >= the minimum size. */
static int choose_scale(const stk__decode_job *job) {
  static const int candidates[] = {1, 2, 4};
  if (job->min_w <= 0 && job->min_h <= 0) return 8;
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    int n = candidates[i], x0, x1, y0, y1;
    scaled_span(job->rx, job->rw, job->info->width, n, &x0, &x1);
    scaled_span(job->ry, job->rh, job->info->height, n, &y0, &y1);
    if (x1 - x0 >= job->min_w && y1 - y0 >= job->min_h) return n;
  }
  return 8;
}

static stk_status set_color_space(stk__decode_job *job, jpeg_state *S) {
  struct jpeg_decompress_struct *ci = &S->cinfo;
  switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
      break;
    case JCS_CMYK:
    case JCS_YCCK: /* libjpeg only gives CMYK for these; we convert to RGB */
      S->cmyk = true;
      ci->out_color_space = JCS_CMYK;
      return STK_OK;
    default:
      return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: JPEG with %d components of unknown colour space",
                      job->name, ci->num_components);
  }
  ci->out_color_space = job->color == STK__COLOR_GRAY  ? JCS_GRAYSCALE
                        : job->color == STK__COLOR_BGR ? JCS_EXT_BGR
                                                       : JCS_EXT_RGB;
  return STK_OK;
}

/* CMYK -> RGB/BGR/GRAY. Adobe files (Photoshop) store inverted CMYK (255 = no ink);
 * others store ink amounts. With v = 255 - ink: R = v_C * v_K / 255, rounded. */
static void cmyk_row(const uint8_t *src, uint8_t *dst, int n, stk__color color, bool adobe) {
  unsigned inv = adobe ? 0 : 255;
  for (int i = 0; i < n; i++, src += 4) {
    unsigned k = src[3] ^ inv;
    unsigned r = ((src[0] ^ inv) * k + 127) / 255, g = ((src[1] ^ inv) * k + 127) / 255,
             b = ((src[2] ^ inv) * k + 127) / 255;
    if (color == STK__COLOR_GRAY) {
      dst[i] = stk__luma601(r, g, b);
    } else {
      uint8_t *p = dst + 3 * (size_t)i;
      p[0] = (uint8_t)(color == STK__COLOR_BGR ? b : r);
      p[1] = (uint8_t)g;
      p[2] = (uint8_t)(color == STK__COLOR_BGR ? r : b);
    }
  }
}

/* Reads rows straight into the sink (no column offset, no conversion). */
static stk_status read_direct(stk__decode_job *job, jpeg_state *S) {
  struct jpeg_decompress_struct *ci = &S->cinfo;
  S->rows = stk__malloc(sizeof(JSAMPROW) * (size_t)job->dh, "JPEG row pointers");
  if (!S->rows) return STK_ERR_OUT_OF_MEMORY;
  for (int r = 0; r < job->dh; r++) S->rows[r] = stk__sink_row(job, r);
  JDIMENSION first = ci->output_scanline;
  for (int done = 0; done < job->dh;) {
    JDIMENSION got = jpeg_read_scanlines(ci, S->rows + done, (JDIMENSION)(job->dh - done));
    if (got == 0)
      return STK_FAIL(STK_ERR_DECODE, "%s: JPEG decoder stalled at row %u", job->name,
                      (unsigned)(first + done));
    done += (int)got;
  }
  for (int r = 0; r < job->dh; r++) stk__sink_row_done(job, r);
  return STK_OK;
}

static stk_status read_row(stk__decode_job *job, struct jpeg_decompress_struct *ci, uint8_t *p) {
  JSAMPROW row = p;
  if (jpeg_read_scanlines(ci, &row, 1) != 1)
    return STK_FAIL(STK_ERR_DECODE, "%s: JPEG decoder stalled at row %u", job->name,
                    (unsigned)ci->output_scanline);
  return STK_OK;
}

bool stk__jpeg_rows_staged = false;

/* The most bytes a row may reach past its own ends for read_shifted: on the left the
 * column margin plus jpeg_crop_scanline's alignment to the iMCU grid (under 32 + 2 pixels
 * of 3 bytes), on the right the margin. */
#define SPILL_MAX 128

/* Decoded row r straight into the sink when it fits: the decoder's row starts dx pixels
 * before the sink's row and ends a few pixels after it (`before` and `after` bytes), so it
 * is written over its neighbours in the sink's buffer (rows of the same region, one
 * contiguous block) and their bytes are put back afterwards. A neighbour not decoded yet
 * would be rewritten anyway; one already decoded must keep its bytes. Returns false
 * (nothing read) when the row would reach outside the buffer (the first or last rows) or
 * a margin is wider than SPILL_MAX. */
static bool read_shifted(stk__decode_job *job, struct jpeg_decompress_struct *ci, int r, int dx,
                         const uint8_t *lo, const uint8_t *hi, stk_status *st) {
  size_t comps = (size_t)ci->out_color_components, before = (size_t)dx * comps;
  size_t after = ((size_t)ci->output_width - (size_t)dx - (size_t)job->dw) * comps;
  uint8_t *dst = stk__sink_row(job, r), *end = dst + (size_t)job->dw * comps;
  if (before > SPILL_MAX || after > SPILL_MAX || (size_t)(dst - lo) < before ||
      (size_t)(hi - end) < after)
    return false;
  uint8_t keep_before[SPILL_MAX], keep_after[SPILL_MAX];
  memcpy(keep_before, dst - before, before);
  memcpy(keep_after, end, after);
  *st = read_row(job, ci, dst - before);
  memcpy(dst - before, keep_before, before);
  memcpy(end, keep_after, after);
  return true;
}

/* Rows whose columns start dx pixels into the decoder's output (a crop widened to the
 * iMCU grid), or CMYK ones: decoded in place where read_shifted can, else into a
 * staging row, then columns cropped / colour converted into the sink. */
static stk_status read_staged(stk__decode_job *job, jpeg_state *S, int dx) {
  struct jpeg_decompress_struct *ci = &S->cinfo;
  size_t comps = (size_t)ci->out_color_components;
  S->row = stk__malloc((size_t)ci->output_width * comps, "JPEG row buffer");
  if (!S->row) return STK_ERR_OUT_OF_MEMORY;
  const uint8_t *src = S->row + (size_t)dx * comps;
  /* the sink's rows, in whichever order they lie (flip_y reverses them) */
  const uint8_t *first = stk__sink_row(job, 0), *last = stk__sink_row(job, job->dh - 1);
  const uint8_t *lo = first < last ? first : last;
  const uint8_t *hi = (first < last ? last : first) + (size_t)job->dw * comps;
  for (int r = 0; r < job->dh; r++) {
    stk_status st = STK_OK;
    if (S->cmyk || stk__jpeg_rows_staged || !read_shifted(job, ci, r, dx, lo, hi, &st)) {
      STK_TRY(read_row(job, ci, S->row));
      uint8_t *dst = stk__sink_row(job, r);
      if (S->cmyk)
        cmyk_row(src, dst, job->dw, job->color, ci->saw_Adobe_marker);
      else
        memcpy(dst, src, (size_t)job->dw * comps);
    }
    STK_TRY(st);
    stk__sink_row_done(job, r);
  }
  return STK_OK;
}

/* Everything that may longjmp. Only S and job are touched after setjmp returns twice,
 * and both live outside this frame. */
static stk_status run_decode(stk__decode_job *job, jpeg_state *S, int *scale_num) {
  struct jpeg_decompress_struct *ci = &S->cinfo;
  if (setjmp(S->err.jump)) return status_of(&S->err, job->name);
  S->created = true; /* destroy is safe even if create fails half-way */
  jpeg_create_decompress(ci);
  jpeg_mem_src(ci, job->data, (unsigned long)job->size);
  jpeg_read_header(ci, TRUE);
  STK_TRY(set_color_space(job, S));
  ci->dct_method = job->fast_idct ? JDCT_IFAST : JDCT_ISLOW;
  int n = choose_scale(job);
  *scale_num = n;
  ci->scale_num = (unsigned)n;
  ci->scale_denom = 8;
  S->progress.progress_monitor = on_progress;
  ci->progress = &S->progress;
  jpeg_start_decompress(ci);

  int x0, x1, y0, y1;
  scaled_span(job->rx, job->rw, job->info->width, n, &x0, &x1);
  scaled_span(job->ry, job->rh, job->info->height, n, &y0, &y1);
  if (x1 > (int)ci->output_width || y1 > (int)ci->output_height)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: JPEG scaled to %ux%u, smaller than expected", job->name,
                    (unsigned)ci->output_width, (unsigned)ci->output_height);
  JDIMENSION xoff, cw;
  crop_request(x0, x1, (int)ci->output_width, &xoff, &cw);
  if (xoff > 0 || cw < ci->output_width) jpeg_crop_scanline(ci, &xoff, &cw);
  int dx = x0 - (int)xoff;
  if (dx < 0 || (JDIMENSION)(dx + x1 - x0) > ci->output_width)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: JPEG crop [%d, %d) became [%u, +%u)", job->name, x0, x1,
                    (unsigned)xoff, (unsigned)cw);
  if (y0 > 0 && jpeg_skip_scanlines(ci, (JDIMENSION)y0) != (JDIMENSION)y0)
    return STK_FAIL(STK_ERR_DECODE, "%s: JPEG ends before row %d", job->name, y0);
  int c = job->color == STK__COLOR_GRAY ? 1 : 3;
  STK_TRY(stk__sink_begin(job, x1 - x0, y1 - y0, c));
  bool direct = !S->cmyk && dx == 0 && ci->output_width == (JDIMENSION)(x1 - x0);
  STK_TRY(direct ? read_direct(job, S) : read_staged(job, S, dx));
  stk__sink_finish(job);
  return STK_OK;
}

stk_status stk__jpeg_decode(stk__decode_job *job, int *scale_num) {
  if (job->info->bit_depth != 8)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: %d-bit JPEG is not supported (8-bit only)", job->name,
                    job->info->bit_depth);
  /* Up front, so a truncated file fails whatever region is decoded (a region decode
   * stops reading after its last row). */
  STK_TRY(stk__jpeg_check_complete(job->data, job->size, job->name));
  jpeg_state *S = stk__calloc(1, sizeof *S, "JPEG decoder state");
  if (!S) return STK_ERR_OUT_OF_MEMORY;
  S->cinfo.err = jpeg_std_error(&S->err.pub);
  S->err.pub.error_exit = on_error_exit;
  S->err.pub.emit_message = on_emit_message;
  S->err.pub.output_message = on_output_message;
  stk_status st = run_decode(job, S, scale_num);
  /* Never jpeg_finish_decompress: it would read on to EOI, which a ROI decode must not
   * need; destroying aborts the decompression cleanly. */
  if (S->created) jpeg_destroy_decompress(&S->cinfo);
  free(S->row);
  free(S->rows);
  free(S);
  return st;
}
