/* bbox_rotate: moves boxes to where fn.rotate puts their image (DALI's bbox_rotate, CPU).
 * The box's corners go through the inverse of rotate's own matrix (geometry.c), on the
 * canvas rotate would choose for the same angle, keep_size and size, so the two agree;
 * the result is the corners' bounding box ("expand"), the original extent re-centred
 * there, turned by the nearest quarter turn ("fixed"), or the mean of both ("halfway"), clipped to
 * the canvas. Boxes keeping less than remove_threshold of their area after the clip are dropped,
 * with their labels. */
#include <math.h>
#include <string.h>

#include "box_util.h"
#include "geometry.h"

enum {
  A_ANGLE,
  A_INPUT_SHAPE,
  A_SHAPE_LAYOUT,
  A_KEEP_SIZE,
  A_SIZE,
  A_MODE,
  A_BBOX_LAYOUT,
  A_BBOX_NORMALIZED,
  A_REMOVE_THRESHOLD,
  A_COUNT_
};

static const stk_arg_schema bbox_rotate_args[] = {
    [A_ANGLE] = {.name = "angle",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                 .doc = "rotation in degrees, counter-clockwise as displayed (as fn.rotate)"},
    [A_INPUT_SHAPE] = {.name = "input_shape",
                       .type = STK_ARG_INTS,
                       .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                       .doc = "shape of the image the boxes belong to, before rotation "
                              "(image.shape()), its axes named by shape_layout"},
    [A_SHAPE_LAYOUT] = {.name = "shape_layout",
                        .type = STK_ARG_STRING,
                        .default_text = "\"HW\"",
                        .doc = "names the axes of input_shape; must contain H and W (\"HWC\" and "
                               "\"HW\" read the first two values)"},
    [A_KEEP_SIZE] = {.name = "keep_size",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = "the image keeps its size (as rotate's keep_size); false: the "
                            "canvas grows as rotate's does"},
    [A_SIZE] = {.name = "size",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = "the output canvas [H, W] given to rotate (rounded to nearest); "
                       "excludes keep_size"},
    [A_MODE] = {.name = "mode",
                .type = STK_ARG_STRING,
                .default_text = "\"expand\"",
                .choices = "expand|halfway|fixed",
                .doc = "expand: the bounding box of the rotated box; fixed: the original "
                       "width and height centred on it; halfway: the mean of the two"},
    [A_BBOX_LAYOUT] = {.name = "bbox_layout",
                       .type = STK_ARG_STRING,
                       .default_text = "\"xyXY\"",
                       .choices = "xyXY|xyWH",
                       .doc = "box format, [l, t, r, b] (xyXY) or [x, y, w, h] (xyWH)"},
    [A_BBOX_NORMALIZED] = {.name = "bbox_normalized",
                           .type = STK_ARG_BOOL,
                           .default_text = "true",
                           .doc = "boxes are relative to the image ([0, 1]); false: pixels "
                                  "(and the output is in pixels of the rotated canvas)"},
    [A_REMOVE_THRESHOLD] = {.name = "remove_threshold",
                            .type = STK_ARG_FLOAT,
                            .flags = STK_ARGF_RANGE,
                            .min = 0.0,
                            .max = 1.0,
                            .default_text = "0.1",
                            .doc = "boxes keeping a smaller fraction of their area inside the "
                                   "canvas are removed (0: none; 1: any that crosses the edge)"},
};
STK__CHECK_ARGS(bbox_rotate_args, A_COUNT_);

static const stk_port_schema bbr_in[] = {{"boxes", "float32 [N, 4]"},
                                         {"labels", "optional, one row per box"}};
static const stk_port_schema bbr_out[] = {{"boxes", "the rotated boxes, float32 [K, 4]"},
                                          {"labels", "the labels of the kept boxes"}};

/* The image's height and width from input_shape and shape_layout. */
static stk_status image_hw(stk__node *node, stk__sample *s, double *h, double *w) {
  const int64_t *v;
  size_t n = stk__arg_ints(node, s, A_INPUT_SHAPE, &v);
  const char *layout = stk__arg_string(node, A_SHAPE_LAYOUT);
  const char *ph = strchr(layout, 'H'), *pw = strchr(layout, 'W');
  if (!ph || !pw)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "shape_layout '%s' must name the H and W axes", layout);
  size_t ih = (size_t)(ph - layout), iw = (size_t)(pw - layout);
  if (ih >= n || iw >= n || v[ih] < 1 || v[iw] < 1 || v[ih] > 2147483647 || v[iw] > 2147483647)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "input_shape (%zu values, layout '%s') needs positive H and W extents", n,
                      layout);
  *h = (double)v[ih], *w = (double)v[iw];
  return STK_OK;
}

