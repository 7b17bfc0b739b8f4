/* The executor: a producer that plans readers, runs every sample's chain of CPU
 * operators on the thread pool (sample-major), applies the bad-sample policy, assembles
 * the outputs into tensor lists and queues finished batches, prefetch_queue_depth ahead.
 * With GPU operators, batches go on as jobs to the GPU stage's thread; when the graph's
 * mixed decoders were prepared in the CPU stage, a decode thread runs them first, one
 * batch ahead (producer -> jobs -> decode thread -> decoded -> GPU thread -> queue).
 *
 * Every wait is bounded by the pipeline's timeout_ms (issue 27): the stages' waits on the
 * device inside the backend fail their batch past it, the consumer's wait for a batch
 * fails the run naming the stage that holds it (stage_watch), and teardown joins the
 * threads with the same bound. Waits on the consumer (room in the queue) and on fed
 * external data are the caller's, not stalls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_timedjoin_np */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "cache.h"
#include "gpu_stage.h"
#include "internal.h"

/* Give up when this many rounds of replacements in one batch still fail. */
#define MAX_REPLACEMENT_ROUNDS 64

typedef struct {
  bool valid;
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  size_t bytes;
} shape_prediction;

typedef struct {
  stk_batch *batch;
  stk_status status;
  char *message;
} queue_entry;

/* A batch between the CPU stage and the GPU stage: the collected lists and per-sample
 * views of them (per-sample arguments of GPU operators), owned by the job, so the CPU
 * stage can go on with the next batch while the GPU stage runs this one. */
typedef struct gpu_job {
  struct gpu_job *next;
  size_t n;      /* samples in the batch (the batch size, or fewer: see produce_cpu) */
  int64_t epoch; /* the batch's reader epoch, and whether the batch ends it */
  bool ends_epoch;
  stk_status status; /* a CPU-stage failure passed through in order */
  char *message;
  stk_tensor_list **lists; /* num_edges */
  stk__sample *samples;
  stk__tensor *edges;     /* n * num_edges */
  unsigned char *prep;    /* n * prep_stride: the mixed operators' prepared records */
  void *decoded;          /* split stage: event on the decode stream after the job's decoders */
  void *retired;          /* event on the compute stream after all of the job's GPU work */
  int64_t cpu_ns;         /* the CPU stage's time for this batch (the host decoding's balance) */
  int64_t seq;            /* production order (the batch's number in timeout messages) */
  stk__skip_list skips;   /* the batch's skipped samples (CPU stage, then GPU stage) */
  int64_t *resume;        /* the pipeline's state after the batch (checkpoint.c) */
  bool *rejected;         /* n: samples rejected in the GPU stage (stk__gpu_reject_sample) */
  char **reject_messages; /* n: why */
} gpu_job;

/* A queue of jobs between two stages. */
typedef struct {
  gpu_job *head, *tail;
  size_t count;
} job_queue;

/* What a stage thread is working on, for the message of a timeout (lock held). */
typedef struct {
  const char *stage; /* "CPU", "decode", "GPU" */
  const char *doing; /* NULL while it waits for work or for room */
  int64_t batch;     /* production order */
  int64_t since_ns;
} stage_watch;

struct stk__exec {
  stk_pipeline *p;
  size_t n; /* batch size: the most samples a batch has */
  /* This batch: its samples (n or fewer: a batch ends with its readers' epoch, and
   * samples with no replacement in that epoch leave it), which of them left, whether
   * compacting moved samples out of their predicted slots, and the readers' epoch. */
  size_t batch_count;
  bool *dropped;
  bool compacted;
  int64_t *reader_epoch; /* num_readers */
  int64_t batch_epoch;
  bool ends_epoch;
  int64_t *resume;      /* the state after this batch (checkpoint.c) */
  stk__skip_list skips; /* this batch's skipped samples, until the batch or job takes them */
  size_t num_edges, num_slots, num_readers;
  stk__sample *samples;
  stk__tensor *edge_tensors; /* n * num_edges */
  unsigned char *prep;       /* n * prep_stride: records of the prepared mixed operators */
  size_t prep_stride;
  unsigned char *skip; /* n * num_nodes: cache.c's skip masks (NULL without caches) */
  char **cache_keys;   /* n * num_nodes */
  int64_t *items;      /* n * num_readers */
  stk_status *status;
  char **messages;
  void **out_blocks;       /* n * num_slots: a sample's own pool block, or NULL */
  void **dense_blocks;     /* num_slots: the batch-wide block for predicted shapes */
  stk_tensor_list **lists; /* num_edges: this batch's lists (collected CPU edges, GPU edges) */
  shape_prediction *pred;
  stk__arena **arenas;
  stk__arena *gpu_arena;    /* scratch of the GPU stage (producer thread) */
  stk__arena *decode_arena; /* scratch of the decode part when it has its own thread */
  int num_workers;
  size_t *pending, num_pending;
  int pass;              /* the CPU stage's pass the workers run (graph.c plan_passes) */
  stk__sample **members; /* n: the samples a batch operator sees */
  int64_t *plan_items;
  int64_t next_ordinal;
  /* producer and queue */
  bool async;
  pthread_t thread;
  bool thread_started;
  /* the GPU stage's thread and its queue of jobs; with `split`, the mixed decoders run
   * on their own thread (decode_thread) one batch ahead, between two queues */
  pthread_t gpu_thread, decode_thread;
  bool gpu_thread_started, decode_thread_started, cpu_done, decode_done, gpu_busy, decode_busy;
  bool split;
  job_queue jobs, decoded;
  /* Jobs whose GPU work may still read their host memory (lock held): nvJPEG's hardware
   * path reads the bitstreams in the page-locked host pool after its call has returned
   * (gpu_tests caught it under compute-sanitizer, 2026-11-25), so a job's lists go back to
   * the pool only once the compute stream has passed the job's work. */
  job_queue retiring;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  queue_entry *queue;
  size_t cap, head, count;
  bool stop, producer_done;
  /* stage timers (stk_stats), nanoseconds */
  _Atomic int64_t cpu_stage_ns, producer_blocked_ns, gpu_stage_ns, gpu_idle_ns, consumer_wait_ns,
      decode_stage_ns;
  /* the automatic cpu_decoder_load (balance_host_decoding): samples per batch the mixed
   * decoders decode in the CPU stage */
  atomic_int host_quota;
  bool host_balance; /* some prepared decoder leaves its share to the balance */
  int64_t produced;  /* jobs queued so far (their seq) */
  stk_status final_status;
  char *final_message;
  int64_t timeout_ms;  /* STK_PIPE_TIMEOUT_MS */
  int64_t cpu_batches; /* batches the CPU stage has started (its watch's numbering) */
  stage_watch cpu_watch, decode_watch, gpu_watch;
};

static void watch_begin(stage_watch *w, const char *doing, int64_t batch) {
  w->doing = doing;
  w->batch = batch;
  w->since_ns = stk__now_ns();
}

static void watch_end(stage_watch *w) { w->doing = NULL; }

/* ---- per-sample work ---- */

static void record_failure(stk__exec *ex, size_t i, stk_status st, const stk__node *node) {
  ex->status[i] = st;
  free(ex->messages[i]);
  ex->messages[i] = stk__sample_failure_message(node->name, "", &ex->samples[i]);
}

/* An operator merging conditional branches ("select": STK_OPF_MERGES_BRANCHES). */
static bool merges_branches(const stk__node *node) {
  return (node->spec->def->schema->flags & STK_OPF_MERGES_BRANCHES) != 0;
}

/* Every data input, argument feed and guard edge of `node` must have a value for the
 * sample ("select" alone may see absent branch inputs). */
static stk_status check_inputs_present(const stk__node *node, const stk__sample *s) {
  const stk_op *spec = node->spec;
  for (int i = 0; i < spec->num_inputs; i++)
    if (!s->edges[node->in_edges[i]].data && !(merges_branches(node) && i > 0))
      return STK_FAIL(
          STK_ERR_INVALID_ARGUMENT,
          "input '%s' has no value for this sample: it is produced only in a conditional branch "
          "the sample did not take",
          spec->inputs[i]);
  for (int a = 0; a < spec->def->schema->num_args; a++) {
    int e = spec->args[a].edge;
    if (e >= 0 && !s->edges[e].data)
      return STK_FAIL(
          STK_ERR_INVALID_ARGUMENT,
          "argument '%s' is fed by '%s', which has no value for this sample (conditional branch)",
          spec->def->schema->args[a].name, spec->args[a].edge_name);
  }
  return STK_OK;
}

/* Releases what the prepared mixed operators left in one sample's records (the
 * decoded pixels of the CPU stage's host decoding) and clears them. */
static void release_records(stk_pipeline *p, unsigned char *prep) {
  if (!prep) return;
  for (size_t k = 0; k < p->num_nodes; k++) {
    stk__node *node = &p->nodes[k];
    if (!node->prepares) continue;
    if (node->spec->def->prep_release)
      node->spec->def->prep_release(node, prep + node->prep_offset);
    memset(prep + node->prep_offset, 0, node->spec->def->prep_bytes);
  }
}

/* A mixed operator's CPU-stage part for one sample (see stk__op_def.prepare). */
static stk_status prepare_mixed(stk__node *node, stk__sample *s) {
  unsigned char *record = s->prep + node->prep_offset;
  if (node->spec->def->prep_release) node->spec->def->prep_release(node, record);
  memset(record, 0, node->spec->def->prep_bytes); /* no stale record from an earlier batch */
  if (node->spec->num_guards && !stk__guards_hold(node, s))
    return STK_OK; /* not this sample's branch */
  STK_TRY(check_inputs_present(node, s));
  return node->spec->def->prepare(node, s, record);
}

