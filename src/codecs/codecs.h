/*
 * Image codecs: header peeking and decoding of JPEG (libjpeg-turbo, libjpeg API) and PNG
 * (libspng) into dense HWC uint8 buffers.
 *
 * The decoder takes a region of interest in ORIENTED coordinates (the image as displayed
 * after its EXIF orientation), maps it to the stored image, decodes only that region
 * (JPEG: jpeg_crop_scanline + jpeg_skip_scanlines; PNG: rows are skipped, columns
 * cropped) and applies the orientation to the decoded region. JPEGs may also be
 * downscaled in the DCT domain by 1/2, 1/4 or 1/8 when the caller says how small the
 * result may be.
 *
 * All functions are thread safe (no shared state). Errors name `name` (the file path or
 * sample) and never abort; hostile input gives STK_ERR_DECODE / STK_ERR_UNSUPPORTED /
 * STK_ERR_LIMIT.
 */
#ifndef STOKER_CODECS_H
#define STOKER_CODECS_H

#include "../core/core.h"

typedef enum { STK__IMAGE_UNKNOWN = 0, STK__IMAGE_JPEG = 1, STK__IMAGE_PNG = 2 } stk__image_format;

/* Output colour of a decode. */
typedef enum {
  STK__COLOR_RGB = 0, /* 3 channels */
  STK__COLOR_BGR = 1, /* 3 channels */
  STK__COLOR_GRAY = 2 /* 1 channel: luma, ITU-R BT.601 weights */
} stk__color;

typedef struct {
  stk__image_format format;
  int width, height; /* as stored in the file */
  int channels;      /* components in the file: JPEG 1/3/4, PNG 1 (gray), 2 (gray +
                        alpha), 3 (RGB, palette), 4 (RGBA) */
  int bit_depth;     /* JPEG sample precision, PNG bit depth */
  int orientation;   /* EXIF orientation 1..8; 1 when absent or invalid */
  int oriented_width, oriented_height; /* as displayed: swapped for orientations 5..8 */
  bool progressive; /* JPEG progressive (SOF2/SOF6/SOF10/SOF14); PNG interlaced */
} stk__image_info;

/* The format from the first bytes; STK__IMAGE_UNKNOWN when neither JPEG nor PNG. */
stk__image_format stk__image_sniff(const uint8_t *data, size_t size);

/* Reads the header only: size, channels, orientation (JPEG: SOF and the APP1 Exif
 * segment; PNG: IHDR and eXIf). Fails with STK_ERR_DECODE for empty, unknown or
 * malformed data, STK_ERR_UNSUPPORTED for recognised but unsupported formats (GIF,
 * BMP, TIFF, WebP, ...). `name` may be NULL. */
stk_status stk__image_peek(const uint8_t *data, size_t size, const char *name,
                           stk__image_info *out);

/* Decode options. A zero-initialised struct means: RGB, EXIF orientation applied, the
 * whole image, no downscaling, no pixel limit. */
typedef struct {
  stk__color color;
  bool ignore_orientation; /* true: decode as stored (DALI's adjust_orientation=False) */
  /* Region of interest in oriented coordinates; roi_w == 0 means the whole image.
   * Must lie inside the image (STK_ERR_INVALID_ARGUMENT otherwise). */
  int roi_x, roi_y, roi_w, roi_h;
  /* When either is > 0, a JPEG may be downscaled in the DCT domain by 1/2, 1/4 or 1/8:
   * the smallest of these scales for which the scaled ROI is still >= min_w x min_h
   * (oriented). 3/8, 5/8, 6/8 and 7/8 are not used: libjpeg-turbo has no SIMD code for
   * them and they decode slower than 8/8. */
  int min_w, min_h;
  int64_t max_pixels; /* > 0: refuse stored images with more pixels (STK_ERR_LIMIT) */
  bool fast_idct;     /* JDCT_IFAST instead of the exact JDCT_ISLOW */
} stk__decode_opts;

/* Gives the decoder its output buffer: dense HWC uint8 of h x w x c, at least h*w*c
 * bytes. Called at most once per decode, after the header was read. Returns a status
 * (with a message) when it cannot allocate. */
typedef stk_status (*stk__image_alloc_fn)(void *ctx, int h, int w, int c, uint8_t **out);

/* An allocator on malloc (ctx unused); the caller frees out->data with free(). */
stk_status stk__image_alloc_malloc(void *ctx, int h, int w, int c, uint8_t **out);

