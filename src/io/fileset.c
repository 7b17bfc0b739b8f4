/* Positional reads from a fixed set of files; see fileset.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileset.h"
#include "remote.h"
#include "remote_cache.h"

stk_status stk__pread_full(int fd, const char *path, int64_t offset, void *dst, size_t size,
                           size_t *got) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, (char *)dst + done, size - done, (off_t)(offset + (int64_t)done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return STK_FAIL(STK_ERR_IO, "cannot read '%s' at offset %lld: %s", path,
                      (long long)(offset + (int64_t)done), strerror(errno));
    if (n == 0) break;
    done += (size_t)n;
  }
  *got = done;
  return STK_OK;
}

static stk_status open_one(const char *path, const char *who, int *fd, int64_t *size) {
  *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "%s: cannot open '%s': %s",
                    who, path, strerror(errno));
  struct stat sb;
  if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(*fd);
    *fd = -1;
    return STK_FAIL(STK_ERR_IO, "%s: '%s' is not a regular file", who, path);
  }
  *size = (int64_t)sb.st_size;
  return STK_OK;
}

static stk_status copy_paths(stk__fileset *fs, const char *const *paths, size_t count) {
  stk__strbuf text = {0};
  size_t *offsets = stk__malloc((count ? count : 1) * sizeof *offsets, "a file set");
  if (!offsets) return STK_ERR_OUT_OF_MEMORY;
  stk_status st = STK_OK;
  for (size_t i = 0; st == STK_OK && i < count; i++) {
    offsets[i] = text.len;
    st = stk__strbuf_append(&text, paths[i], strlen(paths[i]) + 1);
  }
  if (st == STK_OK) {
    for (size_t i = 0; i < count; i++) fs->paths[i] = text.data + offsets[i];
    fs->text = text.data;
  } else {
    stk__strbuf_free(&text);
  }
  free(offsets);
  return st;
}

/* A URL: its size now (HEAD), its reads later through the set's cache. */
static stk_status open_remote(stk__fileset *fs, int64_t i, const char *who) {
  fs->fds[i] = STK__FD_REMOTE;
  if (!fs->cache) STK_TRY(stk__remote_cache_create(&fs->cache, fs->count));
  stk_status st = stk__remote_size(fs->paths[i], &fs->sizes[i]);
  if (st != STK_OK) return stk__wrap(st, "%s", who);
  stk__remote_cache_describe(fs->cache, i, fs->paths[i], fs->sizes[i]);
  return STK_OK;
}

/* Opens (or sizes) file i; a failure goes to `on_fail` when there is one. */
static stk_status open_at(stk__fileset *fs, size_t i, bool keep, const char *who,
                          stk__fileset_fail_fn on_fail, void *user) {
  stk_status st;
  if (stk__is_url(fs->paths[i])) {
    st = open_remote(fs, (int64_t)i, who);
  } else {
    int fd;
    st = open_one(fs->paths[i], who, &fd, &fs->sizes[i]);
    if (st == STK_OK && keep)
      fs->fds[i] = fd;
    else if (st == STK_OK)
      close(fd);
  }
  if (st == STK_OK || !on_fail || st == STK_ERR_OUT_OF_MEMORY) return st;
  STK_TRY(on_fail(user, fs->paths[i], st));
  stk__fileset_mark_bad(fs, (int64_t)i, st);
  return STK_OK;
}

void stk__fileset_mark_bad(stk__fileset *fs, int64_t index, stk_status why) {
  fs->bad_status = why;
  if (fs->fds[index] == STK__FD_BAD) return;
  if (fs->fds[index] >= 0) close(fs->fds[index]);
  fs->fds[index] = STK__FD_BAD;
  fs->sizes[index] = 0;
  fs->num_bad++;
}

stk_status stk__fileset_open(stk__fileset *fs, const char *const *paths, size_t count,
                             const char *who) {
  return stk__fileset_open_lenient(fs, paths, count, who, NULL, NULL);
}

stk_status stk__fileset_open_lenient(stk__fileset *fs, const char *const *paths, size_t count,
                                     const char *who, stk__fileset_fail_fn on_fail, void *user) {
  memset(fs, 0, sizeof *fs);
  if (!who) who = "fileset";
  size_t n = count ? count : 1;
  fs->paths = stk__calloc(n, sizeof *fs->paths, "a file set");
  fs->sizes = stk__calloc(n, sizeof *fs->sizes, "a file set");
  fs->fds = stk__malloc(n * sizeof *fs->fds, "a file set");
  if (!fs->paths || !fs->sizes || !fs->fds) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < count; i++) fs->fds[i] = -1;
  fs->count = (int64_t)count;
  STK_TRY(copy_paths(fs, paths, count));
  bool keep = count <= STK__FILESET_MAX_OPEN;
  for (size_t i = 0; i < count; i++) STK_TRY(open_at(fs, i, keep, who, on_fail, user));
  return STK_OK;
}

