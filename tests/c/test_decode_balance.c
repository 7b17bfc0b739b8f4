/* The automatic split between nvJPEG's hardware engines and its hybrid path
 * (src/cuda/decode_balance.h), driven by a simulated machine: each batch of 256 JPEGs
 * of random sizes is split as the decoder splits it (the first round(load x n) capable
 * samples to the engines), each path takes pixels / rate seconds, with noise, and the
 * controller sees what decode_batch measures. Without interference the best split is the
 * one where both paths finish together, share = r_hw / (r_hw + r_hybrid) (a published
 * property of two parallel servers; nothing here is taken from the code under test).
 * With interference (the hybrid path running slows the engines by a factor), the best
 * is whichever of that split and the engines alone gives more images per second,
 * computed here from the model. */
#include <math.h>
#include <stdlib.h>

#include "testutil.h"
#include "../../src/cuda/decode_balance.h"

#define BATCH 256

typedef struct {
  double r_hw, r_hybrid; /* pixels per second */
  double noise;          /* +- relative noise on each path's time */
  double interference;   /* the engines' time grows by this fraction while the hybrid path runs */
  unsigned seed;
} machine;

static double uniform(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (*s >> 8) / 16777216.0;
}

/* One batch on the machine with the share the controller plans: returns the batch's time
 * (the slower path) and feeds the measurements back; *share_played: that share. */
static double run_batch_played(stk_hw_balance *b, machine *m, double *share_played) {
  double px[BATCH], hw = 0, hybrid = 0;
  for (int i = 0; i < BATCH; i++)
    px[i] = (300 + 400 * uniform(&m->seed)) * (300 + 300 * uniform(&m->seed));
  double load = stk_hw_balance_plan(b);
  if (share_played) *share_played = load;
  int take = (int)floor(load * BATCH + 0.5);
  for (int i = 0; i < BATCH; i++) *(i < take ? &hw : &hybrid) += px[i];
  double t_hw = hw / m->r_hw * (1 + m->noise * (2 * uniform(&m->seed) - 1));
  if (hybrid > 0) t_hw *= 1 + m->interference;
  double t_hybrid = hybrid / m->r_hybrid * (1 + m->noise * (2 * uniform(&m->seed) - 1));
  double t = t_hw > t_hybrid ? t_hw : t_hybrid;
  stk_hw_balance_update(b, hw, hw > 0 ? t_hw : 0, hybrid, hybrid > 0 ? t_hybrid : 0, t);
  return t;
}

static double run_batch(stk_hw_balance *b, machine *m) { return run_batch_played(b, m, NULL); }

/* Runs `warm` batches, then averages the share and the throughput over 50 more. */
static void settle(machine *m, double start, double *share, double *throughput) {
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  if (start >= 0) b.load = start;
  for (int k = 0; k < 40; k++) run_batch(&b, m);
  double sum_share = 0, seconds = 0;
  for (int k = 0; k < 50; k++) {
    sum_share += b.load;
    seconds += run_batch(&b, m);
  }
  *share = sum_share / 50;
  *throughput = 50.0 * BATCH / seconds;
}

/* Images per second of `batches` batches after `warm` more, and the arm played last. */
static double rate_after(stk_hw_balance *b, machine *m, int warm, int batches) {
  for (int k = 0; k < warm; k++) run_batch(b, m);
  double seconds = 0;
  for (int k = 0; k < batches; k++) seconds += run_batch(b, m);
  return batches > 0 ? batches * (double)BATCH / seconds : 0;
}

