/* paste (DALI's): the image on a larger canvas filled with a colour; and multi_paste:
 * regions of several inputs pasted onto one canvas per sample. paste runs on the GPU
 * through the crop kernel (a paste is a crop whose window starts before the image). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "effects_common.h"

/* ---------------------------------------------------------------------------------- */
/* paste                                                                              */
/* ---------------------------------------------------------------------------------- */

enum { PA_RATIO, PA_PASTE_X, PA_PASTE_Y, PA_MIN_CANVAS, PA_FILL, PA_NCH, PA_COUNT_ };

static const stk_arg_schema paste_args[] = {
    [PA_RATIO] = {.name = "ratio",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                  .doc = "canvas size / input size (>= 1)"},
    [PA_PASTE_X] = {.name = "paste_x",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0.5",
                    .doc = "horizontal position in [0, 1]: the left margin is "
                           "trunc(paste_x (canvas_w - w))"},
    [PA_PASTE_Y] = {.name = "paste_y",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0.5",
                    .doc = "vertical position in [0, 1], likewise"},
    [PA_MIN_CANVAS] = {.name = "min_canvas_size",
                       .type = STK_ARG_FLOAT,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .default_text = "0",
                       .doc = "lower bound of both canvas extents"},
    [PA_FILL] = {.name = "fill_value",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_REQUIRED,
                 .doc = "canvas colour, n_channels values"},
    [PA_NCH] = {.name = "n_channels",
                .type = STK_ARG_INT,
                .flags = STK_ARGF_RANGE,
                .default_text = "3",
                .min = 1,
                .max = 1024,
                .doc = "channels of the images"},
};
STK__CHECK_ARGS(paste_args, PA_COUNT_);

static const stk_port_schema paste_in[] = {{"input", "uint8 HWC image"}};
static const stk_port_schema paste_out[] = {{"output", "the canvas"}};

static stk_status paste_init(stk__node *node) {
  const int64_t *v;
  size_t n = stk__arg_ints(node, NULL, PA_FILL, &v);
  int64_t c = stk__arg_int(node, NULL, PA_NCH);
  if ((int64_t)n != c)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "fill_value has %zu values; n_channels is %lld", n, (long long)c);
  for (size_t i = 0; i < n; i++)
    if (v[i] < 0 || v[i] > 255)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "fill_value[%zu] = %lld is not a uint8 value", i, (long long)v[i]);
  return STK_OK;
}

/* The canvas (out_h x out_w) and where the image's top-left corner lands (y, x). */
static stk_status paste_geometry(stk__node *node, stk__sample *s, int64_t h, int64_t w, int64_t c,
                                 int64_t *oh, int64_t *ow, int64_t *y, int64_t *x) {
  if (c != stk__arg_int(node, s, PA_NCH))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "image has %lld channels; n_channels "
                      "is %lld",
                      (long long)c, (long long)stk__arg_int(node, s, PA_NCH));
  double ratio = stk__arg_float(node, s, PA_RATIO), mcs = stk__arg_float(node, s, PA_MIN_CANVAS);
  double px = stk__arg_float(node, s, PA_PASTE_X), py = stk__arg_float(node, s, PA_PASTE_Y);
  if (!(ratio >= 1.0) || !(ratio < 1e6))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "ratio = %g; must be >= 1", ratio);
  if (!(px >= 0.0 && px <= 1.0 && py >= 0.0 && py <= 1.0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "paste_x = %g, paste_y = %g: must lie in [0, 1]", px, py);
  if (!(mcs < 1e9)) mcs = 1e9;
  *oh = (int64_t)fmax((double)h * ratio, mcs), *ow = (int64_t)fmax((double)w * ratio, mcs);
  if ((double)*oh * (double)*ow > (double)stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "canvas %lldx%lld exceeds the pixel limit %lld",
                      (long long)*oh, (long long)*ow, (long long)stk__node_max_pixels(node));
  *y = (int64_t)(py * (double)(*oh - h)), *x = (int64_t)(px * (double)(*ow - w));
  return STK_OK;
}

static void paste_fill(const stk__node *node, uint8_t *px, int64_t c) {
  const int64_t *v;
  stk__arg_ints(node, NULL, PA_FILL, &v);
  for (int64_t k = 0; k < c; k++) px[k] = (uint8_t)v[k];
}

