/*
 * What the dataset readers (webdataset, tfrecord, numpy) share: the DALI reader
 * arguments for sharding, padding and shuffling, and the sampler built from them
 * (io/sampler.h). A reader puts STK__READER_COMMON_ARGS at the end of its argument
 * table and passes the index of the first one as `base`.
 */
#ifndef STOKER_OPS_READER_COMMON_H
#define STOKER_OPS_READER_COMMON_H

#include "../io/fileset.h"
#include "../io/remote.h"
#include "../io/sampler.h"
#include "op.h"

/* Offsets of the common arguments from `base`, in table order. */
enum {
  STK__RA_SHARD_ID,
  STK__RA_NUM_SHARDS,
  STK__RA_STICK_TO_SHARD,
  STK__RA_PAD_LAST_BATCH,
  STK__RA_RANDOM_SHUFFLE,
  STK__RA_INITIAL_FILL,
  STK__RA_SHUFFLE_AFTER_EPOCH,
  STK__RA_SEED,
  STK__RA_PREFETCH_QUEUE_DEPTH,
  STK__RA_DONT_USE_MMAP,
  STK__RA_READ_AHEAD,
  STK__RA_LAZY_INIT,
  STK__RA_SKIP_CACHED_IMAGES,
  STK__RA_TENSOR_INIT_BYTES,
  STK__RA_SHUFFLE_AFTER_EPOCH_SEED,
  STK__RA_COUNT
};

#define STK__READER_COMPAT "Accepted for DALI compatibility; no effect."

/* The sampling arguments' documentation, shared by every reader (io/sampler.h). */
#define STK__RANDOM_SHUFFLE_DOC                                                             \
  "Every epoch is a new uniform permutation of the whole data set, drawn from (seed, "      \
  "epoch) before sharding, so the shards of an epoch are disjoint and cover it; without a " \
  "seed the pipeline seed also reorders each shard's part. With streaming, the file order " \
  "is permuted and a buffer of initial_fill samples mixes within the epoch."
#define STK__INITIAL_FILL_DOC                                                            \
  "With streaming and random_shuffle: the shuffle buffer's size (capped at the epoch's " \
  "length; a sample moves at most this many places). Random-access readers shuffle the " \
  "whole data set and do not need it."
#define STK__SHUFFLE_AFTER_EPOCH_DOC                                                      \
  "A new permutation of the whole data set every epoch (the first included), drawn from " \
  "(seed, epoch) only: the same on every shard and for every pipeline seed; excludes "    \
  "random_shuffle."
#define STK__SHUFFLE_AFTER_EPOCH_SEED_DOC                                                 \
  "With shuffle_after_epoch: the key of the epoch permutations in place of seed (DALI's " \
  "name; -1: seed's). The same on every shard."
#define STK__READER_SEED_DOC                                                            \
  "Key of the epoch permutations; every shard must use the same one. -1: a fixed key, " \
  "and random_shuffle also permutes each shard's part by the pipeline seed."

