/* Crop-window generators (DALI's): random_crop_generator draws a RandomResizedCrop window
 * for a given shape (the window of random_resized_crop and decoders.image_random_crop,
 * crop_window.h), roi_random_crop places a fixed-size window so that it holds as much of
 * a region of interest as it can. Their outputs feed slice-like operators. */
#include <string.h>

#include "crop_window.h"
#include "gpu_util.h" /* stk__node_def */
#include "image_util.h"

/* Element k of an integer (or integral float) shape tensor; false for other types. */
static bool shape_element(const stk__tensor *t, int64_t k, int64_t *v) {
  switch (t->dtype) {
    case STK_DTYPE_INT32:
      *v = ((const int32_t *)t->data)[k];
      return true;
    case STK_DTYPE_INT64:
      *v = ((const int64_t *)t->data)[k];
      return true;
    case STK_DTYPE_UINT32:
      *v = ((const uint32_t *)t->data)[k];
      return true;
    case STK_DTYPE_UINT64:
      *v = (int64_t)((const uint64_t *)t->data)[k];
      return true;
    case STK_DTYPE_INT16:
      *v = ((const int16_t *)t->data)[k];
      return true;
    case STK_DTYPE_UINT16:
      *v = ((const uint16_t *)t->data)[k];
      return true;
    case STK_DTYPE_UINT8:
      *v = ((const uint8_t *)t->data)[k];
      return true;
    case STK_DTYPE_FLOAT32:
      *v = (int64_t)((const float *)t->data)[k];
      return true;
    case STK_DTYPE_FLOAT64:
      *v = (int64_t)((const double *)t->data)[k];
      return true;
    default:
      return false;
  }
}

/* ---- random_crop_generator ---- */

enum { G_AREA, G_RATIO, G_ATTEMPTS, G_SEED, G_COUNT_ };

static const stk_arg_schema generator_args[] = {
    [G_AREA] = {.name = "random_area",
                .type = STK_ARG_FLOATS,
                .default_text = "[0.08, 1.0]",
                .doc = "[min, max] fraction of the area the window covers (uniform)"},
    [G_RATIO] = {.name = "random_aspect_ratio",
                 .type = STK_ARG_FLOATS,
                 .default_text = "[0.75, 1.333333]",
                 .doc = "[min, max] width / height of the window (log-uniform)"},
    [G_ATTEMPTS] = {.name = "num_attempts",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "10",
                    .min = 1,
                    .max = 1e6,
                    .doc = "draws before falling back to a centre crop clamped to the ratio range"},
    [G_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "random seed (-1: derived from the pipeline's seed and the name)"},
};
STK__CHECK_ARGS(generator_args, G_COUNT_);

static const stk_port_schema generator_in[] = {
    {"shape", "1-D integer shape of the image to crop, H and W first (HW or HWC)"}};
static const stk_port_schema generator_out[] = {
    {"anchor", "int32 [y, x]: the window's top-left corner"},
    {"shape", "int32 [h, w]: the window's size"}};

/* A [min, max] range argument (one value: both ends). */
static stk_status read_range(stk__node *node, int arg, double lo_bound, double hi_bound,
                             double r[2]) {
  const double *v;
  size_t n = stk__arg_floats(node, NULL, arg, &v);
  const char *name = stk__node_def(node)->schema->args[arg].name;
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "'%s' needs [min, max]", name);
  r[0] = v[0], r[1] = v[n - 1];
  if (!(r[0] > lo_bound && r[0] <= r[1] && r[1] <= hi_bound))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "'%s' = [%g, %g]: need %g < min <= max <= %g", name, r[0], r[1], lo_bound,
                      hi_bound);
  return STK_OK;
}

static stk_status generator_init(stk__node *node) {
  double r[2];
  STK_TRY(read_range(node, G_AREA, 0.0, 1.0, r));
  return read_range(node, G_RATIO, 0.0, 1e9, r);
}

