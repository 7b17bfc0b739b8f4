/* Host helpers of the tensor toolbox (tensor_shape.c, tensor_slice.c, tensor_fill.c,
 * reductions.c, tensor_io.c): axis arguments, dense strides, running the shared copy
 * plans of src/shared/tensor_common.h on the CPU, and the GPU side's one-call helpers. */
#ifndef STOKER_OPS_TENSOR_UTIL_H
#define STOKER_OPS_TENSOR_UTIL_H

#include "../cuda/api_tensor.h"
#include "../shared/tensor_common.h"
#include "gpu_util.h"
#include "image_util.h"

/* Elements of a shape. */
int64_t stk__tn_volume(int ndim, const int64_t *shape);
/* Row-major element strides of a dense shape. */
void stk__tn_dense_strides(int ndim, const int64_t *shape, int64_t *stride);
/* A plan copying all of a dense `src` of `shape` into a dense `dst` of the same shape. */
void stk__tn_copy_init(stk_tn_copy *p, void *dst, const void *src, int ndim, const int64_t *shape);
/* Runs a copy plan on the CPU (row by row: the last axis is copied with memcpy). */
void stk__tn_copy_run(const stk_tn_copy *p, int esize);

/* The axes an operator works on, as a bit mask over the input's dimensions: `axes`
 * (indices; negative ones count from the end) when given, else `axis_names` (letters of
 * the input's layout) when given, else every axis (`all_default`) or none. a_axes or
 * a_names may be -1 (the operator lacks that argument). Errors name the argument. */
stk_status stk__tn_axes(stk__node *node, const stk__sample *s, const stk__tensor *in, int a_axes,
                        int a_names, bool all_default, unsigned *mask);
/* The layout of `in` with the axes of `mask` removed ("" when `in` has none). */
void stk__tn_layout_drop(const stk__tensor *in, unsigned mask, char *out);

/* A sample of a device list as an stk__tensor (data, shape, dtype, layout). */
void stk__tn_from_list(const stk_tensor_list *tl, size_t i, stk__tensor *t);

/* The node's inputs for one sample as consecutive tensors (at most STK_TN_MAX_INPUTS):
 * the plan and shape functions below take `in` pointing at the first, in[k] being input
 * k. CPU stage: from stk__input. GPU stage: sample i of each input list; inputs after the
 * first (anchors, shapes) must be CPU data there. */
#define STK_TN_MAX_INPUTS 3
int stk__tn_cpu_inputs(stk__node *node, stk__sample *s, stk__tensor *ins);
stk_status stk__tn_gpu_inputs(stk__node *node, stk__gpu_batch *b, stk_tensor_list *data, size_t i,
                              stk__tensor *ins);

/* GPU: runs `count` copy plans (their dst already set) in one launch. */
stk_status stk__tn_gpu_copy(stk__node *node, stk__gpu_batch *b, const stk_tn_copy *plans,
                            size_t count, int esize);
/* GPU operators whose output sample i is one copy plan of input sample i: `plan` fills
 * plan i (src, shape, strides, window, fill; dst is set here) and the output shape and
 * layout. `out_dtype` (STK_DTYPE_COUNT: the input's) converts the copies with the cast
 * kernel. */
typedef stk_status (*stk__tn_plan_fn)(stk__node *node, stk__sample *s, const stk__tensor *in,
                                      stk_tn_copy *plan, int *ndim, int64_t *shape, char *layout);
stk_status stk__tn_gpu_copy_op(stk__node *node, stk__gpu_batch *b, stk__tn_plan_fn plan,
                               stk_dtype out_dtype);

#endif
