/* The own GPU JPEG decoder's balancer (own_balance.h).
 *
 * Model: per batch the engines take (1 - s) of the work and the own decoder s, each at a
 * rate of its own that the balancer does not know and that drifts (the GPU, the files,
 * the training beside it). Both start together; the best share has both finish together,
 * s* = r_own / (r_own + r_engines) (two servers in parallel).
 *
 * - The own decoder late (it finished own_wait_s after the engines' call, engines_s long):
 *   the batch measured both rates, r_engines ~ (1 - s) / e and r_own ~ s / (e + w), so
 *   s* ~ s e / (s e + (1 - s)(e + w)), which is below s whenever w > 0. The share moves
 *   GAIN of the way there (a single noisy batch must not throw it far) and the probe step
 *   restarts small.
 * - The own decoder on time (waits under LATE x engines_s count as on time: the host's
 *   timing noise): its own time is unknown, only that it was short enough, so the share
 *   probes upward by `step`, which grows by GROW while it keeps up (from 0.3 the balance
 *   is found in a few tens of batches) up to STEP_MAX.
 *
 * Why the probe restarts small, in proportion to s (1 - s): a share dS above s* makes the
 * batch late by dS / (s* (1 - s*)) of the engines' time, so that size of step costs about
 * the same fraction of throughput at every balance point. The suggested alternative, a
 * fixed 0.02 step, costs 7% with an own decoder 6x slower than the engines and 24% at 30x
 * slower in a simulation of this model (this one: 2% and 3.5%; tests/c/test_own_balance.c
 * checks convergence and the overshoot's bound). */
#include "own_balance.h"

#include <math.h>

#define LATE     0.02 /* waits under this fraction of the engines' time are noise */
#define GAIN     0.7  /* of the way to the estimate, per late batch */
#define GROW     1.5  /* the probe step's growth per on-time batch */
#define STEP_MAX 0.03 /* the largest probe: bounds the overshoot after a long climb */

static double clamp_share(double s) {
  return s < STK__OWN_BALANCE_MIN   ? STK__OWN_BALANCE_MIN
         : s > STK__OWN_BALANCE_MAX ? STK__OWN_BALANCE_MAX
                                    : s;
}

/* The first probe after a correction: about 1% of the engines' time late if it
 * overshoots (see above), and at least 0.001 so that the climb starts. */
static double base_step(double s) {
  double step = 0.01 * s * (1 - s);
  return step < 0.001 ? 0.001 : step;
}

stk__own_balance stk__own_balance_start(void) {
  return (stk__own_balance){STK__OWN_BALANCE_START, base_step(STK__OWN_BALANCE_START)};
}

/* The share at which both would have finished together, from a batch where the own
 * decoder was late; 0 when it never finished. */
static double balanced_estimate(double s, double e, double w) {
  if (isinf(w)) return 0;
  return s * e / (s * e + (1 - s) * (e + w));
}

stk__own_balance stk__own_balance_next(stk__own_balance b, double engines_s, double own_wait_s) {
  if (!isfinite(b.share)) b = stk__own_balance_start();
  b.share = clamp_share(b.share);
  if (!(b.step > 0) || !isfinite(b.step)) b.step = base_step(b.share);
  if (!(engines_s > 0) || !isfinite(engines_s) || !(own_wait_s >= 0)) return b;
  if (own_wait_s > LATE * engines_s) {
    double s = b.share + GAIN * (balanced_estimate(b.share, engines_s, own_wait_s) - b.share);
    b.share = clamp_share(s);
    b.step = base_step(b.share);
  } else {
    b.share = clamp_share(b.share + b.step);
    b.step = b.step * GROW > STEP_MAX ? STEP_MAX : b.step * GROW;
  }
  return b;
}

/* ---- whether it pays (own_balance.h) ---- */

#define WITH_SMOOTHING  0.2 /* per batch with the own decoder: about the last 5 */
#define ALONE_SMOOTHING 0.5 /* per probe: the probes are 16 batches apart */

static double smooth(double old, double x, double k) { return old > 0 ? old + k * (x - old) : x; }

int stk__own_gain_without(const stk__own_gain *g) {
  return g->batch < g->off_until || g->batch % STK__OWN_GAIN_PROBE == STK__OWN_GAIN_PROBE - 1;
}

stk__own_gain stk__own_gain_next(stk__own_gain g, double seconds, int images) {
  if (!(seconds > 0) || !isfinite(seconds) || images <= 0) return g;
  const double t = seconds / images;
  const int sitting_out = g.batch < g.off_until, probe = stk__own_gain_without(&g);
  g.batch++;
  if (sitting_out) return g;
  if (!probe) {
    g.t_with = smooth(g.t_with, t, WITH_SMOOTHING);
    return g;
  }
  g.t_alone = smooth(g.t_alone, t, ALONE_SMOOTHING);
  if (g.t_with <= 0) return g;
  /* one probe is one noisy batch: two in a row must say so */
  g.behind = g.t_with > (1 - STK__OWN_GAIN_KEEP) * g.t_alone ? g.behind + 1 : 0;
  if (g.behind >= 2) {
    g.off_until = g.batch + STK__OWN_GAIN_OFF;
    g.behind = 0;
    g.t_with = 0; /* measured afresh when it returns */
  }
  return g;
}
