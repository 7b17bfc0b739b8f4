/* resize: DALI's resize operator on the CPU (HWC images, uint8 or float32). */
#include <math.h>
#include <stdlib.h>

#include "gpu_util.h"
#include "image_util.h"
#include "resample.h"

enum {
  A_RESIZE_X,
  A_RESIZE_Y,
  A_RESIZE_SHORTER,
  A_RESIZE_LONGER,
  A_SIZE,
  A_MODE,
  A_MAX_SIZE,
  A_INTERP,
  A_ANTIALIAS,
  A_DTYPE,
  A_SUBPIXEL,
  A_ROI_START,
  A_ROI_END,
  A_ROI_RELATIVE,
  A_MINIBATCH,
  A_TEMP_BUFFER,
  A_MIN_FILTER,
  A_MAG_FILTER,
  RESIZE_ARGS_COUNT_
};

/* resize's arguments, first in resize_crop_mirror's too (AA: antialias's default). */
#define RESIZE_ARGS(AA)                                                                          \
  [A_RESIZE_X] =                                                                                 \
      {.name = "resize_x",                                                                       \
       .type = STK_ARG_FLOAT,                                                                    \
       .flags = STK_ARGF_PER_SAMPLE,                                                             \
       .default_text = "0.0",                                                                    \
       .doc =                                                                                    \
           "output width; 0 derives it from resize_y (aspect ratio kept in mode \"default\"); "  \
           "negative mirrors the image horizontally. Exclusive with size, resize_shorter and "   \
           "resize_longer"},                                                                     \
  [A_RESIZE_Y] = {.name = "resize_y",                                                            \
                  .type = STK_ARG_FLOAT,                                                         \
                  .flags = STK_ARGF_PER_SAMPLE,                                                  \
                  .default_text = "0.0",                                                         \
                  .doc =                                                                         \
                      "output height; 0 derives it from resize_x; negative mirrors vertically"}, \
  [A_RESIZE_SHORTER] =                                                                           \
      {.name = "resize_shorter",                                                                 \
       .type = STK_ARG_FLOAT,                                                                    \
       .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                                            \
       .default_text = "0.0",                                                                    \
       .max = 1e9,                                                                               \
       .doc =                                                                                    \
           "length of the shorter side of the output, aspect ratio kept: the same as size = "    \
           "[v, v] with mode \"not_smaller\" (the longer side may be bounded by max_size)"},     \
  [A_RESIZE_LONGER] =                                                                            \
      {.name = "resize_longer",                                                                  \
       .type = STK_ARG_FLOAT,                                                                    \
       .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                                            \
       .default_text = "0.0",                                                                    \
       .max = 1e9,                                                                               \
       .doc =                                                                                    \
           "length of the longer side of the output, aspect ratio kept: the same as size = "     \
           "[v, v] with mode \"not_larger\""},                                                   \
  [A_SIZE] =                                                                                     \
      {.name = "size",                                                                           \
       .type = STK_ARG_FLOATS,                                                                   \
       .flags = STK_ARGF_PER_SAMPLE,                                                             \
       .doc =                                                                                    \
           "output size [H, W] (one value: both); a 0 extent is derived from the other by the "  \
           "mode; a negative extent mirrors that axis"},                                         \
  [A_MODE] =                                                                                     \
      {.name = "mode",                                                                           \
       .type = STK_ARG_STRING,                                                                   \
       .default_text = "\"default\"",                                                            \
       .choices = STK__RESIZE_MODE_CHOICES,                                                      \
       .doc =                                                                                    \
           "\"default\": the given size; a missing extent is scaled by the other's scale "       \
           "(aspect kept). \"stretch\": the given size; a missing extent keeps the input's. "    \
           "\"not_larger\": aspect kept, the output fits inside the size (1280x720 to 640x480 "  \
           "gives 640x360). \"not_smaller\": aspect kept, the output covers the size (640x480 "  \
           "to 1920x1080 gives 1920x1440). Exclusive with resize_shorter and resize_longer"},    \
  [A_MAX_SIZE] =                                                                                 \
      {.name = "max_size",                                                                       \
       .type = STK_ARG_FLOATS,                                                                   \
       .flags = STK_ARGF_RANGE,                                                                  \
       .max = 1e9,                                                                               \
       .doc =                                                                                    \
           "limit of the output size [H, W] (one value: both; 0: none). In \"not_larger\" and "  \
           "\"not_smaller\" modes (and resize_shorter / resize_longer) it lowers the common "    \
           "scale, "                                                                             \
           "so the aspect ratio is kept; in \"default\" and \"stretch\" modes each extent is "   \
           "clipped "                                                                            \
           "to its limit"},                                                                      \
  [A_INTERP] =                                                                                   \
      {.name = "interp_type",                                                                    \
       .type = STK_ARG_STRING,                                                                   \
       .default_text = "\"linear\"",                                                             \
       .choices = STK__INTERP_CHOICES,                                                           \
       .doc = "interpolation: nearest, linear (triangle), cubic (Keys, a = -0.5) or lanczos3"},  \
  [A_ANTIALIAS] =                                                                                \
      {.name = "antialias",                                                                      \
       .type = STK_ARG_BOOL,                                                                     \
       .default_text = AA,                                                                       \
       .doc =                                                                                    \
           "when downscaling, widen the filter by the scale factor (area-like averaging, as "    \
           "Pillow); nearest never antialiases"},                                                \
  [A_DTYPE] =                                                                                    \
      {.name = "dtype",                                                                          \
       .type = STK_ARG_STRING,                                                                   \
       .default_text = "\"\"",                                                                   \
       .doc =                                                                                    \
           "output type: \"\" (the input's), \"uint8\" (rounded, clamped), \"float32\" or "      \
           "\"float16\""},                                                                       \
  [A_SUBPIXEL] =                                                                                 \
      {.name = "subpixel_scale",                                                                 \
       .type = STK_ARG_BOOL,                                                                     \
       .default_text = "true",                                                                   \
       .doc =                                                                                    \
           "when the computed size is fractional, keep the exact scale by adjusting the input "  \
           "window to the rounded size (centre kept); false maps the whole window onto the "     \
           "rounded size"},                                                                      \
  [A_ROI_START] =                                                                                \
      {.name = "roi_start",                                                                      \
       .type = STK_ARG_FLOATS,                                                                   \
       .flags = STK_ARGF_PER_SAMPLE,                                                             \
       .doc =                                                                                    \
           "start [y, x] of the input region to resize (with roi_end); a start past the end "    \
           "mirrors that axis"},                                                                 \
  [A_ROI_END] = {.name = "roi_end",                                                              \
                 .type = STK_ARG_FLOATS,                                                         \
                 .flags = STK_ARGF_PER_SAMPLE,                                                   \
                 .doc = "end [y, x] of the input region to resize (with roi_start)"},            \
  [A_ROI_RELATIVE] =                                                                             \
      {.name = "roi_relative",                                                                   \
       .type = STK_ARG_BOOL,                                                                     \
       .default_text = "false",                                                                  \
       .doc =                                                                                    \
           "roi_start / roi_end are fractions of the input size (0: top/left, 1: bottom/right) " \
           "instead of pixels"},                                                                 \
  [A_MINIBATCH] = STK__RESAMPLE_MINIBATCH_ARG, [A_TEMP_BUFFER] = STK__RESAMPLE_TEMP_BUFFER_ARG,  \
  [A_MIN_FILTER] = {.name = "min_filter",                                                        \
                    .type = STK_ARG_STRING,                                                      \
                    .choices = STK__INTERP_CHOICES,                                              \
                    .doc =                                                                       \
                        "the filter of the axes scaled down (default: interp_type), as "         \
                        "DALI; the GPU takes one filter per batch"},                             \
  [A_MAG_FILTER] = {.name = "mag_filter",                                                        \
                    .type = STK_ARG_STRING,                                                      \
                    .choices = STK__INTERP_CHOICES,                                              \
                    .doc = "the filter of the axes scaled up or kept (default: interp_type)"},

