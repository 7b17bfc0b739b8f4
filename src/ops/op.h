/*
 * The private interface between the executor and operator implementations.
 *
 * An operator is data: a static `stk_op_schema` (name, docs, inputs, outputs, typed
 * arguments) plus an `stk__op_def` holding one function pointer per backend. The
 * executor validates arguments against the schema, so implementations read them
 * without re-checking types. Every operator file defines one or more `stk__op_def`s and
 * lists them in registry.c.
 *
 * CPU operators run per sample: a worker takes one sample and runs its whole chain of
 * CPU operators (sample-major). `run_sample` reads its inputs with stk__input, reads
 * arguments with stk__arg_* (constant, or fed per sample by another node), draws random
 * numbers from stk__sample_rng, and allocates outputs with stk__output. Scratch memory
 * from stk__scratch lives until the sample's chain ends.
 *
 * Readers also have `plan`: on the producer thread, before the per-sample stage, it
 * chooses which items the next `count` samples are (stk__plan_set_item), cheaply and
 * in order; the expensive loading happens in `run_sample` on the workers.
 */
#ifndef STOKER_OPS_OP_H
#define STOKER_OPS_OP_H

#include "../core/core.h"

/* A dense, row-major view of one sample. */
typedef struct {
  void *data;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  stk_dtype dtype;
  char layout[STK_MAX_LAYOUT + 1];
} stk__tensor;

typedef struct stk__node stk__node;     /* an operator instance in a built pipeline */
typedef struct stk__sample stk__sample; /* one sample's execution context */
typedef struct stk__plan stk__plan;     /* a reader's plan for the next samples */
struct stk__gpu_batch;                  /* a batch in the GPU stage (op_gpu.h) */
struct stk__gpu_fusion; /* how a GPU operator fuses with its neighbours (gpu_util.h) */
typedef struct stk__batch stk__batch; /* the samples a CPU batch operator sees at once */

typedef struct stk__op_def {
  const stk_op_schema *schema;
  /* Called once at build time after the arguments were checked against the schema:
   * check combinations, precompute, and keep state in *stk__node_state(node). */
  stk_status (*init)(stk__node *node);
  /* Frees the state made by init. May be NULL. */
  void (*destroy)(stk__node *node);
  /* Readers: choose items for plan->count new samples (see stk__plan_*). */
  stk_status (*plan)(stk__node *node, stk__plan *plan);
  /* CPU backend: process one sample. */
  stk_status (*run_sample)(stk__node *node, stk__sample *s);
  /* Readers: metadata (epoch size, shards). */
  stk_status (*reader_meta)(stk__node *node, stk_reader_meta *out);
  /* Operators with schema->num_outputs == -1: the count for this instance's args. */
  int (*num_outputs)(const stk__node *node);
  /* Mixed and GPU backends: process the whole batch on the device (see op_gpu.h). */
  stk_status (*run_gpu)(stk__node *node, struct stk__gpu_batch *batch);
  /* Mixed and GPU operators (optional): per-sample work done in the CPU stage, on the workers,
   * while the GPU stage runs earlier batches (header parsing, random draws), written to
   * a record of prep_bytes bytes that run_gpu reads back with stk__gpu_prep. A failure
   * is the sample's failure, under the bad-sample policy. Skipped when an input or a
   * guard of the node comes from a GPU operator (run_gpu then sees no record). */
  stk_status (*prepare)(stk__node *node, stk__sample *s, void *record);
  size_t prep_bytes;
  /* Mixed and GPU operators (optional): called when the pipeline is built, after init,
   * once its device is open (stk__node_gpu works): work that needs the device, whose
   * failure fails the build. */
  stk_status (*device_ready)(stk__node *node);
  /* Frees what prepare left in a record (host pool blocks) and clears it; called for
   * every record once it is no longer needed: its sample replaced or reset, or the job
   * holding it freed after its GPU work (which may read those blocks) completed. May be
   * NULL. */
  void (*prep_release)(stk__node *node, void *record);
  /* Readers: where the stream stands (producer thread, before plan): *epoch, the epoch
   * of the next item, and *left >= 1, the items that epoch still has. A batch never
   * crosses an epoch: the executor plans at most `left` items into it, so an epoch's
   * last batch may be short, and replaces a bad sample only from the same epoch. May
   * be NULL: a stream without epochs. */
  stk_status (*position)(stk__node *node, int64_t *epoch, int64_t *left);
  /* Readers (checkpoints): moves the stream to a position `position` reported, before
   * the producer starts. May be NULL: the reader cannot resume (external sources). */
  stk_status (*seek)(stk__node *node, int64_t epoch, int64_t left);
  /* GPU operators that fuse with a neighbour (resampling into crop_mirror_normalize):
   * their part of the fusion, described in gpu_util.h. May be NULL. */
  const struct stk__gpu_fusion *fusion;
  /* Readers (optional): what names item `item` for the sample cache (pipeline/cache.c),
   * appended to `id` (the same item always gives the same text: a path), and what
   * changes with its contents, appended to `stamp` (size, modification time), so a
   * changed file is a miss; and *source, what names it in error messages (as for
   * stk__sample_set_source: outliving the batch), for the samples whose reader a hit
   * skips. NULL: the cache names the item by its index. */
  stk_status (*item_identity)(stk__node *node, int64_t item, stk__strbuf *id, stk__strbuf *stamp,
                              const char **source);
  /* Batch operators (schema flag STK_OPF_BATCH), CPU backend: process the whole batch at
   * once, instead of run_sample. The executor ends the per-sample pass before the node
   * (every sample's inputs are ready), calls this on the producer thread, then starts the
   * next pass for the operators after it. Read sample j's inputs and write sample i's
   * outputs through stk__batch_sample (stk__input, stk__output and stk__scratch work on
   * those samples as in run_sample). A failure fails the batch. */
  stk_status (*run_batch)(stk__node *node, stk__batch *batch);
  /* Operators that are batch operators for some arguments only (normalize's batch=True),
   * whose schema then lacks STK_OPF_BATCH: true when this instance runs through run_batch,
   * false when through run_sample. Reads only constant arguments. May be NULL. */
  bool (*batch_when)(const stk__node *node);
} stk__op_def;