static stk_status paste_run(stk__node *node, stk__sample *s) {
  static const stk_dtype u8[1] = {STK_DTYPE_UINT8};
  stk__image in = {0};
  STK_TRY(stk__image_input(node, s, 0, u8, 1, &in));
  int64_t oh, ow, y, x;
  STK_TRY(paste_geometry(node, s, in.h, in.w, in.c, &oh, &ow, &y, &x));
  uint8_t *fill = stk__scratch(s, (size_t)in.c);
  if (!fill) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  paste_fill(node, fill, in.c);
  stk__image out = {NULL, STK_DTYPE_UINT8, oh, ow, in.c};
  STK_TRY(stk__image_output(s, stk__input(s, 0)->ndim, &out));
  stk__crop_hwc(&in, -y, -x, &out, fill);
  return STK_OK;
}

/* GPU: one api->crop call whose windows start at (-y, -x). */
static stk_status paste_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_crop_sample *cs = stk__calloc(n ? n : 1, sizeof *cs, "a paste plan");
  int64_t *shapes = stk__calloc(n * 3 + 1, sizeof(int64_t), "shapes");
  stk_status rc = cs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (rc == STK_OK) rc = stk__gpu_check_image_layout(node, in);
  if (rc == STK_OK && stk_tensor_list_dtype(in) != STK_DTYPE_UINT8)
    rc = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "takes uint8 images");
  int c = 1;
  for (size_t i = 0; i < n && rc == STK_OK; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    int64_t h = d.shape[0], w = d.shape[1], oh, ow, y, x;
    c = ndim == 3 ? (int)d.shape[2] : 1;
    rc = paste_geometry(node, s, h, w, c, &oh, &ow, &y, &x);
    if (rc == STK_OK && (c > 64 || oh > INT32_MAX || ow > INT32_MAX))
      rc = STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "the GPU paste takes up to 64 channels");
    if (rc == STK_OK && i > 0 && c != (int)cs[0].src_pitch / (int)cs[0].src_w)
      rc = STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "one channel count per batch on the GPU");
    if (rc != STK_OK) break;
    cs[i] = (stk_gpu_crop_sample){.src = d.data,
                                  .src_pitch = (size_t)w * (size_t)c,
                                  .src_h = (int)h,
                                  .src_w = (int)w,
                                  .dst_h = (int)oh,
                                  .dst_w = (int)ow,
                                  .y = (int)-y,
                                  .x = (int)-x};
    paste_fill(node, cs[i].fill, c);
    int64_t *sh = shapes + i * (size_t)ndim;
    sh[0] = oh, sh[1] = ow;
    if (ndim == 3) sh[2] = c;
  }
  if (rc == STK_OK)
    rc = stk__gpu_alloc_list(b, STK_DTYPE_UINT8, ndim, shapes, ndim == 2 ? "HW" : "HWC",
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (rc == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      cs[i].dst = d.data;
    }
    stk_gpu_crop_args a = {c, STK_DTYPE_UINT8, STK_DTYPE_UINT8};
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    rc = stk__gpu_op_check(
        node, stk_gpu_run_crop(g->api, g->ctx, (int)n, cs, &a, stk__gpu_stream(b), err, sizeof err),
        err);
  }
  free(cs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, rc);
}