static const stk_arg_schema resize_args[] = {RESIZE_ARGS("true")};
STK__CHECK_ARGS(resize_args, RESIZE_ARGS_COUNT_);

static const stk_port_schema image_in[] = {{"input", "HWC image (uint8 or float32)"}};
static const stk_port_schema image_out[] = {{"output", "the resized HWC image"}};

typedef enum { SIZE_XY, SIZE_LIST, SIZE_SHORTER, SIZE_LONGER } size_source;

typedef struct {
  size_source source;
  stk__resize_mode mode;
  stk__interp interp;
  stk__interp interp_min, interp_mag; /* per axis: scaled down / up (DALI's min/mag_filter) */
  bool antialias, subpixel, roi, roi_relative;
  bool has_dtype;
  stk_dtype dtype;
  double max_size[2];
  bool has_max_size;
} resize_state;

/* Checks the combination of size arguments (DALI: exactly one way to give the size). */
static stk_status resize_check_sizes(stk__node *node, resize_state *st) {
  bool xy = stk__arg_given(node, A_RESIZE_X) || stk__arg_given(node, A_RESIZE_Y);
  bool list = stk__arg_given(node, A_SIZE), sh = stk__arg_given(node, A_RESIZE_SHORTER);
  bool lo = stk__arg_given(node, A_RESIZE_LONGER);
  if (xy + list + sh + lo != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give the size in exactly one way: resize_x/resize_y, size, "
                      "resize_shorter or resize_longer");
  if ((sh || lo) && stk__arg_given(node, A_MODE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "mode cannot be combined with %s",
                      sh ? "resize_shorter" : "resize_longer");
  st->source = xy ? SIZE_XY : list ? SIZE_LIST : sh ? SIZE_SHORTER : SIZE_LONGER;
  if (stk__arg_given(node, A_ROI_START) != stk__arg_given(node, A_ROI_END))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "roi_start and roi_end must be given together");
  return STK_OK;
}

