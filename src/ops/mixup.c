/* mixup and cutmix: torchvision.transforms.v2 MixUp / CutMix as fused batch operators.
 * Each sample is mixed with a partner from its batch (the batch rolled by one, as
 * torchvision, or a random permutation), images and labels in one operator: labels are
 * integers made one-hot with num_classes, or already one-hot / soft vectors. Lambda is
 * drawn from Beta(alpha, alpha) once per batch (torchvision) or per sample, or given
 * ('lam'); CutMix pastes the partner's box, sized from lambda, and weights the labels by
 * the area kept. The per-element maths is src/shared/mix_common.h's, shared with the GPU
 * kernel (src/cuda/mix.cu); the plan (partners, lambdas, boxes) is drawn on the host by
 * the same code for both backends. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/mix_common.h"
#include "beta.h"
#include "gpu_util.h"
#include "image_util.h"

/* The arguments both share come first; cutmix adds 'center'. */
enum { A_ALPHA, A_NUM_CLASSES, A_PER_SAMPLE, A_PAIRING, A_LAM, A_SEED, A_MIX_COUNT_ };
enum { A_CENTER = A_MIX_COUNT_, A_CUT_COUNT_ };

#define COMMON_ARGS                                                                           \
  [A_ALPHA] = {.name = "alpha",                                                               \
               .type = STK_ARG_FLOAT,                                                         \
               .flags = STK_ARGF_RANGE,                                                       \
               .default_text = "1.0",                                                         \
               .min = 1e-6,                                                                   \
               .max = 1e6,                                                                    \
               .doc = "lambda ~ Beta(alpha, alpha) (torchvision's default 1.0: uniform)"},    \
  [A_NUM_CLASSES] = {.name = "num_classes",                                                   \
                     .type = STK_ARG_INT,                                                     \
                     .flags = STK_ARGF_RANGE,                                                 \
                     .default_text = "0",                                                     \
                     .min = 0,                                                                \
                     .max = 1 << 24,                                                          \
                     .doc =                                                                   \
                         "> 0: labels are integer class indices, made one-hot; 0: labels "    \
                         "are one-hot or soft vectors already"},                              \
  [A_PER_SAMPLE] = {.name = "per_sample",                                                     \
                    .type = STK_ARG_BOOL,                                                     \
                    .default_text = "false",                                                  \
                    .doc =                                                                    \
                        "true: a lambda (and box) per sample; false: one per batch, as "      \
                        "torchvision"},                                                       \
  [A_PAIRING] = {.name = "pairing",                                                           \
                 .type = STK_ARG_STRING,                                                      \
                 .default_text = "\"roll\"",                                                  \
                 .choices = "roll|permutation",                                               \
                 .doc =                                                                       \
                     "partner of sample i: roll = sample i - 1 (the batch rolled by one, "    \
                     "torchvision), permutation = a random permutation drawn per batch"},     \
  [A_LAM] = {.name = "lam",                                                                   \
             .type = STK_ARG_FLOAT,                                                           \
             .flags = STK_ARGF_PER_SAMPLE,                                                    \
             .doc = "a given lambda in [0, 1] instead of a drawn one (fed: one per sample)"}, \
  [A_SEED] = {.name = "seed",                                                                 \
              .type = STK_ARG_INT,                                                            \
              .default_text = "-1",                                                           \
              .doc = "random seed (-1: derived from the pipeline's seed and the name)"}

static const stk_arg_schema mixup_args[] = {COMMON_ARGS};
STK__CHECK_ARGS(mixup_args, A_MIX_COUNT_);

static const stk_arg_schema cutmix_args[] = {
    COMMON_ARGS,
    [A_CENTER] = {.name = "center",
                  .type = STK_ARG_INTS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "a given box centre [x, y] in pixels instead of a drawn one (drawn: x "
                         "uniform in [0, W), y in [0, H), as torchvision)"},
};
STK__CHECK_ARGS(cutmix_args, A_CUT_COUNT_);
#undef COMMON_ARGS

