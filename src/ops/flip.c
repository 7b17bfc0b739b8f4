/* flip: mirrors images horizontally and/or vertically (DALI's flip). Any dtype; the H
 * and W axes come from the layout (HWC, HW, CHW, ...), or HWC / HW when it is empty. */
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "image_util.h"

enum { A_HORIZONTAL, A_VERTICAL, A_DEPTHWISE, A_COUNT_ };

static const stk_arg_schema flip_args[] = {
    [A_HORIZONTAL] = {.name = "horizontal",
                      .type = STK_ARG_INT,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .default_text = "1",
                      .doc = "non-zero: mirror left-right"},
    [A_VERTICAL] = {.name = "vertical",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0",
                    .doc = "non-zero: mirror top-bottom"},
    [A_DEPTHWISE] = {.name = "depthwise",
                     .type = STK_ARG_INT,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .default_text = "0",
                     .doc = "non-zero: mirror along the layout's D axis (volumes: DHWC, CDHW, "
                            "FDHWC); no effect without one, as DALI. CPU only"},
};
STK__CHECK_ARGS(flip_args, A_COUNT_);

static const stk_port_schema flip_in[] = {{"input", "image with H and W axes (HWC, CHW, HW)"}};
static const stk_port_schema flip_out[] = {{"output", "the mirrored image"}};

/* Positions of the H and W axes. */
static bool find_hw(const stk__tensor *t, int *h, int *w) {
  const char *l = t->layout;
  if (!*l) {
    if (t->ndim != 2 && t->ndim != 3) return false;
    *h = 0, *w = 1;
    return true;
  }
  const char *ph = strchr(l, 'H'), *pw = strchr(l, 'W');
  if (!ph || !pw || ph > pw || (int)strlen(l) != t->ndim) return false;
  *h = (int)(ph - l), *w = (int)(pw - l);
  return true;
}

/* The position of the layout's D axis, or -1. */
static int depth_axis(const stk__tensor *t) {
  const char *d = (int)strlen(t->layout) == t->ndim ? strchr(t->layout, 'D') : NULL;
  return d ? (int)(d - t->layout) : -1;
}

static stk_status flip_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int ah, aw;
  if (!find_hw(in, &ah, &aw))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs H and W axes (in that order); "
                      "got %d dimensions with layout '%s'",
                      in->ndim, in->layout);
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  int64_t outer = 1, mid = 1, inner = 1;
  for (int d = 0; d < ah; d++) outer *= in->shape[d];
  for (int d = ah + 1; d < aw; d++) mid *= in->shape[d];
  for (int d = aw + 1; d < in->ndim; d++) inner *= in->shape[d];
  bool hz = stk__arg_int(node, s, A_HORIZONTAL) != 0, vt = stk__arg_int(node, s, A_VERTICAL) != 0;
  const void *src = in->data;
  int ad = depth_axis(in);
  size_t es = stk_dtype_size(in->dtype);
  if (ad >= 0 && stk__arg_int(node, s, A_DEPTHWISE) != 0) {
    /* D first, into scratch: [before D] x D x [after D] rows reversed (a vertical flip of
     * one-column "images") */
    int64_t before = 1, after = 1;
    for (int d = 0; d < ad; d++) before *= in->shape[d];
    for (int d = ad + 1; d < in->ndim; d++) after *= in->shape[d];
    void *tmp = stk__scratch(s, (size_t)(before * in->shape[ad] * after) * es + 1);
    if (!tmp) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
    stk__flip(src, tmp, es, before, in->shape[ad], after, 1, 1, false, true);
    src = tmp;
  }
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, in->ndim, in->shape, in->layout, &out));
  stk__flip(src, out->data, es, outer, in->shape[ah], mid, in->shape[aw], inner, hz, vt);
  return STK_OK;
}

/* GPU: one launch for the batch; the same flags as the CPU per sample. */
static stk_status flip_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_flip_sample *fs = stk__calloc(n, sizeof *fs, "a flip plan");
  int64_t *shapes = stk__calloc(n * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  stk_status st = fs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    stk__tensor t = {d.data, d.ndim, {0}, d.dtype, {0}};
    memcpy(t.shape, d.shape, sizeof t.shape);
    memcpy(t.layout, d.layout, sizeof t.layout);
    int ah, aw;
    if (!find_hw(&t, &ah, &aw)) {
      st = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "needs H and W axes; layout '%s'", t.layout);
      break;
    }
    int64_t outer = 1, mid = 1, inner = 1;
    for (int k = 0; k < ah; k++) outer *= t.shape[k];
    for (int k = ah + 1; k < aw; k++) mid *= t.shape[k];
    for (int k = aw + 1; k < t.ndim; k++) inner *= t.shape[k];
    stk__sample *s = stk__gpu_sample(b, i);
    if (depth_axis(&t) >= 0 && stk__arg_int(node, s, A_DEPTHWISE) != 0) {
      st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "depthwise flips run on the CPU only (the GPU kernel mirrors H and W)");
      break;
    }
    fs[i] = (stk_gpu_flip_sample){d.data,
                                  NULL,
                                  outer,
                                  t.shape[ah],
                                  mid,
                                  t.shape[aw],
                                  inner,
                                  stk__arg_int(node, s, A_HORIZONTAL) != 0,
                                  stk__arg_int(node, s, A_VERTICAL) != 0};
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      fs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_flip(g->api, g->ctx, (int)n, fs,
                         &(stk_gpu_elem_args){stk_dtype_size(stk_tensor_list_dtype(in))},
                         stk__gpu_stream(b), err, sizeof err),
        err);
  }
  free(fs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema flip_schema = {
    .name = "flip",
    .doc =
        "Mirrors each image left-right (horizontal) and/or top-bottom (vertical); the flags "
        "may be fed per sample (e.g. from random.coin_flip). Exact for every type.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = flip_in,
    .num_outputs = 1,
    .outputs = flip_out,
    .num_args = A_COUNT_,
    .args = flip_args,
    .gpu_check =
        "h = random.coin_flip(probability=0.5)\n"
        "v = random.coin_flip(probability=0.5)\n"
        "return flip(IN, horizontal=h, vertical=v, device=@)",
};
const stk__op_def stk__op_flip = {
    .schema = &flip_schema,
    .run_sample = flip_run,
    .run_gpu = flip_run_gpu,
};