static void run_sample_task(void *arg, size_t k, int worker) {
  stk__exec *ex = arg;
  stk_pipeline *p = ex->p;
  size_t i = ex->pending[k];
  stk__sample *s = &ex->samples[i];
  s->worker = worker;
  s->arena = ex->arenas[worker];
  if (ex->pass == 0) { /* a new sample (later passes go on with it) */
    s->source = NULL;
    s->out_bytes = 0;
    stk__node *failed = NULL;
    stk_status cached = s->skip ? stk__cache_begin_sample(s, &failed) : STK_OK;
    if (cached != STK_OK) {
      record_failure(ex, i, cached, failed);
      stk__arena_reset(s->arena);
      return;
    }
  }
  for (size_t o = 0; o < p->num_nodes; o++) {
    stk__node *node = &p->nodes[p->order[o]];
    if (node->spec->device != STK_DEVICE_CPU && !node->prepares)
      continue; /* the GPU stage runs it */
    if (node->pass != ex->pass || stk__node_is_batch(node))
      continue; /* another pass's, or a batch operator (run_batch_nodes) */
    if (s->skip && s->skip[node->index]) continue; /* a cache hit stands for its work */
    s->current = node;
    int64_t t0 = stk__now_ns();
    stk_status st;
    if (node->prepares) {
      st = prepare_mixed(node, s);
    } else if (node->spec->num_guards && !stk__guards_hold(node, s)) {
      continue; /* not this sample's branch */
    } else if ((st = check_inputs_present(node, s)) == STK_OK) {
      st = node->spec->def->run_sample(node, s);
    }
    atomic_fetch_add_explicit(&node->time_ns, stk__now_ns() - t0, memory_order_relaxed);
    if (st != STK_OK) {
      record_failure(ex, i, st, node);
      break;
    }
  }
  stk__arena_reset(s->arena);
}

void *stk__exec_alloc_output(stk__sample *s, int edge, size_t bytes, const stk__tensor *t) {
  stk__exec *ex = s->ex;
  size_t o = (size_t)s->pipe->edges[edge].slot;
  const shape_prediction *pr = &ex->pred[o];
  void **own = &ex->out_blocks[s->index * ex->num_slots + o];
  if (*own) { /* an operator re-allocating its output: drop the first block */
    stk__pool_free(s->pipe->pool, *own);
    *own = NULL;
  }
  if (pr->valid && ex->dense_blocks[o] && pr->dtype == t->dtype && pr->ndim == t->ndim &&
      memcmp(pr->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) == 0)
    return (char *)ex->dense_blocks[o] + s->index * pr->bytes;
  *own = stk__pool_alloc(s->pipe->pool, bytes);
  return *own;
}

/* ---- planning ---- */

static stk_status plan_readers(stk__exec *ex) {
  stk_pipeline *p = ex->p;
  for (size_t o = 0; o < p->num_nodes; o++) {
    stk__node *node = &p->nodes[p->order[o]];
    if (node->reader_slot < 0) continue;
    stk__plan plan = {(int64_t)ex->num_pending, ex->plan_items};
    for (size_t k = 0; k < ex->num_pending; k++) ex->plan_items[k] = -1;
    stk_status st = node->spec->def->plan(node, &plan);
    if (st != STK_OK) return stk__wrap(st, "reader '%s'", node->name);
    for (size_t k = 0; k < ex->num_pending; k++)
      ex->items[ex->pending[k] * ex->num_readers + (size_t)node->reader_slot] = ex->plan_items[k];
  }
  return STK_OK;
}

/* How many of `want` samples the readers can plan into this batch: none past the end
 * of the epoch the batch started in (`starting`: the batch's first plan, which sets
 * that epoch; a reader whose epoch is over then starts the next one). */
static stk_status readers_room(stk__exec *ex, size_t want, bool starting, size_t *room) {
  stk_pipeline *p = ex->p;
  *room = want;
  for (size_t o = 0; o < p->num_nodes; o++) {
    stk__node *node = &p->nodes[p->order[o]];
    if (node->reader_slot < 0 || !node->spec->def->position) continue;
    int64_t epoch, left;
    stk_status st = node->spec->def->position(node, &epoch, &left);
    if (st != STK_OK) return stk__wrap(st, "reader '%s'", node->name);
    if (starting)
      ex->reader_epoch[node->reader_slot] = epoch;
    else if (epoch != ex->reader_epoch[node->reader_slot])
      left = 0;
    if ((uint64_t)left < *room) *room = (size_t)left;
  }
  return STK_OK;
}

/* A reader of a data set (an external source's "epochs" are its fed batches). */
static bool has_epochs(stk__node *node) {
  stk_reader_meta meta;
  return node->spec->def->reader_meta && node->spec->def->reader_meta(node, &meta) == STK_OK &&
         meta.epoch_size >= 0;
}

/* After the batch's last plan: its epoch (the first data set reader's) and whether the
 * batch ended it (the reader has moved on). */
static stk_status note_batch_epoch(stk__exec *ex) {
  stk_pipeline *p = ex->p;
  ex->batch_epoch = -1;
  ex->ends_epoch = false;
  STK_TRY(stk__resume_capture(p, ex->next_ordinal, ex->resume));
  for (size_t o = 0; o < p->num_nodes; o++) {
    stk__node *node = &p->nodes[p->order[o]];
    if (node->reader_slot < 0 || !node->spec->def->position || !has_epochs(node)) continue;
    int64_t epoch, left;
    stk_status st = node->spec->def->position(node, &epoch, &left);
    if (st != STK_OK) return stk__wrap(st, "reader '%s'", node->name);
    ex->batch_epoch = ex->reader_epoch[node->reader_slot];
    ex->ends_epoch = epoch != ex->batch_epoch;
    break;
  }
  return STK_OK;
}

static void reset_sample(stk__exec *ex, size_t i) {
  stk_pipeline *p = ex->p;
  for (size_t o = 0; o < ex->num_slots; o++) {
    void **own = &ex->out_blocks[i * ex->num_slots + o];
    if (*own) stk__pool_free(p->pool, *own);
    *own = NULL;
  }
  memset(&ex->edge_tensors[i * ex->num_edges], 0, ex->num_edges * sizeof(stk__tensor));
  release_records(p, ex->samples[i].prep);
  ex->status[i] = STK_OK;
  free(ex->messages[i]);
  ex->messages[i] = NULL;
}

/* Resets the samples and plans the batch's size: the batch size, or what is left of
 * the readers' epoch. */
static stk_status prepare_batch(stk__exec *ex) {
  for (size_t i = 0; i < ex->n; i++) {
    reset_sample(ex, i);
    ex->pending[i] = i;
    ex->dropped[i] = false;
  }
  ex->compacted = false;
  stk__skip_list_free(&ex->skips); /* a failed batch's, if it kept them */
  STK_TRY(readers_room(ex, ex->n, true, &ex->batch_count));
  ex->num_pending = ex->batch_count;
  for (size_t o = 0; o < ex->num_slots; o++) {
    ex->dense_blocks[o] = NULL;
    if (ex->pred[o].valid)
      ex->dense_blocks[o] = stk__pool_alloc(ex->p->pool, ex->pred[o].bytes * ex->n);
  }
  return STK_OK;
}

static void release_batch_memory(stk__exec *ex) {
  for (size_t i = 0; i < ex->n; i++) reset_sample(ex, i);
  for (size_t o = 0; o < ex->num_slots; o++) {
    stk__pool_free(ex->p->pool, ex->dense_blocks[o]);
    ex->dense_blocks[o] = NULL;
  }
  for (size_t e = 0; ex->lists && e < ex->num_edges; e++) {
    stk_tensor_list_release(ex->lists[e]);
    ex->lists[e] = NULL;
  }
}

/* Runs the pending samples; afterwards `pending` holds those that failed. */
static stk_status run_pending(stk__exec *ex) {
  STK_TRY(plan_readers(ex));
  for (size_t k = 0; k < ex->num_pending; k++)
    ex->samples[ex->pending[k]].ordinal = ex->next_ordinal++;
  stk__threadpool_parallel_for(ex->p->threads, ex->num_pending, run_sample_task, ex);
  size_t failed = 0;
  for (size_t k = 0; k < ex->num_pending; k++)
    if (ex->status[ex->pending[k]] != STK_OK) ex->pending[failed++] = ex->pending[k];
  ex->num_pending = failed;
  return STK_OK;
}

/* A delivered batch's skipped samples join the pipeline's count; the first
 * STK_SKIP_MESSAGES_KEPT messages are kept (taken over). The consumer's thread. */
static void count_skips(stk_pipeline *p, stk__skip_list *skips) {
  atomic_fetch_add(&p->stat_skipped, (long long)skips->count);
  for (size_t i = 0; i < skips->count && i < skips->cap; i++) {
    long long slot = atomic_fetch_add(&p->num_skip_messages, 1);
    if (slot < STK_SKIP_MESSAGES_KEPT && skips->messages[i]) {
      atomic_store(&p->skip_messages[slot], skips->messages[i]);
      skips->messages[i] = NULL;
    }
  }
  stk__skip_list_free(skips);
}

/* Applies the bad-sample policy to the failed samples in `pending`: each is counted as
 * skipped and replaced by the reader's next sample of the same epoch; where the epoch
 * has none left, the sample leaves the batch (`dropped`). */
static stk_status handle_failures(stk__exec *ex, int round) {
  stk_pipeline *p = ex->p;
  bool skip = p->settings[STK_PIPE_ON_ERROR] == STK_ON_ERROR_SKIP;
  for (size_t k = 0; k < ex->num_pending; k++) {
    size_t i = ex->pending[k];
    if (!skip || !stk__is_data_error(ex->status[i]))
      return stk__fail(ex->status[i], "stk_pipeline_run", "%s",
                       ex->messages[i] ? ex->messages[i] : "failed");
  }
  if (round >= MAX_REPLACEMENT_ROUNDS)
    return stk__fail(STK_ERR_DECODE, "stk_pipeline_run",
                     "gave up after %d rounds of replacing bad samples; last: %s", round,
                     ex->messages[ex->pending[0]]);
  for (size_t k = 0; k < ex->num_pending; k++) {
    size_t i = ex->pending[k];
    stk__skip_list_add(&ex->skips, ex->messages[i]);
    ex->messages[i] = NULL;
    reset_sample(ex, i);
  }
  size_t room;
  STK_TRY(readers_room(ex, ex->num_pending, false, &room));
  for (size_t k = room; k < ex->num_pending; k++) ex->dropped[ex->pending[k]] = true;
  ex->num_pending = room;
  return STK_OK;
}

