/* Helpers shared by the GPU backends of operators (the run_gpu functions). */
#ifndef STOKER_OPS_GPU_UTIL_H
#define STOKER_OPS_GPU_UTIL_H

#include "op_gpu.h"
#include "op.h"
#include "resample.h"

/* Input `index` as a device list: host lists (CPU edges) are uploaded through the copy
 * path; *owned is true when the caller must release the returned list. */
stk_status stk__gpu_device_input(stk__gpu_batch *b, int index, stk_tensor_list **out, bool *owned);

/* The end of a run_gpu: releases an uploaded input (`owned`), then hands `out` over as
 * output 0 when `st` is STK_OK, else releases it and returns `st`. */
stk_status stk__gpu_finish(stk__gpu_batch *b, stk_tensor_list *in, bool owned, stk_tensor_list *out,
                           stk_status st);

/* Geometry of sample i of an HWC (or HW) list: h, w, c and the element type. */
stk_status stk__gpu_image_dims(const stk__node *node, const stk_tensor_list *tl, size_t i, int *h,
                               int *w, int *c, void **data);

/* The GPU form of stk__image_input's layout check: HWC (3 dims) or HW (2 dims) images,
 * or no layout; else an error naming the operator. */
stk_status stk__gpu_check_image_layout(const stk__node *node, const stk_tensor_list *in);

/* Calls an API function's result check with the operator's name in the message. */
stk_status stk__gpu_op_check(const stk__node *node, int rc, const char *err);
/* STK_OK when the device's backend has `kernel` (api->supports), else STK_ERR_UNSUPPORTED
 * naming the operator and the kernel: for operators to ask before they plan a batch. */
stk_status stk__gpu_require(const stk__node *node, const stk__gpu_batch *b, stk_gpu_kernel kernel);

/* True when every sample has the same shape (the output can be one dense block). */
bool stk__gpu_shapes_equal(const int64_t *shapes, size_t n, int ndim);

/* ---- fusion of resampling into crop_mirror_normalize ----
 * resize and random_resized_crop on the GPU whose only reader is a GPU
 * crop_mirror_normalize without a crop pass their input through untouched; the
 * normalisation then runs the producer's resampling plan with its own output stage, so
 * random_resized_crop + flip + normalise + cast takes two launches. */
typedef stk_status (*stk__gpu_resample_plan_fn)(stk__node *node, stk__gpu_batch *b,
                                                const stk_tensor_list *in,
                                                stk_gpu_resample_sample *samples, int64_t *shapes,
                                                stk_gpu_resample_args *args);
/* A GPU operator's part in a fusion (stk__op_def.fusion): a resampling producer gives
 * its plan; a consumer says whether it can run a producer's plan with its own output
 * stage. */
struct stk__gpu_fusion {
  stk__gpu_resample_plan_fn resample_plan;           /* producers */
  bool (*absorbs_resampling)(const stk__node *node); /* consumers */
};
/* True when the running resampling node may defer to its consumer. */
bool stk__gpu_resample_defers(stk__gpu_batch *b, stk__node *node);
/* The resampling plan of a GPU node whose operator has one (its fusion's), else NULL. */
stk__gpu_resample_plan_fn stk__gpu_resample_plan_of(const stk__node *node);

/* Sample i of a resampling operator's input as an image and as the kernel's source
 * (one channel count per batch: *channels is set by sample 0 and checked after). */
stk_status stk__gpu_resample_source(const stk__node *node, stk__gpu_batch *b,
                                    const stk_tensor_list *in, size_t i, int *channels,
                                    stk__image *img, stk_gpu_resample_sample *smp);
/* The source window [x0, x1) x [y0, y1) of a sample and its out_h x out_w HWC output. */
void stk__gpu_resample_target(stk_gpu_resample_sample *smp, int64_t *shape, int64_t out_h,
                              int64_t out_w, int channels, double x0, double y0, double x1,
                              double y1);

/* Runs a resampling node on its own: plan, allocate, one resample call. */
stk_status stk__gpu_run_resample(stk__node *node, stk__gpu_batch *b,
                                 stk__gpu_resample_plan_fn plan);

/* cast.c: input 0 converted to `dtype` as stk__convert does (the cast kernel). */
stk_status stk__gpu_cast_to(stk__node *node, stk__gpu_batch *b, stk_dtype dtype);

#endif
