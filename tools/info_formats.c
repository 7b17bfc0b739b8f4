/* `stoker info` on dataset files: WebDataset tar shards (samples, extensions) and TFRecord
 * files (records, and the features of the first record). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "io/fileset.h"
#include "io/tar.h"
#include "io/tfrecord.h"

/* Counts of one extension over a shard. */
typedef struct {
  const char *ext;
  int64_t count, bytes;
} ext_count;

static int info_tar(const char *path, int fd, int64_t size) {
  stk__wds_index idx;
  if (stk__wds_index_build(&idx, fd, path, size) != STK_OK) {
    cli_error("info");
    return 1;
  }
  ext_count exts[32];
  int n = 0, other = 0;
  for (int64_t k = 0; k < idx.num_comps; k++) {
    const char *e = stk__wds_ext(&idx, &idx.comps[k]);
    int j = 0;
    while (j < n && strcmp(exts[j].ext, e) != 0) j++;
    if (j == n && n == 32) {
      other++;
      continue;
    }
    if (j == n) exts[n++] = (ext_count){e, 0, 0};
    exts[j].count++;
    exts[j].bytes += idx.comps[k].size;
  }
  printf("%s: WebDataset tar shard, %lld sample(s), %lld member file(s), %.1f MB\n", path,
         (long long)idx.num_samples, (long long)idx.num_comps, size / 1e6);
  for (int j = 0; j < n; j++)
    printf("  .%-16s %8lld file(s), mean %.1f KB\n", exts[j].ext, (long long)exts[j].count,
           exts[j].bytes / 1e3 / (double)exts[j].count);
  if (other) printf("  (%d more extensions)\n", other);
  if (idx.num_samples) printf("  first key: %s\n", stk__wds_key(&idx, 0));
  stk__wds_index_free(&idx);
  return 0;
}

static stk_status print_feature(void *user, const char *name, size_t len,
                                const stk__tf_feature *f) {
  static const char *const kinds[] = {"missing", "bytes_list", "float_list", "int64_list", "empty"};
  printf("  %-28.*s %-10s %lld value(s)", (int)len, name, kinds[f->kind], (long long)f->count);
  if (f->kind == STK__TF_INT64 && f->count >= 1 && f->count <= 4) {
    int64_t v[4];
    if (stk__tf_feature_int64(f, v) == STK_OK)
      for (int64_t i = 0; i < f->count; i++) printf("%s%lld", i ? ", " : " = ", (long long)v[i]);
  }
  printf("\n");
  return STK_OK;
}

static int info_tfrecord(const char *path, int fd, int64_t size) {
  stk__tfrecord_index idx;
  if (stk__tfrecord_index_build(&idx, fd, path, size) != STK_OK) {
    cli_error("info");
    return 1;
  }
  printf("%s: TFRecord file, %lld record(s), %.1f MB\n", path, (long long)idx.count, size / 1e6);
  int rc = 0;
  uint8_t *rec = idx.count ? malloc((size_t)idx.sizes[0]) : NULL;
  size_t got = 0, len;
  const uint8_t *payload;
  if (rec && stk__pread_full(fd, path, idx.offsets[0], rec, (size_t)idx.sizes[0], &got) == STK_OK &&
      stk__tfrecord_check(rec, got, path, idx.offsets[0], &payload, &len) == STK_OK) {
    printf("  features of the first record (tf.train.Example):\n");
    if (stk__tf_example_each(payload, len, print_feature, NULL) != STK_OK) {
      cli_error("info");
      rc = 1;
    }
  } else if (rec) {
    cli_error("info");
    rc = 1;
  }
  free(rec);
  stk__tfrecord_index_free(&idx);
  return rc;
}

int cli_info_archive(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat sb;
  uint8_t head[512];
  size_t got = 0;
  int rc = -1;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
      stk__pread_full(fd, path, 0, head, sizeof head, &got) == STK_OK) {
    bool is_tar = got == sizeof head && stk__tar_header_valid(head);
    bool is_tfrecord = got >= 12 && stk__crc32c_mask(stk__crc32c(0, head, 8)) ==
                                        ((uint32_t)head[8] | (uint32_t)head[9] << 8 |
                                         (uint32_t)head[10] << 16 | (uint32_t)head[11] << 24);
    if (is_tar)
      rc = info_tar(path, fd, (int64_t)sb.st_size);
    else if (is_tfrecord)
      rc = info_tfrecord(path, fd, (int64_t)sb.st_size);
  }
  close(fd);
  return rc;
}