/* Sample `from` moves to the free place `to` (a dropped sample's, already reset): its
 * tensors, blocks, planned items and prepared records. */
static void move_sample(stk__exec *ex, size_t to, size_t from) {
  size_t edges = ex->num_edges, slots = ex->num_slots, readers = ex->num_readers;
  memcpy(&ex->edge_tensors[to * edges], &ex->edge_tensors[from * edges],
         edges * sizeof(stk__tensor));
  memset(&ex->edge_tensors[from * edges], 0, edges * sizeof(stk__tensor));
  memcpy(&ex->out_blocks[to * slots], &ex->out_blocks[from * slots], slots * sizeof(void *));
  memset(&ex->out_blocks[from * slots], 0, slots * sizeof(void *));
  memcpy(&ex->items[to * readers], &ex->items[from * readers], readers * sizeof(int64_t));
  if (ex->prep) {
    memcpy(ex->prep + to * ex->prep_stride, ex->prep + from * ex->prep_stride, ex->prep_stride);
    memset(ex->prep + from * ex->prep_stride, 0, ex->prep_stride);
  }
  ex->samples[to].ordinal = ex->samples[from].ordinal;
  ex->samples[to].source = ex->samples[from].source;
}

/* The samples that left the batch leave no gaps: the others move up, in order. Their
 * data stays where it is, so outputs predicted into batch-wide blocks are copied when
 * assembled (`compacted`). */
static void compact_batch(stk__exec *ex) {
  size_t kept = 0;
  for (size_t i = 0; i < ex->batch_count; i++) {
    if (ex->dropped[i]) continue;
    if (i != kept) move_sample(ex, kept, i);
    kept++;
  }
  ex->compacted |= kept != ex->batch_count;
  for (size_t i = 0; i < ex->batch_count; i++) ex->dropped[i] = false; /* places now taken */
  ex->batch_count = kept;
}

/* ---- batch operators and the passes after them ---- */

struct stk__batch {
  stk__sample **samples;
  size_t n;
};

size_t stk__batch_size(const stk__batch *b) { return b->n; }
stk__sample *stk__batch_sample(const stk__batch *b, size_t i) {
  return i < b->n ? b->samples[i] : NULL;
}

/* A batch operator over the samples that take its branch, on the producer thread with
 * the first worker's scratch (the workers are idle between passes). A failure fails the
 * batch: its outputs for the other samples were already made from the failed one's. */
static stk_status run_batch_node(stk__exec *ex, stk__node *node) {
  size_t m = 0;
  for (size_t i = 0; i < ex->batch_count; i++) {
    stk__sample *s = &ex->samples[i];
    if (node->spec->num_guards && !stk__guards_hold(node, s)) continue;
    s->current = node;
    s->worker = 0;
    s->arena = ex->arenas[0];
    stk_status st = check_inputs_present(node, s);
    if (st != STK_OK) {
      char *msg = stk__sample_failure_message(node->name, "", s);
      st = stk__fail(st, "stk_pipeline_run", "%s", msg ? msg : "no input");
      free(msg);
      return st;
    }
    ex->members[m++] = s;
  }
  stk__batch b = {ex->members, m};
  int64_t t0 = stk__now_ns();
  stk_status st = node->spec->def->run_batch(node, &b);
  atomic_fetch_add_explicit(&node->time_ns, stk__now_ns() - t0, memory_order_relaxed);
  stk__arena_reset(ex->arenas[0]);
  return st == STK_OK ? st : stk__wrap_operator(st, node->name);
}

/* Pass k > 0: the per-sample operators after a batch operator, on the workers. A sample
 * failing here has no replacement (the batch operators before have seen the batch as it
 * is): under on_error="skip" a data error drops it from the batch, counted as skipped. */
static stk_status run_later_pass(stk__exec *ex, int k) {
  ex->pass = k;
  for (size_t i = 0; i < ex->batch_count; i++) ex->pending[i] = i;
  ex->num_pending = ex->batch_count;
  stk__threadpool_parallel_for(ex->p->threads, ex->num_pending, run_sample_task, ex);
  bool skip = ex->p->settings[STK_PIPE_ON_ERROR] == STK_ON_ERROR_SKIP, any = false;
  for (size_t i = 0; i < ex->batch_count; i++) {
    if (ex->status[i] == STK_OK) continue;
    if (!skip || !stk__is_data_error(ex->status[i]))
      return stk__fail(ex->status[i], "stk_pipeline_run", "%s",
                       ex->messages[i] ? ex->messages[i] : "failed");
    stk__skip_list_add(&ex->skips, ex->messages[i]);
    ex->messages[i] = NULL;
    reset_sample(ex, i);
    ex->dropped[i] = any = true;
  }
  ex->num_pending = 0;
  if (any) compact_batch(ex);
  return STK_OK;
}

/* After the first pass (readers, replacements, compaction): each pass's batch operators,
 * in graph order, then the next pass. One pass and nothing more without them. */
static stk_status run_passes(stk__exec *ex) {
  stk_pipeline *p = ex->p;
  stk_status st = STK_OK;
  for (int k = 0; st == STK_OK && k < p->num_passes; k++) {
    if (k > 0) st = run_later_pass(ex, k);
    for (size_t o = 0; st == STK_OK && o < p->num_nodes; o++) {
      stk__node *node = &p->nodes[p->order[o]];
      if (node->pass == k && stk__node_is_batch(node)) st = run_batch_node(ex, node);
    }
  }
  ex->pass = 0;
  return st;
}

/* A copy of the state after the current batch, for the batch or job to carry. */
static int64_t *copy_resume(const stk__exec *ex) {
  size_t len = stk__resume_len(ex->p);
  int64_t *copy = stk__malloc(len * sizeof *copy, "a checkpoint state");
  if (copy) memcpy(copy, ex->resume, len * sizeof *copy);
  return copy;
}

/* ---- assembling outputs ---- */

/* Two samples of one edge agree in dtype, rank and layout (what a batch requires). */
static bool same_kind(const stk__tensor *a, const stk__tensor *b) {
  return a->dtype == b->dtype && a->ndim == b->ndim && strcmp(a->layout, b->layout) == 0;
}

static stk_status check_consistent(stk__exec *ex, size_t o, const stk__tensor *first) {
  int e = ex->p->collected[o];
  const char *name = ex->p->edges[e].name;
  for (size_t i = 0; i < ex->batch_count; i++)
    if (!ex->edge_tensors[i * ex->num_edges + (size_t)e].data)
      return stk__fail(
          STK_ERR_INVALID_ARGUMENT, "stk_pipeline_run",
          "output '%s' has no value for sample %zu of the batch: it is produced only in a "
          "conditional branch that sample did not take",
          name, i);
  for (size_t i = 1; i < ex->batch_count; i++) {
    const stk__tensor *t = &ex->edge_tensors[i * ex->num_edges + (size_t)e];
    if (!same_kind(t, first))
      return stk__fail(
          STK_ERR_INVALID_ARGUMENT, "stk_pipeline_run",
          "output '%s': sample %zu is %s/%dD/'%s' but sample 0 is %s/%dD/'%s' (conditional "
          "branches must agree in dtype, dimensions and layout)",
          name, i, stk_dtype_name(t->dtype), t->ndim, t->layout, stk_dtype_name(first->dtype),
          first->ndim, first->layout);
  }
  return STK_OK;
}

static bool same_shapes(stk__exec *ex, int e) {
  const stk__tensor *a = &ex->edge_tensors[(size_t)e];
  for (size_t i = 1; i < ex->batch_count; i++) {
    const stk__tensor *t = &ex->edge_tensors[i * ex->num_edges + (size_t)e];
    if (memcmp(a->shape, t->shape, sizeof(int64_t) * (size_t)a->ndim) != 0) return false;
  }
  return true;
}

static size_t sample_bytes(const stk__tensor *t) {
  size_t b = stk_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) b *= (size_t)t->shape[d];
  return b;
}

/* A collected edge that only some samples have (made inside a conditional branch and
 * read by a GPU operator or condition): a ragged list with holes where samples have no
 * value. Not a pipeline output (those must have every sample). */
static stk_status assemble_partial(stk__exec *ex, size_t o, stk_tensor_list **out) {
  stk_pipeline *p = ex->p;
  int e = p->collected[o];
  const stk__tensor *first = NULL;
  for (size_t i = 0; i < ex->batch_count; i++) {
    const stk__tensor *t = &ex->edge_tensors[i * ex->num_edges + (size_t)e];
    if (!t->data) continue;
    if (!first)
      first = t;
    else if (!same_kind(t, first))
      return stk__fail(STK_ERR_INVALID_ARGUMENT, "stk_pipeline_run",
                       "'%s': sample %zu is %s/%dD/'%s' but another is %s/%dD/'%s'",
                       p->edges[e].name, i, stk_dtype_name(t->dtype), t->ndim, t->layout,
                       stk_dtype_name(first->dtype), first->ndim, first->layout);
  }
  stk_tensor_list *tl;
  STK_TRY(stk__tensor_list_create(&tl, ex->batch_count, first ? first->ndim : 0, p->pool));
  tl->absent = stk__calloc(ex->batch_count ? ex->batch_count : 1, sizeof *tl->absent, "holes");
  if (!tl->absent) {
    stk_tensor_list_release(tl);
    return STK_ERR_OUT_OF_MEMORY;
  }
  if (first) {
    tl->dtype = first->dtype;
    memcpy(tl->layout, first->layout, sizeof tl->layout);
  }
  for (size_t i = 0; i < ex->batch_count; i++) {
    const stk__tensor *t = &ex->edge_tensors[i * ex->num_edges + (size_t)e];
    void **own = &ex->out_blocks[i * ex->num_slots + o];
    tl->absent[i] = t->data == NULL;
    if (!t->data) continue;
    memcpy(&tl->shapes[i * (size_t)tl->ndim], t->shape, sizeof(int64_t) * (size_t)tl->ndim);
    tl->data[i] = t->data;
    if (*own) {
      stk__tensor_list_own(tl, *own);
      *own = NULL;
    }
  }
  if (ex->dense_blocks[o]) {
    stk__tensor_list_own(tl, ex->dense_blocks[o]);
    ex->dense_blocks[o] = NULL;
  }
  ex->pred[o].valid = false;
  *out = tl;
  return STK_OK;
}

