/*
 * The machinery shared by the per-pixel image effects (effects_warp.c, effects_window.c,
 * clahe.c): an operator describes one sample as a plan (output shape and type plus the
 * stk_fx_params of src/shared/effects_px.h); the CPU backend evaluates stk_fx_eval for
 * every output element and the GPU backend hands the same plans to
 * stk_gpu_effects_api.pixel, whose kernel calls the same function.
 */
#ifndef STOKER_OPS_EFFECTS_COMMON_H
#define STOKER_OPS_EFFECTS_COMMON_H

#include "../cuda/api_effects.h"
#include "gpu_util.h"
#include "image_util.h"

typedef struct {
  int64_t out_h, out_w, out_c;
  stk_dtype out_dtype;
  stk_fx_params p;
  double clahe_clip; /* clahe: clip limit (relative, > 0) */
  /* GPU only: every sample of input 0 (device data), for operators that read other
   * samples of the batch (multi_paste's in_ids); NULL on the CPU. */
  const stk__tensor *batch0;
  size_t batch_n;
} stk__fx_plan;

/* Fills the plan of one sample. `in` describes input 0 (its data may be device memory:
 * read only its shape and type); `extra` holds inputs 1.. (remap's maps) likewise, with
 * n_extra of them. The plan starts zeroed with out_* = the input's shape and type. */
typedef stk_status (*stk__fx_plan_fn)(stk__node *node, stk__sample *s, const stk__image *in,
                                      const stk__tensor *const *extra, int n_extra,
                                      stk__fx_plan *plan);

/* The input types the effects take (uint8, uint16, int16, float32), as a list for
 * stk__fx_run_*'s `dtypes`. */
extern const stk_dtype stk__fx_all_dtypes[4];

/* Runs one sample on the CPU: input 0 as an image with one of `dtypes` (ndtypes),
 * the plan, then every output element. */
stk_status stk__fx_run_cpu(stk__node *node, stk__sample *s, const stk_dtype *dtypes, int ndtypes,
                           stk__fx_plan_fn plan);
/* The same for the whole batch on the GPU. */
stk_status stk__fx_run_gpu(stk__node *node, stk__gpu_batch *b, const stk_dtype *dtypes, int ndtypes,
                           stk__fx_plan_fn plan);

/* The same with inputs 1.. handed to the plan as they come (`upload_extra` false: a
 * CPU producer's list stays in host memory, for arguments read on the host) or uploaded
 * (true, what stk__fx_run_gpu does). */
stk_status stk__fx_run_gpu_inputs(stk__node *node, stk__gpu_batch *b, const stk_dtype *dtypes,
                                  int ndtypes, stk__fx_plan_fn planf, bool upload_extra);

/* clahe's tile extents for an h x w image (OpenCV's: the image padded by mirroring to
 * whole tiles when the tiles do not divide it). */
void stk__fx_clahe_tiles(stk__fx_plan *plan, int64_t h, int64_t w);

/* Parses a border-mode name (STK_FX_BORDER_CHOICES). */
int stk__fx_border_parse(const char *name);
/* Parses an interpolation name ("nearest", "linear", "cubic"); -1 for others. */
int stk__fx_interp_parse(const char *name);

#endif
