/* readers.webdataset: DALI's WebDataset reader. Tar shards are indexed at build time
 * (or their DALI index files loaded), their members grouped into samples by key, each
 * output matched to one component by extension; the sampler (io/sampler.h) chooses the
 * order over all shards together, and workers read each component straight into its
 * output with pread. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../io/fileset.h"
#include "../io/tar.h"
#include "reader_common.h"

enum {
  A_PATHS,
  A_INDEX_PATHS,
  A_EXT,
  A_MISSING,
  A_DTYPES,
  A_CASE_SENSITIVE,
  A_STREAMING,
  A_COMMON,                            /* STK__READER_COMMON_ARGS follow */
  A_REMOTE = A_COMMON + STK__RA_COUNT, /* then STK__READER_REMOTE_ARGS */
};

static const stk_arg_schema wds_args[] = {
    {"paths", STK_ARG_STRINGS, STK_ARGF_REQUIRED, NULL, 0, 0, NULL,
     "The tar shards, in order. Brace patterns expand: \"shard-{000000..000099}.tar\" (zero "
     "padded ranges), \"{train,val}.tar\" (alternatives). URLs too: s3://bucket/key or "
     "http(s)://...; an s3:// path ending in '/' or with *, ? or [...] in its last component "
     "names the listed objects it matches (docs/formats.md, Remote datasets)."},
    {"index_paths", STK_ARG_STRINGS, 0, NULL, 0, 0, NULL,
     "Index files, one per shard (brace patterns expand), in DALI's wds2idx format v1.2 "
     "(first line \"v1.2 <samples>\", then per sample \"<ext> <offset> <size> <name>\" "
     "groups). When absent, each shard's headers are scanned at build time."},
    {"ext", STK_ARG_STRINGS, STK_ARGF_REQUIRED, NULL, 0, 0, NULL,
     "One entry per output: the extension(s) of the component feeding it, alternatives "
     "separated by ';' (\"jpg;png\"). The extension is what follows the first dot of a "
     "member's base name (\"a/b.seg.png\": key \"a/b\", extension \"seg.png\")."},
    {"missing_component_behavior", STK_ARG_STRING, 0, "\"empty\"", 0, 0, "empty|fill|skip|error",
     "A sample without a component for some output: \"empty\" (or \"fill\") gives an empty "
     "tensor for that output, \"skip\" leaves the sample out of the data set, \"error\" "
     "fails when the reader is built, naming the shard and key."},
    {"dtypes", STK_ARG_STRINGS, 0, NULL, 0, 0,
     "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool",
     "Element type of each output (default uint8): the component's bytes reinterpreted "
     "(little-endian); a size that is not a multiple of the element size is an error."},
    {"case_sensitive_extensions", STK_ARG_BOOL, 0, "true", 0, 0, NULL,
     "Match extensions case-sensitively."},
    STK__READER_STREAMING_ARG,
    STK__READER_COMMON_ARGS,
    STK__READER_REMOTE_ARGS,
    STK__READER_REMOTE_CACHE_ARGS,
};
STK__CHECK_ARGS(wds_args, A_REMOTE + STK__RR_COUNT);

static const stk_port_schema wds_outputs[] = {
    {"outputs", "one per `ext` entry: the component's bytes as a 1-D tensor of `dtypes`"},
};

enum { MISSING_EMPTY, MISSING_SKIP, MISSING_ERROR };

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  stk__fileset files;
  stk__wds_index *indexes; /* one per shard */
  int num_outputs;
  stk_dtype *dtypes;
  int64_t num_samples;
  int32_t *sample_file;    /* shard of each sample */
  int64_t *sample_local;   /* the sample's index in its shard's index */
  int64_t *comp;           /* num_samples * num_outputs component indices, -1 if missing */
  stk__remote_opts remote; /* the remote_* arguments */
} wds_state;

static int wds_num_outputs(const stk__node *node) {
  const char *const *ext;
  return (int)stk__arg_strings(node, A_EXT, &ext);
}

