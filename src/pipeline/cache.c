/* The "cache" operator (stoker extension, issue 22) and the executor's side of it.
 *
 * At build, a cache node looks at its prefix (every node its inputs depend on): random
 * operators there are refused (their draws would be frozen at the first epoch), a data
 * set reader must be there (its planned item names the sample), and the prefix is
 * described as text (operators, devices, argument values, wiring; not the readers'
 * sampling arguments and file lists, nor generated names), which keys the entries, so a
 * changed prefix never returns stale values. The nodes a hit makes useless are those of the prefix
 * whose every consumer is in the prefix or the cache itself (a reader whose labels also go
 * elsewhere still runs).
 *
 * Per sample, before its chain runs (stk__cache_begin_sample): the reader's item gives
 * the key (its file, and place in it; the stamp: size, modification time); a hit
 * writes the cache's outputs straight from the store and marks the cache and its
 * skippable prefix in the sample's skip mask, which the executor's chain honours (as it
 * honours guards). A miss runs the prefix; the cache node then passes its inputs through
 * and stores them under the key and stamp taken before the prefix read the file. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"

enum { A_CAPACITY_BYTES, A_PATH, A_COUNT_ };

static const stk_arg_schema cache_args[] = {
    [A_CAPACITY_BYTES] = {.name = "capacity_bytes",
                          .type = STK_ARG_INT,
                          .flags = STK_ARGF_RANGE,
                          .default_text = "1073741824",
                          .min = 0,
                          .max = 9.2e18,
                          .doc = "The most bytes the cache holds (tensors plus a small header per "
                                 "sample). In memory, the least recently used samples make room "
                                 "for new ones; on disk, samples that do not fit are not stored "
                                 "(the files already there stay)."},
    [A_PATH] = {.name = "path",
                .type = STK_ARG_STRING,
                .default_text = "\"\"",
                .doc = "Empty: keep the samples in memory (for this pipeline's life). A "
                       "directory (created if missing): one file per sample and a manifest "
                       "naming the prefix; it survives the pipeline, and a directory made for "
                       "another prefix is emptied of its cache files first."},
};
STK__CHECK_ARGS(cache_args, A_COUNT_);

/* One entry per possible input (the schema's contract: max_inputs entries). */
#define CACHE_INPUT(k) \
  { "input" #k, "a tensor made by a deterministic prefix from a reader's samples" }
static const stk_port_schema cache_in[STK__CACHE_MAX_TENSORS] = {
    CACHE_INPUT(0), CACHE_INPUT(1), CACHE_INPUT(2), CACHE_INPUT(3),
    CACHE_INPUT(4), CACHE_INPUT(5), CACHE_INPUT(6), CACHE_INPUT(7)};
static const stk_port_schema cache_out[] = {{"outputs", "the inputs, one output per input"}};

typedef struct {
  stk__cache_store *store;
  bool *skip;   /* num_nodes: what a hit skips (this node included) */
  int *readers; /* node indices of the prefix's readers */
  int num_readers;
  uint64_t prefix_hash;
  atomic_llong hits, misses;
} cache_state;

/* ---- the prefix ---- */

/* Edge `k` of those `node` reads (data inputs, argument feeds, guards), -1 past the end. */
static int read_edge(const stk__node *node, int k) {
  const stk_op *spec = node->spec;
  if (k < spec->num_inputs) return node->in_edges[k];
  k -= spec->num_inputs;
  for (int a = 0; a < spec->def->schema->num_args; a++)
    if (spec->args[a].edge >= 0 && k-- == 0) return spec->args[a].edge;
  return k < spec->num_guards ? spec->guards[k].edge : -1;
}

/* Reader arguments that do not change what a sample holds: the sampling (order, shards)
 * and, for readers whose items name their files (item_identity), where the files are
 * (the key names each sample's file, so a data set that grows keeps its entries). */
static bool ignored_reader_arg(const stk__node *reader, const char *name) {
  static const char *const sampling[] = {"shard_id",
                                         "num_shards",
                                         "stick_to_shard",
                                         "pad_last_batch",
                                         "random_shuffle",
                                         "initial_fill",
                                         "shuffle_after_epoch",
                                         "seed",
                                         "prefetch_queue_depth",
                                         "dont_use_mmap",
                                         "read_ahead",
                                         "lazy_init",
                                         "skip_cached_images",
                                         "streaming",
                                         "use_o_direct"};
  static const char *const sources[] = {"file_root",
                                        "file_list",
                                        "files",
                                        "labels",
                                        "file_filter",
                                        "file_filters",
                                        "case_sensitive_filter",
                                        "paths",
                                        "index_paths",
                                        "path",
                                        "index_path"};
  for (size_t k = 0; k < sizeof sampling / sizeof sampling[0]; k++)
    if (strcmp(name, sampling[k]) == 0) return true;
  if (!reader->spec->def->item_identity) return false;
  for (size_t k = 0; k < sizeof sources / sizeof sources[0]; k++)
    if (strcmp(name, sources[k]) == 0) return true;
  return false;
}

static stk_status describe_edge(const stk_pipeline *p, const int *label, int edge,
                                stk__strbuf *out) {
  return stk__strbuf_printf(out, "#%d.%d", label[p->edges[edge].producer],
                            p->edges[edge].producer_out);
}

static stk_status describe_args(const stk_pipeline *p, const stk__node *node, const int *label,
                                stk__strbuf *out) {
  const stk_op_schema *sc = node->spec->def->schema;
  bool reader = node->spec->def->plan != NULL;
  for (int a = 0; a < sc->num_args; a++) {
    const stk__argval *v = &node->spec->args[a];
    if ((reader && ignored_reader_arg(node, sc->args[a].name)) || !v->has_value) continue;
    STK_TRY(stk__strbuf_printf(out, " %s=", sc->args[a].name));
    if (v->edge >= 0)
      STK_TRY(describe_edge(p, label, v->edge, out));
    else
      STK_TRY(stk__argval_format(v, out));
  }
  return STK_OK;
}

/* Describes `node` after everything it reads, numbering nodes in the order described
 * (independent of the graph's other nodes and of generated names). */
static stk_status describe(const stk_pipeline *p, int n, int *label, int *next, stk__strbuf *out) {
  if (label[n] >= 0) return STK_OK;
  const stk__node *node = &p->nodes[n];
  for (int k = 0, e; (e = read_edge(node, k)) >= 0; k++)
    STK_TRY(describe(p, p->edges[e].producer, label, next, out));
  label[n] = (*next)++;
  const stk_op *spec = node->spec;
  STK_TRY(stk__strbuf_printf(out, "#%d %s device=%s", label[n], spec->def->schema->name,
                             stk__device_name(spec->device)));
  STK_TRY(describe_args(p, node, label, out));
  for (int i = 0; i < spec->num_inputs; i++) {
    STK_TRY(stk__strbuf_printf(out, " "));
    STK_TRY(describe_edge(p, label, node->in_edges[i], out));
  }
  for (int g = 0; g < spec->num_guards; g++) {
    STK_TRY(stk__strbuf_printf(out, " if "));
    STK_TRY(describe_edge(p, label, spec->guards[g].edge, out));
    STK_TRY(stk__strbuf_printf(out, "==%lld", (long long)spec->guards[g].value));
  }
  return stk__strbuf_printf(out, "\n");
}

/* The prefix in text form: its nodes, then which of their outputs the cache keeps. */
static stk_status prefix_text(const stk_pipeline *p, const stk__node *cache, stk__strbuf *out) {
  int *label = malloc(sizeof(int) * p->num_nodes), next = 0;
  if (!label) return STK_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; k < p->num_nodes; k++) label[k] = -1;
  stk_status st = STK_OK;
  for (int i = 0; i < cache->spec->num_inputs && st == STK_OK; i++)
    st = describe(p, p->edges[cache->in_edges[i]].producer, label, &next, out);
  if (st == STK_OK) st = stk__strbuf_printf(out, "cache");
  for (int i = 0; i < cache->spec->num_inputs && st == STK_OK; i++) {
    st = stk__strbuf_printf(out, " ");
    if (st == STK_OK) st = describe_edge(p, label, cache->in_edges[i], out);
  }
  free(label);
  return st;
}

