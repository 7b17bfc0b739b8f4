/*
 * The batch plumbing shared by the GPU backends of the colour operators (the run_gpu
 * functions of color.c and color_pil.c): each operator supplies a per-sample plan (which
 * kernel, its parameters, read with stk__arg_* for that sample exactly as the CPU path
 * reads them), and stk__color_run_gpu does the rest: device input, validation, output
 * allocation, one API call (api_color.h) for the whole batch.
 */
#ifndef STOKER_OPS_COLOR_GPU_H
#define STOKER_OPS_COLOR_GPU_H

#include "../cuda/api_color.h"
#include "color.h"
#include "gpu_util.h"

/* Which colour kernel (clr_* of gpu_kernels.h) runs the batch (every sample must choose the same).
 */
typedef enum {
  STK__CG_LUT,
  STK__CG_POINT,
  STK__CG_PIXEL,
  STK__CG_STATS,
  STK__CG_SHARPNESS
} stk__cg_kind;

/* Input sample i as the plan function sees it. */
typedef struct {
  int h, w, c, ndim;
  stk_dtype dtype;
} stk__cg_in;

/* What a plan function fills in for one sample. The driver presets out_dtype = input
 * dtype, out_c = c, out_ndim = ndim and lut (room for c * 256 entries of any dtype). */
typedef struct {
  stk__cg_kind kind;
  int mode; /* pixel / stats mode */
  stk_dtype out_dtype;
  int out_c, out_ndim; /* output channels; 2 (HW) or 3 (HWC) dimensions */
  void *lut;           /* STK__CG_LUT: c tables of 256 out_dtype values to fill */
  int point_op;        /* STK__CG_POINT */
  double p[4];         /* point / stats parameters */
  double m[9], off[3]; /* STK__CG_PIXEL (affine) */
  float factor;        /* Pillow factors (pixel, sharpness) */
} stk__cg_plan;

typedef stk_status (*stk__cg_plan_fn)(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                      stk__cg_plan *plan);

/* Runs a colour operator on a GPU batch: inputs of `types` (ntypes of them), HWC or HW. */
stk_status stk__color_run_gpu(stk__node *node, stk__gpu_batch *b, const stk_dtype *types,
                              int ntypes, stk__cg_plan_fn plan);

/* Fills a typed table the way stk__point_map does for uint8 input: c tables of f(v, ch)
 * converted to `dtype` with stk__convert. */
void stk__point_lut(stk__point_fn f, const void *ctx, int64_t c, stk_dtype dtype, void *typed);

#endif