static const stk_port_schema mix_in[] = {
    {"images", "uint8 or float32 images of one shape (layout with H and W: HWC, CHW, HW)"},
    {"labels", "per sample: an integer class (with num_classes), or a one-hot / soft vector"}};
static const stk_port_schema mix_out[] = {{"images", "the mixed images (type of the input)"},
                                          {"labels", "float32 [classes]: the mixed labels"}};

/* What one batch draws: each sample's partner, lambda and (cutmix) box. */
typedef struct {
  size_t *pair;
  double *lam;       /* the drawn or given lambda */
  double *label_lam; /* the labels' weight: lam, or CutMix's area-corrected lam */
  int64_t (*box)[4];
} mix_plan;

/* An image's axes as [outer, h, mid, w, inner] (flip's view). */
typedef struct {
  int64_t outer, h, mid, w, inner;
} mix_dims;

static bool image_dims(int ndim, const int64_t *shape, const char *layout, mix_dims *d) {
  int ah = 0, aw = 1;
  if (*layout) {
    const char *ph = strchr(layout, 'H'), *pw = strchr(layout, 'W');
    if (!ph || !pw || ph > pw || (int)strlen(layout) != ndim) return false;
    ah = (int)(ph - layout), aw = (int)(pw - layout);
  } else if (ndim != 2 && ndim != 3) {
    return false;
  }
  *d = (mix_dims){1, shape[ah], 1, shape[aw], 1};
  for (int k = 0; k < ah; k++) d->outer *= shape[k];
  for (int k = ah + 1; k < aw; k++) d->mid *= shape[k];
  for (int k = aw + 1; k < ndim; k++) d->inner *= shape[k];
  return true;
}

/* cutmix's schema is mixup's plus 'center'. */
static bool is_cutmix(const stk__node *node) {
  return stk__node_def(node)->schema->num_args == A_CUT_COUNT_;
}

/* One lambda (and box centre) from stream g, or the given ones of sample s. */
static stk_status draw_one(stk__node *node, stk__sample *s, stk__philox *g, const mix_dims *d,
                           size_t i, mix_plan *pl) {
  double lam = stk__arg_given(node, A_LAM) ? stk__arg_float(node, s, A_LAM)
                                           : stk__draw_beta(g, stk__arg_float(node, s, A_ALPHA),
                                                            stk__arg_float(node, s, A_ALPHA));
  if (!(lam >= 0.0 && lam <= 1.0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'lam' is %g, outside [0, 1]", lam);
  pl->lam[i] = pl->label_lam[i] = lam;
  if (!is_cutmix(node)) return STK_OK;
  int64_t cx, cy;
  if (stk__arg_given(node, A_CENTER)) {
    const int64_t *c;
    if (stk__arg_ints(node, s, A_CENTER, &c) != 2)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'center' needs 2 values [x, y]");
    cx = c[0], cy = c[1];
    if (cx < 0 || cx > d->w || cy < 0 || cy > d->h)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "'center' (%lld, %lld) lies outside the %lld x %lld image", (long long)cx,
                        (long long)cy, (long long)d->w, (long long)d->h);
  } else { /* torchvision: r_x = randint(W), then r_y = randint(H) */
    cx = d->w > 0 ? (int64_t)stk__philox_below(g, (uint64_t)d->w) : 0;
    cy = d->h > 0 ? (int64_t)stk__philox_below(g, (uint64_t)d->h) : 0;
  }
  stk_cutmix_box(lam, d->h, d->w, cx, cy, pl->box[i]);
  pl->label_lam[i] = d->h * d->w > 0 ? stk_cutmix_lam(pl->box[i], d->h, d->w) : 1.0;
  return STK_OK;
}

/* A uniformly random permutation (Fisher-Yates) of n partners. */
static void draw_partners(stk__philox *g, size_t *pair, size_t n) {
  for (size_t i = 0; i < n; i++) pair[i] = i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)stk__philox_below(g, i), t = pair[i - 1];
    pair[i - 1] = pair[j];
    pair[j] = t;
  }
}

