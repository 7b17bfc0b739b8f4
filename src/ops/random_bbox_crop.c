/* random_bbox_crop: DALI's prospective random crop that keeps boxes valid (2D). Each
 * sample draws one of the thresholds (or, with allow_no_crop, "no crop"), then tries
 * windows until every box (or, without all_boxes_above_threshold, one box) overlaps the
 * window by at least that much — IoU or the box's covered fraction — and some box
 * survives pruning; after total_num_attempts the best window seen is taken. Boxes are
 * pruned by their centre (or by bbox_prune_threshold, the fraction of their area inside),
 * clipped to the window and expressed relative to it. Outputs anchor and shape for
 * slice (relative; absolute with crop_shape), the boxes, then labels and indices when
 * asked for. The random draws are stoker's (Philox); DALI's own sequence is not
 * reproduced. */
#include <math.h>
#include <string.h>

#include "box_util.h"

enum {
  A_BBOX_LAYOUT,
  A_LTRB,
  A_THRESHOLDS,
  A_THRESHOLD_TYPE,
  A_ASPECT_RATIO,
  A_SCALING,
  A_NUM_ATTEMPTS,
  A_TOTAL_NUM_ATTEMPTS,
  A_ALLOW_NO_CROP,
  A_ALL_BOXES_ABOVE,
  A_PRUNE_THRESHOLD,
  A_CROP_SHAPE,
  A_INPUT_SHAPE,
  A_SHAPE_LAYOUT,
  A_OUTPUT_INDICES,
  A_QUIET,
  A_SEED,
  A_COUNT_
};

