/* Format dispatch, header peeking, ROI and orientation handling shared by the JPEG and
 * PNG decoders.
 *
 * EXIF orientation as three flags. The displayed image D is the stored image S (W x H)
 * seen through: D(x, y) = S(sx, sy) with
 *   no swap: sx = flip_x ? W-1-x : x,   sy = flip_y ? H-1-y : y
 *   swap:    sx = flip_x ? W-1-y : y,   sy = flip_y ? H-1-x : x
 * which is 1: identity, 2: mirror, 3: rotate 180, 4: flip, 5: transpose,
 * 6: rotate 90 clockwise, 7: transverse, 8: rotate 90 counter-clockwise. The same map
 * holds inside a decoded sub-rectangle, so only the needed region is decoded. */
#include <stdlib.h>
#include <string.h>

#include "codecs.h"

static const struct {
  bool swap, flip_x, flip_y;
} orientations[9] = {
    {false, false, false}, /* 0: unused */
    {false, false, false}, {false, true, false}, {false, true, true}, {false, false, true},
    {true, false, false},  {true, false, true},  {true, true, true},  {true, true, false},
};

stk__image_format stk__image_sniff(const uint8_t *data, size_t size) {
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!data) return STK__IMAGE_UNKNOWN;
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return STK__IMAGE_JPEG;
  if (size >= 8 && memcmp(data, png_sig, 8) == 0) return STK__IMAGE_PNG;
  return STK__IMAGE_UNKNOWN;
}

/* Names formats we recognise but do not decode, so the error says what the file is. */
static const char *other_format(const uint8_t *d, size_t n) {
  if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return "GIF";
  if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return "WebP";
  if (n >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0)) return "TIFF";
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return "BMP";
  if (n >= 12 && memcmp(d, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0) return "JPEG 2000";
  if (n >= 4 && memcmp(d, "\xff\x4f\xff\x51", 4) == 0) return "JPEG 2000 codestream";
  if (n >= 12 && memcmp(d + 4, "ftyp", 4) == 0) return "HEIF/AVIF";
  if (n >= 4 && memcmp(d, "\0\0\1\0", 4) == 0) return "ICO";
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7') return "PNM";
  return NULL;
}

stk_status stk__image_peek(const uint8_t *data, size_t size, const char *name,
                           stk__image_info *out) {
  const char *nm = name ? name : "<image>";
  memset(out, 0, sizeof *out);
  if (!data || size == 0) return STK_FAIL(STK_ERR_DECODE, "%s: empty image data", nm);
  switch (stk__image_sniff(data, size)) {
    case STK__IMAGE_JPEG:
      return stk__jpeg_peek(data, size, nm, out);
    case STK__IMAGE_PNG:
      return stk__png_peek(data, size, nm, out);
    default:
      break;
  }
  const char *other = other_format(data, size);
  if (other)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: %s images are not supported (JPEG and PNG are)", nm,
                    other);
  return STK_FAIL(STK_ERR_DECODE, "%s: unknown image format (%zu bytes, not JPEG or PNG)", nm,
                  size);
}

stk_status stk__image_alloc_malloc(void *ctx, int h, int w, int c, uint8_t **out) {
  (void)ctx;
  size_t n;
  if (h < 0 || w < 0 || c < 0 || !stk__mul_size((size_t)h * (size_t)w, (size_t)c, &n))
    return STK_FAIL(STK_ERR_LIMIT, "%dx%dx%d image does not fit in memory", h, w, c);
  *out = stk__malloc(n ? n : 1, "decoded image");
  return *out ? STK_OK : STK_ERR_OUT_OF_MEMORY;
}

/* ---- colour ---- */