static bool some_sample_lacks(stk__exec *ex, int e) {
  for (size_t i = 0; i < ex->batch_count; i++)
    if (!ex->edge_tensors[i * ex->num_edges + (size_t)e].data) return true;
  return false;
}

/* Makes output `o` into a tensor list: dense when shapes agree (copying into one block
 * only when the prediction missed), ragged otherwise. Takes over the memory. */
static stk_status assemble_output(stk__exec *ex, size_t o, stk_tensor_list **out) {
  stk_pipeline *p = ex->p;
  int e = p->collected[o];
  if (p->edges[e].output_index < 0 && some_sample_lacks(ex, e)) return assemble_partial(ex, o, out);
  const stk__tensor *first = &ex->edge_tensors[(size_t)e];
  stk__tensor model;
  if (ex->batch_count == 0) { /* every sample was skipped: an empty list of the predicted kind */
    memset(&model, 0, sizeof model);
    model.dtype = ex->pred[o].valid ? ex->pred[o].dtype : STK_DTYPE_UINT8;
    model.ndim = ex->pred[o].valid ? ex->pred[o].ndim : 1;
    first = &model;
  }
  STK_TRY(check_consistent(ex, o, first));
  stk_tensor_list *tl;
  STK_TRY(stk__tensor_list_create(&tl, ex->batch_count, first->ndim, p->pool));
  tl->dtype = first->dtype;
  memcpy(tl->layout, first->layout, sizeof tl->layout);
  bool uniform = same_shapes(ex, e);
  size_t bytes = sample_bytes(first);
  bool in_slots = ex->dense_blocks[o] != NULL && !ex->compacted;
  for (size_t i = 0; i < ex->batch_count && in_slots; i++)
    in_slots = ex->out_blocks[i * ex->num_slots + o] == NULL;
  void *dense = NULL;
  if (uniform && in_slots) {
    dense = ex->dense_blocks[o];
    ex->dense_blocks[o] = NULL;
  } else if (uniform) {
    dense = stk__pool_alloc(p->pool, bytes * ex->batch_count);
    if (!dense) {
      stk_tensor_list_release(tl);
      return stk__fail(STK_ERR_OUT_OF_MEMORY, "stk_pipeline_run", "cannot allocate output '%s'",
                       p->edges[e].name);
    }
    for (size_t i = 0; i < ex->batch_count; i++)
      memcpy((char *)dense + i * bytes, ex->edge_tensors[i * ex->num_edges + (size_t)e].data,
             bytes);
  }
  for (size_t i = 0; i < ex->batch_count; i++) {
    const stk__tensor *t = &ex->edge_tensors[i * ex->num_edges + (size_t)e];
    memcpy(&tl->shapes[i * (size_t)tl->ndim], t->shape, sizeof(int64_t) * (size_t)tl->ndim);
    tl->data[i] = dense ? (char *)dense + i * bytes : t->data;
    void **own = &ex->out_blocks[i * ex->num_slots + o];
    if (!dense && *own) { /* ragged: the list keeps each sample's block */
      stk__tensor_list_own(tl, *own);
      *own = NULL;
    }
  }
  if (dense) {
    tl->dense = dense;
    stk__tensor_list_own(tl, dense);
  } else if (ex->dense_blocks[o]) { /* some samples live in the batch-wide block */
    stk__tensor_list_own(tl, ex->dense_blocks[o]);
    ex->dense_blocks[o] = NULL;
  }
  shape_prediction *pr = &ex->pred[o];
  if (ex->batch_count > 0) { /* an empty batch says nothing of the next one's shapes */
    pr->valid = uniform;
    pr->dtype = first->dtype;
    pr->ndim = first->ndim;
    memcpy(pr->shape, first->shape, sizeof pr->shape);
    pr->bytes = (bytes + 63) & ~(size_t)63;    /* keep every slot 64-byte aligned */
    if (pr->bytes != bytes) pr->valid = false; /* slots must be back to back to be dense */
  }
  *out = tl;
  return STK_OK;
}

/* The pipeline's outputs from this batch's lists (references taken). */
static stk_status make_batch(stk_pipeline *p, stk_tensor_list **lists, int64_t epoch,
                             bool ends_epoch, stk__skip_list *skips, int64_t **resume,
                             stk_batch **out) {
  stk_batch *b = stk__calloc(1, sizeof *b, "a batch");
  if (!b) return STK_ERR_OUT_OF_MEMORY;
  b->resume = *resume; /* taken over */
  *resume = NULL;
  b->epoch = epoch;
  b->ends_epoch = ends_epoch;
  b->skips = *skips; /* taken over */
  memset(skips, 0, sizeof *skips);
  b->outputs = stk__calloc(p->num_outputs, sizeof(stk_tensor_list *), "batch outputs");
  if (!b->outputs) {
    free(b);
    return STK_ERR_OUT_OF_MEMORY;
  }
  b->num_outputs = p->num_outputs;
  for (size_t o = 0; o < p->num_outputs; o++) {
    b->outputs[o] = lists[p->output_edges[o]];
    stk_tensor_list_retain(b->outputs[o]);
  }
  *out = b;
  return STK_OK;
}

static void queue_push(job_queue *q, gpu_job *job) {
  job->next = NULL;
  if (q->tail)
    q->tail->next = job;
  else
    q->head = job;
  q->tail = job;
  q->count++;
}

static gpu_job *queue_pop(job_queue *q) {
  gpu_job *job = q->head;
  if (!job) return NULL;
  q->head = job->next;
  if (!q->head) q->tail = NULL;
  q->count--;
  return job;
}

static void free_job(stk__exec *ex, gpu_job *job) {
  if (!job) return;
  for (size_t e = 0; job->lists && e < ex->num_edges; e++) stk_tensor_list_release(job->lists[e]);
  free(job->lists);
  free(job->samples);
  free(job->edges);
  for (size_t i = 0; job->prep && i < job->n; i++)
    release_records(ex->p, job->prep + i * ex->prep_stride);
  free(job->prep);
  for (size_t i = 0; job->reject_messages && i < job->n; i++) free(job->reject_messages[i]);
  free(job->reject_messages);
  free(job->rejected);
  stk__skip_list_free(&job->skips);
  free(job->resume);
  if (job->decoded) ex->p->gpu->api->event_destroy(ex->p->gpu->ctx, job->decoded);
  if (job->retired) ex->p->gpu->api->event_destroy(ex->p->gpu->ctx, job->retired);
  free(job->message);
  free(job);
}

/* A job whose GPU work is queued: kept on `retiring` until an event recorded now on the
 * compute stream (which waited for the job's decoders) has completed. Its device lists go
 * at once (their blocks return to the pool in stream order); only its host memory waits.
 * Without a usable event the job stays there until the executor's teardown synchronises
 * the streams. Lock held. */
static void retire_job(stk__exec *ex, gpu_job *job, bool record) {
  if (!job) return;
  stk__gpu *g = ex->p->gpu;
  if (record && g) {
    uintptr_t compute = g->api->stream(g->ctx, STK_GPU_STREAM_COMPUTE);
    int rc = job->decoded ? g->api->stream_wait_event(g->ctx, compute, job->decoded, NULL, 0) : 0;
    if (rc == 0) rc = g->api->event_create(g->ctx, 0, &job->retired, NULL, 0);
    if (rc == 0) rc = g->api->event_record(g->ctx, job->retired, compute, NULL, 0);
    if (rc != 0 && job->retired) {
      g->api->event_destroy(g->ctx, job->retired);
      job->retired = NULL;
    }
    for (size_t e = 0; job->lists && e < ex->num_edges; e++)
      if (job->lists[e] && job->lists[e]->storage == STK_STORAGE_DEVICE) {
        stk_tensor_list_release(job->lists[e]);
        job->lists[e] = NULL;
      }
  }
  queue_push(&ex->retiring, job);
}

/* Frees the retiring jobs whose events have completed, oldest first (lock held). */
static void reap_jobs(stk__exec *ex) {
  stk__gpu *g = ex->p->gpu;
  while (ex->retiring.head) {
    gpu_job *job = ex->retiring.head;
    int done = 0;
    if (!job->retired || g->api->event_query(g->ctx, job->retired, &done, NULL, 0) != 0 || !done)
      return;
    free_job(ex, queue_pop(&ex->retiring));
  }
}

/* Teardown: waits for every GPU stream of the pipeline, then frees the jobs still queued
 * or retiring (their decoders or kernels may still read their host memory). */
static void drain_jobs(stk__exec *ex) {
  stk__gpu *g = ex->p->gpu;
  if (!ex->jobs.head && !ex->decoded.head && !ex->retiring.head) return;
  if (g &&
      (g->api->stream_sync(g->ctx, g->api->stream(g->ctx, STK_GPU_STREAM_DECODE), NULL, 0) != 0 ||
       g->api->stream_sync(g->ctx, g->api->stream(g->ctx, STK_GPU_STREAM_COMPUTE), NULL, 0) != 0))
    return; /* the device stopped (bounded wait): the jobs' host memory stays allocated */
  for (gpu_job *j; (j = queue_pop(&ex->jobs)) || (j = queue_pop(&ex->decoded)) ||
                   (j = queue_pop(&ex->retiring));)
    free_job(ex, j);
}