/* The batch's plan: partners (per batch), then lambdas and boxes from the batch's stream
 * (one for all) or each sample's (per_sample, or a fed 'lam'/'center'). The same on the
 * CPU and the GPU: the streams depend only on the node and the samples' ordinals. */
static stk_status make_plan(stk__node *node, stk__sample *const *samples, size_t n,
                            const mix_dims *d, mix_plan *pl) {
  if (n == 0) return STK_OK;
  stk__philox g;
  stk__batch_rng(node, samples[0], &g);
  if (strcmp(stk__arg_string(node, A_PAIRING), "permutation") == 0)
    draw_partners(&g, pl->pair, n);
  else
    for (size_t i = 0; i < n; i++) pl->pair[i] = (i + n - 1) % n;
  bool each = stk__arg_bool(node, NULL, A_PER_SAMPLE) || stk__arg_is_fed(node, A_LAM) ||
              (is_cutmix(node) && stk__arg_is_fed(node, A_CENTER));
  if (!each) {
    STK_TRY(draw_one(node, samples[0], &g, d, 0, pl));
    for (size_t i = 1; i < n; i++) {
      pl->lam[i] = pl->lam[0], pl->label_lam[i] = pl->label_lam[0];
      memcpy(pl->box[i], pl->box[0], sizeof pl->box[0]);
    }
    return STK_OK;
  }
  for (size_t i = 0; i < n; i++) {
    stk__philox gs;
    stk__sample_rng(node, samples[i], &gs);
    STK_TRY(draw_one(node, samples[i], &gs, d, i, pl));
  }
  return STK_OK;
}

/* The element weights of sample i: MixUp everywhere, CutMix's partner inside the box. */
static void sample_weights(const stk__node *node, const mix_plan *pl, size_t i, const mix_dims *d,
                           stk_gpu_mix_sample *m) {
  m->outer = d->outer, m->h = d->h, m->mid = d->mid, m->w = d->w, m->inner = d->inner;
  if (is_cutmix(node)) {
    memcpy(m->box, pl->box[i], sizeof m->box);
    m->wa_in = 0.0f, m->wb_in = 1.0f, m->wa_out = 1.0f, m->wb_out = 0.0f;
  } else {
    m->box[0] = 0, m->box[1] = 0, m->box[2] = d->w, m->box[3] = d->h;
    m->wa_in = m->wa_out = (float)pl->lam[i];
    m->wb_in = m->wb_out = (float)(1.0 - pl->lam[i]);
  }
}

/* ---- labels ---- */

/* Element k of a label tensor as a double (the integer and float types labels come in). */
static bool label_element(stk_dtype t, const void *data, int64_t k, double *v) {
  switch (t) {
    case STK_DTYPE_UINT8:
      *v = ((const uint8_t *)data)[k];
      return true;
    case STK_DTYPE_INT8:
      *v = ((const int8_t *)data)[k];
      return true;
    case STK_DTYPE_UINT16:
      *v = ((const uint16_t *)data)[k];
      return true;
    case STK_DTYPE_INT16:
      *v = ((const int16_t *)data)[k];
      return true;
    case STK_DTYPE_UINT32:
      *v = ((const uint32_t *)data)[k];
      return true;
    case STK_DTYPE_INT32:
      *v = ((const int32_t *)data)[k];
      return true;
    case STK_DTYPE_INT64:
      *v = (double)((const int64_t *)data)[k];
      return true;
    case STK_DTYPE_UINT64:
      *v = (double)((const uint64_t *)data)[k];
      return true;
    case STK_DTYPE_FLOAT16:
      *v = stk__f16_to_f32(((const uint16_t *)data)[k]);
      return true;
    case STK_DTYPE_FLOAT32:
      *v = ((const float *)data)[k];
      return true;
    case STK_DTYPE_FLOAT64:
      *v = ((const double *)data)[k];
      return true;
    default:
      return false;
  }
}

/* A sample's label (its description: type, rank, shape, data). */
typedef struct {
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  const void *data;
} label_view;

static int64_t label_count(const label_view *l) {
  int64_t c = 1;
  for (int k = 0; k < l->ndim; k++) c *= l->shape[k];
  return c;
}

