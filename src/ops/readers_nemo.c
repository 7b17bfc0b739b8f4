/* readers.nemo_asr: DALI's NeMo ASR reader. Reads JSON Lines manifests at build time,
 * chooses the order on the producer thread (the shared sampler), and reads and decodes
 * each audio file on a worker (libsndfile, as decoders.audio). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/fileset.h"
#include "../io/manifest.h"
#include "audio_decode.h"
#include "image_util.h"
#include "reader_common.h"

enum {
  A_MANIFESTS,
  A_SAMPLE_RATE,
  A_QUALITY,
  A_DOWNMIX,
  A_DTYPE,
  A_MIN_DURATION,
  A_MAX_DURATION,
  A_READ_SAMPLE_RATE,
  A_READ_TEXT,
  A_READ_IDXS,
  A_NORMALIZE_TEXT,
  A_SHUFFLE_SEED,
  A_COMMON,
  A_COUNT_ = A_COMMON + STK__RA_COUNT
};

static const stk_arg_schema nemo_args[] = {
    [A_MANIFESTS] = {.name = "manifest_filepaths",
                     .type = STK_ARG_STRINGS,
                     .flags = STK_ARGF_REQUIRED,
                     .doc = "NeMo manifests: JSON Lines with \"audio_filepath\", \"duration\" "
                            "and \"text\" per line (relative paths: from the manifest's "
                            "directory)"},
    [A_SAMPLE_RATE] = {.name = "sample_rate",
                       .type = STK_ARG_FLOAT,
                       .default_text = "-1.0",
                       .doc = "resample to this rate (Hz); <= 0: keep each file's"},
    [A_QUALITY] = {.name = "quality",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_RANGE,
                   .default_text = "50.0",
                   .min = 0,
                   .max = 100,
                   .doc = "resampling quality (as audio_resample's)"},
    [A_DOWNMIX] = {.name = "downmix",
                   .type = STK_ARG_BOOL,
                   .default_text = "true",
                   .doc = "average the channels: 1-D [time] audio"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float\"",
                 .choices = STK__AUDIO_DTYPES,
                 .doc = "float in [-1, 1), or int16 / int32 at full scale"},
    [A_MIN_DURATION] = {.name = "min_duration",
                        .type = STK_ARG_FLOAT,
                        .default_text = "0.0",
                        .doc = "skip entries shorter than this (seconds, the manifest's)"},
    [A_MAX_DURATION] = {.name = "max_duration",
                        .type = STK_ARG_FLOAT,
                        .default_text = "0.0",
                        .doc = "skip entries longer than this (seconds); 0: no limit"},
    [A_READ_SAMPLE_RATE] = {.name = "read_sample_rate",
                            .type = STK_ARG_BOOL,
                            .default_text = "true",
                            .doc = "output the sample rate (float32 scalar)"},
    [A_READ_TEXT] = {.name = "read_text",
                     .type = STK_ARG_BOOL,
                     .default_text = "true",
                     .doc = "output the transcript (UTF-8 bytes, 1-D uint8)"},
    [A_READ_IDXS] = {.name = "read_idxs",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = "output the entry's index in the manifests (int64 [1])"},
    [A_NORMALIZE_TEXT] = {.name = "normalize_text",
                          .type = STK_ARG_BOOL,
                          .default_text = "false",
                          .doc = "Deprecated in DALI; accepted, no effect"},
    [A_SHUFFLE_SEED] = {.name = "shuffle_after_epoch_seed",
                        .type = STK_ARG_INT,
                        .default_text = "-1",
                        .doc = STK__READER_COMPAT " (use seed)"},
    [A_COMMON] = STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(nemo_args, A_COUNT_);

static const stk_port_schema nemo_outputs[] = {
    {"audio, [sample_rate], [text], [idx]",
     "the decoded audio ([time], or [time, channels] without downmix), then as the read_* "
     "flags ask: the rate (float32 scalar), the transcript (uint8 bytes), the index (int64 "
     "[1])"}};

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  stk__manifest manifest;
} nemo_state;

static void nemo_destroy(stk__node *node) {
  nemo_state *r = *stk__node_state(node);
  if (!r) return;
  stk__manifest_free(&r->manifest);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

static stk_status load(stk__node *node, nemo_state *r) {
  const char *const *paths;
  size_t n = stk__arg_strings(node, A_MANIFESTS, &paths);
  double lo = stk__arg_float(node, NULL, A_MIN_DURATION);
  double hi = stk__arg_float(node, NULL, A_MAX_DURATION);
  for (size_t i = 0; i < n; i++)
    STK_TRY(stk__manifest_load(&r->manifest, paths[i], lo, hi, stk__node_name(node)));
  if (r->manifest.count == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: no entries in manifest_filepaths (%lld read, none within "
                    "min_duration/max_duration)",
                    stk__node_name(node), (long long)r->manifest.seen);
  return STK_OK;
}

static stk_status nemo_init(stk__node *node) {
  if (!stk__audio_codec_available())
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "built without libsndfile (install libsndfile1-dev and rebuild)");
  nemo_state *r = stk__calloc(1, sizeof *r, "a NeMo reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  stk_status st = load(node, r);
  if (st == STK_OK)
    st = stk__reader_sampler(node, A_COMMON, r->manifest.count, NULL, 0, &r->base.sampler);
  if (st != STK_OK) nemo_destroy(node);
  return st;
}

static int nemo_num_outputs(const stk__node *node) {
  stk__node *n = (stk__node *)node;
  return 1 + stk__arg_bool(n, NULL, A_READ_SAMPLE_RATE) + stk__arg_bool(n, NULL, A_READ_TEXT) +
         stk__arg_bool(n, NULL, A_READ_IDXS);
}

/* The whole file in scratch memory. */
static stk_status read_all(stk__node *node, stk__sample *s, const char *path, void **data,
                           size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return STK__SFAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, node, s,
                      "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  stk_status st = STK_OK;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    st = STK__SFAIL(STK_ERR_IO, node, s, "'%s' is not a regular file", path);
  else if (sb.st_size > stk__node_max_file_bytes(node))
    st = STK__SFAIL(STK_ERR_LIMIT, node, s, "'%s' has %lld bytes, more than max_file_bytes", path,
                    (long long)sb.st_size);
  if (st == STK_OK) {
    *data = stk__scratch(s, (size_t)sb.st_size + 1);
    st = *data ? stk__pread_full(fd, path, 0, *data, (size_t)sb.st_size, size)
               : STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  }
  close(fd);
  return st;
}

