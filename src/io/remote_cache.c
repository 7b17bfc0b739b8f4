/* The block cache with read-ahead for remote file sets; see remote_cache.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"
#include "remote_cache.h"

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY };

typedef struct {
  int state;
  bool fresh; /* fetched ahead and not read yet: read-ahead does not evict it */
  int64_t file, block;
  int pins; /* readers copying out of it */
  uint64_t used;
  size_t len;
  uint8_t *data;
} slot;

/* Sequential-access detection: where recent runs of reads of a file ended. Several, so
 * that workers reading one shard at different places, or a random read among them, do
 * not hide each other's runs (as a kernel's read-ahead keeps several streams). */
#define RUNS 8

typedef struct {
  const char *url;
  int64_t size;
  int64_t run_end[RUNS];
  uint64_t run_used[RUNS];
} file_info;

#define QUEUE_CAP   256
#define MAX_THREADS 16

struct stk__remote_cache {
  pthread_mutex_t mu;
  pthread_cond_t changed; /* a slot finished loading, or the queue has work */
  int64_t block_size;
  int readahead, num_threads, started;
  int num_slots;
  slot **slots; /* each slot allocated apart: growing the array moves none */
  int64_t num_files;
  file_info *files;
  uint64_t clock;
  struct {
    int64_t file, block;
  } queue[QUEUE_CAP];
  int q_head, q_len;
  bool stop;
  bool random_access; /* reads go straight to range requests, never to blocks */
  pthread_t threads[MAX_THREADS];
  int64_t requests, hits, bytes; /* bytes: fetched by range requests (blocks and direct) */
  /* the creating reader's settings (io/remote.h), for every request made for it */
  stk__remote_opts opts;
  bool has_opts;
};

/* Requests for the cache use its reader's settings, whichever thread makes them. */
static const stk__remote_opts *use_opts(const stk__remote_cache *c) {
  return stk__remote_use(c->has_opts ? &c->opts : NULL);
}

stk_status stk__remote_cache_create(stk__remote_cache **out, int64_t num_files) {
  stk__remote_cache *c = stk__calloc(1, sizeof *c, "a remote cache");
  if (!c) return STK_ERR_OUT_OF_MEMORY;
  const stk__remote_opts *o = stk__remote_current();
  if (o) c->opts = *o, c->has_opts = true;
  c->block_size = (int64_t)stk__remote_setting("STK_REMOTE_BLOCK_KB", 4096, 4, 1 << 20) * 1024;
  int64_t mem = (int64_t)stk__remote_setting("STK_REMOTE_CACHE_MB", 256, 1, 1 << 20) << 20;
  c->num_slots = (int)(mem / c->block_size < 4      ? 4
                       : mem / c->block_size > 4096 ? 4096
                                                    : mem / c->block_size);
  c->readahead = stk__remote_setting("STK_REMOTE_READAHEAD", 4, 0, 64);
  if (c->readahead > c->num_slots / 2) c->readahead = c->num_slots / 2;
  c->num_threads = stk__remote_setting("STK_REMOTE_PREFETCH_THREADS", 4, 0, MAX_THREADS);
  c->num_files = num_files;
  c->slots = stk__calloc((size_t)c->num_slots, sizeof *c->slots, "a remote cache");
  for (int i = 0; c->slots && i < c->num_slots; i++) {
    c->slots[i] = stk__calloc(1, sizeof **c->slots, "a remote cache");
    if (!c->slots[i]) c->num_slots = i; /* fewer blocks, still bounded; at least none */
  }
  c->files = stk__calloc((size_t)(num_files ? num_files : 1), sizeof *c->files, "a remote cache");
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->changed, NULL);
  *out = c;
  if (!c->slots || !c->files) return STK_ERR_OUT_OF_MEMORY;
  return STK_OK;
}

