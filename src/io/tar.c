/* Tar scanning (USTAR, GNU, pax), the WebDataset index and a USTAR writer; see tar.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fileset.h"
#include "remote.h"
#include "tar.h"

/* Extension headers (GNU long names, pax records) larger than this are refused. */
#define MAX_EXT_HEADER ((int64_t)1 << 20)
/* Headers are read through a cache of this many bytes, so that runs of small members
 * (labels, metadata) cost one read. */
#define SCAN_CHUNK     ((size_t)1 << 16)

static int64_t round_block(int64_t n) {
  return (n + STK__TAR_BLOCK - 1) / STK__TAR_BLOCK * STK__TAR_BLOCK;
}

/* ---- header fields ---- */

/* An octal field: optional leading blanks, digits, then NUL or blank to the end. */
static bool parse_octal(const uint8_t *f, size_t n, int64_t *out) {
  size_t i = 0;
  while (i < n && f[i] == ' ') i++;
  int64_t v = 0;
  size_t digits = 0;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v > (INT64_MAX >> 3)) return false;
    v = v * 8 + (f[i] - '0');
  }
  for (; i < n; i++)
    if (f[i] != ' ' && f[i] != '\0') return false;
  *out = v;
  return digits > 0 || n == 0;
}

/* A numeric field in octal or GNU base-256 (high bit of the first byte set). */
static bool parse_number(const uint8_t *f, size_t n, int64_t *out) {
  if (!(f[0] & 0x80)) return parse_octal(f, n, out);
  if (f[0] == 0xff) return false; /* negative */
  int64_t v = f[0] & 0x7f;
  for (size_t i = 1; i < n; i++) {
    if (v > (INT64_MAX >> 8)) return false;
    v = (v << 8) | f[i];
  }
  *out = v;
  return true;
}

bool stk__tar_header_valid(const uint8_t block[STK__TAR_BLOCK]) {
  int64_t stored;
  if (!parse_octal(block + 148, 8, &stored)) return false;
  uint32_t usum = 0;
  int32_t ssum = 0;
  for (int i = 0; i < STK__TAR_BLOCK; i++) {
    uint8_t c = (i >= 148 && i < 156) ? ' ' : block[i];
    usum += c;
    ssum += (int8_t)c; /* some old tars summed signed chars */
  }
  return stored == (int64_t)usum || stored == (int64_t)ssum;
}

static bool all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}

/* ---- the scanner ---- */

typedef struct {
  stk__source src;
  const char *path;
  int64_t file_size;
  uint8_t *chunk;
  int64_t chunk_off;
  size_t chunk_len;
  /* overrides for the next member (local) and for all later ones (global) */
  stk__strbuf long_name, pax_path, global_path;
  bool has_long_name, has_pax_path, has_global_path;
  int64_t pax_size, global_size;
  bool has_pax_size, has_global_size;
  stk__strbuf name; /* the current member's resolved name */
} scanner;

/* The 512 bytes at `off` (which the caller checked lie inside the file). */
static stk_status block_at(scanner *sc, int64_t off, const uint8_t **out) {
  if (off < sc->chunk_off || off + STK__TAR_BLOCK > sc->chunk_off + (int64_t)sc->chunk_len) {
    size_t got;
    STK_TRY(stk__source_pread(&sc->src, off, sc->chunk, SCAN_CHUNK, &got));
    sc->chunk_off = off;
    sc->chunk_len = got;
    if (got < STK__TAR_BLOCK)
      return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated: the header at offset %lld is cut short",
                      sc->path, (long long)off);
  }
  *out = sc->chunk + (off - sc->chunk_off);
  return STK_OK;
}

/* Reads an extension header's payload into `b` (NUL appended). */
static stk_status read_payload(scanner *sc, int64_t off, int64_t size, stk__strbuf *b) {
  if (size > MAX_EXT_HEADER)
    return STK_FAIL(STK_ERR_DECODE, "'%s': the extended header at offset %lld claims %lld bytes",
                    sc->path, (long long)(off - STK__TAR_BLOCK), (long long)size);
  b->len = 0;
  if (b->cap < (size_t)size + 1) {
    char *p = stk__realloc(b->data, (size_t)size + 1, "a tar extended header");
    if (!p) return STK_ERR_OUT_OF_MEMORY;
    b->data = p;
    b->cap = (size_t)size + 1;
  }
  size_t got;
  STK_TRY(stk__source_pread(&sc->src, off, b->data, (size_t)size, &got));
  if (got < (size_t)size)
    return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated inside the extended header at offset %lld",
                    sc->path, (long long)(off - STK__TAR_BLOCK));
  b->data[size] = '\0';
  b->len = (size_t)size;
  return STK_OK;
}