/* Marks every node the cache's inputs depend on. */
static void mark_prefix(const stk_pipeline *p, int n, bool *in) {
  if (in[n]) return;
  in[n] = true;
  for (int k = 0, e; (e = read_edge(&p->nodes[n], k)) >= 0; k++)
    mark_prefix(p, p->edges[e].producer, in);
}

/* Whether some node outside `keep` (other than `cache`) reads an output of `n`, or an
 * output of `n` is a pipeline output. */
static bool needed_outside(const stk_pipeline *p, int n, const bool *keep, int cache) {
  const stk__node *node = &p->nodes[n];
  for (int o = 0; o < node->num_outputs; o++)
    if (p->edges[node->out_edges[o]].output_index >= 0) return true;
  for (size_t c = 0; c < p->num_nodes; c++) {
    if ((int)c == cache || keep[c]) continue;
    for (int k = 0, e; (e = read_edge(&p->nodes[c], k)) >= 0; k++)
      if (p->edges[e].producer == n) return true;
  }
  return false;
}

/* The prefix's nodes that only the cache needs (a fixpoint: dropping one node from the
 * set can make its producers needed outside). */
static void skippable(const stk_pipeline *p, int cache, bool *set) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t n = 0; n < p->num_nodes; n++)
      if (set[n] && needed_outside(p, (int)n, set, cache)) set[n] = false, changed = true;
  }
  set[cache] = true;
}

