/* TFRecord framing, CRC32C, index files and a small tf.train.Example reader/writer; see
 * tfrecord.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fileset.h"
#include "remote.h"
#include "tfrecord.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

/* ---- CRC32C ---- */

#define CRC32C_POLY 0x82F63B78u /* Castagnoli, reflected */

static uint32_t crc_table[8][256];
static bool crc_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
    crc_table[0][i] = c;
  }
  for (int t = 1; t < 8; t++)
    for (int i = 0; i < 256; i++)
      crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#ifdef HAVE_SSE42_PATH
  __builtin_cpu_init();
  crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t load32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load64(const uint8_t *p) {
  return (uint64_t)load32(p) | (uint64_t)load32(p + 4) << 32;
}

/* Slicing-by-8: eight bytes per step through eight tables. */
static uint32_t crc_slice8(uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint32_t lo = crc ^ load32(p), hi = load32(p + 4);
    crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
          crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^
          crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
  }
  while (n--) crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#ifdef HAVE_SSE42_PATH
/* The SSE4.2 crc32 instruction computes exactly CRC32C. */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                            size_t n) {
  uint64_t c = (uint32_t)~crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  uint32_t c32 = (uint32_t)c;
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#endif

uint32_t stk__crc32c_portable(uint32_t crc, const void *data, size_t n) {
  pthread_once(&crc_once, crc_init);
  return crc_slice8(crc, data, n);
}

uint32_t stk__crc32c(uint32_t crc, const void *data, size_t n) {
  pthread_once(&crc_once, crc_init);
#ifdef HAVE_SSE42_PATH
  if (crc_hw) return crc_sse42(crc, data, n);
#endif
  return crc_slice8(crc, data, n);
}

/* ---- record framing ---- */

static bool header_ok(const uint8_t hdr[12]) {
  return stk__crc32c_mask(stk__crc32c(0, hdr, 8)) == load32(hdr + 8);
}

stk_status stk__tfrecord_check(const uint8_t *record, size_t size, const char *path, int64_t offset,
                               const uint8_t **payload, size_t *length) {
  if (size < STK__TFRECORD_OVERHEAD)
    return STK_FAIL(STK_ERR_DECODE,
                    "'%s': record at offset %lld is %zu bytes, shorter than "
                    "its framing",
                    path, (long long)offset, size);
  if (!header_ok(record))
    return STK_FAIL(STK_ERR_DECODE, "'%s': CRC mismatch in the length of the record at offset %lld",
                    path, (long long)offset);
  uint64_t len = load64(record);
  if (len != size - STK__TFRECORD_OVERHEAD)
    return STK_FAIL(STK_ERR_DECODE,
                    "'%s': the record at offset %lld holds %llu bytes, the index "
                    "says %zu",
                    path, (long long)offset, (unsigned long long)len,
                    size - STK__TFRECORD_OVERHEAD);
  uint32_t want = load32(record + 12 + len);
  if (stk__crc32c_mask(stk__crc32c(0, record + 12, (size_t)len)) != want)
    return STK_FAIL(STK_ERR_DECODE,
                    "'%s': CRC mismatch in the data of the record at offset %lld "
                    "(corrupt record)",
                    path, (long long)offset);
  *payload = record + 12;
  *length = (size_t)len;
  return STK_OK;
}

stk_status stk__tfrecord_write(FILE *f, const char *path, const void *data, size_t length) {
  uint8_t hdr[12], tail[4];
  uint64_t len = length;
  for (int i = 0; i < 8; i++) hdr[i] = (uint8_t)(len >> (8 * i));
  uint32_t c = stk__crc32c_mask(stk__crc32c(0, hdr, 8));
  for (int i = 0; i < 4; i++) hdr[8 + i] = (uint8_t)(c >> (8 * i));
  c = stk__crc32c_mask(stk__crc32c(0, data, length));
  for (int i = 0; i < 4; i++) tail[i] = (uint8_t)(c >> (8 * i));
  if (fwrite(hdr, 1, 12, f) != 12 || (length && fwrite(data, 1, length, f) != length) ||
      fwrite(tail, 1, 4, f) != 4)
    return STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  return STK_OK;
}

/* ---- indexes ---- */

void stk__tfrecord_index_free(stk__tfrecord_index *idx) {
  if (!idx) return;
  free(idx->offsets);
  free(idx->sizes);
  memset(idx, 0, sizeof *idx);
}

static stk_status index_push(stk__tfrecord_index *idx, int64_t *cap, int64_t offset, int64_t size) {
  if (idx->count == *cap) {
    int64_t c = *cap ? *cap * 2 : 1024;
    int64_t *o = stk__realloc(idx->offsets, (size_t)c * sizeof *o, "a TFRecord index");
    if (o) idx->offsets = o;
    int64_t *s = stk__realloc(idx->sizes, (size_t)c * sizeof *s, "a TFRecord index");
    if (s) idx->sizes = s;
    if (!o || !s) return STK_ERR_OUT_OF_MEMORY;
    *cap = c;
  }
  idx->offsets[idx->count] = offset;
  idx->sizes[idx->count++] = size;
  return STK_OK;
}

#define SCAN_CHUNK ((size_t)1 << 16)

/* Headers are read through a chunk so that runs of small records cost one read. */
typedef struct {
  stk__source src;
  const char *path;
  uint8_t *buf;
  int64_t off;
  size_t len;
} chunk_reader;

static stk_status chunk_get(chunk_reader *c, int64_t off, size_t n, const uint8_t **out) {
  if (off < c->off || off + (int64_t)n > c->off + (int64_t)c->len) {
    size_t got;
    STK_TRY(stk__source_pread(&c->src, off, c->buf, SCAN_CHUNK, &got));
    c->off = off;
    c->len = got;
  }
  *out = c->buf + (off - c->off);
  return STK_OK;
}

static stk_status scan_records(stk__tfrecord_index *out, chunk_reader *c, int64_t file_size) {
  int64_t cap = 0;
  for (int64_t off = 0; off < file_size;) {
    if (file_size - off < 12)
      return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated: a partial record header at offset %lld",
                      c->path, (long long)off);
    const uint8_t *hdr;
    STK_TRY(chunk_get(c, off, 12, &hdr));
    if (!header_ok(hdr)) {
      if (off == 0)
        return STK_FAIL(STK_ERR_DECODE,
                        "'%s' is not a TFRecord file (the length CRC of the "
                        "first record does not match)",
                        c->path);
      return STK_FAIL(STK_ERR_DECODE,
                      "'%s': corrupt record header at offset %lld (length CRC "
                      "mismatch)",
                      c->path, (long long)off);
    }
    uint64_t len = load64(hdr);
    if (len > (uint64_t)(file_size - off - STK__TFRECORD_OVERHEAD) ||
        file_size - off < STK__TFRECORD_OVERHEAD)
      return STK_FAIL(STK_ERR_DECODE,
                      "'%s' is truncated or corrupt: the record at offset %lld "
                      "claims %llu data bytes (plus %d of framing), the file ends at %lld",
                      c->path, (long long)off, (unsigned long long)len, STK__TFRECORD_OVERHEAD,
                      (long long)file_size);
    int64_t size = (int64_t)len + STK__TFRECORD_OVERHEAD;
    STK_TRY(index_push(out, &cap, off, size));
    off += size;
  }
  return STK_OK;
}

