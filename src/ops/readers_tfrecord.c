/* readers.tfrecord: DALI's TFRecord reader. Records are indexed at build time (or DALI
 * index files loaded); workers read a whole record with pread, verify both CRC32Cs and
 * parse the tf.train.Example with io/tfrecord.c, one output per requested feature. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/fileset.h"
#include "../io/tfrecord.h"
#include "reader_common.h"

enum {
  A_PATH,
  A_INDEX_PATH,
  A_NAMES,
  A_TYPES,
  A_KINDS,
  A_NDIMS,
  A_SHAPES,
  A_DEFAULTS,
  A_HAS_DEFAULT,
  A_USE_O_DIRECT,
  A_STREAMING,
  A_COMMON,
  A_REMOTE = A_COMMON + STK__RA_COUNT,
};

static const stk_arg_schema tf_args[] = {
    [A_PATH] =
        {.name = "path",
         .type = STK_ARG_STRINGS,
         .flags = STK_ARGF_REQUIRED,
         .doc =
             "The TFRecord files, in order (brace patterns expand). URLs too: s3://bucket/key or "
             "http(s)://...; an s3:// path ending in '/' or with *, ? or [...] in its last "
             "component "
             "names the listed objects it matches (docs/formats.md, Remote datasets)."},
    [A_INDEX_PATH] =
        {.name = "index_path",
         .type = STK_ARG_STRINGS,
         .doc = "Index files, one per file, in DALI's tfrecord2idx format (\"<offset> <size>\" per "
                "record). When absent, the records' headers are walked at build time."},
    [A_NAMES] =
        {.name = "feature_names",
         .type = STK_ARG_STRINGS,
         .flags = STK_ARGF_REQUIRED,
         .doc =
             "The features to read, one output each, in this order (the keys of DALI's `features` "
             "dict)."},
    [A_TYPES] =
        {.name = "feature_types",
         .type = STK_ARG_STRINGS,
         .flags = STK_ARGF_REQUIRED,
         .choices = "string|int64|float32",
         .doc =
             "Type of each feature: \"string\" gives the bytes as a 1-D uint8 tensor, \"int64\" an "
             "int64 tensor, \"float32\" a float32 tensor."},
    [A_KINDS] =
        {.name = "feature_kinds",
         .type = STK_ARG_STRINGS,
         .choices = "fixed|var",
         .doc = "\"fixed\" (FixedLenFeature: exactly prod(shape) values, output of that shape) or "
                "\"var\" (VarLenFeature: any number, a 1-D output); all \"fixed\" when absent."},
    [A_NDIMS] =
        {.name = "feature_ndims",
         .type = STK_ARG_INTS,
         .doc =
             "Number of dimensions of each fixed feature's shape (0 for a scalar, ignored for var "
             "features); all 0 when absent."},
    [A_SHAPES] = {.name = "feature_shapes",
                  .type = STK_ARG_INTS,
                  .doc = "The fixed features' shapes, concatenated (sum(feature_ndims) values)."},
    [A_DEFAULTS] =
        {.name = "feature_defaults",
         .type = STK_ARG_STRINGS,
         .doc = "Default value of each feature when a record lacks it, as text: the bytes for "
                "\"string\", one number or prod(shape) numbers (separated by commas or blanks) for "
                "numbers. Without a default, a missing fixed feature is an error and a missing var "
                "feature is empty."},
    [A_HAS_DEFAULT] =
        {.name = "feature_has_default",
         .type = STK_ARG_INTS,
         .doc = "1 where feature_defaults holds a default, 0 where it does not (all 1 when "
                "feature_defaults is given and this is not)."},
    [A_USE_O_DIRECT] = {.name = "use_o_direct",
                        .type = STK_ARG_BOOL,
                        .default_text = "false",
                        .doc = STK__READER_COMPAT},
    [A_STREAMING] = STK__READER_STREAMING_ARG,
    [A_COMMON] = STK__READER_COMMON_ARGS,
    [A_REMOTE] = STK__READER_REMOTE_ARGS,
    STK__READER_REMOTE_CACHE_ARGS,
};
STK__CHECK_ARGS(tf_args, A_REMOTE + STK__RR_COUNT);

static const stk_port_schema tf_outputs[] = {
    {"features", "one per feature_names entry, typed by feature_types"},
};

enum { T_STRING, T_INT64, T_FLOAT32 };

typedef struct {
  const char *name;
  int type;
  bool var;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  int64_t numel;
  bool has_default;
  int64_t num_defaults;
  int64_t *int_defaults;
  float *float_defaults;
  const char *bytes_default;
} feature_spec;

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  stk__fileset files;
  stk__remote_opts remote; /* the remote_* arguments */
  int num_features;
  feature_spec *specs;
  const char **names;
  int64_t num_records;
  int32_t *rec_file;
  int64_t *rec_offset, *rec_size;
} tf_state;

