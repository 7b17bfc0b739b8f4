/*
 * stoker — a data loading and augmentation engine for deep learning training.
 *
 * This is the whole public C API. Names are prefixed `stk_` (functions and types) and
 * `STK_` (macros and enum values). Objects with state are opaque handles created with
 * `stk_<object>_create` and destroyed with `stk_<object>_destroy`; destroying NULL does
 * nothing.
 *
 * Errors: every fallible function returns an `stk_status`. On failure, a message that
 * names the function first and then the culprit (file, sample, argument) is kept in a
 * buffer local to the calling thread; read it with `stk_last_error()`. Nothing in the
 * library aborts the process.
 *
 * Threads: unless a function says otherwise, one handle must not be used from two
 * threads at once; different handles may be used concurrently. The registry functions
 * and the status/dtype helpers are thread-safe.
 */
#ifndef STOKER_STOKER_H
#define STOKER_STOKER_H

#include <stddef.h>
#include <stdint.h>

#include "stoker/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define STK_API __declspec(dllexport)
#else
#define STK_API __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------------------ */
/* Version                                                                              */
/* ------------------------------------------------------------------------------------ */

/* The library's version as MAJOR*10000 + MINOR*100 + PATCH. */
STK_API int stk_version(void);
/* The library's version as "MAJOR.MINOR.PATCH"; a static string. */
STK_API const char *stk_version_string(void);

/* ------------------------------------------------------------------------------------ */
/* Status codes and error messages                                                      */
/* ------------------------------------------------------------------------------------ */

/* X(name, value, description): the one table all status helpers are generated from. */
#define STK_STATUS_MAP(X)                                         \
  X(OK, 0, "success")                                             \
  X(ERR_INVALID_ARGUMENT, 1, "invalid argument")                  \
  X(ERR_OUT_OF_MEMORY, 2, "out of memory")                        \
  X(ERR_IO, 3, "input/output error")                              \
  X(ERR_DECODE, 4, "corrupt or undecodable data")                 \
  X(ERR_UNSUPPORTED, 5, "unsupported operation or format")        \
  X(ERR_NOT_FOUND, 6, "not found")                                \
  X(ERR_STATE, 7, "call not valid in the object's current state") \
  X(ERR_DEVICE, 8, "device (CUDA) error or no usable device")     \
  X(ERR_LIMIT, 9, "input exceeds a configured limit")             \
  X(ERR_PARSE, 10, "syntax error in pipeline text")               \
  X(ERR_INTERNAL, 11, "internal error")

typedef enum {
#define STK__STATUS_ENUM(name, value, desc) STK_##name = value,
  STK_STATUS_MAP(STK__STATUS_ENUM)
#undef STK__STATUS_ENUM
} stk_status;

/* "STK_ERR_IO" for STK_ERR_IO; "STK_UNKNOWN" for values outside the table. Static. */
STK_API const char *stk_status_name(stk_status status);
/* A short description of the status; static. */
STK_API const char *stk_status_str(stk_status status);
/* The message of the last failure in the calling thread ("" if none). The pointer stays
 * valid until the next stoker call in this thread. */
STK_API const char *stk_last_error(void);
/* Forget the calling thread's last message. */
STK_API void stk_clear_error(void);
/* Free memory that a stoker function handed to the caller (text forms, JSON). */
STK_API void stk_free(void *ptr);

/* ------------------------------------------------------------------------------------ */
/* Data types, layouts, storage                                                         */
/* ------------------------------------------------------------------------------------ */

#define STK_DTYPE_MAP(X)       \
  X(UINT8, 0, "uint8", 1)      \
  X(INT8, 1, "int8", 1)        \
  X(UINT16, 2, "uint16", 2)    \
  X(INT16, 3, "int16", 2)      \
  X(UINT32, 4, "uint32", 4)    \
  X(INT32, 5, "int32", 4)      \
  X(UINT64, 6, "uint64", 8)    \
  X(INT64, 7, "int64", 8)      \
  X(FLOAT16, 8, "float16", 2)  \
  X(FLOAT32, 9, "float32", 4)  \
  X(FLOAT64, 10, "float64", 8) \
  X(BOOL, 11, "bool", 1)

