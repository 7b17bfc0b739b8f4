/* A host memory pool with size classes of four steps per power of two (at most 25%
 * slack), 64-byte aligned blocks, a bound on cached bytes, and usage statistics. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define POOL_ALIGN   64
#define POOL_CLASSES 256

typedef struct block_header {
  struct stk__pool *pool;
  struct block_header *next; /* free-list link while cached */
  size_t size;               /* usable bytes */
  int cls;
  bool pinned;         /* page-locked through the pool's pinning hook */
  bool hook_allocated; /* from the hook's alloc(): goes back through dealloc() */
} block_header;

/* The header occupies one alignment unit in front of the user block. */
_Static_assert(sizeof(block_header) <= POOL_ALIGN, "pool header too large");

struct stk__pool {
  pthread_mutex_t lock;
  block_header *free_list[POOL_CLASSES];
  size_t max_cached;
  int64_t in_use, cached, peak;
  int64_t live_blocks;
  bool destroyed;
  stk__pool_pinning pinning; /* pin == NULL: pageable blocks */
  int64_t pinned_blocks, pin_failures;
};

/* Rounds `size` up to m * 2^e with m in {4, 5, 6, 7}; returns the class index. */
static int size_class(size_t size, size_t *rounded) {
  if (size < 256) size = 256;
  int e = 63 - __builtin_clzll((unsigned long long)size); /* 2^e <= size */
  size_t step = (size_t)1 << (e - 2);
  size_t r = (size + step - 1) & ~(step - 1);
  int e2 = 63 - __builtin_clzll((unsigned long long)r);
  int m = (int)(r >> (e2 - 2)); /* 4..7 */
  *rounded = r;
  return e2 * 4 + (m - 4);
}

stk_status stk__pool_create(stk__pool **out, size_t max_cached) {
  stk__pool *p = stk__calloc(1, sizeof *p, "a memory pool");
  if (!p) return STK_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&p->lock, NULL);
  p->max_cached = max_cached;
  *out = p;
  return STK_OK;
}

static void pool_free_struct(stk__pool *p) {
  if (p->pinning.release) p->pinning.release(p->pinning.user);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* Gives a block back to the system (no lock needed: the block is no longer listed). */
static void release_block(stk__pool *p, block_header *b) {
  if (b->hook_allocated) return p->pinning.dealloc(p->pinning.user, b);
  if (b->pinned) p->pinning.unpin(p->pinning.user, b);
  free(b);
}

/* A new block of `bytes` (header included): from the pinning hook's allocator when there
 * is one, else aligned_alloc, then offered to pin(). */
static block_header *new_block(const stk__pool_pinning *pinning, size_t bytes) {
  if (pinning->alloc) {
    block_header *b = pinning->alloc(pinning->user, bytes);
    if (b) {
      b->hook_allocated = b->pinned = true;
      return b;
    }
  }
  block_header *b = aligned_alloc(POOL_ALIGN, bytes);
  if (!b) return NULL;
  b->hook_allocated = false;
  /* the header too: one registration covers the whole allocation */
  b->pinned = !pinning->alloc && pinning->pin && pinning->pin(pinning->user, b, bytes) == 0;
  return b;
}

void stk__pool_set_pinning(stk__pool *p, const stk__pool_pinning *pinning) {
  pthread_mutex_lock(&p->lock);
  p->pinning = *pinning;
  pthread_mutex_unlock(&p->lock);
}

void stk__pool_pin_stats(stk__pool *p, int64_t *pinned, int64_t *failures) {
  pthread_mutex_lock(&p->lock);
  if (pinned) *pinned = p->pinned_blocks;
  if (failures) *failures = p->pin_failures;
  pthread_mutex_unlock(&p->lock);
}

void stk__pool_destroy(stk__pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  for (int c = 0; c < POOL_CLASSES; c++) {
    block_header *b = p->free_list[c];
    while (b) {
      block_header *n = b->next;
      p->live_blocks--;
      release_block(p, b);
      b = n;
    }
    p->free_list[c] = NULL;
  }
  p->cached = 0;
  p->destroyed = true;
  bool last = p->live_blocks == 0;
  pthread_mutex_unlock(&p->lock);
  if (last) pool_free_struct(p);
}

void *stk__pool_alloc(stk__pool *p, size_t size) {
  size_t rounded;
  int cls = size_class(size, &rounded);
  if (cls >= POOL_CLASSES || rounded > SIZE_MAX - POOL_ALIGN) {
    STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", size);
    return NULL;
  }
  pthread_mutex_lock(&p->lock);
  block_header *b = p->free_list[cls];
  if (b) {
    p->free_list[cls] = b->next;
    p->cached -= (int64_t)b->size;
    p->in_use += (int64_t)b->size;
    pthread_mutex_unlock(&p->lock);
    return (char *)b + POOL_ALIGN;
  }
  stk__pool_pinning pinning = p->pinning;
  pthread_mutex_unlock(&p->lock);
  b = new_block(&pinning, rounded + POOL_ALIGN);
  if (!b) {
    STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", size);
    return NULL;
  }
  b->pool = p;
  b->next = NULL;
  b->size = rounded;
  b->cls = cls;
  pthread_mutex_lock(&p->lock);
  if (b->pinned)
    p->pinned_blocks++;
  else if (pinning.pin || pinning.alloc)
    p->pin_failures++;
  p->live_blocks++;
  p->in_use += (int64_t)rounded;
  if (p->in_use + p->cached > p->peak) p->peak = p->in_use + p->cached;
  pthread_mutex_unlock(&p->lock);
  return (char *)b + POOL_ALIGN;
}

void stk__pool_free(stk__pool *p, void *ptr) {
  if (!ptr) return;
  block_header *b = (block_header *)((char *)ptr - POOL_ALIGN);
  if (!p) p = b->pool;
  pthread_mutex_lock(&p->lock);
  p->in_use -= (int64_t)b->size;
  bool keep = !p->destroyed && (size_t)p->cached + b->size <= p->max_cached;
  if (keep) {
    b->next = p->free_list[b->cls];
    p->free_list[b->cls] = b;
    p->cached += (int64_t)b->size;
  } else {
    p->live_blocks--;
  }
  bool last = p->destroyed && p->live_blocks == 0;
  pthread_mutex_unlock(&p->lock);
  if (!keep) release_block(p, b);
  if (last) pool_free_struct(p);
}

size_t stk__pool_block_size(const void *ptr) {
  const block_header *b = (const block_header *)((const char *)ptr - POOL_ALIGN);
  return b->size;
}

void stk__pool_stats(stk__pool *p, int64_t *in_use, int64_t *cached, int64_t *peak) {
  pthread_mutex_lock(&p->lock);
  if (in_use) *in_use = p->in_use;
  if (cached) *cached = p->cached;
  if (peak) *peak = p->peak;
  pthread_mutex_unlock(&p->lock);
}
