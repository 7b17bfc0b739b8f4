/* readers.file: DALI's file reader. Builds the sample list at build time (ImageFolder,
 * list file, or explicit files), chooses the order on the producer thread (sampler.h),
 * and reads each file's bytes on a worker, straight into the output. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/file_list.h"
#include "../io/remote.h"
#include "reader_common.h"

enum {
  A_FILE_ROOT,
  A_FILE_LIST,
  A_FILES,
  A_LABELS,
  A_FILE_FILTERS,
  A_CASE_SENSITIVE_FILTER,
  A_SHARD_ID,
  A_NUM_SHARDS,
  A_STICK_TO_SHARD,
  A_PAD_LAST_BATCH,
  A_RANDOM_SHUFFLE,
  A_INITIAL_FILL,
  A_SHUFFLE_AFTER_EPOCH,
  A_SEED,
  A_DONT_USE_MMAP,
  A_READ_AHEAD,
  A_PREFETCH_QUEUE_DEPTH,
  A_LAZY_INIT,
  A_SKIP_CACHED_IMAGES,
  A_PAIRED,
  A_TENSOR_INIT_BYTES,
  A_SHUFFLE_AFTER_EPOCH_SEED,
  A_DIR_FILTERS,
  A_REMOTE,
  FILE_ARGS_COUNT_ = A_REMOTE + STK__RR_REQUEST_COUNT
};

#define COMPAT "Accepted for DALI compatibility; no effect."

static const stk_arg_schema file_args[] = {
    [A_FILE_ROOT] =
        {.name = "file_root",
         .type = STK_ARG_STRING,
         .doc =
             "Alone: an ImageFolder tree (each sub-directory, sorted by name, is a class labelled "
             "by its index; its files are found recursively and sorted). With file_list or files: "
             "the directory their paths are relative to. May be an s3:// prefix (listed) or an "
             "http(s):// URL (with files or file_list)."},
    [A_FILE_LIST] =
        {.name = "file_list",
         .type = STK_ARG_STRING,
         .doc =
             "A text file with one \"path label\" per line (the label is the last token, so paths "
             "may hold spaces; blank lines and '#' comments skipped). Paths are relative to "
             "file_root, or to the list file's directory."},
    [A_FILES] = {.name = "files",
                 .type = STK_ARG_STRINGS,
                 .doc = "Paths of the files to read (relative to file_root when given)."},
    [A_LABELS] = {.name = "labels",
                  .type = STK_ARG_INTS,
                  .doc = "Labels of `files`, one per file; 0, 1, ..., N-1 when absent."},
    [A_FILE_FILTERS] =
        {.name = "file_filters",
         .type = STK_ARG_STRINGS,
         .default_text =
             "[\"*.jpg\", \"*.jpeg\", \"*.png\", \"*.bmp\", \"*.tif\", \"*.tiff\", \"*.pnm\", "
             "\"*.ppm\", \"*.pgm\", \"*.pbm\", \"*.webp\"]",
         .doc = "fnmatch patterns selecting files of an ImageFolder tree"},
    [A_CASE_SENSITIVE_FILTER] = {.name = "case_sensitive_filter",
                                 .type = STK_ARG_BOOL,
                                 .default_text = "false",
                                 .doc = "Match file_filters case-sensitively."},
    [A_SHARD_ID] = {.name = "shard_id",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "0",
                    .max = 2147483646.0,
                    .doc = "The shard to read (0 <= shard_id < num_shards)."},
    [A_NUM_SHARDS] = {.name = "num_shards",
                      .type = STK_ARG_INT,
                      .flags = STK_ARGF_RANGE,
                      .default_text = "1",
                      .min = 1,
                      .max = 2147483647.0,
                      .doc = "Number of parts the data set is split into; shard i holds samples "
                             "floor(i*N/S) .. floor((i+1)*N/S)-1."},
    [A_STICK_TO_SHARD] =
        {.name = "stick_to_shard",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "Read the same shard every epoch; when false the shard advances by one each epoch."},
    [A_PAD_LAST_BATCH] =
        {.name = "pad_last_batch",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc = "Pad every shard's epoch to the same whole number of batches by repeating its last "
                "sample."},
    [A_RANDOM_SHUFFLE] = {.name = "random_shuffle",
                          .type = STK_ARG_BOOL,
                          .default_text = "false",
                          .doc = STK__RANDOM_SHUFFLE_DOC},
    [A_INITIAL_FILL] = {.name = "initial_fill",
                        .type = STK_ARG_INT,
                        .flags = STK_ARGF_RANGE,
                        .default_text = "1024",
                        .min = 1,
                        .max = 1e12,
                        .doc = STK__INITIAL_FILL_DOC},
    [A_SHUFFLE_AFTER_EPOCH] = {.name = "shuffle_after_epoch",
                               .type = STK_ARG_BOOL,
                               .default_text = "false",
                               .doc = STK__SHUFFLE_AFTER_EPOCH_DOC},
    [A_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .flags = STK_ARGF_RANGE,
                .default_text = "-1",
                .min = -1,
                .max = 9.2e18,
                .doc = STK__READER_SEED_DOC},
    [A_DONT_USE_MMAP] = {.name = "dont_use_mmap",
                         .type = STK_ARG_BOOL,
                         .default_text = "false",
                         .doc = COMPAT},
    [A_READ_AHEAD] = {.name = "read_ahead",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = COMPAT},
    [A_PREFETCH_QUEUE_DEPTH] = {.name = "prefetch_queue_depth",
                                .type = STK_ARG_INT,
                                .default_text = "1",
                                .doc = COMPAT},
    [A_LAZY_INIT] = {.name = "lazy_init",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = COMPAT},
    [A_SKIP_CACHED_IMAGES] = {.name = "skip_cached_images",
                              .type = STK_ARG_BOOL,
                              .default_text = "false",
                              .doc = COMPAT},
    [A_PAIRED] = {.name = "paired",
                  .type = STK_ARG_BOOL,
                  .default_text = "false",
                  .doc = "stoker: file_list lines hold two paths and a label (\"image mask "
                         "label\", paths without "
                         "blanks), for segmentation: the reader then has three outputs, data, "
                         "data2 (the second "
                         "file's bytes) and label, and both files of a sample travel together"},
    [A_TENSOR_INIT_BYTES] = {.name = "tensor_init_bytes",
                             .type = STK_ARG_INT,
                             .default_text = "1048576",
                             .doc = COMPAT},
    [A_SHUFFLE_AFTER_EPOCH_SEED] = {.name = "shuffle_after_epoch_seed",
                                    .type = STK_ARG_INT,
                                    .flags = STK_ARGF_RANGE,
                                    .default_text = "-1",
                                    .min = -1,
                                    .max = 9.2e18,
                                    .doc = STK__SHUFFLE_AFTER_EPOCH_SEED_DOC},
    [A_DIR_FILTERS] = {.name = "dir_filters",
                       .type = STK_ARG_STRINGS,
                       .doc = "file_root: keep only the class directories whose name matches one "
                              "of these globs (case-sensitive); labels number the kept classes "
                              "in order, as DALI's. Ignored with file_list and files"},
    [A_REMOTE] = STK__READER_REMOTE_ARGS,
};
STK__CHECK_ARGS(file_args, FILE_ARGS_COUNT_);

static const stk_port_schema file_outputs[] = {
    {"data, [data2,] label",
     "the file's bytes (a 1-D uint8 tensor), with paired=true the second file's bytes, and "
     "the sample's label (an int32 tensor of shape [1]): two outputs, three when paired"},
};

/* stk__reader_sampler reads shard_id .. seed at the common offsets from A_SHARD_ID. */
_Static_assert(A_SEED - A_SHARD_ID == STK__RA_SEED &&
                   A_INITIAL_FILL - A_SHARD_ID == STK__RA_INITIAL_FILL,
               "readers.file's sampling arguments must follow the common order");

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  stk__file_list files;
  stk__file_list second;   /* paired lists: the second path of every line */
  stk__remote_opts remote; /* the remote_* arguments */
} reader_state;

