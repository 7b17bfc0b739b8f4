/* readers.caffe: DALI's Caffe LMDB reader. Each LMDB of `path` is opened read-only at
 * build time and its keys listed in key order (databases after one another); a worker
 * reads a sample's value in its own read transaction (the environment is opened with
 * NOTLS, so any thread may) and parses it as a Caffe Datum. Outputs: images (the datum's
 * bytes for encoded datums; raw datums, stored CHW, come out as uint8 HWC pixels) when
 * image_available, labels (int32 [1]) when label_available. LMDB comes from
 * liblmdb.so.0, loaded at run time (io/lmdb_dl.h). */
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
  if (rc) return STK_FAIL(STK_ERR_NOT_FOUND, "%s: cannot open LMDB '%s': %s",
                          stk__node_name(node), path, m->strerror(rc));
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

static stk_status caffe_init(stk__node *node) {
  caffe_state *r = stk__calloc(1, sizeof *r, "a Caffe reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  const char *const *paths;
  r->num_dbs = stk__arg_strings(node, A_PATH, &paths);
  r->images = stk__arg_bool(node, NULL, A_IMAGE_AVAILABLE);
  r->labels = stk__arg_bool(node, NULL, A_LABEL_AVAILABLE);
  r->mdb = stk__lmdb();
  stk_status st = r->mdb ? STK_OK : stk__wrap(STK_ERR_UNSUPPORTED, "%s", stk__node_name(node));
  if (st == STK_OK && (r->num_dbs == 0 || (!r->images && !r->labels)))
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: needs a path and an output available",
                  stk__node_name(node));
  if (st == STK_OK) r->dbs = stk__calloc(r->num_dbs, sizeof *r->dbs, "LMDB handles");
  if (st == STK_OK && !r->dbs) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; st == STK_OK && i < r->num_dbs; i++) st = open_db(node, r, (int32_t)i, paths[i]);
  if (st == STK_OK && r->count == 0)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: the databases are empty", stk__node_name(node));
  if (st == STK_OK)
    st = stk__reader_sampler(node, A_SHARD_ID, r->count, NULL, 0, &r->base.sampler);
  if (st != STK_OK) caffe_destroy(node);
  return st;
}

/* Raw datum pixels (CHW) as HWC. */
static stk_status raw_image(stk__node *node, stk__sample *s, const stk__caffe_datum *d) {
  int64_t c = d->channels, h = d->height, w = d->width;
  if (c < 1 || h < 1 || w < 1 || c > 4096 || h * w > stk__node_max_pixels(node) ||
      (size_t)(c * h * w) != d->data_size)
    return STK__SFAIL(STK_ERR_DECODE, node, s,
                      "a raw datum of %lldx%lldx%lld holds %zu bytes", (long long)c, (long long)h,
                      (long long)w, d->data_size);
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

static stk_status caffe_run(stk__node *node, stk__sample *s) {
  caffe_state *r = *stk__node_state(node);
  const entry *e = &r->entries[stk__sample_item(s, node)];
  const stk__lmdb_api *m = r->mdb;
  stk__mdb_txn *txn;
  int rc = m->txn_begin(r->dbs[e->db].env, NULL, STK__MDB_RDONLY, &txn);
  if (rc)
    return STK__SFAIL(STK_ERR_IO, node, s, "LMDB transaction: %s", m->strerror(rc));
  stk__mdb_val k = {e->key_size, r->keys + e->key_at}, v;
  rc = m->get(txn, r->dbs[e->db].dbi, &k, &v);
  stk_status st = STK_OK;
  stk__caffe_datum d;
  if (rc)
    st = STK__SFAIL(STK_ERR_IO, node, s, "LMDB read: %s", m->strerror(rc));
  else if (!stk__caffe_datum_parse(v.mv_data, v.mv_size, &d))
    st = STK__SFAIL(STK_ERR_DECODE, node, s, "record %lld is not a Caffe Datum",
                    (long long)stk__sample_item(s, node));
  if (st == STK_OK) st = write_outputs(node, s, r, &d); /* reads v while the txn lives */
  m->txn_abort(txn);
  return st;
}

static int caffe_num_outputs(const stk__node *node) {
  return (stk__arg_bool(node, NULL, A_IMAGE_AVAILABLE) ? 1 : 0) +
         (stk__arg_bool(node, NULL, A_LABEL_AVAILABLE) ? 1 : 0);
}

static const stk_op_schema caffe_schema = {
    .name = "readers.caffe",
    .doc = "Reads (image, label) pairs from Caffe LMDB databases of Datum records (DALI's "
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
