/* The public pipeline API: settings, graph construction, build, run, metadata, stats. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "gpu_stage.h"
#include "internal.h"

#define HOST_POOL_MAX_CACHED ((size_t)1 << 30)

static const struct {
  const char *name;
  int64_t def, min, max;
} setting_info[STK_PIPE_SETTING_COUNT] = {
    [STK_PIPE_BATCH_SIZE] = {"batch_size", 1, 1, 1 << 20},
    [STK_PIPE_NUM_THREADS] = {"num_threads", 1, 1, 1024},
    [STK_PIPE_SEED] = {"seed", -1, -1, INT64_MAX},
    [STK_PIPE_PREFETCH_QUEUE_DEPTH] = {"prefetch_queue_depth", 2, 1, 64},
    [STK_PIPE_DEVICE_ID] = {"device_id", -1, -1, 1023},
    [STK_PIPE_ON_ERROR] = {"on_error", STK_ON_ERROR_FAIL, 0, 1},
    /* Untrusted-input limits: safe for a 16 GiB machine with the default prefetch depth
     * (an 8192 x 8192 RGB image is 192 MiB; a batch at most 2 GiB). */
    [STK_PIPE_MAX_IMAGE_PIXELS] = {"max_image_pixels", (int64_t)1 << 26, 1, INT64_MAX},
    [STK_PIPE_MAX_FILE_BYTES] = {"max_file_bytes", (int64_t)1 << 28, 1, INT64_MAX},
    [STK_PIPE_EXEC_ASYNC] = {"exec_async", 1, 0, 1},
    [STK_PIPE_TIMEOUT_MS] = {"timeout_ms", 300000, 1, 86400000},
    [STK_PIPE_MAX_BATCH_BYTES] = {"max_batch_bytes", (int64_t)1 << 31, 1, INT64_MAX},
};

const char *stk__setting_name(stk_pipeline_setting key) {
  return (unsigned)key < STK_PIPE_SETTING_COUNT ? setting_info[key].name : NULL;
}

stk_status stk_pipeline_create(stk_pipeline **out) {
  if (!out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL output pointer");
  stk_pipeline *p = stk__calloc(1, sizeof *p, "a pipeline");
  if (!p) return STK_ERR_OUT_OF_MEMORY;
  for (int k = 0; k < STK_PIPE_SETTING_COUNT; k++) p->settings[k] = setting_info[k].def;
  pthread_mutex_init(&p->feed_lock, NULL);
  pthread_cond_init(&p->feed_cond, NULL);
  *out = p;
  return STK_OK;
}

/* Pipelines whose stage thread was stuck inside a driver or nvJPEG call at destroy (see
 * STK_PIPE_TIMEOUT_MS): kept, reachable, because that thread may still return into them. */
static stk_pipeline *abandoned;
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;

void stk_pipeline_destroy(stk_pipeline *p) {
  if (!p) return;
  bool pool_in_use;
  if (!stk__exec_stop(p, &pool_in_use)) {
    if (!pool_in_use) { /* idle: the producer has stopped */
      stk__threadpool_destroy(p->threads);
      p->threads = NULL;
    }
    pthread_mutex_lock(&abandoned_lock);
    p->next_abandoned = abandoned;
    abandoned = p;
    pthread_mutex_unlock(&abandoned_lock);
    return;
  }
  stk__gpu_release(p->gpu); /* device lists still alive keep the device open */
  stk__threadpool_destroy(p->threads);
  stk__graph_free(p);
  for (size_t i = 0; i < p->num_ops; i++) stk_op_destroy(p->ops[i]);
  free(p->ops);
  for (size_t o = 0; o < p->num_outputs; o++) free(p->output_names[o]);
  free(p->output_names);
  for (stk__host_reg *r = p->host_regs, *n; r; r = n) {
    n = r->next;
    if (r->free_user) r->free_user(r->user);
    free(r->op_name);
    free(r);
  }
  stk__pool_destroy(p->pool); /* blocks held by live tensor lists stay valid */
  for (size_t i = 0; i < STK_SKIP_MESSAGES_KEPT; i++) free(atomic_load(&p->skip_messages[i]));
  for (size_t i = 0; i < STK_SKIP_MESSAGES_KEPT; i++) free(atomic_load(&p->skipped_files[i]));
  free(p->delivered_resume);
  free(p->restore_text);
  pthread_mutex_destroy(&p->feed_lock);
  pthread_cond_destroy(&p->feed_cond);
  free(p);
}

stk_status stk_pipeline_set(stk_pipeline *p, stk_pipeline_setting key, int64_t value) {
  if (!p) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL pipeline");
  if ((unsigned)key >= STK_PIPE_SETTING_COUNT)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown setting %d", (int)key);
  if (p->built)
    return STK_FAIL(STK_ERR_STATE, "'%s' cannot change after build", setting_info[key].name);
  if (value < setting_info[key].min || value > setting_info[key].max)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s = %lld is out of range [%lld, %lld]",
                    setting_info[key].name, (long long)value, (long long)setting_info[key].min,
                    (long long)setting_info[key].max);
  p->settings[key] = value;
  return STK_OK;
}

