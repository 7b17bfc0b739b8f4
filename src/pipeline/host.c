/* Data from the host program: the "external_source" operator, fed batch by batch with
 * stk_pipeline_feed (the host functions of python_function are in host_fn.c). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- external_source ---- */

typedef struct {
  stk__feed_batch *head, *tail; /* queued batches */
  stk__feed_batch *current;     /* the batch being processed */
  int64_t taken;                /* its samples planned so far */
  int64_t sequence;             /* fed batches made current so far */
  bool ended;
} feed_state;

static void free_feed_batch(stk__feed_batch *b) {
  if (!b) return;
  for (size_t i = 0; i < b->count; i++) free(b->samples[i].data);
  free(b->samples);
  free(b);
}

static stk_status ext_init(stk__node *node) {
  feed_state *fs = stk__calloc(1, sizeof *fs, "an external source");
  if (!fs) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = fs;
  return STK_OK;
}

static void ext_destroy(stk__node *node) {
  feed_state *fs = *stk__node_state(node);
  for (stk__feed_batch *b = fs->head, *n; b; b = n) {
    n = b->next;
    free_feed_batch(b);
  }
  free_feed_batch(fs->current);
  free(fs);
}

/* Makes the next fed batch current, waiting for it (producer thread). */
static stk_status next_fed_batch(stk__node *node, feed_state *fs) {
  stk_pipeline *p = node->pipe;
  pthread_mutex_lock(&p->feed_lock);
  atomic_fetch_add(&p->feed_waiters, 1); /* the caller's data: no stall of the pipeline's */
  while (!fs->head && !fs->ended && !atomic_load(&p->stopping))
    pthread_cond_wait(&p->feed_cond, &p->feed_lock);
  atomic_fetch_sub(&p->feed_waiters, 1);
  stk__feed_batch *b = fs->head;
  if (b) {
    fs->head = b->next;
    if (!fs->head) fs->tail = NULL;
  }
  pthread_mutex_unlock(&p->feed_lock);
  if (!b)
    return STK_FAIL(STK_ERR_STATE, "external source '%s' exhausted (no data was fed)", node->name);
  free_feed_batch(fs->current);
  fs->current = b;
  fs->taken = 0;
  fs->sequence++;
  return STK_OK;
}

/* Each fed batch is one pipeline batch (it may hold fewer samples than the batch size):
 * an "epoch" of the position is a fed batch, so the executor plans exactly its samples,
 * and a sample skipped under on_error="skip" leaves the batch instead of taking one of
 * the next fed batch. */
static stk_status ext_position(stk__node *node, int64_t *epoch, int64_t *left) {
  feed_state *fs = node->state;
  if (!fs->current || fs->taken == (int64_t)fs->current->count) STK_TRY(next_fed_batch(node, fs));
  *epoch = fs->sequence;
  *left = (int64_t)fs->current->count - fs->taken;
  return STK_OK;
}

static stk_status ext_plan(stk__node *node, stk__plan *plan) {
  feed_state *fs = node->state;
  if (!fs->current || fs->taken + plan->count > (int64_t)fs->current->count)
    return STK_FAIL(STK_ERR_INTERNAL, "external source '%s': planned past its fed batch",
                    node->name);
  if (fs->taken == 0 && plan->count < (int64_t)fs->current->count)
    return STK_FAIL(
        STK_ERR_INVALID_ARGUMENT,
        "external source '%s': fed %zu samples, but the batch holds %lld (other external "
        "sources or readers of the pipeline gave fewer); feed them batches of one size",
        node->name, fs->current->count, (long long)plan->count);
  for (int64_t i = 0; i < plan->count; i++) stk__plan_set_item(plan, i, fs->taken + i);
  fs->taken += plan->count;
  return STK_OK;
}

static stk_status ext_run(stk__node *node, stk__sample *s) {
  feed_state *fs = node->state;
  int64_t item = stk__sample_item(s, node);
  const stk__tensor *src = &fs->current->samples[item];
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, src->dtype, src->ndim, src->shape, src->layout, &out));
  size_t bytes = stk_dtype_size(src->dtype);
  for (int d = 0; d < src->ndim; d++) bytes *= (size_t)src->shape[d];
  if (bytes) memcpy(out->data, src->data, bytes);
  return STK_OK;
}