void stk__convert_rgb_row(const uint8_t *src, uint8_t *dst, int n, stk__color color) {
  switch (color) {
    case STK__COLOR_RGB:
      if (src != dst) memcpy(dst, src, (size_t)n * 3);
      break;
    case STK__COLOR_BGR:
      for (int i = 0; i < n; i++) {
        uint8_t r = src[3 * i], g = src[3 * i + 1], b = src[3 * i + 2];
        dst[3 * i] = b;
        dst[3 * i + 1] = g;
        dst[3 * i + 2] = r;
      }
      break;
    case STK__COLOR_GRAY:
      for (int i = 0; i < n; i++) dst[i] = stk__luma601(src[3 * i], src[3 * i + 1], src[3 * i + 2]);
      break;
  }
}

/* ---- the sink: decoded rows of the stored region -> oriented output ---- */

stk_status stk__sink_begin(stk__decode_job *job, int dw, int dh, int c) {
  job->dw = dw;
  job->dh = dh;
  job->c = c;
  job->tmp = NULL;
  int oh = job->swap ? dw : dh, ow = job->swap ? dh : dw;
  STK_TRY(job->alloc(job->alloc_ctx, oh, ow, c, &job->out));
  if (!job->swap) return STK_OK;
  size_t bytes;
  if (!stk__mul_size((size_t)dw * (size_t)dh, (size_t)c, &bytes))
    return STK_FAIL(STK_ERR_LIMIT, "%s: %dx%d image too large", job->name, dw, dh);
  job->tmp = stk__malloc(bytes ? bytes : 1, "orientation staging buffer");
  return job->tmp ? STK_OK : STK_ERR_OUT_OF_MEMORY;
}

uint8_t *stk__sink_row(stk__decode_job *job, int r) {
  size_t row_bytes = (size_t)job->dw * (size_t)job->c;
  if (job->swap) return job->tmp + (size_t)r * row_bytes;
  return job->out + (size_t)(job->flip_y ? job->dh - 1 - r : r) * row_bytes;
}

/* Reverses the pixel order of a row in place. */
static void mirror_row(uint8_t *row, int n, int c) {
  for (int i = 0, j = n - 1; i < j; i++, j--) {
    uint8_t *a = row + (size_t)i * c, *b = row + (size_t)j * c;
    for (int k = 0; k < c; k++) {
      uint8_t t = a[k];
      a[k] = b[k];
      b[k] = t;
    }
  }
}

void stk__sink_row_done(stk__decode_job *job, int r) {
  if (!job->swap && job->flip_x) mirror_row(stk__sink_row(job, r), job->dw, job->c);
}

/* out (dh wide, dw tall) from t (dw wide, dh tall): out(x, y) = t(tx, ty) with
 * tx = flip_x ? dw-1-y : y, ty = flip_y ? dh-1-x : x. Tiled so both sides stay cached. */
static void transpose(const uint8_t *t, int dw, int dh, int c, bool flip_x, bool flip_y,
                      uint8_t *out) {
  enum { TILE = 32 };
  for (int y0 = 0; y0 < dw; y0 += TILE) {
    int y1 = y0 + TILE < dw ? y0 + TILE : dw;
    for (int x0 = 0; x0 < dh; x0 += TILE) {
      int x1 = x0 + TILE < dh ? x0 + TILE : dh;
      for (int y = y0; y < y1; y++) {
        int tx = flip_x ? dw - 1 - y : y;
        uint8_t *o = out + ((size_t)y * dh + x0) * c;
        for (int x = x0; x < x1; x++, o += c) {
          int ty = flip_y ? dh - 1 - x : x;
          const uint8_t *p = t + ((size_t)ty * dw + tx) * c;
          if (c == 3) {
            o[0] = p[0];
            o[1] = p[1];
            o[2] = p[2];
          } else {
            for (int k = 0; k < c; k++) o[k] = p[k];
          }
        }
      }
    }
  }
}

void stk__sink_finish(stk__decode_job *job) {
  if (job->swap) transpose(job->tmp, job->dw, job->dh, job->c, job->flip_x, job->flip_y, job->out);
  stk__sink_abort(job);
}

void stk__sink_abort(stk__decode_job *job) {
  free(job->tmp);
  job->tmp = NULL;
}

/* ---- decode ---- */