stk_status stk_pipeline_get(const stk_pipeline *p, stk_pipeline_setting key, int64_t *value) {
  if (!p || !value) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if ((unsigned)key >= STK_PIPE_SETTING_COUNT)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown setting %d", (int)key);
  *value = p->settings[key];
  return STK_OK;
}

/* Appends `op` (taken over; destroyed on failure). */
static stk_status append_op(stk_pipeline *p, stk_op *op) {
  stk_op **grown = stk__realloc(p->ops, (p->num_ops + 1) * sizeof(stk_op *), "the operator list");
  if (!grown) {
    stk_op_destroy(op);
    return STK_ERR_OUT_OF_MEMORY;
  }
  p->ops = grown;
  p->ops[p->num_ops++] = op;
  return STK_OK;
}

/* An operator of STK_OPF_GPU_ON_HOST asked for on the GPU: it runs on the CPU under an
 * internal name for each output ("<edge>.__host"), and a `copy` on the GPU, under the
 * operator's guards, gives every output its own name on the device. */
static stk_status add_on_host_for_gpu(stk_pipeline *p, stk_op *op) {
  op->device = STK_DEVICE_CPU;
  int n = op->num_outputs;
  stk_op **copies = stk__calloc((size_t)(n ? n : 1), sizeof *copies, "output copies");
  stk_status st = copies ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (int o = 0; st == STK_OK && o < n; o++) {
    stk__strbuf host = {0};
    st = stk__strbuf_printf(&host, "%s.__host", op->outputs[o]);
    if (st == STK_OK) st = stk_op_create("copy", "gpu", &copies[o]);
    if (st == STK_OK) st = stk_op_add_input(copies[o], host.data);
    if (st == STK_OK) st = stk_op_add_output(copies[o], op->outputs[o]);
    for (int g = 0; st == STK_OK && g < op->num_guards; g++)
      st = stk_op_add_guard(copies[o], op->guards[g].edge_name, op->guards[g].value);
    if (st == STK_OK) {
      free(op->outputs[o]);
      op->outputs[o] = host.data; /* taken over */
    } else {
      stk__strbuf_free(&host);
    }
  }
  if (st == STK_OK) {
    st = append_op(p, op);
    op = NULL;
  }
  for (int o = 0; copies && o < n; o++) { /* no list: nothing was made to append */
    if (st == STK_OK)
      st = append_op(p, copies[o]);
    else
      stk_op_destroy(copies[o]);
  }
  stk_op_destroy(op);
  free(copies);
  return st;
}

stk_status stk_pipeline_add_op(stk_pipeline *p, const stk_op *op) {
  if (!p || !op) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (p->built) return STK_FAIL(STK_ERR_STATE, "the pipeline is already built");
  stk_op *copy;
  STK_TRY(stk__op_copy(&copy, op));
  if (copy->device == STK_DEVICE_GPU && (copy->def->schema->flags & STK_OPF_GPU_ON_HOST))
    return add_on_host_for_gpu(p, copy);
  return append_op(p, copy);
}

stk_status stk_pipeline_set_outputs(stk_pipeline *p, const char *const *edges, size_t count) {
  if (!p || (!edges && count)) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (p->built) return STK_FAIL(STK_ERR_STATE, "the pipeline is already built");
  char **names = stk__calloc(count ? count : 1, sizeof(char *), "output names");
  if (!names) return STK_ERR_OUT_OF_MEMORY;
  for (size_t o = 0; o < count; o++)
    if (!edges[o] || !(names[o] = stk__strdup(edges[o]))) {
      for (size_t k = 0; k < o; k++) free(names[k]);
      free(names);
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output %zu: NULL or unallocatable name", o);
    }
  for (size_t o = 0; o < p->num_outputs; o++) free(p->output_names[o]);
  free(p->output_names);
  p->output_names = names;
  p->num_outputs = count;
  return STK_OK;
}

