/*
 * Pipeline internals shared by the files of src/pipeline/: operator specs and argument
 * values (opspec.c, args.c), the graph (graph.c), tensor lists (tensor_list.c), the
 * executor (executor.c), the per-sample context (sample.c) and the text form (text.c).
 */
#ifndef STOKER_PIPELINE_INTERNAL_H
#define STOKER_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../ops/op.h"

/* ---- argument values ---- */
typedef struct {
  bool given;      /* set explicitly or fed by an edge */
  bool has_value;  /* given or defaulted */
  char *edge_name; /* fed per sample by this edge (NULL: constant) */
  int edge;        /* resolved edge index at build, -1 for constants */
  stk_arg_type type;
  bool b;
  int64_t i;
  double f;
  char *s;
  size_t count; /* list length */
  int64_t *ints;
  double *floats;
  char **strs;
} stk__argval;

void stk__argval_clear(stk__argval *v);
stk_status stk__argval_copy(stk__argval *dst, const stk__argval *src);
/* Parses a literal in text form ("1", "0.5", "true", "\"RGB\"", "[1, 2]") into a value of
 * the argument's type (scalars promote to one-element lists; ints to floats). */
stk_status stk__argval_parse(const stk_arg_schema *schema, const char *text, stk__argval *out);
/* Checks a value against its schema (range, choices). */
stk_status stk__argval_check(const stk_arg_schema *schema, const stk__argval *v,
                             const char *op_name);
/* Appends the value in text form. */
stk_status stk__argval_format(const stk__argval *v, stk__strbuf *out);

/* ---- operator specs (the public stk_op) ---- */
typedef struct {
  char *edge_name;
  int edge; /* resolved at build */
  int64_t value;
} stk__guard;

struct stk_op {
  const stk__op_def *def;
  unsigned device;
  char *name; /* explicit instance name, or NULL */
  char **inputs;
  int num_inputs;
  char **outputs;
  int num_outputs;
  stk__argval *args;  /* def->schema->num_args entries */
  stk__guard *guards; /* conditions on samples (all must hold) */
  int num_guards;
};

stk_status stk__op_copy(stk_op **out, const stk_op *src);
const char *stk__device_name(unsigned device);

/* ---- graph ---- */
typedef struct {
  char *name;
  int producer;     /* node index */
  int producer_out; /* output index of the producer */
  int output_index; /* index among pipeline outputs, -1 if not an output */
  int slot;         /* CPU edges kept for the whole batch (outputs, inputs of GPU
                       operators): index among the collected edges, else -1 */
} stk__edge;

struct stk__node {
  stk_op *spec;
  struct stk_pipeline *pipe;
  int index;
  char *name; /* instance name (explicit or generated) */
  int *in_edges;
  int *out_edges;
  int num_outputs;
  int reader_slot; /* index among readers, -1 if not a reader */
  void *state;
  uint64_t rng_key;
  atomic_llong time_ns;
  /* the CPU stage's pass this node runs in: 0, or one more than the latest pass of a
   * batch operator (STK_OPF_BATCH) it depends on; a batch operator runs at the end of
   * its pass, on the whole batch (graph.c plan_passes, executor.c) */
  int pass;
  /* mixed operators with a `prepare` hook whose inputs and guards all come from CPU
   * operators: prepared per sample in the CPU stage, into the sample's prep block at
   * prep_offset (executor.c) */
  bool prepares;
  size_t prep_offset;
  /* samples per batch the mixed decoders decode on the CPU in the CPU stage when their
   * cpu_decoder_load is automatic (set by the executor's balance, executor.c) */
  atomic_int host_decode_quota;
  bool host_balance_wanted; /* its share is automatic (stk__node_request_host_balance) */
  /* host functions (python_function) */
  stk_host_fn host_fn;
  void *host_user;
  void (*host_free)(void *);
};

/* ---- tensor lists ---- */
struct stk_tensor_list {
  atomic_int refs;
  size_t n;
  stk_dtype dtype;
  char layout[STK_MAX_LAYOUT + 1];
  int ndim;
  int64_t *shapes; /* n * ndim */
  void **data;     /* n */
  void **blocks;   /* pool blocks owned */
  size_t num_blocks;
  stk__pool *pool;
  void *dense;
  stk_storage storage;
  int device_id;
  /* device lists: the device (blocks go back to its pool), the event recorded after the
   * producer's last kernel, and the consumer's stream (set through DLPack) */
  struct stk__gpu *gpu;
  bool idle_blocks; /* the blocks come from the idle pool (returned with device_free_idle) */
  void *ready_event;
  uintptr_t consumer_stream;
  bool has_consumer;
  void *malloc_block; /* host copies made by stk_tensor_list_to_host */
  /* views (conditional execution: a branch's subset of a batch, a merge of branches):
   * the lists whose memory the samples point into, released with this one */
  stk_tensor_list **parents;
  size_t num_parents;
  bool *absent; /* views: the samples with no value (holes); NULL: every sample has one */
};