static stk_status set_buf(stk__strbuf *b, const char *s, size_t n) {
  b->len = 0;
  STK_TRY(stk__strbuf_append(b, s, n));
  return stk__strbuf_append(b, "", 1); /* keep it NUL-terminated; len counts the NUL */
}

/* One "LEN key=value\n" pax record at p (n bytes left); *used gets LEN. */
static stk_status pax_record(scanner *sc, int64_t hdr, const char *p, size_t n, bool global,
                             size_t *used) {
  size_t len = 0, i = 0;
  while (i < n && i < 20 && p[i] >= '0' && p[i] <= '9') len = len * 10 + (size_t)(p[i++] - '0');
  if (i == 0 || i >= n || p[i] != ' ' || len <= i + 1 || len > n || p[len - 1] != '\n')
    return STK_FAIL(STK_ERR_DECODE, "'%s': malformed pax record in the header at offset %lld",
                    sc->path, (long long)hdr);
  const char *key = p + i + 1, *end = p + len - 1;
  const char *eq = memchr(key, '=', (size_t)(end - key));
  if (!eq)
    return STK_FAIL(STK_ERR_DECODE, "'%s': pax record without '=' in the header at offset %lld",
                    sc->path, (long long)hdr);
  size_t klen = (size_t)(eq - key), vlen = (size_t)(end - eq - 1);
  const char *val = eq + 1;
  *used = len;
  if (klen == 4 && memcmp(key, "path", 4) == 0) {
    STK_TRY(set_buf(global ? &sc->global_path : &sc->pax_path, val, vlen));
    *(global ? &sc->has_global_path : &sc->has_pax_path) = true;
  } else if (klen == 4 && memcmp(key, "size", 4) == 0) {
    int64_t v = 0;
    size_t k = 0;
    for (; k < vlen && val[k] >= '0' && val[k] <= '9' && v < ((int64_t)1 << 58); k++)
      v = v * 10 + (val[k] - '0');
    if (k == 0 || k != vlen)
      return STK_FAIL(STK_ERR_DECODE, "'%s': bad pax size '%.*s' in the header at offset %lld",
                      sc->path, (int)vlen, val, (long long)hdr);
    *(global ? &sc->global_size : &sc->pax_size) = v;
    *(global ? &sc->has_global_size : &sc->has_pax_size) = true;
  }
  return STK_OK;
}

static stk_status parse_pax(scanner *sc, int64_t hdr, const stk__strbuf *b, bool global) {
  size_t pos = 0;
  while (pos < b->len && b->data[pos] != '\0') {
    size_t used = 0;
    STK_TRY(pax_record(sc, hdr, b->data + pos, b->len - pos, global, &used));
    pos += used;
  }
  return STK_OK;
}

/* The member's name from the overrides or the header (USTAR prefix joined). */
static stk_status resolve_name(scanner *sc, const uint8_t *h) {
  const stk__strbuf *over = sc->has_pax_path      ? &sc->pax_path
                            : sc->has_long_name   ? &sc->long_name
                            : sc->has_global_path ? &sc->global_path
                                                  : NULL;
  sc->name.len = 0;
  if (over) return set_buf(&sc->name, over->data, strlen(over->data));
  size_t nlen = strnlen((const char *)h, 100);
  bool posix = memcmp(h + 257, "ustar\0", 6) == 0;
  if (posix && h[345]) {
    STK_TRY(
        stk__strbuf_append(&sc->name, (const char *)h + 345, strnlen((const char *)h + 345, 155)));
    STK_TRY(stk__strbuf_append(&sc->name, "/", 1));
  }
  STK_TRY(stk__strbuf_append(&sc->name, (const char *)h, nlen));
  return stk__strbuf_append(&sc->name, "", 1);
}

static void clear_local(scanner *sc) {
  sc->has_long_name = sc->has_pax_path = sc->has_pax_size = false;
}

