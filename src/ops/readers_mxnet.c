/* readers.mxnet: DALI's MXNet RecordIO reader. A .rec file is a run of records, each a
 * little-endian magic 0xced7230a, a word holding a 3-bit continuation flag and a 29-bit
 * length, and the data padded to 4 bytes; a payload containing the magic is split into
 * parts (flags 1, 2, ..., 3) that are joined again with the magic between them. The
 * .idx file ("key<TAB>offset" lines) says where each record starts. A payload is an
 * im2rec image record: a header {uint32 flag; float label; uint64 id, id2}, `flag` more
 * float labels when flag > 0, then the encoded image. Outputs: data (uint8 bytes) and
 * label (float32 [1], or [flag]). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/fileset.h"
#include "image_util.h"
#include "reader_common.h"

#define RECIO_MAGIC 0xced7230au

enum { A_PATH, A_INDEX_PATH, A_SHARD_ID, A_COUNT_ = A_SHARD_ID + STK__RA_COUNT };

static const stk_arg_schema mx_args[] = {
    [A_PATH] = {.name = "path",
                .type = STK_ARG_STRINGS,
                .flags = STK_ARGF_REQUIRED,
                .doc = "the .rec files"},
    [A_INDEX_PATH] = {.name = "index_path",
                      .type = STK_ARG_STRINGS,
                      .flags = STK_ARGF_REQUIRED,
                      .doc = "their .idx files (im2rec.py's \"key<TAB>offset\" lines), one "
                             "per .rec file"},
    STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(mx_args, A_COUNT_);

static const stk_port_schema mx_outputs[] = {{"data", "the record's encoded image (uint8)"},
                                             {"label", "its label(s), float32 [1] or [flag]"}};

typedef struct {
  int32_t file;
  int64_t offset, size; /* the record's bytes: up to the next record or the file's end */
} record;

typedef struct {
  stk__reader_base base;
  stk__fileset files;
  record *records;
  int64_t count;
} mx_state;

static void mx_destroy(stk__node *node) {
  mx_state *r = *stk__node_state(node);
  if (!r) return;
  stk__fileset_close(&r->files);
  free(r->records);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

static int cmp_offset(const void *a, const void *b) {
  int64_t x = ((const record *)a)->offset, y = ((const record *)b)->offset;
  return (x > y) - (x < y);
}

/* Appends the records of one .idx file (offsets into rec file `file`). */
static stk_status read_index(stk__node *node, mx_state *r, const char *path, int32_t file,
                             int64_t *cap) {
  FILE *f = fopen(path, "r");
  if (!f)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "%s: cannot open '%s': %s",
                    stk__node_name(node), path, strerror(errno));
  char line[256];
  int64_t first = r->count, lineno = 0;
  stk_status st = STK_OK;
  while (st == STK_OK && fgets(line, sizeof line, f)) {
    lineno++;
    long long key, off;
    if (line[strspn(line, " \t\r\n")] == '\0') continue;
    if (sscanf(line, "%lld %lld", &key, &off) != 2 || off < 0) {
      st = STK_FAIL(STK_ERR_DECODE, "%s: '%s' line %lld: expected \"key<TAB>offset\"",
                    stk__node_name(node), path, (long long)lineno);
      break;
    }
    if (r->count == *cap) {
      *cap = *cap ? 2 * *cap : 1024;
      record *p = stk__realloc(r->records, (size_t)*cap * sizeof *p, "MXNet records");
      if (!p) st = STK_ERR_OUT_OF_MEMORY;
      if (p) r->records = p;
    }
    if (st == STK_OK) r->records[r->count++] = (record){file, off, 0};
  }
  fclose(f);
  if (st != STK_OK) return st;
  /* Sizes: the gap to the next record of the file (in offset order), or to its end. */
  record *rec = r->records + first;
  int64_t n = r->count - first, end = r->files.sizes[file];
  qsort(rec, (size_t)n, sizeof *rec, cmp_offset);
  for (int64_t i = 0; i < n; i++) {
    int64_t next = i + 1 < n ? rec[i + 1].offset : end;
    if (rec[i].offset > end)
      return STK_FAIL(STK_ERR_DECODE, "%s: '%s': offset %lld lies past the end of its .rec file",
                      stk__node_name(node), path, (long long)rec[i].offset);
    rec[i].size = next - rec[i].offset;
  }
  return STK_OK;
}