static const stk_op_schema paste_schema = {
    .name = "paste",
    .doc =
        "Places each uint8 image on a canvas of trunc(max(size * ratio, min_canvas_size)) "
        "filled with fill_value, its top-left corner at trunc(paste_x (canvas_w - w)), "
        "trunc(paste_y (canvas_h - h)) (DALI's paste; the zoom-out step of SSD "
        "augmentation).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = paste_in,
    .num_outputs = 1,
    .outputs = paste_out,
    .num_args = PA_COUNT_,
    .args = paste_args,
    .gpu_check =
        "r = random.uniform(range=[1.0, 2.5])\n"
        "px = random.uniform(range=[0.0, 1.0])\n"
        "return paste(IN, ratio=r, paste_x=px, paste_y=0.2, fill_value=[10, 20, 30], "
        "device=@)",
};
const stk__op_def stk__op_paste = {
    .schema = &paste_schema, .init = paste_init, .run_sample = paste_run, .run_gpu = paste_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* multi_paste                                                                        */
/* ---------------------------------------------------------------------------------- */

enum {
  MP_IN_IDS,
  MP_OUT_SIZE,
  MP_IN_ANCH,
  MP_IN_ANCH_REL,
  MP_SHAPES,
  MP_SHAPES_REL,
  MP_OUT_ANCH,
  MP_OUT_ANCH_REL,
  MP_DTYPE,
  MP_COUNT_
};

#define MP_PAIRS_DOC " (one [y, x] / [h, w] pair per pasted region, flattened)"

static const stk_arg_schema mp_args[] = {
    [MP_IN_IDS] = {.name = "in_ids",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "region k comes from sample in_ids[k] of the (only) input's batch "
                          "(DALI's mosaic form); without it, from input k"},
    [MP_OUT_SIZE] = {.name = "output_size",
                     .type = STK_ARG_INTS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "canvas [H, W]; input 0's size when absent"},
    [MP_IN_ANCH] = {.name = "in_anchors",
                    .type = STK_ARG_INTS,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .doc = "top-left corners in the inputs" MP_PAIRS_DOC "; 0 when absent"},
    [MP_IN_ANCH_REL] = {.name = "in_anchors_rel",
                        .type = STK_ARG_FLOATS,
                        .flags = STK_ARGF_PER_SAMPLE,
                        .doc = "the same relative to the input's size, in [0, 1]"},
    [MP_SHAPES] = {.name = "shapes",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "region extents" MP_PAIRS_DOC "; to the input's end when absent"},
    [MP_SHAPES_REL] = {.name = "shapes_rel",
                       .type = STK_ARG_FLOATS,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .doc = "the same relative to the input's size"},
    [MP_OUT_ANCH] = {.name = "out_anchors",
                     .type = STK_ARG_INTS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "top-left corners on the canvas" MP_PAIRS_DOC "; 0 when absent"},
    [MP_OUT_ANCH_REL] = {.name = "out_anchors_rel",
                         .type = STK_ARG_FLOATS,
                         .flags = STK_ARGF_PER_SAMPLE,
                         .doc = "the same relative to the canvas size"},
    [MP_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "output type; \"\" keeps the inputs' (values converted, rounded and "
                         "saturated)"},
};
STK__CHECK_ARGS(mp_args, MP_COUNT_);

/* Up to 16 inputs of one type and channel count; region k comes from input k. */
static const stk_port_schema mp_in[] = {{"input0", "HWC image: the source of region 0"},
                                        {"input1", "HWC image: the source of region 1"},
                                        {"input2", "HWC image: the source of region 2"},
                                        {"input3", "HWC image: the source of region 3"},
                                        {"input4", "HWC image: the source of region 4"},
                                        {"input5", "HWC image: the source of region 5"},
                                        {"input6", "HWC image: the source of region 6"},
                                        {"input7", "HWC image: the source of region 7"},
                                        {"input8", "HWC image: the source of region 8"},
                                        {"input9", "HWC image: the source of region 9"},
                                        {"input10", "HWC image: the source of region 10"},
                                        {"input11", "HWC image: the source of region 11"},
                                        {"input12", "HWC image: the source of region 12"},
                                        {"input13", "HWC image: the source of region 13"},
                                        {"input14", "HWC image: the source of region 14"},
                                        {"input15", "HWC image: the source of region 15"}};
static const stk_port_schema mp_out[] = {{"output", "the canvas"}};

static stk_status mp_init(stk__node *node) {
  if (stk__arg_given(node, MP_IN_IDS) && stk__node_num_inputs(node) != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "with in_ids the operator takes exactly one input (the batch to paste "
                      "from), got %d",
                      stk__node_num_inputs(node));
  static const int pairs[][2] = {
      {MP_IN_ANCH, MP_IN_ANCH_REL}, {MP_SHAPES, MP_SHAPES_REL}, {MP_OUT_ANCH, MP_OUT_ANCH_REL}};
  for (int k = 0; k < 3; k++)
    if (stk__arg_given(node, pairs[k][0]) && stk__arg_given(node, pairs[k][1]))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "give %s or %s, not both",
                        mp_args[pairs[k][0]].name, mp_args[pairs[k][1]].name);
  stk_dtype dt;
  return stk__dtype_or_same(node, MP_DTYPE, "dtype", STK_DTYPE_UINT8, &dt);
}

/* Pair k of an absolute (ints) or relative (floats) argument; `dflt` when neither is
 * given. A relative value v gives trunc(v * scale) (measured on DALI 2.4: anchors
 * truncate); *rel receives v itself (NAN for absolute or default values). */