/* Handles the member whose header is at `off`; *next gets the following header. */
static stk_status scan_member(scanner *sc, int64_t off, const uint8_t *h, stk__tar_visit_fn fn,
                              void *user, int64_t *next) {
  int64_t size;
  if (!parse_number(h + 124, 12, &size))
    return STK_FAIL(STK_ERR_DECODE, "'%s': bad size field in the header at offset %lld", sc->path,
                    (long long)off);
  char type = (char)h[156];
  bool regular = type == '0' || type == '\0' || type == '7';
  bool link_like = type >= '1' && type <= '6';
  if (regular)
    size = sc->has_pax_size ? sc->pax_size : sc->has_global_size ? sc->global_size : size;
  int64_t data = off + STK__TAR_BLOCK;
  if (link_like) size = 0; /* links, devices, directories store no data */
  if (size > sc->file_size - data) {
    STK_TRY(resolve_name(sc, h));
    return STK_FAIL(STK_ERR_DECODE,
                    "'%s' is truncated: member '%s' (header at offset %lld) needs %lld bytes "
                    "from offset %lld, the archive ends at %lld",
                    sc->path, sc->name.data, (long long)off, (long long)size, (long long)data,
                    (long long)sc->file_size);
  }
  *next = data + round_block(size);
  if (type == 'L') {
    STK_TRY(read_payload(sc, data, size, &sc->long_name));
    sc->has_long_name = true;
    return STK_OK;
  }
  if (type == 'x' || type == 'g') {
    stk__strbuf payload = {0};
    stk_status st = read_payload(sc, data, size, &payload);
    if (st == STK_OK) st = parse_pax(sc, off, &payload, type == 'g');
    stk__strbuf_free(&payload);
    return st;
  }
  if (type == 'K') return STK_OK; /* a long link name: applies to a link, skipped */
  stk_status st = STK_OK;
  if (regular) {
    STK_TRY(resolve_name(sc, h));
    size_t n = strlen(sc->name.data);
    bool is_dir = n > 0 && sc->name.data[n - 1] == '/'; /* pre-POSIX directories */
    if (!is_dir) st = fn(user, sc->name.data, data, size);
  }
  clear_local(sc);
  return st;
}

static stk_status scan_loop(scanner *sc, stk__tar_visit_fn fn, void *user) {
  int64_t off = 0;
  while (off < sc->file_size) {
    int64_t left = sc->file_size - off;
    if (left < STK__TAR_BLOCK) {
      uint8_t tail[STK__TAR_BLOCK];
      size_t got;
      STK_TRY(stk__source_pread(&sc->src, off, tail, (size_t)left, &got));
      if (all_zero(tail, got)) return STK_OK;
      return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated: a partial header at offset %lld",
                      sc->path, (long long)off);
    }
    const uint8_t *h = NULL;
    STK_TRY(block_at(sc, off, &h));
    if (all_zero(h, STK__TAR_BLOCK)) return STK_OK; /* end-of-archive marker */
    if (!stk__tar_header_valid(h)) {
      if (off == 0)
        return STK_FAIL(STK_ERR_DECODE, "'%s' is not a tar archive (no valid header at offset 0)",
                        sc->path);
      return STK_FAIL(STK_ERR_DECODE, "'%s': corrupt tar header at offset %lld (checksum mismatch)",
                      sc->path, (long long)off);
    }
    int64_t next = 0;
    STK_TRY(scan_member(sc, off, h, fn, user, &next));
    off = next;
  }
  if (sc->has_long_name || sc->has_pax_path || sc->has_pax_size)
    return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated: it ends after an extended header",
                    sc->path);
  return STK_OK;
}

stk_status stk__tar_scan(int fd, const char *path, int64_t file_size, stk__tar_visit_fn fn,
                         void *user) {
  stk__source src = {.fd = fd, .path = path};
  return stk__tar_scan_source(&src, file_size, fn, user);
}

stk_status stk__tar_scan_source(const stk__source *src, int64_t file_size, stk__tar_visit_fn fn,
                                void *user) {
  const char *path = src->path;
  scanner sc = {.src = *src, .path = path, .file_size = file_size, .chunk_off = -1};
  sc.chunk = stk__malloc(SCAN_CHUNK, "the tar scanner");
  if (!sc.chunk) return STK_ERR_OUT_OF_MEMORY;
  if (file_size == 0) {
    free(sc.chunk);
    return STK_FAIL(STK_ERR_DECODE, "'%s' is empty, not a tar archive", path);
  }
  stk_status st = scan_loop(&sc, fn, user);
  free(sc.chunk);
  stk__strbuf_free(&sc.long_name);
  stk__strbuf_free(&sc.pax_path);
  stk__strbuf_free(&sc.global_path);
  stk__strbuf_free(&sc.name);
  return st;
}

