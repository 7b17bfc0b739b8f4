/*
 * Separable image resampling on the CPU: the kernel behind resize, random_resized_crop
 * and (later) the fused decode-crop-resize paths.
 *
 * Geometry. A source window [x0, x1) x [y0, y1), in pixel-edge coordinates of the source
 * image (pixel i covers [i, i + 1)), maps onto an out_w x out_h output. Output pixel i
 * samples the source at x0 + (i + 0.5) * (x1 - x0) / out_w - 0.5 in pixel-centre
 * coordinates. x1 < x0 (or y1 < y0) mirrors that axis. The window may be fractional and
 * may reach outside the image; outside coordinates are clamped to the edge.
 *
 * Filters. nearest: source pixel floor(x0 + (i + 0.5) * scale), clamped (DALI / OpenCV
 * nearest). linear: triangle, support 1. cubic: Keys with a = -0.5 (as Pillow), support 2.
 * lanczos3: sinc(x) sinc(x / 3), support 3. With antialias and a downscaling axis
 * (scale = source pixels per output pixel > 1) the filter is stretched by the scale:
 * weights filter((j - centre) / scale) over a support of support * scale (Pillow's
 * approach); otherwise the plain filter. Taps that fall outside the image are folded onto
 * the edge pixels (clamped coordinates) and each output's weights are normalised to 1.
 *
 * Implementation. One float weight table per axis, built once per call (the horizontal
 * one padded to a fixed tap count so its loop unrolls). Two pass orders, the cheaper one
 * chosen from the expected work: horizontal first (filtered rows kept in a ring buffer of
 * as many rows as the vertical filter has taps) or vertical first (converted source rows
 * in the ring, then the horizontal pass on each output row). Either way each needed
 * source row is converted once and the working set stays in cache. The intermediate is
 * float, so nothing is clamped or rounded between the passes and the result matches a
 * float64 evaluation of the separable filter to well under one level; uint8 output is
 * rounded to nearest and clamped.
 */
#ifndef STOKER_OPS_RESAMPLE_H
#define STOKER_OPS_RESAMPLE_H

#include "../core/core.h"

typedef enum {
  STK__INTERP_NEAREST = 0,
  STK__INTERP_LINEAR = 1,
  STK__INTERP_CUBIC = 2,
  STK__INTERP_LANCZOS3 = 3
} stk__interp;

/* The interp_type argument's choices, in schema form. */
#define STK__INTERP_CHOICES "nearest|linear|cubic|lanczos3"

/* Parses "nearest", "linear", "cubic" or "lanczos3"; false for anything else. */
bool stk__interp_parse(const char *name, stk__interp *out);
/* Support radius of the unscaled filter in source pixels (0.5 for nearest). */
double stk__interp_support(stk__interp interp);
/* The unscaled filter at offset x (source pixels from the sampling centre). */
double stk__interp_filter(stk__interp interp, double x);

/* A dense HWC image (rows of w * c elements). */
typedef struct {
  void *data;
  stk_dtype dtype;
  int64_t h, w, c;
} stk__image;

typedef struct {
  double x0, y0, x1, y1; /* source window, pixel-edge coordinates */
  stk__interp interp;
  bool antialias;
  int order; /* 0: the cheaper pass order; 1: horizontal first; 2: vertical first (tests) */
} stk__resample_args;

/* Scratch bytes stk__resample needs for this call (an upper bound, 64-byte aligned
 * pieces included). Returns 0 when the call would be refused (bad sizes). */
size_t stk__resample_scratch_size(const stk__image *src, int64_t out_h, int64_t out_w,
                                  const stk__resample_args *args);

/* Resamples the window of `src` into `dst`. src->dtype: uint8 or float32; dst->dtype:
 * uint8 (rounded to nearest, clamped), float32 or float16; dst->c must equal src->c and
 * dst->h, dst->w >= 1. `scratch` holds at least stk__resample_scratch_size bytes (any
 * alignment; it is realigned inside). Thread-safe: all state is in the arguments.
 * Errors: STK_ERR_INVALID_ARGUMENT (shapes, non-finite window), STK_ERR_UNSUPPORTED
 * (dtypes), STK_ERR_LIMIT (dimensions beyond 2^31 or a filter wider than 2^30 taps in
 * total). */
stk_status stk__resample(const stk__image *src, const stk__image *dst,
                         const stk__resample_args *args, void *scratch, size_t scratch_size);

/* DALI's GPU batching hints of the resampling operators, accepted so DALI code ports:
 * schema entries for resize, random_resized_crop, resize_crop_mirror, tensor_resize. */
#define STK__RESAMPLE_MINIBATCH_ARG                                                       \
  {                                                                                       \
    .name = "minibatch_size", .type = STK_ARG_INT, .default_text = "32",                  \
    .doc =                                                                                \
        "DALI's GPU kernel batching hint: accepted, no effect (stoker resamples a batch " \
        "in one launch)"                                                                  \
  }
#define STK__RESAMPLE_TEMP_BUFFER_ARG                                                 \
  {                                                                                   \
    .name = "temp_buffer_hint", .type = STK_ARG_INT, .default_text = "0",             \
    .doc =                                                                            \
        "DALI's initial scratch size for resampling: accepted, no effect (as DALI's " \
        "CPU variant)"                                                                \
  }

/* ---- resize geometry (DALI's rules) ---- */

typedef enum {
  STK__RESIZE_DEFAULT = 0,    /* missing extents scaled by the geometric mean of the others */
  STK__RESIZE_STRETCH = 1,    /* missing extents keep the input extent */
  STK__RESIZE_NOT_LARGER = 2, /* keep aspect; fit inside the requested size */
  STK__RESIZE_NOT_SMALLER = 3 /* keep aspect; cover the requested size */
} stk__resize_mode;

#define STK__RESIZE_MODE_CHOICES "default|stretch|not_larger|not_smaller"

bool stk__resize_mode_parse(const char *name, stk__resize_mode *out);

/* One sample's resize request, axes in [H, W] order. */
typedef struct {
  double size[2]; /* requested extents; 0: derive; negative: mirror that axis */
  stk__resize_mode mode;
  double max_size[2]; /* output limits, 0: none */
  bool has_max_size;
  bool subpixel_scale; /* keep the exact scale by adjusting the window to rounded sizes */
  double lo[2], hi[2]; /* input region of interest in pixels (lo > hi mirrors) */
} stk__resize_request;

/* Computes the output size (each >= 1) and the source window to resample, following
 * DALI's resize: see resize.c's doc string for the rules. Fails with
 * STK_ERR_INVALID_ARGUMENT for non-finite or absurd (> 2^31) sizes. */
stk_status stk__resize_plan(const stk__resize_request *rq, int64_t out_size[2], double win_lo[2],
                            double win_hi[2]);

#endif /* STOKER_OPS_RESAMPLE_H */