static stk_status ext_meta(stk__node *node, stk_reader_meta *out) {
  memset(out, 0, sizeof *out);
  out->epoch_size = -1; /* unknown: the host decides when an epoch ends */
  out->epoch_size_padded = -1;
  out->shard_size = -1;
  out->number_of_shards = 1;
  return STK_OK;
}

enum { EXT_DTYPE, EXT_NDIM, EXT_LAYOUT, EXT_NO_COPY, EXT_BLOCKING, EXT_ARGS_COUNT_ };
static const stk_arg_schema ext_args[] = {
    [EXT_DTYPE] = {.name = "dtype",
                   .type = STK_ARG_STRING,
                   .doc = "expected dtype of the fed samples (checked)"},
    [EXT_NDIM] = {.name = "ndim",
                  .type = STK_ARG_INT,
                  .doc = "expected number of dimensions (checked)"},
    [EXT_LAYOUT] = {.name = "layout", .type = STK_ARG_STRING, .doc = "layout given to the samples"},
    [EXT_NO_COPY] = {.name = "no_copy",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = "accepted for DALI compatibility; stoker always copies"},
    [EXT_BLOCKING] = {.name = "blocking",
                      .type = STK_ARG_BOOL,
                      .default_text = "true",
                      .doc = "accepted for DALI compatibility"},
};
STK__CHECK_ARGS(ext_args, EXT_ARGS_COUNT_);
static const stk_port_schema ext_out[] = {{"data", "the fed samples"}};
static const stk_op_schema ext_schema = {
    .name = "external_source",
    .doc =
        "Delivers samples fed by the host program (stk_pipeline_feed), one batch per pipeline "
        "batch, "
        "in order; "
        "a fed batch may hold fewer samples than the batch size (the pipeline's batch is then as "
        "small). On device \"gpu\" the fed samples are uploaded (DALI's external_source on "
        "the GPU; arrays on a GPU are copied to the host first).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_NO_INPUT | STK_OPF_GPU_ON_HOST,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = 1,
    .outputs = ext_out,
    .num_args = sizeof ext_args / sizeof ext_args[0],
    .args = ext_args,
};
const stk__op_def stk__op_external_source = {
    .schema = &ext_schema,
    .init = ext_init,
    .destroy = ext_destroy,
    .plan = ext_plan,
    .run_sample = ext_run,
    .reader_meta = ext_meta,
    .position = ext_position,
};

static stk_status check_fed(stk__node *node, const stk_tensor_desc *samples, size_t count) {
  int64_t batch = stk__node_batch_size(node);
  if (count < 1 || (int64_t)count > batch) /* a batch may be smaller: the batch size is the most */
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "external source '%s': fed %zu samples, must be 1 to the batch size (%lld)",
                    node->name, count, (long long)batch);
  for (size_t i = 0; i < count; i++) {
    if (samples[i].dtype != samples[0].dtype || samples[i].ndim != samples[0].ndim)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "external source '%s': sample %zu differs in dtype or ndim from sample 0",
                      node->name, i);
    if (samples[i].ndim < 0 || samples[i].ndim > STK_MAX_NDIM ||
        stk_dtype_size(samples[i].dtype) == 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "external source '%s': sample %zu has a bad dtype or ndim", node->name, i);
  }
  if (stk__arg_given(node, EXT_DTYPE) && count &&
      stk__dtype_arg(stk__arg_string(node, EXT_DTYPE)) != samples[0].dtype)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "external source '%s': fed %s, declared dtype %s",
                    node->name, stk_dtype_name(samples[0].dtype), stk__arg_string(node, EXT_DTYPE));
  if (stk__arg_given(node, EXT_NDIM) && count &&
      stk__arg_int(node, NULL, EXT_NDIM) != samples[0].ndim)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "external source '%s': fed %d dims, declared ndim %lld", node->name,
                    samples[0].ndim, (long long)stk__arg_int(node, NULL, EXT_NDIM));
  return STK_OK;
}

/* Copies one fed sample (honouring its byte strides) into a dense buffer. The trailing
 * dimensions whose strides are already dense form one block copied with memcpy (the
 * whole sample for a C-contiguous array); only the dimensions before them are walked. */