/* ---- the WebDataset index ---- */

bool stk__wds_split_name(const char *name, size_t *key_len, const char **ext) {
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  if (base[0] == '.' || base[0] == '\0') return false;
  const char *dot = strchr(base, '.');
  *key_len = dot ? (size_t)(dot - name) : strlen(name);
  *ext = dot ? dot + 1 : name + strlen(name);
  return true;
}

void stk__wds_index_free(stk__wds_index *idx) {
  if (!idx) return;
  free(idx->first);
  free(idx->keys);
  free(idx->comps);
  stk__strbuf_free(&idx->text);
  memset(idx, 0, sizeof *idx);
}

static stk_status grow(void **p, int64_t *cap, int64_t need, size_t elem, const char *what) {
  if (need <= *cap) return STK_OK;
  int64_t c = *cap ? *cap * 2 : 1024;
  while (c < need) c *= 2;
  void *q = stk__realloc(*p, (size_t)c * elem, what);
  if (!q) return STK_ERR_OUT_OF_MEMORY;
  *p = q;
  *cap = c;
  return STK_OK;
}

stk_status stk__wds_index_add(stk__wds_index *idx, const char *key, size_t key_len, const char *ext,
                              int64_t offset, int64_t size) {
  int64_t n = idx->num_samples;
  const char *last = n ? idx->text.data + idx->keys[n - 1] : NULL;
  if (!last || strlen(last) != key_len || memcmp(last, key, key_len) != 0) {
    /* keys and first share one capacity (first needs one entry more) */
    int64_t cap = idx->cap_samples;
    STK_TRY(grow((void **)&idx->keys, &cap, n + 2, sizeof *idx->keys, "a WebDataset index"));
    cap = idx->cap_samples;
    STK_TRY(grow((void **)&idx->first, &cap, n + 2, sizeof *idx->first, "a WebDataset index"));
    idx->cap_samples = cap;
    idx->keys[n] = idx->text.len;
    STK_TRY(stk__strbuf_append(&idx->text, key, key_len));
    STK_TRY(stk__strbuf_append(&idx->text, "", 1));
    idx->first[n] = idx->num_comps;
    idx->num_samples = n + 1;
  }
  STK_TRY(grow((void **)&idx->comps, &idx->cap_comps, idx->num_comps + 1, sizeof *idx->comps,
               "a WebDataset index"));
  stk__wds_component *c = &idx->comps[idx->num_comps++];
  c->offset = offset;
  c->size = size;
  c->ext = idx->text.len;
  STK_TRY(stk__strbuf_append(&idx->text, ext, strlen(ext)));
  STK_TRY(stk__strbuf_append(&idx->text, "", 1));
  idx->first[idx->num_samples] = idx->num_comps;
  return STK_OK;
}

static stk_status visit_member(void *user, const char *name, int64_t offset, int64_t size) {
  size_t key_len;
  const char *ext;
  if (!stk__wds_split_name(name, &key_len, &ext)) return STK_OK;
  return stk__wds_index_add(user, name, key_len, ext, offset, size);
}

stk_status stk__wds_index_build(stk__wds_index *out, int fd, const char *path, int64_t file_size) {
  stk__source src = {.fd = fd, .path = path};
  return stk__wds_index_build_source(out, &src, file_size);
}

stk_status stk__wds_index_build_source(stk__wds_index *out, const stk__source *src,
                                       int64_t file_size) {
  memset(out, 0, sizeof *out);
  stk_status st = stk__tar_scan_source(src, file_size, visit_member, out);
  if (st != STK_OK) stk__wds_index_free(out);
  return st;
}

/* Next whitespace-separated token of [*p, end), or false at the end. */
static bool next_token(const char **p, const char *end, const char **tok, size_t *len) {
  const char *s = *p;
  while (s < end && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
  const char *e = s;
  while (e < end && *e != ' ' && *e != '\t' && *e != '\r') e++;
  *tok = s;
  *len = (size_t)(e - s);
  *p = e;
  return e > s;
}

static bool token_int(const char *tok, size_t len, int64_t *out) {
  if (len == 0 || len > 18) return false;
  int64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (tok[i] < '0' || tok[i] > '9') return false;
    v = v * 10 + (tok[i] - '0');
  }
  *out = v;
  return true;
}

