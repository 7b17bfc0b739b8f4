/* The hardware batch's submission order (bench/tools/engine_order.h), checked on the CPU:
 * every mode returns a permutation; "desc" sorts by cost, largest first, stably; "dealt"
 * and "chunks" give each engine the number of images its dealing implies and loads that
 * differ by at most one image's cost (the greedy rule's bound when the largest go first),
 * computed here from the returned order. */
#include <stdbool.h>
#include <stdlib.h>

#include "testutil.h"
#include "../../bench/tools/engine_order.h"

#define MAXN 600

static void assert_permutation(const int *perm, int n) {
  int seen[MAXN] = {0};
  for (int i = 0; i < n; i++) {
    assert_true(perm[i] >= 0 && perm[i] < n);
    seen[perm[i]]++;
  }
  for (int i = 0; i < n; i++) assert_int_equal(seen[i], 1);
}

static unsigned lcg(unsigned *s) { return *s = *s * 1664525u + 1013904223u; }

static void random_costs(size_t *cost, int n, unsigned seed) {
  for (int i = 0; i < n; i++) cost[i] = 20000 + (lcg(&seed) >> 8) % 90000; /* 20-110 KB, as JPEGs */
}

/* Engine e's images: positions p with p % E == e (dealt) or in e's contiguous chunk. */
static void engine_loads(int mode, const int *perm, int n, const size_t *cost, int E, double *load,
                         int *count) {
  int chunk = (n + E - 1) / E;
  for (int e = 0; e < E; e++) load[e] = 0, count[e] = 0;
  for (int p = 0; p < n; p++) {
    int e = mode == STK_ORDER_DEALT ? p % E : p / chunk;
    load[e] += (double)cost[perm[p]];
    count[e]++;
  }
}

static void test_parse(void **state) {
  (void)state;
  assert_int_equal(stk_engine_order_parse(NULL, STK_ORDER_DESC), STK_ORDER_DESC);
  assert_int_equal(stk_engine_order_parse("given", STK_ORDER_DESC), STK_ORDER_AS_GIVEN);
  assert_int_equal(stk_engine_order_parse("desc", 0), STK_ORDER_DESC);
  assert_int_equal(stk_engine_order_parse("dealt", 0), STK_ORDER_DEALT);
  assert_int_equal(stk_engine_order_parse("chunks", 0), STK_ORDER_CHUNKS);
  assert_int_equal(stk_engine_order_parse("bogus", STK_ORDER_CHUNKS), STK_ORDER_CHUNKS);
}

static void test_as_given_and_tiny_batches(void **state) {
  (void)state;
  size_t cost[MAXN];
  int perm[MAXN], scratch[2 * MAXN];
  random_costs(cost, 256, 1);
  assert_int_equal(stk_engine_order(STK_ORDER_AS_GIVEN, 256, cost, 7, perm, scratch), 0);
  for (int i = 0; i < 256; i++) assert_int_equal(perm[i], i);
  for (int mode = 0; mode <= STK_ORDER_CHUNKS; mode++) {
    assert_int_equal(stk_engine_order(mode, 1, cost, 7, perm, scratch), 0);
    assert_int_equal(perm[0], 0);
  }
}

static void test_desc_sorts_stably(void **state) {
  (void)state;
  size_t cost[MAXN];
  int perm[MAXN], scratch[2 * MAXN];
  random_costs(cost, 300, 2);
  for (int i = 0; i < 300; i += 3) cost[i] = 50000; /* ties */
  assert_int_equal(stk_engine_order(STK_ORDER_DESC, 300, cost, 7, perm, scratch), 0);
  assert_permutation(perm, 300);
  for (int i = 1; i < 300; i++) {
    assert_true(cost[perm[i - 1]] >= cost[perm[i]]);
    if (cost[perm[i - 1]] == cost[perm[i]]) assert_true(perm[i - 1] < perm[i]); /* stable */
  }
}

static void check_balanced(int mode, int n, int E, unsigned seed, bool skewed) {
  size_t cost[MAXN], max_cost = 0;
  int perm[MAXN], scratch[2 * MAXN], count[STK_ORDER_MAX_ENGINES];
  double load[STK_ORDER_MAX_ENGINES], given[STK_ORDER_MAX_ENGINES];
  random_costs(cost, n, seed);
  if (skewed) /* ascending costs: the given order loads the last engines (chunks) or is uneven */
    for (int i = 0; i < n; i++) cost[i] = 10000 + 500 * (size_t)i;
  for (int i = 0; i < n; i++) max_cost = cost[i] > max_cost ? cost[i] : max_cost;
  assert_int_equal(stk_engine_order(mode, n, cost, E, perm, scratch), 0);
  assert_permutation(perm, n);
  engine_loads(mode, perm, n, cost, E, load, count);
  double lo = load[0], hi = load[0];
  int chunk = (n + E - 1) / E;
  for (int e = 0; e < E; e++) {
    int expect = mode == STK_ORDER_DEALT ? n / E + (e < n % E)
                 : n - e * chunk < 0     ? 0
                 : n - e * chunk > chunk ? chunk
                                         : n - e * chunk;
    assert_int_equal(count[e], expect);
    if (count[e] == 0) continue;
    lo = load[e] < lo ? load[e] : lo;
    hi = load[e] > hi ? load[e] : hi;
  }
  if (mode == STK_ORDER_CHUNKS && n % chunk) return; /* the last chunk is short by design */
  assert_true(hi - lo <= (double)max_cost);
  if (skewed) { /* and better than the given order */
    int id[MAXN];
    for (int i = 0; i < n; i++) id[i] = i;
    engine_loads(mode, id, n, cost, E, given, count);
    double glo = given[0], ghi = given[0];
    for (int e = 0; e < E; e++)
      glo = given[e] < glo ? given[e] : glo, ghi = given[e] > ghi ? given[e] : ghi;
    assert_true(hi - lo < ghi - glo);
  }
}

static void test_dealt_balances_the_engines(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 20; seed++) {
    check_balanced(STK_ORDER_DEALT, 256, 7, seed, false);
    check_balanced(STK_ORDER_DEALT, 100 + (int)seed * 7, 5, seed, false);
  }
  check_balanced(STK_ORDER_DEALT, 256, 7, 0, true);
}

static void test_chunks_balance_the_engines(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 20; seed++) {
    check_balanced(STK_ORDER_CHUNKS, 259, 7, seed, false); /* 259 = 7 x 37 */
    check_balanced(STK_ORDER_CHUNKS, 256, 7, seed, false); /* a short last chunk */
  }
  check_balanced(STK_ORDER_CHUNKS, 259, 7, 0, true);
}

static void test_no_engine_count(void **state) {
  (void)state;
  size_t cost[MAXN];
  int perm[MAXN], scratch[2 * MAXN];
  random_costs(cost, 64, 3);
  assert_int_equal(stk_engine_order(STK_ORDER_DEALT, 64, cost, 0, perm, scratch), -1);
  for (int i = 0; i < 64; i++) assert_int_equal(perm[i], i);
  assert_int_equal(
      stk_engine_order(STK_ORDER_CHUNKS, 64, cost, STK_ORDER_MAX_ENGINES + 1, perm, scratch), -1);
  assert_int_equal(stk_engine_order(STK_ORDER_DESC, 64, cost, 0, perm, scratch),
                   0); /* needs no count */
  assert_permutation(perm, 64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_as_given_and_tiny_batches),
      cmocka_unit_test(test_desc_sorts_stably),
      cmocka_unit_test(test_dealt_balances_the_engines),
      cmocka_unit_test(test_chunks_balance_the_engines),
      cmocka_unit_test(test_no_engine_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
