/* Tensors made from values: zeros, ones, full, zeros_like, ones_like, full_like, and
 * lookup_table (values looked up by integer key). */
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

#define FL_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool"

static const stk_port_schema one_out[] = {{"output", "the result"}};

/* ---- zeros / ones ---- */

enum { Z_SHAPE, Z_DTYPE, Z_LAYOUT, Z_COUNT_ };
static const stk_arg_schema zeros_args[] = {
    [Z_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "[]",
                 .doc = "the output shape ([]: a scalar)"},
    [Z_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"int32\"",
                 .choices = FL_DTYPES,
                 .doc = "the element type"},
    [Z_LAYOUT] = {.name = "layout",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "the output layout"},
};
STK__CHECK_ARGS(zeros_args, Z_COUNT_);

static stk_status shape_arg(stk__node *node, stk__sample *s, int arg, int *ndim, int64_t *shape) {
  const int64_t *v;
  size_t n = stk__arg_ints(node, s, arg, &v);
  if (n > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape has %zu dimensions, at most %d", n,
                      STK_MAX_NDIM);
  int64_t vol = 1;
  for (size_t d = 0; d < n; d++) {
    if (v[d] < 0 || (v[d] > 0 && vol > (INT64_C(1) << 40) / v[d]))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape[%zu] = %lld is invalid", d,
                        (long long)v[d]);
    vol *= v[d];
    shape[d] = v[d];
  }
  *ndim = (int)n;
  return STK_OK;
}

/* Fills count elements of dt with one value. */
static void fill_value(void *dst, stk_dtype dt, size_t count, double v) {
  size_t es = stk_dtype_size(dt);
  if (!count) return;
  stk__store_double(dst, dt, 0, v);
  for (size_t i = 1; i < count; i++) memcpy((char *)dst + i * es, dst, es);
}

static stk_status const_run(stk__node *node, stk__sample *s, double v) {
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  STK_TRY(shape_arg(node, s, Z_SHAPE, &ndim, shape));
  const char *layout = stk__arg_string(node, Z_LAYOUT);
  if (*layout && (int)strlen(layout) != ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "layout = \"%s\" does not match %d dimensions", layout, ndim);
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, Z_DTYPE));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, ndim, shape, layout, &out));
  fill_value(out->data, dt, (size_t)stk__tn_volume(ndim, shape), v);
  return STK_OK;
}

static stk_status zeros_run(stk__node *n, stk__sample *s) { return const_run(n, s, 0.0); }
static stk_status ones_run(stk__node *n, stk__sample *s) { return const_run(n, s, 1.0); }

#define CONST_OP(ident, dali, what, runfn)      \
  static const stk_op_schema ident##_schema = { \
      .name = dali,                             \
      .doc = what,                              \
      .devices = STK_DEVICE_CPU,                \
      .flags = STK_OPF_NO_INPUT,                \
      .num_outputs = 1,                         \
      .outputs = one_out,                       \
      .num_args = Z_COUNT_,                     \
      .args = zeros_args,                       \
  };                                            \
  const stk__op_def stk__op_##ident = {.schema = &ident##_schema, .run_sample = runfn};

CONST_OP(zeros, "zeros", "A tensor of zeros of the given shape and type (DALI's zeros).", zeros_run)
CONST_OP(ones, "ones", "A tensor of ones of the given shape and type (DALI's ones).", ones_run)

/* ---- full / full_like ---- */

enum { F_SHAPE, F_LAYOUT, F_COUNT_ };
static const stk_arg_schema full_args[] = {
    [F_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "the output shape (default: the fill value's)"},
    [F_LAYOUT] = {.name = "layout",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "the output layout"},
};
STK__CHECK_ARGS(full_args, F_COUNT_);

static const stk_port_schema full_in[] = {
    {"fill_value", "the value, broadcast to the shape by NumPy's rules"}};
static const stk_port_schema full_like_in[] = {
    {"data", "the tensor whose shape, type and layout the output takes"},
    {"fill_value", "the value, broadcast to data's shape by NumPy's rules"}};

/* Broadcasts `v` (NumPy's rules: trailing axes match or are 1) into out[ndim, shape] of
 * type dt. */
static stk_status broadcast_fill(stk__node *node, stk__sample *s, const stk__tensor *v, void *out,
                                 stk_dtype dt, int ndim, const int64_t *shape) {
  if (v->ndim > ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the fill value has %d dimensions, the output %d", v->ndim, ndim);
  stk_tn_copy p;
  stk__tn_copy_init(&p, out, v->data, ndim, shape);
  int64_t vstride[STK_MAX_NDIM];
  stk__tn_dense_strides(v->ndim, v->shape, vstride);
  for (int d = 0; d < ndim; d++) {
    int k = d - (ndim - v->ndim);
    int64_t ext = k >= 0 ? v->shape[k] : 1;
    if (ext != 1 && ext != shape[d])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the fill value's extent %lld does not broadcast to %lld (axis %d)",
                        (long long)ext, (long long)shape[d], d);
    p.src_stride[d] = ext == 1 ? 0 : vstride[k];
  }
  if (v->dtype == dt) {
    stk__tn_copy_run(&p, (int)stk_dtype_size(dt));
    return STK_OK;
  }
  size_t n = (size_t)p.count;
  p.dst = stk__scratch(s, n * stk_dtype_size(v->dtype) + 1);
  if (!p.dst) return STK_ERR_OUT_OF_MEMORY;
  stk__tn_copy_run(&p, (int)stk_dtype_size(v->dtype));
  stk__convert(out, dt, p.dst, v->dtype, n);
  return STK_OK;
}

