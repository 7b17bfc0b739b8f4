/* The own GPU JPEG decoder's balancer (src/ops/own_balance.h, gpu_decoder_load -2), driven
 * by a simulated GPU: per batch of 256 JPEGs the own decoder takes round(share x 256), the
 * engines the rest; the engines' call lasts (n - k) / R_e, the own decoder k / R_o, both
 * started together, and the decode thread waits max(0, own - engines) for the own decoder
 * after the engines' call. The best share is the one where both finish together,
 * R_o / (R_e + R_o), and the best batch time n / (R_e + R_o) (two servers in parallel). */
#include <math.h>

#include "testutil.h"
#include "../../src/ops/own_balance.h"

#define BATCH 256

typedef struct {
  double r_engines, r_own; /* images per second; r_own 0: the own decoder never finishes */
  double noise;            /* +- relative noise on each time */
  unsigned seed;
} gpu;

static double uniform(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (*s >> 8) / 16777216.0;
}

static double jitter(gpu *g) { return 1 + g->noise * (2 * uniform(&g->seed) - 1); }

/* One batch at b's share: returns its time (the slower decoder) and moves b on. */
static double run_batch(stk__own_balance *b, gpu *g) {
  int k = (int)floor(b->share * BATCH + 0.5);
  double engines = (BATCH - k) / g->r_engines * jitter(g);
  double own = g->r_own > 0 ? k / g->r_own * jitter(g) : INFINITY;
  double wait = own > engines ? own - engines : 0;
  *b = stk__own_balance_next(*b, engines, wait);
  return engines > own ? engines : own;
}

/* From the start, within 30 batches the share is within tol of the best and stays there
 * for 300 more; the mean batch time from then on is within `slack` of the best. */
static void assert_converges(gpu g, double tol, double slack) {
  stk__own_balance b = stk__own_balance_start();
  assert_true(b.share == 0.3);
  for (int k = 0; k < 30; k++) run_batch(&b, &g);
  double best = g.r_own / (g.r_engines + g.r_own), seconds = 0;
  for (int k = 0; k < 300; k++) {
    if (fabs(b.share - best) > tol)
      fail_msg("R_e %g R_o %g: batch %d share %.4f, best %.4f", g.r_engines, g.r_own, 30 + k,
               b.share, best);
    seconds += run_batch(&b, &g);
  }
  double ideal = 300.0 * BATCH / (g.r_engines + g.r_own);
  if (seconds > (1 + slack) * ideal)
    fail_msg("R_e %g R_o %g: %.3f x the best time", g.r_engines, g.r_own, seconds / ideal);
}

static void test_converges_to_the_balance(void **state) {
  (void)state;
  const double pairs[][2] = {{30e3, 20e3}, {30e3, 5e3}, {30e3, 60e3}, {30e3, 90e3}, {45e3, 30e3}};
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
    assert_converges((gpu){pairs[i][0], pairs[i][1], 0, 1}, 0.05, 0.03);
}

static void test_converges_with_noisy_timings(void **state) {
  (void)state;
  const double pairs[][2] = {{30e3, 20e3}, {30e3, 5e3}, {30e3, 60e3}};
  for (unsigned seed = 1; seed <= 10; seed++)
    for (size_t i = 0; i < 3; i++)
      assert_converges((gpu){pairs[i][0], pairs[i][1], 0.05, seed}, 0.05, 0.06);
}

/* A much slower own decoder (30x): the share settles near 3%, and probing above it costs
 * little (a fixed 0.02 step would cost about a quarter of the throughput here). */
static void test_slow_own_decoder_costs_little(void **state) {
  (void)state;
  assert_converges((gpu){30e3, 1e3, 0, 3}, 0.02, 0.05);
}

/* An own decoder that never finishes: the share goes to the minimum and stays near it. */
static void test_never_finishing_goes_to_the_minimum(void **state) {
  (void)state;
  gpu g = {1, 0, 0, 1};
  stk__own_balance b = stk__own_balance_start();
  for (int k = 0; k < 10; k++) run_batch(&b, &g);
  for (int k = 0; k < 100; k++) {
    assert_true(b.share >= STK__OWN_BALANCE_MIN && b.share <= STK__OWN_BALANCE_MIN + 0.005);
    run_batch(&b, &g);
  }
}