/* Operators' work that needs the device (stk__op_def.device_ready), once it is open. */
static stk_status devices_ready(stk_pipeline *p) {
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *node = &p->nodes[n];
    if (node->spec->def->device_ready && node->spec->device != STK_DEVICE_CPU)
      STK_TRY(node->spec->def->device_ready(node));
  }
  return STK_OK;
}

stk_status stk_pipeline_build(stk_pipeline *p) {
  if (!p) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL pipeline");
  if (p->built) return STK_OK;
  stk_status st = stk__graph_build(p);
  if (st == STK_OK && p->has_gpu)
    st = stk__gpu_open((int)p->settings[STK_PIPE_DEVICE_ID], (int)p->settings[STK_PIPE_NUM_THREADS],
                       p->settings[STK_PIPE_TIMEOUT_MS], &p->gpu);
  if (st == STK_OK && p->gpu) st = devices_ready(p);
  if (st == STK_OK) st = stk__pool_create(&p->pool, HOST_POOL_MAX_CACHED);
  if (st == STK_OK && p->gpu) stk__gpu_pin_pool(p->gpu, p->pool);
  if (st == STK_OK)
    st = stk__threadpool_create(&p->threads, (int)p->settings[STK_PIPE_NUM_THREADS]);
  if (st == STK_OK) st = stk__exec_start(p);
  if (st != STK_OK) { /* leave the pipeline as it was so it can be fixed and rebuilt */
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", stk_last_error());
    stk__threadpool_destroy(p->threads);
    p->threads = NULL;
    stk__gpu_release(p->gpu);
    p->gpu = NULL;
    stk__graph_free(p);
    stk__pool_destroy(p->pool);
    p->pool = NULL;
    return stk__set_error(st, saved);
  }
  p->built = true;
  return STK_OK;
}

stk_status stk_pipeline_run(stk_pipeline *p, stk_batch **out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (!p->built) return STK_FAIL(STK_ERR_STATE, "build the pipeline before running it");
  *out = NULL;
  return stk__exec_next(p, out);
}

static stk_status find_reader(stk_pipeline *p, const char *name, stk__node **out) {
  if (!p) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL pipeline");
  if (!p->built) return STK_FAIL(STK_ERR_STATE, "build the pipeline first");
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *node = &p->nodes[n];
    if (!node->spec->def->reader_meta) continue;
    if (!name || strcmp(node->name, name) == 0) {
      *out = node;
      return STK_OK;
    }
  }
  return name ? STK_FAIL(STK_ERR_NOT_FOUND, "no reader named '%s'", name)
              : STK_FAIL(STK_ERR_NOT_FOUND, "the pipeline has no reader");
}

stk_status stk_pipeline_reader_meta(stk_pipeline *p, const char *reader_name,
                                    stk_reader_meta *out) {
  stk__node *node = NULL;
  STK_TRY(find_reader(p, reader_name, &node));
  memset(out, 0, sizeof *out);
  return node->spec->def->reader_meta(node, out);
}

stk_status stk_pipeline_epoch_size(stk_pipeline *p, const char *reader_name, int64_t *out) {
  stk_reader_meta meta;
  STK_TRY(stk_pipeline_reader_meta(p, reader_name, &meta));
  *out = meta.epoch_size;
  return STK_OK;
}

stk_status stk_pipeline_skipped_sample(stk_pipeline *p, size_t index, char **out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  *out = NULL;
  char *message = index < STK_SKIP_MESSAGES_KEPT ? atomic_load(&p->skip_messages[index]) : NULL;
  if (!message)
    return STK_FAIL(STK_ERR_NOT_FOUND,
                    "no skipped sample %zu is kept (%lld skipped, the first %d kept)", index,
                    (long long)atomic_load(&p->num_skip_messages), STK_SKIP_MESSAGES_KEPT);
  *out = strdup(message);
  return *out ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot copy a skip message");
}