static stk_status full_run(stk__node *node, stk__sample *s) {
  const stk__tensor *v = stk__input(s, 0);
  int ndim = v->ndim;
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, v->shape, sizeof shape);
  if (stk__arg_given(node, F_SHAPE)) STK_TRY(shape_arg(node, s, F_SHAPE, &ndim, shape));
  const char *layout = stk__arg_string(node, F_LAYOUT);
  if (*layout && (int)strlen(layout) != ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "layout = \"%s\" does not match %d dimensions", layout, ndim);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, v->dtype, ndim, shape, layout, &out));
  return broadcast_fill(node, s, v, out->data, v->dtype, ndim, shape);
}

static stk_status full_like_run(stk__node *node, stk__sample *s) {
  const stk__tensor *d = stk__input(s, 0), *v = stk__input(s, 1);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, d->dtype, d->ndim, d->shape, d->layout, &out));
  return broadcast_fill(node, s, v, out->data, d->dtype, d->ndim, d->shape);
}

static const stk_op_schema full_schema = {
    .name = "full",
    .doc =
        "A tensor of `shape` filled with the input value, broadcast by NumPy's rules, in the "
        "value's type (DALI's full).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = full_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = F_COUNT_,
    .args = full_args,
};
const stk__op_def stk__op_full = {.schema = &full_schema, .run_sample = full_run};

static const stk_op_schema full_like_schema = {
    .name = "full_like",
    .doc =
        "A tensor with data's shape, type and layout filled with fill_value, broadcast by "
        "NumPy's rules and converted to data's type (DALI's full_like).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 2,
    .max_inputs = 2,
    .inputs = full_like_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = 0,
};
const stk__op_def stk__op_full_like = {.schema = &full_like_schema, .run_sample = full_like_run};

/* ---- zeros_like / ones_like ---- */

enum { ZL_DTYPE, ZL_COUNT_ };
static const stk_arg_schema zeros_like_args[] = {
    [ZL_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .choices = FL_DTYPES,
                  .doc = "the element type (default: data's)"},
};
STK__CHECK_ARGS(zeros_like_args, ZL_COUNT_);
static const stk_port_schema like_in[] = {
    {"data", "the tensor whose shape and layout (and type) the output takes"}};

static stk_status like_run(stk__node *node, stk__sample *s, double v) {
  const stk__tensor *d = stk__input(s, 0);
  stk_dtype dt =
      stk__arg_given(node, ZL_DTYPE) ? stk__dtype_arg(stk__arg_string(node, ZL_DTYPE)) : d->dtype;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, d->ndim, d->shape, d->layout, &out));
  fill_value(out->data, dt, (size_t)stk__tn_volume(d->ndim, d->shape), v);
  return STK_OK;
}
static stk_status zeros_like_run(stk__node *n, stk__sample *s) { return like_run(n, s, 0.0); }
static stk_status ones_like_run(stk__node *n, stk__sample *s) { return like_run(n, s, 1.0); }

#define LIKE_OP(ident, dali, what, runfn)       \
  static const stk_op_schema ident##_schema = { \
      .name = dali,                             \
      .doc = what,                              \
      .devices = STK_DEVICE_CPU,                \
      .min_inputs = 1,                          \
      .max_inputs = 1,                          \
      .inputs = like_in,                        \
      .num_outputs = 1,                         \
      .outputs = one_out,                       \
      .num_args = ZL_COUNT_,                    \
      .args = zeros_like_args,                  \
  };                                            \
  const stk__op_def stk__op_##ident = {.schema = &ident##_schema, .run_sample = runfn};

LIKE_OP(zeros_like, "zeros_like", "Zeros in data's shape and layout (DALI's zeros_like).",
        zeros_like_run)
LIKE_OP(ones_like, "ones_like", "Ones in data's shape and layout (DALI's ones_like).",
        ones_like_run)

/* ---- lookup_table ---- */

#define LUT_MAX_KEY 65535

enum { L_KEYS, L_VALUES, L_DEFAULT, L_DTYPE, L_COUNT_ };
static const stk_arg_schema lut_args[] = {
    [L_KEYS] = {.name = "keys",
                .type = STK_ARG_INTS,
                .default_text = "[]",
                .doc = "the keys, integers in [0, 65535]"},
    [L_VALUES] = {.name = "values",
                  .type = STK_ARG_FLOATS,
                  .default_text = "[]",
                  .doc = "the value of each key (as many as keys)"},
    [L_DEFAULT] = {.name = "default_value",
                   .type = STK_ARG_FLOAT,
                   .default_text = "0.0",
                   .doc = "the value of inputs that are no key"},
    [L_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float32\"",
                 .choices = FL_DTYPES,
                 .doc = "the output type"},
};
STK__CHECK_ARGS(lut_args, L_COUNT_);
static const stk_port_schema lut_in[] = {{"input", "integer keys"}};

