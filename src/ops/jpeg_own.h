/* The mixed decoders' third path: stoker's own GPU JPEG decoder (src/cuda/api_jpeg.h),
 * beside nvJPEG's hardware engines and the CPU stage's libjpeg-turbo share.
 *
 * The CPU stage parses every JPEG the decoder takes into a host pool block (page-locked
 * in GPU pipelines): the frame, the Huffman tables and the un-stuffed scan. The decode
 * thread then gives the first `take` of a batch's parsed samples to the decoder, launched
 * before nvJPEG's batched call so that the CUDA cores decode while the engines do, and
 * collects its verdicts after that call. The share follows gpu_decoder_load: fixed, or
 * automatic (a balance of the two paths' measured rates, below). */
#ifndef STOKER_OPS_JPEG_OWN_H
#define STOKER_OPS_JPEG_OWN_H

#include "../cuda/gpu_kernels.h"
#include "../shared/jpeg_parsed.h"
#include "op.h"
#include "op_gpu.h"

/* The automatic share: the decode of a batch takes as long as the slower path, so the
 * best share for the own decoder is r_own / (r_own + r_hw), r being each path's images
 * per second as measured while both run (the own decoder's device time between two
 * events; the engines' call's host time). Each batch moves the share part of the way
 * there (an exponential average rides out single batches' noise); a path that got no
 * samples is given some (STK_OWN_PROBE) so that it can be timed. */
#define STK_OWN_START 0.25
#define STK_OWN_MIN   0.02
#define STK_OWN_GAIN  0.3
#define STK_OWN_PROBE 0.05

typedef struct {
  double share;       /* of the batch's parsed, engine-capable samples */
  double r_own, r_hw; /* images per second, 0 until measured */
} stk__own_balance;

void stk__own_balance_init(stk__own_balance *b);
/* Samples of `capable` the own decoder takes: round(load x capable) for load in [0, 1],
 * the balance's share for load < 0. */
int stk__own_balance_take(const stk__own_balance *b, double load, int capable);
/* One batch's measurements: k_own images in own_s seconds of device time, k_hw in hw_s
 * of the engines' call. */
void stk__own_balance_update(stk__own_balance *b, int k_own, double own_s, int k_hw, double hw_s);

/* Per-node state: the balance and the device objects of the launches. */
typedef struct stk__jpeg_own stk__jpeg_own;
stk_status stk__jpeg_own_create(stk__jpeg_own **out);
void stk__jpeg_own_destroy(stk__jpeg_own *o);
const stk__own_balance *stk__jpeg_own_balance(const stk__jpeg_own *o);

/* CPU stage: `data` parsed into a pool block of the node's, or NULL when the decoder does
 * not take the file (progressive, CMYK, truncated, ...: nvJPEG or the CPU decoder will)
 * or the pool has no memory. Free with stk__node_pool_free. */
stk_jpeg_parsed *stk__jpeg_own_parse(stk__node *node, const uint8_t *data, size_t size);

/* Decode thread: queues the decoding of k samples on the batch's stream (no wait). */
stk_status stk__jpeg_own_launch(stk__jpeg_own *o, stk__node *node, stk__gpu_batch *b, int k,
                                const stk_gpu_jpeg_decode_sample *samples, int color);
/* Then, after nvJPEG's call: waits for the launch's device work, writes its verdicts to
 * status[0..k) (STK_GPU_DECODE_OK or FAILED) and feeds the balance (the engines took k_hw
 * images in hw_s seconds). */
stk_status stk__jpeg_own_finish(stk__jpeg_own *o, stk__node *node, stk__gpu_batch *b, int k,
                                int k_hw, double hw_s, int *status);

#endif
