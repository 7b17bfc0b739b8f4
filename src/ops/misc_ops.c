/* one_hot and cast_like on the CPU. */
#include <math.h>
#include <string.h>

#include "image_util.h"

#define OH_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool|float|double"

/* ---- one_hot ---- */
enum { OH_NUM_CLASSES, OH_AXIS, OH_AXIS_NAME, OH_ON, OH_OFF, OH_DTYPE };
static const stk_arg_schema one_hot_args[] = {
    {"num_classes", STK_ARG_INT, STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE, NULL,
     1, 1 << 24, NULL, "number of classes: the extent of the new axis"},
    {"axis", STK_ARG_INT, 0, "-1", 0, 0, NULL,
     "where the new axis goes, in [0, ndim] (-1: last). A scalar or one-element [1] input "
     "gives just [num_classes]"},
    {"axis_name", STK_ARG_STRING, 0, "\"\"", 0, 0, NULL,
     "one letter naming the new axis in the output layout (the layout is empty otherwise)"},
    {"on_value", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "1.0", 0, 0, NULL,
     "value where the class matches"},
    {"off_value", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "0.0", 0, 0, NULL, "value elsewhere"},
    {"dtype", STK_ARG_STRING, 0, "\"float32\"", 0, 0, OH_DTYPES, "output type"},
};
static const stk_port_schema one_hot_in[] = {
    {"input", "class indices, any numeric type (fractions truncated toward zero)"}};
static const stk_port_schema one_hot_out[] = {
    {"output", "the encoding: off_value everywhere but on_value at each index; indices "
               "outside [0, num_classes) give a row of off_value"}};

static stk_status one_hot_init(stk__node *node) {
  if (strlen(stk__arg_string(node, OH_AXIS_NAME)) > 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "axis_name = \"%s\" must be a single letter", stk__arg_string(node, OH_AXIS_NAME));
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

static stk_status one_hot_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  int64_t ncls = stk__arg_int(node, s, OH_NUM_CLASSES);
  if (ncls < 1 || ncls > (1 << 24))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "num_classes = %lld must lie in [1, 2^24]", (long long)ncls);
  size_t n = 1;
  for (int d = 0; d < in->ndim; d++) n *= (size_t)in->shape[d];
  bool scalar = in->ndim == 0 || (in->ndim == 1 && in->shape[0] == 1);
  int axis = (int)stk__arg_int(node, s, OH_AXIS);
  if (scalar) axis = 0;
  else if (axis < 0) axis = in->ndim;
  if (axis > in->ndim || in->ndim + 1 > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "axis = %d is outside [0, %d] for an input of %d dimensions", axis,
                      in->ndim, in->ndim);
  int64_t shape[STK_MAX_NDIM];
  int ndim = 0;
  size_t inner = 1;
  if (scalar) {
    shape[ndim++] = ncls;
  } else {
    for (int d = 0; d < in->ndim; d++) {
      if (d == axis) shape[ndim++] = ncls;
      shape[ndim++] = in->shape[d];
      if (d >= axis) inner *= (size_t)in->shape[d];
    }
    if (axis == in->ndim) shape[ndim++] = ncls;
  }
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, OH_DTYPE));
  char layout[STK_MAX_LAYOUT + 1];
  one_hot_layout(in, axis, stk__arg_string(node, OH_AXIS_NAME), scalar, layout);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, ndim, shape, layout, &out));
  size_t es = stk_dtype_size(dt), total = n * (size_t)ncls;
  uint8_t on[8], off[8];
  stk__store_double(on, dt, 0, stk__arg_float(node, s, OH_ON));
  stk__store_double(off, dt, 0, stk__arg_float(node, s, OH_OFF));
  for (size_t i = 0; i < total; i++) memcpy((char *)out->data + i * es, off, es);
  double *labels = stk__scratch(s, (n ? n : 1) * sizeof(double));
  if (!labels) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for the labels");
  stk__convert(labels, STK_DTYPE_FLOAT64, in->data, in->dtype, n);
  for (size_t i = 0; i < n; i++) {
    double l = trunc(labels[i]);
    if (!(l >= 0.0 && l < (double)ncls)) continue;
    size_t o = i / inner, j = i % inner;
    memcpy((char *)out->data + ((o * (size_t)ncls + (size_t)l) * inner + j) * es, on, es);
  }
  return STK_OK;
}

static const stk_op_schema one_hot_schema = {
    "one_hot",
    "One-hot encodes class indices (DALI's one_hot): a new axis of num_classes entries at "
    "`axis`, holding on_value at each index and off_value elsewhere.",
    STK_DEVICE_CPU, 0, 1, 1, one_hot_in, 1, one_hot_out,
    sizeof one_hot_args / sizeof one_hot_args[0], one_hot_args};
const stk__op_def stk__op_one_hot = {
    .schema = &one_hot_schema, .init = one_hot_init, .run_sample = one_hot_run};

/* ---- cast_like ---- */
static const stk_port_schema cast_like_in[] = {
    {"input", "the values to convert"}, {"like", "a tensor whose type the output takes"}};
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

static const stk_op_schema cast_like_schema = {
    "cast_like",
    "Converts input 0 to the element type of input 1, as cast does (floats to integers: "
    "rounded half away from zero, then saturated).",
    STK_DEVICE_CPU, 0, 2, 2, cast_like_in, 1, cast_like_out, 0, NULL};
const stk__op_def stk__op_cast_like = {
    .schema = &cast_like_schema, .run_sample = cast_like_run};