stk_status stk__tfrecord_index_build(stk__tfrecord_index *out, int fd, const char *path,
                                     int64_t file_size) {
  stk__source src = {.fd = fd, .path = path};
  return stk__tfrecord_index_build_source(out, &src, file_size);
}

stk_status stk__tfrecord_index_build_source(stk__tfrecord_index *out, const stk__source *src,
                                            int64_t file_size) {
  memset(out, 0, sizeof *out);
  chunk_reader c = {*src, src->path, stk__malloc(SCAN_CHUNK, "the TFRecord scanner"), -1, 0};
  if (!c.buf) return STK_ERR_OUT_OF_MEMORY;
  stk_status st = scan_records(out, &c, file_size);
  free(c.buf);
  if (st != STK_OK) stk__tfrecord_index_free(out);
  return st;
}

static stk_status load_line(stk__tfrecord_index *out, int64_t *cap, const char *p, const char *end,
                            const char *index_path, size_t line, const char *path,
                            int64_t file_size) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
  if (p == end) return STK_OK;
  char buf[64];
  size_t n = (size_t)(end - p);
  if (n >= sizeof buf) n = sizeof buf - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  long long offset, size;
  char extra;
  if (sscanf(buf, "%lld %lld %c", &offset, &size, &extra) != 2)
    return STK_FAIL(STK_ERR_PARSE, "%s:%zu: expected \"<offset> <size>\"", index_path, line);
  if (offset < 0 || size < STK__TFRECORD_OVERHEAD || size > file_size || offset > file_size - size)
    return STK_FAIL(STK_ERR_DECODE,
                    "%s:%zu: record at offset %lld (%lld bytes) lies outside '%s' "
                    "(%lld bytes): the index does not match the file",
                    index_path, line, offset, size, path, (long long)file_size);
  return index_push(out, cap, offset, size);
}

