/* crop_mirror_normalize: DALI's fused crop + mirror + normalise + cast + HWC->CHW, in one
 * pass over the output (no intermediate image). */
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "image_util.h"

enum {
  A_CROP,
  A_CROP_H,
  A_CROP_W,
  A_POS_X,
  A_POS_Y,
  A_MIRROR,
  A_MEAN,
  A_STD,
  A_SCALE,
  A_SHIFT,
  A_DTYPE,
  A_LAYOUT,
  A_PAD,
  A_POLICY,
  A_FILL,
  A_ROUNDING,
  CMN_ARGS_COUNT_
};

static const stk_arg_schema cmn_args[] = {
    [A_CROP] = {.name = "crop",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                .max = 1e9,
                .doc = "window size [H, W] (truncated to integers); none: the whole image"},
    [A_CROP_H] = {.name = "crop_h",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "0.0",
                  .max = 1e9,
                  .doc = "window height (with crop_w)"},
    [A_CROP_W] = {.name = "crop_w",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "0.0",
                  .max = 1e9,
                  .doc = "window width (with crop_h)"},
    [A_POS_X] = {.name = "crop_pos_x",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .default_text = "0.5",
                 .max = 1,
                 .doc = "horizontal position in [0, 1]: x = round(crop_pos_x * (W - crop_W))"},
    [A_POS_Y] = {.name = "crop_pos_y",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .default_text = "0.5",
                 .max = 1,
                 .doc = "vertical position in [0, 1]: y = round(crop_pos_y * (H - crop_H))"},
    [A_MIRROR] = {.name = "mirror",
                  .type = STK_ARG_INT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "0",
                  .doc = "non-zero: mirror the window left-right"},
    [A_MEAN] = {.name = "mean",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "[0.0]",
                .doc = "mean, one value or one per channel"},
    [A_STD] = {.name = "std",
               .type = STK_ARG_FLOATS,
               .flags = STK_ARGF_PER_SAMPLE,
               .default_text = "[1.0]",
               .doc = "standard deviation (non-zero), one value or one per channel"},
    [A_SCALE] = {.name = "scale",
                 .type = STK_ARG_FLOAT,
                 .default_text = "1.0",
                 .doc = "multiplies the normalised value"},
    [A_SHIFT] = {.name = "shift",
                 .type = STK_ARG_FLOAT,
                 .default_text = "0.0",
                 .doc = "added after scaling"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = "float32|float|float16|half|uint8|int8",
                 .doc =
                     "output type; integer outputs are rounded half away from zero and saturated"},
    [A_LAYOUT] = {.name = "output_layout",
                  .type = STK_ARG_STRING,
                  .default_text = "\"CHW\"",
                  .choices = "CHW|HWC",
                  .doc = "output layout"},
    [A_PAD] =
        {.name = "pad_output",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc = "pad the channels to the next power of two (3 -> 4) with fill_values (default 0)"},
    [A_POLICY] = {.name = "out_of_bounds_policy",
                  .type = STK_ARG_STRING,
                  .default_text = "\"error\"",
                  .choices = STK__OOB_CHOICES,
                  .doc = "a window leaving the image: \"error\", \"pad\" (with fill_values) or "
                         "\"trim_to_shape\""},
    [A_FILL] =
        {.name = "fill_values",
         .type = STK_ARG_FLOATS,
         .default_text = "[0.0]",
         .doc = "output values (not normalised) for padded pixels and pad channels: one value, one "
                "per input channel, or one per output channel"},
    [A_ROUNDING] = {.name = "rounding",
                    .type = STK_ARG_STRING,
                    .default_text = "\"round\"",
                    .choices = "round|truncate",
                    .doc = "how the window's anchor becomes an integer"},
};
STK__CHECK_ARGS(cmn_args, CMN_ARGS_COUNT_);

static const stk_port_schema cmn_in[] = {{"input", "HWC image (uint8 or float32)"}};
static const stk_port_schema cmn_out[] = {{"output", "the normalised image (CHW or HWC)"}};

static const stk__crop_arg_ids cmn_ids = {A_CROP, A_CROP_H, A_CROP_W, A_POS_X, A_POS_Y};

