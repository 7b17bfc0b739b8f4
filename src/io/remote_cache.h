/*
 * Reads of remote objects for a file set (io/fileset.h): a fixed number of blocks kept in
 * memory, filled by range requests, with read-ahead.
 *
 * A file read front to back (tar and TFRecord scans, streaming readers: each read starts
 * within a block of where one of the file's recent runs of reads ended) is served from whole
 * blocks of STK_REMOTE_BLOCK_KB KiB (default 4096), and the STK_REMOTE_READAHEAD blocks
 * after it (default 4) are fetched ahead by STK_REMOTE_PREFETCH_THREADS background
 * threads (default 4); after a file's last block, the next file of the set is read ahead,
 * and readers that know which samples come next ask for their blocks (hint).
 * Any other read (random access), and a read of at least a block, is one range request
 * straight into the caller's buffer. Memory: the blocks are at most STK_REMOTE_CACHE_MB
 * MiB per file set (at least four blocks), whatever the data set's size; unset, 256 MiB
 * or what a streaming shuffle buffer needs (stk__remote_cache_fit_shuffle), the larger,
 * up to 4 GiB.
 * The least recently used block not in use is replaced.
 */
#ifndef STOKER_IO_REMOTE_CACHE_H
#define STOKER_IO_REMOTE_CACHE_H

#include "../core/core.h"

typedef struct stk__remote_cache stk__remote_cache;

/* A cache for a set of `num_files` objects; its settings are read now, from the calling
 * thread's (stk__remote_use: a reader's arguments) or the environment, and the thread's
 * settings are kept for every request the cache makes (the strings must outlive it). */
stk_status stk__remote_cache_create(stk__remote_cache **out, int64_t num_files);
/* Stops the read-ahead threads and frees the blocks. NULL does nothing. */
void stk__remote_cache_destroy(stk__remote_cache *c);

/* Tells the cache where file `file` is and how big: needed for read-ahead into files not
 * read yet. `url` must outlive the cache. */
void stk__remote_cache_describe(stk__remote_cache *c, int64_t file, const char *url,
                                int64_t file_size);

/* Exactly `size` bytes at `offset` of file `file` (`url`, `file_size` bytes; the range
 * lies inside it). Thread-safe. Errors are io/remote.h's, naming the URL. */
stk_status stk__remote_cache_read(stk__remote_cache *c, int64_t file, const char *url,
                                  int64_t file_size, int64_t offset, void *dst, size_t size);

/* From now on every read is one range request for exactly its bytes, and the blocks'
 * memory is freed: for readers whose samples come in random order once the build-time
 * scan (front to back) is over, so that no block is fetched for one sample. */
void stk__remote_cache_random_access(stk__remote_cache *c);

/* Fetches the block holding `offset` of `file` ahead (in the background), unless it is
 * cached or queued: readers that know which samples come next (streaming) say so. */
void stk__remote_cache_hint(stk__remote_cache *c, int64_t file, int64_t offset);

/* A shuffle buffer of `fill` samples of about `sample_bytes` each reads in random order
 * among the blocks of its samples; returns how many blocks keep every block until its
 * last sample is read. Unless STK_REMOTE_CACHE_MB (or the reader's remote_cache_mb) is
 * set, the cache grows to that many (at most 4 GiB of blocks). */
int stk__remote_cache_fit_shuffle(stk__remote_cache *c, int64_t fill, double sample_bytes);

/* The block size and how many blocks the cache holds. */
void stk__remote_cache_shape(const stk__remote_cache *c, int64_t *block_size, int *num_blocks);

/* Counters, for tests and benchmarks: range requests made, and reads served from blocks
 * already in memory. */
void stk__remote_cache_stats(const stk__remote_cache *c, int64_t *requests, int64_t *hits);

#endif /* STOKER_IO_REMOTE_CACHE_H */
