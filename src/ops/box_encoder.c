/* box_encoder: SSD's matching of ground-truth boxes to anchors (DALI's box_encoder, the
 * MLPerf SSD reference's rule). Each anchor takes the box it overlaps most (IoU); each
 * box also claims the anchor it overlaps most, whatever the IoU (a later box wins an
 * anchor two boxes claim); anchors whose IoU exceeds `criteria` (or that were claimed)
 * get that box and its label, the others label 0. Boxes come out as [cx, cy, w, h] —
 * the anchor's own for unmatched anchors — or, with offset=True, as the normalised
 * offsets ((cx - acx) / aw, (cy - acy) / ah, log(w / aw), log(h / ah)), minus `means`,
 * over `stds` (all zero for unmatched anchors). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "box_util.h"

enum { A_ANCHORS, A_CRITERIA, A_OFFSET, A_SCALE, A_MEANS, A_STDS, A_COUNT_ };

static const stk_arg_schema box_encoder_args[] = {
    [A_ANCHORS] = {.name = "anchors",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_REQUIRED,
                   .doc = "the anchors, 4 values each, [l, t, r, b] (relative)"},
    [A_CRITERIA] = {.name = "criteria",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "0.5",
                    .min = 0,
                    .max = 1,
                    .doc = "the IoU an anchor needs with a box to be matched to it"},
    [A_OFFSET] = {.name = "offset",
                  .type = STK_ARG_BOOL,
                  .default_text = "false",
                  .doc = "output normalised offsets from the anchors instead of boxes"},
    [A_SCALE] = {.name = "scale",
                 .type = STK_ARG_FLOAT,
                 .default_text = "1.0",
                 .doc = "with offset: boxes and anchors are multiplied by this first"},
    [A_MEANS] = {.name = "means",
                 .type = STK_ARG_FLOATS,
                 .default_text = "[0.0, 0.0, 0.0, 0.0]",
                 .doc = "with offset: subtracted from the [x, y, w, h] offsets"},
    [A_STDS] = {.name = "stds",
                .type = STK_ARG_FLOATS,
                .default_text = "[1.0, 1.0, 1.0, 1.0]",
                .doc = "with offset: the offsets are divided by these"},
};
STK__CHECK_ARGS(box_encoder_args, A_COUNT_);

static const stk_port_schema be_in[] = {{"bboxes", "float32 [N, 4], [l, t, r, b]"},
                                        {"labels", "int32 [N] (or [N, 1])"}};
static const stk_port_schema be_out[] = {
    {"encoded_bboxes", "float32 [M, 4] per anchor: [cx, cy, w, h] or offsets"},
    {"encoded_labels", "int32 [M]: the matched box's label, 0 for background"}};

typedef struct {
  int64_t m;
  float *anchors; /* m x 4, ltrb */
  stk__box_encoding enc;
} encoder;

static void be_destroy(stk__node *node) {
  encoder *e = *stk__node_state(node);
  if (e) free(e->anchors);
  free(e);
  *stk__node_state(node) = NULL;
}

static stk_status four_floats(stk__node *node, int arg, const char *name, float out[4]) {
  const double *v;
  size_t n = stk__arg_floats(node, NULL, arg, &v);
  if (n != 4)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: '%s' needs 4 values, got %zu",
                    stk__node_name(node), name, n);
  for (int k = 0; k < 4; k++) out[k] = (float)v[k];
  return STK_OK;
}

static stk_status be_init(stk__node *node) {
  const double *a;
  size_t n = stk__arg_floats(node, NULL, A_ANCHORS, &a);
  if (n == 0 || n % 4)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: 'anchors' needs 4 values per anchor; got %zu values", stk__node_name(node),
                    n);
  encoder *e = stk__calloc(1, sizeof *e, "a box encoder");
  if (!e) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = e;
  e->m = (int64_t)(n / 4);
  e->anchors = stk__malloc(n * sizeof *e->anchors, "anchors");
  if (!e->anchors) return be_destroy(node), STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) e->anchors[i] = (float)a[i];
  e->enc.criteria = (float)stk__arg_float(node, NULL, A_CRITERIA);
  e->enc.offset = stk__arg_bool(node, NULL, A_OFFSET);
  e->enc.scale = (float)stk__arg_float(node, NULL, A_SCALE);
  stk_status st = four_floats(node, A_MEANS, "means", e->enc.means);
  if (st == STK_OK) st = four_floats(node, A_STDS, "stds", e->enc.stds);
  for (int k = 0; st == STK_OK && k < 4; k++)
    if (!(e->enc.stds[k] != 0.0f))
      st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: 'stds' must not hold 0", stk__node_name(node));
  if (st != STK_OK) be_destroy(node);
  return st;
}

