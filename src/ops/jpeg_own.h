/* The mixed decoders' third path: stoker's own GPU JPEG decoder (src/cuda/api_jpeg.h),
 * beside nvJPEG's hardware engines and the CPU stage's libjpeg-turbo share.
 *
 * The CPU stage parses every JPEG the decoder takes into a host pool block (page-locked
 * in GPU pipelines): the frame, the Huffman tables and the un-stuffed scan. The decode
 * thread then gives the decoder its share of a batch's parsed samples (gpu_decoder_load,
 * decoders.c), has a launcher thread queue it (so that its host work is off the thread
 * feeding nvJPEG) before nvJPEG's call, and collects its verdicts after that call. */
#ifndef STOKER_OPS_JPEG_OWN_H
#define STOKER_OPS_JPEG_OWN_H

#include "../cuda/gpu_kernels.h"
#include "../shared/jpeg_parsed.h"
#include "op.h"
#include "op_gpu.h"

/* Samples of `capable` the own decoder takes at `share` in [0, 1]. */
int stk__own_take(double share, int capable);
/* The same under the balancer (gpu_decoder_load -2): at least one sample when any is
 * capable and the share is above 0, so that the own decoder's timing keeps being measured
 * at small shares; none at 0 (a batch without it: own_balance.h, stk__own_gain). */
int stk__own_take_balanced(double share, int capable);

/* Per-node state: the launcher thread and the launch in flight. */
typedef struct stk__jpeg_own stk__jpeg_own;
stk_status stk__jpeg_own_create(stk__jpeg_own **out);
void stk__jpeg_own_destroy(stk__jpeg_own *o);

/* The balancer's state (gpu_decoder_load -2, own_balance.h): the share the next batch
 * takes (0 for a batch without the own decoder: a probe, or while it sits out), and its
 * update after a batch by the decode thread from the engines' call time, the wait for the
 * own decoder after it (0 without it) and the JPEGs both decoded. */
double stk__jpeg_own_balanced_share(stk__jpeg_own *o);
void stk__jpeg_own_balance(stk__jpeg_own *o, double engines_s, double own_wait_s, int images);

/* CPU stage: `data` parsed into a pool block of the node's, or NULL when the decoder does
 * not take the file (progressive, CMYK, truncated, ...: nvJPEG or the CPU decoder will)
 * or the pool has no memory. Free with stk__node_pool_free. */
stk_jpeg_parsed *stk__jpeg_own_parse(stk__node *node, const uint8_t *data, size_t size);
/* The same into a block from alloc(alloc_ctx, bytes) (NULL: no memory). */
stk_jpeg_parsed *stk__jpeg_parse_block(const uint8_t *data, size_t size,
                                       void *(*alloc)(void *ctx, size_t bytes), void *alloc_ctx);

/* Decode thread: queues the decoding of k samples on the batch's stream (no wait). */
stk_status stk__jpeg_own_launch(stk__jpeg_own *o, stk__node *node, stk__gpu_batch *b, int k,
                                const stk_gpu_jpeg_decode_sample *samples, int color);
/* Then, after nvJPEG's call: waits for the launch's device work and writes its verdicts
 * to status[0..k) (STK_GPU_DECODE_OK or FAILED). */
stk_status stk__jpeg_own_finish(stk__jpeg_own *o, stk__node *node, stk__gpu_batch *b, int k,
                                int *status);

#endif