/* The label of sample s as a float vector of `classes` values (one-hot for an index). */
static stk_status label_vector(stk__node *node, stk__sample *s, const label_view *l,
                               int64_t classes, float *out) {
  int64_t num_classes = stk__arg_int(node, NULL, A_NUM_CLASSES), count = label_count(l);
  double v = 0.0;
  if (num_classes > 0) {
    if (count != 1 || !label_element(l->dtype, l->data, 0, &v) || v != floor(v))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "with num_classes the label must be one integer class index (got %lld "
                        "values of type %s)",
                        (long long)count, stk_dtype_name(l->dtype));
    if (v < 0 || v >= (double)num_classes)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "label %g is outside [0, num_classes = %lld)", v, (long long)num_classes);
    for (int64_t k = 0; k < classes; k++) out[k] = k == (int64_t)v ? 1.0f : 0.0f;
    return STK_OK;
  }
  if (count != classes)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the label has %lld values but the batch's first has %lld (one-hot or soft "
                      "labels of one length; or give num_classes for class indices)",
                      (long long)count, (long long)classes);
  for (int64_t k = 0; k < classes; k++) {
    if (!label_element(l->dtype, l->data, k, &v))
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "labels of type %s are not supported",
                        stk_dtype_name(l->dtype));
    out[k] = (float)v;
  }
  return STK_OK;
}

/* The mixed labels of the batch, n x classes floats: label_i * lam + label_pair * (1 - lam)
 * (torchvision's order of operations). `vec` holds n x classes scratch floats. */
static stk_status mix_labels(stk__node *node, stk__sample *const *samples, const label_view *l,
                             size_t n, int64_t classes, const mix_plan *pl, float *vec,
                             float *out) {
  for (size_t i = 0; i < n; i++)
    STK_TRY(label_vector(node, samples[i], &l[i], classes, vec + i * (size_t)classes));
  for (size_t i = 0; i < n; i++) {
    const float *a = vec + i * (size_t)classes, *b = vec + pl->pair[i] * (size_t)classes;
    float wa = (float)pl->label_lam[i], wb = (float)(1.0 - pl->label_lam[i]);
    for (int64_t k = 0; k < classes; k++)
      out[i * (size_t)classes + (size_t)k] = stk_mix_value(a[k], b[k], wa, wb);
  }
  return STK_OK;
}

static int64_t label_classes(const stk__node *node, const label_view *first) {
  int64_t num_classes = stk__arg_int(node, NULL, A_NUM_CLASSES);
  return num_classes > 0 ? num_classes : label_count(first);
}

/* ---- images ---- */

/* Every image has the first one's type, shape and layout, a type the kernels take, and
 * H and W axes; *d gets the axes. */
static stk_status check_images(stk__node *node, stk__sample *const *samples, size_t n,
                               const stk_tensor_desc *im, mix_dims *d) {
  const stk_tensor_desc *f = &im[0];
  if (f->dtype != STK_DTYPE_UINT8 && f->dtype != STK_DTYPE_FLOAT32)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, samples[0],
                      "images must be uint8 or float32, not %s", stk_dtype_name(f->dtype));
  if (!image_dims(f->ndim, f->shape, f->layout, d))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, samples[0],
                      "needs H and W axes (in that order); got %d dimensions with layout '%s'",
                      f->ndim, f->layout);
  for (size_t i = 1; i < n; i++)
    if (im[i].dtype != f->dtype || im[i].ndim != f->ndim || strcmp(im[i].layout, f->layout) ||
        memcmp(im[i].shape, f->shape, sizeof(int64_t) * (size_t)f->ndim))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, samples[i],
                        "every image of the batch must have the first one's shape and type "
                        "(resize or crop first); this one differs");
  return STK_OK;
}