/* best[j]: the box matched to anchor j (-1: none). */
static void match(const encoder *e, const float *boxes, int64_t n, int64_t *best, float *best_iou,
                  int64_t *claim) {
  for (int64_t j = 0; j < e->m; j++) best[j] = -1, best_iou[j] = -1.0f;
  for (int64_t i = 0; i < n; i++) {
    float top = -1.0f;
    for (int64_t j = 0; j < e->m; j++) {
      float v = stk__box_iou(boxes + 4 * i, e->anchors + 4 * j);
      if (v > best_iou[j]) best_iou[j] = v, best[j] = i;
      if (v > top) top = v, claim[i] = j;
    }
  }
  for (int64_t i = 0; i < n; i++) best_iou[claim[i]] = 2.0f, best[claim[i]] = i;
  for (int64_t j = 0; j < e->m; j++)
    if (!(best_iou[j] > e->enc.criteria)) best[j] = -1;
}

static stk_status labels_input(const stk__node *node, const stk__sample *s, int64_t n,
                               const int32_t **labels) {
  const stk__tensor *t = stk__input(s, 1);
  bool ok = t->dtype == STK_DTYPE_INT32 && ((t->ndim == 1 && t->shape[0] == n) ||
                                            (t->ndim == 2 && t->shape[0] == n && t->shape[1] == 1));
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "labels must be int32 [N] with N = %lld, the number of boxes", (long long)n);
  *labels = t->data;
  return STK_OK;
}

static stk_status be_run(stk__node *node, stk__sample *s) {
  const encoder *e = *stk__node_state(node);
  const stk__tensor *in = stk__input(s, 0);
  int64_t n = 0;
  const int32_t *labels = NULL;
  STK_TRY(stk__box_input(node, s, in, 4, &n));
  STK_TRY(labels_input(node, s, n, &labels));
  int64_t *best = stk__scratch(s, (size_t)(e->m + n + 1) * sizeof(int64_t));
  float *best_iou = stk__scratch(s, (size_t)e->m * sizeof(float));
  if (!best || !best_iou) return STK_ERR_OUT_OF_MEMORY;
  match(e, in->data, n, best, best_iou, best + e->m);
  int64_t shape[2] = {e->m, 4};
  stk__tensor *ob, *ol;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, 2, shape, NULL, &ob));
  STK_TRY(stk__output(s, 1, STK_DTYPE_INT32, 1, shape, NULL, &ol));
  const float *boxes = in->data;
  for (int64_t j = 0; j < e->m; j++) {
    const float *anchor = e->anchors + 4 * j;
    stk__box_encode(&e->enc, best[j] < 0 ? anchor : boxes + 4 * best[j], anchor, best[j] >= 0,
                    (float *)ob->data + 4 * j);
    ((int32_t *)ol->data)[j] = best[j] < 0 ? 0 : labels[best[j]];
  }
  return STK_OK;
}

static const stk_op_schema box_encoder_schema = {
    .name = "box_encoder",
    .doc =
        "Matches ground-truth boxes to SSD anchors (DALI's box_encoder): per anchor, the "
        "box with the largest IoU when above criteria, plus each box's best anchor; outputs "
        "[cx, cy, w, h] per anchor (offset=False) or normalised offsets, and the labels (0 "
        "for background). See docs/detection.md.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 2,
    .max_inputs = 2,
    .inputs = be_in,
    .num_outputs = 2,
    .outputs = be_out,
    .num_args = A_COUNT_,
    .args = box_encoder_args,
};
const stk__op_def stk__op_box_encoder = {
    .schema = &box_encoder_schema,
    .init = be_init,
    .destroy = be_destroy,
    .run_sample = be_run,
};