typedef enum {
#define STK__DTYPE_ENUM(name, value, text, size) STK_DTYPE_##name = value,
  STK_DTYPE_MAP(STK__DTYPE_ENUM)
#undef STK__DTYPE_ENUM
      STK_DTYPE_COUNT
} stk_dtype;

/* Bytes per element (0 for an invalid dtype). */
STK_API size_t stk_dtype_size(stk_dtype dtype);
/* "uint8", "float32", ...; NULL for an invalid dtype. */
STK_API const char *stk_dtype_name(stk_dtype dtype);
/* Parses a dtype name ("uint8", "float", "float32", "half", "float16", "int32", ...). */
STK_API stk_status stk_dtype_from_name(const char *name, stk_dtype *out);

/* Where a tensor list's memory lives. */
typedef enum {
  STK_STORAGE_HOST = 0,   /* pageable host memory */
  STK_STORAGE_PINNED = 1, /* page-locked host memory (CUDA builds) */
  STK_STORAGE_DEVICE = 2  /* GPU memory */
} stk_storage;

/* Devices an operator instance may run on (bit flags in schemas). */
typedef enum { STK_DEVICE_CPU = 1, STK_DEVICE_MIXED = 2, STK_DEVICE_GPU = 4 } stk_device;

#define STK_MAX_NDIM   8
#define STK_MAX_LAYOUT 8

/* One sample of a tensor list, described in plain data. Strides are in bytes. */
typedef struct {
  void *data;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  int64_t strides[STK_MAX_NDIM];
  stk_dtype dtype;
  char layout[STK_MAX_LAYOUT + 1]; /* "HWC", "CHW", "" when unknown */
} stk_tensor_desc;

/* ------------------------------------------------------------------------------------ */
/* Tensor lists: one output of one batch                                                */
/* ------------------------------------------------------------------------------------ */

/* A batch of samples with one dtype, one layout and per-sample shapes. Reference
 * counted: the memory returns to the pipeline's pools when the last reference is gone.
 * Retain/release are thread-safe; a tensor list may outlive its pipeline. */
typedef struct stk_tensor_list stk_tensor_list;

STK_API void stk_tensor_list_retain(stk_tensor_list *tl);
STK_API void stk_tensor_list_release(stk_tensor_list *tl);
STK_API size_t stk_tensor_list_num_samples(const stk_tensor_list *tl);
STK_API stk_dtype stk_tensor_list_dtype(const stk_tensor_list *tl);
/* The layout string ("HWC", "CHW", "" when none); static for the list's lifetime. */
STK_API const char *stk_tensor_list_layout(const stk_tensor_list *tl);
STK_API stk_storage stk_tensor_list_storage(const stk_tensor_list *tl);
/* The CUDA device of DEVICE/PINNED storage, -1 for host memory. */
STK_API int stk_tensor_list_device_id(const stk_tensor_list *tl);
/* Number of dimensions of every sample. */
STK_API int stk_tensor_list_ndim(const stk_tensor_list *tl);
/* Fills `out` with sample `index`. Fails with STK_ERR_INVALID_ARGUMENT out of range. */
STK_API stk_status stk_tensor_list_sample(const stk_tensor_list *tl, size_t index,
                                          stk_tensor_desc *out);
/* Non-zero when all samples have one shape and lie back to back in one buffer, so the
 * list is one dense tensor of shape [N, *sample_shape]; then `stk_tensor_list_data`
 * returns its start. Returns NULL for a non-dense list. */
STK_API int stk_tensor_list_is_dense(const stk_tensor_list *tl);
STK_API void *stk_tensor_list_data(const stk_tensor_list *tl);
/* For GPU lists: the CUDA event (cudaEvent_t) recorded after the producer's last kernel
 * writing this list, NULL when none is needed. Consumers make their stream wait on it. */