static void wds_destroy(stk__node *node) {
  wds_state *r = *stk__node_state(node);
  if (!r) return;
  for (int64_t i = 0; r->indexes && i < r->files.count; i++) stk__wds_index_free(&r->indexes[i]);
  free(r->indexes);
  stk__fileset_close(&r->files);
  free(r->dtypes);
  free(r->sample_file);
  free(r->sample_local);
  free(r->comp);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

/* Whether `ext` is one of the ';'-separated alternatives. */
static bool ext_matches(const char *alternatives, const char *ext, bool case_sensitive) {
  size_t n = strlen(ext);
  for (const char *a = alternatives;;) {
    const char *semi = strchr(a, ';');
    size_t len = semi ? (size_t)(semi - a) : strlen(a);
    if (len == n && len > 0 &&
        (case_sensitive ? strncmp(a, ext, n) == 0 : strncasecmp(a, ext, n) == 0))
      return true;
    if (!semi) return false;
    a = semi + 1;
  }
}

/* Indexes shard i: from its index file when given, else by scanning it. */
static stk_status index_shard(wds_state *r, int64_t i, const char *index_path) {
  const char *path = r->files.paths[i];
  if (index_path) return stk__wds_index_load(&r->indexes[i], index_path, path, r->files.sizes[i]);
  if (r->files.fds[i] == STK__FD_REMOTE) {
    stk__source src = {.fs = &r->files, .index = i, .path = path};
    return stk__wds_index_build_source(&r->indexes[i], &src, r->files.sizes[i]);
  }
  int fd = r->files.fds[i] >= 0 ? r->files.fds[i] : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "cannot open '%s': %s", path,
                    strerror(errno));
  stk_status st = stk__wds_index_build(&r->indexes[i], fd, path, r->files.sizes[i]);
  if (fd != r->files.fds[i]) close(fd);
  return st;
}

/* Indexes every shard left; one that cannot be is an error, or left out under
 * on_error="skip" (its samples with it). */
static stk_status index_shards(stk__node *node, wds_state *r, char **index_paths) {
  for (int64_t i = 0; i < r->files.count; i++) {
    if (r->files.fds[i] == STK__FD_BAD) continue;
    stk_status st = index_shard(r, i, index_paths ? index_paths[i] : NULL);
    if (st == STK_OK) continue;
    stk__wds_index_free(&r->indexes[i]);
    stk_status why = stk__wrap(st, "%s", stk__node_name(node));
    STK_TRY(stk__reader_skip_file(node, r->files.paths[i], why));
    stk__fileset_mark_bad(&r->files, i, why);
  }
  return stk__reader_check_files(node, &r->files);
}

/* Matches the components of sample `s` of shard `f` to the outputs; *complete is false
 * when some output found none. */
static void match_sample(const stk__node *node, const wds_state *r, int64_t f, int64_t s,
                         int64_t *comp, bool *complete) {
  const char *const *ext;
  stk__arg_strings(node, A_EXT, &ext);
  bool cs = stk__arg_bool(node, NULL, A_CASE_SENSITIVE);
  const stk__wds_index *idx = &r->indexes[f];
  *complete = true;
  for (int o = 0; o < r->num_outputs; o++) {
    comp[o] = -1;
    for (int64_t k = idx->first[s]; k < idx->first[s + 1] && comp[o] < 0; k++)
      if (ext_matches(ext[o], stk__wds_ext(idx, &idx->comps[k]), cs)) comp[o] = k;
    *complete &= comp[o] >= 0;
  }
}

static stk_status grow_samples(wds_state *r, int64_t need, int64_t *cap) {
  if (need <= *cap) return STK_OK;
  int64_t c = *cap ? *cap * 2 : 4096;
  while (c < need) c *= 2;
  int32_t *f = stk__realloc(r->sample_file, (size_t)c * sizeof *f, "the WebDataset samples");
  if (f) r->sample_file = f;
  int64_t *l = stk__realloc(r->sample_local, (size_t)c * sizeof *l, "the WebDataset samples");
  if (l) r->sample_local = l;
  int64_t *k = stk__realloc(r->comp, (size_t)c * (size_t)r->num_outputs * sizeof *k,
                            "the WebDataset samples");
  if (k) r->comp = k;
  if (!f || !l || !k) return STK_ERR_OUT_OF_MEMORY;
  *cap = c;
  return STK_OK;
}

static int missing_mode(const stk__node *node) {
  const char *m = stk__arg_string(node, A_MISSING);
  return strcmp(m, "skip") == 0    ? MISSING_SKIP
         : strcmp(m, "error") == 0 ? MISSING_ERROR
                                   : MISSING_EMPTY;
}

