/* segmentation.random_object_bbox: the box of a random object of a label map (DALI's
 * operator). Objects are blobs of equal foreground labels connected through faces
 * (4-neighbours in 2D, 6 in 3D; diagonal pixels are separate objects), found by
 * union-find over the whole input (every axis counts, channels included). With
 * probability foreground_prob a class is drawn (by class_weights, among the classes with
 * an object of at least `threshold` per axis), then one of its objects (or of its
 * k_largest, by box volume); with ignore_class any object directly. Otherwise, or with
 * no such object, the whole input. Outputs: anchor and shape (format "anchor_shape"),
 * start and end ("start_end") or [start..., end...] ("box"), int32, then the class
 * (int32 scalar; the background label for the whole input) with output_class. */
#include <stdlib.h>
#include <string.h>

#include "image_util.h"

enum {
  A_BACKGROUND,
  A_CLASSES,
  A_CLASS_WEIGHTS,
  A_FOREGROUND_PROB,
  A_FORMAT,
  A_IGNORE_CLASS,
  A_K_LARGEST,
  A_OUTPUT_CLASS,
  A_THRESHOLD,
  A_CACHE_OBJECTS,
  A_SEED,
  A_COUNT_
};

static const stk_arg_schema rob_args[] = {
    [A_BACKGROUND] = {.name = "background",
                      .type = STK_ARG_INT,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .doc = "the background label (default 0, or -1 when 0 is in classes)"},
    [A_CLASSES] = {.name = "classes",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "the foreground labels (default: every label but background)"},
    [A_CLASS_WEIGHTS] = {.name = "class_weights",
                         .type = STK_ARG_FLOATS,
                         .flags = STK_ARGF_PER_SAMPLE,
                         .doc = "relative probabilities of the classes (of classes, or of "
                                "labels 1, 2, ... without it)"},
    [A_FOREGROUND_PROB] = {.name = "foreground_prob",
                           .type = STK_ARG_FLOAT,
                           .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                           .default_text = "1.0",
                           .min = 0,
                           .max = 1,
                           .doc = "probability of returning an object rather than the input"},
    [A_FORMAT] = {.name = "format",
                  .type = STK_ARG_STRING,
                  .default_text = "\"anchor_shape\"",
                  .choices = "anchor_shape|start_end|box",
                  .doc = "anchor_shape: anchor and shape; start_end: start and one-past-end; "
                         "box: both in one output"},
    [A_IGNORE_CLASS] = {.name = "ignore_class",
                        .type = STK_ARG_BOOL,
                        .default_text = "false",
                        .doc = "draw among all objects at once instead of class first"},
    [A_K_LARGEST] = {.name = "k_largest",
                     .type = STK_ARG_INT,
                     .doc = "only the k largest boxes (by volume) of the class (of all with "
                            "ignore_class) are drawn from"},
    [A_OUTPUT_CLASS] = {.name = "output_class",
                        .type = STK_ARG_BOOL,
                        .default_text = "false",
                        .doc = "one more output: the chosen object's class"},
    [A_THRESHOLD] = {.name = "threshold",
                     .type = STK_ARG_INTS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "minimum extent per axis of the objects drawn (one value: all)"},
    [A_CACHE_OBJECTS] = {.name = "cache_objects",
                         .type = STK_ARG_BOOL,
                         .default_text = "false",
                         .doc = "accepted for DALI compatibility; objects are found anew"},
    [A_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(rob_args, A_COUNT_);

static const stk_port_schema rob_in[] = {{"input", "a label map (integers), up to 4 dims"}};
static const stk_port_schema rob_out[] = {
    {"anchor, shape | start, end | box, [class]",
     "int32 box coordinates per axis, then the class with output_class"}};

#define MAXD 4

typedef struct {
  int64_t lo[MAXD], hi[MAXD]; /* inclusive */
  int64_t label, volume;
} blob;

static int64_t find(int64_t *parent, int64_t i) {
  while (parent[i] != i) parent[i] = parent[parent[i]], i = parent[i];
  return i;
}

typedef struct {
  const int64_t *labels; /* the input as int64 */
  int64_t total, ndim, shape[MAXD];
  int64_t background;
  const int64_t *classes; /* NULL: every label but background */
  size_t num_classes;
} label_map;

static bool is_fg(const label_map *m, int64_t v) {
  if (!m->classes) return v != m->background;
  for (size_t k = 0; k < m->num_classes; k++)
    if (m->classes[k] == v) return true;
  return false;
}

/* Unites face-connected equal foreground labels; blob roots end up in parent. */
static void connect(const label_map *m, int64_t *parent) {
  int64_t stride[MAXD];
  stride[m->ndim - 1] = 1;
  for (int64_t d = m->ndim - 2; d >= 0; d--) stride[d] = stride[d + 1] * m->shape[d + 1];
  for (int64_t i = 0; i < m->total; i++) {
    parent[i] = i;
    if (!is_fg(m, m->labels[i])) continue;
    for (int64_t d = 0; d < m->ndim; d++) {
      if ((i / stride[d]) % m->shape[d] == 0) continue;
      int64_t j = i - stride[d];
      if (m->labels[j] != m->labels[i]) continue;
      int64_t a = find(parent, i), b = find(parent, j);
      if (a != b) parent[a > b ? a : b] = a < b ? a : b;
    }
  }
}

/* The boxes of the blobs; returns their count. */
static int64_t collect(const label_map *m, int64_t *parent, int64_t *slot, blob *blobs) {
  int64_t n = 0;
  for (int64_t i = 0; i < m->total; i++) {
    if (!is_fg(m, m->labels[i])) continue;
    int64_t r = find(parent, i);
    if (r == i) slot[i] = n++, blobs[slot[i]] = (blob){.label = m->labels[i]};
    blob *b = &blobs[slot[r]];
    int64_t rest = i;
    for (int64_t d = m->ndim - 1; d >= 0; d--) {
      int64_t c = rest % m->shape[d];
      rest /= m->shape[d];
      if (b->volume == 0 || c < b->lo[d]) b->lo[d] = c;
      if (b->volume == 0 || c > b->hi[d]) b->hi[d] = c;
    }
    b->volume++;
  }
  for (int64_t k = 0; k < n; k++) {
    int64_t v = 1;
    for (int64_t d = 0; d < m->ndim; d++) v *= blobs[k].hi[d] - blobs[k].lo[d] + 1;
    blobs[k].volume = v; /* box volume: what k_largest ranks */
  }
  return n;
}

static int cmp_volume(const void *a, const void *b) {
  int64_t x = ((const blob *)a)->volume, y = ((const blob *)b)->volume;
  return (x < y) - (x > y);
}

typedef struct {
  const int64_t *threshold;
  size_t num_threshold;
  int64_t k_largest; /* 0: all */
} blob_filter;

static bool big_enough(const blob *b, int64_t ndim, const blob_filter *f) {
  for (int64_t d = 0; d < ndim && f->num_threshold; d++) {
    int64_t t = f->threshold[f->num_threshold == 1 ? 0 : (size_t)d];
    if (b->hi[d] - b->lo[d] + 1 < t) return false;
  }
  return true;
}

/* Keeps the blobs of `label` (any label when `any`) that pass the filter, the largest
 * k_largest of them; returns how many are left at the front of `out`. */
static int64_t candidates(const blob *blobs, int64_t n, int64_t ndim, bool any, int64_t label,
                          const blob_filter *f, blob *out) {
  int64_t m = 0;
  for (int64_t k = 0; k < n; k++)
    if ((any || blobs[k].label == label) && big_enough(&blobs[k], ndim, f)) out[m++] = blobs[k];
  qsort(out, (size_t)m, sizeof *out, cmp_volume);
  return f->k_largest > 0 && m > f->k_largest ? f->k_largest : m;
}

/* Draws a class by weight among those with candidates, then one of its blobs. */
static bool draw_by_class(const label_map *m, const blob *blobs, int64_t n, const double *weights,
                          size_t nw, const blob_filter *f, stk__philox *g, blob *pick,
                          blob *scratch) {
  /* The classes present: the given list, or the labels of the blobs. */
  int64_t *cls = (int64_t *)(scratch + n), nc = 0;
  double *w = (double *)(cls + n + m->num_classes), total = 0;
  size_t listed = m->classes ? m->num_classes : 0;
  for (size_t k = 0; k < listed; k++) cls[nc++] = m->classes[k];
  for (int64_t k = 0; !m->classes && k < n; k++) {
    bool seen = false;
    for (int64_t j = 0; j < nc && !seen; j++) seen = cls[j] == blobs[k].label;
    if (!seen) cls[nc++] = blobs[k].label;
  }
  for (int64_t c = 0; c < nc; c++) {
    size_t wi = m->classes ? (size_t)c : (size_t)(cls[c] - 1);
    double wc = nw ? (wi < nw ? weights[wi] : 0.0) : 1.0;
    w[c] = candidates(blobs, n, m->ndim, false, cls[c], f, scratch) > 0 && wc > 0 ? wc : 0.0;
    total += w[c];
  }
  if (!(total > 0)) return false;
  double u = stk__philox_uniform(g) * total;
  int64_t c = 0;
  while (c + 1 < nc && (u -= w[c]) >= 0) c++;
  while (w[c] <= 0) c--; /* rounding at the end of the range */
  int64_t k = candidates(blobs, n, m->ndim, false, cls[c], f, scratch);
  *pick = scratch[stk__philox_below(g, (uint64_t)k)];
  return true;
}

static stk_status read_map(stk__node *node, stk__sample *s, label_map *m, int64_t **labels) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->ndim < 1 || in->ndim > MAXD || !stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects a label map of 1 to %d dims",
                      MAXD);
  m->ndim = in->ndim, m->total = 1;
  for (int d = 0; d < in->ndim; d++) m->shape[d] = in->shape[d], m->total *= in->shape[d];
  if (m->total > stk__node_max_pixels(node) * 4)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld elements exceed the pixel limit",
                      (long long)m->total);
  *labels = stk__scratch(s, (size_t)(m->total ? m->total : 1) * sizeof **labels);
  if (!*labels) return STK_ERR_OUT_OF_MEMORY;
  stk__convert(*labels, STK_DTYPE_INT64, in->data, in->dtype, (size_t)m->total);
  m->labels = *labels;
  return STK_OK;
}

