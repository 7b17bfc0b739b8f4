/* The automatic split of a batch between nvJPEG's hardware engines and its hybrid path
 * (hw_decoder_load < 0, the default). Two levels:
 *
 * 1. The balance. Both paths run at once: the decode threads take the hybrid share while
 *    the caller's thread feeds the engines. A batch takes as long as the slower of the
 *    two, so if the paths did not slow each other the best share for the engines would be
 *    r_hw / (r_hw + r_hybrid), where r is each path's throughput in pixels per second.
 *    Both rates depend on the machine and the files, so they are measured on every batch
 *    and the share moves a part of the way towards the balance each time (an exponential
 *    average, which rides out the noise of single batches). A path that got no samples
 *    cannot be measured: the share then steps towards it, so the next batch gives it a
 *    sample to time.
 *
 * 2. The check against the engines alone. The paths do slow each other: the engines'
 *    batched call is itself CPU work on the caller's thread (96-100% of a core on the H100
 *    machine), and on that machine the hybrid threads slowed it by about their whole
 *    share: the call took as long for 84% of a batch as for all of it (bench/RESULTS.md,
 *    2026-11-25). Each rate in (1) is measured under the other path's load, so the
 *    balance cannot see this. So whole batches are compared as well: "split" (the share
 *    from 1) against "engines" (every capable sample to the engines), by pixels per
 *    second of the whole decoding. One arm is played; the other one batch now and then,
 *    and that batch's rate is compared with the played batches just before and after it
 *    (a paired comparison: the machine's own speed drifts by more than the arms differ,
 *    so rates from different minutes are not comparable). The log of those ratios is
 *    averaged; the first STK_HW_ARM_WARMUP pairs alternate the arms batch by batch. The
 *    engines alone are played first and are preferred: the split takes over only when it
 *    is faster by STK_HW_ARM_MARGIN, and hands back as soon as the engines alone come
 *    within STK_HW_ARM_MARGIN of it, because the split costs several CPU cores (the
 *    hybrid threads) that the training process could use. The other arm
 *    is played one batch in STK_HW_ARM_EXPLORE times the square of the arms' ratio (at
 *    most 64 times that), which keeps the cost of those batches near
 *    1 / (EXPLORE x ratio) of the time however far apart the arms are. The engines alone
 *    are not tried while the split gives them less than STK_HW_ARM_MIN_SHARE of the
 *    batch: the hybrid path then carries most of it, and leaving it all to the engines
 *    would need them to more than double their speed.
 *
 * Host-only C, shared by decode.cu and tests/c/test_decode_balance.c. */
#ifndef STK_DECODE_BALANCE_H
#define STK_DECODE_BALANCE_H

#include <math.h>

#define STK_HW_BALANCE_START 0.8  /* first share; 0.75 was the best fixed one on the H100 */
#define STK_HW_BALANCE_MIN   0.05 /* the engines always get some samples to time */
#define STK_HW_BALANCE_GAIN  0.3  /* how far each batch moves the share towards its balance */
#define STK_HW_BALANCE_PROBE 0.05 /* the step towards a path that got no samples */

#define STK_HW_ARM_WARMUP  8    /* pairs measured before the first choice */
#define STK_HW_ARM_EXPLORE 16   /* the other arm: one batch in this many x ratio^2 */
#define STK_HW_ARM_GAIN    0.25 /* exponential average of the pairs' log ratios */
#define STK_HW_ARM_MARGIN  0.02 /* the split must be this much faster to be played */
#define STK_HW_ARM_MIN_SHARE                                           \
  0.5 /* the split's share below which the engines alone are not tried \
       */

enum { STK_HW_ARM_SPLIT = 0, STK_HW_ARM_ENGINES = 1 };

typedef struct {
  double load;        /* the split's share of the engine-capable samples, in [MIN, 1] */
  double log_ratio;   /* average log(rate of the other arm / rate of the played one) */
  long pairs;         /* paired comparisons made */
  double prev_rate;   /* the last measured batch's pixels per second (0: none) */
  int prev_arm;       /* and its arm */
  double held_rate;   /* the other arm's last batch, waiting for the next played one */
  double held_before; /* the played batch before it */
  long count[2];      /* batches measured per arm */
  long planned;       /* batches planned so far */
  long since;         /* batches since the other arm was last played */
  long switches;      /* times the played arm changed */
  int best;           /* the arm played */
  int arm;            /* the arm of the batch planned last */
} stk_hw_balance;

static inline void stk_hw_balance_init(stk_hw_balance *b) {
  b->load = STK_HW_BALANCE_START;
  b->log_ratio = 0;
  b->pairs = 0;
  b->prev_rate = b->held_rate = b->held_before = 0;
  b->prev_arm = STK_HW_ARM_ENGINES;
  b->count[0] = b->count[1] = 0;
  b->planned = b->since = b->switches = 0;
  b->best = STK_HW_ARM_ENGINES;
  b->arm = STK_HW_ARM_ENGINES;
}

