/* readers.caffe and readers.caffe2: DALI's Caffe and Caffe2 LMDB readers. Each LMDB of `path` is
 * opened read-only at build time and its keys listed in key order (databases after one another); a
 * worker reads a sample's value in its own read transaction (the environment is opened with NOTLS,
 * so any thread may) and parses it as a Caffe Datum. Outputs: images (the datum's bytes for encoded
 * datums; raw datums, stored CHW, come out as uint8 HWC pixels) when image_available, labels (int32
 * [1]) when label_available. readers.caffe2 reads TensorProtos records instead (the image, then the
 * label tensors by label_type). LMDB comes from liblmdb.so.0, loaded at run time (io/lmdb_dl.h). */
#include <stdlib.h>
#include <string.h>

#include "../io/caffe_datum.h"
#include "../io/lmdb_dl.h"
#include "image_util.h"
#include "reader_common.h"

enum {
  A_PATH,
  A_IMAGE_AVAILABLE,
  A_LABEL_AVAILABLE,
  A_SHARD_ID,
  A_COUNT_ = A_SHARD_ID + STK__RA_COUNT
};

static const stk_arg_schema caffe_args[] = {
    [A_PATH] = {.name = "path",
                .type = STK_ARG_STRINGS,
                .flags = STK_ARGF_REQUIRED,
                .doc = "the Caffe LMDB directories"},
    [A_IMAGE_AVAILABLE] = {.name = "image_available",
                           .type = STK_ARG_BOOL,
                           .default_text = "true",
                           .doc = "output the datums' images"},
    [A_LABEL_AVAILABLE] = {.name = "label_available",
                           .type = STK_ARG_BOOL,
                           .default_text = "true",
                           .doc = "output the datums' labels"},
    STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(caffe_args, A_COUNT_);

static const stk_port_schema caffe_outputs[] = {
    {"[images], [labels]",
     "the image (encoded bytes, or HWC uint8 pixels for raw datums) and the label (int32 "
     "[1]), each when available"}};

typedef struct {
  stk__mdb_env *env;
  stk__mdb_dbi dbi;
} lmdb_db;

typedef struct {
  int32_t db;
  uint32_t key_size;
  int64_t key_at; /* offset in keys */
} entry;

typedef struct {
  stk__reader_base base;
  const stk__lmdb_api *mdb;
  lmdb_db *dbs;
  size_t num_dbs;
  entry *entries;
  int64_t count, cap;
  char *keys;
  int64_t keys_len, keys_cap;
  bool images, labels;
  bool caffe2;
  int64_t label_type, num_labels; /* caffe2 */
} caffe_state;

static void caffe_destroy(stk__node *node) {
  caffe_state *r = *stk__node_state(node);
  if (!r) return;
  for (size_t i = 0; r->mdb && i < r->num_dbs; i++)
    if (r->dbs[i].env) r->mdb->env_close(r->dbs[i].env);
  free(r->dbs);
  free(r->entries);
  free(r->keys);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

static stk_status add_key(caffe_state *r, int32_t db, const stk__mdb_val *k) {
  if (r->count == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 1024;
    entry *e = stk__realloc(r->entries, (size_t)r->cap * sizeof *e, "LMDB keys");
    if (!e) return STK_ERR_OUT_OF_MEMORY;
    r->entries = e;
  }
  while (r->keys_len + (int64_t)k->mv_size > r->keys_cap) {
    r->keys_cap = r->keys_cap ? 2 * r->keys_cap : 65536;
    char *p = stk__realloc(r->keys, (size_t)r->keys_cap, "LMDB keys");
    if (!p) return STK_ERR_OUT_OF_MEMORY;
    r->keys = p;
  }
  memcpy(r->keys + r->keys_len, k->mv_data, k->mv_size);
  r->entries[r->count++] = (entry){db, (uint32_t)k->mv_size, r->keys_len};
  r->keys_len += (int64_t)k->mv_size;
  return STK_OK;
}

static stk_status mdb_fail(const stk__node *node, const caffe_state *r, const char *path,
                           const char *what, int rc) {
  return STK_FAIL(STK_ERR_IO, "%s: LMDB '%s': %s: %s", stk__node_name(node), path, what,
                  r->mdb->strerror(rc));
}

/* Opens database i at `path` and lists its keys. */
static stk_status open_db(stk__node *node, caffe_state *r, int32_t i, const char *path) {
  const stk__lmdb_api *m = r->mdb;
  lmdb_db *db = &r->dbs[i];
  int rc = m->env_create(&db->env);
  if (rc) return mdb_fail(node, r, path, "cannot create an environment", rc);
  rc = m->env_open(db->env, path, STK__MDB_RDONLY | STK__MDB_NOTLS | STK__MDB_NOLOCK, 0664);
  if (rc)
    return STK_FAIL(STK_ERR_NOT_FOUND, "%s: cannot open LMDB '%s': %s", stk__node_name(node), path,
                    m->strerror(rc));
  stk__mdb_txn *txn;
  rc = m->txn_begin(db->env, NULL, STK__MDB_RDONLY, &txn);
  if (rc) return mdb_fail(node, r, path, "cannot begin a transaction", rc);
  stk__mdb_cursor *cur = NULL;
  rc = m->dbi_open(txn, NULL, 0, &db->dbi);
  if (!rc) rc = m->cursor_open(txn, db->dbi, &cur);
  stk_status st = rc ? mdb_fail(node, r, path, "cannot open the database", rc) : STK_OK;
  stk__mdb_val k, v;
  for (int op = STK__MDB_FIRST; st == STK_OK; op = STK__MDB_NEXT) {
    rc = m->cursor_get(cur, &k, &v, op);
    if (rc == STK__MDB_NOTFOUND) break;
    st = rc ? mdb_fail(node, r, path, "cannot list the keys", rc) : add_key(r, i, &k);
  }
  if (cur) m->cursor_close(cur);
  m->txn_abort(txn);
  return st;
}

/* Opens the databases and the sampler (`base`: the first common reader argument). */
static stk_status open_all(stk__node *node, caffe_state *r, int base) {
  const char *const *paths;
  r->num_dbs = stk__arg_strings(node, A_PATH, &paths);
  r->mdb = stk__lmdb();
  stk_status st = r->mdb ? STK_OK : stk__wrap(STK_ERR_UNSUPPORTED, "%s", stk__node_name(node));
  if (st == STK_OK && (r->num_dbs == 0 || (!r->images && !r->labels)))
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: needs a path and an output available",
                  stk__node_name(node));
  if (st == STK_OK) r->dbs = stk__calloc(r->num_dbs, sizeof *r->dbs, "LMDB handles");
  if (st == STK_OK && !r->dbs) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; st == STK_OK && i < r->num_dbs; i++)
    st = open_db(node, r, (int32_t)i, paths[i]);
  if (st == STK_OK && r->count == 0)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: the databases are empty", stk__node_name(node));
  if (st == STK_OK) st = stk__reader_sampler(node, base, r->count, NULL, 0, &r->base.sampler);
  return st;
}