static stk_status write_box(stk__node *node, stk__sample *s, const label_map *m, const blob *b,
                            int64_t cls) {
  const char *fmt = stk__arg_string(node, A_FORMAT);
  int64_t nd = m->ndim, two = 2 * nd, none = 0;
  stk__tensor *o0, *o1 = NULL;
  bool box = strcmp(fmt, "box") == 0, anchor_shape = strcmp(fmt, "anchor_shape") == 0;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT32, 1, box ? &two : &nd, NULL, &o0));
  if (!box) STK_TRY(stk__output(s, 1, STK_DTYPE_INT32, 1, &nd, NULL, &o1));
  int32_t *a = o0->data, *c = box ? a + nd : o1->data;
  for (int64_t d = 0; d < nd; d++) {
    a[d] = (int32_t)b->lo[d];
    c[d] = (int32_t)(anchor_shape ? b->hi[d] - b->lo[d] + 1 : b->hi[d] + 1);
  }
  if (stk__arg_bool(node, NULL, A_OUTPUT_CLASS)) {
    stk__tensor *oc;
    STK_TRY(stk__output(s, box ? 1 : 2, STK_DTYPE_INT32, 0, &none, NULL, &oc));
    *(int32_t *)oc->data = (int32_t)cls;
  }
  return STK_OK;
}