static void mix_image_cpu(const stk_gpu_mix_sample *m, stk_dtype dtype) {
  int64_t e = 0;
  for (int64_t o = 0; o < m->outer; o++)
    for (int64_t y = 0; y < m->h; y++)
      for (int64_t k = 0; k < m->mid; k++)
        for (int64_t x = 0; x < m->w; x++) {
          bool in = stk_in_box(m->box, y, x);
          float wa = in ? m->wa_in : m->wa_out, wb = in ? m->wb_in : m->wb_out;
          for (int64_t c = 0; c < m->inner; c++, e++) {
            if (dtype == STK_DTYPE_UINT8) {
              float a = ((const uint8_t *)m->a)[e], b = ((const uint8_t *)m->b)[e];
              ((uint8_t *)m->dst)[e] = stk_mix_u8(stk_mix_value(a, b, wa, wb));
            } else {
              float a = ((const float *)m->a)[e], b = ((const float *)m->b)[e];
              ((float *)m->dst)[e] = stk_mix_value(a, b, wa, wb);
            }
          }
        }
}

/* ---- the batch's working memory (both backends) ---- */

typedef struct {
  stk__sample **samples;
  stk_tensor_desc *images;
  label_view *labels;
  mix_plan plan;
  stk_gpu_mix_sample *mix;
  float *vec, *mixed; /* n x classes: the labels as vectors, then mixed */
} mix_work;

static void work_free(mix_work *w) {
  free(w->samples);
  free(w->images);
  free(w->labels);
  free(w->plan.pair);
  free(w->plan.lam);
  free(w->plan.label_lam);
  free(w->plan.box);
  free(w->mix);
  free(w->vec);
  free(w->mixed);
}

static stk_status work_alloc(mix_work *w, size_t n) {
  size_t m = n ? n : 1;
  memset(w, 0, sizeof *w);
  w->samples = calloc(m, sizeof *w->samples);
  w->images = calloc(m, sizeof *w->images);
  w->labels = calloc(m, sizeof *w->labels);
  w->plan.pair = calloc(m, sizeof *w->plan.pair);
  w->plan.lam = calloc(m, sizeof *w->plan.lam);
  w->plan.label_lam = calloc(m, sizeof *w->plan.label_lam);
  w->plan.box = calloc(m, sizeof *w->plan.box);
  w->mix = calloc(m, sizeof *w->mix);
  if (w->samples && w->images && w->labels && w->plan.pair && w->plan.lam && w->plan.label_lam &&
      w->plan.box && w->mix)
    return STK_OK;
  work_free(w);
  return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "mixup: no memory for a batch of %zu", n);
}

/* Checks the images, draws the plan and mixes the labels (host memory, both backends). */
static stk_status plan_batch(stk__node *node, mix_work *w, size_t n, mix_dims *d,
                             int64_t *classes) {
  *classes = 0;
  if (n == 0) return STK_OK;
  STK_TRY(check_images(node, w->samples, n, w->images, d));
  STK_TRY(make_plan(node, w->samples, n, d, &w->plan));
  *classes = label_classes(node, &w->labels[0]);
  size_t cells = n * (size_t)(*classes ? *classes : 1);
  w->vec = calloc(cells, sizeof(float));
  w->mixed = calloc(cells, sizeof(float));
  if (!w->vec || !w->mixed) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "mixup: no memory for labels");
  return mix_labels(node, w->samples, w->labels, n, *classes, &w->plan, w->vec, w->mixed);
}

static stk_tensor_desc tensor_desc(const stk__tensor *t) {
  stk_tensor_desc d;
  memset(&d, 0, sizeof d);
  d.data = t->data;
  d.ndim = t->ndim;
  d.dtype = t->dtype;
  memcpy(d.shape, t->shape, sizeof d.shape);
  memcpy(d.layout, t->layout, sizeof d.layout);
  return d;
}

/* ---- CPU ---- */

