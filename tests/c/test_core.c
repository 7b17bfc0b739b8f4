/* Core: status table, error messages, Philox known answers, pool, thread pool, f16. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "testutil.h"

static void test_status_table(void **state) {
  assert_string_equal(stk_status_name(STK_OK), "STK_OK");
  assert_string_equal(stk_status_name(STK_ERR_DECODE), "STK_ERR_DECODE");
  assert_string_equal(stk_status_name((stk_status)999), "STK_UNKNOWN");
  assert_string_equal(stk_status_str(STK_ERR_IO), "input/output error");
}

/* Public API functions name themselves first; internal ones (stk__..., static helpers)
 * stay out of user-facing messages. */
static stk_status stk_fake_public_call(void) {
  return STK_FAIL(STK_ERR_IO, "cannot open '%s'", "x.jpg");
}
static stk_status stk__fake_internal_call(void) {
  return STK_FAIL(STK_ERR_IO, "cannot open '%s'", "y.jpg");
}

static void test_error_message_names_function(void **state) {
  stk_status st = stk_fake_public_call();
  assert_int_equal(st, STK_ERR_IO);
  assert_string_equal(stk_last_error(), "stk_fake_public_call: cannot open 'x.jpg'");
  stk__wrap(st, "sample 3");
  assert_string_equal(stk_last_error(), "sample 3: stk_fake_public_call: cannot open 'x.jpg'");
  assert_int_equal(stk__fake_internal_call(), STK_ERR_IO);
  assert_string_equal(stk_last_error(), "cannot open 'y.jpg'");
  assert_int_equal(STK_FAIL(STK_ERR_IO, "static helper"), STK_ERR_IO);
  assert_string_equal(stk_last_error(), "static helper");
  stk_clear_error();
  assert_string_equal(stk_last_error(), "");
}

/* Known-answer vectors for Philox4x32-10 from the Random123 distribution (kat_vectors). */
static void test_philox_known_answers(void **state) {
  uint32_t out[4];
  const uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
  stk__philox4x32_10(c0, k0, out);
  assert_int_equal(out[0], 0x6627e8d5u);
  assert_int_equal(out[1], 0xe169c58du);
  assert_int_equal(out[2], 0xbc57ac4cu);
  assert_int_equal(out[3], 0x9b00dbd8u);
  const uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
  const uint32_t k1[2] = {0xffffffffu, 0xffffffffu};
  stk__philox4x32_10(c1, k1, out);
  assert_int_equal(out[0], 0x408f276du);
  assert_int_equal(out[1], 0x41c83b0eu);
  assert_int_equal(out[2], 0xa20bc7c6u);
  assert_int_equal(out[3], 0x6d5451fdu);
  const uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  const uint32_t k2[2] = {0xa4093822u, 0x299f31d0u};
  stk__philox4x32_10(c2, k2, out);
  assert_int_equal(out[0], 0xd16cfe09u);
  assert_int_equal(out[1], 0x94fdccebu);
  assert_int_equal(out[2], 0x5001e420u);
  assert_int_equal(out[3], 0x24126ea1u);
}