typedef struct {
  const char *index_path, *tar_path;
  int64_t tar_size;
  size_t line;
} load_ctx;

/* One sample's line: groups of "ext offset size name"; all go to one sample, keyed by
 * the first component's name. */
static stk_status load_line(stk__wds_index *idx, const load_ctx *c, const char *p,
                            const char *end) {
  const char *tok[4];
  size_t len[4];
  stk__strbuf key = {0}, name = {0}, ext = {0};
  stk_status st = STK_OK;
  while (st == STK_OK && next_token(&p, end, &tok[0], &len[0])) {
    int64_t offset, size;
    for (int k = 1; k < 4; k++)
      if (!next_token(&p, end, &tok[k], &len[k])) len[k] = 0;
    if (!len[3] || !token_int(tok[1], len[1], &offset) || !token_int(tok[2], len[2], &size)) {
      st = STK_FAIL(STK_ERR_PARSE, "%s:%zu: expected groups of \"<ext> <offset> <size> <name>\"",
                    c->index_path, c->line);
      break;
    }
    if (offset % STK__TAR_BLOCK != 0 || size > c->tar_size || offset > c->tar_size - size) {
      st = STK_FAIL(STK_ERR_DECODE,
                    "%s:%zu: component at offset %lld (%lld bytes) lies outside "
                    "'%s' (%lld bytes): the index does not match the archive",
                    c->index_path, c->line, (long long)offset, (long long)size, c->tar_path,
                    (long long)c->tar_size);
      break;
    }
    size_t key_len;
    const char *unused;
    st = set_buf(&name, tok[3], len[3]);
    if (st != STK_OK || !stk__wds_split_name(name.data, &key_len, &unused)) continue;
    if (key.len == 0) st = set_buf(&key, name.data, key_len);
    if (st == STK_OK) st = set_buf(&ext, tok[0], len[0]);
    if (st == STK_OK) st = stk__wds_index_add(idx, key.data, key.len - 1, ext.data, offset, size);
  }
  stk__strbuf_free(&key);
  stk__strbuf_free(&name);
  stk__strbuf_free(&ext);
  return st;
}

static stk_status load_text(stk__wds_index *idx, load_ctx *c, const char *text, size_t size) {
  const char *p = text, *end = text + size;
  const char *nl = memchr(p, '\n', size);
  const char *line_end = nl ? nl : end;
  const char *tok;
  size_t len;
  int64_t declared = -1;
  c->line = 1;
  if (!next_token(&p, line_end, &tok, &len) || len != 4 || memcmp(tok, "v1.2", 4) != 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "%s:1: not a WebDataset index of version v1.2 "
                    "(the format of DALI's wds2idx)",
                    c->index_path);
  if (!next_token(&p, line_end, &tok, &len) || !token_int(tok, len, &declared))
    return STK_FAIL(STK_ERR_PARSE, "%s:1: expected \"v1.2 <number of samples>\"", c->index_path);
  p = nl ? nl + 1 : end;
  while (p < end) {
    c->line++;
    nl = memchr(p, '\n', (size_t)(end - p));
    line_end = nl ? nl : end;
    STK_TRY(load_line(idx, c, p, line_end));
    p = nl ? nl + 1 : end;
  }
  if (idx->num_samples != declared)
    return STK_FAIL(STK_ERR_PARSE, "%s: the header declares %lld samples, the index lists %lld",
                    c->index_path, (long long)declared, (long long)idx->num_samples);
  return STK_OK;
}

stk_status stk__wds_index_load(stk__wds_index *out, const char *index_path, const char *tar_path,
                               int64_t tar_size) {
  memset(out, 0, sizeof *out);
  uint8_t *data;
  size_t size;
  STK_TRY(stk__read_path(index_path, (size_t)1 << 32, &data, &size));
  load_ctx c = {index_path, tar_path, tar_size, 0};
  stk_status st = load_text(out, &c, (const char *)data, size);
  free(data);
  if (st != STK_OK) stk__wds_index_free(out);
  return st;
}