/* Moves the batch's collected lists into a job with per-sample views of them. */
static stk_status make_job(stk__exec *ex, gpu_job **out) {
  stk_pipeline *p = ex->p;
  gpu_job *job = stk__calloc(1, sizeof *job, "a GPU job");
  if (!job) return STK_ERR_OUT_OF_MEMORY;
  size_t n = ex->batch_count, alloc_n = n ? n : 1;
  job->n = n;
  job->epoch = ex->batch_epoch;
  job->ends_epoch = ex->ends_epoch;
  job->skips = ex->skips; /* taken over */
  memset(&ex->skips, 0, sizeof ex->skips);
  job->resume = copy_resume(ex);
  job->lists = stk__calloc(ex->num_edges, sizeof(stk_tensor_list *), "job lists");
  job->samples = stk__calloc(alloc_n, sizeof(stk__sample), "job samples");
  job->edges = stk__calloc(alloc_n * ex->num_edges, sizeof(stk__tensor), "job tensors");
  if (ex->prep_stride) job->prep = stk__calloc(alloc_n, ex->prep_stride, "prepared records");
  job->rejected = stk__calloc(alloc_n, sizeof(bool), "rejected samples");
  job->reject_messages = stk__calloc(alloc_n, sizeof(char *), "rejection messages");
  if (!job->resume || !job->lists || !job->samples || !job->edges ||
      (ex->prep_stride && !job->prep) || !job->rejected || !job->reject_messages) {
    free_job(ex, job);
    return STK_ERR_OUT_OF_MEMORY;
  }
  if (ex->prep_stride) { /* the records move to the job, with the host blocks they hold */
    memcpy(job->prep, ex->prep, n * ex->prep_stride);
    memset(ex->prep, 0, n * ex->prep_stride);
  }
  for (size_t e = 0; e < ex->num_edges; e++) job->lists[e] = ex->lists[e], ex->lists[e] = NULL;
  for (size_t i = 0; i < n; i++) {
    job->samples[i] = ex->samples[i];
    job->samples[i].edges = &job->edges[i * ex->num_edges];
    job->samples[i].items = NULL;
    job->samples[i].arena = ex->gpu_arena;
    job->samples[i].prep = job->prep ? job->prep + i * ex->prep_stride : NULL;
  }
  for (size_t k = 0; k < p->num_collected; k++) {
    int e = p->collected[k];
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(job->lists[e], i, &d);
      stk__tensor *t = &job->edges[i * ex->num_edges + (size_t)e];
      t->data = d.data;
      t->ndim = d.ndim;
      t->dtype = d.dtype;
      memcpy(t->shape, d.shape, sizeof t->shape);
      memcpy(t->layout, d.layout, sizeof t->layout);
    }
  }
  *out = job;
  return STK_OK;
}

/* The split stage's first part (decode thread): the job's mixed decoders on the decode
 * stream, then an event there for the rest of the stage to wait on. A failure stays in
 * the job, to come out in order. */
static void run_decode_part(stk__exec *ex, gpu_job *job) {
  if (job->status != STK_OK) return;
  stk__gpu *g = ex->p->gpu;
  uintptr_t stream = g->api->stream(g->ctx, STK_GPU_STREAM_DECODE);
  for (size_t i = 0; i < job->n; i++) job->samples[i].arena = ex->decode_arena;
  stk__gpu_batch gb = {ex->p, job->n, job->samples,  job->lists,
                       NULL,  stream, job->rejected, job->reject_messages};
  stk_status st = stk__gpu_run_stage(&gb, STK__GPU_PART_DECODE);
  stk__arena_reset(ex->decode_arena);
  for (size_t i = 0; i < job->n; i++) job->samples[i].arena = ex->gpu_arena;
  char err[STK_GPU_ERRLEN] = "";
  if (st == STK_OK)
    st = stk__gpu_check(g->api->event_create(g->ctx, 0, &job->decoded, err, sizeof err), err);
  if (st == STK_OK)
    st = stk__gpu_check(g->api->event_record(g->ctx, job->decoded, stream, err, sizeof err), err);
  if (st != STK_OK) {
    job->status = st;
    job->message = strdup(stk_last_error());
    /* no event covers what the decoders queued before failing: wait for it here, so that
     * the job's host memory can be released (an error path) */
    g->api->stream_sync(g->ctx, stream, NULL, 0);
  }
}

/* Sample `to` of a batch output becomes a copy of sample `from`: bytes copied where the
 * list is one dense block (on the compute stream for device lists, after the stage's
 * work; samples of a dense list do not overlap), else the sample's pointer and shape
 * taken (the list's blocks stay owned as they were). */
static stk_status copy_sample(stk__exec *ex, stk_tensor_list *tl, size_t to, size_t from) {
  if (tl->absent && (tl->absent[to] || tl->absent[from])) {
    tl->absent[to] = tl->absent[from];
    if (tl->absent[to]) return STK_OK;
  }
  if (!tl->dense) {
    tl->data[to] = tl->data[from];
    memcpy(&tl->shapes[to * (size_t)tl->ndim], &tl->shapes[from * (size_t)tl->ndim],
           sizeof(int64_t) * (size_t)tl->ndim);
    return STK_OK;
  }
  size_t bytes = stk_dtype_size(tl->dtype);
  for (int d = 0; d < tl->ndim; d++) bytes *= (size_t)tl->shapes[d];
  if (!tl->gpu) {
    memcpy(tl->data[to], tl->data[from], bytes);
    return STK_OK;
  }
  stk__gpu *g = ex->p->gpu;
  char err[STK_GPU_ERRLEN] = "";
  return stk__gpu_check(
      g->api->memcpy_async(g->ctx, tl->data[to], tl->data[from], bytes,
                           g->api->stream(g->ctx, STK_GPU_STREAM_COMPUTE), err, sizeof err),
      err);
}

/* The samples rejected in the GPU stage (on_error="skip") leave the batch: every output
 * list closes ranks over them (a list two outputs share, once), and they are counted as
 * skipped. The batch may end up empty. */
static stk_status drop_rejected(stk__exec *ex, gpu_job *job) {
  stk_pipeline *p = ex->p;
  size_t kept = 0;
  for (size_t i = 0; i < job->n; i++) kept += !job->rejected[i];
  if (kept == job->n) return STK_OK;
  for (size_t o = 0; o < p->num_outputs; o++) {
    stk_tensor_list *tl = job->lists[p->output_edges[o]];
    bool seen = false;
    for (size_t k = 0; k < o && !seen; k++) seen = job->lists[p->output_edges[k]] == tl;
    if (seen || tl->n != job->n) continue;
    size_t to = 0;
    for (size_t from = 0; from < job->n; from++) {
      if (job->rejected[from]) continue;
      if (to != from) STK_TRY(copy_sample(ex, tl, to, from));
      to++;
    }
    tl->n = to;
  }
  for (size_t i = 0; i < job->n; i++) {
    if (!job->rejected[i]) continue;
    stk__skip_list_add(&job->skips, job->reject_messages[i]);
    job->reject_messages[i] = NULL;
  }
  return STK_OK;
}

/* The GPU stage of one job, then the batch (GPU thread, or the caller in sync mode).
 * With the split stage, the decoders have run already: the compute stream waits for them. */
static stk_status run_job(stk__exec *ex, gpu_job *job, stk_batch **out) {
  stk_pipeline *p = ex->p;
  if (job->status != STK_OK)
    return stk__set_error(job->status, job->message ? job->message : "failed");
  stk__gpu_batch gb = {p,    job->n, job->samples,  job->lists,
                       NULL, 0,      job->rejected, job->reject_messages};
  stk_status st = STK_OK;
  if (job->decoded) {
    char err[STK_GPU_ERRLEN] = "";
    stk__gpu *g = p->gpu;
    st = stk__gpu_check(
        g->api->stream_wait_event(g->ctx, g->api->stream(g->ctx, STK_GPU_STREAM_COMPUTE),
                                  job->decoded, err, sizeof err),
        err);
  }
  if (st == STK_OK)
    st = stk__gpu_run_stage(&gb, job->decoded ? STK__GPU_PART_REST : STK__GPU_PART_ALL);
  stk__arena_reset(ex->gpu_arena);
  if (st == STK_OK) st = drop_rejected(ex, job);
  for (size_t o = 0; st == STK_OK && o < p->num_outputs; o++) {
    stk_tensor_list **tl = &job->lists[p->output_edges[o]];
    if ((*tl)->gpu) st = stk__gpu_finalize_output(p->gpu, tl, p->edges[p->output_edges[o]].name);
    if (st == STK_OK && (*tl)->gpu) st = stk__gpu_mark_ready(p->gpu, *tl);
  }
  return st == STK_OK ? make_batch(p, job->lists, job->epoch, job->ends_epoch, &job->skips,
                                   &job->resume, out)
                      : st;
}

/* Collected CPU edges become this batch's tensor lists. */
static stk_status assemble_lists(stk__exec *ex) {
  for (size_t o = 0; o < ex->num_slots; o++)
    STK_TRY(assemble_output(ex, o, &ex->lists[ex->p->collected[o]]));
  return STK_OK;
}

/* Branches merged by "select" must agree across the batch in dtype, rank and layout;
 * the error names the select (the Python layer names it after the variable). */