typedef struct {
  stk__oob_policy policy;
  bool truncate, planar, pad;
  stk_dtype dtype;
  double scale, shift;
} cmn_state;

static stk_status cmn_init(stk__node *node) {
  cmn_state st = {0};
  STK_TRY(stk__crop_args_check(node, &cmn_ids));
  if (!stk__oob_parse(stk__arg_string(node, A_POLICY), &st.policy))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "unknown out_of_bounds_policy "
                      "\"%s\"",
                      stk__arg_string(node, A_POLICY));
  st.truncate = strcmp(stk__arg_string(node, A_ROUNDING), "truncate") == 0;
  st.planar = strcmp(stk__arg_string(node, A_LAYOUT), "HWC") != 0;
  st.pad = stk__arg_bool(node, NULL, A_PAD);
  st.dtype = stk__dtype_arg(stk__arg_string(node, A_DTYPE));
  if (st.dtype != STK_DTYPE_FLOAT32 && st.dtype != STK_DTYPE_FLOAT16 &&
      st.dtype != STK_DTYPE_UINT8 && st.dtype != STK_DTYPE_INT8)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "dtype \"%s\" is not supported",
                      stk__arg_string(node, A_DTYPE));
  st.scale = stk__arg_float(node, NULL, A_SCALE);
  st.shift = stk__arg_float(node, NULL, A_SHIFT);
  cmn_state *heap = stk__malloc(sizeof st, "crop_mirror_normalize state");
  if (!heap) return STK_ERR_OUT_OF_MEMORY;
  *heap = st;
  *stk__node_state(node) = heap;
  return STK_OK;
}

static void cmn_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

/* fill_values for out_c output channels: 1 value, in_c values (pad channels 0) or out_c. */
static stk_status cmn_fill(stk__node *node, stk__sample *s, int64_t in_c, int64_t out_c,
                           double **out) {
  const double *v;
  size_t n = stk__arg_floats(node, s, A_FILL, &v);
  if (n != 1 && n != (size_t)in_c && n != (size_t)out_c)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'fill_values' has %zu values; "
                      "expected 1, %lld or %lld",
                      n, (long long)in_c, (long long)out_c);
  double *f = stk__scratch(s, (size_t)out_c * sizeof(double));
  if (!f) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (int64_t c = 0; c < out_c; c++) f[c] = n == 1 ? v[0] : (size_t)c < n ? v[c] : 0.0;
  *out = f;
  return STK_OK;
}

static int64_t next_pow2(int64_t c) {
  int64_t p = 1;
  while (p < c) p *= 2;
  return p;
}

static stk_status cmn_run(stk__node *node, stk__sample *s) {
  const cmn_state *st = *stk__node_state(node);
  static const stk_dtype ok_types[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, ok_types, 2, &in));
  stk__cmn_params p = {.mirror = stk__arg_int(node, s, A_MIRROR) != 0,
                       .planar = st->planar,
                       .scale = st->scale,
                       .shift = st->shift};
  STK_TRY(stk__crop_args_rect(node, s, &cmn_ids, st->policy, st->truncate, in.h, in.w, &p.win));
  double *mean = NULL, *sd = NULL, *fill = NULL;
  STK_TRY(stk__channel_values(node, s, A_MEAN, "mean", in.c, &mean));
  STK_TRY(stk__channel_values(node, s, A_STD, "std", in.c, &sd));
  int64_t out_c = st->pad ? next_pow2(in.c) : in.c;
  STK_TRY(cmn_fill(node, s, in.c, out_c, &fill));
  p.mean = mean, p.stddev = sd, p.fill = fill;
  stk__image out = {NULL, st->dtype, p.win.h, p.win.w, out_c};
  size_t need = stk__cmn_scratch_size(&in, &out);
  void *scratch = stk__scratch(s, need);
  if (!scratch) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  int64_t shape[3];
  if (st->planar)
    shape[0] = out_c, shape[1] = out.h, shape[2] = out.w;
  else
    shape[0] = out.h, shape[1] = out.w, shape[2] = out_c;
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, out.dtype, 3, shape, st->planar ? "CHW" : "HWC", &t));
  out.data = t->data;
  return stk__sample_wrap(stk__cmn(&in, &out, &p, scratch, need), node, s);
}