/* The canvas rotate draws on (as rotate_geometry in geometry.c) and its output -> input
 * matrix inverted: input pixel -> output pixel. */
static stk_status canvas(stk__node *node, stk__sample *s, double h, double w, double *oh,
                         double *ow, double fwd[6]) {
  double angle = stk__arg_float(node, s, A_ANGLE);
  if (!isfinite(angle) || fabs(angle) > 1e9)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "angle = %g is not a usable number",
                      angle);
  int64_t ih = (int64_t)h, iw = (int64_t)w, ch = ih, cw = iw;
  if (stk__arg_given(node, A_SIZE)) {
    const double *v;
    size_t n = stk__arg_floats(node, s, A_SIZE, &v);
    double fh = n ? floor(v[0] + 0.5) : 0, fw = n ? floor(v[n - 1] + 0.5) : 0;
    if ((n != 1 && n != 2) || !(fh >= 1 && fw >= 1 && fh < 2147483648.0 && fw < 2147483648.0))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "size needs [H, W] rounding to extents in [1, 2^31); got %zu values", n);
    ch = (int64_t)fh, cw = (int64_t)fw;
  } else if (!stk__arg_bool(node, s, A_KEEP_SIZE)) {
    stk__rotate_canvas(ih, iw, angle, &ch, &cw);
  }
  double m[6];
  stk__rotate_matrix(angle, ih, iw, ch, cw, m);
  if (!stk__affine_invert(m, fwd))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "angle = %g gives no usable rotation",
                      angle);
  *oh = (double)ch, *ow = (double)cw;
  return STK_OK;
}

typedef struct {
  double fwd[6];     /* input pixel -> output pixel */
  double sx, sy;     /* box units -> input pixels */
  double ox, oy;     /* output pixels -> box units (reciprocal scale) */
  double limx, limy; /* the canvas in output box units */
  int mode;          /* 0 expand, 1 halfway, 2 fixed */
  bool xywh;
  double threshold;
} rot_spec;

/* Rotates box b (in the input's units) into o (output units, ltrb, clipped); false when
 * too little of it stays on the canvas. */
static bool rotate_box(const rot_spec *r, const float *b, double o[4]) {
  double l = b[0], t = b[1], rr = b[2], bb = b[3];
  if (r->xywh) rr += l, bb += t;
  l *= r->sx, rr *= r->sx, t *= r->sy, bb *= r->sy;
  const double *m = r->fwd;
  double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
  for (int k = 0; k < 4; k++) {
    double x = k & 1 ? rr : l, y = k & 2 ? bb : t;
    double u = m[0] * x + m[1] * y + m[2], v = m[3] * x + m[4] * y + m[5];
    x0 = fmin(x0, u), x1 = fmax(x1, u), y0 = fmin(y0, v), y1 = fmax(y1, v);
  }
  double e[4] = {x0, y0, x1, y1};
  double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1), hw = 0.5 * (rr - l), hh = 0.5 * (bb - t);
  /* "fixed" keeps the extent but turns it with the box: width and height trade places
   * where the rotation is nearer a quarter turn (|sin| > |cos|), as in DALI. */
  if (fabs(m[1]) > fabs(m[0])) {
    double swap = hw;
    hw = hh, hh = swap;
  }
  double f[4] = {cx - hw, cy - hh, cx + hw, cy + hh};
  for (int k = 0; k < 4; k++) {
    double v = r->mode == 0 ? e[k] : r->mode == 2 ? f[k] : 0.5 * (e[k] + f[k]);
    o[k] = v * (k & 1 ? r->oy : r->ox);
  }
  double area = (o[2] - o[0]) * (o[3] - o[1]);
  for (int k = 0; k < 4; k++) o[k] = fmin(fmax(o[k], 0.0), k & 1 ? r->limy : r->limx);
  double kept = (o[2] - o[0]) * (o[3] - o[1]);
  return !(kept < r->threshold * area);
}