static stk_status check_selects(stk__exec *ex) {
  stk_pipeline *p = ex->p;
  for (size_t n = 0; n < p->num_nodes; n++) {
    const stk__node *node = &p->nodes[n];
    if (!merges_branches(node)) continue;
    int e = node->out_edges[0];
    const stk__tensor *first = NULL;
    for (size_t i = 0; i < ex->batch_count; i++) {
      const stk__tensor *t = &ex->edge_tensors[i * ex->num_edges + (size_t)e];
      if (!t->data) continue;
      if (!first)
        first = t;
      else if (!same_kind(t, first))
        return stk__fail(STK_ERR_INVALID_ARGUMENT, "stk_pipeline_run",
                         "'%s': the branches disagree: one gives %s/%dD/'%s', another %s/%dD/'%s' "
                         "(branches must agree in dtype, dimensions and layout)",
                         node->name, stk_dtype_name(first->dtype), first->ndim, first->layout,
                         stk_dtype_name(t->dtype), t->ndim, t->layout);
    }
  }
  return STK_OK;
}

/* The CPU stage of a batch: readers, every sample's chain, the bad-sample policy, and
 * the collected lists. Without GPU operators the result is the batch; with them, a job
 * for the GPU stage (a failure too travels as a job, to keep the order). */
static stk_status produce_cpu(stk__exec *ex, stk_batch **out, gpu_job **job) {
  ex->pass = 0;
  stk_status st = prepare_batch(ex);
  for (int round = 0; st == STK_OK && ex->num_pending > 0; round++) {
    if ((st = run_pending(ex)) != STK_OK) break;
    if (ex->num_pending && (st = handle_failures(ex, round + 1)) != STK_OK) break;
  }
  if (st == STK_OK) st = note_batch_epoch(ex);
  if (st == STK_OK) compact_batch(ex);
  if (st == STK_OK) st = run_passes(ex);
  if (st == STK_OK) st = check_selects(ex);
  if (st == STK_OK) st = assemble_lists(ex);
  if (st == STK_OK && ex->p->has_gpu) {
    st = make_job(ex, job);
  } else if (st == STK_OK) {
    int64_t *resume = copy_resume(ex);
    st = resume ? make_batch(ex->p, ex->lists, ex->batch_epoch, ex->ends_epoch, &ex->skips, &resume,
                             out)
                : STK_ERR_OUT_OF_MEMORY;
    free(resume);
  }
  release_batch_memory(ex);
  return st;
}

/* One whole batch on the calling thread (sync mode). */
static stk_status produce(stk__exec *ex, stk_batch **out) {
  gpu_job *job = NULL;
  stk_status st = produce_cpu(ex, out, &job);
  if (st == STK_OK && job) st = run_job(ex, job, out);
  pthread_mutex_lock(&ex->lock);
  retire_job(ex, job, true);
  reap_jobs(ex);
  pthread_mutex_unlock(&ex->lock);
  return st;
}

/* ---- the producer thread and the queue ---- */

/* Queues a finished batch (or failure) for the consumer; the lock is held. */
static void push_output(stk__exec *ex, queue_entry entry) {
  ex->queue[(ex->head + ex->count) % ex->cap] = entry;
  ex->count++;
  pthread_cond_broadcast(&ex->cond);
}

/* Batches made or being made and not yet taken: the prefetch bound. Lock held. */
static size_t in_flight(const stk__exec *ex) {
  return ex->count + ex->jobs.count + ex->decoded.count + (ex->gpu_busy ? 1 : 0) +
         (ex->decode_busy ? 1 : 0);
}

static void *producer_main(void *arg) {
  stk__exec *ex = arg;
  stk__name_thread("stk-producer");
  bool gpu = ex->p->has_gpu;
  pthread_mutex_lock(&ex->lock);
  for (;;) {
    int64_t t0 = stk__now_ns();
    while (!ex->stop && in_flight(ex) >= ex->cap) pthread_cond_wait(&ex->cond, &ex->lock);
    if (ex->stop) break;
    watch_begin(&ex->cpu_watch, "reading and running the CPU operators", ex->cpu_batches++);
    pthread_mutex_unlock(&ex->lock);
    int64_t t1 = stk__now_ns();
    queue_entry entry = {NULL, STK_OK, NULL};
    gpu_job *job = NULL;
    entry.status = produce_cpu(ex, &entry.batch, &job);
    int64_t cpu_ns = stk__now_ns() - t1;
    if (job) job->cpu_ns = cpu_ns;
    atomic_fetch_add(&ex->producer_blocked_ns, t1 - t0);
    atomic_fetch_add(&ex->cpu_stage_ns, cpu_ns);
    if (entry.status != STK_OK) entry.message = strdup(stk_last_error());
    if (gpu && !job && (job = calloc(1, sizeof *job))) { /* a failure, in order behind the jobs */
      job->status = entry.status;
      job->message = entry.message;
      entry.message = NULL;
    }
    pthread_mutex_lock(&ex->lock);
    watch_end(&ex->cpu_watch);
    if (ex->stop) {
      stk_batch_release(entry.batch);
      free(entry.message);
      free_job(ex, job);
      break;
    }
    if (gpu && job) {
      job->seq = ex->produced++;
      queue_push(&ex->jobs, job);
      pthread_cond_broadcast(&ex->cond);
    } else {
      push_output(ex, entry);
    }
    if (entry.status != STK_OK) break; /* stop producing after an error */
  }
  ex->cpu_done = true;
  if (!gpu) ex->producer_done = true;
  pthread_cond_broadcast(&ex->cond);
  pthread_mutex_unlock(&ex->lock);
  return NULL;
}

/* The automatic cpu_decoder_load: how many samples of each batch the prepared mixed
 * decoders decode with libjpeg-turbo in the CPU stage (on the workers, batches ahead)
 * instead of sending them to nvJPEG. nvJPEG's hardware batch is CPU-bound on the one
 * thread submitting it (bench/RESULTS.md), so the thread running the decoders is usually
 * the pipeline's slowest stage while the workers have cores to spare: every sample they
 * decode is one fewer in that thread's call. After each job, with the time the thread
 * waited for the job and the time the job took it, and the CPU stage's time for the job:
 * the share shrinks when the thread waited (the CPU stage, or a slow consumer, is the
 * limit: more host decoding would only cost cores) or the CPU stage nears the decoders'
 * time, and grows while the CPU stage makes a batch in under 80% of it. Steps of 1/32 of
 * the batch, within [0, n]. */
int stk__host_quota_next(int q, int n, int64_t wait_ns, int64_t busy_ns, int64_t cpu_ns) {
  if (busy_ns <= 0 || cpu_ns <= 0 || n <= 0) return q;
  int step = n / 32 > 1 ? n / 32 : 1;
  if (wait_ns > busy_ns / 8 || (double)cpu_ns > 0.95 * (double)busy_ns)
    q -= step;
  else if ((double)cpu_ns < 0.8 * (double)busy_ns)
    q += step;
  return q < 0 ? 0 : q > n ? n : q;
}

static void balance_host_decoding(stk__exec *ex, const gpu_job *job, int64_t wait_ns,
                                  int64_t busy_ns) {
  if (!ex->host_balance || job->status != STK_OK) return;
  int q =
      stk__host_quota_next(atomic_load(&ex->host_quota), (int)ex->n, wait_ns, busy_ns, job->cpu_ns);
  if (q == atomic_load(&ex->host_quota)) return;
  atomic_store(&ex->host_quota, q);
  for (size_t k = 0; k < ex->p->num_nodes; k++)
    if (ex->p->nodes[k].prepares) atomic_store(&ex->p->nodes[k].host_decode_quota, q);
}

/* The split stage's decode thread: each job's mixed decoders, in order, one batch ahead
 * of the GPU thread. The hardware engines' call blocks this thread for most of a batch;
 * meanwhile the GPU thread launches the previous batch's kernels and finishes it. */
static void *decode_main(void *arg) {
  stk__exec *ex = arg;
  stk__name_thread("stk-decode");
  pthread_mutex_lock(&ex->lock);
  for (;;) {
    int64_t waited = stk__now_ns();
    while (!ex->stop && !ex->jobs.head && !ex->cpu_done) pthread_cond_wait(&ex->cond, &ex->lock);
    if (ex->stop || !ex->jobs.head) break;
    gpu_job *job = queue_pop(&ex->jobs);
    ex->decode_busy = true;
    watch_begin(&ex->decode_watch,
                "inside the mixed decoders (nvJPEG's call and its waits on the device)", job->seq);
    pthread_mutex_unlock(&ex->lock);
    int64_t t0 = stk__now_ns();
    run_decode_part(ex, job);
    int64_t busy = stk__now_ns() - t0;
    atomic_fetch_add(&ex->decode_stage_ns, busy);
    balance_host_decoding(ex, job, t0 - waited, busy);
    pthread_mutex_lock(&ex->lock);
    watch_end(&ex->decode_watch);
    ex->decode_busy = false;
    if (ex->stop) {
      retire_job(ex, job, false); /* its decoders may still read its host memory */
      break;
    }
    queue_push(&ex->decoded, job); /* a failed job too: it comes out in order */
    pthread_cond_broadcast(&ex->cond);
  }
  ex->decode_done = true;
  pthread_cond_broadcast(&ex->cond);
  pthread_mutex_unlock(&ex->lock);
  return NULL;
}

/* What the GPU thread does with a job, as the timeout's message says it. */
static const char *gpu_stage_doing(const stk__exec *ex) {
  if (ex->split) return "queueing the GPU operators' work";
  for (size_t k = 0; k < ex->p->num_nodes; k++)
    if (ex->p->nodes[k].spec->device == STK_DEVICE_MIXED)
      return "inside the mixed decoders (nvJPEG's call and its waits on the device) or queueing "
             "the GPU operators' work";
  return "queueing the GPU operators' work";
}

/* The GPU stage, one job at a time in order, overlapping the next batches' CPU stage
 * (and, split, the next batch's decoding). */