/* Refuses what the cache cannot key or would freeze: random operators in the prefix,
 * samples without a reader's item. Collects the prefix's readers. */
static stk_status check_prefix(stk__node *node, const bool *prefix, cache_state *c) {
  stk_pipeline *p = node->pipe;
  if (node->spec->num_guards)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "'%s': a cache cannot run in a conditional branch; cache the values before "
                    "the branches split",
                    node->name);
  for (size_t k = 0; k < p->num_nodes; k++) {
    const stk__node *n = &p->nodes[k];
    if (!prefix[k]) continue;
    unsigned flags = n->spec->def->schema->flags;
    if (n->spec->def->plan && !(flags & STK_OPF_READER))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "'%s': '%s' (%s) feeds the cached prefix, but its samples have no identity "
                      "to key the cache by; cache data that comes from a data set reader",
                      node->name, n->name, n->spec->def->schema->name);
    if (n->spec->def->plan) {
      c->readers[c->num_readers++] = (int)k;
    } else if (flags & STK_OPF_RANDOM) {
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "'%s': the cached prefix holds '%s' (%s), a random operator: its draws "
                      "would be frozen at the first epoch; place the cache before it",
                      node->name, n->name, n->spec->def->schema->name);
    } else if ((flags & STK_OPF_BATCH) || stk__node_is_batch(n)) {
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "'%s': the cached prefix holds '%s' (%s), a batch operator: a sample's "
                      "value depends on the other samples of its batch, which change every "
                      "epoch; place the cache before it",
                      node->name, n->name, n->spec->def->schema->name);
    }
  }
  if (!c->num_readers)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "'%s': no reader feeds the cached prefix; the cache keys samples by the "
                    "reader's item",
                    node->name);
  return STK_OK;
}

static void cache_destroy(stk__node *node) {
  cache_state *c = node->state;
  if (!c) return;
  stk__cache_store_destroy(c->store);
  free(c->skip);
  free(c->readers);
  free(c);
  node->state = NULL;
}

/* Two caches of one pipeline in one directory would empty it for each other's prefix. */
static stk_status check_own_directory(const stk__node *node) {
  const char *dir = stk__arg_string(node, A_PATH);
  if (!*dir) return STK_OK;
  for (size_t k = 0; k < node->pipe->num_nodes; k++) {
    const stk__node *other = &node->pipe->nodes[k];
    if (other != node && other->spec->def == &stk__op_cache &&
        strcmp(stk__arg_string(other, A_PATH), dir) == 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "'%s' and '%s' both use the cache directory '%s'; give each its own",
                      other->name, node->name, dir);
  }
  return STK_OK;
}

