/* bb_flip, bbox_paste, coord_flip: the per-box and per-point geometry that follows an
 * image flip or paste (DALI's operators of these names). Boxes are float32 [N, 4] (or a
 * flat multiple of 4) in relative coordinates, [x, y, w, h] or with ltrb [l, t, r, b];
 * points are float32 [N, D], D <= 3. The arithmetic is float32, as in DALI. */
#include <string.h>

#include "box_util.h"
#include "boxes_gpu.h"
#include "image_util.h"

/* ---- bb_flip ---- */

enum { BF_HORIZONTAL, BF_VERTICAL, BF_LTRB, BF_COUNT_ };

static const stk_arg_schema bb_flip_args[] = {
    [BF_HORIZONTAL] = {.name = "horizontal",
                       .type = STK_ARG_INT,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .default_text = "1",
                       .doc = "non-zero: mirror the boxes left-right (x -> 1 - x)"},
    [BF_VERTICAL] = {.name = "vertical",
                     .type = STK_ARG_INT,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .default_text = "0",
                     .doc = "non-zero: mirror the boxes top-bottom (y -> 1 - y)"},
    [BF_LTRB] = {.name = "ltrb",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "boxes are [left, top, right, bottom]; otherwise [x, y, width, height]"},
};
STK__CHECK_ARGS(bb_flip_args, BF_COUNT_);

static const stk_port_schema boxes_in[] = {{"input", "boxes, float32 [N, 4], relative"}};
static const stk_port_schema boxes_out[] = {{"output", "the boxes, same shape"}};

static stk_status bb_flip_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int64_t n = 0;
  STK_TRY(stk__box_input(node, s, in, 4, &n));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, in->shape, in->layout, &out));
  bool h = stk__arg_int(node, s, BF_HORIZONTAL) != 0, v = stk__arg_int(node, s, BF_VERTICAL) != 0;
  stk__bb_flip(in->data, out->data, n, stk__arg_bool(node, NULL, BF_LTRB), h, v);
  return STK_OK;
}

static stk_status bb_flip_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__bb_flip_gpu(node, b, BF_HORIZONTAL, BF_VERTICAL, BF_LTRB);
}

static const stk_op_schema bb_flip_schema = {
    .name = "bb_flip",
    .doc =
        "Mirrors relative boxes as flip mirrors their image: horizontally [x, y, w, h] "
        "becomes [1 - x - w, y, w, h] (ltrb: [1 - r, t, 1 - l, b]), vertically likewise in "
        "y. Feed the same random flags as the image's flip (see docs/detection.md).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = boxes_in,
    .num_outputs = 1,
    .outputs = boxes_out,
    .num_args = BF_COUNT_,
    .args = bb_flip_args,
    .gpu_check =
        "b = constant(fdata=[0.1, 0.2, 0.3, 0.5, 0.6, 0.0, 0.2, 0.1, 0.33, 0.71, 0.123, "
        "0.01], shape=[3, 4])\n"
        "h = random.coin_flip(probability=0.5)\n"
        "v = random.coin_flip(probability=0.5)\n"
        "return bb_flip(b, horizontal=h, vertical=v, device=@)",
};
const stk__op_def stk__op_bb_flip = {
    .schema = &bb_flip_schema, .run_sample = bb_flip_run, .run_gpu = bb_flip_run_gpu};

/* ---- bbox_paste ---- */

enum { BP_RATIO, BP_PASTE_X, BP_PASTE_Y, BP_LTRB, BP_COUNT_ };

static const stk_arg_schema bbox_paste_args[] = {
    [BP_RATIO] = {.name = "ratio",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                  .doc = "how many times larger the canvas is than the image (>= 1)"},
    [BP_PASTE_X] = {.name = "paste_x",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0.5",
                    .doc = "horizontal position of the image in the canvas, 0 (left) .. 1"},
    [BP_PASTE_Y] = {.name = "paste_y",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0.5",
                    .doc = "vertical position of the image in the canvas, 0 (top) .. 1"},
    [BP_LTRB] = {.name = "ltrb",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "boxes are [left, top, right, bottom]; otherwise [x, y, width, height]"},
};
STK__CHECK_ARGS(bbox_paste_args, BP_COUNT_);

static stk_status bbox_paste_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int64_t n = 0;
  STK_TRY(stk__box_input(node, s, in, 4, &n));
  double ratio = stk__arg_float(node, s, BP_RATIO);
  double px = stk__arg_float(node, s, BP_PASTE_X), py = stk__arg_float(node, s, BP_PASTE_Y);
  if (!(ratio >= 1.0) || !(px >= 0 && px <= 1) || !(py >= 0 && py <= 1))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs ratio >= 1 and paste_x, paste_y in [0, 1]; got %g, %g, %g", ratio, px,
                      py);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, in->shape, in->layout, &out));
  stk__bbox_paste(in->data, out->data, n, stk__arg_bool(node, NULL, BP_LTRB), ratio, px, py);
  return STK_OK;
}

static const stk_op_schema bbox_paste_schema = {
    .name = "bbox_paste",
    .doc =
        "Moves relative boxes into the canvas paste puts their image in: a canvas ratio "
        "times larger with the image at (paste_x, paste_y); coordinates become "
        "c / ratio + paste * (1 - 1 / ratio), sizes size / ratio.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = boxes_in,
    .num_outputs = 1,
    .outputs = boxes_out,
    .num_args = BP_COUNT_,
    .args = bbox_paste_args,
};
const stk__op_def stk__op_bbox_paste = {.schema = &bbox_paste_schema, .run_sample = bbox_paste_run};

