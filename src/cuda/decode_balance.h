/* The automatic split of a batch between nvJPEG's hardware engines and its hybrid path
 * (hw_decoder_load < 0, the default).
 *
 * Both run at once: the decode threads take the hybrid share while the caller's thread
 * feeds the engines. A batch takes as long as the slower of the two, so the best share
 * for the engines is r_hw / (r_hw + r_hybrid), where r is each path's throughput in
 * pixels per second. Both rates depend on the machine (engines, cores, what else the CPU
 * stage is doing) and on the files, so they are measured on every batch and the share
 * moves a part of the way towards the balance each time (an exponential average, which
 * rides out the noise of single batches). A path that got no samples cannot be measured:
 * the share then steps towards it, so the next batch gives it a sample to time.
 *
 * Host-only C, shared by decode.cu and tests/c/test_decode_balance.c. */
#ifndef STK_DECODE_BALANCE_H
#define STK_DECODE_BALANCE_H

#define STK_HW_BALANCE_START 0.8 /* first share; 0.75 was the best fixed one on the H100 */
#define STK_HW_BALANCE_MIN 0.05  /* the engines always get some samples to time */
#define STK_HW_BALANCE_GAIN 0.3  /* how far each batch moves the share towards its balance */
#define STK_HW_BALANCE_PROBE 0.05 /* the step towards a path that got no samples */

typedef struct {
  double load; /* share of the engine-capable samples given to the engines, in [MIN, 1] */
} stk_hw_balance;

static inline void stk_hw_balance_init(stk_hw_balance *b) { b->load = STK_HW_BALANCE_START; }

/* One batch's measurements: pixels each path decoded and the seconds it took (the
 * engines: their batched call; the hybrid path: from its start until its last sample).
 * Returns the share for the next batch. */
static inline double stk_hw_balance_update(stk_hw_balance *b, double hw_pixels, double hw_seconds,
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

#endif