static stk_status rob_run(stk__node *node, stk__sample *s) {
  label_map m = {0};
  int64_t *labels;
  STK_TRY(read_map(node, s, &m, &labels));
  if (stk__arg_given(node, A_CLASSES))
    m.num_classes = stk__arg_ints(node, s, A_CLASSES, &m.classes);
  bool zero_listed = false;
  for (size_t k = 0; k < m.num_classes; k++) zero_listed |= m.classes[k] == 0;
  m.background = stk__arg_given(node, A_BACKGROUND) ? stk__arg_int(node, s, A_BACKGROUND)
                 : zero_listed                      ? -1
                                                    : 0;
  blob_filter f = {NULL, 0,
                   stk__arg_given(node, A_K_LARGEST) ? stk__arg_int(node, s, A_K_LARGEST) : 0};
  if (stk__arg_given(node, A_THRESHOLD))
    f.num_threshold = stk__arg_ints(node, s, A_THRESHOLD, &f.threshold);
  if (f.num_threshold > 1 && f.num_threshold != (size_t)m.ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "threshold has %zu values for %lld axes",
                      f.num_threshold, (long long)m.ndim);
  stk__philox g;
  stk__sample_rng(node, s, &g);
  blob whole = {.label = m.background}, pick = whole;
  for (int64_t d = 0; d < m.ndim; d++) whole.lo[d] = 0, whole.hi[d] = m.shape[d] - 1;
  pick = whole;
  if (stk__philox_uniform(&g) < stk__arg_float(node, s, A_FOREGROUND_PROB)) {
    size_t cap = (size_t)m.total + 1;
    int64_t *parent = stk__scratch(s, 2 * cap * sizeof *parent), *slot = parent + cap;
    /* blobs, then candidates, then the class list and weights (draw_by_class) */
    blob *blobs = stk__scratch(s, (3 * cap + m.num_classes + 1) * sizeof *blobs);
    if (!parent || !blobs) return STK_ERR_OUT_OF_MEMORY;
    connect(&m, parent);
    int64_t n = collect(&m, parent, slot, blobs);
    const double *w = NULL;
    size_t nw =
        stk__arg_given(node, A_CLASS_WEIGHTS) ? stk__arg_floats(node, s, A_CLASS_WEIGHTS, &w) : 0;
    if (stk__arg_bool(node, NULL, A_IGNORE_CLASS)) {
      int64_t k = candidates(blobs, n, m.ndim, true, 0, &f, blobs + n);
      if (k > 0) pick = blobs[n + (int64_t)stk__philox_below(&g, (uint64_t)k)];
    } else if (!draw_by_class(&m, blobs, n, w, nw, &f, &g, &pick, blobs + n)) {
      pick = whole;
    }
  }
  return write_box(node, s, &m, &pick, pick.label);
}

static int rob_num_outputs(const stk__node *node) {
  bool box = strcmp(stk__arg_string(node, A_FORMAT), "box") == 0;
  return (box ? 1 : 2) + (stk__arg_bool(node, NULL, A_OUTPUT_CLASS) ? 1 : 0);
}

static const stk_op_schema rob_schema = {
    .name = "segmentation.random_object_bbox",
    .doc =
        "The box of a random object (a face-connected blob of one foreground label) of a "
        "label map, or of the whole input with probability 1 - foreground_prob (DALI's "
        "segmentation.random_object_bbox): class drawn first (class_weights), then one of "
        "its objects (k_largest, threshold), or any object with ignore_class.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = rob_in,
    .num_outputs = -1,
    .outputs = rob_out,
    .num_args = A_COUNT_,
    .args = rob_args,
};
const stk__op_def stk__op_random_object_bbox = {
    .schema = &rob_schema, .run_sample = rob_run, .num_outputs = rob_num_outputs};
