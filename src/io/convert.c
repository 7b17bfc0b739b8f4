/* ImageFolder / list file -> WebDataset shards or TFRecord files; see convert.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert.h"
#include "remote.h"
#include "file_list.h"
#include "tar.h"
#include "tfrecord.h"

#define TAG_CONVERT      0x636f6e7665727431ull
#define MAX_SAMPLE_BYTES ((size_t)1 << 31)

void stk__convert_shard_path(char *buf, size_t cap, const char *out_dir, int64_t index,
                             stk__convert_format format, bool index_file) {
  const char *ext = index_file ? "idx" : format == STK__CONVERT_WDS ? "tar" : "tfrecord";
  snprintf(buf, cap, "%s/shard-%06lld.%s", out_dir, (long long)index, ext);
}

static stk_status load_source(const char *src, stk__file_list *fl) {
  struct stat sb;
  if (stat(src, &sb) != 0)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "cannot read '%s': %s", src,
                    strerror(errno));
  if (!S_ISDIR(sb.st_mode)) return stk__file_list_parse(fl, src, NULL);
  size_t n = 0;
  while (stk__default_file_filters[n]) n++;
  return stk__file_list_scan(fl, src, stk__default_file_filters, n, false);
}

/* mkdir -p */
static stk_status make_dir(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "bad output directory '%s'", dir);
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char c = path[i];
    path[i] = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
      return STK_FAIL(STK_ERR_IO, "cannot create directory '%s': %s", path, strerror(errno));
    path[i] = c;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return STK_FAIL(STK_ERR_IO, "'%s' is not a directory", dir);
  return STK_OK;
}

/* The lower-case extension of a path ("jpeg" becomes "jpg"; none gives "bin"). */
static void extension_of(const char *path, char *ext, size_t cap) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot || !dot[1] || strlen(dot + 1) >= cap) {
    snprintf(ext, cap, "bin");
    return;
  }
  size_t i = 0;
  for (const char *p = dot + 1; *p && i + 1 < cap; p++) ext[i++] = (char)tolower((unsigned char)*p);
  ext[i] = '\0';
  if (strcmp(ext, "jpeg") == 0) snprintf(ext, cap, "jpg");
}