static stk_status generator_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int64_t count = in->ndim == 1 ? in->shape[0] : -1, h, w;
  if (count < 2 || !shape_element(in, 0, &h) || !shape_element(in, 1, &w))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the input must be a 1-D integer shape with H and W first (got %d "
                      "dimensions of type %s)",
                      in->ndim, stk_dtype_name(in->dtype));
  if (h < 1 || w < 1 || h > INT32_MAX || w > INT32_MAX)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "cannot crop a %lld x %lld image",
                      (long long)h, (long long)w);
  double area[2], ratio[2];
  STK_TRY(read_range(node, G_AREA, 0.0, 1.0, area));
  STK_TRY(read_range(node, G_RATIO, 0.0, 1e9, ratio));
  stk__philox g;
  stk__sample_rng(node, s, &g);
  stk__crop_window win =
      stk__random_crop_window(&g, (int)w, (int)h, area[0], area[1], ratio[0], ratio[1],
                              (int)stk__arg_int(node, NULL, G_ATTEMPTS));
  int64_t two = 2;
  stk__tensor *anchor, *shape;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT32, 1, &two, NULL, &anchor));
  STK_TRY(stk__output(s, 1, STK_DTYPE_INT32, 1, &two, NULL, &shape));
  int32_t *a = anchor->data, *z = shape->data;
  a[0] = win.y, a[1] = win.x, z[0] = win.h, z[1] = win.w;
  return STK_OK;
}

static const stk_op_schema generator_schema = {
    .name = "random_crop_generator",
    .doc =
        "Draws a crop window of random area and aspect ratio for an image of the given shape "
        "(torchvision's RandomResizedCrop window, as random_resized_crop): outputs anchor "
        "[y, x] and shape [h, w], for slice-like operators (decoders.image_slice).",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = generator_in,
    .num_outputs = 2,
    .outputs = generator_out,
    .num_args = G_COUNT_,
    .args = generator_args,
};
const stk__op_def stk__op_random_crop_generator = {
    .schema = &generator_schema,
    .init = generator_init,
    .run_sample = generator_run,
};

/* ---- roi_random_crop ---- */

enum { R_CROP_SHAPE, R_IN_SHAPE, R_ROI_START, R_ROI_END, R_ROI_SHAPE, R_SEED, R_COUNT_ };

static const stk_arg_schema roi_args[] = {
    [R_CROP_SHAPE] = {.name = "crop_shape",
                      .type = STK_ARG_INTS,
                      .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                      .doc = "the window's extent per dimension"},
    [R_IN_SHAPE] = {.name = "in_shape",
                    .type = STK_ARG_INTS,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .doc = "the input's shape: the window stays inside it (not with a data input, "
                           "whose shape is used instead; neither: the window is unbounded)"},
    [R_ROI_START] = {.name = "roi_start",
                     .type = STK_ARG_INTS,
                     .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                     .doc = "the region of interest's first coordinates"},
    [R_ROI_END] = {.name = "roi_end",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "the region's end coordinates (exclusive; or give roi_shape)"},
    [R_ROI_SHAPE] = {.name = "roi_shape",
                     .type = STK_ARG_INTS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "the region's extent (or give roi_end)"},
    [R_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "random seed (-1: derived from the pipeline's seed and the name)"},
};
STK__CHECK_ARGS(roi_args, R_COUNT_);

static const stk_port_schema roi_in[] = {{"input",
                                          "optional: the data to crop (its shape bounds "
                                          "the window)"}};
static const stk_port_schema roi_out[] = {{"anchor", "int64 [ndim]: the window's start"}};