#define STK__READER_COMMON_ARGS                                                                    \
  {"shard_id", STK_ARG_INT,  STK_ARGF_RANGE, "0",                                                  \
   0,          2147483646.0, NULL,           "The shard to read (0 <= shard_id < num_shards)."},   \
      {"num_shards",                                                                               \
       STK_ARG_INT,                                                                                \
       STK_ARGF_RANGE,                                                                             \
       "1",                                                                                        \
       1,                                                                                          \
       2147483647.0,                                                                               \
       NULL,                                                                                       \
       "Number of parts the data set is split into; shard i holds samples "                        \
       "floor(i*N/S) .. floor((i+1)*N/S)-1 of the whole data set (all files, in order)."},         \
      {"stick_to_shard",                                                                           \
       STK_ARG_BOOL,                                                                               \
       0,                                                                                          \
       "false",                                                                                    \
       0,                                                                                          \
       0,                                                                                          \
       NULL,                                                                                       \
       "Read the same shard every epoch; when false the shard advances by one each "               \
       "epoch."},                                                                                  \
      {"pad_last_batch",                                                                           \
       STK_ARG_BOOL,                                                                               \
       0,                                                                                          \
       "false",                                                                                    \
       0,                                                                                          \
       0,                                                                                          \
       NULL,                                                                                       \
       "Pad every shard's epoch to the same whole number of batches by repeating its "             \
       "last sample."},                                                                            \
      {"random_shuffle", STK_ARG_BOOL, 0, "false", 0, 0, NULL, STK__RANDOM_SHUFFLE_DOC},           \
      {"initial_fill", STK_ARG_INT, STK_ARGF_RANGE, "1024", 1, 1e12, NULL, STK__INITIAL_FILL_DOC}, \
      {"shuffle_after_epoch", STK_ARG_BOOL, 0, "false", 0, 0, NULL, STK__SHUFFLE_AFTER_EPOCH_DOC}, \
      {"seed", STK_ARG_INT, STK_ARGF_RANGE, "-1", -1, 9.2e18, NULL, STK__READER_SEED_DOC},         \
      {"prefetch_queue_depth", STK_ARG_INT, 0, "1", 0, 0, NULL, STK__READER_COMPAT},               \
      {"dont_use_mmap", STK_ARG_BOOL, 0, "false", 0, 0, NULL, STK__READER_COMPAT},                 \
      {"read_ahead", STK_ARG_BOOL, 0, "false", 0, 0, NULL, STK__READER_COMPAT},                    \
      {"lazy_init", STK_ARG_BOOL, 0, "false", 0, 0, NULL, STK__READER_COMPAT},                     \
      {"skip_cached_images", STK_ARG_BOOL, 0, "false", 0, 0, NULL, STK__READER_COMPAT},            \
      {"tensor_init_bytes", STK_ARG_INT, 0, "1048576", 0, 0, NULL, STK__READER_COMPAT}, {          \
    "shuffle_after_epoch_seed", STK_ARG_INT, STK_ARGF_RANGE, "-1", -1, 9.2e18, NULL,               \
        STK__SHUFFLE_AFTER_EPOCH_SEED_DOC                                                          \
  }

/* The remote settings (io/remote.h) as arguments of the readers that take URLs; they
 * follow a reader's other arguments, from `base`, in this order: the requests' settings
 * (every such reader), then the block cache's (readers of shards through a file set).
 * Unset, each falls back to its environment variable, then to the built-in default
 * (docs/formats.md, Remote datasets). */
enum {
  STK__RR_ENDPOINT,
  STK__RR_REGION,
  STK__RR_CA_BUNDLE,
  STK__RR_RETRIES,
  STK__RR_BACKOFF_MS,
  STK__RR_TIMEOUT,
  STK__RR_REQUEST_COUNT,
  STK__RR_BLOCK_KB = STK__RR_REQUEST_COUNT,
  STK__RR_CACHE_MB,
  STK__RR_READAHEAD,
  STK__RR_PREFETCH_THREADS,
  STK__RR_COUNT
};

#define STK__REMOTE_ARG_STR(name, doc) \
  { name, STK_ARG_STRING, 0, NULL, 0, 0, NULL, doc }
#define STK__REMOTE_ARG_INT(name, lo, hi, doc) \
  { name, STK_ARG_INT, STK_ARGF_RANGE, NULL, lo, hi, NULL, doc }