static stk_status mp_pair(stk__node *node, stk__sample *s, int abs_arg, int rel_arg, int k,
                          int nregions, const int64_t scale[2], const int64_t dflt[2],
                          int64_t out[2], double rel[2]) {
  size_t n;
  rel[0] = rel[1] = NAN;
  if (stk__arg_given(node, abs_arg)) {
    const int64_t *v;
    n = stk__arg_ints(node, s, abs_arg, &v);
    if (n == (size_t)nregions * 2) out[0] = v[2 * k], out[1] = v[2 * k + 1];
  } else if (stk__arg_given(node, rel_arg)) {
    const double *v;
    n = stk__arg_floats(node, s, rel_arg, &v);
    if (n == (size_t)nregions * 2)
      for (int j = 0; j < 2; j++) {
        rel[j] = v[2 * k + j];
        if (!(fabs(rel[j]) <= 1e6))
          return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "%s has a non-finite value",
                            mp_args[rel_arg].name);
        out[j] = (int64_t)(rel[j] * (double)scale[j]);
      }
  } else {
    out[0] = dflt[0], out[1] = dflt[1];
    return STK_OK;
  }
  if (n != (size_t)nregions * 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%s has %zu values; expected %d (a [y, x] pair per input)",
                      mp_args[stk__arg_given(node, abs_arg) ? abs_arg : rel_arg].name, n,
                      nregions * 2);
  return STK_OK;
}

/* Pastes region k (from input k) onto the canvas `out`. */
static stk_status mp_region(stk__node *node, stk__sample *s, int k, int nregions, int64_t in_h,
                            int64_t in_w, int64_t out_h, int64_t out_w, int64_t ia[2],
                            int64_t sh[2], int64_t oa[2]) {
  int64_t isz[2] = {in_h, in_w}, osz[2] = {out_h, out_w}, zero[2] = {0, 0};
  double ia_rel[2], sh_rel[2], unused[2];
  STK_TRY(mp_pair(node, s, MP_IN_ANCH, MP_IN_ANCH_REL, k, nregions, isz, zero, ia, ia_rel));
  int64_t rest[2] = {in_h - ia[0], in_w - ia[1]};
  STK_TRY(mp_pair(node, s, MP_SHAPES, MP_SHAPES_REL, k, nregions, isz, rest, sh, sh_rel));
  /* relative shapes end at trunc((anchor + shape) * size), DALI's rounding of a region
   * given wholly in relative terms */
  for (int j = 0; j < 2; j++)
    if (!isnan(sh_rel[j]))
      sh[j] =
          (int64_t)(((isnan(ia_rel[j]) ? (double)ia[j] / (double)isz[j] : ia_rel[j]) + sh_rel[j]) *
                    (double)isz[j]) -
          ia[j];
  STK_TRY(mp_pair(node, s, MP_OUT_ANCH, MP_OUT_ANCH_REL, k, nregions, osz, zero, oa, unused));
  for (int j = 0; j < 2; j++)
    if (ia[j] < 0 || sh[j] < 0 || ia[j] + sh[j] > isz[j] || oa[j] < 0 || oa[j] + sh[j] > osz[j])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "region %d: %lldx%lld from (%lld, %lld) of the %lldx%lld input to "
                        "(%lld, %lld) does not fit the input or the %lldx%lld canvas",
                        k, (long long)sh[0], (long long)sh[1], (long long)ia[0], (long long)ia[1],
                        (long long)in_h, (long long)in_w, (long long)oa[0], (long long)oa[1],
                        (long long)out_h, (long long)out_w);
  return STK_OK;
}

/* Pastes region k (from input k) onto the canvas `out`. */
static stk_status mp_paste(stk__node *node, stk__sample *s, int k, int nregions,
                           const stk__image *in, const stk__image *out) {
  int64_t ia[2], sh[2], oa[2];
  STK_TRY(mp_region(node, s, k, nregions, in->h, in->w, out->h, out->w, ia, sh, oa));
  size_t ies = stk_dtype_size(in->dtype), oes = stk_dtype_size(out->dtype);
  size_t row = (size_t)sh[1] * (size_t)in->c;
  for (int64_t y = 0; y < sh[0]; y++) {
    const char *src = (const char *)in->data + ((size_t)(ia[0] + y) * in->w + ia[1]) * in->c * ies;
    char *dst = (char *)out->data + ((size_t)(oa[0] + y) * out->w + oa[1]) * out->c * oes;
    stk__convert(dst, out->dtype, src, in->dtype, row);
  }
  return STK_OK;
}

