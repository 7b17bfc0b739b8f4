/* Page-locked slabs carved into blocks: the host pool's blocks in GPU pipelines.
 *
 * Why: nvJPEG's hardware call runs 3.5-4% faster when the batch's bitstreams lie in one
 * large page-locked allocation than when each file has its own (bench/RESULTS.md, fifth
 * session: gpu_bench --bare-cycle-fresh, call by call; how recently the bytes were
 * written made no difference), presumably because the driver looks every pointer up
 * among the registered ranges. Registering the pool's blocks one by one gave it one range
 * per file; slabs give it a handful.
 *
 * Slabs grow from 4 MiB, doubling up to 64 MiB (a larger block gets a slab of its own
 * size), so that small pipelines do not lock much memory. Blocks are carved 64-byte
 * aligned by bumping an offset in the newest slab; a freed block only lowers its slab's
 * count of live blocks, and a slab other than the newest goes back (unregistered, freed)
 * when that count reaches zero. The host pool keeps freed blocks in its own lists, so in
 * a running pipeline slabs are carved once and then reused through the pool. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

#define SLAB_FIRST ((size_t)4 << 20)
#define SLAB_MAX   ((size_t)64 << 20)
#define SLAB_ALIGN 64

typedef struct slab {
  struct slab *next;
  uint8_t *base;
  size_t size, used;
  size_t live; /* blocks carved and not freed */
} slab;

struct stk__slabs {
  pthread_mutex_t lock;
  slab *newest; /* head of the list: the slab blocks are carved from */
  size_t next_size;
  int (*reg)(void *user, void *ptr, size_t bytes);
  void (*unreg)(void *user, void *ptr);
  void *user;
  int64_t registered; /* slabs registered so far */
};

stk__slabs *stk__slabs_create(int (*reg)(void *user, void *ptr, size_t bytes),
                              void (*unreg)(void *user, void *ptr), void *user) {
  stk__slabs *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  pthread_mutex_init(&s->lock, NULL);
  s->next_size = SLAB_FIRST;
  s->reg = reg, s->unreg = unreg, s->user = user;
  return s;
}

static void slab_drop(stk__slabs *s, slab *sl) {
  s->unreg(s->user, sl->base);
  free(sl->base);
  free(sl);
}

/* A new newest slab of at least `bytes`, registered; NULL when memory or registration
 * fails (lock held). */
static slab *slab_add(stk__slabs *s, size_t bytes) {
  size_t size = s->next_size;
  while (size < bytes && size < SLAB_MAX) size *= 2;
  if (size < bytes) size = (bytes + 4095) & ~(size_t)4095;
  slab *sl = calloc(1, sizeof *sl);
  if (sl) sl->base = aligned_alloc(4096, size);
  if (!sl || !sl->base || s->reg(s->user, sl->base, size) != 0) {
    if (sl) free(sl->base);
    free(sl);
    return NULL;
  }
  sl->size = size;
  sl->next = s->newest;
  s->newest = sl;
  s->registered++;
  if (s->next_size < SLAB_MAX) s->next_size *= 2;
  return sl;
}

void *stk__slabs_alloc(stk__slabs *s, size_t bytes) {
  if (bytes == 0 || bytes > SIZE_MAX - 2 * 4096) return NULL;
  size_t need = (bytes + SLAB_ALIGN - 1) & ~(size_t)(SLAB_ALIGN - 1);
  pthread_mutex_lock(&s->lock);
  slab *sl = s->newest;
  if (!sl || sl->size - sl->used < need) {
    slab *old = sl;
    sl = slab_add(s, need);
    if (sl && old && old->live == 0) { /* the previous newest, emptied meanwhile */
      sl->next = old->next;
      slab_drop(s, old);
    }
  }
  void *p = NULL;
  if (sl) {
    p = sl->base + sl->used;
    sl->used += need;
    sl->live++;
  }
  pthread_mutex_unlock(&s->lock);
  return p;
}

void stk__slabs_free(stk__slabs *s, void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&s->lock);
  for (slab **link = &s->newest; *link; link = &(*link)->next) {
    slab *sl = *link;
    if ((uint8_t *)ptr < sl->base || (uint8_t *)ptr >= sl->base + sl->size) continue;
    if (--sl->live == 0 && sl != s->newest) {
      *link = sl->next;
      slab_drop(s, sl);
    }
    break;
  }
  pthread_mutex_unlock(&s->lock);
}

int64_t stk__slabs_registered(stk__slabs *s) {
  pthread_mutex_lock(&s->lock);
  int64_t n = s->registered;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void stk__slabs_destroy(stk__slabs *s) {
  if (!s) return;
  for (slab *sl = s->newest, *n; sl; sl = n) {
    n = sl->next;
    slab_drop(s, sl);
  }
  pthread_mutex_destroy(&s->lock);
  free(s);
}