static void file_destroy(stk__node *node) {
  reader_state *r = *stk__node_state(node);
  if (!r) return;
  stk__file_list_free(&r->files);
  stk__file_list_free(&r->second);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

/* Builds the sample list from the one source given (`second`: paired lists only). */
static stk_status build_list(stk__node *node, stk__file_list *out, stk__file_list *second) {
  bool root = stk__arg_given(node, A_FILE_ROOT), list = stk__arg_given(node, A_FILE_LIST);
  bool files = stk__arg_given(node, A_FILES);
  const char *name = stk__node_name(node);
  if (list && files)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: give file_list or files, not both", name);
  if (!root && !list && !files)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: no data source: give file_root, file_list or files", name);
  if (stk__arg_given(node, A_LABELS) && !files)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: labels needs files", name);
  const char *root_dir = root ? stk__arg_string(node, A_FILE_ROOT) : NULL;
  if (stk__arg_bool(node, NULL, A_PAIRED)) {
    if (!list) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: paired needs a file_list", name);
    return stk__file_list_parse_pairs(out, second, stk__arg_string(node, A_FILE_LIST), root_dir);
  }
  if (list) return stk__file_list_parse(out, stk__arg_string(node, A_FILE_LIST), root_dir);
  if (files) {
    const char *const *paths;
    const int64_t *labels = NULL;
    size_t n = stk__arg_strings(node, A_FILES, &paths), nl = 0;
    if (stk__arg_given(node, A_LABELS)) nl = stk__arg_ints(node, NULL, A_LABELS, &labels);
    if (stk__arg_given(node, A_LABELS) && nl == 0 && n != 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu files but 0 labels", name, n);
    return stk__file_list_from_files(out, root_dir, paths, n, labels, nl, name);
  }
  const char *const *filters;
  size_t nf = stk__arg_strings(node, A_FILE_FILTERS, &filters);
  if (nf == 0) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: file_filters is empty", name);
  const char *const *dirs = NULL;
  size_t nd =
      stk__arg_given(node, A_DIR_FILTERS) ? stk__arg_strings(node, A_DIR_FILTERS, &dirs) : 0;
  stk_status st = stk__file_list_scan_dirs(
      out, root_dir, filters, nf, stk__arg_bool(node, NULL, A_CASE_SENSITIVE_FILTER), dirs, nd);
  return st == STK_OK ? st : stk__wrap(st, "%s", name);
}

static stk_status file_init(stk__node *node) {
  reader_state *r = stk__calloc(1, sizeof *r, "a file reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  stk__reader_remote_opts(node, A_REMOTE, false, &r->remote);
  const stk__remote_opts *prev = stk__remote_use(&r->remote); /* listings, list files */
  stk_status st = build_list(node, &r->files, &r->second);
  stk__remote_use(prev);
  /* The sampling arguments shard_id .. seed are in the common order (reader_common.h). */
  if (st == STK_OK)
    st = stk__reader_sampler(node, A_SHARD_ID, r->files.count, NULL, 0, &r->base.sampler);
  if (st != STK_OK) {
    stk__file_list_free(&r->files);
    stk__file_list_free(&r->second);
    free(r);
    return st;
  }
  *stk__node_state(node) = r;
  return STK_OK;
}

/* Reads exactly `size` bytes (the size fstat reported) from `fd` into `dst`. */
static stk_status read_all(int fd, const char *path, uint8_t *dst, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, dst + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return STK_FAIL(STK_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    if (n == 0)
      return STK_FAIL(STK_ERR_IO, "'%s' shrank while it was read (%zu of %zu bytes)", path, got,
                      size);
    got += (size_t)n;
  }
  return STK_OK;
}

/* Opens `path` and checks it is a regular file within the size limit. */
static stk_status open_checked(stk__node *node, const char *path, int *fd, int64_t *size) {
  *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "%s: cannot open '%s': %s",
                    stk__node_name(node), path, strerror(errno));
  struct stat sb;
  memset(&sb, 0, sizeof sb);
  int64_t limit = stk__node_max_file_bytes(node);
  stk_status st = STK_OK;
  if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    st = STK_FAIL(STK_ERR_IO, "%s: '%s' is not a regular file", stk__node_name(node), path);
  else if ((int64_t)sb.st_size > limit)
    st = STK_FAIL(STK_ERR_LIMIT, "%s: '%s' has %lld bytes, more than max_file_bytes (%lld)",
                  stk__node_name(node), path, (long long)sb.st_size, (long long)limit);
  if (st != STK_OK) {
    close(*fd);
    *fd = -1;
  }
  *size = (int64_t)sb.st_size;
  return st;
}

/* A URL (io/remote.h): the object in one request (at most max_file_bytes), copied into
 * output `index`. */
static stk_status read_remote(stk__node *node, stk__sample *s, const char *path, int index) {
  uint8_t *buf = NULL;
  size_t size = 0;
  const reader_state *r = *stk__node_state(node);
  const stk__remote_opts *prev = stk__remote_use(&r->remote);
  stk_status st = stk__remote_get(path, (size_t)stk__node_max_file_bytes(node), &buf, &size);
  stk__remote_use(prev);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  int64_t n = (int64_t)size;
  stk__tensor *data = NULL;
  st = stk__output(s, index, STK_DTYPE_UINT8, 1, &n, NULL, &data);
  if (st == STK_OK && size) memcpy(data->data, buf, size);
  free(buf);
  return st;
}

/* Reads the file at `path` straight into output `index`. */
static stk_status read_into_output(stk__node *node, stk__sample *s, const char *path, int index) {
  if (stk__is_url(path)) return read_remote(node, s, path, index);
  int fd;
  int64_t size;
  STK_TRY(open_checked(node, path, &fd, &size));
  stk__tensor *data = NULL;
  stk_status st = stk__output(s, index, STK_DTYPE_UINT8, 1, &size, NULL, &data);
  if (st == STK_OK) st = read_all(fd, path, data->data, (size_t)size);
  close(fd);
  return st;
}

/* Worker thread: the file's bytes (and, paired, the second file's), read straight into
 * the outputs, and the label. */
static stk_status file_run(stk__node *node, stk__sample *s) {
  reader_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->files.count)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  const char *path = r->files.paths[item];
  stk__sample_set_source(s, path);
  int64_t one = 1;
  stk__tensor *label = NULL;
  STK_TRY(read_into_output(node, s, path, 0));
  int label_out = 1;
  if (r->second.count) { /* paired: the second file, named in errors */
    stk__sample_set_source(s, r->second.paths[item]);
    STK_TRY(read_into_output(node, s, r->second.paths[item], 1));
    stk__sample_set_source(s, path);
    label_out = 2;
  }
  STK_TRY(stk__output(s, label_out, STK_DTYPE_INT32, 1, &one, NULL, &label));
  *(int32_t *)label->data = r->files.labels[item];
  return STK_OK;
}

/* The sample cache's name of an item: its path(s); the stamp changes with the contents
 * and the label. */
static stk_status file_identity(stk__node *node, int64_t item, stk__strbuf *id, stk__strbuf *stamp,
                                const char **source) {
  reader_state *r = *stk__node_state(node);
  if (item < 0 || item >= r->files.count)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  *source = r->files.paths[item];
  STK_TRY(stk__reader_file_identity(r->files.paths[item], "", id, stamp));
  if (r->second.count) STK_TRY(stk__reader_file_identity(r->second.paths[item], "", id, stamp));
  /* a cache of (images, labels) must see a relabelled list */
  return stk__strbuf_printf(stamp, "label %d\n", (int)r->files.labels[item]);
}

static const stk_op_schema file_schema = {
    .name = "readers.file",
    .doc =
        "Reads files as raw bytes with their labels (DALI's file reader): from an ImageFolder "
        "tree (file_root), a list file (file_list) or explicit paths (files, labels); with "
        "sharding (shard_id, num_shards, stick_to_shard), padding (pad_last_batch) and "
        "shuffling (random_shuffle or shuffle_after_epoch: a permutation of the data set per "
        "epoch).",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = -1,
    .outputs = file_outputs,
    .num_args = sizeof file_args / sizeof file_args[0],
    .args = file_args,
};

static int file_num_outputs(const stk__node *node) {
  return stk__arg_bool(node, NULL, A_PAIRED) ? 3 : 2;
}

const stk__op_def stk__op_readers_file = {
    .schema = &file_schema,
    .init = file_init,
    .destroy = file_destroy,
    .plan = stk__reader_plan,
    .run_sample = file_run,
    .reader_meta = stk__reader_meta,
    .num_outputs = file_num_outputs,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
    .item_identity = file_identity,
};
