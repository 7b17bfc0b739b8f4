/*
 * A fixed set of data files (tar shards, TFRecord files) read by position from many
 * worker threads at once. Sizes are taken once when the set is opened, so a record's
 * bounds can be checked before it is read; a file that shrank later is reported as
 * truncated. Small sets keep their descriptors open (pread is thread-safe); large ones
 * open the file for each read so that thousands of shards never exhaust descriptors.
 * Paths may be URLs (s3://, http(s)://; io/remote.h): their sizes come from HEAD requests
 * and reads go through a bounded block cache with read-ahead (io/remote_cache.h) or,
 * for random access, straight range requests.
 */
#ifndef STOKER_IO_FILESET_H
#define STOKER_IO_FILESET_H

#include "../core/core.h"

typedef struct {
  int64_t count;
  char **paths;   /* count paths, pointing into `text` */
  int64_t *sizes; /* bytes of each file when the set was opened */
  int *fds;       /* open descriptors, -1 where files are opened per read,
                     STK__FD_REMOTE for URLs */
  char *text;
  struct stk__remote_cache *cache; /* reads of the URLs; NULL when there are none */
  int64_t num_bad;                 /* files left out (STK__FD_BAD) */
  stk_status bad_status;           /* why the last one was */
} stk__fileset;

#define STK__FD_REMOTE (-2)
/* A file left out (a reader's on_error="skip" at build): size 0, never read. */
#define STK__FD_BAD    (-3)

/* Sets kept open up to this many files. */
#define STK__FILESET_MAX_OPEN 256

/* Copies the paths and takes every file's size (a missing file is STK_ERR_NOT_FOUND,
 * anything but a regular file STK_ERR_IO, both naming the path and prefixed by `who`).
 * Free with stk__fileset_close, also after a failure. */
stk_status stk__fileset_open(stk__fileset *fs, const char *const *paths, size_t count,
                             const char *who);
void stk__fileset_close(stk__fileset *fs);

/* What to do with a file that cannot be opened or sized (`st`, its message the thread's
 * last error): STK_OK leaves it out of the set (STK__FD_BAD), anything else fails the
 * open with that status. */
typedef stk_status (*stk__fileset_fail_fn)(void *user, const char *path, stk_status st);

/* As stk__fileset_open, asking `on_fail` about each file that fails. */
stk_status stk__fileset_open_lenient(stk__fileset *fs, const char *const *paths, size_t count,
                                     const char *who, stk__fileset_fail_fn on_fail, void *user);

/* Leaves file `index` out of the set (a reader could not index it, failing with `why`):
 * its descriptor is closed, its size is 0, and reads of it are errors. */
void stk__fileset_mark_bad(stk__fileset *fs, int64_t index, stk_status why);

/* Reads exactly `size` bytes at `offset` of file `index` into `dst`. Reading past the end
 * of the file is STK_ERR_DECODE ("truncated"), naming the file and the offset; system
 * errors are STK_ERR_IO. Thread-safe. */
stk_status stk__fileset_read(const stk__fileset *fs, int64_t index, int64_t offset, void *dst,
                             size_t size);

/* Reads up to `size` bytes at `offset` of file `index`: *got is short only at the end of
 * the file. Thread-safe. */
stk_status stk__fileset_pread(const stk__fileset *fs, int64_t index, int64_t offset, void *dst,
                              size_t size, size_t *got);

/* Says that bytes at `offset` of file `index` will be read soon: a remote file's block is
 * fetched ahead (io/remote_cache.h); nothing for local files. */
void stk__fileset_hint(const stk__fileset *fs, int64_t index, int64_t offset);

/* The set's remote files will be read in random order from now on: exact range requests,
 * no blocks (io/remote_cache.h); nothing for local files. */
void stk__fileset_random_access(stk__fileset *fs);

/* Something to read by position: file `index` of a file set, or else a descriptor. What
 * the format scanners (tar, TFRecord) read through, for local files and URLs alike. */
typedef struct {
  const stk__fileset *fs; /* NULL: read `fd` */
  int64_t index;
  int fd;
  const char *path;
} stk__source;

/* As stk__pread_full, for either kind of source. */
stk_status stk__source_pread(const stk__source *src, int64_t offset, void *dst, size_t size,
                             size_t *got);

/* pread loop on one descriptor: the bytes actually read go to *got (short at EOF). */
stk_status stk__pread_full(int fd, const char *path, int64_t offset, void *dst, size_t size,
                           size_t *got);

#endif /* STOKER_IO_FILESET_H */