static int tf_num_outputs(const stk__node *node) {
  const char *const *names;
  return (int)stk__arg_strings(node, A_NAMES, &names);
}

static void tf_destroy(stk__node *node) {
  tf_state *r = *stk__node_state(node);
  if (!r) return;
  for (int i = 0; r->specs && i < r->num_features; i++) {
    free(r->specs[i].int_defaults);
    free(r->specs[i].float_defaults);
  }
  free(r->specs);
  free(r->names);
  stk__fileset_close(&r->files);
  free(r->rec_file);
  free(r->rec_offset);
  free(r->rec_size);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

/* ---- feature specs ---- */

/* Parses a numeric default list ("3", "1, 2, 3", "[0.5 1]"). */
static stk_status parse_numbers(const stk__node *node, feature_spec *f, const char *text) {
  size_t cap = strlen(text) / 2 + 1;
  f->int_defaults = stk__calloc(cap, sizeof *f->int_defaults, "feature defaults");
  f->float_defaults = stk__calloc(cap, sizeof *f->float_defaults, "feature defaults");
  if (!f->int_defaults || !f->float_defaults) return STK_ERR_OUT_OF_MEMORY;
  const char *p = text;
  f->num_defaults = 0;
  for (;;) {
    while (*p == ' ' || *p == ',' || *p == '[' || *p == ']' || *p == '\t') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    if (f->type == T_INT64)
      f->int_defaults[f->num_defaults] = strtoll(p, &end, 10);
    else
      f->float_defaults[f->num_defaults] = strtof(p, &end);
    if (end == p || errno == ERANGE || (*end && !strchr(" ,[]\t", *end)))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "%s: feature '%s': default \"%s\" is not a list "
                      "of %s numbers",
                      stk__node_name(node), f->name, text,
                      f->type == T_INT64 ? "integer" : "float");
    f->num_defaults++;
    p = end;
  }
  bool fits = f->var ? f->num_defaults >= 1 : (f->num_defaults == 1 || f->num_defaults == f->numel);
  if (!fits)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: feature '%s': %lld default values, the shape "
                    "needs 1 or %lld",
                    stk__node_name(node), f->name, (long long)f->num_defaults, (long long)f->numel);
  return STK_OK;
}

static stk_status list_lengths(const stk__node *node, size_t n) {
  const char *name = stk__node_name(node);
  const char *const *s;
  const int64_t *v;
  static const struct {
    int arg;
    const char *what;
    bool ints;
  } lists[] = {{A_TYPES, "feature_types", false},
               {A_KINDS, "feature_kinds", false},
               {A_NDIMS, "feature_ndims", true},
               {A_DEFAULTS, "feature_defaults", false},
               {A_HAS_DEFAULT, "feature_has_default", true}};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    if (lists[i].arg != A_TYPES && !stk__arg_given(node, lists[i].arg)) continue;
    size_t k = lists[i].ints ? stk__arg_ints(node, NULL, lists[i].arg, &v)
                             : stk__arg_strings(node, lists[i].arg, &s);
    if (k != n)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu feature_names but %zu %s", name, n, k,
                      lists[i].what);
  }
  return n == 0 ? STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: feature_names is empty", name) : STK_OK;
}