/* The canvas extents: output_size, or input 0's. */
static stk_status mp_canvas(stk__node *node, stk__sample *s, int64_t *h, int64_t *w) {
  if (stk__arg_given(node, MP_OUT_SIZE)) {
    const int64_t *v;
    if (stk__arg_ints(node, s, MP_OUT_SIZE, &v) != 2 || v[0] < 0 || v[1] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "output_size must be [H, W] with non-negative extents");
    *h = v[0], *w = v[1];
  }
  if ((double)*h * (double)*w > (double)stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "canvas %lldx%lld exceeds the pixel limit",
                      (long long)*h, (long long)*w);
  return STK_OK;
}

/* Input k must match input 0's type and channels. */
static stk_status mp_same(stk__node *node, stk__sample *s, int k, stk_dtype dt, int64_t c,
                          stk_dtype dt0, int64_t c0) {
  if (dt == dt0 && c == c0) return STK_OK;
  return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                    "input %d is %lld channels of %s; input 0 %lld of %s", k, (long long)c,
                    stk_dtype_name(dt) ? stk_dtype_name(dt) : "?", (long long)c0,
                    stk_dtype_name(dt0) ? stk_dtype_name(dt0) : "?");
}

/* A source tensor as an image (HWC, or HW as one channel). */
static stk_status mp_image(stk__node *node, stk__sample *s, int k, const stk__tensor *t,
                           stk__image *img) {
  bool hwc = t->ndim == 3 && (!t->layout[0] || strcmp(t->layout, "HWC") == 0);
  bool hw = t->ndim == 2 && (!t->layout[0] || strcmp(t->layout, "HW") == 0);
  if (!hwc && !hw)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "source %d: expects an HWC image, got %d dimensions with layout '%s'", k,
                      t->ndim, t->layout);
  *img = (stk__image){t->data, t->dtype, t->shape[0], t->shape[1], hwc ? t->shape[2] : 1};
  return STK_OK;
}

/* The sources of sample i's regions: input k of the sample, or with in_ids, sample
 * in_ids[k] of input 0 (of the batch `b`); *nreg counts them. */
static stk_status mp_sources(stk__node *node, stk__batch *b, size_t i, const stk__tensor **src,
                             int *nreg) {
  stk__sample *s = stk__batch_sample(b, i);
  if (!stk__arg_given(node, MP_IN_IDS)) {
    *nreg = stk__node_num_inputs(node);
    for (int k = 0; k < *nreg; k++) src[k] = stk__input(s, k);
    return STK_OK;
  }
  const int64_t *ids;
  size_t n = stk__arg_ints(node, s, MP_IN_IDS, &ids), bn = stk__batch_size(b);
  if (n < 1 || n > STK_FX_MAX_REGIONS)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "in_ids has %zu values; 1 to %d", n,
                      STK_FX_MAX_REGIONS);
  for (size_t k = 0; k < n; k++) {
    if (ids[k] < 0 || (size_t)ids[k] >= bn)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "in_ids[%zu] = %lld is not a sample of this batch of %zu", k,
                        (long long)ids[k], bn);
    src[k] = stk__input(stk__batch_sample(b, (size_t)ids[k]), 0);
  }
  *nreg = (int)n;
  return STK_OK;
}

/* One output sample from its sources. */
static stk_status mp_sample(stk__node *node, stk__sample *s, const stk__tensor *const *src,
                            int nreg) {
  stk__image first = {0};
  STK_TRY(mp_image(node, s, 0, src[0], &first));
  stk__image out = {NULL, first.dtype, first.h, first.w, first.c};
  STK_TRY(stk__dtype_or_same(node, MP_DTYPE, "dtype", first.dtype, &out.dtype));
  STK_TRY(mp_canvas(node, s, &out.h, &out.w));
  int64_t shape[3] = {out.h, out.w, out.c};
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, out.dtype, 3, shape, "HWC", &t));
  out.data = t->data;
  memset(out.data, 0, (size_t)out.h * out.w * out.c * stk_dtype_size(out.dtype));
  for (int k = 0; k < nreg; k++) {
    stk__image in = {0};
    STK_TRY(mp_image(node, s, k, src[k], &in));
    STK_TRY(mp_same(node, s, k, in.dtype, in.c, first.dtype, first.c));
    STK_TRY(mp_paste(node, s, k, nreg, &in, &out));
  }
  return STK_OK;
}

/* A batch operator: with in_ids a sample reads other samples of the batch. */
static stk_status mp_run_batch(stk__node *node, stk__batch *b) {
  for (size_t i = 0; i < stk__batch_size(b); i++) {
    const stk__tensor *src[STK_FX_MAX_REGIONS];
    int nreg = 0;
    STK_TRY(mp_sources(node, b, i, src, &nreg));
    STK_TRY(mp_sample(node, stk__batch_sample(b, i), src, nreg));
  }
  return STK_OK;
}

