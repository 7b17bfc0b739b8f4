/* The GPU side shared by the audio operators (their run_gpu functions): float32 device
 * inputs viewed as stk__tensor, one output list per batch, and the generic "matrix along
 * an axis" launch behind mel_filter_bank and mfcc. */
#ifndef STOKER_OPS_AUDIO_GPU_H
#define STOKER_OPS_AUDIO_GPU_H

#include "../cuda/api_audio.h"
#include "gpu_util.h"

/* Sample i of a device list as a tensor view; fails unless float32. */
stk_status stk__audio_gpu_sample(const stk__node *node, stk__gpu_batch *b,
                                 const stk_tensor_list *in, size_t i, stk__tensor *t);
/* Allocates the float32 output list (shapes: n x ndim) with the input's layout. */
stk_status stk__audio_gpu_output(stk__gpu_batch *b, const stk_tensor_list *in, int ndim,
                                 const int64_t *shapes, stk_tensor_list **out);
/* A device pointer of sample i of a list. */
void *stk__audio_gpu_data(const stk_tensor_list *tl, size_t i);

/* A matrix operator's plan of one sample: the axis transformed, the rows it gets, and
 * the rows x shape[axis] weights (malloc'd; the caller frees). The same function serves
 * the CPU run, so both backends use the same coefficients. */
typedef stk_status (*stk__audio_matrix_plan)(stk__node *node, stk__sample *s, const stk__tensor *in,
                                             int *axis, int64_t *rows, double **weights);
/* run_gpu of a matrix operator. */
stk_status stk__audio_gpu_matrix(stk__node *node, stk__gpu_batch *b, stk__audio_matrix_plan plan);

#endif /* STOKER_OPS_AUDIO_GPU_H */