/* Reads feature i's shape from feature_ndims/feature_shapes (consuming from *pos). */
static stk_status spec_shape(const stk__node *node, feature_spec *f, int i, size_t *pos) {
  const int64_t *ndims, *shapes;
  size_t nshapes = stk__arg_ints(node, NULL, A_SHAPES, &shapes);
  int64_t nd =
      stk__arg_given(node, A_NDIMS) ? (stk__arg_ints(node, NULL, A_NDIMS, &ndims), ndims[i]) : 0;
  if (nd < 0 || nd > STK_MAX_NDIM)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: feature '%s': feature_ndims %lld is outside "
                    "[0, %d]",
                    stk__node_name(node), f->name, (long long)nd, STK_MAX_NDIM);
  if (*pos + (size_t)nd > nshapes)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: feature_shapes has %zu values, feature_ndims "
                    "needs more",
                    stk__node_name(node), nshapes);
  f->ndim = f->var ? 1 : (int)nd;
  f->numel = 1;
  for (int d = 0; d < nd; d++) {
    int64_t e = shapes[*pos + (size_t)d];
    if (e < 0 || e > ((int64_t)1 << 31))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: feature '%s': shape entry %lld out of range",
                      stk__node_name(node), f->name, (long long)e);
    if (!f->var) f->shape[d] = e, f->numel *= e;
  }
  *pos += (size_t)nd;
  if (f->type == T_STRING && !f->var && f->numel != 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: string feature '%s' must hold one value "
                    "(shape [] or [1]): its bytes are the output",
                    stk__node_name(node), f->name);
  return STK_OK;
}

static stk_status build_specs(stk__node *node, tf_state *r) {
  const char *const *names, *const *types, *const *kinds, *const *defaults;
  const int64_t *has;
  size_t n = stk__arg_strings(node, A_NAMES, &names);
  STK_TRY(list_lengths(node, n));
  stk__arg_strings(node, A_TYPES, &types);
  stk__arg_strings(node, A_KINDS, &kinds);
  stk__arg_strings(node, A_DEFAULTS, &defaults);
  stk__arg_ints(node, NULL, A_HAS_DEFAULT, &has);
  r->num_features = (int)n;
  r->specs = stk__calloc(n, sizeof *r->specs, "feature specs");
  r->names = stk__calloc(n, sizeof *r->names, "feature specs");
  if (!r->specs || !r->names) return STK_ERR_OUT_OF_MEMORY;
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    feature_spec *f = &r->specs[i];
    f->name = r->names[i] = names[i];
    f->type = strcmp(types[i], "string") == 0  ? T_STRING
              : strcmp(types[i], "int64") == 0 ? T_INT64
                                               : T_FLOAT32;
    f->var = stk__arg_given(node, A_KINDS) && strcmp(kinds[i], "var") == 0;
    STK_TRY(spec_shape(node, f, (int)i, &pos));
    f->has_default =
        stk__arg_given(node, A_DEFAULTS) && (!stk__arg_given(node, A_HAS_DEFAULT) || has[i] != 0);
    if (f->has_default && f->type == T_STRING)
      f->bytes_default = defaults[i];
    else if (f->has_default)
      STK_TRY(parse_numbers(node, f, defaults[i]));
  }
  return STK_OK;
}

/* ---- records ---- */

static stk_status add_records(tf_state *r, int64_t f, const stk__tfrecord_index *idx,
                              int64_t *cap) {
  int64_t need = r->num_records + idx->count;
  if (need > *cap) {
    int64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    int32_t *a = stk__realloc(r->rec_file, (size_t)c * sizeof *a, "the TFRecord records");
    if (a) r->rec_file = a;
    int64_t *b = stk__realloc(r->rec_offset, (size_t)c * sizeof *b, "the TFRecord records");
    if (b) r->rec_offset = b;
    int64_t *d = stk__realloc(r->rec_size, (size_t)c * sizeof *d, "the TFRecord records");
    if (d) r->rec_size = d;
    if (!a || !b || !d) return STK_ERR_OUT_OF_MEMORY;
    *cap = c;
  }
  for (int64_t i = 0; i < idx->count; i++) {
    r->rec_file[r->num_records] = (int32_t)f;
    r->rec_offset[r->num_records] = idx->offsets[i];
    r->rec_size[r->num_records++] = idx->sizes[i];
  }
  return STK_OK;
}

