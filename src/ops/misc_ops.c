/* one_hot and cast_like on the CPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_math.h"
#include "../shared/math_common.h"
#include "gpu_util.h"
#include "image_util.h"

#define OH_DTYPES \
  "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool|float|double"

/* ---- one_hot ---- */
enum { OH_NUM_CLASSES, OH_AXIS, OH_AXIS_NAME, OH_ON, OH_OFF, OH_DTYPE, ONE_HOT_ARGS_COUNT_ };
static const stk_arg_schema one_hot_args[] = {
    [OH_NUM_CLASSES] = {.name = "num_classes",
                        .type = STK_ARG_INT,
                        .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                        .min = 1,
                        .max = 1 << 24,
                        .doc = "number of classes: the extent of the new axis"},
    [OH_AXIS] =
        {.name = "axis",
         .type = STK_ARG_INT,
         .default_text = "-1",
         .doc =
             "where the new axis goes, in [0, ndim] (-1: last). A scalar or one-element [1] input "
             "gives just [num_classes]"},
    [OH_AXIS_NAME] =
        {.name = "axis_name",
         .type = STK_ARG_STRING,
         .default_text = "\"\"",
         .doc =
             "one letter naming the new axis in the output layout (the layout is empty otherwise)"},
    [OH_ON] = {.name = "on_value",
               .type = STK_ARG_FLOAT,
               .flags = STK_ARGF_PER_SAMPLE,
               .default_text = "1.0",
               .doc = "value where the class matches"},
    [OH_OFF] = {.name = "off_value",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "0.0",
                .doc = "value elsewhere"},
    [OH_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"float32\"",
                  .choices = OH_DTYPES,
                  .doc = "output type"},
};
STK__CHECK_ARGS(one_hot_args, ONE_HOT_ARGS_COUNT_);
static const stk_port_schema one_hot_in[] = {
    {"input", "class indices, any numeric type (fractions truncated toward zero)"}};
static const stk_port_schema one_hot_out[] = {
    {"output",
     "the encoding: off_value everywhere but on_value at each index; indices "
     "outside [0, num_classes) give a row of off_value"}};

static stk_status one_hot_init(stk__node *node) {
  if (strlen(stk__arg_string(node, OH_AXIS_NAME)) > 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "axis_name = \"%s\" must be a single letter",
                      stk__arg_string(node, OH_AXIS_NAME));
  if (stk__arg_int(node, NULL, OH_AXIS) < -1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "axis = %lld must be >= -1",
                      (long long)stk__arg_int(node, NULL, OH_AXIS));
  return STK_OK;
}

/* The output layout: the input's with axis_name inserted, when both exist. */
static void one_hot_layout(const stk__tensor *in, int axis, const char *name, bool scalar,
                           char *layout) {
  layout[0] = '\0';
  if (!*name) return;
  if (scalar) {
    snprintf(layout, STK_MAX_LAYOUT + 1, "%s", name);
    return;
  }
  if ((int)strlen(in->layout) != in->ndim || in->ndim + 1 > STK_MAX_LAYOUT) return;
  memcpy(layout, in->layout, (size_t)axis);
  layout[axis] = name[0];
  memcpy(layout + axis + 1, in->layout + axis, (size_t)(in->ndim - axis) + 1);
}

/* The output of one sample: its shape (`ndim` dims), the class count, and `inner` (the
 * label elements after the new axis). Shared by both backends. */
typedef struct {
  int64_t ncls, shape[STK_MAX_NDIM];
  int ndim;
  size_t n, inner;
  stk_dtype dtype;
  char layout[STK_MAX_LAYOUT + 1];
} one_hot_plan;

static stk_status one_hot_plan_sample(stk__node *node, stk__sample *s, const stk__tensor *in,
                                      one_hot_plan *p) {
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  int64_t ncls = stk__arg_int(node, s, OH_NUM_CLASSES);
  if (ncls < 1 || ncls > (1 << 24))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "num_classes = %lld must lie in [1, 2^24]",
                      (long long)ncls);
  size_t n = 1;
  for (int d = 0; d < in->ndim; d++) n *= (size_t)in->shape[d];
  bool scalar = in->ndim == 0 || (in->ndim == 1 && in->shape[0] == 1);
  int axis = (int)stk__arg_int(node, s, OH_AXIS);
  if (scalar)
    axis = 0;
  else if (axis < 0)
    axis = in->ndim;
  if (axis > in->ndim || in->ndim + 1 > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "axis = %d is outside [0, %d] for an input of %d dimensions", axis, in->ndim,
                      in->ndim);
  int ndim = 0;
  size_t inner = 1;
  if (scalar) {
    p->shape[ndim++] = ncls;
  } else {
    for (int d = 0; d < in->ndim; d++) {
      if (d == axis) p->shape[ndim++] = ncls;
      p->shape[ndim++] = in->shape[d];
      if (d >= axis) inner *= (size_t)in->shape[d];
    }
    if (axis == in->ndim) p->shape[ndim++] = ncls;
  }
  p->ncls = ncls, p->ndim = ndim, p->n = n, p->inner = inner;
  p->dtype = stk__dtype_arg(stk__arg_string(node, OH_DTYPE));
  one_hot_layout(in, axis, stk__arg_string(node, OH_AXIS_NAME), scalar, p->layout);
  return STK_OK;
}