static const stk_arg_schema rbc_args[] = {
    [A_BBOX_LAYOUT] = {.name = "bbox_layout",
                       .type = STK_ARG_STRING,
                       .choices = "xyXY|xyWH",
                       .doc = "box coordinates: xyXY (l, t, r, b) or xyWH (x, y, w, h); "
                              "default from ltrb"},
    [A_LTRB] = {.name = "ltrb",
                .type = STK_ARG_BOOL,
                .default_text = "true",
                .doc = "deprecated: xyXY when true, xyWH when false (bbox_layout wins)"},
    [A_THRESHOLDS] = {.name = "thresholds",
                      .type = STK_ARG_FLOATS,
                      .default_text = "[0.0]",
                      .doc = "the minimum overlaps to choose from, one per sample"},
    [A_THRESHOLD_TYPE] = {.name = "threshold_type",
                          .type = STK_ARG_STRING,
                          .default_text = "\"iou\"",
                          .choices = "iou|overlap",
                          .doc = "iou: intersection over union of box and window; overlap: "
                                 "the fraction of the box inside the window"},
    [A_ASPECT_RATIO] = {.name = "aspect_ratio",
                        .type = STK_ARG_FLOATS,
                        .default_text = "[1.0, 1.0]",
                        .doc = "[min, max] of the window's width / height (relative to the "
                               "image's unless input_shape is given)"},
    [A_SCALING] = {.name = "scaling",
                   .type = STK_ARG_FLOATS,
                   .default_text = "[1.0, 1.0]",
                   .doc = "[min, max] of the window's width and height relative to the "
                          "image's, drawn independently"},
    [A_NUM_ATTEMPTS] = {.name = "num_attempts",
                        .type = STK_ARG_INT,
                        .flags = STK_ARGF_RANGE,
                        .default_text = "1",
                        .min = 1,
                        .max = 1e6,
                        .doc = "windows tried per threshold before another is drawn"},
    [A_TOTAL_NUM_ATTEMPTS] = {.name = "total_num_attempts",
                              .type = STK_ARG_INT,
                              .default_text = "-1",
                              .doc = "windows tried in all before the best one seen is "
                                     "taken; -1: stoker stops at 100000 (DALI: never)"},
    [A_ALLOW_NO_CROP] = {.name = "allow_no_crop",
                         .type = STK_ARG_BOOL,
                         .default_text = "true",
                         .doc = "'no crop' is one more choice next to the thresholds"},
    [A_ALL_BOXES_ABOVE] = {.name = "all_boxes_above_threshold",
                           .type = STK_ARG_BOOL,
                           .default_text = "true",
                           .doc = "every box must overlap enough (false: one box)"},
    [A_PRUNE_THRESHOLD] = {.name = "bbox_prune_threshold",
                           .type = STK_ARG_FLOAT,
                           .doc = "keep boxes with at least this fraction of their area in "
                                  "the window (0: any part); absent: keep boxes whose centre "
                                  "is in it"},
    [A_CROP_SHAPE] = {.name = "crop_shape",
                      .type = STK_ARG_INTS,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .doc = "a fixed window size in pixels (needs input_shape), ordered by "
                             "shape_layout"},
    [A_INPUT_SHAPE] = {.name = "input_shape",
                       .type = STK_ARG_INTS,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .doc = "the image's size, ordered by shape_layout"},
    [A_SHAPE_LAYOUT] = {.name = "shape_layout",
                        .type = STK_ARG_STRING,
                        .default_text = "\"WH\"",
                        .choices = "WH|HW",
                        .doc = "the order of crop_shape and input_shape"},
    [A_OUTPUT_INDICES] = {.name = "output_bbox_indices",
                          .type = STK_ARG_BOOL,
                          .default_text = "false",
                          .doc = "one more output: the input indices of the kept boxes"},
    [A_QUIET] = {.name = "quiet",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "accepted for DALI compatibility (stoker warns about nothing here)"},
    [A_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(rbc_args, A_COUNT_);

static const stk_port_schema rbc_in[] = {{"bboxes", "float32 [N, 4], relative"},
                                         {"labels", "optional, one per box"}};
static const stk_port_schema rbc_out[] = {
    {"anchor, shape, bboxes, [labels], [bbox_indices]",
     "the window's [x, y] and [w, h] (float32; relative, or pixels with crop_shape), the "
     "kept boxes relative to it, their labels when given, their input indices when asked"}};

typedef struct {
  double l, t, r, b;
} win;

typedef struct {
  const float *boxes; /* n boxes, ltrb */
  int64_t n;
  bool iou, all;
  double threshold;
  bool prune_by_area;
  double prune;
} crop_problem;

static double box_area(const float *b) {
  return fmax(0.0, (double)b[2] - b[0]) * fmax(0.0, (double)b[3] - b[1]);
}

static double inter_area(const float *b, const win *w) {
  double iw = fmin(b[2], w->r) - fmax(b[0], w->l), ih = fmin(b[3], w->b) - fmax(b[1], w->t);
  return iw > 0 && ih > 0 ? iw * ih : 0.0;
}

/* Whether box b stays in window w. */
static bool kept(const crop_problem *p, const float *b, const win *w) {
  if (!p->prune_by_area) {
    double cx = 0.5 * ((double)b[0] + b[2]), cy = 0.5 * ((double)b[1] + b[3]);
    return cx >= w->l && cx <= w->r && cy >= w->t && cy <= w->b;
  }
  double a = box_area(b), in = inter_area(b, w);
  return p->prune > 0 ? (a > 0 && in / a >= p->prune) : in > 0;
}

/* The window's score: the smallest (all) or largest overlap of the boxes; -1 when no box
 * would be kept. */
static double score(const crop_problem *p, const win *w) {
  double best = p->all ? INFINITY : -INFINITY;
  bool any = false;
  for (int64_t i = 0; i < p->n; i++) {
    const float *b = p->boxes + 4 * i;
    double in = inter_area(b, w), a = box_area(b);
    double wa = (w->r - w->l) * (w->b - w->t);
    double m = p->iou ? in / (a + wa - in) : (a > 0 ? in / a : 0.0);
    best = p->all ? fmin(best, m) : fmax(best, m);
    any = any || kept(p, b, w);
  }
  return any ? best : -1.0;
}

typedef struct {
  double smin, smax, amin, amax;
  double aspect_scale; /* input width / height: window aspect ratios are in pixels then */
  bool fixed;
  double fw, fh; /* fixed window size, relative */
} window_rule;

/* Draws one window; false when its aspect ratio falls outside the range. */
static bool draw_window(const window_rule *r, stk__philox *g, win *w) {
  double ww = r->fw, wh = r->fh;
  if (!r->fixed) {
    ww = r->smin + (r->smax - r->smin) * stk__philox_uniform(g);
    wh = r->smin + (r->smax - r->smin) * stk__philox_uniform(g);
    double ar = wh > 0 ? ww * r->aspect_scale / wh : INFINITY;
    if (ar < r->amin || ar > r->amax) return false;
  }
  w->l = (1.0 - ww) * stk__philox_uniform(g), w->t = (1.0 - wh) * stk__philox_uniform(g);
  w->r = w->l + ww, w->b = w->t + wh;
  return true;
}

/* Searches for a window meeting threshold choices drawn from `th` (nt of them; index
 * nt: no crop). */
static win search(const crop_problem *base, const window_rule *rule, const double *th, int64_t nt,
                  bool allow_no_crop, int64_t attempts, int64_t total, stk__philox *g) {
  win full = {0, 0, 1, 1}, best = full;
  double best_score = -INFINITY;
  int64_t tried = 0;
  for (;;) {
    int64_t k = (int64_t)stk__philox_below(g, (uint64_t)(nt + (allow_no_crop ? 1 : 0)));
    if (k == nt) return full;
    crop_problem p = *base;
    p.threshold = th[k];
    for (int64_t a = 0; a < attempts; a++) {
      if (tried++ >= total) return best;
      win w;
      if (!draw_window(rule, g, &w)) continue;
      double sc = p.n ? score(&p, &w) : INFINITY; /* no boxes: any window */
      if (sc < 0) continue;
      if (sc >= p.threshold) return w;
      if (sc > best_score) best_score = sc, best = w;
    }
  }
}

/* Reads the layout and boxes into ltrb (scratch when converted). */
static stk_status boxes_ltrb(stk__node *node, stk__sample *s, bool *xywh, const float **out,
                             int64_t *n) {
  const stk__tensor *in = stk__input(s, 0);
  STK_TRY(stk__box_input(node, s, in, 4, n));
  const char *layout = stk__arg_given(node, A_BBOX_LAYOUT) ? stk__arg_string(node, A_BBOX_LAYOUT)
                       : stk__arg_bool(node, NULL, A_LTRB) ? "xyXY"
                                                           : "xyWH";
  *xywh = strcmp(layout, "xyWH") == 0;
  *out = in->data;
  if (!*xywh) return STK_OK;
  float *b = stk__scratch(s, (size_t)(*n ? *n : 1) * 4 * sizeof *b);
  if (!b) return STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < 4 * *n; i += 4) {
    const float *src = (const float *)in->data + i;
    b[i] = src[0], b[i + 1] = src[1], b[i + 2] = src[0] + src[2], b[i + 3] = src[1] + src[3];
  }
  *out = b;
  return STK_OK;
}

/* A 2-value (W, H) integer argument in shape_layout order; false when absent. */
static stk_status wh_arg(stk__node *node, stk__sample *s, int arg, const char *name, double wh[2],
                         bool *given) {
  *given = stk__arg_given(node, arg);
  if (!*given) return STK_OK;
  const int64_t *v;
  size_t n = stk__arg_ints(node, s, arg, &v);
  if (n != 2 || v[0] <= 0 || v[1] <= 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' needs 2 positive sizes", name);
  bool hw = strcmp(stk__arg_string(node, A_SHAPE_LAYOUT), "HW") == 0;
  wh[0] = (double)v[hw ? 1 : 0], wh[1] = (double)v[hw ? 0 : 1];
  return STK_OK;
}

static stk_status range_arg(stk__node *node, stk__sample *s, int arg, const char *name, double lo,
                            double out[2]) {
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  if (n != 2 || !(v[0] >= lo) || !(v[0] <= v[1]))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' needs [min, max] with %g <= min <= max", name, lo);
  out[0] = v[0], out[1] = v[1];
  return STK_OK;
}

static stk_status make_rule(stk__node *node, stk__sample *s, window_rule *r, double in_wh[2],
                            bool *fixed_pixels) {
  double crop[2], sc[2], ar[2];
  bool has_crop, has_in;
  STK_TRY(wh_arg(node, s, A_CROP_SHAPE, "crop_shape", crop, &has_crop));
  STK_TRY(wh_arg(node, s, A_INPUT_SHAPE, "input_shape", in_wh, &has_in));
  if (has_crop && !has_in)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "crop_shape needs input_shape");
  STK_TRY(range_arg(node, s, A_SCALING, "scaling", 0.0, sc));
  STK_TRY(range_arg(node, s, A_ASPECT_RATIO, "aspect_ratio", 1e-9, ar));
  *r = (window_rule){
      sc[0], fmin(sc[1], 1.0), ar[0], ar[1], has_in ? in_wh[0] / in_wh[1] : 1.0, has_crop, 0, 0};
  if (has_crop) r->fw = fmin(1.0, crop[0] / in_wh[0]), r->fh = fmin(1.0, crop[1] / in_wh[1]);
  *fixed_pixels = has_crop;
  return STK_OK;
}

/* Writes the kept boxes at output `base`, then the labels of input `label_input` (when
 * the node has it) and, with `indices`, the kept indices. */
static stk_status emit_boxes(stk__node *node, stk__sample *s, const crop_problem *p, const win *w,
                             bool xywh, int base, int label_input, bool indices) {
  int64_t *idx = stk__scratch(s, (size_t)(p->n ? p->n : 1) * sizeof *idx), k = 0;
  if (!idx) return STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < p->n; i++)
    if (kept(p, p->boxes + 4 * i, w)) idx[k++] = i;
  int64_t shape[2] = {k, 4};
  stk__tensor *ob;
  STK_TRY(stk__output(s, base, STK_DTYPE_FLOAT32, 2, shape, NULL, &ob));
  double ww = w->r - w->l, wh = w->b - w->t;
  for (int64_t j = 0; j < k; j++) {
    const float *b = p->boxes + 4 * idx[j];
    float *o = (float *)ob->data + 4 * j;
    o[0] = (float)((fmax(b[0], w->l) - w->l) / ww), o[1] = (float)((fmax(b[1], w->t) - w->t) / wh);
    o[2] = (float)((fmin(b[2], w->r) - w->l) / ww), o[3] = (float)((fmin(b[3], w->b) - w->t) / wh);
    if (xywh) o[2] -= o[0], o[3] -= o[1];
  }
  int next = base + 1;
  if (stk__node_num_inputs(node) > label_input) {
    const stk__tensor *lab = stk__input(s, label_input);
    size_t es = stk_dtype_size(lab->dtype);
    int64_t per = lab->ndim ? 1 : 0, total = 1;
    for (int d = 0; d < lab->ndim; d++) total *= lab->shape[d];
    if (lab->ndim < 1 || lab->shape[0] != p->n)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "labels have %lld rows for %lld boxes",
                        (long long)(lab->ndim ? lab->shape[0] : 0), (long long)p->n);
    per = p->n ? total / p->n : 0;
    int64_t ls[STK_MAX_NDIM];
    memcpy(ls, lab->shape, sizeof ls);
    ls[0] = k;
    stk__tensor *ol;
    STK_TRY(stk__output(s, next++, lab->dtype, lab->ndim, ls, lab->layout, &ol));
    for (int64_t j = 0; j < k; j++)
      memcpy((char *)ol->data + (size_t)(j * per) * es,
             (const char *)lab->data + (size_t)(idx[j] * per) * es, (size_t)per * es);
  }
  if (indices) {
    stk__tensor *oi;
    STK_TRY(stk__output(s, next, STK_DTYPE_INT32, 1, &k, NULL, &oi));
    for (int64_t j = 0; j < k; j++) ((int32_t *)oi->data)[j] = (int32_t)idx[j];
  }
  return STK_OK;
}