static stk_status index_file(stk__node *node, tf_state *r, int64_t f, const char *index_path,
                             stk__tfrecord_index *idx) {
  const char *path = r->files.paths[f];
  if (index_path) return stk__tfrecord_index_load(idx, index_path, path, r->files.sizes[f]);
  if (r->files.fds[f] == STK__FD_REMOTE) {
    stk__source src = {.fs = &r->files, .index = f, .path = path};
    return stk__tfrecord_index_build_source(idx, &src, r->files.sizes[f]);
  }
  int fd = r->files.fds[f] >= 0 ? r->files.fds[f] : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return STK_FAIL(STK_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  stk_status st = stk__tfrecord_index_build(idx, fd, path, r->files.sizes[f]);
  if (fd != r->files.fds[f]) close(fd);
  return st;
}

/* Indexes file f and adds its records; a file that cannot be indexed is an error, or left
 * out under on_error="skip". */
static stk_status add_file(stk__node *node, tf_state *r, int64_t f, const char *index_path,
                           int64_t *cap) {
  const char *name = stk__node_name(node);
  stk__tfrecord_index idx;
  memset(&idx, 0, sizeof idx);
  stk_status st = index_file(node, r, f, index_path, &idx);
  if (st == STK_OK) {
    st = add_records(r, f, &idx, cap);
    if (st != STK_OK) st = stk__wrap(st, "%s", name);
  } else {
    stk_status why = stk__wrap(st, "%s", name);
    st = stk__reader_skip_file(node, r->files.paths[f], why);
    if (st == STK_OK) stk__fileset_mark_bad(&r->files, f, why);
  }
  stk__tfrecord_index_free(&idx);
  return st;
}

static stk_status build_records(stk__node *node, tf_state *r) {
  const char *name = stk__node_name(node);
  const char *const *pat;
  size_t np = stk__arg_strings(node, A_PATH, &pat);
  char **paths = NULL, **index = NULL;
  size_t num_paths = 0, num_index = 0;
  stk_status st = stk__reader_expand_paths(node, pat, np, "path", &paths, &num_paths);
  if (st == STK_OK && stk__arg_given(node, A_INDEX_PATH)) {
    np = stk__arg_strings(node, A_INDEX_PATH, &pat);
    st = stk__expand_braces(pat, np, name, "index_path", &index, &num_index);
    if (st == STK_OK && num_index != num_paths)
      st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu paths but %zu index_path entries", name,
                    num_paths, num_index);
  }
  if (st == STK_OK && num_paths == 0)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: path is empty", name);
  if (st == STK_OK)
    st = stk__reader_fileset_open(node, &r->files, (const char *const *)paths, num_paths);
  int64_t cap = 0;
  for (int64_t f = 0; st == STK_OK && f < r->files.count; f++)
    if (r->files.fds[f] != STK__FD_BAD) st = add_file(node, r, f, index ? index[f] : NULL, &cap);
  if (st == STK_OK) st = stk__reader_check_files(node, &r->files);
  if (st == STK_OK && r->num_records == 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND, "%s: the %lld file(s) hold no record", name,
                  (long long)r->files.count);
  free(paths);
  free(index);
  return st;
}