void stk__remote_cache_destroy(stk__remote_cache *c) {
  if (!c) return;
  if (stk__remote_setting("STK_REMOTE_STATS", 0, 0, 1))
    fprintf(stderr,
            "stoker: remote reads: %lld range requests, %lld reads from cached blocks, "
            "%.1f MB fetched\n",
            (long long)c->requests, (long long)c->hits, (double)c->bytes / 1e6);
  pthread_mutex_lock(&c->mu);
  c->stop = true;
  pthread_cond_broadcast(&c->changed);
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < c->started; i++) pthread_join(c->threads[i], NULL);
  for (int i = 0; c->slots && i < c->num_slots; i++) {
    free(c->slots[i]->data);
    free(c->slots[i]);
  }
  free(c->slots);
  free(c->files);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->changed);
  free(c);
}

void stk__remote_cache_describe(stk__remote_cache *c, int64_t file, const char *url,
                                int64_t file_size) {
  pthread_mutex_lock(&c->mu);
  c->files[file].url = url;
  c->files[file].size = file_size;
  pthread_mutex_unlock(&c->mu);
}

void stk__remote_cache_shape(const stk__remote_cache *c, int64_t *block_size, int *num_blocks) {
  *block_size = c->block_size;
  *num_blocks = c->num_slots;
}