static stk_status caffe_init(stk__node *node) {
  caffe_state *r = stk__calloc(1, sizeof *r, "a Caffe reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  r->images = stk__arg_bool(node, NULL, A_IMAGE_AVAILABLE);
  r->labels = stk__arg_bool(node, NULL, A_LABEL_AVAILABLE);
  stk_status st = open_all(node, r, A_SHARD_ID);
  if (st != STK_OK) caffe_destroy(node);
  return st;
}

/* Raw datum pixels (CHW) as HWC. */
static stk_status raw_image(stk__node *node, stk__sample *s, const stk__caffe_datum *d) {
  int64_t c = d->channels, h = d->height, w = d->width;
  if (c < 1 || h < 1 || w < 1 || c > 4096 || h * w > stk__node_max_pixels(node) ||
      (size_t)(c * h * w) != d->data_size)
    return STK__SFAIL(STK_ERR_DECODE, node, s, "a raw datum of %lldx%lldx%lld holds %zu bytes",
                      (long long)c, (long long)h, (long long)w, d->data_size);
  int64_t shape[3] = {h, w, c};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 3, shape, "HWC", &out));
  uint8_t *o = out->data;
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++)
      for (int64_t k = 0; k < c; k++) o[(y * w + x) * c + k] = d->data[(k * h + y) * w + x];
  return STK_OK;
}

