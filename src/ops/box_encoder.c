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

#include "../cuda/api_boxes.h"
#include "box_util.h"
#include "gpu_util.h"

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

/* ---- GPU: one launch for the batch (src/cuda/boxes.cu), the same rule and encoding ---- */

/* Checks sample i's boxes and labels as the CPU does; fills its descriptor's inputs. */
static stk_status gpu_sample(stk__node *node, stk__gpu_batch *b, size_t i,
                             const stk_tensor_list *boxes, const stk_tensor_list *labels,
                             stk_gpu_box_encoder_sample *d) {
  stk_tensor_desc bd, ld;
  stk_tensor_list_sample(boxes, i, &bd);
  stk_tensor_list_sample(labels, i, &ld);
  stk__tensor t = {bd.data, bd.ndim, {0}, bd.dtype, {0}};
  memcpy(t.shape, bd.shape, sizeof t.shape);
  stk__sample *s = stk__gpu_sample(b, i);
  int64_t n = 0;
  STK_TRY(stk__box_input(node, s, &t, 4, &n));
  bool ok = ld.dtype == STK_DTYPE_INT32 && ld.ndim >= 1 && ld.ndim <= 2 && ld.shape[0] == n &&
            (ld.ndim == 1 || ld.shape[1] == 1);
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "labels must be int32 [N] with N = %lld, the number of boxes", (long long)n);
  *d = (stk_gpu_box_encoder_sample){bd.data, ld.data, n, NULL, NULL};
  return STK_OK;
}

static stk_status be_launch(stk__node *node, stk__gpu_batch *b, stk_gpu_box_encoder_sample *ds,
                            stk_tensor_list *ob, stk_tensor_list *ol) {
  const encoder *e = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(ob, i, &d);
    ds[i].out_boxes = d.data;
    stk_tensor_list_sample(ol, i, &d);
    ds[i].out_labels = d.data;
  }
  stk_gpu_box_encoder_args args = {e->anchors, e->m, e->enc};
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  int rc = stk_gpu_run_box_encoder(g->api, g->ctx, (int)n, ds, &args, stk__gpu_stream(b), err,
                                   sizeof err);
  return stk__gpu_op_check(node, rc, err);
}

static stk_status be_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const encoder *e = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *boxes = NULL, *labels = NULL, *ob = NULL, *ol = NULL;
  bool own_b = false, own_l = false;
  stk_status st = stk__gpu_device_input(b, 0, &boxes, &own_b);
  if (st == STK_OK) st = stk__gpu_device_input(b, 1, &labels, &own_l);
  stk_gpu_box_encoder_sample *ds = stk__calloc(n ? n : 1, sizeof *ds, "a box_encoder plan");
  int64_t *shapes = stk__calloc(2 * (n ? n : 1), sizeof *shapes, "shapes");
  if (st == STK_OK && (!ds || !shapes)) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    st = gpu_sample(node, b, i, boxes, labels, &ds[i]);
    shapes[2 * i] = e->m, shapes[2 * i + 1] = 4;
  }
  if (st == STK_OK) st = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, 2, shapes, NULL, true, &ob);
  for (size_t i = 0; i < n && st == STK_OK; i++) shapes[i] = e->m;
  if (st == STK_OK) st = stk__gpu_alloc_list(b, STK_DTYPE_INT32, 1, shapes, NULL, true, &ol);
  if (st == STK_OK) st = be_launch(node, b, ds, ob, ol);
  free(ds);
  free(shapes);
  if (own_b) stk_tensor_list_release(boxes);
  if (own_l) stk_tensor_list_release(labels);
  if (st == STK_OK) {
    st = stk__gpu_output(b, 0, ob);
    ob = NULL;
  }
  if (st == STK_OK) {
    st = stk__gpu_output(b, 1, ol);
    ol = NULL;
  }
  stk_tensor_list_release(ob);
  stk_tensor_list_release(ol);
  return st;
}

static const stk_op_schema box_encoder_schema = {
    .name = "box_encoder",
    .doc =
        "Matches ground-truth boxes to SSD anchors (DALI's box_encoder): per anchor, the "
        "box with the largest IoU when above criteria, plus each box's best anchor; outputs "
        "[cx, cy, w, h] per anchor (offset=False) or normalised offsets, and the labels (0 "
        "for background). See docs/detection.md.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 2,
    .max_inputs = 2,
    .inputs = be_in,
    .num_outputs = 2,
    .outputs = be_out,
    .num_args = A_COUNT_,
    .args = box_encoder_args,
    /* logf may differ by an ulp between host and device: offsets to 1e-5 */
    .gpu_check =
        "# atol=1e-5\n"
        "b = constant(fdata=[0.1, 0.1, 0.4, 0.5, 0.5, 0.45, 0.9, 0.95, 0.0, 0.0, 0.2, 0.15], "
        "shape=[3, 4])\n"
        "l = constant(idata=[3, 7, 11], shape=[3])\n"
        "e, k = box_encoder(b, l, anchors=[0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5, "
        "0.5, 1.0, 0.5, 0.5, 1.0, 1.0, 0.2, 0.2, 0.8, 0.8, 0.05, 0.05, 0.3, 0.3], "
        "criteria=0.3, offset=true, stds=[0.1, 0.1, 0.2, 0.2], device=@)\n"
        "return e, k",
};
const stk__op_def stk__op_box_encoder = {
    .schema = &box_encoder_schema,
    .init = be_init,
    .destroy = be_destroy,
    .run_sample = be_run,
    .run_gpu = be_run_gpu,
};