static void test_philox_uniform_statistics(void **state) {
  stk__philox g;
  stk__philox_init(&g, 1234, 7);
  double sum = 0, sq = 0;
  int n = 200000, counts[10] = {0};
  for (int i = 0; i < n; i++) {
    double u = stk__philox_uniform(&g);
    assert_true(u >= 0.0 && u < 1.0);
    sum += u;
    sq += u * u;
    counts[(int)(u * 10)]++;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  assert_true(fabs(mean - 0.5) < 0.005);
  assert_true(fabs(var - 1.0 / 12) < 0.002);
  for (int b = 0; b < 10; b++) assert_true(abs(counts[b] - n / 10) < n / 100);
  /* The same key and ordinal replay the same stream; another ordinal differs. */
  stk__philox a, b, c;
  stk__philox_init(&a, 99, 5);
  stk__philox_init(&b, 99, 5);
  stk__philox_init(&c, 99, 6);
  int same = 1, diff = 0;
  for (int i = 0; i < 16; i++) {
    uint32_t x = stk__philox_u32(&a), y = stk__philox_u32(&b), z = stk__philox_u32(&c);
    same &= x == y;
    diff += x != z;
  }
  assert_true(same);
  assert_true(diff > 12);
}

static void test_philox_normal_and_below(void **state) {
  stk__philox g;
  stk__philox_init(&g, 42, 0);
  double sum = 0, sq = 0;
  int n = 100000;
  for (int i = 0; i < n; i++) {
    double x = stk__philox_normal(&g);
    sum += x;
    sq += x * x;
  }
  assert_true(fabs(sum / n) < 0.02);
  assert_true(fabs(sq / n - 1.0) < 0.03);
  int counts[3] = {0};
  for (int i = 0; i < 30000; i++) counts[stk__philox_below(&g, 3)]++;
  for (int k = 0; k < 3; k++) assert_true(abs(counts[k] - 10000) < 400);
}

static void test_pool_reuse_and_bound(void **state) {
  stk__pool *pool;
  TU_OK(stk__pool_create(&pool, 1 << 20));
  void *a = stk__pool_alloc(pool, 1000);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 64, 0);
  assert_true(stk__pool_block_size(a) >= 1000);
  memset(a, 1, 1000);
  stk__pool_free(pool, a);
  void *b = stk__pool_alloc(pool, 900); /* same size class: reused */
  assert_ptr_equal(a, b);
  int64_t in_use, cached, peak;
  stk__pool_stats(pool, &in_use, &cached, &peak);
  assert_true(in_use >= 900 && cached == 0);
  stk__pool_free(pool, b);
  void *big = stk__pool_alloc(pool, 4 << 20); /* larger than the cache bound */
  stk__pool_free(pool, big);
  stk__pool_stats(pool, &in_use, &cached, &peak);
  assert_int_equal(in_use, 0);
  assert_true(cached <= (1 << 20));
  /* A block outliving the pool stays valid and is freed on return. */
  void *late = stk__pool_alloc(pool, 10);
  stk__pool_destroy(pool);
  memset(late, 0, 10);
  stk__pool_free(NULL, late);
}

/* A fake page-locking hook: records what is pinned, refuses every third block. */
typedef struct {
  int calls, pinned, unpinned, released;
  void *live[64];
} fake_pinning;

static int fake_pin(void *user, void *ptr, size_t bytes) {
  fake_pinning *f = user;
  assert_true(bytes >= 64);
  if (++f->calls % 3 == 0) return 1; /* refused: the block stays pageable */
  for (int i = 0; i < 64; i++)
    if (!f->live[i]) {
      f->live[i] = ptr;
      f->pinned++;
      return 0;
    }
  fail_msg("too many pinned blocks");
  return 1;
}

static void fake_unpin(void *user, void *ptr) {
  fake_pinning *f = user;
  for (int i = 0; i < 64; i++)
    if (f->live[i] == ptr) {
      f->live[i] = NULL;
      f->unpinned++;
      return;
    }
  fail_msg("unpinning a block that was never pinned");
}

static void fake_release(void *user) { ((fake_pinning *)user)->released++; }

/* The allocating form: blocks come from alloc() (here malloc, refusing every third) and
 * go back through dealloc(); a refused block is malloc'd and counted as a failure. */
static void *fake_alloc(void *user, size_t bytes) {
  fake_pinning *f = user;
  if (++f->calls % 3 == 0) return NULL;
  f->pinned++;
  return aligned_alloc(64, bytes);
}

static void fake_dealloc(void *user, void *ptr) {
  ((fake_pinning *)user)->unpinned++;
  free(ptr);
}

static void test_pool_allocating_hooks(void **state) {
  fake_pinning f = {0};
  stk__pool *pool;
  TU_OK(stk__pool_create(&pool, 1 << 16));
  stk__pool_pinning hooks = {
      .alloc = fake_alloc, .dealloc = fake_dealloc, .release = fake_release, .user = &f};
  stk__pool_set_pinning(pool, &hooks);
  void *blocks[6];
  for (int i = 0; i < 6; i++) {
    blocks[i] = stk__pool_alloc(pool, 1000 * (size_t)(i + 1));
    assert_non_null(blocks[i]);
    assert_int_equal((uintptr_t)blocks[i] % 64, 0);
    memset(blocks[i], 7, 1000 * (size_t)(i + 1));
  }
  int64_t pinned, failures;
  stk__pool_pin_stats(pool, &pinned, &failures);
  assert_int_equal(pinned, 4);
  assert_int_equal(failures, 2);
  void *big = stk__pool_alloc(pool, 1 << 20); /* allocated by the hook, released over the bound */
  stk__pool_free(pool, big);
  assert_int_equal(f.unpinned, 1);
  for (int i = 0; i < 5; i++) stk__pool_free(pool, blocks[i]);
  stk__pool_destroy(pool);
  stk__pool_free(NULL, blocks[5]);
  assert_int_equal(f.pinned, f.unpinned); /* every hook block went back through dealloc */
  assert_int_equal(f.released, 1);
}

