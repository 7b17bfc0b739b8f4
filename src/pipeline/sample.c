/* What operator implementations see: node accessors, argument getters (constant or fed
 * per sample), the sample context, outputs, scratch memory and random streams. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Drops `prefix` + ": " (or "'" prefix "': ") from the front of *msg when present. */
static void drop_prefix(const char **msg, const char *prefix) {
  size_t n = strlen(prefix);
  const char *m = *msg;
  if (n == 0) return;
  if (strncmp(m, prefix, n) == 0 && m[n] == ':' && m[n + 1] == ' ')
    *msg = m + n + 2;
  else if (m[0] == '\'' && strncmp(m + 1, prefix, n) == 0 && m[n + 1] == '\'' && m[n + 2] == ':' &&
           m[n + 3] == ' ')
    *msg = m + n + 4;
}

char *stk__sample_failure_message(const char *op_name, const char *stage, const stk__sample *s) {
  char buf[1400];
  /* The operator's and the file's names lead this message: the same names at the front
   * of the operator's own message would only repeat them. */
  const char *inner = stk_last_error();
  drop_prefix(&inner, op_name);
  char own[64]; /* operators that name the sample themselves ("sample 3: ...") */
  snprintf(own, sizeof own, "sample %lld", (long long)s->ordinal);
  drop_prefix(&inner, own);
  if (s->source) {
    char with_source[1200];
    snprintf(with_source, sizeof with_source, "sample %lld (%s)", (long long)s->ordinal, s->source);
    drop_prefix(&inner, with_source);
    drop_prefix(&inner, s->source);
  }
  /* "'<source>' is truncated" after "from <source>: " reads "the file is truncated" */
  const char *the_file = "";
  size_t n = s->source ? strlen(s->source) : 0;
  if (n && inner[0] == '\'' && strncmp(inner + 1, s->source, n) == 0 && inner[n + 1] == '\'' &&
      inner[n + 2] == ' ') {
    inner += n + 3;
    the_file = "the file ";
  }
  /* A sample with a source is named by it (the stream's counter means nothing to the
   * user); one without (a random source, a feed) by its place in the stream. */
  if (s->source)
    snprintf(buf, sizeof buf, "operator '%s'%s, %s: %s%s", op_name, stage, s->source, the_file,
             inner);
  else
    snprintf(buf, sizeof buf, "operator '%s'%s, sample %lld: %s", op_name, stage,
             (long long)s->ordinal, inner);
  return strdup(buf);
}

void **stk__node_state(stk__node *node) { return &node->state; }
const char *stk__node_name(const stk__node *node) { return node->name; }
int stk__node_num_inputs(const stk__node *node) { return node->spec->num_inputs; }
int stk__node_num_outputs(const stk__node *node) { return node->spec->num_outputs; }
int stk__node_device_id(const stk__node *node) {
  return (int)node->pipe->settings[STK_PIPE_DEVICE_ID];
}
int64_t stk__node_batch_size(const stk__node *node) {
  return node->pipe->settings[STK_PIPE_BATCH_SIZE];
}
int64_t stk__node_max_pixels(const stk__node *node) {
  return node->pipe->settings[STK_PIPE_MAX_IMAGE_PIXELS];
}
int64_t stk__node_max_file_bytes(const stk__node *node) {
  return node->pipe->settings[STK_PIPE_MAX_FILE_BYTES];
}
int stk__node_num_threads(const stk__node *node) {
  return (int)node->pipe->settings[STK_PIPE_NUM_THREADS];
}
void *stk__node_pool_alloc(stk__node *node, size_t bytes) {
  return stk__pool_alloc(node->pipe->pool, bytes);
}
void stk__node_pool_free(void *block) { stk__pool_free(NULL, block); }
void stk__node_request_host_balance(stk__node *node) { node->host_balance_wanted = true; }
int stk__node_host_decode_quota(const stk__node *node) {
  return atomic_load(&node->host_decode_quota);
}
void stk__node_count_own_decoded(stk__node *node, int64_t count, double share) {
  atomic_fetch_add(&node->pipe->stat_own_decoded, count);
  atomic_store(&node->pipe->own_share_ppm, (long long)(share * 1e6 + 0.5));
}
void stk__node_count_host_decoded(stk__node *node, int64_t count) {
  atomic_fetch_add(&node->pipe->stat_host_decoded, count);
}
bool stk__node_skips_bad_data(const stk__node *node) {
  return node->pipe->settings[STK_PIPE_ON_ERROR] == STK_ON_ERROR_SKIP;
}
void stk__node_skip_file(stk__node *node, const char *message) {
  stk_pipeline *p = node->pipe;
  stk__warn("%s", message);
  long long slot = atomic_fetch_add(&p->num_skipped_files, 1);
  if (slot < STK_SKIP_MESSAGES_KEPT) atomic_store(&p->skipped_files[slot], strdup(message));
}
int64_t stk__node_seed(const stk__node *node) {
  int64_t seed = node->pipe->settings[STK_PIPE_SEED];
  return seed < 0 ? 0x5EED : seed;
}