static stk_status write_outputs(stk__node *node, stk__sample *s, const caffe_state *r,
                                const stk__caffe_datum *d) {
  if (r->images) {
    if (!d->encoded) {
      STK_TRY(raw_image(node, s, d));
    } else {
      int64_t n = (int64_t)d->data_size;
      stk__tensor *out;
      STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 1, &n, NULL, &out));
      memcpy(out->data, d->data, d->data_size);
    }
  }
  if (r->labels) {
    int64_t one = 1;
    stk__tensor *out;
    STK_TRY(stk__output(s, r->images ? 1 : 0, STK_DTYPE_INT32, 1, &one, NULL, &out));
    *(int32_t *)out->data = (int32_t)d->label;
  }
  return STK_OK;
}

/* ---- readers.caffe2's records ---- */

enum { LT_SINGLE, LT_SPARSE, LT_DENSE, LT_WEIGHTED_SPARSE, LT_NONE };

/* The image tensor: an encoded string, or raw bytes with dims [H, W, C] (or [H, W]). */
static stk_status caffe2_image(stk__node *node, stk__sample *s, const stk__caffe2_tensor *t) {
  if (t->has_string) {
    int64_t n = (int64_t)t->string0_size;
    stk__tensor *out;
    STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 1, &n, NULL, &out));
    memcpy(out->data, t->string0, t->string0_size);
    return STK_OK;
  }
  int64_t shape[3] = {t->ndims > 0 ? t->dims[0] : 0, t->ndims > 1 ? t->dims[1] : 0,
                      t->ndims > 2 ? t->dims[2] : 1};
  if ((t->ndims != 2 && t->ndims != 3) || shape[0] < 1 || shape[1] < 1 || shape[2] < 1 ||
      shape[0] * shape[1] > stk__node_max_pixels(node) ||
      (size_t)(shape[0] * shape[1] * shape[2]) != t->bytes_size)
    return STK__SFAIL(STK_ERR_DECODE, node, s,
                      "the image tensor is neither a string nor HWC bytes");
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 3, shape, "HWC", &out));
  memcpy(out->data, t->bytes, t->bytes_size);
  return STK_OK;
}

/* The label output of label_type from the tensors at `at` (and at + 1: weights). */
static stk_status caffe2_label(stk__node *node, stk__sample *s, const caffe_state *r,
                               const stk__caffe2_protos *pr, int at, int index) {
  if (at + (r->label_type == LT_WEIGHTED_SPARSE ? 1 : 0) >= pr->count)
    return STK__SFAIL(STK_ERR_DECODE, node, s, "the record has no label tensor");
  const stk__caffe2_tensor *t = &pr->protos[at];
  int64_t n = r->label_type == LT_SINGLE ? 1 : r->num_labels;
  stk__tensor *out;
  bool ints = r->label_type == LT_SINGLE || r->label_type == LT_SPARSE;
  STK_TRY(stk__output(s, index, ints ? STK_DTYPE_INT32 : STK_DTYPE_FLOAT32, 1, &n, NULL, &out));
  memset(out->data, 0, (size_t)n * 4);
  if (r->label_type == LT_SINGLE) {
    if (t->num_int32s != 1)
      return STK__SFAIL(STK_ERR_DECODE, node, s, "a single label tensor holds %lld values",
                        (long long)t->num_int32s);
    *(int32_t *)out->data = stk__caffe2_int32(t, 0);
  } else if (r->label_type == LT_DENSE) {
    if (t->num_floats != n)
      return STK__SFAIL(STK_ERR_DECODE, node, s, "a dense label of %lld values for %lld labels",
                        (long long)t->num_floats, (long long)n);
    for (int64_t i = 0; i < n; i++) ((float *)out->data)[i] = stk__caffe2_float(t, i);
  } else {
    const stk__caffe2_tensor *w = r->label_type == LT_WEIGHTED_SPARSE ? &pr->protos[at + 1] : NULL;
    if (w && w->num_floats != t->num_int32s)
      return STK__SFAIL(STK_ERR_DECODE, node, s, "%lld label indices but %lld weights",
                        (long long)t->num_int32s, (long long)w->num_floats);
    for (int64_t i = 0; i < t->num_int32s; i++) {
      int32_t k = stk__caffe2_int32(t, i);
      if (k < 0 || k >= n)
        return STK__SFAIL(STK_ERR_DECODE, node, s, "label index %d outside 0..%lld", k,
                          (long long)n - 1);
      if (w)
        ((float *)out->data)[k] = stk__caffe2_float(w, i);
      else
        ((int32_t *)out->data)[k] = 1;
    }
  }
  return STK_OK;
}