static stk_status resize_init(stk__node *node) {
  resize_state st = {0};
  STK_TRY(resize_check_sizes(node, &st));
  st.mode = st.source == SIZE_SHORTER  ? STK__RESIZE_NOT_SMALLER
            : st.source == SIZE_LONGER ? STK__RESIZE_NOT_LARGER
                                       : STK__RESIZE_DEFAULT;
  if (st.source != SIZE_SHORTER && st.source != SIZE_LONGER &&
      !stk__resize_mode_parse(stk__arg_string(node, A_MODE), &st.mode))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "unknown mode \"%s\"",
                      stk__arg_string(node, A_MODE));
  if (!stk__interp_parse(stk__arg_string(node, A_INTERP), &st.interp))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "unknown interp_type \"%s\"",
                      stk__arg_string(node, A_INTERP));
  st.interp_min = st.interp_mag = st.interp;
  if (stk__arg_given(node, A_MIN_FILTER))
    stk__interp_parse(stk__arg_string(node, A_MIN_FILTER), &st.interp_min);
  if (stk__arg_given(node, A_MAG_FILTER))
    stk__interp_parse(stk__arg_string(node, A_MAG_FILTER), &st.interp_mag);
  st.has_dtype = *stk__arg_string(node, A_DTYPE) != '\0';
  if (st.has_dtype) {
    STK_TRY(stk__dtype_or_same(node, A_DTYPE, "dtype", STK_DTYPE_UINT8, &st.dtype));
    if (st.dtype != STK_DTYPE_UINT8 && st.dtype != STK_DTYPE_FLOAT32 &&
        st.dtype != STK_DTYPE_FLOAT16)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "dtype \"%s\": uint8, float32 or float16 expected",
                        stk__arg_string(node, A_DTYPE));
  }
  if ((st.has_max_size = stk__arg_given(node, A_MAX_SIZE))) {
    const double *m;
    size_t n = stk__arg_floats(node, NULL, A_MAX_SIZE, &m);
    if (n != 1 && n != 2)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "max_size has %zu values; expected 1 or 2 ([H, W])", n);
    st.max_size[0] = m[0], st.max_size[1] = m[n - 1];
  }
  st.antialias = stk__arg_bool(node, NULL, A_ANTIALIAS);
  st.subpixel = stk__arg_bool(node, NULL, A_SUBPIXEL);
  st.roi = stk__arg_given(node, A_ROI_START);
  st.roi_relative = stk__arg_bool(node, NULL, A_ROI_RELATIVE);
  resize_state *heap = stk__malloc(sizeof st, "resize state");
  if (!heap) return STK_ERR_OUT_OF_MEMORY;
  *heap = st;
  *stk__node_state(node) = heap;
  return STK_OK;
}

