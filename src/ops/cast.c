/* cast: converts a tensor of any shape and layout to another element type. */
#include <stdlib.h>
#include "gpu_util.h"
#include "image_util.h"

#define CAST_DTYPES                                                                              \
  "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool|float|double|" \
  "half"

enum { A_DTYPE, CAST_ARGS_COUNT_ };

static const stk_arg_schema cast_args[] = {
    [A_DTYPE] =
        {.name = "dtype",
         .type = STK_ARG_STRING,
         .flags = STK_ARGF_REQUIRED,
         .choices = CAST_DTYPES,
         .doc = "output type. To integers: round half away from zero, then saturate to the type's "
                "range (NaN -> 0); to bool: non-zero -> 1; between floats: IEEE rounding"},
};
STK__CHECK_ARGS(cast_args, CAST_ARGS_COUNT_);

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

/* Same-shape element-wise GPU work: a cast to `dtype` (identity types copy); also
 * cast_like's GPU backend (misc_ops.c). */
stk_status stk__gpu_cast_to(stk__node *node, stk__gpu_batch *b, stk_dtype dtype) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_cast_sample *cs = stk__calloc(n, sizeof *cs, "a cast plan");
  int64_t *shapes = stk__calloc(n * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  stk_status st = cs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    int64_t count = 1;
    for (int k = 0; k < ndim; k++) count *= d.shape[k];
    cs[i] = (stk_gpu_cast_sample){d.data, NULL, count};
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, dtype, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      cs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_cast(g->api, g->ctx, (int)n, cs,
                                            &(stk_gpu_io_args){stk_tensor_list_dtype(in), dtype},
                                            stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(cs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static stk_status cast_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__gpu_cast_to(node, b, stk__dtype_arg(stk__arg_string(node, A_DTYPE)));
}

/* ---- copy: the same data, on the operator's device (DataNode.gpu() in Python) ---- */

static stk_status copy_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, in->ndim, in->shape, in->layout, &out));
  size_t bytes = stk_dtype_size(in->dtype);
  for (int d = 0; d < in->ndim; d++) bytes *= (size_t)in->shape[d];
  if (bytes) memcpy(out->data, in->data, bytes);
  return STK_OK;
}

static stk_status copy_run_gpu(stk__node *node, stk__gpu_batch *b) {
  stk_tensor_list *in;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  if (!owned) stk_tensor_list_retain(in); /* already on the device: share it */
  return stk__gpu_output(b, 0, in);
}

static const stk_port_schema copy_in[] = {{"input", "a tensor of any type"}};
static const stk_port_schema copy_out[] = {{"output", "the same data on this operator's device"}};
static const stk_op_schema copy_schema = {
    .name = "copy",
    .doc =
        "The input unchanged, on this operator's device: with "
        "device=\"gpu\" it moves CPU data to the GPU "
        "(DataNode.gpu() in Python).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = copy_in,
    .num_outputs = 1,
    .outputs = copy_out,
    .num_args = 0,
    .args = NULL,
};
const stk__op_def stk__op_copy_op = {
    .schema = &copy_schema,
    .run_sample = copy_run,
    .run_gpu = copy_run_gpu,
};

static const stk_op_schema cast_schema = {
    .name = "cast",
    .doc =
        "Converts every element to `dtype` with saturation: float to integer rounds half away "
        "from zero and clamps to the type's range (DALI's CPU cast).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = cast_in,
    .num_outputs = 1,
    .outputs = cast_out,
    .num_args = sizeof cast_args / sizeof cast_args[0],
    .args = cast_args,
    .gpu_check = "return cast(IN, dtype=\"float32\", device=@)",
};
const stk__op_def stk__op_cast = {
    .schema = &cast_schema,
    .run_sample = cast_run,
    .run_gpu = cast_run_gpu,
};