typedef struct {
  uint8_t *data; /* from the alloc function */
  int h, w, c;   /* oriented output size */
  /* Output pixels per ROI pixel in x and y (oriented): 1 without DCT scaling, about
   * N/8 with it (exactly out_w / roi_w), so a following resize can account for it. */
  double scale_x, scale_y;
} stk__decoded;

/* Decodes `data` (JPEG or PNG) as `opts` says into a buffer from `alloc`, which the
 * caller owns. On failure out->data is that buffer (holding garbage) or NULL when it
 * was not allocated yet, so the caller can free it. JPEG:
 * truncated or corrupt entropy data is an error (libjpeg's corrupt-data warnings are
 * fatal), and so is data that ends before the EOI marker, even when only the marker is
 * missing: truncation is checked before decoding, whatever the region (corrupt entropy
 * data below a region's last row still goes unnoticed: finding it costs a full decode).
 * PNG: the whole stream is always decoded, so zlib and CRC errors anywhere are errors. */
stk_status stk__image_decode(const uint8_t *data, size_t size, const char *name,
                             const stk__decode_opts *opts, stk__image_alloc_fn alloc,
                             void *alloc_ctx, stk__decoded *out);

/* The orientation (1..8) in an Exif block: a TIFF header and IFD0, optionally preceded
 * by "Exif\0\0" (JPEG APP1 payload or PNG eXIf chunk). 1 when absent or malformed. */
int stk__exif_orientation(const uint8_t *data, size_t size);

/* ---------------------------------------------------------------------------------- */
/* Between image.c and the format decoders (jpeg.c, png.c)                             */
/* ---------------------------------------------------------------------------------- */

/* One decode in progress. image.c fills the request and owns the "sink": the format
 * decoder asks it where each decoded row of the stored region goes, and the sink
 * applies the orientation (row flips in place, a transpose at the end). */
typedef struct {
  /* request */
  const uint8_t *data;
  size_t size;
  const char *name;
  const stk__image_info *info;
  stk__color color;
  bool fast_idct;
  int rx, ry, rw, rh;        /* region of the stored image to decode */
  int min_w, min_h;          /* minimum decoded region size, stored orientation (0: none) */
  bool swap, flip_x, flip_y; /* orientation: see image.c */
  stk__image_alloc_fn alloc;
  void *alloc_ctx;
  /* sink state (set by stk__sink_begin) */
  int dw, dh, c; /* decoded region size (after DCT scaling), stored orientation */
  uint8_t *out;  /* the caller's buffer (oriented) */
  uint8_t *tmp;  /* dw x dh x c staging buffer for transposing orientations */
} stk__decode_job;

/* Allocates the output for a decoded region of dw x dh x c (stored orientation). */
stk_status stk__sink_begin(stk__decode_job *job, int dw, int dh, int c);
/* Where decoded row r (dw * c bytes) must be written. */
uint8_t *stk__sink_row(stk__decode_job *job, int r);
/* Call after row r was written (mirrors it when needed). */
void stk__sink_row_done(stk__decode_job *job, int r);
/* After the last row: transposes into the output when needed; frees the staging. */
void stk__sink_finish(stk__decode_job *job);
/* Frees the staging buffer after a failure. */
void stk__sink_abort(stk__decode_job *job);

/* Luma of one RGB pixel, ITU-R BT.601 weights, rounded to nearest (ties up). */
static inline uint8_t stk__luma601(unsigned r, unsigned g, unsigned b) {
  return (uint8_t)((299u * r + 587u * g + 114u * b + 500u) / 1000u);
}
/* Converts n RGB pixels to `color` (RGB copy, BGR swap or GRAY). src and dst may not
 * overlap unless equal with color RGB/BGR. */
void stk__convert_rgb_row(const uint8_t *src, uint8_t *dst, int n, stk__color color);

/* STK_ERR_DECODE unless the JPEG's data runs to an end-of-image marker after its first
 * scan (trailing bytes after it are allowed): truncation found without decoding. */
stk_status stk__jpeg_check_complete(const uint8_t *data, size_t size, const char *name);

stk_status stk__jpeg_peek(const uint8_t *data, size_t size, const char *name, stk__image_info *out);
stk_status stk__png_peek(const uint8_t *data, size_t size, const char *name, stk__image_info *out);
/* Tests set this to decode every cropped JPEG row through the staging row (jpeg.c's
 * read_staged), the path that in-place rows must match byte for byte. */
extern bool stk__jpeg_rows_staged;

/* Decode job->r* of the stored image through the sink; sets the effective scale. */
stk_status stk__jpeg_decode(stk__decode_job *job, int *scale_num);
stk_status stk__png_decode(stk__decode_job *job);

#endif /* STOKER_CODECS_H */