bool stk__arg_given(const stk__node *node, int arg) { return node->spec->args[arg].given; }
bool stk__arg_is_fed(const stk__node *node, int arg) { return node->spec->args[arg].edge >= 0; }

/* Reads element `i` of a tensor of any dtype as a double. */
static double element(const stk__tensor *t, int64_t i) {
  switch (t->dtype) {
    case STK_DTYPE_UINT8:
      return ((const uint8_t *)t->data)[i];
    case STK_DTYPE_INT8:
      return ((const int8_t *)t->data)[i];
    case STK_DTYPE_UINT16:
      return ((const uint16_t *)t->data)[i];
    case STK_DTYPE_INT16:
      return ((const int16_t *)t->data)[i];
    case STK_DTYPE_UINT32:
      return ((const uint32_t *)t->data)[i];
    case STK_DTYPE_INT32:
      return ((const int32_t *)t->data)[i];
    case STK_DTYPE_UINT64:
      return (double)((const uint64_t *)t->data)[i];
    case STK_DTYPE_INT64:
      return (double)((const int64_t *)t->data)[i];
    case STK_DTYPE_FLOAT16:
      return stk__f16_to_f32(((const uint16_t *)t->data)[i]);
    case STK_DTYPE_FLOAT32:
      return ((const float *)t->data)[i];
    case STK_DTYPE_FLOAT64:
      return ((const double *)t->data)[i];
    case STK_DTYPE_BOOL:
      return ((const uint8_t *)t->data)[i] != 0;
    default:
      return 0.0;
  }
}