static void check_machine(double r_hw, double r_hybrid, double noise, double start) {
  machine m = {r_hw, r_hybrid, noise, 0.0, 12345u};
  double share, ips;
  settle(&m, start, &share, &ips);
  double best = r_hw / (r_hw + r_hybrid);
  if (best < STK_HW_BALANCE_MIN) best = STK_HW_BALANCE_MIN;
  /* throughput of the best fixed split on noiseless batches of the mean size */
  double mean_px = 500.0 * 450.0, ideal_ips = (r_hw + r_hybrid) / mean_px;
  if (r_hw / (r_hw + r_hybrid) < STK_HW_BALANCE_MIN)
    ideal_ips = r_hw / (STK_HW_BALANCE_MIN * mean_px);
  print_message(
      "r_hw %.0f r_hybrid %.0f noise %.2f start %.2f: share %.3f (balance %.3f), %.0f img/s (ideal "
      "%.0f)\n",
      r_hw, r_hybrid, noise, start, share, best, ips, ideal_ips);
  assert_true(fabs(share - best) < (noise > 0 ? 0.05 : 0.02));
  /* one batch in STK_HW_ARM_EXPLORE runs the engines alone: a few % below the ideal */
  assert_true(ips > (noise > 0 ? 0.85 : 0.94) * ideal_ips);
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

/* The paths slow each other, as measured on the H100 machine: with the hybrid path
 * running, the engines' call took as long for 84% of a batch as for all of it (the
 * engines' host work is CPU work on the caller's thread; that is an interference of
 * 0.19, where the balanced split and the engines alone tie). A little more and the
 * engines alone are faster than any split, and the controller plays them; without
 * interference on the same machine it plays the split. */
static void test_interference_prefers_engines_alone(void **state) {
  (void)state;
  for (int noisy = 0; noisy < 2; noisy++) {
    double r_hw = 30000 * 225000.0, r_hybrid = 5000 * 225000.0;
    machine m = {r_hw, r_hybrid, noisy ? 0.1 : 0.0, 0.30, 777u};
    stk_hw_balance b;
    stk_hw_balance_init(&b);
    double ips = rate_after(&b, &m, 40, 160);
    double mean_px = 500.0 * 450.0, alone = r_hw / mean_px;
    /* the split at its balance, with the engines slowed: both finish at share s where
     * s (1 + I) / r_hw = (1 - s) / r_hybrid */
    double s = r_hw / (r_hw + r_hybrid * 1.30), split = r_hw / (s * 1.30 * mean_px);
    print_message(
        "interference 0.30 noise %.1f: %.0f img/s, engines alone %.0f, best split %.0f; arm %d\n",
        m.noise, ips, alone, split, b.best);
    assert_true(alone > split); /* the model's premise */
    assert_int_equal(b.best, STK_HW_ARM_ENGINES);
    assert_true(ips > (noisy ? 0.93 : 0.97) * alone);
  }
  machine calm = {30000 * 225000.0, 5000 * 225000.0, 0.05, 0.0, 778u};
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  rate_after(&b, &calm, 40, 100);
  assert_int_equal(b.best, STK_HW_ARM_SPLIT);
}

/* The first 2 x WARMUP batches alternate the arms; after that one batch in EXPLORE x
 * ratio^2 plays the arm not chosen, and the played arm follows a machine that changes. */
static void test_arms_warmup_explore_and_follow(void **state) {
  (void)state;
  machine m = {30000 * 225000.0, 12000 * 225000.0, 0.0, 0.0, 99u};
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  for (int k = 0; k < 2 * STK_HW_ARM_WARMUP; k++) { /* the engines alone first */
    double played;
    run_batch_played(&b, &m, &played);
    assert_int_equal(b.arm, k % 2 ? STK_HW_ARM_SPLIT : STK_HW_ARM_ENGINES);
    if (b.arm == STK_HW_ARM_ENGINES) assert_true(played == 1.0);
  }
  run_batch(&b, &m);                          /* the eighth pair completes */
  assert_int_equal(b.best, STK_HW_ARM_SPLIT); /* no interference: the split is faster */
  /* the split is 1.4x the engines alone here: the other arm every 16 x 1.96 = 31 batches */
  int other = 0, batches = 31 * 20;
  for (int k = 0; k < batches; k++) {
    run_batch(&b, &m);
    other += b.arm != b.best;
  }
  print_message("explored %d of %d batches (the engines alone at %.2f of the split)\n", other,
                batches, stk_hw_balance_ratio(&b));
  assert_true(other >= 19 && other <= 21);
  m.interference = 1.0; /* the machine gets busy: the split (share 0.56) loses */
  rate_after(&b, &m, 30 * STK_HW_ARM_EXPLORE, 0);
  assert_int_equal(b.best, STK_HW_ARM_ENGINES);
  m.interference = 0.0; /* and quiet again */
  rate_after(&b, &m, 30 * STK_HW_ARM_EXPLORE, 0);
  assert_int_equal(b.best, STK_HW_ARM_SPLIT);
}

/* The machine's own speed drifts by more than the arms differ (seen on the H100 machine:
 * bare decoding at 26k-36k images/s within one call): every few hundred batches it runs
 * at 70% for a while. The engines alone are 8% faster than the split there; the paired
 * comparison keeps playing them through the slow phases. */
static void test_machine_drift(void **state) {
  (void)state;
  double r_hw = 30000 * 225000.0, r_hybrid = 5000 * 225000.0;
  machine m = {r_hw, r_hybrid, 0.1, 0.40, 4242u};
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  int wrong = 0, batches = 2400;
  for (int k = 0; k < batches; k++) {
    double speed = (k / 150) % 2 ? 0.7 : 1.0;
    m.r_hw = r_hw * speed;
    m.r_hybrid = r_hybrid * speed;
    run_batch(&b, &m);
    wrong += k >= 100 && b.arm == STK_HW_ARM_SPLIT;
  }
  print_message("drifting machine: %d of %d batches on the split, %ld switches\n", wrong,
                batches - 100, b.switches);
  assert_int_equal(b.best, STK_HW_ARM_ENGINES);
  assert_true(wrong < (batches - 100) / 10);
}

/* Batches the engines cannot take (no capable samples: nothing timed on them) move the
 * share up by the probe step; the share stays in [MIN, 1]; nothing timed changes nothing. */
static void test_unmeasured_paths(void **state) {
  (void)state;
  stk_hw_balance b;
  stk_hw_balance_init(&b);
  double before = b.load;
  assert_true(fabs(stk_hw_balance_split(&b, 0, 0, 1e6, 0.01) - (before + STK_HW_BALANCE_PROBE)) <
              1e-12);
  for (int k = 0; k < 100; k++) stk_hw_balance_split(&b, 0, 0, 1e6, 0.01);
  assert_true(b.load == 1.0);
  for (int k = 0; k < 100; k++) stk_hw_balance_split(&b, 1e6, 0.01, 0, 0);
  assert_true(b.load == STK_HW_BALANCE_MIN);
  double held = b.load;
  stk_hw_balance_split(&b, 0, 0, 0, 0);
  assert_true(b.load == held);
  /* a batch of the engines-alone arm does not move the split's share; nothing timed
   * (no pixels, no seconds) is not counted; a pair is the other arm's batch between two
   * played ones (the engines alone, played first): here the split at 1.5e8 px/s between
   * the engines' 1e8 and 2e8 */
  assert_int_equal(b.best, STK_HW_ARM_ENGINES);
  b.arm = STK_HW_ARM_ENGINES;
  stk_hw_balance_update(&b, 1e6, 0.01, 0, 0, 0.01); /* 1e8 px/s */
  assert_true(b.load == held);
  assert_true(b.count[STK_HW_ARM_ENGINES] == 1 && b.pairs == 0);
  stk_hw_balance_update(&b, 0, 0, 0, 0, 0);
  assert_true(b.count[STK_HW_ARM_ENGINES] == 1 && b.pairs == 0);
  b.arm = STK_HW_ARM_SPLIT;
  stk_hw_balance_update(&b, 1e6, 0.005, 5e5, 0.01, 0.01); /* 1.5e8 px/s */
  assert_true(b.count[STK_HW_ARM_SPLIT] == 1 && b.pairs == 0);
  b.arm = STK_HW_ARM_ENGINES;
  stk_hw_balance_update(&b, 1e6, 0.005, 0, 0, 0.005); /* 2e8 px/s */
  assert_true(b.pairs == 1);
  assert_true(fabs(stk_hw_balance_ratio(&b) - 1.0) < 1e-12); /* 1.5e8 / mean(1e8, 2e8) */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_h100_like),
      cmocka_unit_test(test_few_threads),
      cmocka_unit_test(test_slow_engines),
      cmocka_unit_test(test_probes_from_all_hardware),
      cmocka_unit_test(test_interference_prefers_engines_alone),
      cmocka_unit_test(test_arms_warmup_explore_and_follow),
      cmocka_unit_test(test_machine_drift),
      cmocka_unit_test(test_unmeasured_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