/* "operator 'NAME'STAGE, SOURCE: <the thread's last error>" ("sample N" for samples without a
 * source), strdup'ed: what
 * the bad-sample policy records of a failed sample (NULL when out of memory). */
char *stk__sample_failure_message(const char *op_name, const char *stage, const stk__sample *s);

/* Failures that on_error="skip" may skip: bad data, not bugs or resource failures. A
 * sample's NOT_FOUND is its file gone (deleted, a 404): the lookups that also fail with
 * it (operator, reader, external source names) fail at build, before any sample. Readers
 * skip files at build by the same rule (ops/reader_common.c). */
static inline bool stk__is_data_error(stk_status st) {
  return st == STK_ERR_DECODE || st == STK_ERR_IO || st == STK_ERR_LIMIT ||
         st == STK_ERR_UNSUPPORTED || st == STK_ERR_NOT_FOUND;
}

/* gpu.c: returns a device list's blocks to the device pool, stream-ordered. */
void stk__tensor_list_free_device(stk_tensor_list *tl);

stk_status stk__tensor_list_create(stk_tensor_list **out, size_t n, int ndim, stk__pool *pool);
/* Hands ownership of a pool block to the list. */
stk_status stk__tensor_list_own(stk_tensor_list *tl, void *block);
/* A view: `n` samples, sample j = sample index[j] of srcs[which[j]] (which[j] < 0: a hole,
 * no value, shape all zeros). dtype, rank and layout come from the first source that gives
 * a sample; sources that give samples must agree (else STK_ERR_INVALID_ARGUMENT naming
 * `what`). A hole of a source stays a hole. The view keeps its sources alive; no sample
 * is copied. */
stk_status stk__tensor_list_view(stk_tensor_list *const *srcs, size_t num_srcs, const int *which,
                                 const size_t *index, size_t n, const char *what,
                                 stk_tensor_list **out);
/* True when sample i has a value (holes of views do not). */
bool stk__tensor_list_has_sample(const stk_tensor_list *tl, size_t i);

/* The samples a batch skipped (on_error="skip"): their messages, owned (an entry may be
 * NULL when its copy failed). They count in the pipeline's stats when the batch is
 * handed out, so stats() never counts batches made ahead and not yet taken. */
typedef struct {
  char **messages;
  size_t count, cap;
} stk__skip_list;

/* Adds a skipped sample's message (taken over; may be NULL). */
void stk__skip_list_add(stk__skip_list *l, char *message);
void stk__skip_list_free(stk__skip_list *l);

struct stk_batch {
  size_t num_outputs;
  stk_tensor_list **outputs;
  stk__skip_list skips;
  int64_t *resume; /* the pipeline's state after this batch (checkpoint.c), owned */
  int64_t epoch;   /* the first reader's epoch; -1 without readers */
  bool ends_epoch; /* the batch is the last of that epoch */
};

/* ---- external data queues ---- */
typedef struct stk__feed_batch {
  struct stk__feed_batch *next;
  size_t count;
  stk__tensor *samples; /* data owned (malloc) */
} stk__feed_batch;

/* ---- the pipeline ---- */
typedef struct stk__exec stk__exec;

struct stk_pipeline {
  int64_t settings[STK_PIPE_SETTING_COUNT];
  stk_op **ops;
  size_t num_ops;
  char **output_names;
  size_t num_outputs;
  bool built;
  /* after build */
  stk__node *nodes;
  size_t num_nodes;
  int *order; /* topological order of node indices */
  stk__edge *edges;
  size_t num_edges;
  int *output_edges;
  int *collected; /* edges with a slot, by slot */
  size_t num_collected;
  bool has_gpu;   /* some operator runs on "mixed" or "gpu" */
  int num_passes; /* the CPU stage's passes over the batch (1 without batch operators) */
  struct stk__gpu *gpu;
  int num_readers;
  stk__pool *pool;
  stk__threadpool *threads;
  stk__exec *exec;
  /* host functions registered before build: by instance name */
  struct stk__host_reg *host_regs;
  /* stats */
  atomic_llong stat_batches, stat_samples, stat_skipped;
  atomic_llong
      stat_host_decoded; /* mixed decoders' samples decoded in the CPU stage and uploaded */
  /* mixed decoders' samples decoded by stoker's own GPU JPEG decoder, and its last share
   * (parts per million) */
  atomic_llong stat_own_decoded, own_share_ppm;
  /* external source feeding */
  pthread_mutex_t feed_lock;
  pthread_cond_t feed_cond;
  atomic_bool stopping; /* set while the producer is being stopped */
  /* The messages of the first STK_SKIP_MESSAGES_KEPT skipped samples (naming them), in
   * the order the stages skipped them; a slot is NULL until its writer has stored it. */
  atomic_llong num_skip_messages;
  _Atomic(char *) skip_messages[STK_SKIP_MESSAGES_KEPT];
  /* Files readers left out at build under on_error="skip" (stk__node_skip_file): their
   * count and the first messages. */
  atomic_llong num_skipped_files;
  _Atomic(char *) skipped_files[STK_SKIP_MESSAGES_KEPT];
  atomic_int feed_waiters; /* threads waiting for fed data (not bounded by timeout_ms) */
  /* Checkpoints (checkpoint.c): the state after the last batch handed out (consumer's
   * thread; stk__resume_len entries), and a checkpoint to resume from at build. */
  int64_t *delivered_resume;
  char *restore_text;
  struct stk_pipeline *next_abandoned; /* stk_pipeline_destroy's list of kept pipelines */
};