static stk_status one_hot_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  one_hot_plan p;
  STK_TRY(one_hot_plan_sample(node, s, in, &p));
  stk_dtype dt = p.dtype;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, p.ndim, p.shape, p.layout, &out));
  size_t es = stk_dtype_size(dt), total = p.n * (size_t)p.ncls, inner = p.inner;
  uint8_t on[8], off[8];
  stk__store_double(on, dt, 0, stk__arg_float(node, s, OH_ON));
  stk__store_double(off, dt, 0, stk__arg_float(node, s, OH_OFF));
  for (size_t i = 0; i < total; i++) memcpy((char *)out->data + i * es, off, es);
  for (size_t i = 0; i < p.n; i++) {
    int64_t l = stk_ar_one_hot_class(in->data, in->dtype, i, p.ncls); /* the GPU's rule */
    if (l < 0) continue;
    size_t o = i / inner, j = i % inner;
    memcpy((char *)out->data + ((o * (size_t)p.ncls + (size_t)l) * inner + j) * es, on, es);
  }
  return STK_OK;
}

/* GPU: the same plan per sample, one launch; on/off stored by the host as on the CPU. */
static stk_status one_hot_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_ONE_HOT));
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_one_hot_sample *hs = stk__calloc(n ? n : 1, sizeof *hs, "a one_hot plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  stk_status st = hs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  one_hot_plan p0;
  memset(&p0, 0, sizeof p0);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    stk__tensor t = {d.data, d.ndim, {0}, d.dtype, {0}};
    memcpy(t.shape, d.shape, sizeof t.shape);
    memcpy(t.layout, d.layout, sizeof t.layout);
    one_hot_plan p;
    st = one_hot_plan_sample(node, s, &t, &p);
    if (st != STK_OK) break;
    if (i == 0)
      p0 = p;
    else if (p.ndim != p0.ndim) {
      st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "the output has %d dimensions here and %d in sample 0; a GPU "
                      "batch needs one rank",
                      p.ndim, p0.ndim);
      break;
    }
    memcpy(shapes + i * (size_t)p.ndim, p.shape, (size_t)p.ndim * sizeof(int64_t));
    hs[i].src = d.data;
    hs[i].count = (int64_t)p.n;
    hs[i].num_classes = p.ncls;
    hs[i].inner = (int64_t)p.inner;
    stk__store_double(&hs[i].on, p.dtype, 0, stk__arg_float(node, s, OH_ON));
    stk__store_double(&hs[i].off, p.dtype, 0, stk__arg_float(node, s, OH_OFF));
  }
  if (st == STK_OK && n > 0)
    st = stk__gpu_alloc_list(b, p0.dtype, p0.ndim, shapes, p0.layout,
                             stk__gpu_shapes_equal(shapes, n, p0.ndim), &out);
  if (st == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      hs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_one_hot(g->api, g->ctx, (int)n, hs,
                            &(stk_gpu_io_args){stk_tensor_list_dtype(in), p0.dtype},
                            stk__gpu_stream(b), err, sizeof err),
        err);
  }
  free(hs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema one_hot_schema = {
    .name = "one_hot",
    .doc =
        "One-hot encodes class indices (DALI's one_hot): a new axis of num_classes entries at "
        "`axis`, holding on_value at each index and off_value elsewhere.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = one_hot_in,
    .num_outputs = 1,
    .outputs = one_hot_out,
    .num_args = sizeof one_hot_args / sizeof one_hot_args[0],
    .args = one_hot_args,
    .gpu_check =
        "# iterations=1\n"
        "s = shapes(IN, dtype=\"int32\", device=@)\n"
        "k = subscript(s, kinds=[0], at_0=2, device=@)\n"
        "return one_hot(k, num_classes=5, device=@)",
};
const stk__op_def stk__op_one_hot = {.schema = &one_hot_schema,
                                     .init = one_hot_init,
                                     .run_sample = one_hot_run,
                                     .run_gpu = one_hot_run_gpu};

/* ---- cast_like ---- */
static const stk_port_schema cast_like_in[] = {{"input", "the values to convert"},
                                               {"like", "a tensor whose type the output takes"}};
static const stk_port_schema cast_like_out[] = {{"output", "input in the type of `like`"}};

static stk_status cast_like_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0), *like = stk__input(s, 1);
  if (!stk__dtype_valid(in->dtype) || !stk__dtype_valid(like->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  size_t n = 1;
  for (int d = 0; d < in->ndim; d++) n *= (size_t)in->shape[d];
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, like->dtype, in->ndim, in->shape, in->layout, &out));
  stk__convert(out->data, like->dtype, in->data, in->dtype, n);
  return STK_OK;
}

/* GPU: the cast kernel into the type of `like`, which stays where it is (only its type
 * is read, so a CPU `like` is not uploaded). */
static stk_status cast_like_run_gpu(stk__node *node, stk__gpu_batch *b) {
  stk_dtype in = stk_tensor_list_dtype(stk__gpu_input(b, 0)),
            like = stk_tensor_list_dtype(stk__gpu_input(b, 1));
  if (!stk__dtype_valid(in) || !stk__dtype_valid(like))
    return STK_FAIL(STK_ERR_UNSUPPORTED, "%s: unknown input type", stk__node_name(node));
  return stk__gpu_cast_to(node, b, like);
}

static const stk_op_schema cast_like_schema = {
    .name = "cast_like",
    .doc =
        "Converts input 0 to the element type of input 1, as cast does (floats to integers: "
        "rounded half away from zero, then saturated).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 2,
    .max_inputs = 2,
    .inputs = cast_like_in,
    .num_outputs = 1,
    .outputs = cast_like_out,
    .num_args = 0,
    .args = NULL,
    .gpu_check =
        "f = cast(IN, dtype=\"int16\", device=@)\n"
        "return cast_like(IN, f, device=@)",
};
const stk__op_def stk__op_cast_like = {
    .schema = &cast_like_schema, .run_sample = cast_like_run, .run_gpu = cast_like_run_gpu};