static stk_status cache_init_state(stk__node *node, cache_state *c) {
  stk_pipeline *p = node->pipe;
  STK_TRY(check_own_directory(node));
  c->skip = stk__calloc(p->num_nodes, sizeof(bool), "the cache's prefix");
  c->readers = stk__calloc(p->num_nodes, sizeof(int), "the cache's prefix");
  if (!c->skip || !c->readers) return STK_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < node->spec->num_inputs; i++)
    mark_prefix(p, p->edges[node->in_edges[i]].producer, c->skip);
  STK_TRY(check_prefix(node, c->skip, c));
  skippable(p, node->index, c->skip);
  stk__strbuf text = {0};
  stk_status st = prefix_text(p, node, &text);
  if (st == STK_OK) {
    c->prefix_hash = stk__hash_str(text.data);
    st = stk__cache_store_create(stk__arg_int(node, NULL, A_CAPACITY_BYTES),
                                 stk__arg_string(node, A_PATH), text.data, node->name, &c->store);
  }
  stk__strbuf_free(&text);
  return st;
}

static stk_status cache_init(stk__node *node) {
  cache_state *c = stk__calloc(1, sizeof *c, "a cache");
  if (!c) return STK_ERR_OUT_OF_MEMORY;
  node->state = c;
  stk_status st = cache_init_state(node, c);
  if (st != STK_OK) cache_destroy(node);
  return st;
}

/* ---- per sample ---- */

/* The sample's key (prefix, then each reader's name of its item) and stamp; names the
 * sample's source for error messages until its reader (if it runs) names it. */
static stk_status sample_key(const stk__node *node, stk__sample *s, stk__strbuf *key,
                             stk__strbuf *stamp) {
  const cache_state *c = node->state;
  stk_pipeline *p = node->pipe;
  STK_TRY(stk__strbuf_printf(key, "%016llx\n", (unsigned long long)c->prefix_hash));
  STK_TRY(stk__strbuf_printf(stamp, "%s", ""));
  for (int r = 0; r < c->num_readers; r++) {
    stk__node *reader = &p->nodes[c->readers[r]];
    int64_t item = stk__sample_item(s, reader);
    STK_TRY(stk__strbuf_printf(key, "%s:", reader->spec->def->schema->name));
    const char *source = NULL;
    if (reader->spec->def->item_identity) {
      STK_TRY(reader->spec->def->item_identity(reader, item, key, stamp, &source));
      if (source && !s->source) s->source = source;
    } else
      STK_TRY(stk__strbuf_printf(key, "item %lld\n", (long long)item));
  }
  return STK_OK;
}

static size_t tensor_bytes(const stk__tensor *t) {
  size_t bytes = stk_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) bytes *= (size_t)t->shape[d];
  return bytes;
}

/* A hit: the outputs, read from the store. */
static stk_status write_hit(stk__node *node, stk__sample *s, const stk__cache_value *v,
                            const stk__cache_pin *pin) {
  cache_state *c = node->state;
  if (v->count != node->num_outputs)
    return STK_FAIL(STK_ERR_INTERNAL, "'%s': a cache entry with %d tensors for %d outputs",
                    node->name, v->count, node->num_outputs);
  s->current = node;
  for (int i = 0; i < v->count; i++) {
    const stk__tensor *t = &v->t[i];
    stk__tensor *out;
    STK_TRY(stk__output(s, i, t->dtype, t->ndim, t->shape, t->layout, &out));
    STK_TRY(stk__cache_store_read(c->store, pin, v, i, out->data));
  }
  return STK_OK;
}

/* Looks one cache node up for the sample; on a miss keeps the key for the node's run. */
static stk_status lookup(stk__node *node, stk__sample *s) {
  cache_state *c = node->state;
  stk__strbuf key = {0}, stamp = {0};
  stk_status st = sample_key(node, s, &key, &stamp);
  stk__cache_value v;
  stk__cache_pin pin;
  bool hit = false;
  if (st == STK_OK) st = stk__cache_store_find(c->store, key.data, stamp.data, &v, &pin, &hit);
  if (st == STK_OK && hit) {
    st = write_hit(node, s, &v, &pin);
    stk__cache_store_unpin(c->store, &pin);
    if (st == STK_OK)
      for (size_t k = 0; k < node->pipe->num_nodes; k++) s->skip[k] |= c->skip[k];
    atomic_fetch_add(&c->hits, 1);
  } else if (st == STK_OK) {
    atomic_fetch_add(&c->misses, 1);
    char *kept = stk__scratch(s, key.len + stamp.len + 2);
    if (!kept)
      st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "'%s': no memory for a key", node->name);
    else {
      memcpy(kept, key.data, key.len + 1);
      memcpy(kept + key.len + 1, stamp.data, stamp.len + 1);
      s->cache_key[node->index] = kept;
    }
  }
  stk__strbuf_free(&key);
  stk__strbuf_free(&stamp);
  return st;
}

