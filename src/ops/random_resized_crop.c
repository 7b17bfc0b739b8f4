/* random_resized_crop: torchvision's RandomResizedCrop window (crop_window.h), then one
 * resampling pass from that window to the requested size. */
#include <math.h>
#include <stdlib.h>

#include "crop_window.h"
#include "gpu_util.h"
#include "image_util.h"
#include "resample.h"

enum {
  A_SIZE,
  A_AREA,
  A_RATIO,
  A_ATTEMPTS,
  A_INTERP,
  A_ANTIALIAS,
  A_DTYPE,
  A_SEED,
  A_MINIBATCH,
  A_TEMP_BUFFER,
  A_MIN_FILTER,
  A_MAG_FILTER,
  RRC_ARGS_COUNT_
};

static const stk_arg_schema rrc_args[] = {
    [A_SIZE] = {.name = "size",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_REQUIRED | STK_ARGF_RANGE,
                .max = 1e9,
                .doc = "output size [H, W] (one value: square)"},
    [A_AREA] =
        {.name = "random_area",
         .type = STK_ARG_FLOATS,
         .default_text = "[0.08, 1.0]",
         .doc =
             "[min, max] fraction of the input area the window covers (uniform); one value: fixed"},
    [A_RATIO] = {.name = "random_aspect_ratio",
                 .type = STK_ARG_FLOATS,
                 .default_text = "[0.75, 1.3333333333333333]",
                 .doc = "[min, max] width / height of the window (log-uniform); one value: fixed"},
    [A_ATTEMPTS] =
        {.name = "num_attempts",
         .type = STK_ARG_INT,
         .flags = STK_ARGF_RANGE,
         .default_text = "10",
         .min = 1,
         .max = 1e6,
         .doc = "draws before falling back to a centre crop clamped to the aspect ratio range"},
    [A_INTERP] = {.name = "interp_type",
                  .type = STK_ARG_STRING,
                  .default_text = "\"linear\"",
                  .choices = STK__INTERP_CHOICES,
                  .doc = "interpolation: nearest, linear, cubic or lanczos3"},
    [A_ANTIALIAS] = {.name = "antialias",
                     .type = STK_ARG_BOOL,
                     .default_text = "true",
                     .doc = "widen the filter by the scale factor when downscaling"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"\"",
                 .doc = "output type: \"\" (the input's), \"uint8\", \"float32\" or \"float16\""},
    [A_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
    [A_MINIBATCH] = STK__RESAMPLE_MINIBATCH_ARG,
    [A_TEMP_BUFFER] = STK__RESAMPLE_TEMP_BUFFER_ARG,
    [A_MIN_FILTER] = {.name = "min_filter",
                      .type = STK_ARG_STRING,
                      .choices = STK__INTERP_CHOICES,
                      .doc = "the filter of an axis scaled down (default: interp_type), as DALI; "
                             "on the GPU it must equal mag_filter"},
    [A_MAG_FILTER] = {.name = "mag_filter",
                      .type = STK_ARG_STRING,
                      .choices = STK__INTERP_CHOICES,
                      .doc = "the filter of an axis scaled up or kept (default: interp_type)"},
};
STK__CHECK_ARGS(rrc_args, RRC_ARGS_COUNT_);

static const stk_port_schema image_in[] = {{"input", "HWC image (uint8 or float32)"}};
static const stk_port_schema image_out[] = {{"output", "the cropped and resized image"}};

typedef struct {
  int64_t out_h, out_w;
  double area[2], ratio[2];
  int attempts;
  stk__interp interp;
  stk__resample_filters filters; /* per axis: min_filter / mag_filter */
  bool antialias, has_dtype;
  stk_dtype dtype;
} rrc_state;

/* Reads a [min, max] range (one value: both) into r, checking lo <= hi and bounds. */
static stk_status read_range(stk__node *node, int arg, const char *name, double lo_bound,
                             double hi_bound, double r[2]) {
  const double *v;
  size_t n = stk__arg_floats(node, NULL, arg, &v);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "%s has %zu values; expected "
                      "[min, max]",
                      name, n);
  r[0] = v[0], r[1] = v[n - 1];
  if (!(r[0] > lo_bound && r[0] <= r[1] && r[1] <= hi_bound))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "%s = [%g, %g]: need %g < min <= "
                      "max <= %g",
                      name, r[0], r[1], lo_bound, hi_bound);
  return STK_OK;
}