/* ---- GPU backend ---- */

static bool cmn_gpu_can_fuse(const stk__node *cmn) {
  /* without a crop the window is the whole (resampled) image */
  return !stk__arg_given(cmn, A_CROP) && !stk__arg_given(cmn, A_CROP_H) &&
         !stk__arg_given(cmn, A_CROP_W);
}

/* Per-sample normalisation values shared by both GPU paths. */
static stk_status cmn_gpu_values(stk__node *node, stk__sample *s, int c, int out_c, int *mirror,
                                 double mean[4], double sd[4], double fill[4]) {
  double *m = NULL, *d = NULL, *f = NULL;
  STK_TRY(stk__channel_values(node, s, A_MEAN, "mean", c, &m));
  STK_TRY(stk__channel_values(node, s, A_STD, "std", c, &d));
  STK_TRY(cmn_fill(node, s, c, out_c, &f));
  for (int k = 0; k < 4; k++) {
    mean[k] = k < c ? m[k] : 0.0;
    sd[k] = k < c ? d[k] : 1.0;
    fill[k] = k < out_c ? f[k] : 0.0;
  }
  *mirror = stk__arg_int(node, s, A_MIRROR) != 0;
  return STK_OK;
}

/* Output shapes for HWC plans (3 values per sample) in the chosen layout. */
static void cmn_gpu_shapes(const cmn_state *st, int64_t *shapes, size_t n, int out_c) {
  for (size_t i = 0; i < n; i++) {
    int64_t *sh = shapes + 3 * i, h = sh[0], w = sh[1];
    if (st->planar)
      sh[0] = out_c, sh[1] = h, sh[2] = w;
    else
      sh[2] = out_c;
  }
}

/* Resampling producer + normalisation in one resample call (two launches). */
static stk_status cmn_run_fused(stk__node *node, stk__gpu_batch *b, stk__node *producer,
                                stk__gpu_resample_plan_fn plan, const stk_tensor_list *in,
                                stk_gpu_resample_sample *samples, int64_t *shapes,
                                stk_tensor_list **out) {
  const cmn_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_gpu_resample_args args;
  STK_TRY(plan(producer, b, in, samples, shapes, &args));
  int c = args.channels, out_c = st->pad ? (int)next_pow2(c) : c;
  for (size_t i = 0; i < n; i++)
    STK_TRY(cmn_gpu_values(node, stk__gpu_sample(b, i), c, out_c, &samples[i].mirror,
                           samples[i].mean, samples[i].stddev, args.fill));
  /* the CPU chain rounds the resampled image to the producer's type before normalising */
  args.quantize = args.out_dtype == STK_DTYPE_UINT8;
  args.normalize = 1;
  args.out_dtype = st->dtype;
  args.planar = st->planar;
  args.out_channels = out_c;
  args.scale = st->scale;
  args.shift = st->shift;
  cmn_gpu_shapes(st, shapes, n, out_c);
  STK_TRY(stk__gpu_alloc_list(b, st->dtype, 3, shapes, st->planar ? "CHW" : "HWC",
                              stk__gpu_shapes_equal(shapes, n, 3), out));
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(*out, i, &d);
    samples[i].dst = d.data;
  }
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  return stk__gpu_op_check(node,
                           stk_gpu_run_resample(g->api, g->ctx, (int)n, samples, &args,
                                                stk__gpu_stream(b), err, sizeof err),
                           err);
}