static void resize_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

/* Reads a 2-value [H, W] argument (one value: both). */
static stk_status read_pair(stk__node *node, stk__sample *s, int arg, const char *name,
                            double out[2]) {
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "%s has %zu values; expected [H, W]", name,
                      n);
  out[0] = v[0], out[1] = v[n - 1];
  return STK_OK;
}

/* The request for this sample: sizes, mode, limits and the region of interest. */
static stk_status resize_request(stk__node *node, stk__sample *s, const resize_state *st,
                                 const stk__image *in, stk__resize_request *rq) {
  rq->mode = st->mode;
  rq->has_max_size = st->has_max_size;
  rq->max_size[0] = st->max_size[0], rq->max_size[1] = st->max_size[1];
  rq->subpixel_scale = st->subpixel;
  switch (st->source) {
    case SIZE_XY:
      rq->size[0] = stk__arg_float(node, s, A_RESIZE_Y);
      rq->size[1] = stk__arg_float(node, s, A_RESIZE_X);
      break;
    case SIZE_LIST:
      STK_TRY(read_pair(node, s, A_SIZE, "size", rq->size));
      break;
    default:
      rq->size[0] = rq->size[1] =
          stk__arg_float(node, s, st->source == SIZE_SHORTER ? A_RESIZE_SHORTER : A_RESIZE_LONGER);
  }
  const double extent[2] = {(double)in->h, (double)in->w};
  for (int d = 0; d < 2; d++) rq->lo[d] = 0.0, rq->hi[d] = extent[d];
  if (st->roi) {
    STK_TRY(read_pair(node, s, A_ROI_START, "roi_start", rq->lo));
    STK_TRY(read_pair(node, s, A_ROI_END, "roi_end", rq->hi));
    for (int d = 0; d < 2; d++) {
      if (st->roi_relative) rq->lo[d] *= extent[d], rq->hi[d] *= extent[d];
      if (fabs(rq->hi[d] - rq->lo[d]) < 1e-3) { /* a degenerate ROI samples one spot */
        double off = rq->lo[d] <= rq->hi[d] ? 0.5e-3 : -0.5e-3;
        rq->lo[d] -= off, rq->hi[d] += off;
      }
    }
  }
  return STK_OK;
}

/* The filters of this node's axes (min_filter / mag_filter, resample's helpers). */
static stk__resample_filters filters_of(const resize_state *st) {
  return (stk__resample_filters){st->interp_min, st->interp_mag, st->antialias};
}

static stk_status resize_run(stk__node *node, stk__sample *s) {
  const resize_state *st = *stk__node_state(node);
  static const stk_dtype ok_types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, ok_types, 2, &in));
  if (in.h < 1 || in.w < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "empty %lldx%lld image", (long long)in.h,
                      (long long)in.w);
  stk__resize_request rq;
  STK_TRY(resize_request(node, s, st, &in, &rq));
  int64_t size[2];
  double lo[2], hi[2];
  STK_TRY(stk__sample_wrap(stk__resize_plan(&rq, size, lo, hi), node, s));
  if ((double)size[0] * (double)size[1] > (double)stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "output %lldx%lld exceeds the pixel limit",
                      (long long)size[0], (long long)size[1]);
  stk__image out = {NULL, st->has_dtype ? st->dtype : in.dtype, size[0], size[1], in.c};
  stk__resample_filters f = filters_of(st);
  return stk__resample_axes(node, s, &f, &in, &out, lo, hi);
}

/* ---- GPU backend: the host plans every sample with the CPU's size rules ---- */

