/* crop_mirror_normalize: DALI's fused crop + mirror + normalise + cast + HWC->CHW, in one
 * pass over the output (no intermediate image). */
#include <stdlib.h>
#include <string.h>

#include "image_util.h"

enum {
  A_CROP, A_CROP_H, A_CROP_W, A_POS_X, A_POS_Y, A_MIRROR, A_MEAN, A_STD, A_SCALE, A_SHIFT,
  A_DTYPE, A_LAYOUT, A_PAD, A_POLICY, A_FILL, A_ROUNDING
};

static const stk_arg_schema cmn_args[] = {
    {"crop", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "window size [H, W] (truncated to integers); none: the whole image"},
    {"crop_h", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "0.0", 0, 0, NULL, "window height (with crop_w)"},
    {"crop_w", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "0.0", 0, 0, NULL, "window width (with crop_h)"},
    {"crop_pos_x", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE, "0.5", 0, 1, NULL,
     "horizontal position in [0, 1]: x = round(crop_pos_x * (W - crop_W))"},
    {"crop_pos_y", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE, "0.5", 0, 1, NULL,
     "vertical position in [0, 1]: y = round(crop_pos_y * (H - crop_H))"},
    {"mirror", STK_ARG_INT, STK_ARGF_PER_SAMPLE, "0", 0, 0, NULL,
     "non-zero: mirror the window left-right"},
    {"mean", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, "[0.0]", 0, 0, NULL,
     "mean, one value or one per channel"},
    {"std", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, "[1.0]", 0, 0, NULL,
     "standard deviation (non-zero), one value or one per channel"},
    {"scale", STK_ARG_FLOAT, 0, "1.0", 0, 0, NULL, "multiplies the normalised value"},
    {"shift", STK_ARG_FLOAT, 0, "0.0", 0, 0, NULL, "added after scaling"},
    {"dtype", STK_ARG_STRING, 0, "\"float32\"", 0, 0, "float32|float|float16|half|uint8|int8",
     "output type; integer outputs are rounded half away from zero and saturated"},
    {"output_layout", STK_ARG_STRING, 0, "\"CHW\"", 0, 0, "CHW|HWC", "output layout"},
    {"pad_output", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "pad the channels to the next power of two (3 -> 4) with fill_values (default 0)"},
    {"out_of_bounds_policy", STK_ARG_STRING, 0, "\"error\"", 0, 0, STK__OOB_CHOICES,
     "a window leaving the image: \"error\", \"pad\" (with fill_values) or \"trim_to_shape\""},
    {"fill_values", STK_ARG_FLOATS, 0, "[0.0]", 0, 0, NULL,
     "output values (not normalised) for padded pixels and pad channels: one value, one "
     "per input channel, or one per output channel"},
    {"rounding", STK_ARG_STRING, 0, "\"round\"", 0, 0, "round|truncate",
     "how the window's anchor becomes an integer"},
};

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
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "unknown out_of_bounds_policy "
                      "\"%s\"", stk__arg_string(node, A_POLICY));
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
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'fill_values' has %zu values; "
                      "expected 1, %lld or %lld", n, (long long)in_c, (long long)out_c);
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
  stk__cmn_params p = {.mirror = stk__arg_int(node, s, A_MIRROR) != 0, .planar = st->planar,
                       .scale = st->scale, .shift = st->shift};
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
  if (st->planar) shape[0] = out_c, shape[1] = out.h, shape[2] = out.w;
  else shape[0] = out.h, shape[1] = out.w, shape[2] = out_c;
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, out.dtype, 3, shape, st->planar ? "CHW" : "HWC", &t));
  out.data = t->data;
  return stk__sample_wrap(stk__cmn(&in, &out, &p, scratch, need), node, s);
}

static const stk_op_schema cmn_schema = {
    "crop_mirror_normalize",
    "Fused crop, mirror, normalisation, type conversion and layout change (DALI's "
    "crop_mirror_normalize): out = (in - mean[c]) / std[c] * scale + shift over the crop "
    "window (placed as in crop), mirrored left-right when `mirror`, written as CHW (or HWC) "
    "in one pass. uint8 inputs use a per-channel table computed in float64.",
    STK_DEVICE_CPU, 0, 1, 1, cmn_in, 1, cmn_out,
    sizeof cmn_args / sizeof cmn_args[0], cmn_args};
const stk__op_def stk__op_crop_mirror_normalize = {&cmn_schema, cmn_init, cmn_destroy, NULL,
                                                   cmn_run, NULL, NULL};