/* ---- coord_flip ---- */

enum {
  CF_LAYOUT,
  CF_FLIP_X,
  CF_FLIP_Y,
  CF_FLIP_Z,
  CF_CENTER_X,
  CF_CENTER_Y,
  CF_CENTER_Z,
  CF_COUNT_
};

#define FLIP_ARG(axis, def)                                                                       \
  {                                                                                               \
    .name = "flip_" axis, .type = STK_ARG_INT, .flags = STK_ARGF_PER_SAMPLE, .default_text = def, \
    .doc = "non-zero: mirror the " axis                                                           \
           " coordinate about "                                                                   \
           "center_" axis                                                                         \
  }
#define CENTER_ARG(axis)                                                         \
  {                                                                              \
    .name = "center_" axis, .type = STK_ARG_FLOAT, .flags = STK_ARGF_PER_SAMPLE, \
    .default_text = "0.5",                                                       \
    .doc = "the " axis                                                           \
           " coordinate of the mirror (c -> 2 center - "                         \
           "c)"                                                                  \
  }

static const stk_arg_schema coord_flip_args[] = {
    [CF_LAYOUT] = {.name = "layout",
                   .type = STK_ARG_STRING,
                   .default_text = "\"\"",
                   .doc = "the order of the coordinates, a permutation of \"x\", \"xy\" or "
                          "\"xyz\"; empty: x, xy or xyz by the point size"},
    [CF_FLIP_X] = FLIP_ARG("x", "1"),
    [CF_FLIP_Y] = FLIP_ARG("y", "0"),
    [CF_FLIP_Z] = FLIP_ARG("z", "0"),
    [CF_CENTER_X] = CENTER_ARG("x"),
    [CF_CENTER_Y] = CENTER_ARG("y"),
    [CF_CENTER_Z] = CENTER_ARG("z"),
};
STK__CHECK_ARGS(coord_flip_args, CF_COUNT_);

static const stk_port_schema coords_in[] = {{"input", "points, float32 [N, D], D = 1..3"}};
static const stk_port_schema coords_out[] = {{"output", "the points, same shape"}};

/* For each of the D coordinates of a point: the axis (0 x, 1 y, 2 z) it is. */
static stk_status coord_axes(const stk__node *node, stk__sample *s, int64_t d, int axes[3]) {
  const char *layout = stk__arg_string(node, CF_LAYOUT);
  if (!*layout) layout = d == 1 ? "x" : d == 2 ? "xy" : "xyz";
  bool seen[3] = {false, false, false};
  bool ok = (int64_t)strlen(layout) == d;
  for (int64_t k = 0; ok && k < d; k++) {
    const char *p = strchr("xyz", layout[k]);
    ok = layout[k] && p && (p - "xyz") < d && !seen[p - "xyz"];
    if (ok) axes[k] = (int)(p - "xyz"), seen[axes[k]] = true;
  }
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "layout '%s' does not fit points of %lld coordinates (a permutation of "
                      "x, xy or xyz)",
                      layout, (long long)d);
  return STK_OK;
}

/* Validates one sample's points and reads its axes and flip arguments (both backends). */
static stk_status coord_flip_check(stk__node *node, stk__sample *s, const stk__tensor *in,
                                   int axes[3], stk__coord_flip_spec *f) {
  if (in->ndim != 2 || in->shape[1] < 1 || in->shape[1] > 3 || in->dtype != STK_DTYPE_FLOAT32)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects float32 points [N, D] with D = 1, 2 or 3; got %d dimensions "
                      "of %s",
                      in->ndim, stk_dtype_name(in->dtype));
  STK_TRY(coord_axes(node, s, in->shape[1], axes));
  for (int a = 0; a < 3; a++) {
    f->flip[a] = stk__arg_int(node, s, CF_FLIP_X + a) != 0;
    f->center[a] = (float)stk__arg_float(node, s, CF_CENTER_X + a);
  }
  return STK_OK;
}

static stk_status coord_flip_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int axes[3];
  stk__coord_flip_spec f;
  STK_TRY(coord_flip_check(node, s, in, axes, &f));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, 2, in->shape, in->layout, &out));
  stk__coord_flip(in->data, out->data, in->shape[0], (int)in->shape[1], axes, &f);
  return STK_OK;
}

static stk_status coord_flip_run_gpu(stk__node *node, stk__gpu_batch *b) {
  static const stk__coord_flip_gpu_args a = {coord_flip_check};
  return stk__coord_flip_gpu(node, b, &a);
}

static const stk_op_schema coord_flip_schema = {
    .name = "coord_flip",
    .doc =
        "Mirrors points (keypoints, polygon vertices) as flip mirrors their image: each "
        "flipped coordinate c becomes 2 * center - c (center 0.5: relative coordinates).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = coords_in,
    .num_outputs = 1,
    .outputs = coords_out,
    .num_args = CF_COUNT_,
    .args = coord_flip_args,
    .gpu_check =
        "p = constant(fdata=[0.1, 0.2, 0.6, 0.9, 1.5, -0.2, 0.25, 0.75], shape=[4, 2])\n"
        "x = random.coin_flip(probability=0.5)\n"
        "y = random.coin_flip(probability=0.5)\n"
        "c = random.uniform(range=[0.0, 1.0])\n"
        "return coord_flip(p, flip_x=x, flip_y=y, center_y=c, device=@)",
};
const stk__op_def stk__op_coord_flip = {
    .schema = &coord_flip_schema, .run_sample = coord_flip_run, .run_gpu = coord_flip_run_gpu};