/* The order samples are written in: identity or a seeded Fisher-Yates permutation. */
static stk_status order_of(int64_t n, bool shuffle, uint64_t seed, int64_t **out) {
  int64_t *perm = stk__malloc((size_t)n * sizeof *perm, "the conversion order");
  if (!perm) return STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  stk__philox g;
  stk__philox_init(&g, stk__mix64(seed, TAG_CONVERT), 0);
  for (int64_t i = n - 1; shuffle && i > 0; i--) {
    int64_t j = (int64_t)stk__philox_below(&g, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  *out = perm;
  return STK_OK;
}

/* One output file being written, with the index of what it holds. */
typedef struct {
  FILE *f;
  char path[4096];
  stk__wds_index wds;
  stk__tfrecord_index tf;
  int64_t tf_cap;
} shard;

static stk_status tf_push(shard *sh, int64_t offset, int64_t size) {
  if (sh->tf.count == sh->tf_cap) {
    int64_t c = sh->tf_cap ? sh->tf_cap * 2 : 256;
    int64_t *o = stk__realloc(sh->tf.offsets, (size_t)c * sizeof *o, "a TFRecord index");
    if (o) sh->tf.offsets = o;
    int64_t *s = stk__realloc(sh->tf.sizes, (size_t)c * sizeof *s, "a TFRecord index");
    if (s) sh->tf.sizes = s;
    if (!o || !s) return STK_ERR_OUT_OF_MEMORY;
    sh->tf_cap = c;
  }
  sh->tf.offsets[sh->tf.count] = offset;
  sh->tf.sizes[sh->tf.count++] = size;
  return STK_OK;
}

/* Notes a member written with its header at `header` in the shard's index. */
static stk_status wds_note(shard *sh, const char *key, const char *ext, int64_t header,
                           int64_t size) {
  return stk__wds_index_add(&sh->wds, key, strlen(key), ext, header + STK__TAR_BLOCK, size);
}

static stk_status write_wds_sample(shard *sh, const char *key, const char *ext, const uint8_t *data,
                                   size_t size, int32_t label) {
  char name[64], cls[16];
  snprintf(name, sizeof name, "%s.%s", key, ext);
  int64_t at = ftell(sh->f);
  STK_TRY(stk__tar_write_member(sh->f, sh->path, name, data, size, 0));
  STK_TRY(wds_note(sh, key, ext, at, (int64_t)size));
  int n = snprintf(cls, sizeof cls, "%d", (int)label);
  snprintf(name, sizeof name, "%s.cls", key);
  at = ftell(sh->f);
  STK_TRY(stk__tar_write_member(sh->f, sh->path, name, cls, (size_t)n, 0));
  return wds_note(sh, key, "cls", at, n);
}

static stk_status write_tf_sample(shard *sh, const char *rel, const char *ext, const uint8_t *data,
                                  size_t size, int32_t label) {
  stk__strbuf features = {0}, example = {0};
  int64_t lab = label;
  const char *format = strcmp(ext, "jpg") == 0 ? "jpeg" : ext;
  stk_status st = stk__tf_put_bytes(&features, "image/encoded", data, size);
  if (st == STK_OK) st = stk__tf_put_int64(&features, "image/class/label", &lab, 1);
  if (st == STK_OK) st = stk__tf_put_bytes(&features, "image/filename", rel, strlen(rel));
  if (st == STK_OK) st = stk__tf_put_bytes(&features, "image/format", format, strlen(format));
  if (st == STK_OK) st = stk__tf_example_finish(&features, &example);
  int64_t at = ftell(sh->f);
  if (st == STK_OK) st = stk__tfrecord_write(sh->f, sh->path, example.data, example.len);
  if (st == STK_OK) st = tf_push(sh, at, (int64_t)example.len + STK__TFRECORD_OVERHEAD);
  stk__strbuf_free(&features);
  stk__strbuf_free(&example);
  return st;
}

static stk_status open_shard(shard *sh, const stk__convert_options *o, int64_t index) {
  memset(sh, 0, sizeof *sh);
  stk__convert_shard_path(sh->path, sizeof sh->path, o->out_dir, index, o->format, false);
  sh->f = fopen(sh->path, "wb");
  if (!sh->f) return STK_FAIL(STK_ERR_IO, "cannot create '%s': %s", sh->path, strerror(errno));
  return STK_OK;
}

/* With a URL for out_dir: the shard's two files go up, and the local copies away. */
static stk_status upload_shard(const stk__convert_options *o, int64_t index) {
  for (int k = 0; k < 2; k++) {
    char local[4096], url[4096];
    stk__convert_shard_path(local, sizeof local, o->out_dir, index, o->format, k == 1);
    stk__convert_shard_path(url, sizeof url, o->upload_to, index, o->format, k == 1);
    STK_TRY(stk__remote_put_file(url, local));
    unlink(local);
  }
  return STK_OK;
}

/* Ends the file, writes its index and frees the shard. */
static stk_status close_shard(shard *sh, const stk__convert_options *o, int64_t index,
                              stk_status st) {
  if (st == STK_OK && o->format == STK__CONVERT_WDS) st = stk__tar_write_end(sh->f, sh->path);
  bool bad = ferror(sh->f) != 0;
  if (fclose(sh->f) != 0 || bad) {
    if (st == STK_OK) st = STK_FAIL(STK_ERR_IO, "cannot write '%s': %s", sh->path, strerror(errno));
  }
  char idx[4096];
  stk__convert_shard_path(idx, sizeof idx, o->out_dir, index, o->format, true);
  if (st == STK_OK && o->format == STK__CONVERT_WDS) st = stk__wds_index_write(&sh->wds, idx);
  if (st == STK_OK && o->format == STK__CONVERT_TFRECORD)
    st = stk__tfrecord_index_write(&sh->tf, idx);
  stk__wds_index_free(&sh->wds);
  stk__tfrecord_index_free(&sh->tf);
  if (st == STK_OK && o->upload_to) st = upload_shard(o, index);
  return st;
}

/* The path relative to the source root, for the "image/filename" feature. */
static const char *relative(const char *path, const char *src) {
  size_t n = strlen(src);
  if (strncmp(path, src, n) == 0 && path[n] == '/') return path + n + 1;
  return path;
}

static stk_status convert_all(const stk__convert_options *o, const stk__file_list *fl,
                              const int64_t *order, stk__convert_result *res) {
  shard sh;
  stk_status st = STK_OK;
  int64_t n = fl->count, open_index = -1;
  for (int64_t i = 0; st == STK_OK && i < n; i++) {
    if (i % o->shard_size == 0) {
      if (open_index >= 0) st = close_shard(&sh, o, open_index, st);
      open_index = -1;
      if (st == STK_OK) st = open_shard(&sh, o, i / o->shard_size);
      if (st != STK_OK) break;
      open_index = i / o->shard_size;
      res->files++;
    }
    const char *path = fl->paths[order[i]];
    uint8_t *data;
    size_t size;
    char key[32], ext[16];
    st = stk__read_path(path, MAX_SAMPLE_BYTES, &data, &size);
    if (st != STK_OK) break;
    snprintf(key, sizeof key, "%09lld", (long long)i);
    extension_of(path, ext, sizeof ext);
    int32_t label = fl->labels[order[i]];
    st = o->format == STK__CONVERT_WDS
             ? write_wds_sample(&sh, key, ext, data, size, label)
             : write_tf_sample(&sh, relative(path, o->src), ext, data, size, label);
    free(data);
    res->samples++;
    res->bytes += (int64_t)size;
    if (o->progress) o->progress(o->user, i + 1, n);
  }
  if (open_index >= 0) st = close_shard(&sh, o, open_index, st);
  return st;
}

/* out_dir a URL: the conversion goes through a staging directory (one shard at a time). */
static stk_status convert_to_url(const stk__convert_options *o, stk__convert_result *res) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/stoker-convert-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return STK_FAIL(STK_ERR_IO, "cannot create '%s': %s", dir, strerror(errno));
  stk__convert_options local = *o;
  local.out_dir = dir;
  local.upload_to = o->out_dir;
  stk_status st = stk__convert_dataset(&local, res);
  rmdir(dir); /* empty unless a failure left a shard behind */
  return st;
}

stk_status stk__convert_dataset(const stk__convert_options *o, stk__convert_result *res) {
  if (stk__is_url(o->out_dir) && !o->upload_to) return convert_to_url(o, res);
  memset(res, 0, sizeof *res);
  if (o->shard_size < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "shard size %lld must be >= 1",
                    (long long)o->shard_size);
  stk__file_list fl;
  STK_TRY(load_source(o->src, &fl));
  int64_t *order = NULL;
  stk_status st = make_dir(o->out_dir);
  if (st == STK_OK) st = order_of(fl.count, o->shuffle, o->seed, &order);
  if (st == STK_OK) st = convert_all(o, &fl, order, res);
  free(order);
  stk__file_list_free(&fl);
  return st;
}