static stk_status rbc_run(stk__node *node, stk__sample *s) {
  crop_problem p = {.iou = strcmp(stk__arg_string(node, A_THRESHOLD_TYPE), "iou") == 0,
                    .all = stk__arg_bool(node, NULL, A_ALL_BOXES_ABOVE),
                    .prune_by_area = stk__arg_given(node, A_PRUNE_THRESHOLD)};
  if (p.prune_by_area) p.prune = stk__arg_float(node, NULL, A_PRUNE_THRESHOLD);
  bool xywh = false, pixels = false;
  STK_TRY(boxes_ltrb(node, s, &xywh, &p.boxes, &p.n));
  window_rule rule = {0};
  double in_wh[2] = {1, 1};
  STK_TRY(make_rule(node, s, &rule, in_wh, &pixels));
  const double *th;
  int64_t nt = (int64_t)stk__arg_floats(node, s, A_THRESHOLDS, &th);
  bool no_crop = stk__arg_bool(node, NULL, A_ALLOW_NO_CROP);
  if (nt == 0 && !no_crop)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "no thresholds and allow_no_crop=false leave nothing to choose");
  int64_t total = stk__arg_int(node, s, A_TOTAL_NUM_ATTEMPTS);
  stk__philox g;
  stk__sample_rng(node, s, &g);
  win w = search(&p, &rule, th, nt, no_crop, stk__arg_int(node, s, A_NUM_ATTEMPTS),
                 total < 0 ? 100000 : total, &g);
  int64_t two = 2;
  stk__tensor *oa, *os;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, 1, &two, NULL, &oa));
  STK_TRY(stk__output(s, 1, STK_DTYPE_FLOAT32, 1, &two, NULL, &os));
  double sx = pixels ? in_wh[0] : 1.0, sy = pixels ? in_wh[1] : 1.0;
  float *a = oa->data, *sh = os->data;
  a[0] = (float)(w.l * sx), a[1] = (float)(w.t * sy);
  sh[0] = (float)((w.r - w.l) * sx), sh[1] = (float)((w.b - w.t) * sy);
  return emit_boxes(node, s, &p, &w, xywh, 2, 1, stk__arg_bool(node, NULL, A_OUTPUT_INDICES));
}