int stk__remote_cache_fit_shuffle(stk__remote_cache *c, int64_t fill, double sample_bytes) {
  double per_block = (double)c->block_size / (sample_bytes > 1 ? sample_bytes : 1);
  if (per_block < 1) per_block = 1;
  /* a sample stays in the buffer a geometric time of mean `fill` draws, so a block is
   * needed until the last of its k samples leaves: about H(k) = 1 + 1/2 + ... + 1/k times
   * as long as one sample */
  double h = 0;
  for (int k = 1; k <= (int)per_block && k <= 100000; k++) h += 1.0 / k;
  double need = (double)fill / per_block * (h > 1 ? h : 1) + c->readahead + 4;
  double all = 0; /* more than the whole data set is never needed */
  for (int64_t f = 0; f < c->num_files; f++)
    all += (double)((c->files[f].size + c->block_size - 1) / c->block_size);
  if (need > all + 1) need = all + 1;
  int want = need > 16384 ? 16384 : (int)need + 1;
  const stk__remote_opts *prev = use_opts(c);
  bool given = stk__remote_setting_given("STK_REMOTE_CACHE_MB");
  stk__remote_use(prev);
  if (given) return want;
  /* unasked, the cache grows to at most 4 GiB; beyond, the caller warns */
  int64_t cap = ((int64_t)4 << 30) / c->block_size;
  int grow = want < cap ? want : (int)cap;
  pthread_mutex_lock(&c->mu);
  if (grow > c->num_slots) {
    slot **grown = realloc(c->slots, (size_t)grow * sizeof *grown);
    if (grown) {
      c->slots = grown;
      while (c->num_slots < grow && (grown[c->num_slots] = calloc(1, sizeof **grown)) != NULL)
        c->num_slots++;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return want;
}

void stk__remote_cache_stats(const stk__remote_cache *c, int64_t *requests, int64_t *hits) {
  pthread_mutex_lock((pthread_mutex_t *)&c->mu);
  *requests = c->requests;
  *hits = c->hits;
  pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
}

/* ---- slots (c->mu held) ------------------------------------------------------------ */

static slot *find(stk__remote_cache *c, int64_t file, int64_t block) {
  for (int i = 0; i < c->num_slots; i++) {
    slot *s = c->slots[i];
    if (s->state != SLOT_EMPTY && s->file == file && s->block == block) return s;
  }
  return NULL;
}

/* The least recently used slot nobody is loading or reading, or NULL; for read-ahead,
 * never one fetched ahead and not read yet (else a small cache thrashes: blocks fetched
 * ahead would push out those fetched ahead before them). */
static slot *victim(stk__remote_cache *c, bool ahead) {
  slot *best = NULL;
  for (int i = 0; i < c->num_slots; i++) {
    slot *s = c->slots[i];
    if (s->state == SLOT_LOADING || s->pins > 0 || (ahead && s->fresh)) continue;
    if (s->state == SLOT_EMPTY) return s;
    if (!best || s->used < best->used) best = s;
  }
  return best;
}

/* Fills `s` (marked loading, c->mu held on entry and exit) with its block. */
static stk_status load(stk__remote_cache *c, slot *s) {
  const file_info *f = &c->files[s->file];
  int64_t off = s->block * c->block_size;
  size_t len = (size_t)(f->size - off < c->block_size ? f->size - off : c->block_size);
  const char *url = f->url;
  uint8_t *data = s->data;
  c->requests++;
  c->bytes += (int64_t)len;
  pthread_mutex_unlock(&c->mu);
  stk_status st = STK_OK;
  if (!data) data = malloc((size_t)c->block_size);
  if (!data)
    st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a block of '%s'", url);
  else {
    const stk__remote_opts *prev = use_opts(c);
    st = stk__remote_read(url, off, data, len);
    stk__remote_use(prev);
  }
  pthread_mutex_lock(&c->mu);
  s->data = data;
  s->len = len;
  s->state = st == STK_OK ? SLOT_READY : SLOT_EMPTY;
  pthread_cond_broadcast(&c->changed);
  return st;
}

/* The slot holding (file, block), loaded by this thread if need be and pinned; NULL with
 * *st == STK_OK when every slot is busy (the caller reads directly). */
static slot *acquire(stk__remote_cache *c, int64_t file, int64_t block, stk_status *st) {
  *st = STK_OK;
  for (;;) {
    slot *s = find(c, file, block);
    if (s && s->state == SLOT_READY) {
      s->fresh = false;
      s->pins++;
      s->used = ++c->clock;
      c->hits++;
      return s;
    }
    if (s) { /* another thread is loading it */
      pthread_cond_wait(&c->changed, &c->mu);
      continue;
    }
    s = victim(c, false);
    if (!s) return NULL;
    s->fresh = false;
    s->state = SLOT_LOADING;
    s->file = file;
    s->block = block;
    s->used = ++c->clock;
    *st = load(c, s);
    if (*st != STK_OK) return NULL;
    c->hits--; /* counted as a request, not a hit */
  }
}

/* ---- read-ahead ------------------------------------------------------------------- */

static void *prefetch_main(void *arg) {
  stk__remote_cache *c = arg;
  stk__name_thread("stk-readahead");
  pthread_mutex_lock(&c->mu);
  while (!c->stop) {
    if (c->q_len == 0) {
      pthread_cond_wait(&c->changed, &c->mu);
      continue;
    }
    int64_t file = c->queue[c->q_head].file, block = c->queue[c->q_head].block;
    c->q_head = (c->q_head + 1) % QUEUE_CAP;
    c->q_len--;
    if (find(c, file, block) || c->random_access) continue;
    slot *s = victim(c, true);
    if (!s) continue;
    s->fresh = true;
    s->state = SLOT_LOADING;
    s->file = file;
    s->block = block;
    s->used = ++c->clock;
    (void)load(c, s); /* a failure is seen again, and reported, by the reader */
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* Queues (file, block) unless it is cached, queued or beyond the file (c->mu held). */
static void want(stk__remote_cache *c, int64_t file, int64_t block) {
  if (file >= c->num_files || !c->files[file].url) return;
  if (block * c->block_size >= c->files[file].size || find(c, file, block)) return;
  for (int i = 0; i < c->q_len; i++) {
    int k = (c->q_head + i) % QUEUE_CAP;
    if (c->queue[k].file == file && c->queue[k].block == block) return;
  }
  if (c->q_len == QUEUE_CAP) return;
  int k = (c->q_head + c->q_len) % QUEUE_CAP;
  c->queue[k].file = file;
  c->queue[k].block = block;
  c->q_len++;
  while (c->started < c->num_threads &&
         pthread_create(&c->threads[c->started], NULL, prefetch_main, c) == 0)
    c->started++;
  pthread_cond_broadcast(&c->changed);
}

/* The blocks after `block` of `file`, running on into the next file. */
static void read_ahead(stk__remote_cache *c, int64_t file, int64_t block) {
  int64_t blocks = (c->files[file].size + c->block_size - 1) / c->block_size;
  for (int i = 1; i <= c->readahead; i++) {
    if (block + i < blocks)
      want(c, file, block + i);
    else
      want(c, file + 1, block + i - blocks);
  }
}

void stk__remote_cache_random_access(stk__remote_cache *c) {
  pthread_mutex_lock(&c->mu);
  c->random_access = true;
  c->q_len = 0;
  for (int i = 0; i < c->num_slots; i++) { /* the memory goes back; a block in use stays */
    slot *s = c->slots[i];
    if (s->state == SLOT_LOADING || s->pins > 0) continue;
    free(s->data);
    s->data = NULL;
    s->state = SLOT_EMPTY;
  }
  pthread_mutex_unlock(&c->mu);
}

void stk__remote_cache_hint(stk__remote_cache *c, int64_t file, int64_t offset) {
  pthread_mutex_lock(&c->mu);
  if (file >= 0 && file < c->num_files && offset >= 0) want(c, file, offset / c->block_size);
  pthread_mutex_unlock(&c->mu);
}

/* ---- reads ------------------------------------------------------------------------ */

/* Copies [offset, offset + size) out of cached blocks; false when a slot could not be
 * had (the caller then reads directly). */
static bool read_blocks(stk__remote_cache *c, int64_t file, int64_t offset, uint8_t *dst,
                        size_t size, stk_status *st) {
  int64_t b0 = offset / c->block_size, b1 = (offset + (int64_t)size - 1) / c->block_size;
  for (int64_t b = b0; b <= b1; b++) {
    slot *s = acquire(c, file, b, st);
    if (!s) return false;
    int64_t start = b * c->block_size;
    int64_t from = offset > start ? offset : start;
    int64_t to = offset + (int64_t)size < start + (int64_t)s->len ? offset + (int64_t)size
                                                                  : start + (int64_t)s->len;
    pthread_mutex_unlock(&c->mu); /* the pin keeps the block */
    if (to > from) memcpy(dst + (from - offset), s->data + (from - start), (size_t)(to - from));
    pthread_mutex_lock(&c->mu);
    s->pins--;
    if (b == b0) read_ahead(c, file, b1);
  }
  return true;
}

/* Whether a read continues a recent run (starts within a block of where one ended: a
 * file's first read at its start counts); the run, or the least recently used one,
 * takes the read's end. c->mu held. */
static bool note_run(stk__remote_cache *c, file_info *f, int64_t offset, int64_t size) {
  int best = 0;
  for (int i = 0; i < RUNS; i++) {
    int64_t e = f->run_end[i];
    if (offset >= e - c->block_size && offset <= e + c->block_size) {
      if (offset + size > e) f->run_end[i] = offset + size;
      f->run_used[i] = ++c->clock;
      return true;
    }
    if (f->run_used[i] < f->run_used[best]) best = i;
  }
  f->run_end[best] = offset + size;
  f->run_used[best] = ++c->clock;
  return false;
}

stk_status stk__remote_cache_read(stk__remote_cache *c, int64_t file, const char *url,
                                  int64_t file_size, int64_t offset, void *dst, size_t size) {
  if (size == 0) return STK_OK;
  pthread_mutex_lock(&c->mu);
  file_info *f = &c->files[file];
  f->url = url;
  f->size = file_size;
  bool sequential = note_run(c, f, offset, (int64_t)size) && !c->random_access;
  stk_status st = STK_OK;
  bool done = false;
  if (sequential && (int64_t)size < c->block_size)
    done = read_blocks(c, file, offset, dst, size, &st);
  if (!done && st == STK_OK) {
    c->requests++;
    c->bytes += (int64_t)size;
  }
  pthread_mutex_unlock(&c->mu);
  if (done || st != STK_OK) return st;
  const stk__remote_opts *prev = use_opts(c);
  st = stk__remote_read(url, offset, dst, size);
  stk__remote_use(prev);
  return st;
}