/* The sample table over all shards, applying missing_component_behavior. */
static stk_status build_samples(stk__node *node, wds_state *r) {
  int mode = missing_mode(node);
  int64_t cap = 0;
  const char *const *ext;
  stk__arg_strings(node, A_EXT, &ext);
  for (int64_t f = 0; f < r->files.count; f++) {
    for (int64_t s = 0; s < r->indexes[f].num_samples; s++) {
      STK_TRY(grow_samples(r, r->num_samples + 1, &cap));
      int64_t *comp = &r->comp[r->num_samples * r->num_outputs];
      bool complete;
      match_sample(node, r, f, s, comp, &complete);
      if (!complete && mode == MISSING_SKIP) continue;
      for (int o = 0; !complete && mode == MISSING_ERROR && o < r->num_outputs; o++)
        if (comp[o] < 0)
          return STK_FAIL(STK_ERR_DECODE,
                          "%s: sample '%s' of '%s' has no component for "
                          "output %d (ext \"%s\")",
                          stk__node_name(node), stk__wds_key(&r->indexes[f], s), r->files.paths[f],
                          o, ext[o]);
      r->sample_file[r->num_samples] = (int32_t)f;
      r->sample_local[r->num_samples] = s;
      r->num_samples++;
    }
  }
  if (r->num_samples == 0)
    return STK_FAIL(STK_ERR_NOT_FOUND, "%s: the %lld shard(s) hold no sample%s",
                    stk__node_name(node), (long long)r->files.count,
                    mode == MISSING_SKIP ? " with every requested extension" : "");
  return STK_OK;
}

static stk_status check_args(stk__node *node, size_t num_paths, size_t num_index) {
  const char *name = stk__node_name(node);
  const char *const *ext;
  size_t n = stk__arg_strings(node, A_EXT, &ext);
  if (n == 0) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: ext is empty", name);
  if (num_paths == 0) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: paths is empty", name);
  if (stk__arg_given(node, A_INDEX_PATHS) && num_index != num_paths)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu paths but %zu index_paths", name, num_paths,
                    num_index);
  const char *const *dt;
  size_t nd = stk__arg_strings(node, A_DTYPES, &dt);
  if (stk__arg_given(node, A_DTYPES) && nd != n)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu ext entries but %zu dtypes", name, n, nd);
  return STK_OK;
}

static stk_status init_state(stk__node *node, wds_state *r) {
  const char *name = stk__node_name(node);
  const char *const *pat;
  size_t np = stk__arg_strings(node, A_PATHS, &pat);
  char **paths = NULL, **index = NULL;
  size_t num_paths = 0, num_index = 0;
  stk_status st = stk__reader_expand_paths(node, pat, np, "paths", &paths, &num_paths);
  if (st == STK_OK && stk__arg_given(node, A_INDEX_PATHS)) {
    np = stk__arg_strings(node, A_INDEX_PATHS, &pat);
    st = stk__expand_braces(pat, np, name, "index_paths", &index, &num_index);
  }
  if (st == STK_OK) st = check_args(node, num_paths, num_index);
  if (st == STK_OK)
    st = stk__reader_fileset_open(node, &r->files, (const char *const *)paths, num_paths);
  r->num_outputs = wds_num_outputs(node);
  if (st == STK_OK) {
    r->indexes = stk__calloc(num_paths, sizeof *r->indexes, "the WebDataset indexes");
    r->dtypes = stk__calloc((size_t)r->num_outputs, sizeof *r->dtypes, "the WebDataset dtypes");
    if (!r->indexes || !r->dtypes) st = STK_ERR_OUT_OF_MEMORY;
  }
  const char *const *dt;
  stk__arg_strings(node, A_DTYPES, &dt);
  for (int o = 0; st == STK_OK && o < r->num_outputs; o++)
    r->dtypes[o] = stk__arg_given(node, A_DTYPES) ? stk__dtype_arg(dt[o]) : STK_DTYPE_UINT8;
  if (st == STK_OK) st = index_shards(node, r, index);
  if (st == STK_OK) st = build_samples(node, r);
  free(paths);
  free(index);
  return st;
}

