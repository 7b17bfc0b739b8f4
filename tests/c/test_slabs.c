/* Page-locked slabs (src/pipeline/slabs.c), with a registration stand-in that records the
 * ranges: blocks are 64-byte aligned, never overlap, and lie inside a registered slab;
 * slabs grow from 4 MiB; a large block gets a slab of its own; an emptied slab other
 * than the newest goes back (unregistered); a refused registration gives NULL; destroy
 * unregisters everything. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../../src/pipeline/internal.h"

#define MAXR 64

typedef struct {
  uintptr_t base[MAXR];
  size_t bytes[MAXR];
  int live[MAXR];
  int n, active, refuse;
} ranges;

static int reg(void *user, void *ptr, size_t bytes) {
  ranges *r = user;
  if (r->refuse || r->n == MAXR) return -1;
  r->base[r->n] = (uintptr_t)ptr, r->bytes[r->n] = bytes, r->live[r->n] = 1;
  r->n++, r->active++;
  return 0;
}

static void unreg(void *user, void *ptr) {
  ranges *r = user;
  for (int i = 0; i < r->n; i++)
    if (r->live[i] && r->base[i] == (uintptr_t)ptr) {
      r->live[i] = 0, r->active--;
      return;
    }
  fail_msg("unregistering %p, which is not registered", ptr);
}

/* The registered range holding [p, p + bytes), or -1. */
static int range_of(const ranges *r, const void *p, size_t bytes) {
  for (int i = 0; i < r->n; i++)
    if (r->live[i] && (uintptr_t)p >= r->base[i] &&
        (uintptr_t)p + bytes <= r->base[i] + r->bytes[i])
      return i;
  return -1;
}

static void test_blocks_lie_in_registered_slabs(void **state) {
  (void)state;
  ranges r = {0};
  stk__slabs *s = stk__slabs_create(reg, unreg, &r);
  assert_non_null(s);
  enum { N = 3000 };
  static uint8_t *p[N];
  static size_t sz[N];
  unsigned seed = 7;
  for (int i = 0; i < N; i++) {
    seed = seed * 1664525u + 1013904223u;
    sz[i] = 1 + (seed >> 8) % 150000; /* up to 150 KB, as JPEG files */
    p[i] = stk__slabs_alloc(s, sz[i]);
    assert_non_null(p[i]);
    assert_int_equal((uintptr_t)p[i] % 64, 0);
    assert_true(range_of(&r, p[i], sz[i]) >= 0);
    memset(p[i], (int)(i & 0xff), sz[i]);
  }
  for (int i = 0; i < N; i++) /* no block was written over by another */
    for (size_t k = 0; k < sz[i]; k += 997) assert_int_equal(p[i][k], (uint8_t)(i & 0xff));
  /* 3000 blocks of ~75 KB (~225 MB) in slabs of 4, 8, 16, 32, 64, 64, ... MiB: a handful */
  assert_true(r.n >= 4 && r.n <= 8);
  assert_int_equal(r.bytes[0], (size_t)4 << 20);
  assert_int_equal(r.bytes[1], (size_t)8 << 20);
  assert_int_equal(stk__slabs_registered(s), r.n);
  stk__slabs_destroy(s);
  assert_int_equal(r.active, 0);
}

static void test_large_block_and_emptied_slabs(void **state) {
  (void)state;
  ranges r = {0};
  stk__slabs *s = stk__slabs_create(reg, unreg, &r);
  void *a = stk__slabs_alloc(s, 1000);
  void *big = stk__slabs_alloc(s, (size_t)100 << 20); /* larger than any slab: its own */
  assert_non_null(a);
  assert_non_null(big);
  int rb = range_of(&r, big, (size_t)100 << 20);
  assert_true(rb >= 0);
  assert_true(r.bytes[rb] >= ((size_t)100 << 20));
  assert_int_equal(r.n, 2);
  stk__slabs_free(s, a); /* the first slab, emptied and not the newest: back */
  assert_int_equal(r.active, 1);
  void *c = stk__slabs_alloc(s, 64); /* the newest (the big one) has no room left */
  assert_non_null(c);
  assert_int_equal(r.n, 3);
  stk__slabs_free(s, big); /* emptied, no longer the newest: back */
  assert_int_equal(r.active, 1);
  stk__slabs_free(s, c); /* the newest stays, empty */
  assert_int_equal(r.active, 1);
  stk__slabs_free(s, NULL);
  stk__slabs_destroy(s);
  assert_int_equal(r.active, 0);
}

static void test_refused_registration(void **state) {
  (void)state;
  ranges r = {0};
  r.refuse = 1;
  stk__slabs *s = stk__slabs_create(reg, unreg, &r);
  assert_null(stk__slabs_alloc(s, 4096)); /* the pool then keeps the block pageable and counts it */
  assert_null(stk__slabs_alloc(s, 0));
  r.refuse = 0;
  void *p = stk__slabs_alloc(s, 4096);
  assert_non_null(p);
  stk__slabs_free(s, p);
  stk__slabs_destroy(s);
  assert_int_equal(r.active, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks_lie_in_registered_slabs),
      cmocka_unit_test(test_large_block_and_emptied_slabs),
      cmocka_unit_test(test_refused_registration),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