typedef struct {
  stk_dtype dtype;
  int64_t len;   /* max key + 1 */
  void *table;   /* len elements of dtype; the default where no key maps */
  uint64_t dflt; /* one element of dtype */
} lut_state;

static stk_status lut_init(stk__node *node) {
  const int64_t *k;
  const double *v;
  size_t nk = stk__arg_ints(node, NULL, L_KEYS, &k), nv = stk__arg_floats(node, NULL, L_VALUES, &v);
  if (nk != nv)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "keys has %zu entries and values %zu; they pair up", nk, nv);
  int64_t len = 0;
  for (size_t i = 0; i < nk; i++) {
    if (k[i] < 0 || k[i] > LUT_MAX_KEY)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "keys[%zu] = %lld is outside [0, %d]",
                        i, (long long)k[i], LUT_MAX_KEY);
    len = k[i] + 1 > len ? k[i] + 1 : len;
  }
  lut_state *st = calloc(1, sizeof *st);
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, L_DTYPE));
  size_t es = stk_dtype_size(dt);
  if (st) st->table = malloc((size_t)len * es + 8);
  if (!st || !st->table) {
    free(st);
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, NULL, "no memory for the table");
  }
  st->dtype = dt, st->len = len;
  stk__store_double(&st->dflt, dt, 0, stk__arg_float(node, NULL, L_DEFAULT));
  for (int64_t i = 0; i < len; i++) memcpy((char *)st->table + i * (int64_t)es, &st->dflt, es);
  for (size_t i = 0; i < nk; i++) stk__store_double(st->table, dt, (size_t)k[i], v[i]);
  *stk__node_state(node) = st;
  return STK_OK;
}

static void lut_destroy(stk__node *node) {
  lut_state *st = *stk__node_state(node);
  if (st) free(st->table);
  free(st);
  *stk__node_state(node) = NULL;
}

static stk_status lut_check_input(stk__node *node, stk__sample *s, stk_dtype dt) {
  if (!stk__dtype_valid(dt) || stk_ar_is_float(dt))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the input must hold integer keys; got %s",
                      stk_dtype_name(dt));
  return STK_OK;
}

static stk_status lut_run(stk__node *node, stk__sample *s) {
  const lut_state *st = *stk__node_state(node);
  const stk__tensor *in = stk__input(s, 0);
  STK_TRY(lut_check_input(node, s, in->dtype));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, st->dtype, in->ndim, in->shape, in->layout, &out));
  int64_t n = stk__tn_volume(in->ndim, in->shape);
  int es = (int)stk_dtype_size(st->dtype);
  for (int64_t e = 0; e < n; e++)
    stk_tn_lookup_elem(in->data, in->dtype, out->data, es, st->table, st->len, st->dflt, e);
  return STK_OK;
}

static stk_status lut_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const lut_state *ls = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_dtype it = stk_tensor_list_dtype(in);
  stk_status st = lut_check_input(node, n ? stk__gpu_sample(b, 0) : NULL, it);
  int nd = stk_tensor_list_ndim(in);
  stk_gpu_tn_lookup_sample *ls_ = stk__calloc(n ? n : 1, sizeof *ls_, "lookup");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(nd ? nd : 1), sizeof(int64_t), "shapes");
  if (st == STK_OK && (!ls_ || !shapes)) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    stk__tn_from_list(in, i, &t);
    ls_[i].src = t.data, ls_[i].count = stk__tn_volume(nd, t.shape);
    memcpy(shapes + i * (size_t)nd, t.shape, sizeof(int64_t) * (size_t)nd);
  }
  if (st == STK_OK && n)
    st = stk__gpu_alloc_list(b, ls->dtype, nd, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, nd), &out);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    ls_[i].dst = d.data;
  }
  if (st == STK_OK && n) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    stk_gpu_tn_lookup_args a = {it, (int)stk_dtype_size(ls->dtype), ls->table, ls->len, ls->dflt};
    int rc =
        stk_gpu_run_tn_lookup(g->api, g->ctx, (int)n, ls_, &a, stk__gpu_stream(b), err, sizeof err);
    st = stk__gpu_op_check(node, rc, err);
  }
  free(ls_);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema lut_schema = {
    .name = "lookup_table",
    .doc =
        "Maps integer inputs through a table (DALI's lookup_table): keys[i] gives values[i], "
        "anything else default_value; the output has type dtype.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = lut_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = L_COUNT_,
    .args = lut_args,
    .gpu_check =
        "return lookup_table(IN, keys=[0, 1, 2, 255, 128], values=[5, -1.5, 7, 9, 1e6], "
        "default_value=0.25, device=@)",
};
const stk__op_def stk__op_lookup_table = {
    .schema = &lut_schema,
    .init = lut_init,
    .destroy = lut_destroy,
    .run_sample = lut_run,
    .run_gpu = lut_run_gpu,
};