/* Every block the pool allocates after set_pinning is offered to pin(); exactly the
 * pinned ones are unpinned before they go back to the system (over the cache bound, at
 * destroy, and a block outliving the pool); release() comes once, after the last block. */
static void test_pool_pinning_hooks(void **state) {
  fake_pinning f = {0};
  stk__pool *pool;
  TU_OK(stk__pool_create(&pool, 1 << 16));
  void *before = stk__pool_alloc(pool, 100); /* allocated before the hook: never pinned */
  stk__pool_pinning hooks = {
      .pin = fake_pin, .unpin = fake_unpin, .release = fake_release, .user = &f};
  stk__pool_set_pinning(pool, &hooks);
  void *blocks[6];
  for (int i = 0; i < 6; i++) blocks[i] = stk__pool_alloc(pool, 1000 * (size_t)(i + 1));
  assert_int_equal(f.calls, 6);
  assert_int_equal(f.pinned, 4); /* calls 3 and 6 refused */
  int64_t pinned, failures;
  stk__pool_pin_stats(pool, &pinned, &failures);
  assert_int_equal(pinned, 4);
  assert_int_equal(failures, 2);
  stk__pool_free(pool, blocks[0]); /* cached: still pinned, reused as is */
  void *again = stk__pool_alloc(pool, 900);
  assert_ptr_equal(again, blocks[0]);
  assert_int_equal(f.calls, 6);
  void *big = stk__pool_alloc(pool, 1 << 20); /* call 7: pinned; over the cache bound on free */
  stk__pool_free(pool, big);
  assert_int_equal(f.unpinned, 1);
  stk__pool_free(pool, before);
  for (int i = 1; i < 5; i++) stk__pool_free(pool, blocks[i]);
  stk__pool_destroy(pool); /* the cached ones go back now; blocks[5] and `again` are alive */
  assert_int_equal(f.released, 0);
  stk__pool_free(NULL, again);
  stk__pool_free(NULL, blocks[5]);
  assert_int_equal(f.pinned, f.unpinned); /* every pinned block was unpinned */
  assert_int_equal(f.released, 1);
}

typedef struct {
  atomic_int hits[1000];
  atomic_int workers_seen[8];
} tp_job;

static void tp_task(void *arg, size_t index, int worker) {
  tp_job *j = arg;
  atomic_fetch_add(&j->hits[index], 1);
  atomic_fetch_add(&j->workers_seen[worker], 1);
}

static void test_threadpool_runs_every_index_once(void **state) {
  for (int threads = 1; threads <= 4; threads++) {
    stk__threadpool *tp;
    TU_OK(stk__threadpool_create(&tp, threads));
    for (int round = 0; round < 20; round++) {
      tp_job *j = calloc(1, sizeof *j);
      stk__threadpool_parallel_for(tp, 1000, tp_task, j);
      for (int i = 0; i < 1000; i++) assert_int_equal(atomic_load(&j->hits[i]), 1);
      free(j);
    }
    stk__threadpool_destroy(tp);
  }
  stk__threadpool *tp;
  assert_int_equal(stk__threadpool_create(&tp, 0), STK_ERR_INVALID_ARGUMENT);
}

static void test_float16_round_trip(void **state) {
  assert_int_equal(stk__f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(stk__f32_to_f16(-2.0f), 0xc000);
  assert_int_equal(stk__f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(stk__f32_to_f16(1e6f), 0x7c00);
  assert_int_equal(stk__f32_to_f16(5.960464477539063e-08f), 0x0001); /* smallest subnormal */
  assert_int_equal(stk__f32_to_f16(1.0009765625f), 0x3c01);
  assert_int_equal(stk__f32_to_f16(1.00048828125f), 0x3c00); /* tie to even */
  for (uint32_t h = 0; h < 0x7c00; h++) /* every finite positive half round-trips */
    assert_int_equal(stk__f32_to_f16(stk__f16_to_f32((uint16_t)h)), h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_table),
      cmocka_unit_test(test_error_message_names_function),
      cmocka_unit_test(test_philox_known_answers),
      cmocka_unit_test(test_philox_uniform_statistics),
      cmocka_unit_test(test_philox_normal_and_below),
      cmocka_unit_test(test_pool_reuse_and_bound),
      cmocka_unit_test(test_pool_pinning_hooks),
      cmocka_unit_test(test_pool_allocating_hooks),
      cmocka_unit_test(test_threadpool_runs_every_index_once),
      cmocka_unit_test(test_float16_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
