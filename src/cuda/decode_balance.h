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
 *    second of the whole decoding. The first STK_HW_ARM_WARMUP batches of each alternate;
 *    then the faster one is played, and the other now and then, so that a change
 *    (another machine load, other files) is noticed: one batch in STK_HW_ARM_EXPLORE
 *    times the square of their rates' ratio (at most 64 times that), which keeps the
 *    cost of those batches near 1 / (EXPLORE x ratio) of the time however far apart the
 *    arms are. The played arm changes only when the other is faster by
 *    STK_HW_ARM_MARGIN. The engines alone are not tried while the split gives them less
 *    than STK_HW_ARM_MIN_SHARE of the batch: the hybrid path then carries most of it, and
 *    leaving it all to the engines would need them to more than double their speed.
 *
 * Host-only C, shared by decode.cu and tests/c/test_decode_balance.c. */
#ifndef STK_DECODE_BALANCE_H
#define STK_DECODE_BALANCE_H

#define STK_HW_BALANCE_START 0.8 /* first share; 0.75 was the best fixed one on the H100 */
#define STK_HW_BALANCE_MIN 0.05  /* the engines always get some samples to time */
#define STK_HW_BALANCE_GAIN 0.3  /* how far each batch moves the share towards its balance */
#define STK_HW_BALANCE_PROBE 0.05 /* the step towards a path that got no samples */

#define STK_HW_ARM_WARMUP 8     /* batches of each arm before the first choice */
#define STK_HW_ARM_EXPLORE 16   /* one batch in this many plays the other arm */
#define STK_HW_ARM_GAIN 0.125   /* exponential average of the played arm's batch rates */
#define STK_HW_ARM_EXPLORE_GAIN 0.25 /* ... of the other arm's (fewer, so each counts more) */
#define STK_HW_ARM_MARGIN 0.02  /* the other arm must be this much faster to take over */
#define STK_HW_ARM_MIN_SHARE 0.5 /* the split's share below which the engines alone are not tried */

enum { STK_HW_ARM_SPLIT = 0, STK_HW_ARM_ENGINES = 1 };

typedef struct {
  double load;    /* the split's share of the engine-capable samples, in [MIN, 1] */
  double rate[2]; /* pixels per second of whole batches, per arm */
  long count[2];  /* batches measured per arm */
  long planned;   /* batches planned so far */
  long since;     /* batches since the other arm was last played */
  long switches;  /* times the played arm changed */
  int best;       /* the arm played (after the warm-up) */
  int arm;        /* the arm of the batch planned last */
} stk_hw_balance;

static inline void stk_hw_balance_init(stk_hw_balance *b) {
  b->load = STK_HW_BALANCE_START;
  b->rate[0] = b->rate[1] = 0;
  b->count[0] = b->count[1] = 0;
  b->planned = b->since = b->switches = 0;
  b->best = STK_HW_ARM_SPLIT;
  b->arm = STK_HW_ARM_SPLIT;
}

/* The engines' share for the next batch: the split's, or 1 when it plays the engines
 * alone. */
static inline int stk_hw_balance_warming(const stk_hw_balance *b) {
  return b->count[0] < STK_HW_ARM_WARMUP || b->count[1] < STK_HW_ARM_WARMUP;
}

static inline double stk_hw_balance_plan(stk_hw_balance *b) {
  long k = b->planned++;
  if (b->load < STK_HW_ARM_MIN_SHARE) {
    b->arm = b->best = STK_HW_ARM_SPLIT;
  } else if (stk_hw_balance_warming(b)) {
    b->arm = (int)(k % 2);
  } else {
    double lo = b->rate[!b->best], ratio = lo > 0 ? b->rate[b->best] / lo : 8;
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
  if (arm == STK_HW_ARM_SPLIT) stk_hw_balance_split(b, hw_pixels, hw_seconds, hybrid_pixels, hybrid_seconds);
  if (batch_seconds <= 0 || hw_pixels + hybrid_pixels <= 0) return;
  double rate = (hw_pixels + hybrid_pixels) / batch_seconds;
  long n = ++b->count[arm];
  double gain = n <= STK_HW_ARM_WARMUP ? 1.0 / (double)n /* the mean of the warm-up */
                : arm == b->best        ? STK_HW_ARM_GAIN
                                        : STK_HW_ARM_EXPLORE_GAIN;
  b->rate[arm] += gain * (rate - b->rate[arm]);
  if (stk_hw_balance_warming(b)) return;
  int other = !b->best;
  if (b->rate[other] > b->rate[b->best] * (1 + STK_HW_ARM_MARGIN)) {
    b->best = other;
    b->switches++;
  }
}

#endif