STK_API void *stk_tensor_list_ready_event(const stk_tensor_list *tl);
/* For GPU lists handed to a consumer (DLPack `stream`): makes the consumer's CUDA stream
 * (a cudaStream_t as an integer) wait for the list to be ready, and makes the release
 * of the list wait for that stream, so its memory is reused only after the consumer's
 * work queued before the release. A no-op for host lists. */
STK_API stk_status stk_tensor_list_set_consumer_stream(stk_tensor_list *tl, uintptr_t stream);
/* A host copy of any list (device lists are copied after their ready event); the caller
 * releases it. */
STK_API stk_status stk_tensor_list_to_host(const stk_tensor_list *tl, stk_tensor_list **out);
/* Copies samples [first, first + count) back to back into `dst`, which holds `dst_bytes`
 * (host memory, or for device lists device or host memory: CUDA's unified addressing
 * decides). Device lists: the copy is queued on `stream` (0: the library's own copy
 * stream) after the producer's last kernel; with `blocking` the call returns once it is
 * done. STK_ERR_INVALID_ARGUMENT names the sizes when `dst` is too small. */
STK_API stk_status stk_tensor_list_copy_out(const stk_tensor_list *tl, size_t first, size_t count,
                                            void *dst, size_t dst_bytes, uintptr_t stream,
                                            int blocking);

/* ------------------------------------------------------------------------------------ */
/* Operator registry (introspection)                                                    */
/* ------------------------------------------------------------------------------------ */

typedef enum {
  STK_ARG_BOOL = 0,
  STK_ARG_INT = 1,
  STK_ARG_FLOAT = 2,
  STK_ARG_STRING = 3,
  STK_ARG_INTS = 4,
  STK_ARG_FLOATS = 5,
  STK_ARG_STRINGS = 6
} stk_arg_type;

/* Argument flags. */
#define STK_ARGF_REQUIRED   1u /* must be given */
#define STK_ARGF_PER_SAMPLE 2u /* may be fed per sample by another node's output */
#define STK_ARGF_RANGE      4u /* numeric values must lie in [min, max] */

typedef struct {
  const char *name;
  stk_arg_type type;
  unsigned flags;
  const char *default_text; /* default in text form ("0.5", "[0.08, 1.0]", "\"RGB\""), or
                               NULL when the argument has no default */
  double min, max;          /* meaningful with STK_ARGF_RANGE */
  const char *choices;      /* for strings: allowed values separated by '|', or NULL */
  const char *doc;
} stk_arg_schema;

typedef struct {
  const char *name;
  const char *doc;
} stk_port_schema;

/* Operator flags. */
#define STK_OPF_READER          1u /* a data source; has an epoch size */
#define STK_OPF_RANDOM          2u /* draws random numbers (keyed by seed + instance) */
#define STK_OPF_NO_INPUT        4u /* takes no data inputs */
/* Merges conditional branches: inputs after the first may have no value for a sample
 * (the branches it did not take). */
#define STK_OPF_MERGES_BRANCHES 8u
/* Works on the whole batch at once (output sample i may read input sample j): the CPU
 * executor runs it between per-sample passes (a batch barrier). */
#define STK_OPF_BATCH           16u
/* Its GPU form is its CPU form with the outputs moved to the device: on device "gpu" it
 * runs in the CPU stage and each output is uploaded (a `copy` on the GPU), the same
 * values as on the CPU (random sources: DALI runs them on the GPU). */
#define STK_OPF_GPU_ON_HOST     32u

typedef struct {
  const char *name; /* dotted name, e.g. "decoders.image", "readers.file", "resize" */
  const char *doc;
  unsigned devices; /* STK_DEVICE_* bits */
  unsigned flags;   /* STK_OPF_* bits */
  int min_inputs, max_inputs;
  const stk_port_schema *inputs;  /* max_inputs entries (names of the positional inputs) */
  int num_outputs;                /* -1: decided by the arguments (see doc) */
  const stk_port_schema *outputs; /* num_outputs entries, or one describing them all */
  int num_args;
  const stk_arg_schema *args;
  /* Operators with a GPU backend: the CPU/GPU parity check run by the test suite, in the
   * text form (docs/text-form.md, "GPU parity checks"); NULL for CPU-only operators. */
  const char *gpu_check;
} stk_op_schema;

