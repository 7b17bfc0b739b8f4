#include <stdio.h>
#include <stdlib.h>
#include "gpu_util.h"
#include "image_util.h"

#include <string.h>

stk_status stk__gpu_require(const stk__node *node, const stk__gpu_batch *b, stk_gpu_kernel kernel) {
  const stk__gpu *g = stk__gpu_device(b);
  if (g->api->supports(g->ctx, (int)kernel)) return STK_OK;
  return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: the GPU backend has no kernel '%s'",
                  stk__node_name(node), g->api->kernels[kernel].name);
}

stk_status stk__gpu_op_check(const stk__node *node, int rc, const char *err) {
  if (rc == 0) return STK_OK;
  return STK_FAIL((stk_status)rc, "%s: %s", stk__node_name(node),
                  err && *err ? err : "GPU call failed");
}

bool stk__gpu_shapes_equal(const int64_t *shapes, size_t n, int ndim) {
  for (size_t i = 1; i < n; i++)
    if (memcmp(shapes, shapes + i * (size_t)ndim, sizeof(int64_t) * (size_t)ndim) != 0)
      return false;
  return true;
}

stk_status stk__gpu_finish(stk__gpu_batch *b, stk_tensor_list *in, bool owned, stk_tensor_list *out,
                           stk_status st) {
  if (owned) stk_tensor_list_release(in);
  if (st != STK_OK) {
    stk_tensor_list_release(out);
    return st;
  }
  return stk__gpu_output(b, 0, out);
}

stk_status stk__gpu_image_dims(const stk__node *node, const stk_tensor_list *tl, size_t i, int *h,
                               int *w, int *c, void **data) {
  stk_tensor_desc d;
  STK_TRY(stk_tensor_list_sample(tl, i, &d));
  if (d.ndim != 3 && d.ndim != 2)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: sample %zu has %d dimensions; an HWC or HW image expected",
                    stk__node_name(node), i, d.ndim);
  if (d.shape[0] > INT32_MAX || d.shape[1] > INT32_MAX || (d.ndim == 3 && d.shape[2] > 4))
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "%s: sample %zu: %lld x %lld x %lld is not supported on the GPU",
                    stk__node_name(node), i, (long long)d.shape[0], (long long)d.shape[1],
                    (long long)(d.ndim == 3 ? d.shape[2] : 1));
  *h = (int)d.shape[0];
  *w = (int)d.shape[1];
  *c = d.ndim == 3 ? (int)d.shape[2] : 1;
  *data = d.data;
  return STK_OK;
}

stk_status stk__gpu_device_input(stk__gpu_batch *b, int index, stk_tensor_list **out, bool *owned) {
  stk_tensor_list *in = stk__gpu_input(b, index);
  *owned = false;
  if (stk_tensor_list_storage(in) == STK_STORAGE_DEVICE) {
    *out = in;
    return STK_OK;
  }
  size_t n = stk_tensor_list_num_samples(in);
  int ndim = stk_tensor_list_ndim(in);
  int64_t *shapes = stk__calloc(n * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
  }
  stk_tensor_list *dev;
  stk_status st =
      stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), ndim, shapes, stk_tensor_list_layout(in),
                          stk_tensor_list_is_dense(in) != 0, &dev);
  free(shapes);
  if (st != STK_OK) return st;
  /* Through pinned staging: one host copy into a pinned block, one asynchronous upload;
   * the block is reused only after the stream has passed the copy. */
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  uintptr_t stream = stk__gpu_stream(b);
  size_t esize = stk_dtype_size(stk_tensor_list_dtype(in)), total = 0;
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    size_t bytes = esize;
    for (int k = 0; k < ndim; k++) bytes *= (size_t)d.shape[k];
    total += bytes;
  }
  char *pinned = NULL;
  if (total)
    st =
        stk__gpu_check(g->api->pinned_alloc(g->ctx, total, (void **)&pinned, err, sizeof err), err);
  size_t off = 0;
  for (size_t i = 0; i < n && st == STK_OK && total; i++) {
    stk_tensor_desc s, d;
    stk_tensor_list_sample(in, i, &s);
    stk_tensor_list_sample(dev, i, &d);
    size_t bytes = esize;
    for (int k = 0; k < ndim; k++) bytes *= (size_t)s.shape[k];
    if (!bytes) continue;
    memcpy(pinned + off, s.data, bytes);
    st = stk__gpu_check(
        g->api->memcpy_async(g->ctx, d.data, pinned + off, bytes, stream, err, sizeof err), err);
    off += bytes;
  }
  if (pinned) g->api->pinned_free(g->ctx, pinned, &stream, NULL, 0);
  if (st != STK_OK) {
    stk_tensor_list_release(dev);
    return st;
  }
  *out = dev;
  *owned = true;
  return STK_OK;
}