/* The rates change mid-run (the training starts taking SM time): the share follows. */
static void test_follows_a_change(void **state) {
  (void)state;
  gpu g = {30e3, 60e3, 0, 1};
  stk__own_balance b = stk__own_balance_start();
  for (int k = 0; k < 50; k++) run_batch(&b, &g);
  assert_true(fabs(b.share - 2.0 / 3) < 0.05);
  g.r_own = 10e3;
  for (int k = 0; k < 10; k++) run_batch(&b, &g);
  assert_true(fabs(b.share - 0.25) < 0.05);
  g.r_own = 30e3;
  for (int k = 0; k < 30; k++) run_batch(&b, &g);
  assert_true(fabs(b.share - 0.5) < 0.05);
}

/* One step by hand: late by as long as the engines' call at share 0.5, the rates say 1/3,
 * and the share moves 0.7 of the way: 0.5 + 0.7 (1/3 - 0.5). On time: up by the step. */
static void test_one_step(void **state) {
  (void)state;
  stk__own_balance b = {0.5, 0.01};
  stk__own_balance late = stk__own_balance_next(b, 1.0, 1.0);
  assert_true(fabs(late.share - (0.5 + 0.7 * (1.0 / 3 - 0.5))) < 1e-12);
  assert_true(late.step < b.step);                                /* the probe restarts small */
  stk__own_balance on_time = stk__own_balance_next(b, 1.0, 0.01); /* 1%: noise */
  assert_true(fabs(on_time.share - 0.51) < 1e-12 && on_time.step > b.step);
  stk__own_balance top = stk__own_balance_next((stk__own_balance){0.95, 0.03}, 1.0, 0);
  assert_true(top.share == STK__OWN_BALANCE_MAX);
  stk__own_balance bottom = stk__own_balance_next((stk__own_balance){0.02, 0.01}, 1.0, INFINITY);
  assert_true(bottom.share == STK__OWN_BALANCE_MIN);
}

/* Skipped calls and nonsense timings keep the state: nothing was measured. */
static void test_bad_inputs_keep_the_share(void **state) {
  (void)state;
  stk__own_balance b = {0.4, 0.01};
  const double bad[][2] = {{0, 0},    {0, 1},     {-1, 0},       {NAN, 0},       {1, NAN},
                           {1, -0.5}, {NAN, NAN}, {INFINITY, 0}, {-INFINITY, 1}, {1, -INFINITY}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    stk__own_balance n = stk__own_balance_next(b, bad[i][0], bad[i][1]);
    if (n.share != b.share || n.step != b.step)
      fail_msg("engines %g wait %g moved the share to %g", bad[i][0], bad[i][1], n.share);
  }
  stk__own_balance lost = stk__own_balance_next((stk__own_balance){NAN, NAN}, 0, 0);
  assert_true(lost.share == STK__OWN_BALANCE_START && lost.step > 0);
  stk__own_balance high = stk__own_balance_next((stk__own_balance){7, 0.01}, 0, 0);
  assert_true(high.share == STK__OWN_BALANCE_MAX);
}

/* ---- whether it pays (stk__own_gain) ---- */

/* A batch as the decode thread runs it (src/ops/jpeg_own.c): without the own decoder when
 * the gain layer says so, else at the balancer's share; the engines run `slowdown` times
 * slower while the own decoder shares the GPU with them (their kernels and memory).
 * Returns the batch's time per image. */
static double run_pipeline_batch(stk__own_balance *b, stk__own_gain *gain, gpu *g,
                                 double slowdown) {
  int without = stk__own_gain_without(gain);
  int k = without ? 0 : (int)floor(b->share * BATCH + 0.5);
  double engines = (BATCH - k) / g->r_engines * (k > 0 ? slowdown : 1) * jitter(g);
  double own = k > 0 ? k / g->r_own * jitter(g) : 0;
  double wait = own > engines ? own - engines : 0;
  if (!without) *b = stk__own_balance_next(*b, engines, wait);
  *gain = stk__own_gain_next(*gain, engines + wait, BATCH);
  return (engines + wait) / BATCH;
}

static void test_probe_every_sixteenth_batch(void **state) {
  (void)state;
  stk__own_gain gain = {0}; /* an own decoder that halves the time: it never sits out */
  for (int k = 0; k < 64; k++) {
    int without = stk__own_gain_without(&gain);
    assert_int_equal(without, k % STK__OWN_GAIN_PROBE == 15);
    gain = stk__own_gain_next(gain, without ? 1.0 : 0.5, BATCH);
  }
}