#define STK__READER_REMOTE_ARGS                                                              \
  STK__REMOTE_ARG_STR("remote_endpoint",                                                     \
                      "stoker: the S3 endpoint of s3:// URLs (\"http://127.0.0.1:9000\": "   \
                      "MinIO, Ceph, R2...); unset: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, "  \
                      "else AWS (docs/formats.md, Remote datasets)."),                       \
      STK__REMOTE_ARG_STR("remote_region",                                                   \
                          "stoker: the region s3:// requests are signed for; unset: "        \
                          "AWS_REGION, AWS_DEFAULT_REGION, else us-east-1."),                \
      STK__REMOTE_ARG_STR("remote_ca_bundle",                                                \
                          "stoker: a PEM file of the certificate authorities https:// "      \
                          "servers are verified against (a private CA); unset: "             \
                          "STK_REMOTE_CA_BUNDLE, else the system's."),                       \
      STK__REMOTE_ARG_INT("remote_retries", 0, 100,                                          \
                          "stoker: retries of a failed request to a URL; unset: "            \
                          "STK_REMOTE_RETRIES, else 6."),                                    \
      STK__REMOTE_ARG_INT("remote_backoff_ms", 0, 60000,                                     \
                          "stoker: the first retry's backoff in ms (doubling, capped at 10 " \
                          "s); unset: STK_REMOTE_BACKOFF_MS, else 100."),                    \
      STK__REMOTE_ARG_INT("remote_timeout", 1, 3600,                                         \
                          "stoker: seconds without a byte before a request is retried (and " \
                          "the connect timeout); unset: STK_REMOTE_TIMEOUT, else 30.")

#define STK__READER_REMOTE_CACHE_ARGS                                                         \
  STK__REMOTE_ARG_INT("remote_block_kb", 4, 1048576,                                          \
                      "stoker: KiB of a block of remote shards read front to back; unset: "   \
                      "STK_REMOTE_BLOCK_KB, else 4096."),                                     \
      STK__REMOTE_ARG_INT("remote_cache_mb", 1, 1048576,                                      \
                          "stoker: MiB of blocks the reader keeps; unset: "                   \
                          "STK_REMOTE_CACHE_MB, else 256 or what a streaming shuffle buffer " \
                          "needs, up to 4096."),                                              \
      STK__REMOTE_ARG_INT("remote_readahead", 0, 64,                                          \
                          "stoker: blocks fetched ahead; unset: STK_REMOTE_READAHEAD, else "  \
                          "4."),                                                              \
      STK__REMOTE_ARG_INT("remote_prefetch_threads", 0, 16,                                   \
                          "stoker: threads fetching ahead; unset: "                           \
                          "STK_REMOTE_PREFETCH_THREADS, else 4.")

/* The remote settings given to the reader (STK__READER_REMOTE_ARGS from `base`, and
 * STK__READER_REMOTE_CACHE_ARGS after them when `cache`); the strings point into the
 * node's arguments. */
void stk__reader_remote_opts(const stk__node *node, int base, bool cache, stk__remote_opts *out);

/* What every data set reader's state starts with: the shared hooks below reach the
 * sampler through it. */
typedef struct {
  stk__sampler *sampler;
} stk__reader_base;

/* Creates the sampler for `num_samples` samples from the common arguments (starting at
 * index `base`: shard_id, num_shards, stick_to_shard, pad_last_batch, random_shuffle,
 * initial_fill, shuffle_after_epoch, seed, in that order). With `unit_sizes` (num_units
 * files of consecutive samples) it streams: see io/sampler.h. Errors name the reader. */
stk_status stk__reader_sampler(stk__node *node, int base, int64_t num_samples,
                               const int64_t *unit_sizes, int64_t num_units, stk__sampler **out);

/* The readers' plan, reader_meta, position and seek (stk__op_def), over their sampler. */
stk_status stk__reader_plan(stk__node *node, stk__plan *plan);
stk_status stk__reader_meta(stk__node *node, stk_reader_meta *out);
stk_status stk__reader_position(stk__node *node, int64_t *epoch, int64_t *left);
stk_status stk__reader_seek(stk__node *node, int64_t epoch, int64_t left);