static stk_status roi_init(stk__node *node) {
  bool end = stk__arg_given(node, R_ROI_END), shape = stk__arg_given(node, R_ROI_SHAPE);
  if (end == shape)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give exactly one of 'roi_end' and 'roi_shape'");
  if (stk__node_num_inputs(node) > 0 && stk__arg_given(node, R_IN_SHAPE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "'in_shape' cannot be given with a data input (its shape is used)");
  return STK_OK;
}

/* Reads list argument `arg` of sample s, which must have `ndim` values. */
static stk_status roi_list(stk__node *node, stk__sample *s, int arg, size_t ndim,
                           const int64_t **v) {
  size_t n = stk__arg_ints(node, s, arg, v);
  if (n != ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' has %zu values but 'crop_shape' %zu",
                      stk__node_def(node)->schema->args[arg].name, n, ndim);
  return STK_OK;
}

/* The bounds of the input, when known (in_shape or the data input's shape). */
static stk_status roi_bounds(stk__node *node, stk__sample *s, size_t ndim, const int64_t **bounds) {
  *bounds = NULL;
  if (stk__node_num_inputs(node) > 0) {
    const stk__tensor *in = stk__input(s, 0);
    if ((size_t)in->ndim != ndim)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the input has %d dimensions but 'crop_shape' %zu", in->ndim, ndim);
    *bounds = in->shape;
    return STK_OK;
  }
  if (stk__arg_given(node, R_IN_SHAPE)) return roi_list(node, s, R_IN_SHAPE, ndim, bounds);
  return STK_OK;
}

/* The range of window starts along one dimension (DALI's rule): inside the ROI when the
 * ROI is larger than the window, else covering the ROI; then inside the input. */
static stk_status start_range(stk__node *node, stk__sample *s, size_t d, int64_t crop, int64_t roi0,
                              int64_t roi1, const int64_t *bounds, int64_t r[2]) {
  if (crop < 0 || roi1 < roi0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "dimension %zu: 'crop_shape' %lld and the ROI [%lld, %lld) must be "
                      "non-negative and ordered",
                      d, (long long)crop, (long long)roi0, (long long)roi1);
  if (roi1 - roi0 > crop)
    r[0] = roi0, r[1] = roi1 - crop;
  else
    r[0] = roi1 - crop, r[1] = roi0;
  if (!bounds) return STK_OK;
  if (crop > bounds[d] || roi0 < 0 || roi1 > bounds[d])
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "dimension %zu: the window (%lld) and the ROI [%lld, %lld) must lie in the "
                      "input's extent %lld",
                      d, (long long)crop, (long long)roi0, (long long)roi1, (long long)bounds[d]);
  if (r[0] < 0) r[0] = 0;
  if (r[1] > bounds[d] - crop) r[1] = bounds[d] - crop;
  return STK_OK;
}

static stk_status roi_run(stk__node *node, stk__sample *s) {
  const int64_t *crop, *start, *end, *bounds;
  size_t ndim = stk__arg_ints(node, s, R_CROP_SHAPE, &crop);
  if (ndim == 0 || ndim > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'crop_shape' has %zu values", ndim);
  STK_TRY(roi_list(node, s, R_ROI_START, ndim, &start));
  bool by_shape = stk__arg_given(node, R_ROI_SHAPE);
  STK_TRY(roi_list(node, s, by_shape ? R_ROI_SHAPE : R_ROI_END, ndim, &end));
  STK_TRY(roi_bounds(node, s, ndim, &bounds));
  int64_t n = (int64_t)ndim;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT64, 1, &n, NULL, &out));
  stk__philox g;
  stk__sample_rng(node, s, &g);
  for (size_t d = 0; d < ndim; d++) {
    int64_t r[2] = {0, 0}, roi1 = by_shape ? start[d] + end[d] : end[d];
    STK_TRY(start_range(node, s, d, crop[d], start[d], roi1, bounds, r));
    ((int64_t *)out->data)[d] = r[0] + (int64_t)stk__philox_below(&g, (uint64_t)(r[1] - r[0] + 1));
  }
  return STK_OK;
}

static const stk_op_schema roi_schema = {
    .name = "roi_random_crop",
    .doc =
        "Places a crop_shape window at random so that it holds as much of the region of "
        "interest as it can: inside the ROI when the ROI is larger, covering it when "
        "smaller; within the input when its shape is known (in_shape or a data input). "
        "Outputs the window's start (int64), uniform over the allowed starts per dimension.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = roi_in,
    .num_outputs = 1,
    .outputs = roi_out,
    .num_args = R_COUNT_,
    .args = roi_args,
};
const stk__op_def stk__op_roi_random_crop = {
    .schema = &roi_schema,
    .init = roi_init,
    .run_sample = roi_run,
};