void stk__fileset_close(stk__fileset *fs) {
  if (!fs) return;
  for (int64_t i = 0; fs->fds && i < fs->count; i++)
    if (fs->fds[i] >= 0) close(fs->fds[i]);
  stk__remote_cache_destroy(fs->cache);
  free(fs->paths);
  free(fs->sizes);
  free(fs->fds);
  free(fs->text);
  memset(fs, 0, sizeof *fs);
}

stk_status stk__fileset_read(const stk__fileset *fs, int64_t index, int64_t offset, void *dst,
                             size_t size) {
  if (index < 0 || index >= fs->count)
    return STK_FAIL(STK_ERR_INTERNAL, "file %lld of %lld", (long long)index, (long long)fs->count);
  const char *path = fs->paths[index];
  int fd = fs->fds[index];
  if (fd == STK__FD_BAD)
    return STK_FAIL(STK_ERR_INTERNAL, "'%s' was left out of the set", fs->paths[index]);
  if (fd == STK__FD_REMOTE) {
    size_t got = 0;
    stk_status st = stk__fileset_pread(fs, index, offset, dst, size, &got);
    if (st == STK_OK && got < size)
      st = STK_FAIL(STK_ERR_DECODE,
                    "'%s' is truncated: %zu bytes wanted at offset %lld, the object ends at %lld",
                    path, size, (long long)offset, (long long)fs->sizes[index]);
    return st;
  }
  bool own = fd < 0;
  if (own) {
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "cannot open '%s': %s",
                      path, strerror(errno));
  }
  size_t got = 0;
  stk_status st = stk__pread_full(fd, path, offset, dst, size, &got);
  if (own) close(fd);
  if (st == STK_OK && got < size)
    st = STK_FAIL(STK_ERR_DECODE,
                  "'%s' is truncated: %zu bytes wanted at offset %lld, the file ends at %lld", path,
                  size, (long long)offset, (long long)(offset + (int64_t)got));
  return st;
}

stk_status stk__fileset_pread(const stk__fileset *fs, int64_t index, int64_t offset, void *dst,
                              size_t size, size_t *got) {
  if (index < 0 || index >= fs->count || offset < 0)
    return STK_FAIL(STK_ERR_INTERNAL, "file %lld of %lld", (long long)index, (long long)fs->count);
  *got = 0;
  if (fs->fds[index] == STK__FD_BAD)
    return STK_FAIL(STK_ERR_INTERNAL, "'%s' was left out of the set", fs->paths[index]);
  if (fs->fds[index] != STK__FD_REMOTE) {
    if (fs->fds[index] >= 0)
      return stk__pread_full(fs->fds[index], fs->paths[index], offset, dst, size, got);
    int fd = open(fs->paths[index], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "cannot open '%s': %s",
                      fs->paths[index], strerror(errno));
    stk_status st = stk__pread_full(fd, fs->paths[index], offset, dst, size, got);
    close(fd);
    return st;
  }
  /* the object's size was taken at open: read what lies before it */
  int64_t end = fs->sizes[index];
  if (offset >= end || size == 0) return STK_OK;
  size_t n = (int64_t)size > end - offset ? (size_t)(end - offset) : size;
  STK_TRY(stk__remote_cache_read(fs->cache, index, fs->paths[index], end, offset, dst, n));
  *got = n;
  return STK_OK;
}

stk_status stk__source_pread(const stk__source *src, int64_t offset, void *dst, size_t size,
                             size_t *got) {
  if (src->fs) return stk__fileset_pread(src->fs, src->index, offset, dst, size, got);
  return stk__pread_full(src->fd, src->path, offset, dst, size, got);
}

void stk__fileset_hint(const stk__fileset *fs, int64_t index, int64_t offset) {
  if (fs->cache && index >= 0 && index < fs->count && fs->fds[index] == STK__FD_REMOTE)
    stk__remote_cache_hint(fs->cache, index, offset);
}

void stk__fileset_random_access(stk__fileset *fs) {
  if (fs->cache) stk__remote_cache_random_access(fs->cache);
}