static stk_status caffe2_outputs(stk__node *node, stk__sample *s, const caffe_state *r,
                                 const stk__mdb_val *v) {
  stk__caffe2_protos pr;
  if (!stk__caffe2_protos_parse(v->mv_data, v->mv_size, &pr))
    return STK__SFAIL(STK_ERR_DECODE, node, s, "the record is not Caffe2 TensorProtos");
  int at = 0;
  if (r->images) {
    if (pr.count < 1) return STK__SFAIL(STK_ERR_DECODE, node, s, "the record has no tensor");
    STK_TRY(caffe2_image(node, s, &pr.protos[at++]));
  }
  if (r->label_type != LT_NONE) STK_TRY(caffe2_label(node, s, r, &pr, at, r->images ? 1 : 0));
  return STK_OK;
}

static stk_status datum_outputs(stk__node *node, stk__sample *s, const caffe_state *r,
                                const stk__mdb_val *v) {
  stk__caffe_datum d;
  if (!stk__caffe_datum_parse(v->mv_data, v->mv_size, &d))
    return STK__SFAIL(STK_ERR_DECODE, node, s, "record %lld is not a Caffe Datum",
                      (long long)stk__sample_item(s, node));
  return write_outputs(node, s, r, &d);
}

static stk_status caffe_run(stk__node *node, stk__sample *s) {
  caffe_state *r = *stk__node_state(node);
  const entry *e = &r->entries[stk__sample_item(s, node)];
  const stk__lmdb_api *m = r->mdb;
  stk__mdb_txn *txn;
  int rc = m->txn_begin(r->dbs[e->db].env, NULL, STK__MDB_RDONLY, &txn);
  if (rc) return STK__SFAIL(STK_ERR_IO, node, s, "LMDB transaction: %s", m->strerror(rc));
  stk__mdb_val k = {e->key_size, r->keys + e->key_at}, v;
  rc = m->get(txn, r->dbs[e->db].dbi, &k, &v);
  /* The value lives in the map while the transaction does: parse and copy it now. */
  stk_status st = rc          ? STK__SFAIL(STK_ERR_IO, node, s, "LMDB read: %s", m->strerror(rc))
                  : r->caffe2 ? caffe2_outputs(node, s, r, &v)
                              : datum_outputs(node, s, r, &v);
  m->txn_abort(txn);
  return st;
}

static int caffe_num_outputs(const stk__node *node) {
  return (stk__arg_bool(node, NULL, A_IMAGE_AVAILABLE) ? 1 : 0) +
         (stk__arg_bool(node, NULL, A_LABEL_AVAILABLE) ? 1 : 0);
}

static const stk_op_schema caffe_schema = {
    .name = "readers.caffe",
    .doc =
        "Reads (image, label) pairs from Caffe LMDB databases of Datum records (DALI's "
        "Caffe reader); needs liblmdb.so.0 at run time. See docs/formats.md.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .num_outputs = -1,
    .outputs = caffe_outputs,
    .num_args = A_COUNT_,
    .args = caffe_args,
};

const stk__op_def stk__op_readers_caffe = {
    .schema = &caffe_schema,
    .init = caffe_init,
    .destroy = caffe_destroy,
    .plan = stk__reader_plan,
    .run_sample = caffe_run,
    .reader_meta = stk__reader_meta,
    .num_outputs = caffe_num_outputs,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
};

/* ---- readers.caffe2 ---- */