static int64_t tensor_size(const stk__tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

static const stk__tensor *fed(const stk__node *node, const stk__sample *s, int arg) {
  int e = node->spec->args[arg].edge;
  return (e >= 0 && s) ? &s->edges[e] : NULL;
}

stk_dtype stk__arg_fed_dtype(const stk__node *node, const stk__sample *s, int arg) {
  const stk__tensor *t = fed(node, s, arg);
  return t ? t->dtype : STK_DTYPE_COUNT;
}

bool stk__arg_bool(const stk__node *node, const stk__sample *s, int arg) {
  const stk__tensor *t = fed(node, s, arg);
  if (t) return tensor_size(t) > 0 && element(t, 0) != 0.0;
  const stk__argval *v = &node->spec->args[arg];
  return v->type == STK_ARG_INT ? v->i != 0 : v->b;
}

int64_t stk__arg_int(const stk__node *node, const stk__sample *s, int arg) {
  const stk__tensor *t = fed(node, s, arg);
  if (t) return tensor_size(t) > 0 ? (int64_t)llround(element(t, 0)) : 0;
  const stk__argval *v = &node->spec->args[arg];
  return v->type == STK_ARG_BOOL ? v->b : v->type == STK_ARG_FLOAT ? (int64_t)v->f : v->i;
}

double stk__arg_float(const stk__node *node, const stk__sample *s, int arg) {
  const stk__tensor *t = fed(node, s, arg);
  if (t) return tensor_size(t) > 0 ? element(t, 0) : 0.0;
  const stk__argval *v = &node->spec->args[arg];
  return v->type == STK_ARG_INT ? (double)v->i : v->type == STK_ARG_BOOL ? v->b : v->f;
}

const char *stk__arg_string(const stk__node *node, int arg) {
  const char *s = node->spec->args[arg].s;
  return s ? s : "";
}

size_t stk__arg_ints(const stk__node *node, const stk__sample *s, int arg, const int64_t **out) {
  const stk__tensor *t = fed(node, s, arg);
  if (t) {
    int64_t n = tensor_size(t);
    int64_t *buf = stk__scratch((stk__sample *)s, (size_t)(n ? n : 1) * sizeof(int64_t));
    if (!buf) {
      *out = NULL;
      return 0;
    }
    for (int64_t i = 0; i < n; i++) buf[i] = (int64_t)llround(element(t, i));
    *out = buf;
    return (size_t)n;
  }
  *out = node->spec->args[arg].ints;
  return node->spec->args[arg].count;
}

size_t stk__arg_floats(const stk__node *node, const stk__sample *s, int arg, const double **out) {
  const stk__tensor *t = fed(node, s, arg);
  if (t) {
    int64_t n = tensor_size(t);
    double *buf = stk__scratch((stk__sample *)s, (size_t)(n ? n : 1) * sizeof(double));
    if (!buf) {
      *out = NULL;
      return 0;
    }
    for (int64_t i = 0; i < n; i++) buf[i] = element(t, i);
    *out = buf;
    return (size_t)n;
  }
  *out = node->spec->args[arg].floats;
  return node->spec->args[arg].count;
}

size_t stk__arg_strings(const stk__node *node, int arg, const char *const **out) {
  *out = (const char *const *)node->spec->args[arg].strs;
  return node->spec->args[arg].count;
}

const stk__tensor *stk__input(const stk__sample *s, int index) {
  return &s->edges[s->current->in_edges[index]];
}

/* Every operator's output is held to the untrusted-input limits before it is allocated:
 * an image (layout HWC, CHW or HW) to max_image_pixels, and the sample's outputs that the
 * batch holds (those leaving the sample's chain of CPU operators) together to its share
 * of max_batch_bytes (a share, not a running batch total, so whether a
 * sample fits never depends on the order threads finish in). */
static stk_status check_output_limits(stk__sample *s, const stk__node *node, int ndim,
                                      const int64_t *shape, const char *layout, size_t bytes,
                                      bool held) {
  const int64_t *set = s->pipe->settings;
  if (layout && ndim >= 2 && ndim <= 3 &&
      (strcmp(layout, "HWC") == 0 || strcmp(layout, "CHW") == 0 || strcmp(layout, "HW") == 0)) {
    int h = layout[0] == 'C' ? 1 : 0;
    double pixels = (double)shape[h] * (double)shape[h + 1];
    if (pixels > (double)set[STK_PIPE_MAX_IMAGE_PIXELS])
      return STK_FAIL(STK_ERR_LIMIT,
                      "a %lld x %lld output image has more than "
                      "max_image_pixels (%lld) pixels",
                      (long long)shape[h + 1], (long long)shape[h],
                      (long long)set[STK_PIPE_MAX_IMAGE_PIXELS]);
  }
  if (!held) return STK_OK; /* scratch inside the sample's chain, reused for the next sample */
  int64_t batch = set[STK_PIPE_BATCH_SIZE] > 0 ? set[STK_PIPE_BATCH_SIZE] : 1;
  uint64_t share = (uint64_t)set[STK_PIPE_MAX_BATCH_BYTES] / (uint64_t)batch;
  if (bytes > share || s->out_bytes + bytes > share)
    return STK_FAIL(STK_ERR_LIMIT,
                    "%zu more bytes of output would take the sample past its "
                    "share of max_batch_bytes (%lld / batch_size %lld = %llu bytes)",
                    bytes, (long long)set[STK_PIPE_MAX_BATCH_BYTES], (long long)batch,
                    (unsigned long long)share);
  s->out_bytes += bytes;
  return STK_OK;
}

stk_status stk__output(stk__sample *s, int index, stk_dtype dtype, int ndim, const int64_t *shape,
                       const char *layout, stk__tensor **out) {
  stk__node *node = s->current;
  if (index < 0 || index >= node->num_outputs)
    return STK_FAIL(STK_ERR_INTERNAL, "operator '%s' has no output %d", node->name, index);
  if (ndim < 0 || ndim > STK_MAX_NDIM)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "operator '%s': %d dimensions, at most %d",
                    node->name, ndim, STK_MAX_NDIM);
  int edge = node->out_edges[index];
  stk__tensor *t = &s->edges[edge];
  size_t bytes = stk_dtype_size(dtype);
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0 || !stk__mul_size(bytes, (size_t)shape[d], &bytes))
      return STK_FAIL(STK_ERR_LIMIT, "operator '%s': output shape overflows", node->name);
    t->shape[d] = shape[d];
  }
  STK_TRY(check_output_limits(s, node, ndim, shape, layout, bytes, s->pipe->edges[edge].slot >= 0));
  t->ndim = ndim;
  t->dtype = dtype;
  snprintf(t->layout, sizeof t->layout, "%s", layout ? layout : "");
  t->data = s->pipe->edges[edge].slot >= 0 ? stk__exec_alloc_output(s, edge, bytes, t)
                                           : stk__arena_alloc(s->arena, bytes);
  if (!t->data)
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "operator '%s': cannot allocate %zu bytes", node->name,
                    bytes);
  *out = t;
  return STK_OK;
}