/* Copies the rows `idx` of the labels input to output 1. */
static stk_status emit_labels(stk__node *node, stk__sample *s, int64_t n, const int64_t *idx,
                              int64_t k) {
  const stk__tensor *lab = stk__input(s, 1);
  if (lab->ndim < 1 || lab->shape[0] != n)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "labels have %lld rows for %lld boxes",
                      (long long)(lab->ndim ? lab->shape[0] : 0), (long long)n);
  size_t row = stk_dtype_size(lab->dtype);
  for (int d = 1; d < lab->ndim; d++) row *= (size_t)lab->shape[d];
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, lab->shape, sizeof shape);
  shape[0] = k;
  stk__tensor *out;
  STK_TRY(stk__output(s, 1, lab->dtype, lab->ndim, shape, lab->layout, &out));
  for (int64_t j = 0; j < k; j++)
    memcpy((char *)out->data + (size_t)j * row, (const char *)lab->data + (size_t)idx[j] * row,
           row);
  return STK_OK;
}

static stk_status bbox_rotate_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int64_t n = 0;
  STK_TRY(stk__box_input(node, s, in, 4, &n));
  double h = 1, w = 1, oh = 1, ow = 1;
  rot_spec r = {.xywh = strcmp(stk__arg_string(node, A_BBOX_LAYOUT), "xyWH") == 0,
                .threshold = stk__arg_float(node, NULL, A_REMOVE_THRESHOLD)};
  const char *mode = stk__arg_string(node, A_MODE);
  r.mode = strcmp(mode, "expand") == 0 ? 0 : strcmp(mode, "halfway") == 0 ? 1 : 2;
  STK_TRY(image_hw(node, s, &h, &w));
  if (stk__arg_given(node, A_SIZE) && stk__arg_bool(node, s, A_KEEP_SIZE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "keep_size and size exclude each other");
  STK_TRY(canvas(node, s, h, w, &oh, &ow, r.fwd));
  bool norm = stk__arg_bool(node, s, A_BBOX_NORMALIZED);
  r.sx = norm ? w : 1, r.sy = norm ? h : 1;
  r.ox = norm ? 1 / ow : 1, r.oy = norm ? 1 / oh : 1;
  r.limx = norm ? 1 : ow, r.limy = norm ? 1 : oh;

  double *tmp = stk__scratch(s, (size_t)(n ? n : 1) * 4 * sizeof *tmp);
  int64_t *idx = stk__scratch(s, (size_t)(n ? n : 1) * sizeof *idx), k = 0;
  if (!tmp || !idx) return STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; i++)
    if (rotate_box(&r, (const float *)in->data + 4 * i, tmp + 4 * k)) idx[k++] = i;
  int64_t shape[2] = {k, 4};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, 2, shape, in->ndim == 2 ? in->layout : NULL, &out));
  float *o = out->data;
  for (int64_t j = 0; j < 4 * k; j++) o[j] = (float)tmp[j];
  if (r.xywh)
    for (int64_t j = 0; j < k; j++) o[4 * j + 2] -= o[4 * j], o[4 * j + 3] -= o[4 * j + 1];
  if (stk__node_num_inputs(node) > 1) STK_TRY(emit_labels(node, s, n, idx, k));
  return STK_OK;
}

static int bbox_rotate_num_outputs(const stk__node *node) {
  return stk__node_num_inputs(node) > 1 ? 2 : 1;
}

static const stk_op_schema bbox_rotate_schema = {
    .name = "bbox_rotate",
    .doc =
        "Moves boxes to where rotate (same angle, keep_size, size) puts their image: the "
        "corners are rotated about the image centre onto rotate's canvas; mode expand keeps "
        "their bounding box, fixed the original extent centred there, halfway the mean. "
        "The result is clipped to the canvas; boxes keeping less than remove_threshold of "
        "their area are dropped with their labels (the optional second input and output). "
        "See docs/detection.md.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = bbr_in,
    .num_outputs = -1,
    .outputs = bbr_out,
    .num_args = A_COUNT_,
    .args = bbox_rotate_args,
};
const stk__op_def stk__op_bbox_rotate = {.schema = &bbox_rotate_schema,
                                         .run_sample = bbox_rotate_run,
                                         .num_outputs = bbox_rotate_num_outputs};