static void *gpu_main(void *arg) {
  stk__exec *ex = arg;
  stk__name_thread("stk-gpu");
  job_queue *in = ex->split ? &ex->decoded : &ex->jobs;
  pthread_mutex_lock(&ex->lock);
  for (;;) {
    int64_t t0 = stk__now_ns();
    while (!ex->stop && !in->head && !(ex->split ? ex->decode_done : ex->cpu_done))
      pthread_cond_wait(&ex->cond, &ex->lock);
    atomic_fetch_add(&ex->gpu_idle_ns, stk__now_ns() - t0);
    if (ex->stop || !in->head) break;
    gpu_job *job = queue_pop(in);
    ex->gpu_busy = true;
    watch_begin(&ex->gpu_watch, gpu_stage_doing(ex), job->seq);
    pthread_mutex_unlock(&ex->lock);
    queue_entry entry = {NULL, STK_OK, NULL};
    int64_t t1 = stk__now_ns();
    entry.status = run_job(ex, job, &entry.batch);
    if (entry.status != STK_OK) entry.message = strdup(stk_last_error());
    int64_t busy = stk__now_ns() - t1;
    atomic_fetch_add(&ex->gpu_stage_ns, busy);
    if (!ex->split)
      balance_host_decoding(ex, job, t1 - t0, busy); /* this thread runs the decoders */
    pthread_mutex_lock(&ex->lock);
    watch_end(&ex->gpu_watch);
    retire_job(ex, job, true);
    reap_jobs(ex);
    ex->gpu_busy = false;
    if (ex->stop) {
      stk_batch_release(entry.batch);
      free(entry.message);
      break;
    }
    push_output(ex, entry);
    if (entry.status != STK_OK) break;
  }
  ex->producer_done = true;
  pthread_cond_broadcast(&ex->cond);
  pthread_mutex_unlock(&ex->lock);
  return NULL;
}

static void exec_free(stk__exec *ex) {
  if (!ex) return;
  if (ex->samples) release_batch_memory(ex);
  for (int w = 0; ex->arenas && w < ex->num_workers; w++) stk__arena_destroy(ex->arenas[w]);
  stk__arena_destroy(ex->gpu_arena);
  stk__arena_destroy(ex->decode_arena);
  for (size_t q = 0; ex->queue && q < ex->count; q++) {
    queue_entry *e = &ex->queue[(ex->head + q) % ex->cap];
    stk_batch_release(e->batch);
    free(e->message);
  }
  drain_jobs(ex);
  for (size_t i = 0; ex->messages && i < ex->n; i++) free(ex->messages[i]);
  free(ex->arenas);
  free(ex->samples);
  free(ex->edge_tensors);
  free(ex->prep);
  free(ex->skip);
  free(ex->cache_keys);
  free(ex->items);
  free(ex->status);
  free(ex->messages);
  free(ex->out_blocks);
  free(ex->dense_blocks);
  free(ex->pred);
  free(ex->lists);
  free(ex->pending);
  free(ex->members);
  stk__skip_list_free(&ex->skips);
  free(ex->dropped);
  free(ex->resume);
  free(ex->reader_epoch);
  free(ex->plan_items);
  free(ex->queue);
  free(ex->final_message);
  pthread_mutex_destroy(&ex->lock);
  pthread_cond_destroy(&ex->cond);
  free(ex);
}

static bool made_on_cpu(const stk_pipeline *p, int edge) {
  return p->nodes[p->edges[edge].producer].spec->device == STK_DEVICE_CPU;
}

/* A mixed (or GPU: the video readers) operator is prepared in the CPU stage when it has a
 * prepare hook and every data input, argument feed and guard it reads comes from a CPU
 * operator. */
static bool prepared_in_cpu_stage(const stk_pipeline *p, const stk__node *node) {
  const stk_op *spec = node->spec;
  if (spec->device == STK_DEVICE_CPU || !spec->def->prepare || !spec->def->prep_bytes) return false;
  for (int i = 0; i < spec->num_inputs; i++)
    if (!made_on_cpu(p, node->in_edges[i])) return false;
  for (int g = 0; g < spec->num_guards; g++)
    if (!made_on_cpu(p, spec->guards[g].edge)) return false;
  for (int a = 0; a < spec->def->schema->num_args; a++)
    if (spec->args[a].edge >= 0 && !made_on_cpu(p, spec->args[a].edge)) return false;
  return true;
}

/* Places the prepared records of the mixed operators in every sample's prep block. */
static void plan_prep(stk_pipeline *p, stk__exec *ex) {
  ex->prep_stride = 0;
  for (size_t k = 0; k < p->num_nodes; k++) {
    stk__node *node = &p->nodes[k];
    node->prepares = prepared_in_cpu_stage(p, node);
    if (!node->prepares) continue;
    node->prep_offset = ex->prep_stride;
    ex->prep_stride += (node->spec->def->prep_bytes + 63) & ~(size_t)63;
  }
}

static stk_status exec_alloc(stk_pipeline *p, stk__exec *ex) {
  size_t n = ex->n;
  plan_prep(p, ex);
  if (ex->prep_stride && !(ex->prep = stk__calloc(n, ex->prep_stride, "prepared records")))
    return STK_ERR_OUT_OF_MEMORY;
  if (stk__cache_present(p) &&
      (!(ex->skip = stk__calloc(n, p->num_nodes, "cache masks")) ||
       !(ex->cache_keys = stk__calloc(n * p->num_nodes, sizeof(char *), "cache keys"))))
    return STK_ERR_OUT_OF_MEMORY;
  ex->samples = stk__calloc(n, sizeof(stk__sample), "sample contexts");
  ex->edge_tensors = stk__calloc(n * ex->num_edges, sizeof(stk__tensor), "sample tensors");
  ex->items =
      stk__calloc(n * (ex->num_readers ? ex->num_readers : 1), sizeof(int64_t), "planned items");
  ex->status = stk__calloc(n, sizeof(stk_status), "sample status");
  ex->messages = stk__calloc(n, sizeof(char *), "sample messages");
  ex->out_blocks =
      stk__calloc(n * (ex->num_slots ? ex->num_slots : 1), sizeof(void *), "output blocks");
  ex->dense_blocks =
      stk__calloc(ex->num_slots ? ex->num_slots : 1, sizeof(void *), "output blocks");
  ex->pred =
      stk__calloc(ex->num_slots ? ex->num_slots : 1, sizeof(shape_prediction), "output shapes");
  ex->lists =
      stk__calloc(ex->num_edges ? ex->num_edges : 1, sizeof(stk_tensor_list *), "batch lists");
  ex->pending = stk__calloc(n, sizeof(size_t), "pending samples");
  ex->members = stk__calloc(n, sizeof(stk__sample *), "batch members");
  ex->dropped = stk__calloc(n, sizeof(bool), "dropped samples");
  ex->resume = stk__calloc(stk__resume_len(p), sizeof(int64_t), "a checkpoint state");
  ex->reader_epoch =
      stk__calloc(ex->num_readers ? ex->num_readers : 1, sizeof(int64_t), "reader epochs");
  ex->plan_items = stk__calloc(n, sizeof(int64_t), "planned items");
  ex->arenas = stk__calloc((size_t)ex->num_workers, sizeof(stk__arena *), "arenas");
  ex->cap = (size_t)p->settings[STK_PIPE_PREFETCH_QUEUE_DEPTH];
  ex->queue = stk__calloc(ex->cap, sizeof(queue_entry), "the prefetch queue");
  if (!ex->samples || !ex->edge_tensors || !ex->items || !ex->status || !ex->messages ||
      !ex->out_blocks || !ex->dense_blocks || !ex->pred || !ex->lists || !ex->pending ||
      !ex->members || !ex->dropped || !ex->resume || !ex->reader_epoch || !ex->plan_items ||
      !ex->arenas || !ex->queue)
    return STK_ERR_OUT_OF_MEMORY;
  for (int w = 0; w < ex->num_workers; w++)
    if (!(ex->arenas[w] = stk__arena_create())) return STK_ERR_OUT_OF_MEMORY;
  if (!(ex->gpu_arena = stk__arena_create())) return STK_ERR_OUT_OF_MEMORY;
  if (!(ex->decode_arena = stk__arena_create())) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = &ex->samples[i];
    s->pipe = p;
    s->ex = ex;
    s->index = i;
    s->edges = &ex->edge_tensors[i * ex->num_edges];
    s->items = &ex->items[i * (ex->num_readers ? ex->num_readers : 1)];
    s->prep = ex->prep ? ex->prep + i * ex->prep_stride : NULL;
    s->skip = ex->skip ? ex->skip + i * p->num_nodes : NULL;
    s->cache_key = ex->cache_keys ? ex->cache_keys + i * p->num_nodes : NULL;
  }
  return STK_OK;
}

/* Whether the mixed decoders get their own thread: every mixed operator is prepared in
 * the CPU stage (so only that thread calls the decoder, which takes one caller) and some
 * GPU operator runs after them (else there is nothing to overlap). */
static bool split_decoding(const stk_pipeline *p) {
  bool decoders = false, rest = false;
  for (size_t k = 0; k < p->num_nodes; k++) {
    const stk__node *node = &p->nodes[k];
    if (node->spec->device == STK_DEVICE_MIXED && !node->prepares) return false;
    decoders |= node->prepares;
    rest |= node->spec->device != STK_DEVICE_CPU && !node->prepares;
  }
  return decoders && rest;
}

/* Before the producer starts: resumes from the pipeline's checkpoint, if it has one, and
 * notes the state a checkpoint taken before the first batch gives. */
static stk_status start_from_checkpoint(stk__exec *ex) {
  stk_pipeline *p = ex->p;
  if (p->restore_text) STK_TRY(stk__resume_apply(p, p->restore_text, &ex->next_ordinal));
  free(p->delivered_resume);
  p->delivered_resume = stk__calloc(stk__resume_len(p), sizeof(int64_t), "a checkpoint state");
  if (!p->delivered_resume) return STK_ERR_OUT_OF_MEMORY;
  return stk__resume_capture(p, ex->next_ordinal, p->delivered_resume);
}