/* The number of registered operators. */
STK_API size_t stk_registry_count(void);
/* Operator `index` (0 <= index < count), NULL out of range; static. */
STK_API const stk_op_schema *stk_registry_get(size_t index);
/* The operator with this name, NULL if none; static. */
STK_API const stk_op_schema *stk_registry_find(const char *name);

/* ------------------------------------------------------------------------------------ */
/* Operator instances                                                                   */
/* ------------------------------------------------------------------------------------ */

/* One operator call in a pipeline: a schema, a device, named data inputs (edges), named
 * outputs, argument values, and arguments fed per sample by edges. Values are checked
 * against the schema when set (type, range, choices) and again when the pipeline is
 * built (required arguments, edges). */
typedef struct stk_op stk_op;

/* `device` is "cpu", "mixed" or "gpu" (NULL means "cpu"). Fails with
 * STK_ERR_NOT_FOUND for an unknown operator, STK_ERR_UNSUPPORTED for a device the
 * operator does not have. The caller destroys the op with stk_op_destroy. */
STK_API stk_status stk_op_create(const char *schema_name, const char *device, stk_op **out);
STK_API void stk_op_destroy(stk_op *op);
/* The instance name (used for reader metadata, timing tables and RNG keys). */
STK_API stk_status stk_op_set_name(stk_op *op, const char *instance_name);
STK_API stk_status stk_op_add_input(stk_op *op, const char *edge);
STK_API stk_status stk_op_add_output(stk_op *op, const char *edge);
STK_API stk_status stk_op_set_bool(stk_op *op, const char *arg, int value);
STK_API stk_status stk_op_set_int(stk_op *op, const char *arg, int64_t value);
STK_API stk_status stk_op_set_float(stk_op *op, const char *arg, double value);
STK_API stk_status stk_op_set_string(stk_op *op, const char *arg, const char *value);
STK_API stk_status stk_op_set_ints(stk_op *op, const char *arg, const int64_t *values,
                                   size_t count);
STK_API stk_status stk_op_set_floats(stk_op *op, const char *arg, const double *values,
                                     size_t count);
STK_API stk_status stk_op_set_strings(stk_op *op, const char *arg, const char *const *values,
                                      size_t count);
/* Feed argument `arg` per sample from `edge` (the argument must allow it). */
STK_API stk_status stk_op_set_arg_input(stk_op *op, const char *arg, const char *edge);
/* Conditional execution: run this operator only for the samples whose value of `edge`
 * (a scalar per sample: bool or integer) equals `value`. Several guards must all hold
 * (nested conditions). The other samples get no value for its outputs; a "select"
 * operator merges branches back per sample (select(index, v0, v1, ...) takes v[index]),
 * without copying. Samples are never copied or reordered to split a batch. */
STK_API stk_status stk_op_add_guard(stk_op *op, const char *edge, int64_t value);

/* ------------------------------------------------------------------------------------ */
/* Pipelines                                                                            */
/* ------------------------------------------------------------------------------------ */

typedef struct stk_pipeline stk_pipeline;

