/*
 * The sample cache (issue 22): the "cache" operator keeps what the deterministic part of
 * a pipeline in front of it (its prefix: decode, resize, ...) made for every sample, keyed
 * by the sample's identity (the reader's item: a file's path, with its size and
 * modification time as a stamp), so later epochs skip that prefix.
 *
 * cache.c: the operator, the analysis of its prefix at build (random operators refused,
 * the nodes a hit skips) and the executor's per-sample lookup.
 * cache_store.c: where entries live: in memory (LRU within capacity_bytes) or in files
 * under a directory (with a manifest naming the prefix; stops inserting when full).
 */
#ifndef STOKER_PIPELINE_CACHE_H
#define STOKER_PIPELINE_CACHE_H

#include "internal.h"

/* ---- the store ---- */
typedef struct stk__cache_store stk__cache_store;

/* An entry's tensors (the cache operator's inputs, in order); data NULL until read. */
#define STK__CACHE_MAX_TENSORS 8
typedef struct {
  int count;
  stk__tensor t[STK__CACHE_MAX_TENSORS];
  size_t bytes[STK__CACHE_MAX_TENSORS];
} stk__cache_value;

/* What a lookup holds until the value is read (an entry kept alive, an open file). */
typedef struct {
  void *entry;
  int fd;
} stk__cache_pin;

typedef struct {
  int64_t bytes, entries, dropped; /* dropped: evicted, or not stored (full, too large) */
} stk__cache_store_stats;

/* A store of at most `capacity` bytes; `dir` NULL or "" keeps entries in memory, else in
 * files under `dir` (created if missing), whose manifest names `prefix`: a directory made
 * for another prefix is emptied first. Errors name `who`. */
stk_status stk__cache_store_create(int64_t capacity, const char *dir, const char *prefix,
                                   const char *who, stk__cache_store **out);
void stk__cache_store_destroy(stk__cache_store *s);
/* Looks `key` up: a hit when an entry exists with the same `stamp`. On a hit, *v holds the
 * shapes (no data yet) and *pin what stk__cache_store_read needs; a miss leaves *hit
 * false. Thread-safe. */
stk_status stk__cache_store_find(stk__cache_store *s, const char *key, const char *stamp,
                                 stk__cache_value *v, stk__cache_pin *pin, bool *hit);
/* Copies tensor `i` of a found entry into `dst` (v->bytes[i] bytes). */
stk_status stk__cache_store_read(stk__cache_store *s, const stk__cache_pin *pin,
                                 const stk__cache_value *v, int i, void *dst);
/* Ends a lookup (every hit, read or not). */
void stk__cache_store_unpin(stk__cache_store *s, stk__cache_pin *pin);
/* Stores a value (copied) under `key` with `stamp`, replacing an older one; a value that
 * does not fit is dropped (memory: after evicting the least recently used entries). */
stk_status stk__cache_store_put(stk__cache_store *s, const char *key, const char *stamp,
                                const stk__cache_value *v);
void stk__cache_store_stats_get(stk__cache_store *s, stk__cache_store_stats *out);

/* ---- the executor's side ---- */
extern const stk__op_def stk__op_cache;

/* At the start of a sample's chain: looks every cache node up; on a hit, writes the
 * cache's outputs and marks it and the prefix nodes only it needs in s->skip. A failure
 * is the sample's, with *failed the node to blame. */
stk_status stk__cache_begin_sample(stk__sample *s, stk__node **failed);
/* Whether the pipeline has cache nodes (the executor then gives samples a skip mask). */
bool stk__cache_present(const stk_pipeline *p);
/* Adds the cache nodes' counters to *out (stk_pipeline_stats). */
void stk__cache_stats(stk_pipeline *p, stk_stats *out);

#endif