stk_status stk__tfrecord_index_load(stk__tfrecord_index *out, const char *index_path,
                                    const char *path, int64_t file_size) {
  memset(out, 0, sizeof *out);
  uint8_t *data;
  size_t size;
  STK_TRY(stk__read_path(index_path, (size_t)1 << 32, &data, &size));
  const char *p = (const char *)data, *end = p + size;
  int64_t cap = 0;
  stk_status st = STK_OK;
  for (size_t line = 1; st == STK_OK && p < end; line++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    st = load_line(out, &cap, p, nl ? nl : end, index_path, line, path, file_size);
    p = nl ? nl + 1 : end;
  }
  free(data);
  if (st != STK_OK) stk__tfrecord_index_free(out);
  return st;
}

stk_status stk__tfrecord_index_write(const stk__tfrecord_index *idx, const char *index_path) {
  FILE *f = fopen(index_path, "w");
  if (!f) return STK_FAIL(STK_ERR_IO, "cannot create '%s': %s", index_path, strerror(errno));
  for (int64_t i = 0; i < idx->count; i++)
    fprintf(f, "%lld %lld\n", (long long)idx->offsets[i], (long long)idx->sizes[i]);
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad)
    return STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", index_path, strerror(errno));
  return STK_OK;
}

/* ---- protobuf reading ---- */