stk_status stk__output_alias(stk__sample *s, int index, const stk__tensor *src) {
  stk__node *node = s->current;
  int edge = node->out_edges[index];
  if (s->pipe->edges[edge].slot < 0) { /* stays inside the chain: alias */
    s->edges[edge] = *src;
    return STK_OK;
  }
  stk__tensor *out;
  STK_TRY(stk__output(s, index, src->dtype, src->ndim, src->shape, src->layout, &out));
  size_t bytes = stk_dtype_size(src->dtype);
  for (int d = 0; d < src->ndim; d++) bytes *= (size_t)src->shape[d];
  if (bytes) memcpy(out->data, src->data, bytes);
  return STK_OK;
}

void *stk__scratch(stk__sample *s, size_t bytes) { return stk__arena_alloc(s->arena, bytes); }

void stk__sample_rng(const stk__node *node, const stk__sample *s, stk__philox *g) {
  stk__philox_init(g, node->rng_key, (uint64_t)s->ordinal);
}

void stk__batch_rng(const stk__node *node, const stk__sample *first, stk__philox *g) {
  stk__philox_init(g, stk__mix64(node->rng_key, 0xBA7C4ull), first ? (uint64_t)first->ordinal : 0);
}

int64_t stk__sample_ordinal(const stk__sample *s) { return s->ordinal; }
size_t stk__sample_index(const stk__sample *s) { return s->index; }

int64_t stk__sample_item(const stk__sample *s, const stk__node *reader) {
  return reader->reader_slot >= 0 ? s->items[reader->reader_slot] : -1;
}

void stk__sample_set_source(stk__sample *s, const char *source) { s->source = source; }
const char *stk__sample_source(const stk__sample *s) { return s->source; }

void stk__plan_set_item(stk__plan *plan, int64_t i, int64_t item) {
  if (i >= 0 && i < plan->count) plan->items_[i] = item;
}

stk_dtype stk__dtype_arg(const char *name) {
  stk_dtype d;
  return stk_dtype_from_name(name, &d) == STK_OK ? d : STK_DTYPE_UINT8;
}