/* The `streaming` argument's schema entry (readers of multi-sample files). */
#define STK__READER_STREAMING_ARG                                                              \
  {                                                                                            \
    "streaming", STK_ARG_BOOL, 0, "false", 0, 0, NULL,                                         \
        "Read each file front to back, for slow or remote storage: shards split the files "    \
        "(not the samples), random_shuffle permutes the file order every epoch and mixes the " \
        "samples in a buffer of initial_fill that never crosses an epoch."                     \
  }

/* The sampler of a reader whose samples lie in files, `file_of[i]` the file of sample i
 * (non-decreasing): random access, or streaming file by file when `streaming`. */
stk_status stk__reader_file_sampler(stk__node *node, int base, int64_t num_samples,
                                    const int32_t *file_of, int64_t num_files, bool streaming,
                                    stk__sampler **out);

/* Streaming remote files with random_shuffle: the shuffle buffer's samples are read in
 * random order among about initial_fill consecutive samples, so the remote block cache
 * (io/remote_cache.h) must hold that many samples' blocks, else blocks are fetched again
 * and again. Warns once, at build, naming the STK_REMOTE_CACHE_MB that would do. */
void stk__reader_check_cache(stk__node *node, int base, const stk__fileset *fs,
                             int64_t num_samples);

/* Expands shell-style brace patterns in `patterns`: numeric ranges "{000..099}" (zero
 * padded to the width of the wider bound when a bound starts with 0; "{9..0}" counts
 * down) and alternatives "{a,b,c}", any number of them per pattern. An s3:// result that
 * ends in '/' or whose last component holds '*', '?' or '[' is replaced by the objects
 * listed under its directory that match it (fnmatch), sorted by key; none is
 * STK_ERR_NOT_FOUND naming the pattern. The result is a
 * NULL-free list of *count strings in one allocation; free it with free(*out). Errors
 * (an unbalanced brace, a range over 10^7 items) are STK_ERR_INVALID_ARGUMENT naming
 * `arg` and the pattern, prefixed by `who`. */
stk_status stk__expand_braces(const char *const *patterns, size_t num_patterns, const char *who,
                              const char *arg, char ***out, size_t *count);

/* stk__expand_braces for a reader's `arg`: under on_error="skip", an s3:// pattern whose
 * listing fails or matches nothing is left out (stk__reader_skip_file) and the others
 * expand; when every one was left out, the build fails. */
stk_status stk__reader_expand_paths(stk__node *node, const char *const *patterns,
                                    size_t num_patterns, const char *arg, char ***out,
                                    size_t *count);

/* The sample cache's identity of a sample of file `path` (op.h's item_identity): the path
 * and `where` (the sample's place in a multi-sample file, "" for a file per sample) to
 * `id`, the file's size and modification time to `stamp` ("-" when it cannot be stat'ed:
 * reading it then fails with its own error). */
/* A file of the reader's that cannot be read at build (opened, sized, listed or indexed),
 * `st` the failure (its message the thread's last error). Under on_error="skip" a data
 * error (io, decode, limit, unsupported, not found) leaves the file out: the message,
 * naming the reader and `path`, is printed as a warning and kept in the pipeline's
 * skipped files (stk_stats.skipped_files), and STK_OK is returned. Otherwise `st`,
 * prefixed by the reader's name. */
stk_status stk__reader_skip_file(stk__node *node, const char *path, stk_status st);

/* stk__fileset_open for a reader: a file that cannot be opened or sized is left out
 * under on_error="skip" (stk__reader_skip_file). */
stk_status stk__reader_fileset_open(stk__node *node, stk__fileset *fs, const char *const *paths,
                                    size_t count);

/* After a reader's files were opened and indexed: when every one was left out, the build
 * fails (NotFound when the last failure was one, else I/O), naming the files. */
stk_status stk__reader_check_files(stk__node *node, const stk__fileset *fs);

stk_status stk__reader_file_identity(const char *path, const char *where, stk__strbuf *id,
                                     stk__strbuf *stamp);

#endif /* STOKER_OPS_READER_COMMON_H */