/* Settings, set with stk_pipeline_set before stk_pipeline_build. */
typedef enum {
  STK_PIPE_BATCH_SIZE = 0,           /* samples per batch; default 1; >= 1 */
  STK_PIPE_NUM_THREADS = 1,          /* CPU worker threads; default 1; >= 1 */
  STK_PIPE_SEED = 2,                 /* random seed; default -1 (fixed default seed) */
  STK_PIPE_PREFETCH_QUEUE_DEPTH = 3, /* batches produced ahead; default 2; >= 1 */
  STK_PIPE_DEVICE_ID = 4,            /* CUDA device, -1 for CPU only; default -1 */
  STK_PIPE_ON_ERROR = 5,             /* STK_ON_ERROR_FAIL (default) or STK_ON_ERROR_SKIP */
  STK_PIPE_MAX_IMAGE_PIXELS = 6,     /* decoders refuse larger images, and every operator
                                        refuses an image output (layout HWC, CHW, HW)
                                        with more pixels; default 2^26 (8192 x 8192) */
  STK_PIPE_MAX_FILE_BYTES = 7,       /* readers refuse larger files, records and tar
                                        members; default 2^28 (256 MiB) */
  STK_PIPE_EXEC_ASYNC = 8,           /* 1: produce on a background thread (default) */
  /* The bound, in milliseconds, of every wait on the device, on nvJPEG and on another
   * stage; default 300000 (5 minutes), 1 .. 86400000. When stk_pipeline_run has waited
   * this long for a batch, or a wait on the device inside a stage passes it, the run
   * fails with STK_ERR_DEVICE (a GPU stage) or STK_ERR_INTERNAL, naming the stage, the
   * batch and what it waited for, and every later run fails the same way;
   * stk_pipeline_destroy then returns within about this bound (a stage thread stuck
   * inside a driver or nvJPEG call is left running and its pipeline's memory is kept,
   * since freeing it under that thread would crash the process). Waiting for an
   * external source's data (stk_pipeline_feed) is not bounded: that is the caller's. */
  STK_PIPE_TIMEOUT_MS = 9,
  STK_PIPE_MAX_BATCH_BYTES = 10, /* bound on a batch's memory: each sample's outputs held
                                   by the batch may take max_batch_bytes / batch_size
                                   bytes (STK_ERR_LIMIT beyond); default 2^31 */
  STK_PIPE_SETTING_COUNT
} stk_pipeline_setting;

#define STK_ON_ERROR_FAIL 0
#define STK_ON_ERROR_SKIP 1

/* A pipeline's outputs for one batch: one tensor list per output. Release with
 * stk_batch_release; keep a single output longer with stk_tensor_list_retain. */
typedef struct stk_batch stk_batch;

typedef struct {
  int64_t epoch_size;        /* samples in the whole data set */
  int64_t epoch_size_padded; /* as DALI: with pad_last_batch, num_shards times the
                              * largest shard (every shard padded to it); else
                              * epoch_size. The reader also pads each shard's epoch to a
                              * whole number of batches. */
  int64_t shard_size;        /* samples in this shard without padding */
  int64_t shard_id;
  int64_t number_of_shards;
  int pad_last_batch;
  int stick_to_shard;
} stk_reader_meta;

/* A pipeline's counters. The caller sets struct_size = sizeof(stk_stats) before the
 * call: later versions only add fields at the end and fill as many as the caller's size
 * holds, so programs built against this header keep working. */
typedef struct {
  size_t struct_size;
  int64_t batches;           /* batches handed out by stk_pipeline_run */
  int64_t samples;           /* samples in them */
  int64_t skipped;           /* bad samples skipped under STK_ON_ERROR_SKIP, in the
                              * batches handed out so far: each bad sample once per
                              * epoch (stk_pipeline_skipped_sample names the first) */
  int64_t host_bytes_in_use; /* pooled host memory held by live batches */
  int64_t host_bytes_cached; /* pooled host memory kept free for reuse */
  int64_t host_bytes_peak;   /* high-water mark of in_use + cached */
  int64_t device_bytes_in_use;
  int64_t device_bytes_cached;
  /* Where the time goes (nanoseconds since build, for profiling the stages):
   * the producer in the CPU stage (readers and CPU operators of whole batches), the
   * producer blocked on a full prefetch queue, the GPU stage's thread issuing a batch,
   * that thread idle waiting for the CPU stage, and stk_pipeline_run waiting. */
  int64_t cpu_stage_ns, producer_blocked_ns, gpu_stage_ns, gpu_idle_ns, consumer_wait_ns;
  /* When the mixed decoders run on their own thread, one batch ahead of the GPU stage's
   * thread (pipelines with GPU operators after them): that thread's busy time. */
  int64_t decode_stage_ns;
  /* Mixed decoders: samples decoded by libjpeg-turbo in the CPU stage and uploaded (the
   * cpu_decoder_load share, and files nvJPEG does not take). */
  int64_t host_decoded;
  /* The sample cache ("cache" operators, all of them together): samples found (their
   * prefix skipped) and not found, in batches made so far (prefetched ones included); the
   * bytes and samples held (in memory, or the files on disk); samples evicted or not
   * stored because they did not fit capacity_bytes. */
  int64_t cache_hits, cache_misses, cache_bytes, cache_entries, cache_dropped;
  /* Files (shards, TFRecord files) a reader left out when it was built, under
   * STK_ON_ERROR_SKIP, because they could not be opened, sized or indexed (a missing or
   * forbidden object, a server failing after every retry); stk_pipeline_skipped_file
   * names the first. Their samples are in no epoch. */
  int64_t skipped_files;
} stk_stats;