static stk_status tf_init(stk__node *node) {
  tf_state *r = stk__calloc(1, sizeof *r, "a TFRecord reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  /* the build's requests use the reader's remote settings; so do the file set's later */
  stk__reader_remote_opts(node, A_REMOTE, true, &r->remote);
  const stk__remote_opts *prev = stk__remote_use(&r->remote);
  stk_status st = build_specs(node, r);
  if (st == STK_OK) st = build_records(node, r);
  if (st == STK_OK)
    st = stk__reader_file_sampler(node, A_COMMON, r->num_records, r->rec_file, r->files.count,
                                  stk__arg_bool(node, NULL, A_STREAMING), &r->base.sampler);
  /* indexed: random access reads each record exactly (no blocks for remote files) */
  if (st == STK_OK && !stk__arg_bool(node, NULL, A_STREAMING))
    stk__fileset_random_access(&r->files);
  else if (st == STK_OK)
    stk__reader_check_cache(node, A_COMMON, &r->files, r->num_records);
  stk__remote_use(prev);
  if (st != STK_OK) tf_destroy(node);
  return st;
}

/* ---- outputs ---- */

typedef struct {
  uint8_t *dst;
  size_t n;
} bytes_sink;

static stk_status take_bytes(void *user, const uint8_t *p, size_t n) {
  bytes_sink *b = user;
  b->dst = (uint8_t *)p;
  b->n = n;
  return STK_OK;
}

static stk_status write_default(stk__sample *s, int o, const feature_spec *f) {
  stk__tensor *out;
  if (f->type == T_STRING) {
    int64_t n = (int64_t)strlen(f->bytes_default);
    STK_TRY(stk__output(s, o, STK_DTYPE_UINT8, 1, &n, NULL, &out));
    memcpy(out->data, f->bytes_default, (size_t)n);
    return STK_OK;
  }
  int64_t count = f->var ? f->num_defaults : f->numel, shape[STK_MAX_NDIM];
  if (f->var)
    shape[0] = count;
  else
    memcpy(shape, f->shape, sizeof shape);
  STK_TRY(stk__output(s, o, f->type == T_INT64 ? STK_DTYPE_INT64 : STK_DTYPE_FLOAT32, f->ndim,
                      shape, NULL, &out));
  for (int64_t i = 0; i < count; i++) {
    int64_t k = f->num_defaults == 1 ? 0 : i;
    if (f->type == T_INT64)
      ((int64_t *)out->data)[i] = f->int_defaults[k];
    else
      ((float *)out->data)[i] = f->float_defaults[k];
  }
  return STK_OK;
}

/* Feature `o` of the record (`path` at `offset`) into output o. */
static stk_status write_feature(stk__node *node, stk__sample *s, int o, const feature_spec *f,
                                const stk__tf_feature *v, const char *path, int64_t offset) {
  static const stk__tf_kind want[] = {STK__TF_BYTES, STK__TF_INT64, STK__TF_FLOAT};
  static const char *const kind_names[] = {"missing", "bytes_list", "float_list", "int64_list",
                                           "empty"};
  bool absent = v->kind == STK__TF_MISSING || v->count == 0;
  if (absent && f->has_default) return write_default(s, o, f);
  if (!absent && v->kind != want[f->type])
    return STK_FAIL(STK_ERR_DECODE,
                    "%s: feature '%s' of the record at offset %lld of '%s' is a "
                    "%s, not %s",
                    stk__node_name(node), f->name, (long long)offset, path, kind_names[v->kind],
                    kind_names[want[f->type]]);
  int64_t count = absent ? 0 : v->count;
  if (!f->var && count != f->numel)
    return STK_FAIL(STK_ERR_DECODE,
                    "%s: feature '%s' of the record at offset %lld of '%s' has "
                    "%lld value(s), its shape needs %lld%s",
                    stk__node_name(node), f->name, (long long)offset, path, (long long)count,
                    (long long)f->numel, absent ? " (it is missing and has no default)" : "");
  stk__tensor *out;
  if (f->type == T_STRING) {
    if (count > 1)
      return STK_FAIL(STK_ERR_DECODE,
                      "%s: string feature '%s' of the record at offset %lld of "
                      "'%s' holds %lld values, one is supported",
                      stk__node_name(node), f->name, (long long)offset, path, (long long)count);
    bytes_sink b = {NULL, 0};
    if (count) STK_TRY(stk__tf_feature_bytes(v, take_bytes, &b));
    int64_t n = (int64_t)b.n;
    STK_TRY(stk__output(s, o, STK_DTYPE_UINT8, 1, &n, NULL, &out));
    if (n) memcpy(out->data, b.dst, b.n);
    return STK_OK;
  }
  int64_t shape[STK_MAX_NDIM];
  if (f->var)
    shape[0] = count;
  else
    memcpy(shape, f->shape, sizeof shape);
  STK_TRY(stk__output(s, o, f->type == T_INT64 ? STK_DTYPE_INT64 : STK_DTYPE_FLOAT32, f->ndim,
                      shape, NULL, &out));
  if (count == 0) return STK_OK;
  return f->type == T_INT64 ? stk__tf_feature_int64(v, out->data)
                            : stk__tf_feature_float(v, out->data);
}

static stk_status tf_run(stk__node *node, stk__sample *s) {
  tf_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->num_records)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  int64_t f = r->rec_file[item], offset = r->rec_offset[item], size = r->rec_size[item];
  const char *path = r->files.paths[f];
  stk__sample_set_source(s, path);
  if (size > stk__node_max_file_bytes(node))
    return STK_FAIL(STK_ERR_LIMIT,
                    "%s: the record at offset %lld of '%s' has %lld bytes, more "
                    "than max_file_bytes",
                    stk__node_name(node), (long long)offset, path, (long long)size);
  uint8_t *rec = stk__scratch(s, (size_t)size);
  stk__tf_feature *found = stk__scratch(s, sizeof *found * (size_t)r->num_features);
  if (!rec || !found)
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: cannot hold a record of %lld bytes",
                    stk__node_name(node), (long long)size);
  STK_TRY(stk__fileset_read(&r->files, f, offset, rec, (size_t)size));
  const uint8_t *payload;
  size_t len;
  STK_TRY(stk__tfrecord_check(rec, (size_t)size, path, offset, &payload, &len));
  stk_status st = stk__tf_example_find(payload, len, r->names, (size_t)r->num_features, found);
  if (st != STK_OK) return stk__wrap(st, "'%s', record at offset %lld", path, (long long)offset);
  for (int o = 0; o < r->num_features; o++)
    STK_TRY(write_feature(node, s, o, &r->specs[o], &found[o], path, offset));
  return STK_OK;
}