static stk_status nemo_run(stk__node *node, stk__sample *s) {
  nemo_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->manifest.count)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  const stk__manifest_entry *e = &r->manifest.entries[item];
  stk__sample_set_source(s, e->path);
  void *bytes = NULL;
  size_t size = 0;
  STK_TRY(read_all(node, s, e->path, &bytes, &size));
  stk__audio_emit_opts o = {stk__arg_float(node, s, A_SAMPLE_RATE),
                            stk__arg_bool(node, s, A_DOWNMIX), stk__arg_float(node, s, A_QUALITY),
                            stk__dtype_arg(stk__arg_string(node, A_DTYPE))};
  double rate;
  STK_TRY(stk__audio_decode_emit(node, s, bytes, size, &o, 0, &rate));
  int next = 1;
  stk__tensor *t;
  if (stk__arg_bool(node, s, A_READ_SAMPLE_RATE)) {
    STK_TRY(stk__output(s, next++, STK_DTYPE_FLOAT32, 0, NULL, NULL, &t));
    *(float *)t->data = (float)rate;
  }
  if (stk__arg_bool(node, s, A_READ_TEXT)) {
    int64_t len = (int64_t)strlen(e->text);
    STK_TRY(stk__output(s, next++, STK_DTYPE_UINT8, 1, &len, NULL, &t));
    memcpy(t->data, e->text, (size_t)len);
  }
  if (stk__arg_bool(node, s, A_READ_IDXS)) {
    int64_t one = 1;
    STK_TRY(stk__output(s, next++, STK_DTYPE_INT64, 1, &one, NULL, &t));
    *(int64_t *)t->data = e->index;
  }
  return STK_OK;
}

static const stk_op_schema nemo_schema = {
    .name = "readers.nemo_asr",
    .doc =
        "Reads speech data sets described by NeMo ASR manifests: the audio files decoded "
        "(libsndfile; downmixed and resampled on request) with their transcripts. "
        "Sharding, padding and shuffling as in readers.file.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .min_inputs = 0,
    .max_inputs = 0,
    .num_outputs = -1,
    .outputs = nemo_outputs,
    .num_args = A_COUNT_,
    .args = nemo_args,
};

const stk__op_def stk__op_readers_nemo_asr = {
    .schema = &nemo_schema,
    .init = nemo_init,
    .destroy = nemo_destroy,
    .plan = stk__reader_plan,
    .run_sample = nemo_run,
    .reader_meta = stk__reader_meta,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
    .num_outputs = nemo_num_outputs,
};