/* The GPU decoders' instrumentation, for profiling them (what a user tunes with
 * hw_decoder_load / cpu_decoder_load); struct_size as in stk_stats. These fields follow
 * the decoder's implementation and may change between versions. */
typedef struct {
  size_t struct_size;
  /* Inside the GPU stage's decoding (host time): parsing headers on the decode threads,
   * the hardware engines' batch (decode_fence_ns of it: waiting until their destinations
   * are idle), and waiting for the decode threads' hybrid-path samples after it. Inside
   * decode_stage_ns when the decoders have their own thread, else inside gpu_stage_ns. */
  int64_t decode_parse_ns, decode_fence_ns, decode_hw_call_ns, decode_hybrid_wait_ns;
  /* The hardware engines' share of the samples they accept, in the last batch decoded:
   * hw_decoder_load, or where the automatic split (the default) has settled. */
  double decode_hw_share;
  /* Pipelines with GPU operators page-lock their host pool's blocks (faster nvJPEG calls
   * and uploads): blocks pinned so far, and blocks left pageable because pinning failed. */
  int64_t host_blocks_pinned, host_pin_failures;
  /* The automatic cpu_decoder_load's current samples per batch (0 when none is automatic). */
  int64_t host_decode_quota;
  /* stoker's own GPU JPEG decoder (gpu_decoder_load): samples it decoded so far, and its
   * share of the last batch's samples it could take (the automatic share's setting). */
  int64_t own_decoded;
  double own_share;
} stk_decoder_diagnostics;

STK_API stk_status stk_pipeline_create(stk_pipeline **out);
/* Stops the producer, waits for it and frees everything the pipeline owns. Tensor lists
 * still referenced by the caller stay valid. */
STK_API void stk_pipeline_destroy(stk_pipeline *p);
/* The one checked setter for pipeline settings. */
STK_API stk_status stk_pipeline_set(stk_pipeline *p, stk_pipeline_setting key, int64_t value);
STK_API stk_status stk_pipeline_get(const stk_pipeline *p, stk_pipeline_setting key,
                                    int64_t *value);
/* Appends a copy of `op` to the graph (the caller still owns `op`). Fails if an output
 * edge name is already produced by another operator. */
STK_API stk_status stk_pipeline_add_op(stk_pipeline *p, const stk_op *op);
/* Which edges the pipeline returns, in order. */
STK_API stk_status stk_pipeline_set_outputs(stk_pipeline *p, const char *const *edges,
                                            size_t count);
/* Validates the graph (edges, arguments, devices), places operators, opens readers and
 * starts the producer. */
STK_API stk_status stk_pipeline_build(stk_pipeline *p);
/* Returns the next batch, in order. Readers wrap around at the end of an epoch; use
 * the reader metadata to count epochs. The caller releases the batch. */
STK_API stk_status stk_pipeline_run(stk_pipeline *p, stk_batch **out);
STK_API stk_status stk_pipeline_epoch_size(stk_pipeline *p, const char *reader_name, int64_t *out);
STK_API stk_status stk_pipeline_reader_meta(stk_pipeline *p, const char *reader_name,
                                            stk_reader_meta *out);