/* Argument tables: end the operator's argument enum with a count and index every entry
 * by its enum value, so the table and the enum cannot drift apart:
 *
 *   enum { A_HORIZONTAL, A_VERTICAL, A_COUNT_ };
 *   static const stk_arg_schema flip_args[] = {
 *       [A_HORIZONTAL] = {.name = "horizontal", .type = STK_ARG_INT, ...},
 *       [A_VERTICAL] = {...},
 *   };
 *   STK__CHECK_ARGS(flip_args, A_COUNT_);
 *
 * A missing middle entry leaves a nameless one, which the registry test refuses. */
#define STK__CHECK_ARGS(table, count)                                   \
  _Static_assert(sizeof(table) / sizeof((table)[0]) == (size_t)(count), \
                 #table " needs exactly one entry per argument enum value")

/* ---- the registry ---- */
size_t stk__registry_size(void);
const stk__op_def *stk__registry_at(size_t index);
const stk__op_def *stk__registry_lookup(const char *name);

/* ---- node accessors ---- */
void **stk__node_state(stk__node *node);
const char *stk__node_name(const stk__node *node);
int stk__node_num_inputs(const stk__node *node);
int stk__node_num_outputs(const stk__node *node);
/* The pipeline's settings seen by operators. */
int64_t stk__node_batch_size(const stk__node *node);
int64_t stk__node_max_pixels(const stk__node *node);
int64_t stk__node_max_file_bytes(const stk__node *node);
int stk__node_num_threads(const stk__node *node);
int64_t stk__node_seed(const stk__node *node);  /* pipeline seed (never -1) */
int stk__node_device_id(const stk__node *node); /* the pipeline's device_id setting */
/* Mixed decoders: host memory from the pipeline's pool (page-locked in GPU pipelines,
 * so uploads from it are asynchronous), freed with stk__node_pool_free; the automatic
 * host-decoding share (the executor's balance runs only for nodes that request it, and
 * the quota is the samples per batch it currently gives them); and the count of samples
 * decoded on the host and uploaded (stk_stats.host_decoded). */
void *stk__node_pool_alloc(stk__node *node, size_t bytes);
void stk__node_pool_free(void *block);
void stk__node_request_host_balance(stk__node *node);
int stk__node_host_decode_quota(const stk__node *node);
void stk__node_count_host_decoded(stk__node *node, int64_t count);
/* Mixed decoders: samples of a batch decoded by stoker's own GPU JPEG decoder, and the
 * share of the samples it could take that it got (stk_decoder_diagnostics). */
void stk__node_count_own_decoded(stk__node *node, int64_t count, double share);
/* Readers, at build: whether the pipeline skips bad data (on_error="skip"), and a file
 * left out under it, counted in stk_stats.skipped_files; the message (naming the file)
 * is printed as a warning and the first ones are kept (stk_pipeline_skipped_file). */
bool stk__node_skips_bad_data(const stk__node *node);
void stk__node_skip_file(stk__node *node, const char *message);

/* ---- arguments ----
 * `arg` is the index of the argument in the operator's schema (operators keep an enum
 * parallel to their schema table). Scalar getters read the constant value, the default,
 * or — when the argument is fed by a node — the value of sample `s` (s may be NULL only
 * for arguments that cannot be fed per sample). Reading an argument that has neither a
 * value nor a default is a programming error caught at build time by the
 * STK_ARGF_REQUIRED flag. */
bool stk__arg_given(const stk__node *node, int arg); /* set explicitly (or fed) */
bool stk__arg_is_fed(const stk__node *node, int arg);
/* The element type of the tensor feeding `arg` for sample `s`; STK_DTYPE_COUNT when the
 * argument is not fed (or s is NULL). */
stk_dtype stk__arg_fed_dtype(const stk__node *node, const stk__sample *s, int arg);
bool stk__arg_bool(const stk__node *node, const stk__sample *s, int arg);
int64_t stk__arg_int(const stk__node *node, const stk__sample *s, int arg);
double stk__arg_float(const stk__node *node, const stk__sample *s, int arg);
const char *stk__arg_string(const stk__node *node, int arg);
/* Lists: number of values, *out points to them (valid during the sample). A per-sample
 * feed gives the fed tensor's elements, converted. */
size_t stk__arg_ints(const stk__node *node, const stk__sample *s, int arg, const int64_t **out);
size_t stk__arg_floats(const stk__node *node, const stk__sample *s, int arg, const double **out);
size_t stk__arg_strings(const stk__node *node, int arg, const char *const **out);

/* ---- the sample context ---- */
const stk__tensor *stk__input(const stk__sample *s, int index);
/* Allocates output `index` of the running node with the given shape; the memory is
 * uninitialised. `layout` may be NULL. */
stk_status stk__output(stk__sample *s, int index, stk_dtype dtype, int ndim, const int64_t *shape,
                       const char *layout, stk__tensor **out);
/* Scratch memory living until the sample's chain ends (64-byte aligned). */
void *stk__scratch(stk__sample *s, size_t bytes);
/* The random stream of this node for this sample (same on every backend). */
void stk__sample_rng(const stk__node *node, const stk__sample *s, stk__philox *g);
/* The position of the sample in its batch. */
size_t stk__sample_index(const stk__sample *s);
/* The global ordinal of the sample in the pipeline's stream. */
int64_t stk__sample_ordinal(const stk__sample *s);
/* The item the reader planned for this sample (see stk__plan_set_item). */
int64_t stk__sample_item(const stk__sample *s, const stk__node *reader);
/* Names the sample's origin (a file path) for error messages; the string must outlive
 * the batch (readers point into their file lists). */
void stk__sample_set_source(stk__sample *s, const char *source);
const char *stk__sample_source(const stk__sample *s);

/* ---- batch operators (stk__op_def.run_batch) ----
 * The samples of the batch that take the operator's conditional branch (all of them
 * outside conditionals), in batch order. */
size_t stk__batch_size(const stk__batch *b);
stk__sample *stk__batch_sample(const stk__batch *b, size_t i);
/* The node's random stream for a whole batch, keyed by its first sample (`first`; the
 * GPU backend passes stk__gpu_sample(b, 0)), apart from every per-sample stream: draws
 * made once per batch give the same values on every backend and thread count. */
void stk__batch_rng(const stk__node *node, const stk__sample *first, stk__philox *g);

/* ---- reader plans ---- */
struct stk__plan {
  int64_t count;   /* samples to plan */
  int64_t *items_; /* executor-owned: where stk__plan_set_item writes */
};
void stk__plan_set_item(stk__plan *plan, int64_t i, int64_t item);

/* Standard argument helpers shared by operators. */
/* Parses a dtype argument string (the schema's choices guarantee it is valid). */
stk_dtype stk__dtype_arg(const char *name);

#endif /* STOKER_OPS_OP_H */
