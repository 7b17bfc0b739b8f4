/* crop: DALI's crop operator on HWC images (any dtype), with padding or trimming for
 * windows that leave the image and an optional output type. */
#include <stdlib.h>

#include "gpu_util.h"
#include "image_util.h"

enum {
  A_CROP,
  A_CROP_H,
  A_CROP_W,
  A_POS_X,
  A_POS_Y,
  A_POLICY,
  A_FILL,
  A_DTYPE,
  A_ROUNDING,
  CROP_ARGS_COUNT_
};

static const stk_arg_schema crop_args[] = {
    [A_CROP] =
        {.name = "crop",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
         .max = 1e9,
         .doc =
             "window size [H, W] (extents truncated to integers; 0: the whole extent); exclusive "
             "with crop_h / crop_w"},
    [A_CROP_H] = {.name = "crop_h",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "0.0",
                  .max = 1e9,
                  .doc = "window height (with crop_w)"},
    [A_CROP_W] = {.name = "crop_w",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "0.0",
                  .max = 1e9,
                  .doc = "window width (with crop_h)"},
    [A_POS_X] = {.name = "crop_pos_x",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .default_text = "0.5",
                 .max = 1,
                 .doc = "horizontal position in [0, 1]: x = round(crop_pos_x * (W - crop_W))"},
    [A_POS_Y] = {.name = "crop_pos_y",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .default_text = "0.5",
                 .max = 1,
                 .doc = "vertical position in [0, 1]: y = round(crop_pos_y * (H - crop_H))"},
    [A_POLICY] = {.name = "out_of_bounds_policy",
                  .type = STK_ARG_STRING,
                  .default_text = "\"error\"",
                  .choices = STK__OOB_CHOICES,
                  .doc = "a window leaving the image: \"error\", \"pad\" (with fill_values) or "
                         "\"trim_to_shape\" "
                         "(cut to the image)"},
    [A_FILL] = {.name = "fill_values",
                .type = STK_ARG_FLOATS,
                .default_text = "[0.0]",
                .doc = "padding value, one for all channels or one per channel"},
    [A_DTYPE] =
        {.name = "dtype",
         .type = STK_ARG_STRING,
         .default_text = "\"\"",
         .doc =
             "output type: \"\" (the input's) or any type name (saturating, rounded conversion)"},
    [A_ROUNDING] =
        {.name = "rounding",
         .type = STK_ARG_STRING,
         .default_text = "\"round\"",
         .choices = "round|truncate",
         .doc =
             "how the window's anchor becomes an integer: round (half away from zero) or truncate"},
};
STK__CHECK_ARGS(crop_args, CROP_ARGS_COUNT_);

static const stk_port_schema image_in[] = {{"input", "HWC image"}};
static const stk_port_schema image_out[] = {{"output", "the cropped HWC image"}};

static const stk__crop_arg_ids crop_ids = {A_CROP, A_CROP_H, A_CROP_W, A_POS_X, A_POS_Y};

typedef struct {
  stk__oob_policy policy;
  bool truncate, has_dtype;
  stk_dtype dtype;
} crop_state;

static stk_status crop_init(stk__node *node) {
  crop_state st = {0};
  STK_TRY(stk__crop_args_check(node, &crop_ids));
  if (!stk__oob_parse(stk__arg_string(node, A_POLICY), &st.policy))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "unknown out_of_bounds_policy "
                      "\"%s\"",
                      stk__arg_string(node, A_POLICY));
  st.truncate = strcmp(stk__arg_string(node, A_ROUNDING), "truncate") == 0;
  st.has_dtype = *stk__arg_string(node, A_DTYPE) != '\0';
  if (st.has_dtype) STK_TRY(stk__dtype_or_same(node, A_DTYPE, "dtype", STK_DTYPE_UINT8, &st.dtype));
  crop_state *heap = stk__malloc(sizeof st, "crop state");
  if (!heap) return STK_ERR_OUT_OF_MEMORY;
  *heap = st;
  *stk__node_state(node) = heap;
  return STK_OK;
}

static void crop_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