/* Fills *out (out->struct_size set by the caller; STK_ERR_INVALID_ARGUMENT when it is
 * smaller than the first version's struct). */
STK_API stk_status stk_pipeline_stats(stk_pipeline *p, stk_stats *out);
/* Fills *out (out->struct_size set by the caller), zeros without a GPU. */
STK_API stk_status stk_pipeline_decoder_diagnostics(stk_pipeline *p, stk_decoder_diagnostics *out);
/* Checkpoints: the pipeline's state after the last batch stk_pipeline_run returned
 * (before the first: the start), as text (*out, the caller frees it with stk_free). A
 * pipeline built alike and given it with stk_pipeline_restore before its build goes on
 * with the same batches: the readers' positions (epoch and place in it) and the random
 * streams (keyed by each sample's ordinal) are all there is. External sources cannot
 * resume: feed them from where the checkpoint was taken. Call from the thread that
 * calls stk_pipeline_run. */
STK_API stk_status stk_pipeline_checkpoint(stk_pipeline *p, char **out);
/* Resumes from `checkpoint` (copied) when the pipeline is built; build fails, naming the
 * reader, when it does not fit (another reader name or data set size). */
STK_API stk_status stk_pipeline_restore(stk_pipeline *p, const char *checkpoint);

/* How many skipped samples' messages a pipeline keeps (the first ones). */
#define STK_SKIP_MESSAGES_KEPT 16
/* The message of skipped sample `index` (0: the first skipped), naming the operator and
 * the sample's file; *out is a copy the caller frees with stk_free. STK_ERR_NOT_FOUND
 * past the ones kept. Thread-safe. */
STK_API stk_status stk_pipeline_skipped_sample(stk_pipeline *p, size_t index, char **out);
/* The message of skipped file `index` (stk_stats.skipped_files; 0: the first), naming
 * the reader, the file and why; as stk_pipeline_skipped_sample. */
STK_API stk_status stk_pipeline_skipped_file(stk_pipeline *p, size_t index, char **out);
/* Time spent in operator instance `index` (graph order) in nanoseconds, summed over
 * threads, and its instance name (valid while the pipeline lives). */
STK_API size_t stk_pipeline_num_ops(const stk_pipeline *p);
STK_API stk_status stk_pipeline_op_time(stk_pipeline *p, size_t index, const char **name,
                                        int64_t *nanoseconds);

/* The pipeline's text form (settings, one operator call per line, outputs). The caller
 * frees the string with stk_free. */
STK_API stk_status stk_pipeline_to_text(const stk_pipeline *p, char **out);
/* Builds an unbuilt pipeline from text; see docs/text-form.md. Errors name the line. */
STK_API stk_status stk_pipeline_from_text(const char *text, stk_pipeline **out);

/* ---- data and functions from the host program (external_source, python_function) ---- */

/* Queues one batch of samples for the "external_source" operator instance named
 * `op_name`. The samples are copied (the caller keeps its memory); all must share
 * dtype and ndim; `count` may be 1 to the batch size (the pipeline's batch is then as
 * small). Batches are consumed in order, one per pipeline batch; the producer waits for
 * data when the queue is empty. Thread-safe with respect to stk_pipeline_run. */
STK_API stk_status stk_pipeline_feed(stk_pipeline *p, const char *op_name,
                                     const stk_tensor_desc *samples, size_t count);
/* Makes the producer give up waiting for external data: the pending and every later
 * stk_pipeline_run fails with STK_ERR_STATE ("external source exhausted") once queued
 * batches are used up. Cleared by the next stk_pipeline_feed. */
STK_API stk_status stk_pipeline_feed_end(stk_pipeline *p, const char *op_name);

/* One call of a host function ("python_function" operator): one sample, or a batch (see
 * stk_host_call_batch_size). */
typedef struct stk_host_call stk_host_call;
/* Called on a worker thread for each sample (or once per batch, below); returns STK_OK or
 * an error status (set a message with stk_host_call_fail). */
typedef stk_status (*stk_host_fn)(void *user, stk_host_call *call);

