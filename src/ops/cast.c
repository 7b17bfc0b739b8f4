/* cast: converts a tensor of any shape and layout to another element type. */
#include "image_util.h"

#define CAST_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool|float|double|half"

enum { A_DTYPE };

static const stk_arg_schema cast_args[] = {
    {"dtype", STK_ARG_STRING, STK_ARGF_REQUIRED, NULL, 0, 0, CAST_DTYPES,
     "output type. To integers: round half away from zero, then saturate to the type's "
     "range (NaN -> 0); to bool: non-zero -> 1; between floats: IEEE rounding"},
};

static const stk_port_schema cast_in[] = {{"input", "a tensor of any type"}};
static const stk_port_schema cast_out[] = {{"output", "the same values in the new type"}};

static stk_status cast_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  stk_dtype dtype = stk__dtype_arg(stk__arg_string(node, A_DTYPE));
  size_t n = 1;
  for (int d = 0; d < in->ndim; d++) n *= (size_t)in->shape[d];
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dtype, in->ndim, in->shape, in->layout, &out));
  stk__convert(out->data, dtype, in->data, in->dtype, n);
  return STK_OK;
}

static const stk_op_schema cast_schema = {
    "cast",
    "Converts every element to `dtype` with saturation: float to integer rounds half away "
    "from zero and clamps to the type's range (DALI's CPU cast).",
    STK_DEVICE_CPU, 0, 1, 1, cast_in, 1, cast_out,
    sizeof cast_args / sizeof cast_args[0], cast_args};
const stk__op_def stk__op_cast = {&cast_schema, NULL, NULL, NULL, cast_run, NULL, NULL};