typedef struct stk__host_reg {
  struct stk__host_reg *next;
  char *op_name;
  stk_host_fn fn;
  void *user;
  void (*free_user)(void *);
} stk__host_reg;

/* graph.c */
stk_status stk__graph_build(stk_pipeline *p);
void stk__graph_free(stk_pipeline *p);
stk__node *stk__graph_find_node(stk_pipeline *p, const char *name);

/* executor.c */
stk_status stk__exec_start(stk_pipeline *p);
/* Stops the stage threads and frees the executor. Returns false when a stage thread did
 * not stop within the pipeline's timeout (stuck inside a driver or nvJPEG call, or a slow
 * host function): it is detached, and the executor and the pipeline must stay allocated;
 * *pool_in_use is then true when that thread is the producer, which may still run the CPU
 * stage on the pipeline's thread pool. */
bool stk__exec_stop(stk_pipeline *p, bool *pool_in_use);
stk_status stk__exec_next(stk_pipeline *p, stk_batch **out);
void stk__exec_stage_times(const stk__exec *ex, stk_stats *out);
/* The automatic cpu_decoder_load's current samples per batch (0 when none is automatic). */
int64_t stk__exec_host_decode_quota(const stk__exec *ex);

/* the per-sample context, shared by executor.c and sample.c */
typedef struct stk__arena stk__arena;
void *stk__arena_alloc(stk__arena *a, size_t bytes);

struct stk__sample {
  stk_pipeline *pipe;
  stk__exec *ex;
  int64_t ordinal;
  size_t index; /* position in the batch */
  int worker;
  stk__tensor *edges; /* this sample's tensor for every edge */
  int64_t *items;     /* planned item per reader */
  const char *source; /* file or origin of the sample */
  size_t out_bytes;   /* bytes of operator outputs so far (max_batch_bytes' share) */
  stk__node *current; /* the node being run */
  stk__arena *arena;
  unsigned char *prep; /* records of the mixed operators prepared in the CPU stage */
  /* pipelines with "cache" operators (cache.c), per node: skipped for this sample (a
   * cache hit made its work useless), and a cache's key and stamp after a miss */
  unsigned char *skip;
  char **cache_key;
};

/* sample.c: output `index` of the running node takes the value of `src` for this
 * sample: aliased without a copy, or copied when the output leaves the sample's chain. */
stk_status stk__output_alias(stk__sample *s, int index, const stk__tensor *src);
/* conditional.c: the "select" operator's definition (the executor lets it see absent
 * inputs) and the check of a guard for a sample. */
extern const stk__op_def stk__op_select;
bool stk__guards_hold(const stk__node *node, const stk__sample *s);

/* A CPU operator working on the whole batch (STK_OPF_BATCH with run_batch). */
bool stk__node_is_batch(const stk__node *node);

/* sample.c: allocation of a node's output for a sample (executor decides where). */
void *stk__exec_alloc_output(stk__sample *s, int edge, size_t bytes, const stk__tensor *t);

/* slabs.c: page-locked slabs carved into 64-byte aligned blocks (the host pool's blocks in
 * GPU pipelines); reg / unreg page-lock and release a slab. */
typedef struct stk__slabs stk__slabs;
stk__slabs *stk__slabs_create(int (*reg)(void *user, void *ptr, size_t bytes),
                              void (*unreg)(void *user, void *ptr), void *user);
void *stk__slabs_alloc(stk__slabs *s, size_t bytes);
void stk__slabs_free(stk__slabs *s, void *ptr);
int64_t stk__slabs_registered(stk__slabs *s);
void stk__slabs_destroy(stk__slabs *s);

/* executor.c: the automatic cpu_decoder_load's next number of host-decoded samples per
 * batch of n, from the decoders' thread's wait and busy time for a job and the CPU
 * stage's time for it (exposed for its unit test). */
int stk__host_quota_next(int q, int n, int64_t wait_ns, int64_t busy_ns, int64_t cpu_ns);

/* host.c: external sources */
stk_status stk__feed_pop(stk_pipeline *p, stk__node *node, stk__feed_batch **out);

/* checkpoint.c: the state a checkpoint holds, as int64s: the next sample's ordinal, then
 * (epoch, left) per reader slot (-1 for readers that cannot seek). */
size_t stk__resume_len(const stk_pipeline *p);
/* The state now (producer thread, between batches; or before the producer starts). */
stk_status stk__resume_capture(stk_pipeline *p, int64_t ordinal, int64_t *out);
/* Moves the readers to a checkpoint's positions (before the producer starts). */
stk_status stk__resume_apply(stk_pipeline *p, const char *text, int64_t *ordinal);

#endif