STK_API size_t stk_host_call_num_inputs(const stk_host_call *call);
STK_API stk_status stk_host_call_input(const stk_host_call *call, size_t index,
                                       stk_tensor_desc *out);
/* Allocates output `index` of the call; *data receives the (dense) buffer to fill. */
STK_API stk_status stk_host_call_output(stk_host_call *call, size_t index, stk_dtype dtype,
                                        int ndim, const int64_t *shape, const char *layout,
                                        void **data);
STK_API int64_t stk_host_call_ordinal(const stk_host_call *call);
/* Records an error message for the failing call (the executor adds the sample). */
STK_API stk_status stk_host_call_fail(stk_host_call *call, const char *message);

/* Batch calls: instances with batch_processing=true on the CPU, and every call of an
 * instance on the GPU, cover the batch's samples that reach the operator (those taking
 * its conditional branch) in one call, on the producer thread (CPU) or the GPU stage's
 * thread (GPU). The number of samples of a batch call; 0 for a per-sample call. */
STK_API size_t stk_host_call_batch_size(const stk_host_call *call);
/* -1 when the call's data is in host memory; else the CUDA device holding the inputs and
 * receiving the outputs (GPU instances). */
STK_API int stk_host_call_device(const stk_host_call *call);
/* The pipeline's CUDA stream (a cudaStream_t as an integer) for device calls, 0 else.
 * Work the function queues on it is ordered before the outputs' copies. */
STK_API uintptr_t stk_host_call_stream(const stk_host_call *call);
/* Input `index` of sample `sample` of a batch call (host memory, or device memory for
 * device calls); per-sample calls take sample 0. */
STK_API stk_status stk_host_call_sample_input(const stk_host_call *call, size_t sample,
                                              size_t index, stk_tensor_desc *out);
/* Device calls: input `index` as a device tensor list, borrowed for the call (retain it to
 * keep it); NULL for host calls. */
STK_API stk_tensor_list *stk_host_call_input_list(const stk_host_call *call, size_t index);
/* Host calls: allocates output `index` of sample `sample` (per-sample calls: 0). */
STK_API stk_status stk_host_call_sample_output(stk_host_call *call, size_t sample, size_t index,
                                               stk_dtype dtype, int ndim, const int64_t *shape,
                                               const char *layout, void **data);
/* Device calls: output `index` for the whole batch, copied from `count` (the batch size)
 * samples in device memory (any device-accessible memory: CUDA's unified addressing
 * decides) on the call's stream; returns once the copies are done, so the caller may
 * free the sources. All samples share dtype and ndim; strides must be dense (C order). */
STK_API stk_status stk_host_call_set_device_output(stk_host_call *call, size_t index,
                                                   const stk_tensor_desc *samples, size_t count,
                                                   const char *layout);
/* Attaches `fn` to the "python_function" instance named `op_name` before build.
 * `free_user` (may be NULL) is called on `user` when the pipeline is destroyed. */
STK_API stk_status stk_pipeline_set_host_function(stk_pipeline *p, const char *op_name,
                                                  stk_host_fn fn, void *user,
                                                  void (*free_user)(void *));

STK_API size_t stk_batch_num_outputs(const stk_batch *b);
/* Output `index`, borrowed: valid until stk_batch_release unless retained. */
STK_API stk_tensor_list *stk_batch_output(const stk_batch *b, size_t index);
/* The reader epoch the batch belongs to (the pipeline's first reader; -1 without one).
 * A batch never holds samples of two epochs. */
STK_API int64_t stk_batch_epoch(const stk_batch *b);
/* 1 when the batch is the last of its epoch: the next batch starts the next epoch. The
 * last batch may be shorter than the batch size (an epoch that does not divide into
 * whole batches, or samples skipped under STK_ON_ERROR_SKIP); it may even be empty,
 * when every sample left in the epoch was bad. */
STK_API int stk_batch_ends_epoch(const stk_batch *b);
STK_API void stk_batch_release(stk_batch *b);

#ifdef __cplusplus
}
#endif
#endif /* STOKER_STOKER_H */