/* The other arm's rate over the played one's, from the averaged pairs (1: none yet). */
static inline double stk_hw_balance_ratio(const stk_hw_balance *b) { return exp(b->log_ratio); }

/* The engines' share for the next batch: the split's, or 1 when it plays the engines
 * alone. */
static inline double stk_hw_balance_plan(stk_hw_balance *b) {
  long k = b->planned++;
  if (b->load < STK_HW_ARM_MIN_SHARE) {
    if (b->best != STK_HW_ARM_SPLIT) b->log_ratio = -b->log_ratio;
    b->arm = b->best = STK_HW_ARM_SPLIT;
  } else if (b->pairs < STK_HW_ARM_WARMUP) {
    b->arm = k % 2 ? !b->best : b->best;
  } else {
    double ratio = 1 / stk_hw_balance_ratio(b); /* the played arm over the other, >= ~1 */
    if (ratio < 1) ratio = 1;
    if (ratio > 8) ratio = 8;
    long every = (long)(STK_HW_ARM_EXPLORE * ratio * ratio);
    b->arm = ++b->since >= every ? !b->best : b->best;
    if (b->arm != b->best) b->since = 0;
  }
  return b->arm == STK_HW_ARM_ENGINES ? 1.0 : b->load;
}

/* Level 1 alone: one batch's measurements of each path (pixels, and seconds: the
 * engines' batched call; the hybrid path from its start until its last sample) move
 * the split's share. Returns the new share. */
static inline double stk_hw_balance_split(stk_hw_balance *b, double hw_pixels, double hw_seconds,
                                          double hybrid_pixels, double hybrid_seconds) {
  double load = b->load;
  int hw_timed = hw_pixels > 0 && hw_seconds > 0;
  int hybrid_timed = hybrid_pixels > 0 && hybrid_seconds > 0;
  if (hw_timed && hybrid_timed) {
    double r_hw = hw_pixels / hw_seconds, r_hybrid = hybrid_pixels / hybrid_seconds;
    double balance = r_hw / (r_hw + r_hybrid);
    load += STK_HW_BALANCE_GAIN * (balance - load);
  } else if (hw_timed) {
    load -= STK_HW_BALANCE_PROBE; /* give the hybrid path samples to time */
  } else if (hybrid_timed) {
    load += STK_HW_BALANCE_PROBE;
  }
  if (load < STK_HW_BALANCE_MIN) load = STK_HW_BALANCE_MIN;
  if (load > 1.0) load = 1.0;
  b->load = load;
  return load;
}

/* The batch planned last has run: each path's pixels and seconds as above, and the
 * seconds of the whole decoding (both paths, from the first start to the last end). */
static inline void stk_hw_balance_update(stk_hw_balance *b, double hw_pixels, double hw_seconds,
                                         double hybrid_pixels, double hybrid_seconds,
                                         double batch_seconds) {
  int arm = b->arm;
  if (arm == STK_HW_ARM_SPLIT)
    stk_hw_balance_split(b, hw_pixels, hw_seconds, hybrid_pixels, hybrid_seconds);
  if (batch_seconds <= 0 || hw_pixels + hybrid_pixels <= 0) return;
  double rate = (hw_pixels + hybrid_pixels) / batch_seconds;
  b->count[arm]++;
  if (arm != b->best) { /* the other arm: held until the next played batch */
    b->held_rate = b->prev_rate > 0 && b->prev_arm == b->best ? rate : 0;
    b->held_before = b->prev_rate;
  } else if (b->held_rate > 0) { /* a pair: other / mean of the played batches around it */
    double sample = log(b->held_rate / (0.5 * (b->held_before + rate)));
    b->pairs++;
    double gain = b->pairs <= STK_HW_ARM_WARMUP ? 1.0 / (double)b->pairs : STK_HW_ARM_GAIN;
    b->log_ratio += gain * (sample - b->log_ratio);
    b->held_rate = 0;
    /* split over engines above 1 + MARGIN: the split; engines over split above
     * 1 - MARGIN: the engines */
    double bar = log(b->best == STK_HW_ARM_ENGINES ? 1 + STK_HW_ARM_MARGIN : 1 - STK_HW_ARM_MARGIN);
    if (b->pairs >= STK_HW_ARM_WARMUP && b->log_ratio > bar) {
      b->best = !b->best;
      b->log_ratio = -b->log_ratio;
      b->switches++;
    }
  }
  b->prev_rate = rate;
  b->prev_arm = arm;
}

#endif