static int rbc_num_outputs(const stk__node *node) {
  return 3 + (stk__node_num_inputs(node) > 1) + stk__arg_bool(node, NULL, A_OUTPUT_INDICES);
}

static const stk_op_schema rbc_schema = {
    .name = "random_bbox_crop",
    .doc =
        "Draws a crop window that keeps the boxes valid (DALI's random_bbox_crop, 2D): "
        "outputs anchor and shape for slice, the kept boxes relative to the window, the "
        "labels (with a labels input) and the kept indices (output_bbox_indices). See "
        "docs/detection.md.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = rbc_in,
    .num_outputs = -1,
    .outputs = rbc_out,
    .num_args = A_COUNT_,
    .args = rbc_args,
};
const stk__op_def stk__op_random_bbox_crop = {
    .schema = &rbc_schema,
    .run_sample = rbc_run,
    .num_outputs = rbc_num_outputs,
};

/* ---- ssd_random_crop: DALI's deprecated all-in-one SSD crop ---- */

enum { SSD_NUM_ATTEMPTS, SSD_SEED, SSD_COUNT_ };

static const stk_arg_schema ssd_args[] = {
    [SSD_NUM_ATTEMPTS] = {.name = "num_attempts",
                          .type = STK_ARG_INT,
                          .flags = STK_ARGF_RANGE,
                          .default_text = "1",
                          .min = 1,
                          .max = 1e6,
                          .doc = "windows tried per drawn threshold before another is drawn"},
    [SSD_SEED] = {.name = "seed",
                  .type = STK_ARG_INT,
                  .default_text = "-1",
                  .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(ssd_args, SSD_COUNT_);

static const stk_port_schema ssd_in[] = {{"images", "HWC images of any type"},
                                         {"bboxes", "float32 [N, 4] ltrb, relative"},
                                         {"labels", "one per box"}};
static const stk_port_schema ssd_out[] = {{"images", "the cropped image"},
                                          {"bboxes", "the kept boxes relative to it"},
                                          {"labels", "their labels"}};

/* The SSD paper's choices: no crop, a minimum IoU of 0.1 .. 0.9, or any window. */
static const double ssd_thresholds[] = {0.1, 0.3, 0.5, 0.7, 0.9, -1.0};

/* Snaps window w to whole pixels of a width x height image (at least one pixel). */
static void snap_window(win *w, int64_t width, int64_t height, int64_t px[4]) {
  px[0] = llround(w->l * (double)width), px[1] = llround(w->t * (double)height);
  px[2] = llround(w->r * (double)width), px[3] = llround(w->b * (double)height);
  if (px[2] <= px[0]) px[2] = px[0] + 1;
  if (px[3] <= px[1]) px[3] = px[1] + 1;
  if (px[2] > width) px[0] -= px[2] - width, px[2] = width;
  if (px[3] > height) px[1] -= px[3] - height, px[3] = height;
  *w = (win){(double)px[0] / width, (double)px[1] / height, (double)px[2] / width,
             (double)px[3] / height};
}

static stk_status ssd_crop_image(stk__sample *s, const stk__tensor *img, const int64_t px[4]) {
  int64_t c = img->ndim == 3 ? img->shape[2] : 1;
  int64_t shape[3] = {px[3] - px[1], px[2] - px[0], c};
  size_t es = stk_dtype_size(img->dtype), row = (size_t)(px[2] - px[0]) * (size_t)c * es;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, img->dtype, img->ndim, shape, img->layout, &out));
  for (int64_t y = px[1]; y < px[3]; y++)
    memcpy((char *)out->data + (size_t)(y - px[1]) * row,
           (const char *)img->data + ((size_t)y * (size_t)img->shape[1] + (size_t)px[0]) * c * es,
           row);
  return STK_OK;
}