static stk_status resize_gpu_plan(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                  stk_gpu_resample_sample *samples, int64_t *shapes,
                                  stk_gpu_resample_args *args) {
  const resize_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  int channels = 0;
  stk__interp interp = st->interp;
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    stk__image img;
    STK_TRY(stk__gpu_resample_source(node, b, in, i, &channels, &img, &samples[i]));
    stk__resize_request rq;
    STK_TRY(resize_request(node, s, st, &img, &rq));
    int64_t size[2];
    double lo[2], hi[2];
    STK_TRY(stk__sample_wrap(stk__resize_plan(&rq, size, lo, hi), node, s));
    stk__resample_filters f = filters_of(st);
    STK_TRY(stk__gpu_batch_interp(node, stk__gpu_sample(b, i), &f, i, size, lo, hi, &interp));
    stk__gpu_resample_target(&samples[i], shapes + 3 * i, size[0], size[1], channels, lo[1], lo[0],
                             hi[1], hi[0]);
  }
  stk_dtype in_dtype = stk_tensor_list_dtype(in);
  *args = (stk_gpu_resample_args){.channels = channels,
                                  .in_dtype = in_dtype,
                                  .out_dtype = st->has_dtype ? st->dtype : in_dtype,
                                  .interp = (int)interp,
                                  .antialias = st->antialias};
  return STK_OK;
}

static stk_status resize_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__gpu_run_resample(node, b, resize_gpu_plan);
}

static const stk_op_schema resize_schema = {
    .name = "resize",
    .doc =
        "Resizes HWC images (uint8 or float32) with DALI's rules. Give the size one way: "
        "resize_x / resize_y, size [H, W], resize_shorter or resize_longer. Missing extents "
        "follow `mode`; max_size bounds the result; extents are rounded half away from zero "
        "(at least 1). Output pixel i samples the input at lo + (i + 0.5) * (hi - lo) / out - "
        "0.5 (pixel centres) over the region [lo, hi) (roi_start / roi_end, default the whole "
        "image); borders replicate the edge pixels. Filters: nearest, linear, cubic, lanczos3, "
        "stretched by the scale factor when downscaling with antialias.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof resize_args / sizeof resize_args[0],
    .args = resize_args,
    .gpu_check =
        "# atol=1\n"
        "return resize(IN, resize_x=123, resize_y=77, device=@)",
};
static const struct stk__gpu_fusion resize_fusion = {.resample_plan = resize_gpu_plan};

const stk__op_def stk__op_resize = {
    .schema = &resize_schema,
    .init = resize_init,
    .destroy = resize_destroy,
    .run_sample = resize_run,
    .run_gpu = resize_run_gpu,
    .fusion = &resize_fusion,
};

/* ---- resize_crop_mirror, fast_resize_crop_mirror: one resampling of the crop's region ---- */

enum {
  RCM_CROP = RESIZE_ARGS_COUNT_,
  RCM_CROP_H,
  RCM_CROP_W,
  RCM_POS_X,
  RCM_POS_Y,
  RCM_ROUNDING,
  RCM_MIRROR,
  RCM_COUNT_
};

