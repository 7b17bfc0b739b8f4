/* GPU helpers of the audio operators (audio_gpu.h). */
#include "audio_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "image_util.h"

stk_status stk__audio_gpu_sample(const stk__node *node, stk__gpu_batch *b,
                                 const stk_tensor_list *in, size_t i, stk__tensor *t) {
  stk_tensor_desc d;
  stk_tensor_list_sample(in, i, &d);
  if (d.dtype != STK_DTYPE_FLOAT32)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, stk__gpu_sample(b, i),
                      "the GPU backend takes float32 input; got %s (cast it first)",
                      stk_dtype_name(d.dtype) ? stk_dtype_name(d.dtype) : "?");
  *t = (stk__tensor){d.data, d.ndim, {0}, d.dtype, {0}};
  memcpy(t->shape, d.shape, sizeof t->shape);
  memcpy(t->layout, d.layout, sizeof t->layout);
  return STK_OK;
}

stk_status stk__audio_gpu_output(stk__gpu_batch *b, const stk_tensor_list *in, int ndim,
                                 const int64_t *shapes, stk_tensor_list **out) {
  size_t n = stk__gpu_batch_size(b);
  return stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), out);
}

void *stk__audio_gpu_data(const stk_tensor_list *tl, size_t i) {
  stk_tensor_desc d;
  stk_tensor_list_sample(tl, i, &d);
  return d.data;
}

/* Plans sample i: descriptor and output shape. */
static stk_status matrix_sample(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                size_t i, stk__audio_matrix_plan plan,
                                stk_gpu_audio_matrix_sample *ms, int64_t *shape) {
  stk__tensor t;
  STK_TRY(stk__audio_gpu_sample(node, b, in, i, &t));
  int ax = 0;
  int64_t rows = 0;
  double *w = NULL;
  STK_TRY(plan(node, stk__gpu_sample(b, i), &t, &ax, &rows, &w));
  *ms = (stk_gpu_audio_matrix_sample){t.data, NULL, 1, t.shape[ax], 1, rows, w};
  for (int d = 0; d < t.ndim; d++) {
    shape[d] = d == ax ? rows : t.shape[d];
    if (d < ax) ms->outer *= t.shape[d];
    if (d > ax) ms->inner *= t.shape[d];
  }
  return STK_OK;
}

stk_status stk__audio_gpu_matrix(stk__node *node, stk__gpu_batch *b, stk__audio_matrix_plan plan) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_audio_matrix_sample *ms = stk__calloc(n ? n : 1, sizeof *ms, "a matrix plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  stk_status st = ms && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++)
    st = matrix_sample(node, b, in, i, plan, &ms[i], shapes + i * (size_t)ndim);
  if (st == STK_OK) st = stk__audio_gpu_output(b, in, ndim, shapes, &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) ms[i].dst = stk__audio_gpu_data(out, i);
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_audio_matrix(g->api, g->ctx, (int)n, ms, NULL,
                                                    stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  if (ms)
    for (size_t i = 0; i < n; i++) free((void *)ms[i].weights);
  free(ms);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}