/* The crop_mirror_normalize kernel alone. */
static stk_status cmn_run_alone(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                int64_t *shapes, stk_tensor_list **out) {
  const cmn_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_gpu_cmn_sample *samples = stk__calloc(n, sizeof *samples, "a crop_mirror_normalize plan");
  if (!samples) return STK_ERR_OUT_OF_MEMORY;
  stk_status rc = STK_OK;
  int c = 0, out_c = 0;
  for (size_t i = 0; i < n && rc == STK_OK; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    int h, w, ci;
    void *data;
    if ((rc = stk__gpu_image_dims(node, in, i, &h, &w, &ci, &data)) != STK_OK) break;
    if (i == 0) c = ci, out_c = st->pad ? (int)next_pow2(c) : c;
    if (ci != c) {
      rc = STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "the GPU crop_mirror_normalize needs one channel count per batch");
      break;
    }
    stk__rect win;
    if ((rc = stk__crop_args_rect(node, s, &cmn_ids, st->policy, st->truncate, h, w, &win)) !=
        STK_OK)
      break;
    stk_gpu_cmn_sample *g = &samples[i];
    *g = (stk_gpu_cmn_sample){
        .src = data,
        .src_pitch = (size_t)w * (size_t)c * stk_dtype_size(stk_tensor_list_dtype(in)),
        .src_h = h,
        .src_w = w,
        .win_y = (int)win.y,
        .win_x = (int)win.x,
        .win_h = (int)win.h,
        .win_w = (int)win.w};
    rc = cmn_gpu_values(node, s, c, out_c, &g->mirror, g->mean, g->stddev, g->fill);
    shapes[3 * i] = win.h, shapes[3 * i + 1] = win.w;
  }
  if (rc == STK_OK) {
    cmn_gpu_shapes(st, shapes, n, out_c);
    rc = stk__gpu_alloc_list(b, st->dtype, 3, shapes, st->planar ? "CHW" : "HWC",
                             stk__gpu_shapes_equal(shapes, n, 3), out);
  }
  if (rc == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(*out, i, &d);
      samples[i].dst = d.data;
    }
    stk_gpu_cmn_args args = {.channels = c,
                             .out_channels = out_c,
                             .in_dtype = stk_tensor_list_dtype(in),
                             .out_dtype = st->dtype,
                             .planar = st->planar,
                             .scale = st->scale,
                             .shift = st->shift};
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    rc = stk__gpu_op_check(node,
                           stk_gpu_run_cmn(g->api, g->ctx, (int)n, samples, &args,
                                           stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(samples);
  return rc;
}

static stk_status cmn_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk__node *producer = stk__gpu_producer(b, 0);
  stk__gpu_resample_plan_fn plan = stk__gpu_resample_plan_of(producer);
  bool fused = plan && stk__gpu_sole_consumer(b, producer, 0) == node && cmn_gpu_can_fuse(node);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_resample_sample *samples = stk__calloc(n, sizeof *samples, "a resample plan");
  int64_t *shapes = stk__calloc(3 * n, sizeof(int64_t), "shapes");
  stk_status rc = !samples || !shapes ? STK_ERR_OUT_OF_MEMORY
                  : fused ? cmn_run_fused(node, b, producer, plan, in, samples, shapes, &out)
                          : cmn_run_alone(node, b, in, shapes, &out);
  free(samples);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, rc);
}

static const stk_op_schema cmn_schema = {
    .name = "crop_mirror_normalize",
    .doc =
        "Fused crop, mirror, normalisation, type conversion and layout change (DALI's "
        "crop_mirror_normalize): out = (in - mean[c]) / std[c] * scale + shift over the crop "
        "window (placed as in crop), mirrored left-right when `mirror`, written as CHW (or HWC) "
        "in one pass. uint8 inputs use a per-channel table computed in float64.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = cmn_in,
    .num_outputs = 1,
    .outputs = cmn_out,
    .num_args = sizeof cmn_args / sizeof cmn_args[0],
    .args = cmn_args,
    .gpu_check =
        "# atol=0.0001\n"
        "m = random.coin_flip(probability=0.5)\n"
        "return crop_mirror_normalize(IN, crop=[64, 64], mirror=m, mean=[123.675, 116.28, 103.53], "
        "std=[58.395, 57.12, 57.375], dtype=\"float32\", device=@)",
};
static const struct stk__gpu_fusion cmn_fusion = {.absorbs_resampling = cmn_gpu_can_fuse};

const stk__op_def stk__op_crop_mirror_normalize = {
    .schema = &cmn_schema,
    .init = cmn_init,
    .destroy = cmn_destroy,
    .run_sample = cmn_run,
    .run_gpu = cmn_run_gpu,
    .fusion = &cmn_fusion,
};