#define RCM_ARGS(AA)                                                                    \
  RESIZE_ARGS(AA)                                                                       \
  [RCM_CROP] = {.name = "crop",                                                         \
                .type = STK_ARG_FLOATS,                                                 \
                .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                          \
                .max = 1e9,                                                             \
                .doc =                                                                  \
                    "crop window [H, W] of the resized image (exclusive with crop_h / " \
                    "crop_w; 0 or none: the whole extent)"},                            \
  [RCM_CROP_H] = {.name = "crop_h",                                                     \
                  .type = STK_ARG_FLOAT,                                                \
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                        \
                  .default_text = "0.0",                                                \
                  .max = 1e9,                                                           \
                  .doc = "window height (with crop_w)"},                                \
  [RCM_CROP_W] = {.name = "crop_w",                                                     \
                  .type = STK_ARG_FLOAT,                                                \
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                        \
                  .default_text = "0.0",                                                \
                  .max = 1e9,                                                           \
                  .doc = "window width (with crop_h)"},                                 \
  [RCM_POS_X] = {.name = "crop_pos_x",                                                  \
                 .type = STK_ARG_FLOAT,                                                 \
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                         \
                 .default_text = "0.5",                                                 \
                 .max = 1,                                                              \
                 .doc = "x = round(crop_pos_x * (resized W - crop W))"},                \
  [RCM_POS_Y] = {.name = "crop_pos_y",                                                  \
                 .type = STK_ARG_FLOAT,                                                 \
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,                         \
                 .default_text = "0.5",                                                 \
                 .max = 1,                                                              \
                 .doc = "y = round(crop_pos_y * (resized H - crop H))"},                \
  [RCM_ROUNDING] = {.name = "rounding",                                                 \
                    .type = STK_ARG_STRING,                                             \
                    .default_text = "\"round\"",                                        \
                    .choices = "round|truncate",                                        \
                    .doc = "how the window's anchor becomes an integer"},               \
  [RCM_MIRROR] = {.name = "mirror",                                                     \
                  .type = STK_ARG_INT,                                                  \
                  .flags = STK_ARGF_PER_SAMPLE,                                         \
                  .default_text = "0",                                                  \
                  .doc = "flip mask: 1 horizontal, 2 vertical, 3 both (0: none)"}

static const stk_arg_schema rcm_args[] = {RCM_ARGS("true")};
STK__CHECK_ARGS(rcm_args, RCM_COUNT_);
static const stk_arg_schema fast_rcm_args[] = {RCM_ARGS("false")};
STK__CHECK_ARGS(fast_rcm_args, RCM_COUNT_);

static const stk__crop_arg_ids rcm_crop_ids = {RCM_CROP, RCM_CROP_H, RCM_CROP_W, RCM_POS_X,
                                               RCM_POS_Y};

static stk_status rcm_init(stk__node *node) {
  STK_TRY(stk__crop_args_check(node, &rcm_crop_ids));
  return resize_init(node);
}

/* Sample s's resize, then its crop of the resized image mapped back to the input: the
 * crop's pixels sample the input where the full resize's would (pixel i of the window at
 * lo + (start + i + 0.5) * scale - 0.5), with the same filter scale; a mirrored axis swaps
 * the window's ends. size: the crop's extents [H, W]; lo, hi: its source window. */
static stk_status rcm_plan(stk__node *node, stk__sample *s, const stk__image *in, int64_t size[2],
                           double lo[2], double hi[2]) {
  const resize_state *st = *stk__node_state(node);
  stk__resize_request rq;
  STK_TRY(resize_request(node, s, st, in, &rq));
  int64_t full[2];
  STK_TRY(stk__sample_wrap(stk__resize_plan(&rq, full, lo, hi), node, s));
  stk__rect r;
  bool truncate = strcmp(stk__arg_string(node, RCM_ROUNDING), "truncate") == 0;
  STK_TRY(
      stk__crop_args_rect(node, s, &rcm_crop_ids, STK__OOB_ERROR, truncate, full[0], full[1], &r));
  int64_t start[2] = {r.y, r.x};
  size[0] = r.h, size[1] = r.w;
  int64_t mirror = stk__arg_int(node, s, RCM_MIRROR);
  for (int d = 0; d < 2; d++) {
    double scale = (hi[d] - lo[d]) / (double)full[d], base = lo[d];
    lo[d] = base + (double)start[d] * scale;
    hi[d] = base + (double)(start[d] + size[d]) * scale;
    if (mirror & (d == 0 ? 2 : 1)) {
      double t = lo[d];
      lo[d] = hi[d], hi[d] = t;
    }
  }
  if (size[0] < 1 || size[1] < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the crop window is empty");
  return STK_OK;
}

static stk_status rcm_run(stk__node *node, stk__sample *s) {
  const resize_state *st = *stk__node_state(node);
  static const stk_dtype ok_types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, ok_types, 2, &in));
  if (in.h < 1 || in.w < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "empty %lldx%lld image", (long long)in.h,
                      (long long)in.w);
  int64_t size[2];
  double lo[2], hi[2];
  STK_TRY(rcm_plan(node, s, &in, size, lo, hi));
  stk__image out = {NULL, st->has_dtype ? st->dtype : in.dtype, size[0], size[1], in.c};
  stk__resample_filters f = filters_of(st);
  return stk__resample_axes(node, s, &f, &in, &out, lo, hi);
}