stk__gpu_resample_plan_fn stk__gpu_resample_plan_of(const stk__node *node) {
  const struct stk__gpu_fusion *f = stk__node_def(node)->fusion;
  if (stk__node_device(node) != STK_DEVICE_GPU || !f) return NULL;
  return f->resample_plan;
}

bool stk__gpu_resample_defers(stk__gpu_batch *b, stk__node *node) {
  stk__node *c = stk__gpu_sole_consumer(b, node, 0);
  /* branches run on sub-batches of their own: no fusion across a condition */
  if (stk__node_num_guards(node) || (c && stk__node_num_guards(c))) return false;
  const struct stk__gpu_fusion *f = c ? stk__node_def(c)->fusion : NULL;
  return f && f->absorbs_resampling && stk__node_device(c) == STK_DEVICE_GPU &&
         f->absorbs_resampling(c);
}

stk_status stk__gpu_run_resample(stk__node *node, stk__gpu_batch *b,
                                 stk__gpu_resample_plan_fn plan) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  if (stk__gpu_resample_defers(b, node)) { /* the consumer runs this plan fused */
    if (!owned) stk_tensor_list_retain(in);
    return stk__gpu_output(b, 0, in);
  }
  stk_gpu_resample_sample *samples = stk__calloc(n, sizeof *samples, "a resample plan");
  int64_t *shapes = stk__calloc(3 * n, sizeof(int64_t), "shapes");
  stk_gpu_resample_args args = {0};
  stk_status rc =
      samples && shapes ? plan(node, b, in, samples, shapes, &args) : STK_ERR_OUT_OF_MEMORY;
  if (rc == STK_OK)
    rc = stk__gpu_alloc_list(b, args.out_dtype, 3, shapes, "HWC",
                             stk__gpu_shapes_equal(shapes, n, 3), &out);
  if (rc == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      samples[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    rc = stk__gpu_op_check(node,
                           stk_gpu_run_resample(g->api, g->ctx, (int)n, samples, &args,
                                                stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(samples);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, rc);
}

stk_status stk__gpu_resample_source(const stk__node *node, stk__gpu_batch *b,
                                    const stk_tensor_list *in, size_t i, int *channels,
                                    stk__image *img, stk_gpu_resample_sample *smp) {
  int h, w, c;
  void *data;
  STK_TRY(stk__gpu_image_dims(node, in, i, &h, &w, &c, &data));
  if (i == 0)
    *channels = c;
  else if (c != *channels)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "%s: sample %zu has %d channels, sample 0 %d: the GPU resampling needs one "
                    "channel count per batch",
                    stk__node_name(node), i, c, *channels);
  *img = (stk__image){data, stk_tensor_list_dtype(in), h, w, c};
  *smp = (stk_gpu_resample_sample){.src = data,
                                   .src_pitch = (size_t)w * (size_t)c * stk_dtype_size(img->dtype),
                                   .src_h = h,
                                   .src_w = w};
  return STK_OK;
}

void stk__gpu_resample_target(stk_gpu_resample_sample *smp, int64_t *shape, int64_t out_h,
                              int64_t out_w, int channels, double x0, double y0, double x1,
                              double y1) {
  smp->dst_h = (int)out_h, smp->dst_w = (int)out_w;
  smp->x0 = x0, smp->y0 = y0, smp->x1 = x1, smp->y1 = y1;
  shape[0] = out_h, shape[1] = out_w, shape[2] = channels;
}

stk_status stk__gpu_check_image_layout(const stk__node *node, const stk_tensor_list *in) {
  int nd = stk_tensor_list_ndim(in);
  const char *l = stk_tensor_list_layout(in);
  bool ok =
      (nd == 3 && (!*l || strcmp(l, "HWC") == 0)) || (nd == 2 && (!*l || strcmp(l, "HW") == 0));
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "expects HWC images, got %d dimensions with layout '%s'", nd, l);
  return STK_OK;
}