stk_status stk__wds_index_write(const stk__wds_index *idx, const char *index_path) {
  FILE *f = fopen(index_path, "w");
  if (!f) return STK_FAIL(STK_ERR_IO, "cannot create '%s': %s", index_path, strerror(errno));
  fprintf(f, "v1.2 %lld\n", (long long)idx->num_samples);
  for (int64_t s = 0; s < idx->num_samples; s++) {
    const char *key = stk__wds_key(idx, s);
    for (int64_t k = idx->first[s]; k < idx->first[s + 1]; k++) {
      const stk__wds_component *c = &idx->comps[k];
      const char *ext = stk__wds_ext(idx, c);
      fprintf(f, "%s%s %lld %lld %s%s%s", k > idx->first[s] ? " " : "", ext, (long long)c->offset,
              (long long)c->size, key, ext[0] ? "." : "", ext);
    }
    fputc('\n', f);
  }
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad)
    return STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", index_path, strerror(errno));
  return STK_OK;
}

/* ---- writing ---- */

static void put_octal(uint8_t *field, size_t n, int64_t v) {
  /* n-1 digits and a NUL */
  for (size_t i = n - 1; i-- > 0;) {
    field[i] = (uint8_t)('0' + (v & 7));
    v >>= 3;
  }
  field[n - 1] = '\0';
}

static void put_size(uint8_t *field, int64_t v) {
  if (v < ((int64_t)1 << 33)) {
    put_octal(field, 12, v);
    return;
  }
  memset(field, 0, 12); /* base-256 for members of 8 GiB and more */
  for (int i = 11; i > 0; i--, v >>= 8) field[i] = (uint8_t)(v & 0xff);
  field[0] = 0x80;
}

static void finish_header(uint8_t *h) {
  memset(h + 148, ' ', 8);
  uint32_t sum = 0;
  for (int i = 0; i < STK__TAR_BLOCK; i++) sum += h[i];
  put_octal(h + 148, 7, sum);
  h[155] = ' ';
}

static void fill_header(uint8_t *h, const char *name, size_t name_len, int64_t size, int64_t mtime,
                        char type) {
  memset(h, 0, STK__TAR_BLOCK);
  memcpy(h, name, name_len < 100 ? name_len : 100);
  put_octal(h + 100, 8, 0644);
  put_octal(h + 108, 8, 0);
  put_octal(h + 116, 8, 0);
  put_size(h + 124, size);
  put_octal(h + 136, 12, mtime < 0 ? 0 : mtime);
  h[156] = (uint8_t)type;
  memcpy(h + 257,
         "ustar\0"
         "00",
         8);
}

static stk_status write_bytes(FILE *f, const char *path, const void *data, size_t size) {
  if (size && fwrite(data, 1, size, f) != size)
    return STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  static const uint8_t zeros[STK__TAR_BLOCK];
  size_t pad = (size_t)(round_block((int64_t)size) - (int64_t)size);
  if (pad && fwrite(zeros, 1, pad, f) != pad)
    return STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  return STK_OK;
}

stk_status stk__tar_write_member(FILE *f, const char *path, const char *name, const void *data,
                                 size_t size, int64_t mtime) {
  uint8_t h[STK__TAR_BLOCK];
  size_t n = strlen(name);
  if (n == 0) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: empty member name", path);
  const char *split = NULL; /* a '/' leaving <= 155 bytes before and <= 100 after */
  for (const char *s = strchr(name, '/'); n > 100 && s; s = strchr(s + 1, '/'))
    if ((size_t)(s - name) <= 155 && n - (size_t)(s - name) - 1 <= 100 && s > name) split = s;
  if (n > 100 && !split) { /* a GNU long-name member first */
    fill_header(h, "././@LongLink", 13, (int64_t)n + 1, 0, 'L');
    finish_header(h);
    STK_TRY(write_bytes(f, path, h, STK__TAR_BLOCK));
    STK_TRY(write_bytes(f, path, name, n + 1));
  }
  if (split) {
    fill_header(h, split + 1, n - (size_t)(split - name) - 1, (int64_t)size, mtime, '0');
    memcpy(h + 345, name, (size_t)(split - name));
  } else {
    fill_header(h, name, n, (int64_t)size, mtime, '0');
  }
  finish_header(h);
  STK_TRY(write_bytes(f, path, h, STK__TAR_BLOCK));
  return write_bytes(f, path, data, size);
}

stk_status stk__tar_write_end(FILE *f, const char *path) {
  static const uint8_t zeros[2 * STK__TAR_BLOCK];
  if (fwrite(zeros, 1, sizeof zeros, f) != sizeof zeros)
    return STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  return STK_OK;
}