/* GPU: the resample kernels with the windows planned as on the CPU. */
static stk_status rcm_gpu_plan(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                               stk_gpu_resample_sample *samples, int64_t *shapes,
                               stk_gpu_resample_args *args) {
  const resize_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  int channels = 0;
  stk__interp interp = st->interp;
  for (size_t i = 0; i < n; i++) {
    stk__image img;
    STK_TRY(stk__gpu_resample_source(node, b, in, i, &channels, &img, &samples[i]));
    int64_t size[2];
    double lo[2], hi[2];
    STK_TRY(rcm_plan(node, stk__gpu_sample(b, i), &img, size, lo, hi));
    stk__resample_filters f = filters_of(st);
    STK_TRY(stk__gpu_batch_interp(node, stk__gpu_sample(b, i), &f, i, size, lo, hi, &interp));
    stk__gpu_resample_target(&samples[i], shapes + 3 * i, size[0], size[1], channels, lo[1], lo[0],
                             hi[1], hi[0]);
  }
  stk_dtype in_dtype = stk_tensor_list_dtype(in);
  *args = (stk_gpu_resample_args){.channels = channels,
                                  .in_dtype = in_dtype,
                                  .out_dtype = st->has_dtype ? st->dtype : in_dtype,
                                  .interp = (int)interp,
                                  .antialias = st->antialias};
  return STK_OK;
}

static stk_status rcm_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__gpu_run_resample(node, b, rcm_gpu_plan);
}
/* As resize: a consumer that absorbs resampling (crop_mirror_normalize) runs this plan
 * fused (stk__gpu_run_resample then hands the input over unchanged). */
static const struct stk__gpu_fusion rcm_fusion = {.resample_plan = rcm_gpu_plan};

#define RCM_DOC                                                                           \
  "Resize, crop and mirror in one resampling (DALI's resize_crop_mirror): the result of " \
  "resize (same arguments and rules), then crop (crop / crop_h / crop_w at crop_pos_x / " \
  "crop_pos_y of the resized image; a window leaving it is an error), then flip (mirror " \
  "mask), computed by resampling only the crop's region of the input."

static const stk_op_schema rcm_schema = {
    .name = "resize_crop_mirror",
    .doc = RCM_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = RCM_COUNT_,
    .args = rcm_args,
    .gpu_check =
        "# atol=0.05 mismatch=0.001\n"
        "m = random.coin_flip(probability=0.5)\n"
        "r = resize_crop_mirror(IN, resize_shorter=96, crop=[64, 80], crop_pos_x=0.3, "
        "mirror=m, device=@)\n"
        "return crop_mirror_normalize(r, mean=[123.675, 116.28, 103.53], "
        "std=[58.395, 57.12, 57.375], dtype=\"float32\", device=@)",
};
const stk__op_def stk__op_resize_crop_mirror = {
    .schema = &rcm_schema,
    .init = rcm_init,
    .destroy = resize_destroy,
    .run_sample = rcm_run,
    .run_gpu = rcm_run_gpu,
    .fusion = &rcm_fusion,
};

static const stk_op_schema fast_rcm_schema = {
    .name = "fast_resize_crop_mirror",
    .doc = RCM_DOC " DALI's legacy name: the same with antialias off by default.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = RCM_COUNT_,
    .args = fast_rcm_args,
    .gpu_check =
        "# atol=1 mismatch=0.001\n"
        "m = random.coin_flip(probability=0.5)\n"
        "return fast_resize_crop_mirror(IN, resize_shorter=96, crop=[64, 80], "
        "crop_pos_x=0.3, mirror=m, device=@)",
};
const stk__op_def stk__op_fast_resize_crop_mirror = {
    .schema = &fast_rcm_schema,
    .init = rcm_init,
    .destroy = resize_destroy,
    .run_sample = rcm_run,
    .run_gpu = rcm_run_gpu,
    .fusion = &rcm_fusion,
};