stk_status stk__cache_begin_sample(stk__sample *s, stk__node **failed) {
  stk_pipeline *p = s->pipe;
  memset(s->skip, 0, p->num_nodes);
  memset(s->cache_key, 0, p->num_nodes * sizeof *s->cache_key);
  /* the last caches first: a hit there makes the lookups of caches in its prefix moot */
  for (size_t o = p->num_nodes; o-- > 0;) {
    stk__node *node = &p->nodes[p->order[o]];
    if (node->spec->def != &stk__op_cache || s->skip[node->index]) continue;
    int64_t t0 = stk__now_ns();
    stk_status st = lookup(node, s);
    atomic_fetch_add_explicit(&node->time_ns, stk__now_ns() - t0, memory_order_relaxed);
    if (st != STK_OK) {
      *failed = node;
      return st;
    }
  }
  return STK_OK;
}

/* A miss: the inputs pass through, and are stored under the key taken before the prefix
 * ran. */
static stk_status cache_run(stk__node *node, stk__sample *s) {
  cache_state *c = node->state;
  stk__cache_value v = {.count = node->spec->num_inputs};
  for (int i = 0; i < v.count; i++) {
    const stk__tensor *in = stk__input(s, i);
    v.t[i] = *in;
    v.bytes[i] = tensor_bytes(in);
    STK_TRY(stk__output_alias(s, i, in));
  }
  const char *key = s->cache_key ? s->cache_key[node->index] : NULL;
  if (!key) return STK_OK;
  stk_status st = stk__cache_store_put(c->store, key, key + strlen(key) + 1, &v);
  return st == STK_OK ? st : stk__wrap(st, "'%s'", node->name);
}

bool stk__cache_present(const stk_pipeline *p) {
  for (size_t k = 0; k < p->num_nodes; k++)
    if (p->nodes[k].spec->def == &stk__op_cache) return true;
  return false;
}

void stk__cache_stats(stk_pipeline *p, stk_stats *out) {
  for (size_t k = 0; k < p->num_nodes; k++) {
    cache_state *c = p->nodes[k].state;
    if (p->nodes[k].spec->def != &stk__op_cache || !c) continue;
    stk__cache_store_stats st;
    stk__cache_store_stats_get(c->store, &st);
    out->cache_hits += atomic_load(&c->hits);
    out->cache_misses += atomic_load(&c->misses);
    out->cache_bytes += st.bytes;
    out->cache_entries += st.entries;
    out->cache_dropped += st.dropped;
  }
}

static int cache_num_outputs(const stk__node *node) { return node->spec->num_inputs; }

static const stk_op_schema cache_schema = {
    .name = "cache",
    .doc =
        "stoker extension (not in DALI): keeps what the deterministic part of the pipeline in "
        "front of it made for each sample (e.g. decode + resize), keyed by the reader's "
        "sample (its file and place in it, with the file's size and modification time: a "
        "changed file is made again), so "
        "epochs after the first skip that part and run only what follows. Outputs its inputs "
        "unchanged. Operators only the cache needs do not run for a hit (a reader whose "
        "labels go elsewhere still reads the file: cache the labels too to skip it). Random "
        "operators may not feed it, and its prefix must start at a data set reader. Entries "
        "are keyed by the prefix's operators and argument values, so a changed prefix never "
        "returns stale samples. Hits and misses: stats() (cache_hits, cache_misses, ...).",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = STK__CACHE_MAX_TENSORS,
    .inputs = cache_in,
    .num_outputs = -1,
    .outputs = cache_out,
    .num_args = A_COUNT_,
    .args = cache_args,
};

const stk__op_def stk__op_cache = {
    .schema = &cache_schema,
    .init = cache_init,
    .destroy = cache_destroy,
    .run_sample = cache_run,
    .num_outputs = cache_num_outputs,
};