typedef struct {
  uint32_t field;
  int wire;
  uint64_t value;      /* wire 0 */
  const uint8_t *data; /* wire 1, 2, 5 */
  size_t len;
} pb_field;

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 70 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    if (shift == 63 && b > 1) return false;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* The next field at *p: 1, 0 at the end, -1 when malformed. */
static int pb_next(const uint8_t **p, const uint8_t *end, pb_field *f) {
  if (*p >= end) return 0;
  uint64_t tag;
  if (!varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return -1;
  f->field = (uint32_t)(tag >> 3);
  f->wire = (int)(tag & 7);
  size_t need;
  switch (f->wire) {
    case 0:
      return varint(p, end, &f->value) ? 1 : -1;
    case 1:
      need = 8;
      break;
    case 5:
      need = 4;
      break;
    case 2: {
      uint64_t len;
      if (!varint(p, end, &len) || len > (uint64_t)(end - *p)) return -1;
      need = (size_t)len;
      break;
    }
    default:
      return -1; /* groups (3, 4) do not occur in tf.train.Example */
  }
  if (need > (size_t)(end - *p)) return -1;
  f->data = *p;
  f->len = need;
  *p += need;
  return 1;
}

static stk_status malformed(const char *what) {
  return STK_FAIL(STK_ERR_DECODE, "malformed tf.train.Example: %s", what);
}

/* Counts the values of a list message, checking its encoding. */
static stk_status count_values(stk__tf_feature *f) {
  const uint8_t *p = f->list, *end = p + f->list_size;
  pb_field x;
  int r;
  f->count = 0;
  while ((r = pb_next(&p, end, &x)) == 1) {
    if (x.field != 1) continue;
    if (f->kind == STK__TF_BYTES && x.wire == 2)
      f->count++;
    else if (f->kind == STK__TF_FLOAT && x.wire == 5)
      f->count++;
    else if (f->kind == STK__TF_FLOAT && x.wire == 2 && x.len % 4 == 0)
      f->count += (int64_t)(x.len / 4);
    else if (f->kind == STK__TF_INT64 && x.wire == 0)
      f->count++;
    else if (f->kind == STK__TF_INT64 && x.wire == 2) {
      const uint8_t *q = x.data, *qe = q + x.len;
      uint64_t v;
      while (q < qe) {
        if (!varint(&q, qe, &v)) return malformed("a bad packed int64 list");
        f->count++;
      }
    } else {
      return malformed("a value list with an unexpected wire type");
    }
  }
  return r < 0 ? malformed("a truncated value list") : STK_OK;
}

/* A Feature message: the last of its oneof fields wins. */
static stk_status parse_feature(const uint8_t *p, size_t n, stk__tf_feature *out) {
  const uint8_t *end = p + n;
  pb_field x;
  int r;
  out->kind = STK__TF_EMPTY;
  out->count = 0;
  while ((r = pb_next(&p, end, &x)) == 1) {
    if (x.field < 1 || x.field > 3) continue;
    if (x.wire != 2) return malformed("a Feature with a non-message list");
    out->kind = (stk__tf_kind)x.field;
    out->list = x.data;
    out->list_size = x.len;
  }
  if (r < 0) return malformed("a truncated Feature");
  return out->kind == STK__TF_EMPTY ? STK_OK : count_values(out);
}

/* One map entry: key (1) and value (2). */
static stk_status parse_entry(const uint8_t *p, size_t n, const char *const *names, size_t k,
                              stk__tf_feature *out) {
  const uint8_t *end = p + n, *key = (const uint8_t *)"", *val = NULL;
  size_t key_len = 0, val_len = 0;
  pb_field x;
  int r;
  while ((r = pb_next(&p, end, &x)) == 1) {
    if (x.field == 1 && x.wire == 2)
      key = x.data, key_len = x.len;
    else if (x.field == 2 && x.wire == 2)
      val = x.data, val_len = x.len;
  }
  if (r < 0) return malformed("a truncated feature map entry");
  for (size_t i = 0; i < k; i++)
    if (strlen(names[i]) == key_len && memcmp(names[i], key, key_len) == 0) {
      if (!val) {
        out[i].kind = STK__TF_EMPTY;
        out[i].count = 0;
        continue;
      }
      STK_TRY(parse_feature(val, val_len, &out[i]));
    }
  return STK_OK;
}

stk_status stk__tf_example_each(const uint8_t *msg, size_t size,
                                stk_status (*fn)(void *user, const char *name, size_t name_len,
                                                 const stk__tf_feature *f),
                                void *user) {
  const uint8_t *p = msg, *end = msg + size;
  pb_field x, y, z;
  int r, q, t;
  while ((r = pb_next(&p, end, &x)) == 1) {
    if (x.field != 1 || x.wire != 2) continue;
    const uint8_t *fp = x.data, *fe = x.data + x.len;
    while ((q = pb_next(&fp, fe, &y)) == 1) {
      if (y.field != 1 || y.wire != 2) continue;
      const uint8_t *ep = y.data, *ee = y.data + y.len, *key = (const uint8_t *)"";
      size_t key_len = 0;
      stk__tf_feature f = {.kind = STK__TF_EMPTY};
      while ((t = pb_next(&ep, ee, &z)) == 1) {
        if (z.field == 1 && z.wire == 2)
          key = z.data, key_len = z.len;
        else if (z.field == 2 && z.wire == 2)
          STK_TRY(parse_feature(z.data, z.len, &f));
      }
      if (t < 0) return malformed("a truncated feature map entry");
      STK_TRY(fn(user, (const char *)key, key_len, &f));
    }
    if (q < 0) return malformed("truncated Features");
  }
  return r < 0 ? malformed("a truncated Example") : STK_OK;
}

stk_status stk__tf_example_find(const uint8_t *msg, size_t size, const char *const *names, size_t n,
                                stk__tf_feature *out) {
  for (size_t i = 0; i < n; i++) out[i] = (stk__tf_feature){.kind = STK__TF_MISSING};
  const uint8_t *p = msg, *end = msg + size;
  pb_field x, y;
  int r, q;
  while ((r = pb_next(&p, end, &x)) == 1) {
    if (x.field != 1) continue;
    if (x.wire != 2) return malformed("Example.features is not a message");
    const uint8_t *fp = x.data, *fe = x.data + x.len;
    while ((q = pb_next(&fp, fe, &y)) == 1) {
      if (y.field != 1) continue;
      if (y.wire != 2) return malformed("a feature map entry is not a message");
      STK_TRY(parse_entry(y.data, y.len, names, n, out));
    }
    if (q < 0) return malformed("truncated Features");
  }
  return r < 0 ? malformed("a truncated Example") : STK_OK;
}

stk_status stk__tf_feature_int64(const stk__tf_feature *f, int64_t *dst) {
  const uint8_t *p = f->list, *end = p + f->list_size;
  pb_field x;
  int64_t i = 0;
  while (pb_next(&p, end, &x) == 1 && i < f->count) {
    if (x.field != 1) continue;
    if (x.wire == 0) dst[i++] = (int64_t)x.value;
    if (x.wire != 2) continue; /* (x.data is NULL for varints: no pointer arithmetic on it) */
    for (const uint8_t *q = x.data, *qe = x.data + x.len; q < qe && i < f->count;) {
      uint64_t v;
      if (!varint(&q, qe, &v)) return malformed("a bad packed int64 list");
      dst[i++] = (int64_t)v;
    }
  }
  return STK_OK;
}

static float load_float(const uint8_t *p) {
  uint32_t u = load32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

stk_status stk__tf_feature_float(const stk__tf_feature *f, float *dst) {
  const uint8_t *p = f->list, *end = p + f->list_size;
  pb_field x;
  int64_t i = 0;
  while (pb_next(&p, end, &x) == 1 && i < f->count) {
    if (x.field != 1) continue;
    if (x.wire == 5) dst[i++] = load_float(x.data);
    for (size_t k = 0; x.wire == 2 && k + 4 <= x.len && i < f->count; k += 4)
      dst[i++] = load_float(x.data + k);
  }
  return STK_OK;
}

stk_status stk__tf_feature_bytes(const stk__tf_feature *f,
                                 stk_status (*fn)(void *user, const uint8_t *p, size_t n),
                                 void *user) {
  const uint8_t *p = f->list, *end = p + f->list_size;
  pb_field x;
  while (pb_next(&p, end, &x) == 1)
    if (x.field == 1 && x.wire == 2) STK_TRY(fn(user, x.data, x.len));
  return STK_OK;
}

/* ---- protobuf writing ---- */

static stk_status put_varint(stk__strbuf *b, uint64_t v) {
  uint8_t buf[10];
  size_t n = 0;
  do {
    buf[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) buf[n] |= 0x80;
    n++;
  } while (v);
  return stk__strbuf_append(b, (const char *)buf, n);
}

/* tag (field, wire 2), length, bytes */
static stk_status put_len(stk__strbuf *b, uint32_t field, const void *data, size_t n) {
  STK_TRY(put_varint(b, (uint64_t)field << 3 | 2));
  STK_TRY(put_varint(b, n));
  return stk__strbuf_append(b, data, n);
}

/* features += entry { key = name, value = Feature { <kind> = list } } */
static stk_status put_entry(stk__strbuf *features, const char *name, uint32_t kind,
                            const stk__strbuf *list) {
  stk__strbuf feature = {0}, entry = {0};
  stk_status st = put_len(&feature, kind, list->data ? list->data : "", list->len);
  if (st == STK_OK) st = put_len(&entry, 1, name, strlen(name));
  if (st == STK_OK) st = put_len(&entry, 2, feature.data, feature.len);
  if (st == STK_OK) st = put_len(features, 1, entry.data, entry.len);
  stk__strbuf_free(&feature);
  stk__strbuf_free(&entry);
  return st;
}

stk_status stk__tf_put_bytes(stk__strbuf *features, const char *name, const void *value,
                             size_t size) {
  stk__strbuf list = {0};
  stk_status st = put_len(&list, 1, size ? value : "", size);
  if (st == STK_OK) st = put_entry(features, name, STK__TF_BYTES, &list);
  stk__strbuf_free(&list);
  return st;
}

stk_status stk__tf_put_int64(stk__strbuf *features, const char *name, const int64_t *values,
                             size_t count) {
  stk__strbuf packed = {0}, list = {0};
  stk_status st = STK_OK;
  for (size_t i = 0; st == STK_OK && i < count; i++) st = put_varint(&packed, (uint64_t)values[i]);
  if (st == STK_OK) st = put_len(&list, 1, packed.data ? packed.data : "", packed.len);
  if (st == STK_OK) st = put_entry(features, name, STK__TF_INT64, &list);
  stk__strbuf_free(&packed);
  stk__strbuf_free(&list);
  return st;
}

stk_status stk__tf_put_float(stk__strbuf *features, const char *name, const float *values,
                             size_t count) {
  stk__strbuf packed = {0}, list = {0};
  stk_status st = STK_OK;
  for (size_t i = 0; st == STK_OK && i < count; i++) {
    uint32_t u;
    memcpy(&u, &values[i], 4);
    uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    st = stk__strbuf_append(&packed, (const char *)le, 4);
  }
  if (st == STK_OK) st = put_len(&list, 1, packed.data ? packed.data : "", packed.len);
  if (st == STK_OK) st = put_entry(features, name, STK__TF_FLOAT, &list);
  stk__strbuf_free(&packed);
  stk__strbuf_free(&list);
  return st;
}

stk_status stk__tf_example_finish(const stk__strbuf *features, stk__strbuf *example) {
  example->len = 0;
  return put_len(example, 1, features->data ? features->data : "", features->len);
}
