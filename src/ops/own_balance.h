/* The balancer behind gpu_decoder_load = -2: the share of a batch's baseline JPEGs that
 * stoker's own GPU decoder takes beside nvJPEG's engines, adapted every batch so that the
 * own decoder finishes about when the engines' call returns (neither waits much for the
 * other). A pure function of its state and two host timings, so that it is tested without a
 * GPU (tests/c/test_own_balance.c). */
#ifndef STOKER_OPS_OWN_BALANCE_H
#define STOKER_OPS_OWN_BALANCE_H

#define STK__OWN_BALANCE_START 0.3  /* the share of the first batch */
#define STK__OWN_BALANCE_MIN   0.02 /* the own decoder keeps a few images: its timing is */
#define STK__OWN_BALANCE_MAX   0.95 /* measured, and nvJPEG's engines are never left idle */

typedef struct {
  double share; /* of the batch's JPEGs the own decoder takes, in [MIN, MAX] */
  double step;  /* the next upward probe, grown while the own decoder keeps up */
} stk__own_balance;

/* The state before the first batch: STK__OWN_BALANCE_START. */
stk__own_balance stk__own_balance_start(void);

/* The state for the next batch after one decoded with b.share: engines_s = wall time of
 * the engines' decode call (0 when it was skipped), own_wait_s = how long the decode
 * thread then waited for the own decoder (INFINITY: it never finished). NaN, negative or
 * zero engine times, and NaN or negative waits, leave the state as it is. */
stk__own_balance stk__own_balance_next(stk__own_balance b, double engines_s, double own_wait_s);

/* Whether the own decoder pays at all. Beside busy engines its kernels can slow them by
 * more than it adds (on the H100 with ~100 KB files the balanced pipeline ran at 0.91-0.98x
 * the engines alone), which finishing times cannot show. So every STK__OWN_GAIN_PROBE-th
 * batch runs without it (a probe), and the per-image decode time of those batches is
 * compared with that of the batches with it, both smoothed: when the own decoder does not
 * make batches at least STK__OWN_GAIN_KEEP faster per image at two probes in a row, it
 * sits out STK__OWN_GAIN_OFF batches, then tries again. */
#define STK__OWN_GAIN_PROBE 16
#define STK__OWN_GAIN_OFF   160
#define STK__OWN_GAIN_KEEP  0.03

typedef struct {
  long batch;     /* batches counted */
  long off_until; /* the own decoder sits out batches before this one */
  int behind;     /* probes in a row at which it did not pay */
  double t_with;  /* seconds per image with it, smoothed (0: none yet) */
  double t_alone; /* the same without it, over the probes */
} stk__own_gain;

/* Whether the coming batch runs without the own decoder (a probe, or sitting out). */
int stk__own_gain_without(const stk__own_gain *g);

/* The state after a batch run as stk__own_gain_without said: seconds = the engines' call
 * and the wait for the own decoder after it, images = the JPEGs both decoded. Zero,
 * negative or NaN inputs leave the state as it is (nothing was measured). */
stk__own_gain stk__own_gain_next(stk__own_gain g, double seconds, int images);

#endif