static stk_status wds_init(stk__node *node) {
  wds_state *r = stk__calloc(1, sizeof *r, "a WebDataset reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  /* the build's requests use the reader's remote settings; so do the file set's later */
  stk__reader_remote_opts(node, A_REMOTE, true, &r->remote);
  const stk__remote_opts *prev = stk__remote_use(&r->remote);
  stk_status st = init_state(node, r);
  if (st == STK_OK)
    st = stk__reader_file_sampler(node, A_COMMON, r->num_samples, r->sample_file, r->files.count,
                                  stk__arg_bool(node, NULL, A_STREAMING), &r->base.sampler);
  /* indexed: random access reads each component exactly (no blocks for remote shards) */
  if (st == STK_OK && !stk__arg_bool(node, NULL, A_STREAMING))
    stk__fileset_random_access(&r->files);
  else if (st == STK_OK)
    stk__reader_check_cache(node, A_COMMON, &r->files, r->num_samples);
  stk__remote_use(prev);
  if (st != STK_OK) wds_destroy(node);
  return st;
}

/* Reads component `k` of shard `f` into output `o`. */
static stk_status read_component(stk__node *node, wds_state *r, stk__sample *s, int o, int64_t f,
                                 int64_t local, int64_t k) {
  const stk__wds_index *idx = &r->indexes[f];
  size_t elem = stk_dtype_size(r->dtypes[o]);
  int64_t size = k >= 0 ? idx->comps[k].size : 0;
  if (size % (int64_t)elem != 0)
    return STK_FAIL(STK_ERR_DECODE,
                    "%s: component '%s.%s' of '%s' (offset %lld) has %lld bytes, "
                    "not a multiple of %s's %zu",
                    stk__node_name(node), stk__wds_key(idx, local),
                    stk__wds_ext(idx, &idx->comps[k]), r->files.paths[f],
                    (long long)idx->comps[k].offset, (long long)size, stk_dtype_name(r->dtypes[o]),
                    elem);
  if (size > stk__node_max_file_bytes(node))
    return STK_FAIL(STK_ERR_LIMIT,
                    "%s: member '%s.%s' of '%s' (data at byte %lld) has %lld "
                    "bytes, more than max_file_bytes (%lld)",
                    stk__node_name(node), stk__wds_key(idx, local),
                    stk__wds_ext(idx, &idx->comps[k]), r->files.paths[f],
                    (long long)idx->comps[k].offset, (long long)size,
                    (long long)stk__node_max_file_bytes(node));
  int64_t count = size / (int64_t)elem;
  stk__tensor *out;
  STK_TRY(stk__output(s, o, r->dtypes[o], 1, &count, NULL, &out));
  if (size == 0) return STK_OK;
  stk_status st = stk__fileset_read(&r->files, f, idx->comps[k].offset, out->data, (size_t)size);
  if (st != STK_OK)
    return stk__wrap(st, "member '%s.%s' (data at byte %lld)", stk__wds_key(idx, local),
                     stk__wds_ext(idx, &idx->comps[k]), (long long)idx->comps[k].offset);
  return STK_OK;
}

static stk_status wds_run(stk__node *node, stk__sample *s) {
  wds_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->num_samples)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  int64_t f = r->sample_file[item], local = r->sample_local[item];
  stk__sample_set_source(s, r->files.paths[f]);
  for (int o = 0; o < r->num_outputs; o++)
    STK_TRY(read_component(node, r, s, o, f, local, r->comp[item * r->num_outputs + o]));
  return STK_OK;
}

/* Streaming remote shards: the blocks of the planned samples are fetched ahead, in the
 * sampler's order (the next shard of a shuffled epoch included), while the batches
 * before them are read. Random access reads exactly each sample, so it needs none. */
static stk_status wds_plan(stk__node *node, stk__plan *plan) {
  STK_TRY(stk__reader_plan(node, plan));
  wds_state *r = *stk__node_state(node);
  if (!r->files.cache || !stk__arg_bool(node, NULL, A_STREAMING)) return STK_OK;
  for (int64_t i = 0; i < plan->count; i++) {
    int64_t item = plan->items_[i];
    if (item < 0 || item >= r->num_samples) continue;
    int64_t f = r->sample_file[item], k = r->comp[item * r->num_outputs];
    if (k >= 0) stk__fileset_hint(&r->files, f, r->indexes[f].comps[k].offset);
  }
  return STK_OK;
}

static const stk_op_schema wds_schema = {
    .name = "readers.webdataset",
    .doc =
        "Reads WebDataset tar shards (DALI's webdataset reader): members sharing a key "
        "(directory + base name up to the first dot) in consecutive order form a sample; each "
        "output takes the component whose extension matches its `ext` entry. USTAR, GNU long "
        "names and pax headers are understood; shards are indexed at build time unless "
        "index_paths are given. Sharding, padding and shuffling work over all shards' samples "
        "as one data set.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = -1,
    .outputs = wds_outputs,
    .num_args = sizeof wds_args / sizeof wds_args[0],
    .args = wds_args,
};

/* The sample cache's name of an item: its shard and its index there (op.h's
 * item_identity); the stamp is the shard's. */
static stk_status wds_identity(stk__node *node, int64_t item, stk__strbuf *id, stk__strbuf *stamp,
                               const char **source) {
  wds_state *r = *stk__node_state(node);
  if (item < 0 || item >= r->num_samples)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  int64_t f = r->sample_file[item];
  char where[32];
  snprintf(where, sizeof where, "#%lld", (long long)r->sample_local[item]);
  *source = r->files.paths[f];
  return stk__reader_file_identity(r->files.paths[f], where, id, stamp);
}

const stk__op_def stk__op_readers_webdataset = {
    .schema = &wds_schema,
    .init = wds_init,
    .destroy = wds_destroy,
    .plan = wds_plan,
    .run_sample = wds_run,
    .reader_meta = stk__reader_meta,
    .num_outputs = wds_num_outputs,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
    .item_identity = wds_identity,
};