static stk_status mx_init(stk__node *node) {
  const char *const *recs, *const *idxs;
  size_t nr = stk__arg_strings(node, A_PATH, &recs),
         ni = stk__arg_strings(node, A_INDEX_PATH, &idxs);
  if (nr == 0 || nr != ni)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: path has %zu files and index_path %zu; give one .idx per .rec",
                    stk__node_name(node), nr, ni);
  mx_state *r = stk__calloc(1, sizeof *r, "an MXNet reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  int64_t cap = 0;
  stk_status st = stk__fileset_open(&r->files, recs, nr, stk__node_name(node));
  for (size_t i = 0; st == STK_OK && i < nr; i++)
    st = read_index(node, r, idxs[i], (int32_t)i, &cap);
  if (st == STK_OK && r->count == 0)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: the index files list no records",
                  stk__node_name(node));
  if (st == STK_OK) st = stk__reader_sampler(node, A_SHARD_ID, r->count, NULL, 0, &r->base.sampler);
  if (st != STK_OK) mx_destroy(node);
  return st;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Joins the parts of the record in raw[0..size) into out (in place is fine: the payload
 * never grows); *len gets the payload's length. */
static bool join_parts(const uint8_t *raw, int64_t size, uint8_t *out, int64_t *len) {
  int64_t at = 0, o = 0;
  for (int part = 0;; part++) {
    if (size - at < 8 || le32(raw + at) != RECIO_MAGIC) return false;
    uint32_t word = le32(raw + at + 4), cflag = word >> 29, n = word & ((1u << 29) - 1);
    if ((part == 0) != (cflag == 0 || cflag == 1) || (int64_t)n > size - at - 8) return false;
    memmove(out + o, raw + at + 8, n);
    o += n;
    at += 8 + (((int64_t)n + 3) & ~(int64_t)3);
    if (cflag == 0 || cflag == 3) break;
    memcpy(out + o, "\x0a\x23\xd7\xce", 4); /* the magic the writer split at */
    o += 4;
  }
  *len = o;
  return true;
}

static stk_status mx_run(stk__node *node, stk__sample *s) {
  mx_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  const record *rec = &r->records[item];
  stk__sample_set_source(s, r->files.paths[rec->file]);
  if (rec->size > stk__node_max_file_bytes(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "record at %lld: %lld bytes exceed max_file_bytes",
                      (long long)rec->offset, (long long)rec->size);
  uint8_t *raw = stk__scratch(s, (size_t)rec->size + 8);
  if (!raw) return STK_ERR_OUT_OF_MEMORY;
  STK_TRY(stk__fileset_read(&r->files, rec->file, rec->offset, raw, (size_t)rec->size));
  int64_t len;
  if (!join_parts(raw, rec->size, raw, &len) || len < 24)
    return STK__SFAIL(STK_ERR_DECODE, node, s, "record at byte %lld: not a RecordIO image record",
                      (long long)rec->offset);
  uint32_t flag = le32(raw);
  int64_t nlab = flag ? flag : 1, head = 24 + (flag ? 4 * (int64_t)flag : 0);
  if (head > len)
    return STK__SFAIL(STK_ERR_DECODE, node, s, "record at byte %lld: %u labels overrun it",
                      (long long)rec->offset, flag);
  int64_t size = len - head;
  stk__tensor *data, *label;
  STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 1, &size, NULL, &data));
  memcpy(data->data, raw + head, (size_t)size);
  STK_TRY(stk__output(s, 1, STK_DTYPE_FLOAT32, 1, &nlab, NULL, &label));
  memcpy(label->data, raw + (flag ? 24 : 4), (size_t)nlab * 4); /* little-endian floats */
  return STK_OK;
}

static const stk_op_schema mx_schema = {
    .name = "readers.mxnet",
    .doc =
        "Reads MXNet RecordIO files (DALI's MXNet reader): each record's encoded image "
        "and its float label(s), located through the .idx files; with sharding, padding "
        "and shuffling like the other readers. See docs/formats.md.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .num_outputs = 2,
    .outputs = mx_outputs,
    .num_args = A_COUNT_,
    .args = mx_args,
};

const stk__op_def stk__op_readers_mxnet = {
    .schema = &mx_schema,
    .init = mx_init,
    .destroy = mx_destroy,
    .plan = stk__reader_plan,
    .run_sample = mx_run,
    .reader_meta = stk__reader_meta,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
};