/* GPU: the canvas is the effects kernel's STK_FX_OP_PASTE (src/shared/effects_px.h), the
 * regions planned on the host exactly as above. Types: uint8, uint16, int16, float32. */
static stk_status mp_plan_gpu(stk__node *node, stk__sample *s, const stk__image *in,
                              const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  STK_TRY(stk__dtype_or_same(node, MP_DTYPE, "dtype", in->dtype, &plan->out_dtype));
  bool ok = false;
  for (int k = 0; k < 4; k++) ok |= plan->out_dtype == stk__fx_all_dtypes[k];
  if (!ok)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "on the GPU the output type must be uint8, uint16, int16 or float32");
  /* the sources: this sample's inputs, or the samples of input 0 in_ids names */
  stk__tensor self = {in->data, 3, {in->h, in->w, in->c}, in->dtype, ""};
  const stk__tensor *src[STK_FX_MAX_REGIONS];
  int nreg = n_extra + 1;
  src[0] = &self;
  for (int k = 1; k < nreg; k++) src[k] = extra[k - 1];
  if (stk__arg_given(node, MP_IN_IDS)) {
    const int64_t *ids;
    size_t n = stk__arg_ints(node, s, MP_IN_IDS, &ids);
    if (n < 1 || n > STK_FX_MAX_REGIONS)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "in_ids has %zu values; 1 to %d", n,
                        STK_FX_MAX_REGIONS);
    for (size_t k = 0; k < n; k++) {
      if (ids[k] < 0 || (size_t)ids[k] >= plan->batch_n)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "in_ids[%zu] = %lld is not a sample of this batch of %zu", k,
                          (long long)ids[k], plan->batch_n);
      src[k] = &plan->batch0[ids[k]];
    }
    nreg = (int)n;
  }
  stk__image first = {0};
  STK_TRY(mp_image(node, s, 0, src[0], &first));
  plan->out_h = first.h, plan->out_w = first.w, plan->out_c = first.c;
  STK_TRY(mp_canvas(node, s, &plan->out_h, &plan->out_w));
  stk_fx_params *p = &plan->p;
  p->op = STK_FX_OP_PASTE;
  p->nregions = nreg;
  for (int k = 0; k < nreg; k++) {
    stk__image im = {0};
    STK_TRY(mp_image(node, s, k, src[k], &im));
    STK_TRY(mp_same(node, s, k, im.dtype, im.c, first.dtype, first.c));
    int64_t ia[2], sh[2], oa[2];
    STK_TRY(mp_region(node, s, k, nreg, im.h, im.w, plan->out_h, plan->out_w, ia, sh, oa));
    p->regions[k] = (stk_fx_region){im.data,    (int)ia[0], (int)ia[1], (int)sh[0],
                                    (int)sh[1], (int)oa[0], (int)oa[1], (int)im.w};
  }
  return STK_OK;
}

static stk_status mp_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, stk__fx_all_dtypes, 4, mp_plan_gpu);
}

static const stk_op_schema mp_schema = {
    .name = "multi_paste",
    .doc =
        "Pastes regions onto one zeroed canvas per sample, in order (later regions cover "
        "earlier ones), as DALI's multi_paste: region k from input k, or with in_ids from "
        "sample in_ids[k] of the one input's batch (a batch operator: it runs once the "
        "whole batch is there). Regions must fit their source and the canvas. Any "
        "numeric type on the CPU; uint8, uint16, int16 or float32 on the GPU; dtype "
        "converts (rounded, saturated).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_BATCH,
    .min_inputs = 1,
    .max_inputs = 16,
    .inputs = mp_in,
    .num_outputs = 1,
    .outputs = mp_out,
    .num_args = MP_COUNT_,
    .args = mp_args,
    .gpu_check =
        "# atol=0\n"
        "return multi_paste(IN, IN, in_anchors_rel=[0.5, 0.5, 0.0, 0.0], "
        "shapes_rel=[0.5, 0.5, 0.25, 0.25], out_anchors_rel=[0.0, 0.0, 0.6, 0.6], "
        "device=@)",
};
const stk__op_def stk__op_multi_paste = {
    .schema = &mp_schema, .init = mp_init, .run_batch = mp_run_batch, .run_gpu = mp_run_gpu};
