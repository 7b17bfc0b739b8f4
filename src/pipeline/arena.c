/* A per-worker bump allocator for the intermediates of one sample's chain. Reset after
 * every sample; when a sample needed several chunks, they are merged into one so the
 * arena settles at one allocation of the largest chain's size (bounded memory). */
#include <stdlib.h>

#include "arena.h"

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
} chunk;

#define CHUNK_HEADER 64

struct stk__arena {
  chunk *head;
  size_t total;
};

stk__arena *stk__arena_create(void) { return stk__calloc(1, sizeof(stk__arena), "an arena"); }

static chunk *new_chunk(size_t size) {
  chunk *c = aligned_alloc(64, CHUNK_HEADER + size);
  if (!c) return NULL;
  c->next = NULL;
  c->size = size;
  c->used = 0;
  return c;
}

void *stk__arena_alloc(stk__arena *a, size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  if (!bytes) bytes = 64;
  chunk *c = a->head;
  if (!c || c->size - c->used < bytes) {
    size_t size = c ? c->size * 2 : ((size_t)1 << 20);
    while (size < bytes) size *= 2;
    chunk *n = new_chunk(size);
    if (!n) return NULL;
    n->next = c;
    a->head = n;
    a->total += size;
    c = n;
  }
  void *p = (char *)c + CHUNK_HEADER + c->used;
  c->used += bytes;
  return p;
}

void stk__arena_reset(stk__arena *a) {
  if (!a->head) return;
  if (a->head->next) { /* several chunks: replace them with one of the total size */
    size_t total = a->total;
    stk__arena_clear(a);
    chunk *c = new_chunk(total);
    if (c) {
      a->head = c;
      a->total = total;
    }
    return;
  }
  a->head->used = 0;
}

void stk__arena_clear(stk__arena *a) {
  chunk *c = a->head;
  while (c) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
  a->head = NULL;
  a->total = 0;
}

void stk__arena_destroy(stk__arena *a) {
  if (!a) return;
  stk__arena_clear(a);
  free(a);
}

size_t stk__arena_size(const stk__arena *a) { return a->total; }
