/* The automatic split between nvJPEG's hardware engines and its hybrid path
 * (src/cuda/decode_balance.h), driven by a simulated machine: each batch of 256 JPEGs
 * of random sizes is split as the decoder splits it (the first round(load x n) capable
 * samples to the engines), each path takes pixels / rate seconds, with noise, and the
 * controller sees what decode_batch measures. The best split is the one where both paths
 * finish together, share = r_hw / (r_hw + r_hybrid) (a published property of two
 * parallel servers; nothing here is taken from the code under test). */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"
#include "../../src/cuda/decode_balance.h"

#define BATCH 256

typedef struct {
  double r_hw, r_hybrid; /* pixels per second */
  double noise;          /* +- relative noise on each path's time */
  unsigned seed;
} machine;

static double uniform(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (*s >> 8) / 16777216.0;
}

/* One batch on the machine with the controller's share: returns the batch's time (the
 * slower path) and feeds the measurements back. */
static double run_batch(stk_hw_balance *b, machine *m) {
  double px[BATCH], hw = 0, hybrid = 0;
  for (int i = 0; i < BATCH; i++) px[i] = (300 + 400 * uniform(&m->seed)) * (300 + 300 * uniform(&m->seed));
  int take = (int)floor(b->load * BATCH + 0.5);
  for (int i = 0; i < BATCH; i++) *(i < take ? &hw : &hybrid) += px[i];
  double t_hw = hw / m->r_hw * (1 + m->noise * (2 * uniform(&m->seed) - 1));
  double t_hybrid = hybrid / m->r_hybrid * (1 + m->noise * (2 * uniform(&m->seed) - 1));
  stk_hw_balance_update(b, hw, hw > 0 ? t_hw : 0, hybrid, hybrid > 0 ? t_hybrid : 0);
  return t_hw > t_hybrid ? t_hw : t_hybrid;
}

/* Runs `warm` batches, then averages the share and the throughput over 50 more. */
static void settle(machine *m, double start, double *share, double *throughput) {
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  if (start >= 0) b.load = start;
  for (int k = 0; k < 30; k++) run_batch(&b, m);
  double sum_share = 0, seconds = 0;
  for (int k = 0; k < 50; k++) {
    sum_share += b.load;
    seconds += run_batch(&b, m);
  }
  *share = sum_share / 50;
  *throughput = 50.0 * BATCH / seconds;
}

static void check_machine(double r_hw, double r_hybrid, double noise, double start) {
  machine m = {r_hw, r_hybrid, noise, 12345u};
  double share, ips;
  settle(&m, start, &share, &ips);
  double best = r_hw / (r_hw + r_hybrid);
  if (best < STK_HW_BALANCE_MIN) best = STK_HW_BALANCE_MIN;
  /* throughput of the best fixed split on noiseless batches of the mean size */
  double mean_px = 500.0 * 450.0, ideal_ips = (r_hw + r_hybrid) / mean_px;
  if (r_hw / (r_hw + r_hybrid) < STK_HW_BALANCE_MIN) ideal_ips = r_hw / (STK_HW_BALANCE_MIN * mean_px);
  print_message("r_hw %.0f r_hybrid %.0f noise %.2f start %.2f: share %.3f (balance %.3f), %.0f img/s (ideal %.0f)\n",
                r_hw, r_hybrid, noise, start, share, best, ips, ideal_ips);
  assert_true(fabs(share - best) < (noise > 0 ? 0.05 : 0.02));
  assert_true(ips > (noise > 0 ? 0.85 : 0.95) * ideal_ips);
}

/* An H100-like machine: 7 engines, 15 hybrid threads (rates from bench/RESULTS.md). */
static void test_h100_like(void **state) {
  (void)state;
  check_machine(25000 * 225000.0, 11700 * 225000.0, 0.0, -1);
  check_machine(25000 * 225000.0, 11700 * 225000.0, 0.2, -1);
}

/* Few CPU threads: the engines take nearly everything. */
static void test_few_threads(void **state) {
  (void)state;
  check_machine(25000 * 225000.0, 1500 * 225000.0, 0.1, -1);
}

/* Slow engines (or a loaded one): the hybrid path takes most, never the engines' last
 * share (they keep samples to time). */
static void test_slow_engines(void **state) {
  (void)state;
  check_machine(2000 * 225000.0, 12000 * 225000.0, 0.1, -1);
  check_machine(100 * 225000.0, 12000 * 225000.0, 0.0, -1);
}

/* Started at 1.0 the hybrid path gets nothing to time; the controller probes towards it
 * and settles at the balance all the same. */
static void test_probes_from_all_hardware(void **state) {
  (void)state;
  check_machine(25000 * 225000.0, 11700 * 225000.0, 0.0, 1.0);
}

/* Batches the engines cannot take (no capable samples: nothing timed on them) move the
 * share up by the probe step; the share stays in [MIN, 1]; nothing timed changes nothing. */
static void test_unmeasured_paths(void **state) {
  (void)state;
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  double before = b.load;
  assert_true(fabs(stk_hw_balance_update(&b, 0, 0, 1e6, 0.01) - (before + STK_HW_BALANCE_PROBE)) < 1e-12);
  for (int k = 0; k < 100; k++) stk_hw_balance_update(&b, 0, 0, 1e6, 0.01);
  assert_true(b.load == 1.0);
  for (int k = 0; k < 100; k++) stk_hw_balance_update(&b, 1e6, 0.01, 0, 0);
  assert_true(b.load == STK_HW_BALANCE_MIN);
  double held = b.load;
  stk_hw_balance_update(&b, 0, 0, 0, 0);
  assert_true(b.load == held);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_h100_like),
      cmocka_unit_test(test_few_threads),
      cmocka_unit_test(test_slow_engines),
      cmocka_unit_test(test_probes_from_all_hardware),
      cmocka_unit_test(test_unmeasured_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