static stk_status rrc_init(stk__node *node) {
  rrc_state st = {0};
  const double *v;
  size_t n = stk__arg_floats(node, NULL, A_SIZE, &v);
  if ((n != 1 && n != 2) ||
      !(v[0] >= 1 && v[n - 1] >= 1 && v[0] < 2147483647.0 && v[n - 1] < 2147483647.0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "size must be [H, W] with positive extents");
  st.out_h = (int64_t)floor(v[0] + 0.5), st.out_w = (int64_t)floor(v[n - 1] + 0.5);
  STK_TRY(read_range(node, A_AREA, "random_area", 0.0, 1.0, st.area));
  STK_TRY(read_range(node, A_RATIO, "random_aspect_ratio", 0.0, 1e6, st.ratio));
  st.attempts = (int)stk__arg_int(node, NULL, A_ATTEMPTS);
  if (!stk__interp_parse(stk__arg_string(node, A_INTERP), &st.interp))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "unknown interp_type \"%s\"",
                      stk__arg_string(node, A_INTERP));
  st.antialias = stk__arg_bool(node, NULL, A_ANTIALIAS);
  st.filters = (stk__resample_filters){st.interp, st.interp, st.antialias};
  if (stk__arg_given(node, A_MIN_FILTER))
    stk__interp_parse(stk__arg_string(node, A_MIN_FILTER), &st.filters.min);
  if (stk__arg_given(node, A_MAG_FILTER))
    stk__interp_parse(stk__arg_string(node, A_MAG_FILTER), &st.filters.mag);
  /* the random windows scale up or down sample by sample; the GPU kernels take one filter
   * per batch */
  if (st.filters.min != st.filters.mag && stk__node_device(node) == STK_DEVICE_GPU)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "different min_filter and mag_filter run on the CPU only (the GPU "
                      "resamples a batch with one filter)");
  st.interp = st.filters.min;
  st.has_dtype = *stk__arg_string(node, A_DTYPE) != '\0';
  if (st.has_dtype) {
    STK_TRY(stk__dtype_or_same(node, A_DTYPE, "dtype", STK_DTYPE_UINT8, &st.dtype));
    if (st.dtype != STK_DTYPE_UINT8 && st.dtype != STK_DTYPE_FLOAT32 &&
        st.dtype != STK_DTYPE_FLOAT16)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "dtype \"%s\": uint8, float32 or float16 expected",
                        stk__arg_string(node, A_DTYPE));
  }
  rrc_state *heap = stk__malloc(sizeof st, "random_resized_crop state");
  if (!heap) return STK_ERR_OUT_OF_MEMORY;
  *heap = st;
  *stk__node_state(node) = heap;
  return STK_OK;
}

static void rrc_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

static stk_status rrc_run(stk__node *node, stk__sample *s) {
  const rrc_state *st = *stk__node_state(node);
  static const stk_dtype ok_types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, ok_types, 2, &in));
  if (in.h < 1 || in.w < 1 || in.h > INT32_MAX || in.w > INT32_MAX)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "cannot crop a %lldx%lld image",
                      (long long)in.h, (long long)in.w);
  stk__philox g;
  stk__sample_rng(node, s, &g);
  stk__crop_window win = stk__random_crop_window(&g, (int)in.w, (int)in.h, st->area[0], st->area[1],
                                                 st->ratio[0], st->ratio[1], st->attempts);
  stk__image out = {NULL, st->has_dtype ? st->dtype : in.dtype, st->out_h, st->out_w, in.c};
  const double lo[2] = {win.y, win.x}, hi[2] = {(double)win.y + win.h, (double)win.x + win.w};
  return stk__resample_axes(node, s, &st->filters, &in, &out, lo, hi);
}

/* ---- GPU backend: the same windows (same Philox draws), resampled on the device ---- */

static stk_status rrc_gpu_plan(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                               stk_gpu_resample_sample *samples, int64_t *shapes,
                               stk_gpu_resample_args *args) {
  const rrc_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  int channels = 0;
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    stk__image img;
    STK_TRY(stk__gpu_resample_source(node, b, in, i, &channels, &img, &samples[i]));
    stk__philox g;
    stk__sample_rng(node, s, &g);
    stk__crop_window win =
        stk__random_crop_window(&g, (int)img.w, (int)img.h, st->area[0], st->area[1], st->ratio[0],
                                st->ratio[1], st->attempts);
    stk__gpu_resample_target(&samples[i], shapes + 3 * i, st->out_h, st->out_w, channels, win.x,
                             win.y, (double)win.x + win.w, (double)win.y + win.h);
  }
  stk_dtype in_dtype = stk_tensor_list_dtype(in);
  *args = (stk_gpu_resample_args){.channels = channels,
                                  .in_dtype = in_dtype,
                                  .out_dtype = st->has_dtype ? st->dtype : in_dtype,
                                  .interp = (int)st->interp,
                                  .antialias = st->antialias};
  return STK_OK;
}

static stk_status rrc_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__gpu_run_resample(node, b, rrc_gpu_plan);
}

static const stk_op_schema rrc_schema = {
    .name = "random_resized_crop",
    .doc =
        "Crops a random window and resizes it to `size` (torchvision's RandomResizedCrop, "
        "DALI's random_resized_crop): up to num_attempts draws of an area fraction uniform in "
        "random_area and an aspect ratio log-uniform in random_aspect_ratio, placed uniformly; "
        "the first that fits wins, else a centre crop clamped to the ratio range. The window "
        "is resampled in one pass (filters as in resize). Each sample draws from its own "
        "stream, so the result does not depend on threads or batch size.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof rrc_args / sizeof rrc_args[0],
    .args = rrc_args,
    .gpu_check =
        "# atol=1\n"
        "return random_resized_crop(IN, size=[96, 112], seed=7, device=@)",
};
static const struct stk__gpu_fusion rrc_fusion = {.resample_plan = rrc_gpu_plan};

const stk__op_def stk__op_random_resized_crop = {
    .schema = &rrc_schema,
    .init = rrc_init,
    .destroy = rrc_destroy,
    .run_sample = rrc_run,
    .run_gpu = rrc_run_gpu,
    .fusion = &rrc_fusion,
};
