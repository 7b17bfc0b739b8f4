/* The GPU backends of the box operators (boxes_gpu.c), called by boxes.c's run_gpu. */
#ifndef STOKER_OPS_BOXES_GPU_H
#define STOKER_OPS_BOXES_GPU_H

#include "../shared/box_math.h"
#include "op_gpu.h"

/* bb_flip: a_h, a_v, a_ltrb are the argument indices of horizontal, vertical, ltrb. */
stk_status stk__bb_flip_gpu(stk__node *node, stk__gpu_batch *b, int a_h, int a_v, int a_ltrb);

typedef struct {
  /* Validates one sample's points as the CPU does and fills its axes and flip spec. */
  stk_status (*check)(stk__node *node, stk__sample *s, const stk__tensor *in, int axes[3],
                      stk__coord_flip_spec *spec);
} stk__coord_flip_gpu_args;

stk_status stk__coord_flip_gpu(stk__node *node, stk__gpu_batch *b,
                               const stk__coord_flip_gpu_args *a);

#endif