static stk_status mix_outputs_cpu(stk__node *node, mix_work *w, size_t n, const mix_dims *d,
                                  int64_t classes) {
  for (size_t i = 0; i < n; i++) {
    const stk_tensor_desc *im = &w->images[i];
    stk__tensor *img, *lab;
    STK_TRY(stk__output(w->samples[i], 0, im->dtype, im->ndim, im->shape, im->layout, &img));
    STK_TRY(stk__output(w->samples[i], 1, STK_DTYPE_FLOAT32, 1, &classes, NULL, &lab));
    stk_gpu_mix_sample *m = &w->mix[i];
    sample_weights(node, &w->plan, i, d, m);
    m->a = im->data, m->b = w->images[w->plan.pair[i]].data, m->dst = img->data;
    mix_image_cpu(m, im->dtype);
    memcpy(lab->data, w->mixed + i * (size_t)classes, sizeof(float) * (size_t)classes);
  }
  return STK_OK;
}

static stk_status mix_run(stk__node *node, stk__batch *b) {
  size_t n = stk__batch_size(b);
  mix_work w;
  STK_TRY(work_alloc(&w, n));
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = stk__batch_sample(b, i);
    const stk__tensor *lab = stk__input(s, 1);
    w.samples[i] = s;
    w.images[i] = tensor_desc(stk__input(s, 0));
    w.labels[i] = (label_view){.dtype = lab->dtype, .ndim = lab->ndim, .data = lab->data};
    memcpy(w.labels[i].shape, lab->shape, sizeof lab->shape);
  }
  mix_dims d;
  int64_t classes;
  stk_status st = plan_batch(node, &w, n, &d, &classes);
  if (st == STK_OK) st = mix_outputs_cpu(node, &w, n, &d, classes);
  work_free(&w);
  return st;
}

/* ---- GPU ---- */

/* The labels come from the host (CPU operators): they are read there, mixed with the
 * CPU's code, and uploaded; the images are mixed by one kernel launch. */
static stk_status gather_gpu(stk__node *node, stk__gpu_batch *b, stk_tensor_list *img,
                             mix_work *w) {
  stk_tensor_list *lab = stk__gpu_input(b, 1);
  if (stk_tensor_list_storage(lab) == STK_STORAGE_DEVICE)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "on the GPU the labels must come from a CPU operator (they are read on "
                      "the host)");
  for (size_t i = 0; i < stk__gpu_batch_size(b); i++) {
    stk_tensor_desc ld;
    w->samples[i] = stk__gpu_sample(b, i);
    STK_TRY(stk_tensor_list_sample(img, i, &w->images[i]));
    STK_TRY(stk_tensor_list_sample(lab, i, &ld));
    w->labels[i] = (label_view){.dtype = ld.dtype, .ndim = ld.ndim, .data = ld.data};
    memcpy(w->labels[i].shape, ld.shape, sizeof ld.shape);
  }
  return STK_OK;
}

static stk_status launch_gpu(stk__node *node, stk__gpu_batch *b, mix_work *w, size_t n,
                             const mix_dims *d, int64_t classes, stk_tensor_list **img_out,
                             stk_tensor_list **lab_out) {
  const stk_tensor_desc *f = &w->images[0];
  int64_t *shapes = calloc(n * (size_t)(f->ndim ? f->ndim : 1) + n, sizeof(int64_t));
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    memcpy(shapes + i * (size_t)f->ndim, f->shape, sizeof(int64_t) * (size_t)f->ndim);
    shapes[n * (size_t)f->ndim + i] = classes;
  }
  stk_status st = stk__gpu_alloc_list(b, f->dtype, f->ndim, shapes, f->layout, true, img_out);
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, 1, shapes + n * (size_t)f->ndim, NULL, true,
                             lab_out);
  free(shapes);
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  stk_tensor_desc ld;
  if (st == STK_OK && classes > 0 && (st = stk_tensor_list_sample(*lab_out, 0, &ld)) == STK_OK)
    st = stk__gpu_op_check(
        node,
        g->api->memcpy_async(g->ctx, ld.data, w->mixed, n * (size_t)classes * sizeof(float),
                             stk__gpu_stream(b), err, sizeof err),
        err);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc od;
    st = stk_tensor_list_sample(*img_out, i, &od);
    sample_weights(node, &w->plan, i, d, &w->mix[i]);
    w->mix[i].a = w->images[i].data, w->mix[i].b = w->images[w->plan.pair[i]].data;
    w->mix[i].dst = od.data;
  }
  if (st == STK_OK)
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_mix(g->api, g->ctx, (int)n, w->mix, &(stk_gpu_mix_args){f->dtype},
                        stk__gpu_stream(b), err, sizeof err),
        err);
  return st;
}