stk_status stk_pipeline_skipped_file(stk_pipeline *p, size_t index, char **out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  *out = NULL;
  char *message = index < STK_SKIP_MESSAGES_KEPT ? atomic_load(&p->skipped_files[index]) : NULL;
  if (!message)
    return STK_FAIL(STK_ERR_NOT_FOUND,
                    "no skipped file %zu is kept (%lld skipped, the first %d kept)", index,
                    (long long)atomic_load(&p->num_skipped_files), STK_SKIP_MESSAGES_KEPT);
  *out = strdup(message);
  return *out ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot copy a skip message");
}

/* Copies the `full` struct of `size` bytes into `out` as far as the caller's
 * struct_size (its first member) allows, keeping that member. */
static stk_status fill_sized(void *out, const void *full, size_t size, size_t min_size,
                             const char *what) {
  size_t want = *(const size_t *)out;
  if (want < min_size)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: set struct_size to sizeof(%s) before the call (it is %zu)", what, what,
                    want);
  memcpy((char *)out + sizeof(size_t), (const char *)full + sizeof(size_t),
         (want < size ? want : size) - sizeof(size_t));
  return STK_OK;
}

static stk_status gpu_stats(stk_pipeline *p, stk_gpu_stats *g) {
  memset(g, 0, sizeof *g);
  if (!p->gpu) return STK_OK;
  char err[STK_GPU_ERRLEN] = "";
  return stk__gpu_check(p->gpu->api->stats(p->gpu->ctx, g, err, sizeof err), err);
}

stk_status stk_pipeline_stats(stk_pipeline *p, stk_stats *out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  stk_stats s;
  memset(&s, 0, sizeof s);
  s.batches = atomic_load(&p->stat_batches);
  s.samples = atomic_load(&p->stat_samples);
  s.skipped = atomic_load(&p->stat_skipped);
  s.skipped_files = atomic_load(&p->num_skipped_files);
  s.host_decoded = atomic_load(&p->stat_host_decoded);
  if (p->pool)
    stk__pool_stats(p->pool, &s.host_bytes_in_use, &s.host_bytes_cached, &s.host_bytes_peak);
  stk_gpu_stats g;
  STK_TRY(gpu_stats(p, &g));
  s.device_bytes_in_use = g.device_in_use;
  s.device_bytes_cached = g.device_reserved - g.device_in_use;
  if (p->exec) stk__exec_stage_times(p->exec, &s);
  if (p->built) stk__cache_stats(p, &s);
  /* programs built before the cache's fields were added keep working */
  return fill_sized(out, &s, sizeof s, offsetof(stk_stats, cache_hits), "stk_stats");
}

stk_status stk_pipeline_decoder_diagnostics(stk_pipeline *p, stk_decoder_diagnostics *out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  stk_decoder_diagnostics d;
  memset(&d, 0, sizeof d);
  stk_gpu_stats g;
  STK_TRY(gpu_stats(p, &g));
  d.decode_parse_ns = g.decode_parse_ns;
  d.decode_fence_ns = g.decode_fence_ns;
  d.decode_hw_share = g.decode_hw_share;
  d.decode_hw_call_ns = g.decode_hw_call_ns;
  d.decode_hybrid_wait_ns = g.decode_hybrid_wait_ns;
  if (p->pool) stk__pool_pin_stats(p->pool, &d.host_blocks_pinned, &d.host_pin_failures);
  if (p->exec) d.host_decode_quota = stk__exec_host_decode_quota(p->exec);
  d.own_decoded = atomic_load(&p->stat_own_decoded);
  d.own_share = (double)atomic_load(&p->own_share_ppm) * 1e-6;
  return fill_sized(out, &d, sizeof d, sizeof d, "stk_decoder_diagnostics");
}

size_t stk_pipeline_num_ops(const stk_pipeline *p) { return p && p->built ? p->num_nodes : 0; }

stk_status stk_pipeline_op_time(stk_pipeline *p, size_t index, const char **name,
                                int64_t *nanoseconds) {
  if (!p || !p->built) return STK_FAIL(STK_ERR_STATE, "build the pipeline first");
  if (index >= p->num_nodes)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "operator %zu out of range", index);
  if (name) *name = p->nodes[index].name;
  if (nanoseconds) *nanoseconds = atomic_load(&p->nodes[index].time_ns);
  return STK_OK;
}