/* Maps the oriented ROI to the stored image's region (see the top of the file). */
static void map_roi(stk__decode_job *job, int x, int y, int w, int h) {
  int sw = job->info->width, sh = job->info->height;
  if (!job->swap) {
    job->rx = job->flip_x ? sw - x - w : x;
    job->ry = job->flip_y ? sh - y - h : y;
    job->rw = w;
    job->rh = h;
  } else {
    job->rx = job->flip_x ? sw - y - h : y;
    job->ry = job->flip_y ? sh - x - w : x;
    job->rw = h;
    job->rh = w;
  }
}

static stk_status check_roi(const stk__decode_opts *o, const stk__image_info *info,
                            const char *nm) {
  if (o->roi_w == 0) return STK_OK;
  int64_t x = o->roi_x, y = o->roi_y, w = o->roi_w, h = o->roi_h;
  if (x < 0 || y < 0 || w < 1 || h < 1 || x + w > info->oriented_width ||
      y + h > info->oriented_height)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: region (x %d, y %d, w %d, h %d) is not inside the %dx%d image", nm,
                    o->roi_x, o->roi_y, o->roi_w, o->roi_h, info->oriented_width,
                    info->oriented_height);
  return STK_OK;
}

stk_status stk__image_decode(const uint8_t *data, size_t size, const char *name,
                             const stk__decode_opts *opts, stk__image_alloc_fn alloc,
                             void *alloc_ctx, stk__decoded *out) {
  static const stk__decode_opts defaults;
  const stk__decode_opts *o = opts ? opts : &defaults;
  const char *nm = name ? name : "<image>";
  stk__image_info info;
  memset(out, 0, sizeof *out);
  STK_TRY(stk__image_peek(data, size, nm, &info));
  if (o->max_pixels > 0 && (int64_t)info.width * info.height > o->max_pixels)
    return STK_FAIL(STK_ERR_LIMIT, "%s: %dx%d image has more than max_image_pixels = %lld pixels",
                    nm, info.width, info.height, (long long)o->max_pixels);
  if (o->color != STK__COLOR_RGB && o->color != STK__COLOR_BGR && o->color != STK__COLOR_GRAY)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: invalid output colour %d", nm, (int)o->color);
  if (o->ignore_orientation) { /* the stored image is the displayed one */
    info.orientation = 1;
    info.oriented_width = info.width;
    info.oriented_height = info.height;
  }
  STK_TRY(check_roi(o, &info, nm));

  stk__decode_job job;
  memset(&job, 0, sizeof job);
  job.data = data;
  job.size = size;
  job.name = nm;
  job.info = &info;
  job.color = o->color;
  job.fast_idct = o->fast_idct;
  int orient = info.orientation;
  job.swap = orientations[orient].swap;
  job.flip_x = orientations[orient].flip_x;
  job.flip_y = orientations[orient].flip_y;
  if (o->roi_w == 0)
    map_roi(&job, 0, 0, job.swap ? info.height : info.width, job.swap ? info.width : info.height);
  else
    map_roi(&job, o->roi_x, o->roi_y, o->roi_w, o->roi_h);
  job.min_w = job.swap ? o->min_h : o->min_w;
  job.min_h = job.swap ? o->min_w : o->min_h;
  job.alloc = alloc;
  job.alloc_ctx = alloc_ctx;

  int scale_num = 8;
  stk_status st =
      info.format == STK__IMAGE_JPEG ? stk__jpeg_decode(&job, &scale_num) : stk__png_decode(&job);
  stk__sink_abort(&job);
  out->data = job.out; /* on failure too, so the caller can free it */
  if (st != STK_OK) return st;
  out->c = job.c;
  out->w = job.swap ? job.dh : job.dw;
  out->h = job.swap ? job.dw : job.dh;
  double sx = (double)job.dw / job.rw, sy = (double)job.dh / job.rh;
  out->scale_x = job.swap ? sy : sx;
  out->scale_y = job.swap ? sx : sy;
  return STK_OK;
}