stk_status stk__exec_start(stk_pipeline *p) {
  stk__exec *ex = stk__calloc(1, sizeof *ex, "the executor");
  if (!ex) return STK_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&ex->lock, NULL);
  pthread_condattr_t attr; /* timed waits on the monotonic clock (stk__now_ns) */
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&ex->cond, &attr);
  pthread_condattr_destroy(&attr);
  ex->p = p;
  ex->timeout_ms = p->settings[STK_PIPE_TIMEOUT_MS];
  ex->cpu_watch.stage = "CPU", ex->decode_watch.stage = "decode", ex->gpu_watch.stage = "GPU";
  ex->n = (size_t)p->settings[STK_PIPE_BATCH_SIZE];
  ex->num_edges = p->num_edges;
  ex->num_slots = p->num_collected;
  ex->num_readers = (size_t)p->num_readers;
  ex->num_workers = stk__threadpool_size(p->threads);
  ex->async = p->settings[STK_PIPE_EXEC_ASYNC] != 0;
  stk_status st = exec_alloc(p, ex);
  if (st == STK_OK) st = start_from_checkpoint(ex);
  /* the threads' settings, before any thread starts */
  ex->split = ex->async && p->has_gpu && split_decoding(p);
  for (size_t k = 0; k < p->num_nodes;
       k++) { /* plan_prep (exec_alloc) has marked the prepared nodes */
    atomic_store(&p->nodes[k].host_decode_quota, 0);
    if (p->nodes[k].prepares && p->nodes[k].host_balance_wanted)
      ex->host_balance = ex->async && p->has_gpu;
  }
  if (st == STK_OK && ex->async) {
    if (pthread_create(&ex->thread, NULL, producer_main, ex) != 0)
      st = STK_FAIL(STK_ERR_INTERNAL, "cannot start the producer thread");
    else
      ex->thread_started = true;
  }
  if (st == STK_OK && ex->split) {
    if (pthread_create(&ex->decode_thread, NULL, decode_main, ex) != 0)
      st = STK_FAIL(STK_ERR_INTERNAL, "cannot start the decode thread");
    else
      ex->decode_thread_started = true;
  }
  if (st == STK_OK && ex->async && p->has_gpu) {
    if (pthread_create(&ex->gpu_thread, NULL, gpu_main, ex) != 0)
      st = STK_FAIL(STK_ERR_INTERNAL, "cannot start the GPU stage thread");
    else
      ex->gpu_thread_started = true;
  }
  if (st != STK_OK &&
      (ex->thread_started || ex->decode_thread_started)) { /* stop the threads before freeing */
    pthread_mutex_lock(&ex->lock);
    ex->stop = true;
    pthread_cond_broadcast(&ex->cond);
    pthread_mutex_unlock(&ex->lock);
    if (ex->thread_started) pthread_join(ex->thread, NULL);
    if (ex->decode_thread_started) pthread_join(ex->decode_thread, NULL);
    ex->thread_started = ex->decode_thread_started = false;
  }
  if (st != STK_OK) {
    exec_free(ex);
    return st;
  }
  p->exec = ex;
  return STK_OK;
}

/* Joins a stage thread, waiting until `deadline_ns` (monotonic) at most; a thread that
 * has not ended by then is detached. */
static bool join_until(pthread_t thread, int64_t deadline_ns) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
  int64_t left = deadline_ns - stk__now_ns(),
          ns = until.tv_nsec + (left > 0 ? left % 1000000000 : 0);
  until.tv_sec += (time_t)((left > 0 ? left / 1000000000 : 0) + ns / 1000000000);
  until.tv_nsec = (long)(ns % 1000000000);
  if (pthread_timedjoin_np(thread, NULL, &until) == 0) return true;
  pthread_detach(thread);
  return false;
}

bool stk__exec_stop(stk_pipeline *p, bool *pool_in_use) {
  stk__exec *ex = p->exec;
  *pool_in_use = false;
  if (!ex) return true;
  atomic_store(&p->stopping, true);
  pthread_mutex_lock(&ex->lock);
  ex->stop = true;
  pthread_cond_broadcast(&ex->cond);
  pthread_mutex_unlock(&ex->lock);
  pthread_mutex_lock(&p->feed_lock); /* wake a reader waiting for external data */
  pthread_cond_broadcast(&p->feed_cond);
  pthread_mutex_unlock(&p->feed_lock);
  int64_t deadline = stk__now_ns() + ex->timeout_ms * 1000000;
  bool joined = true;
  if (ex->thread_started && !join_until(ex->thread, deadline))
    joined = false, *pool_in_use = true; /* in the CPU stage: a slow host function */
  if (ex->decode_thread_started) joined &= join_until(ex->decode_thread, deadline);
  if (ex->gpu_thread_started) joined &= join_until(ex->gpu_thread, deadline);
  if (!joined) { /* a thread stuck inside a driver or nvJPEG call may still return into ex */
    fprintf(
        stderr,
        "stoker: a stage thread did not stop within %lld ms (timeout_ms); the pipeline's memory "
        "is kept for it\n",
        (long long)ex->timeout_ms);
    return false;
  }
  exec_free(ex);
  p->exec = NULL;
  return true;
}

void stk__exec_stage_times(const stk__exec *ex, stk_stats *out) {
  out->cpu_stage_ns = atomic_load(&ex->cpu_stage_ns);
  out->producer_blocked_ns = atomic_load(&ex->producer_blocked_ns);
  out->gpu_stage_ns = atomic_load(&ex->gpu_stage_ns);
  out->gpu_idle_ns = atomic_load(&ex->gpu_idle_ns);
  out->decode_stage_ns = atomic_load(&ex->decode_stage_ns);
  out->consumer_wait_ns = atomic_load(&ex->consumer_wait_ns);
}

int64_t stk__exec_host_decode_quota(const stk__exec *ex) {
  return ex->host_balance ? atomic_load(&ex->host_quota) : 0;
}

static stk_status deliver(stk_pipeline *p, queue_entry *e, stk_batch **out) {
  if (e->status != STK_OK) {
    return stk__set_error(e->status, e->message ? e->message : "stk_pipeline_run: failed");
  }
  atomic_fetch_add(&p->stat_batches, 1);
  atomic_fetch_add(&p->stat_samples, (long long)stk_tensor_list_num_samples(e->batch->outputs[0]));
  count_skips(p, &e->batch->skips);
  if (e->batch->resume)
    memcpy(p->delivered_resume, e->batch->resume, stk__resume_len(p) * sizeof(int64_t));
  *out = e->batch;
  return STK_OK;
}

/* The stage that has been on one batch the longest (NULL: none works; lock held). */
static const stage_watch *longest_busy(const stk__exec *ex) {
  const stage_watch *w[3] = {&ex->cpu_watch, &ex->decode_watch, &ex->gpu_watch}, *best = NULL;
  for (int k = 0; k < 3; k++)
    if (w[k]->doing && (!best || w[k]->since_ns < best->since_ns)) best = w[k];
  return best;
}

/* The consumer's wait for a batch (lock held): bounded by timeout_ms, except while the
 * CPU stage waits for fed data (the caller's). Past the bound, an error naming the stage
 * that holds the run up, the batch and what it is doing. */
static stk_status wait_for_batch(stk__exec *ex) {
  int64_t limit = ex->timeout_ms * 1000000, from = stk__now_ns();
  while (ex->count == 0 && !ex->producer_done) {
    int64_t until = from + limit;
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    int rc = pthread_cond_timedwait(&ex->cond, &ex->lock, &ts);
    if (atomic_load(&ex->p->feed_waiters) > 0) from = stk__now_ns();
    if (rc != ETIMEDOUT || ex->count > 0 || ex->producer_done || stk__now_ns() - from < limit)
      continue;
    const stage_watch *w = longest_busy(ex);
    if (!w)
      return stk__fail(STK_ERR_INTERNAL, "stk_pipeline_run",
                       "no batch came within %lld ms (timeout_ms) and no stage is working on one",
                       (long long)ex->timeout_ms);
    return stk__fail(w->stage[0] == 'C' ? STK_ERR_INTERNAL : STK_ERR_DEVICE, "stk_pipeline_run",
                     "no batch came within %lld ms (timeout_ms): the %s stage has been %s on batch "
                     "%lld for %lld ms",
                     (long long)ex->timeout_ms, w->stage, w->doing, (long long)w->batch,
                     (long long)((stk__now_ns() - w->since_ns) / 1000000));
  }
  return STK_OK;
}

stk_status stk__exec_next(stk_pipeline *p, stk_batch **out) {
  stk__exec *ex = p->exec;
  if (ex->final_message) /* an earlier batch failed: the pipeline stays failed */
    return stk__fail(ex->final_status, "stk_pipeline_run",
                     "the pipeline stopped after an earlier error: %s", ex->final_message);
  queue_entry e = {NULL, STK_OK, NULL};
  if (!ex->async) {
    e.status = produce(ex, &e.batch);
    if (e.status != STK_OK) e.message = strdup(stk_last_error());
  } else {
    int64_t t0 = stk__now_ns();
    pthread_mutex_lock(&ex->lock);
    stk_status waited = wait_for_batch(ex);
    atomic_fetch_add(&ex->consumer_wait_ns, stk__now_ns() - t0);
    if (waited != STK_OK) {
      e.status = waited;
      e.message = strdup(stk_last_error());
      pthread_mutex_unlock(&ex->lock);
    } else if (ex->count == 0) {
      pthread_mutex_unlock(&ex->lock);
      return STK_FAIL(STK_ERR_STATE, "the producer has stopped");
    } else {
      e = ex->queue[ex->head];
      ex->head = (ex->head + 1) % ex->cap;
      ex->count--;
      pthread_cond_broadcast(&ex->cond);
      pthread_mutex_unlock(&ex->lock);
    }
  }
  stk_status st = deliver(p, &e, out);
  if (st != STK_OK) {
    ex->final_status = st;
    ex->final_message = e.message;
  }
  return st;
}
