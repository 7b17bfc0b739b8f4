/* The GPU backends of bb_flip and coord_flip (boxes.c holds the schemas and the CPU
 * backends): per-sample descriptors with the same arguments the CPU reads, one launch
 * (src/cuda/boxes.cu) running the same per-box functions (src/shared/box_math.h). */
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_boxes.h"
#include "box_util.h"
#include "boxes_gpu.h"
#include "gpu_util.h"

/* Checks sample i of a device list like stk__box_input (coords values per row). */
static stk_status gpu_rows(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in, size_t i,
                           int coords, stk_tensor_desc *d, int64_t *n) {
  stk_tensor_list_sample(in, i, d);
  stk__tensor t = {d->data, d->ndim, {0}, d->dtype, {0}};
  memcpy(t.shape, d->shape, sizeof t.shape);
  return stk__box_input(node, stk__gpu_sample(b, i), &t, coords, n);
}

/* The output list: the input's shapes, float32. */
static stk_status same_shapes(stk__gpu_batch *b, const stk_tensor_list *in, stk_tensor_list **out) {
  size_t n = stk__gpu_batch_size(b);
  int ndim = stk_tensor_list_ndim(in);
  int64_t *shapes = stk__calloc(n * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
  }
  stk_status st =
      stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, ndim, shapes, stk_tensor_list_layout(in),
                          stk__gpu_shapes_equal(shapes, n, ndim), out);
  free(shapes);
  return st;
}

static float *out_data(const stk_tensor_list *out, size_t i) {
  stk_tensor_desc d;
  stk_tensor_list_sample(out, i, &d);
  return d.data;
}

stk_status stk__bb_flip_gpu(stk__node *node, stk__gpu_batch *b, int a_h, int a_v, int a_ltrb) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_bb_flip_sample *fs = stk__calloc(n ? n : 1, sizeof *fs, "a bb_flip plan");
  stk_status st = fs ? same_shapes(b, in, &out) : STK_ERR_OUT_OF_MEMORY;
  bool ltrb = stk__arg_bool(node, NULL, a_ltrb);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    int64_t count = 0;
    st = gpu_rows(node, b, in, i, 4, &d, &count);
    stk__sample *s = stk__gpu_sample(b, i);
    fs[i] = (stk_gpu_bb_flip_sample){d.data,
                                     out_data(out, i),
                                     count,
                                     ltrb,
                                     stk__arg_int(node, s, a_h) != 0,
                                     stk__arg_int(node, s, a_v) != 0};
  }
  if (st == STK_OK) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    int rc =
        stk_gpu_run_bb_flip(g->api, g->ctx, (int)n, fs, NULL, stk__gpu_stream(b), err, sizeof err);
    st = stk__gpu_op_check(node, rc, err);
  }
  free(fs);
  return stk__gpu_finish(b, in, owned, out, st);
}

stk_status stk__coord_flip_gpu(stk__node *node, stk__gpu_batch *b,
                               const stk__coord_flip_gpu_args *a) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_coord_flip_sample *fs = stk__calloc(n ? n : 1, sizeof *fs, "a coord_flip plan");
  stk_status st = fs ? same_shapes(b, in, &out) : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    stk__sample *s = stk__gpu_sample(b, i);
    stk__tensor t = {d.data, d.ndim, {0}, d.dtype, {0}};
    memcpy(t.shape, d.shape, sizeof t.shape);
    st = a->check(node, s, &t, fs[i].axes, &fs[i].spec);
    fs[i].src = d.data, fs[i].dst = out_data(out, i);
    fs[i].count = d.ndim == 2 ? d.shape[0] : 0, fs[i].d = d.ndim == 2 ? (int)d.shape[1] : 1;
  }
  if (st == STK_OK) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    int rc = stk_gpu_run_coord_flip(g->api, g->ctx, (int)n, fs, NULL, stk__gpu_stream(b), err,
                                    sizeof err);
    st = stk__gpu_op_check(node, rc, err);
  }
  free(fs);
  return stk__gpu_finish(b, in, owned, out, st);
}