static stk_status mix_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *img = NULL, *lab = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  mix_work w;
  stk_status st = work_alloc(&w, n);
  if (st != STK_OK) return stk__gpu_finish(b, in, owned, NULL, st);
  mix_dims d;
  int64_t classes = 0;
  st = gather_gpu(node, b, in, &w);
  if (st == STK_OK && n > 0) st = plan_batch(node, &w, n, &d, &classes);
  if (st == STK_OK && n > 0) st = launch_gpu(node, b, &w, n, &d, classes, &img, &lab);
  work_free(&w);
  if (st == STK_OK && n == 0) { /* an empty batch: empty lists */
    st = stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), stk_tensor_list_ndim(in), NULL,
                             stk_tensor_list_layout(in), true, &img);
    if (st == STK_OK) st = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, 1, NULL, NULL, true, &lab);
  }
  if (st == STK_OK) {
    st = stk__gpu_output(b, 1, lab);
    lab = NULL;
  }
  stk_tensor_list_release(lab);
  return stk__gpu_finish(b, in, owned, img, st);
}

/* ---- schemas ---- */

static const stk_op_schema mixup_schema = {
    .name = "mixup",
    .doc =
        "MixUp (torchvision.transforms.v2.MixUp) on a batch of images and labels: image_i = "
        "lam * image_i + (1 - lam) * image_j and the same for the labels, j the partner "
        "(sample i - 1: the batch rolled by one), lam ~ Beta(alpha, alpha) once per batch "
        "(per_sample: per sample). Images of one shape, uint8 (rounded) or float32; labels "
        "become float32 vectors (num_classes: one-hot from class indices).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_BATCH | STK_OPF_RANDOM,
    .min_inputs = 2,
    .max_inputs = 2,
    .inputs = mix_in,
    .num_outputs = 2,
    .outputs = mix_out,
    .num_args = A_MIX_COUNT_,
    .args = mixup_args,
    .gpu_check =
        "# atol=1 resize=120x160\n"
        "l = random.uniform(range=[0, 10], dtype=\"int32\")\n"
        "m, y = mixup(IN, l, num_classes=10, per_sample=true, seed=7, device=@)\n"
        "return m, y",
};
const stk__op_def stk__op_mixup = {
    .schema = &mixup_schema,
    .run_batch = mix_run,
    .run_gpu = mix_run_gpu,
};

static const stk_op_schema cutmix_schema = {
    .name = "cutmix",
    .doc =
        "CutMix (torchvision.transforms.v2.CutMix) on a batch of images and labels: the "
        "box [x - rw, x + rw) x [y - rh, y + rh) (clamped; rw = int(0.5 * sqrt(1 - lam) * "
        "W), rh likewise; centre drawn uniformly) of the partner (sample i - 1: the batch "
        "rolled by one) is pasted into image i, and the labels are mixed with lam corrected "
        "to 1 - box area / image area. lam ~ Beta(alpha, alpha) once per batch (per_sample: "
        "per sample). Images of one shape, uint8 or float32; labels become float32 vectors.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_BATCH | STK_OPF_RANDOM,
    .min_inputs = 2,
    .max_inputs = 2,
    .inputs = mix_in,
    .num_outputs = 2,
    .outputs = mix_out,
    .num_args = A_CUT_COUNT_,
    .args = cutmix_args,
    .gpu_check =
        "# atol=0 resize=120x160\n"
        "l = random.uniform(range=[0, 10], dtype=\"int32\")\n"
        "m, y = cutmix(IN, l, num_classes=10, per_sample=true, seed=7, device=@)\n"
        "return m, y",
};
const stk__op_def stk__op_cutmix = {
    .schema = &cutmix_schema,
    .run_batch = mix_run,
    .run_gpu = mix_run_gpu,
};