static stk_status copy_fed_sample(const stk_tensor_desc *src, const char *layout,
                                  stk__tensor *dst) {
  size_t elem = stk_dtype_size(src->dtype), count = 1, bytes;
  for (int d = 0; d < src->ndim; d++) {
    if (src->shape[d] < 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "negative extent in a fed sample");
    if (!stk__mul_size(count, (size_t)src->shape[d], &count))
      return STK_FAIL(STK_ERR_LIMIT, "a fed sample's element count overflows");
    dst->shape[d] = src->shape[d];
  }
  /* (bounded so that every byte offset below fits in int64_t) */
  if (!stk__mul_size(count, elem, &bytes) || bytes > (size_t)INT64_MAX / 2)
    return STK_FAIL(STK_ERR_LIMIT, "a fed sample's size in bytes overflows");
  if (count > 0 && !src->data)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "a fed sample has no data (NULL)");
  dst->ndim = src->ndim;
  dst->dtype = src->dtype;
  snprintf(dst->layout, sizeof dst->layout, "%s", layout && *layout ? layout : src->layout);
  dst->data = stk__malloc(bytes ? bytes : 1, "a fed sample");
  if (!dst->data) return STK_ERR_OUT_OF_MEMORY;
  if (count == 0) return STK_OK;
  int outer = src->ndim; /* dimensions [outer, ndim) are dense in the source */
  size_t block = elem;
  while (outer > 0 && (src->shape[outer - 1] == 1 || src->strides[outer - 1] == (int64_t)block)) {
    block *= (size_t)src->shape[outer - 1];
    outer--;
  }
  size_t blocks = bytes / block;
  for (size_t k = 0; k < blocks; k++) { /* walk the outer dimensions of the strided source */
    size_t rem = k;
    int64_t offset = 0;
    for (int d = outer - 1; d >= 0; d--) {
      offset += (int64_t)(rem % (size_t)src->shape[d]) * src->strides[d];
      rem /= (size_t)src->shape[d];
    }
    memcpy((char *)dst->data + k * block, (const char *)src->data + offset, block);
  }
  return STK_OK;
}

stk_status stk_pipeline_feed(stk_pipeline *p, const char *op_name, const stk_tensor_desc *samples,
                             size_t count) {
  if (!p || !op_name || (!samples && count))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (!p->built) return STK_FAIL(STK_ERR_STATE, "build the pipeline before feeding it");
  stk__node *node = stk__graph_find_node(p, op_name);
  if (!node || node->spec->def != &stk__op_external_source)
    return STK_FAIL(STK_ERR_NOT_FOUND, "no external_source named '%s'", op_name);
  STK_TRY(check_fed(node, samples, count));
  stk__feed_batch *b = stk__calloc(1, sizeof *b, "a fed batch");
  if (!b) return STK_ERR_OUT_OF_MEMORY;
  b->samples = stk__calloc(count ? count : 1, sizeof(stk__tensor), "fed samples");
  if (!b->samples) {
    free(b);
    return STK_ERR_OUT_OF_MEMORY;
  }
  b->count = count;
  const char *layout = stk__arg_given(node, EXT_LAYOUT) ? stk__arg_string(node, EXT_LAYOUT) : NULL;
  for (size_t i = 0; i < count; i++) {
    stk_status st = copy_fed_sample(&samples[i], layout, &b->samples[i]);
    if (st != STK_OK) {
      free_feed_batch(b);
      return stk__wrap(st, "external source '%s', sample %zu", node->name, i);
    }
  }
  feed_state *fs = node->state;
  pthread_mutex_lock(&p->feed_lock);
  if (fs->tail)
    fs->tail->next = b;
  else
    fs->head = b;
  fs->tail = b;
  fs->ended = false;
  pthread_cond_broadcast(&p->feed_cond);
  pthread_mutex_unlock(&p->feed_lock);
  return STK_OK;
}

stk_status stk_pipeline_feed_end(stk_pipeline *p, const char *op_name) {
  if (!p || !op_name) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (!p->built) return STK_FAIL(STK_ERR_STATE, "build the pipeline first");
  stk__node *node = stk__graph_find_node(p, op_name);
  if (!node || node->spec->def != &stk__op_external_source)
    return STK_FAIL(STK_ERR_NOT_FOUND, "no external_source named '%s'", op_name);
  feed_state *fs = node->state;
  pthread_mutex_lock(&p->feed_lock);
  fs->ended = true;
  pthread_cond_broadcast(&p->feed_cond);
  pthread_mutex_unlock(&p->feed_lock);
  return STK_OK;
}