/* Streaming remote files: the blocks of the planned records are fetched ahead, in the
 * sampler's order (the next file of a shuffled epoch included). */
static stk_status tf_plan(stk__node *node, stk__plan *plan) {
  STK_TRY(stk__reader_plan(node, plan));
  tf_state *r = *stk__node_state(node);
  if (!r->files.cache || !stk__arg_bool(node, NULL, A_STREAMING)) return STK_OK;
  for (int64_t i = 0; i < plan->count; i++) {
    int64_t item = plan->items_[i];
    if (item >= 0 && item < r->num_records)
      stk__fileset_hint(&r->files, r->rec_file[item], r->rec_offset[item]);
  }
  return STK_OK;
}

static const stk_op_schema tf_schema = {
    .name = "readers.tfrecord",
    .doc =
        "Reads tf.train.Example records from TFRecord files (DALI's TFRecord reader), checking "
        "both masked CRC32Cs of every record (a mismatch is an error naming the file and "
        "offset, skipped under on_error=\"skip\"). DALI's `features` dict maps to parallel "
        "lists: feature_names, feature_types, feature_kinds, feature_ndims + feature_shapes, "
        "feature_defaults (+ feature_has_default). Sharding, padding and shuffling work over "
        "all files' records as one data set.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = -1,
    .outputs = tf_outputs,
    .num_args = sizeof tf_args / sizeof tf_args[0],
    .args = tf_args,
};

/* The sample cache's name of an item: its file and the record's offset there (op.h's
 * item_identity); the stamp is the file's. */
static stk_status tf_identity(stk__node *node, int64_t item, stk__strbuf *id, stk__strbuf *stamp,
                              const char **source) {
  tf_state *r = *stk__node_state(node);
  if (item < 0 || item >= r->num_records)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  int64_t f = r->rec_file[item];
  char where[32];
  snprintf(where, sizeof where, "@%lld", (long long)r->rec_offset[item]);
  *source = r->files.paths[f];
  return stk__reader_file_identity(r->files.paths[f], where, id, stamp);
}

const stk__op_def stk__op_readers_tfrecord = {
    .schema = &tf_schema,
    .init = tf_init,
    .destroy = tf_destroy,
    .plan = tf_plan,
    .run_sample = tf_run,
    .reader_meta = stk__reader_meta,
    .num_outputs = tf_num_outputs,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
    .item_identity = tf_identity,
};