/* The mean time per image over `batches`, and the share of them run with the own decoder. */
static double run_pipeline(gpu g, double slowdown, int batches, double *with_share) {
  stk__own_balance b = stk__own_balance_start();
  stk__own_gain gain = {0};
  double t = 0;
  int with = 0;
  for (int k = 0; k < batches; k++) {
    with += !stk__own_gain_without(&gain);
    t += run_pipeline_batch(&b, &gain, &g, slowdown);
  }
  *with_share = (double)with / batches;
  return t / batches;
}

/* It pays (engines 30k/s, own 20k/s, the engines 10% slower beside it): the own decoder
 * runs in every batch but the probes, and the pipeline beats the engines alone by about
 * what the two rates promise (30k -> ~45k per second, less the probes). */
static void test_a_paying_decoder_stays(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 5; seed++) {
    double with;
    double t = run_pipeline((gpu){30e3, 20e3, 0.05, seed}, 1.1, 2000, &with);
    if (with < 1 - 1.0 / STK__OWN_GAIN_PROBE - 1e-9)
      fail_msg("seed %u: with the own decoder in %.3f of the batches", seed, with);
    double alone = 1 / 30e3;
    if (t > 0.75 * alone) fail_msg("seed %u: %.3f x the engines alone", seed, t / alone);
  }
}

/* It does not pay (the engines 50% slower beside an own decoder of 10k/s: together slower
 * than the engines alone): it sits out most batches, and the pipeline loses little. */
static void test_a_costly_decoder_sits_out(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 5; seed++) {
    double with;
    double t = run_pipeline((gpu){30e3, 10e3, 0.05, seed}, 1.5, 3000, &with);
    if (with > 0.25) fail_msg("seed %u: with the own decoder in %.3f of the batches", seed, with);
    double alone = 1 / 30e3;
    if (t > 1.06 * alone) fail_msg("seed %u: %.3f x the engines alone", seed, t / alone);
  }
}

/* A gain under STK__OWN_GAIN_KEEP (2% per image) is not worth it; 10% is. */
static void test_the_gain_must_exceed_the_threshold(void **state) {
  (void)state;
  stk__own_gain small = {0}, clear = {0};
  for (int k = 0; k < 200; k++) {
    small = stk__own_gain_next(small, stk__own_gain_without(&small) ? 1.0 : 0.98, 1);
    clear = stk__own_gain_next(clear, stk__own_gain_without(&clear) ? 1.0 : 0.90, 1);
  }
  assert_true(small.off_until > 0);
  assert_true(clear.off_until == 0);
}

/* After sitting out it tries again, with its time measured afresh. */
static void test_it_tries_again(void **state) {
  (void)state;
  stk__own_gain gain = {0};
  int k = 0;
  while (gain.off_until == 0 && k < 100) gain = stk__own_gain_next(gain, 1.0, 1), k++;
  assert_true(gain.off_until == k + STK__OWN_GAIN_OFF && gain.t_with == 0);
  for (int j = 0; j < STK__OWN_GAIN_OFF; j++) {
    assert_true(stk__own_gain_without(&gain));
    gain = stk__own_gain_next(gain, 1.0, 1);
  }
  assert_false(stk__own_gain_without(&gain) && gain.batch % STK__OWN_GAIN_PROBE != 15);
}

static void test_bad_inputs_keep_the_gain(void **state) {
  (void)state;
  stk__own_gain g = {5, 0, 1, 0.5, 0.6};
  const double bad[] = {0, -1, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    stk__own_gain n = stk__own_gain_next(g, bad[i], 10);
    assert_true(n.batch == g.batch && n.t_with == g.t_with && n.t_alone == g.t_alone);
  }
  stk__own_gain n = stk__own_gain_next(g, 1.0, 0);
  assert_true(n.batch == g.batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_converges_to_the_balance),
      cmocka_unit_test(test_converges_with_noisy_timings),
      cmocka_unit_test(test_slow_own_decoder_costs_little),
      cmocka_unit_test(test_never_finishing_goes_to_the_minimum),
      cmocka_unit_test(test_follows_a_change),
      cmocka_unit_test(test_one_step),
      cmocka_unit_test(test_bad_inputs_keep_the_share),
      cmocka_unit_test(test_probe_every_sixteenth_batch),
      cmocka_unit_test(test_a_paying_decoder_stays),
      cmocka_unit_test(test_a_costly_decoder_sits_out),
      cmocka_unit_test(test_the_gain_must_exceed_the_threshold),
      cmocka_unit_test(test_it_tries_again),
      cmocka_unit_test(test_bad_inputs_keep_the_gain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