static stk_status ssd_run(stk__node *node, stk__sample *s) {
  const stk__tensor *img = stk__input(s, 0), *in = stk__input(s, 1);
  bool hwc = (img->ndim == 3 && (!img->layout[0] || strcmp(img->layout, "HWC") == 0)) ||
             (img->ndim == 2 && (!img->layout[0] || strcmp(img->layout, "HW") == 0));
  if (!hwc || img->shape[0] < 1 || img->shape[1] < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects an HWC (or HW) image");
  crop_problem p = {.iou = true, .all = true};
  STK_TRY(stk__box_input(node, s, in, 4, &p.n));
  p.boxes = in->data;
  window_rule rule = {0.3,   1.0, 0.5, 2.0, (double)img->shape[1] / (double)img->shape[0],
                      false, 0,   0};
  stk__philox g;
  stk__sample_rng(node, s, &g);
  win w = search(&p, &rule, ssd_thresholds, 6, true, stk__arg_int(node, NULL, SSD_NUM_ATTEMPTS),
                 100000, &g);
  int64_t px[4];
  snap_window(&w, img->shape[1], img->shape[0], px);
  STK_TRY(ssd_crop_image(s, img, px));
  return emit_boxes(node, s, &p, &w, false, 1, 2, false);
}

static const stk_op_schema ssd_schema = {
    .name = "ssd_random_crop",
    .doc =
        "DALI's deprecated SSD crop in one operator: draws no crop, a minimum IoU of 0.1, "
        "0.3, 0.5, 0.7 or 0.9 with every box, or any window (scaling [0.3, 1], aspect "
        "ratio [0.5, 2] in pixels), crops the image to it (whole pixels) and keeps the "
        "boxes whose centre is inside, relative to the window. New pipelines use "
        "random_bbox_crop.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 3,
    .max_inputs = 3,
    .inputs = ssd_in,
    .num_outputs = 3,
    .outputs = ssd_out,
    .num_args = SSD_COUNT_,
    .args = ssd_args,
};
const stk__op_def stk__op_ssd_random_crop = {.schema = &ssd_schema, .run_sample = ssd_run};