static stk_status crop_run(stk__node *node, stk__sample *s) {
  const crop_state *st = *stk__node_state(node);
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  stk__rect r;
  STK_TRY(stk__crop_args_rect(node, s, &crop_ids, st->policy, st->truncate, in.h, in.w, &r));
  double *fill = NULL;
  STK_TRY(stk__channel_values(node, s, A_FILL, "fill_values", in.c, &fill));
  stk__image out = {NULL, st->has_dtype ? st->dtype : in.dtype, r.h, r.w, in.c};
  void *fill_px = stk__scratch(s, (size_t)in.c * stk_dtype_size(out.dtype));
  if (!fill_px) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  stk__fill_pixel(fill_px, out.dtype, (size_t)in.c, fill, (size_t)in.c);
  STK_TRY(stk__image_output(s, stk__input(s, 0)->ndim, &out));
  stk__crop_hwc(&in, r.y, r.x, &out, fill_px);
  return STK_OK;
}

/* Plans sample i of a GPU crop exactly as crop_run: window, fill pixel, output shape. */
static stk_status crop_gpu_sample(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                  size_t i, stk_dtype odt, int *channels, stk_gpu_crop_sample *cs,
                                  int64_t *shape) {
  const crop_state *st = *stk__node_state(node);
  stk__sample *s = stk__gpu_sample(b, i);
  int h, w, c;
  void *data;
  STK_TRY(stk__gpu_image_dims(node, in, i, &h, &w, &c, &data));
  if (i == 0)
    *channels = c;
  else if (c != *channels)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "has %d channels, sample 0 %d: the GPU crop needs one channel "
                      "count per batch",
                      c, *channels);
  stk__rect r;
  STK_TRY(stk__crop_args_rect(node, s, &crop_ids, st->policy, st->truncate, h, w, &r));
  double *fill = NULL;
  STK_TRY(stk__channel_values(node, s, A_FILL, "fill_values", c, &fill));
  if ((size_t)c * stk_dtype_size(odt) > sizeof cs->fill)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "%d channels of %s exceed the GPU's 64-byte fill", c, stk_dtype_name(odt));
  memset(cs, 0, sizeof *cs);
  stk__fill_pixel(cs->fill, odt, (size_t)c, fill, (size_t)c);
  cs->src = data;
  cs->src_pitch = (size_t)w * (size_t)c * stk_dtype_size(stk_tensor_list_dtype(in));
  cs->src_h = h, cs->src_w = w;
  cs->dst_h = (int)r.h, cs->dst_w = (int)r.w;
  cs->y = (int)r.y, cs->x = (int)r.x;
  shape[0] = r.h, shape[1] = r.w;
  if (stk_tensor_list_ndim(in) == 3) shape[2] = c;
  return STK_OK;
}

/* crop on the GPU: windows and fills read per sample as on the CPU, one api->crop call
 * (copy, padding and type conversion as stk__crop_hwc). */
static stk_status crop_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const crop_state *st = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_dtype idt = stk_tensor_list_dtype(in), odt = st->has_dtype ? st->dtype : idt;
  stk_gpu_crop_sample *cs = stk__calloc(n ? n : 1, sizeof *cs, "a crop plan");
  int64_t *shapes = stk__calloc(n * 3, sizeof(int64_t), "shapes");
  stk_status rc = cs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (rc == STK_OK) rc = stk__gpu_check_image_layout(node, in);
  int c = 1;
  for (size_t i = 0; i < n && rc == STK_OK; i++)
    rc = crop_gpu_sample(node, b, in, i, odt, &c, &cs[i], shapes + i * (size_t)ndim);
  if (rc == STK_OK)
    rc = stk__gpu_alloc_list(b, odt, ndim, shapes, ndim == 2 ? "HW" : "HWC",
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (rc == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      cs[i].dst = d.data;
    }
    stk_gpu_crop_args a = {c, idt, odt};
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

static const stk_op_schema crop_schema = {
    .name = "crop",
    .doc =
        "Crops HWC images (any type) to a window of crop [H, W] placed at crop_pos_x / "
        "crop_pos_y (DALI's crop: anchor = round(pos * (in - crop))). Windows leaving the image "
        "are an error, padded with fill_values, or trimmed, by out_of_bounds_policy. With "
        "dtype, the output is converted (rounded, saturated).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof crop_args / sizeof crop_args[0],
    .args = crop_args,
    .gpu_check =
        "x = random.uniform(range=[0.0, 1.0])\n"
        "y = random.uniform(range=[0.0, 1.0])\n"
        "return crop(IN, crop=[200, 250], crop_pos_x=x, crop_pos_y=y, device=@)",
};
const stk__op_def stk__op_crop = {
    .schema = &crop_schema,
    .init = crop_init,
    .destroy = crop_destroy,
    .run_sample = crop_run,
    .run_gpu = crop_run_gpu,
};
