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

#endif