enum {
  C2_PATH, /* = A_PATH: open_all reads it */
  C2_LABEL_TYPE,
  C2_NUM_LABELS,
  C2_ADDITIONAL_INPUTS,
  C2_BBOX,
  C2_IMAGE_AVAILABLE,
  C2_SHARD_ID,
  C2_COUNT_ = C2_SHARD_ID + STK__RA_COUNT
};
_Static_assert((int)C2_PATH == (int)A_PATH, "both readers keep path first");

static const stk_arg_schema caffe2_args[] = {
    [C2_PATH] = {.name = "path",
                 .type = STK_ARG_STRINGS,
                 .flags = STK_ARGF_REQUIRED,
                 .doc = "the Caffe2 LMDB directories"},
    [C2_LABEL_TYPE] = {.name = "label_type",
                       .type = STK_ARG_INT,
                       .flags = STK_ARGF_RANGE,
                       .default_text = "0",
                       .min = 0,
                       .max = 4,
                       .doc = "0: one int32 label; 1: sparse indices -> int32 [num_labels] 0/1; "
                              "2: dense float32 [num_labels]; 3: sparse indices and weights -> "
                              "float32 [num_labels]; 4: no label"},
    [C2_NUM_LABELS] = {.name = "num_labels",
                       .type = STK_ARG_INT,
                       .flags = STK_ARGF_RANGE,
                       .default_text = "1",
                       .min = 1,
                       .max = 1e8,
                       .doc = "the number of classes (label types 1 to 3)"},
    [C2_ADDITIONAL_INPUTS] = {.name = "additional_inputs",
                              .type = STK_ARG_INT,
                              .default_text = "0",
                              .doc = "auxiliary tensors per record: not supported (only 0)"},
    [C2_BBOX] = {.name = "bbox",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "box tensors per record: not supported (only false)"},
    [C2_IMAGE_AVAILABLE] = {.name = "image_available",
                            .type = STK_ARG_BOOL,
                            .default_text = "true",
                            .doc = "the first tensor is the image (encoded string, or HWC bytes)"},
    STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(caffe2_args, C2_COUNT_);

static const stk_port_schema caffe2_outputs_doc[] = {
    {"[images], [labels]",
     "the image (encoded bytes or HWC pixels) and the label as label_type says, each when "
     "present"}};

static stk_status caffe2_init(stk__node *node) {
  if (stk__arg_int(node, NULL, C2_ADDITIONAL_INPUTS) != 0 || stk__arg_bool(node, NULL, C2_BBOX))
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: additional_inputs and bbox are not supported",
                    stk__node_name(node));
  caffe_state *r = stk__calloc(1, sizeof *r, "a Caffe2 reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  r->caffe2 = true;
  r->images = stk__arg_bool(node, NULL, C2_IMAGE_AVAILABLE);
  r->label_type = stk__arg_int(node, NULL, C2_LABEL_TYPE);
  r->num_labels = stk__arg_int(node, NULL, C2_NUM_LABELS);
  r->labels = r->label_type != LT_NONE;
  stk_status st = open_all(node, r, C2_SHARD_ID);
  if (st != STK_OK) caffe_destroy(node);
  return st;
}

static int caffe2_num_outputs(const stk__node *node) {
  return (stk__arg_bool(node, NULL, C2_IMAGE_AVAILABLE) ? 1 : 0) +
         (stk__arg_int(node, NULL, C2_LABEL_TYPE) != LT_NONE ? 1 : 0);
}

static const stk_op_schema caffe2_schema = {
    .name = "readers.caffe2",
    .doc =
        "Reads Caffe2 LMDB databases of TensorProtos records (DALI's Caffe2 reader): the "
        "image tensor and the label by label_type; needs liblmdb.so.0 at run time. See "
        "docs/formats.md.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .num_outputs = -1,
    .outputs = caffe2_outputs_doc,
    .num_args = C2_COUNT_,
    .args = caffe2_args,
};

const stk__op_def stk__op_readers_caffe2 = {
    .schema = &caffe2_schema,
    .init = caffe2_init,
    .destroy = caffe_destroy,
    .plan = stk__reader_plan,
    .run_sample = caffe_run,
    .reader_meta = stk__reader_meta,
    .num_outputs = caffe2_num_outputs,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
};
