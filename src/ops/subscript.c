/* subscript (what `x[...]` on a data node becomes) and shapes (`x.shape()`), on the CPU
 * and the GPU.
 *
 * subscript reads each sample as NumPy reads `a[...]`: integer indices (negative ones
 * count from the end) remove their axis, slices keep it (start, stop, step with
 * Python's defaults and clamping, negative steps included), new axes of extent 1 are
 * inserted where the expression has None, and one ellipsis stands for the axes the
 * expression does not name. Every index, start, stop and step may be fed per sample by
 * a node (DALI's `x[idx]`). The result is a view made dense: a source offset and one
 * signed stride per output axis, gathered by the CPU loop below or by the GPU's gather
 * kernel (src/cuda/math.cu) with the same offset rule (math_common.h). */
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_math.h"
#include "../shared/math_common.h"
#include "gpu_util.h"
#include "image_util.h"

/* ---- subscript ---- */

enum { SUB_AT = 0, SUB_SLICE = 1, SUB_NEW = 2, SUB_ELLIPSIS = 3 };
#define SUB_POSITIONS STK_MAX_NDIM
enum { SUB_KINDS, SUB_NEW_NAMES, SUB_FIRST_POSITION };
/* argument index of position j's at / lo / hi / step */
#define SUB_ARG(j, what) (SUB_FIRST_POSITION + 4 * (j) + (what))
enum { P_AT, P_LO, P_HI, P_STEP };

#define SUB_POSITION_ARGS(j)                                                            \
  {"at_" #j,                                                                            \
   STK_ARG_INT,                                                                         \
   STK_ARGF_PER_SAMPLE,                                                                 \
   NULL,                                                                                \
   0,                                                                                   \
   0,                                                                                   \
   NULL,                                                                                \
   "position " #j " (kind 0): the index; negative counts from the end"},                \
      {"lo_" #j,                                                                        \
       STK_ARG_INT,                                                                     \
       STK_ARGF_PER_SAMPLE,                                                             \
       NULL,                                                                            \
       0,                                                                               \
       0,                                                                               \
       NULL,                                                                            \
       "position " #j " (kind 1): the slice's start (absent: the start for the step)"}, \
      {"hi_" #j,                                                                        \
       STK_ARG_INT,                                                                     \
       STK_ARGF_PER_SAMPLE,                                                             \
       NULL,                                                                            \
       0,                                                                               \
       0,                                                                               \
       NULL,                                                                            \
       "position " #j " (kind 1): the slice's stop (absent: the end for the step)"},    \
  {                                                                                     \
    "step_" #j, STK_ARG_INT, STK_ARGF_PER_SAMPLE, "1", 0, 0, NULL,                      \
        "position " #j " (kind 1): the slice's step (not 0; negative walks backwards)"  \
  }

static const stk_arg_schema subscript_args[] = {
    {"kinds", STK_ARG_INTS, STK_ARGF_REQUIRED, NULL, 0, 0, NULL,
     "the expression, one entry per position: 0 an integer index (the axis goes), 1 a "
     "slice, 2 a new axis of extent 1 (None), 3 the ellipsis (the axes not named; at most "
     "one). Axes after the last position are kept whole"},
    {"new_axis_names", STK_ARG_STRING, 0, "\"\"", 0, 0, NULL,
     "one layout letter per new axis, in order (empty: the output has no layout when the "
     "expression adds axes)"},
    SUB_POSITION_ARGS(0),
    SUB_POSITION_ARGS(1),
    SUB_POSITION_ARGS(2),
    SUB_POSITION_ARGS(3),
    SUB_POSITION_ARGS(4),
    SUB_POSITION_ARGS(5),
    SUB_POSITION_ARGS(6),
    SUB_POSITION_ARGS(7),
};
STK__CHECK_ARGS(subscript_args, SUB_ARG(SUB_POSITIONS, 0));
_Static_assert(sizeof subscript_args / sizeof subscript_args[0] ==
                   SUB_FIRST_POSITION + 4 * SUB_POSITIONS,
               "four arguments per position");

static const stk_port_schema subscript_in[] = {{"input", "any tensor"}};
static const stk_port_schema subscript_out[] = {
    {"output", "the selected elements, dense, in the input's type"}};

/* The expression checked once: kinds, counts, names. */
static stk_status subscript_init(stk__node *node) {
  const int64_t *kinds;
  size_t n = stk__arg_ints(node, NULL, SUB_KINDS, &kinds);
  if (n > SUB_POSITIONS)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "kinds: %zu positions; at most %d", n,
                      SUB_POSITIONS);
  int ellipses = 0, news = 0;
  for (size_t j = 0; j < n; j++) {
    if (kinds[j] < SUB_AT || kinds[j] > SUB_ELLIPSIS)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "kinds[%zu] = %lld is not 0, 1, 2 or 3", j, (long long)kinds[j]);
    ellipses += kinds[j] == SUB_ELLIPSIS;
    news += kinds[j] == SUB_NEW;
    if (kinds[j] == SUB_AT && !stk__arg_given(node, SUB_ARG(j, P_AT)))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "position %zu is an index but at_%zu is not given", j, j);
  }
  if (ellipses > 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "kinds: an expression has at most one ellipsis");
  size_t names = strlen(stk__arg_string(node, SUB_NEW_NAMES));
  if (names && names != (size_t)news)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "new_axis_names = \"%s\" has %zu letters for %d new axes",
                      stk__arg_string(node, SUB_NEW_NAMES), names, news);
  return STK_OK;
}

/* One sample's view: the source offset (elements) of the output's origin, and the
 * output's shape with the source stride of each of its axes. */
typedef struct {
  int ndim;
  int64_t shape[STK_MAX_NDIM], stride[STK_MAX_NDIM], base;
  char layout[STK_MAX_LAYOUT + 1];
} sub_view;

typedef struct {
  sub_view *v;
  bool named; /* the input has a layout, so kept axes have letters */
  bool lost;  /* a letter is missing: the output has no layout */
  int news;   /* new axes so far */
} sub_build;

static stk_status sub_push(stk__node *node, stk__sample *s, sub_build *b, int64_t extent,
                           int64_t stride, char letter) {
  sub_view *v = b->v;
  if (v->ndim >= STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the result would have more than %d dimensions", STK_MAX_NDIM);
  v->shape[v->ndim] = extent, v->stride[v->ndim] = stride;
  if (letter && v->ndim < STK_MAX_LAYOUT)
    v->layout[v->ndim] = letter;
  else
    b->lost = true;
  v->ndim++;
  return STK_OK;
}

/* A slice of an axis of `extent` elements, as Python's slice.indices: *lo is the first
 * index, *count the number of elements. */
static stk_status sub_slice(stk__node *node, stk__sample *s, int j, int axis, int64_t extent,
                            int64_t *lo, int64_t *step, int64_t *count) {
  int64_t st = stk__arg_int(node, s, SUB_ARG(j, P_STEP));
  if (st == 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "step_%d (position %d of the subscript): the slice step of axis %d is 0", j,
                      j, axis);
  bool has_lo = stk__arg_given(node, SUB_ARG(j, P_LO)),
       has_hi = stk__arg_given(node, SUB_ARG(j, P_HI));
  int64_t a = has_lo ? stk__arg_int(node, s, SUB_ARG(j, P_LO)) : (st > 0 ? 0 : extent - 1);
  int64_t z = has_hi ? stk__arg_int(node, s, SUB_ARG(j, P_HI)) : (st > 0 ? extent : -1);
  int64_t min = st > 0 ? 0 : -1, max = st > 0 ? extent : extent - 1;
  if (has_lo) {
    if (a < 0) a += extent;
    a = a < min ? min : a > max ? max : a;
  }
  if (has_hi) {
    if (z < 0) z += extent;
    z = z < min ? min : z > max ? max : z;
  }
  int64_t c = st > 0 ? (z - a + st - 1) / st : (a - z + (-st) - 1) / (-st);
  *lo = a, *step = st, *count = c > 0 ? c : 0;
  return STK_OK;
}

static stk_status sub_plan(stk__node *node, stk__sample *s, int in_ndim, const int64_t *in_shape,
                           const char *in_layout, sub_view *v) {
  const int64_t *kinds;
  int n = (int)stk__arg_ints(node, NULL, SUB_KINDS, &kinds);
  const char *names = stk__arg_string(node, SUB_NEW_NAMES);
  int named_axes = 0;
  for (int j = 0; j < n; j++) named_axes += kinds[j] == SUB_AT || kinds[j] == SUB_SLICE;
  if (named_axes > in_ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the expression indexes %d axes of a %d-dimensional input", named_axes,
                      in_ndim);
  memset(v, 0, sizeof *v);
  int64_t stride[STK_MAX_NDIM];
  for (int d = in_ndim - 1; d >= 0; d--)
    stride[d] = d == in_ndim - 1 ? 1 : stride[d + 1] * in_shape[d + 1];
  sub_build b = {v, (int)strlen(in_layout) == in_ndim && in_ndim > 0, false, 0};
  if (!b.named && in_ndim > 0) b.lost = true;
  int axis = 0;
  for (int j = 0; j <= n; j++) {
    int kind = j < n ? (int)kinds[j] : SUB_ELLIPSIS; /* after the last position: the rest, whole */
    if (kind == SUB_ELLIPSIS) {
      int whole = j < n ? in_ndim - named_axes : in_ndim - axis;
      for (int k = 0; k < whole; k++, axis++)
        STK_TRY(sub_push(node, s, &b, in_shape[axis], stride[axis], b.named ? in_layout[axis] : 0));
    } else if (kind == SUB_NEW) {
      STK_TRY(sub_push(node, s, &b, 1, 0, names[0] ? names[b.news] : 0));
      b.news++;
    } else if (kind == SUB_AT) {
      int64_t i = stk__arg_int(node, s, SUB_ARG(j, P_AT)), ext = in_shape[axis];
      int64_t k = i < 0 ? i + ext : i;
      if (k < 0 || k >= ext)
        return STK__SFAIL(
            STK_ERR_INVALID_ARGUMENT, node, s,
            "at_%d (position %d of the subscript): index %lld is out of range for axis %d of "
            "extent %lld",
            j, j, (long long)i, axis, (long long)ext);
      v->base += k * stride[axis];
      axis++;
    } else {
      int64_t lo = 0, step = 1, count = 0;
      STK_TRY(sub_slice(node, s, j, axis, in_shape[axis], &lo, &step, &count));
      if (count > 0) v->base += lo * stride[axis];
      STK_TRY(sub_push(node, s, &b, count, step * stride[axis], b.named ? in_layout[axis] : 0));
      axis++;
    }
  }
  if (b.lost) memset(v->layout, 0, sizeof v->layout);
  return STK_OK;
}

/* Copies the view: rows along the last axis when it is contiguous, else element by
 * element with the shared offset rule. */
static void sub_gather(const char *src, char *dst, const sub_view *v, size_t es) {
  int64_t count = 1;
  for (int d = 0; d < v->ndim; d++) count *= v->shape[d];
  if (count == 0) return;
  src += v->base * (int64_t)es;
  if (v->ndim > 0 && v->stride[v->ndim - 1] == 1) {
    int64_t row = v->shape[v->ndim - 1], rows = count / row;
    for (int64_t r = 0; r < rows; r++) {
      int64_t off = stk_ar_gather_offset(v->ndim - 1, v->shape, v->stride, r);
      memcpy(dst + r * row * (int64_t)es, src + off * (int64_t)es, (size_t)row * es);
    }
    return;
  }
  for (int64_t e = 0; e < count; e++)
    memcpy(dst + e * (int64_t)es,
           src + stk_ar_gather_offset(v->ndim, v->shape, v->stride, e) * (int64_t)es, es);
}

static stk_status subscript_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  sub_view v;
  STK_TRY(sub_plan(node, s, in->ndim, in->shape, in->layout, &v));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, v.ndim, v.shape, v.layout, &out));
  sub_gather(in->data, out->data, &v, stk_dtype_size(in->dtype));
  return STK_OK;
}

/* GPU: the same views planned on the host, one gather launch for the batch. */
static stk_status subscript_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_GATHER));
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_dtype dt = stk_tensor_list_dtype(in);
  size_t es = stk_dtype_size(dt);
  stk_gpu_gather_sample *gs = stk__calloc(n ? n : 1, sizeof *gs, "a subscript plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  stk_status st = gs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  sub_view v0;
  memset(&v0, 0, sizeof v0);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    sub_view v;
    st = sub_plan(node, stk__gpu_sample(b, i), d.ndim, d.shape, d.layout, &v);
    if (st != STK_OK) break;
    if (i == 0) v0 = v;
    memcpy(shapes + i * (size_t)v.ndim, v.shape, (size_t)v.ndim * sizeof(int64_t));
    gs[i].src = (const char *)d.data + v.base * (int64_t)es;
    gs[i].ndim = v.ndim;
    gs[i].count = 1;
    for (int k = 0; k < v.ndim; k++) gs[i].count *= v.shape[k];
    memcpy(gs[i].shape, v.shape, sizeof v.shape);
    memcpy(gs[i].stride, v.stride, sizeof v.stride);
  }
  if (st == STK_OK && n > 0)
    st = stk__gpu_alloc_list(b, dt, v0.ndim, shapes, v0.layout,
                             stk__gpu_shapes_equal(shapes, n, v0.ndim), &out);
  if (st == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      gs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_gather(g->api, g->ctx, (int)n, gs, &(stk_gpu_elem_args){es},
                                              stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(gs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema subscript_schema = {
    .name = "subscript",
    .doc =
        "Indexes and slices every sample as NumPy's a[...] (what x[...] on a data node becomes, as "
        "DALI's subscript): integer indices remove their axis (negative ones count from the end; "
        "out "
        "of range is an error), slices keep it (Python's defaults and clamping, negative steps "
        "included), None inserts an axis of extent 1, one ellipsis stands for the axes not named. "
        "Indices and slice bounds may be fed per sample.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = subscript_in,
    .num_outputs = 1,
    .outputs = subscript_out,
    .num_args = sizeof subscript_args / sizeof subscript_args[0],
    .args = subscript_args,
    .gpu_check =
        "return subscript(IN, kinds=[1, 1, 0], lo_0=10, hi_0=50, step_1=2, at_2=1, device=@)",
};
const stk__op_def stk__op_subscript = {.schema = &subscript_schema,
                                       .init = subscript_init,
                                       .run_sample = subscript_run,
                                       .run_gpu = subscript_run_gpu};

/* ---- shapes ---- */

enum { SH_DTYPE, SHAPES_ARGS_COUNT_ };
static const stk_arg_schema shapes_args[] = {
    [SH_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"int64\"",
                  .choices =
                      "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64",
                  .doc = "type of the output's elements"},
};
STK__CHECK_ARGS(shapes_args, SHAPES_ARGS_COUNT_);
static const stk_port_schema shapes_in[] = {{"input", "any tensor (only its shape is read)"}};
static const stk_port_schema shapes_out[] = {
    {"output", "the input's shape: one element per dimension"}};

static stk_status shapes_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, SH_DTYPE));
  int64_t n = in->ndim;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, 1, &n, NULL, &out));
  for (int d = 0; d < in->ndim; d++)
    stk__store_double(out->data, dt, (size_t)d, (double)in->shape[d]);
  return STK_OK;
}

/* GPU: the shapes are known on the host; they are written there and uploaded in one
 * copy (the input itself is not read, so a CPU input stays where it is). */
static stk_status shapes_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const stk_tensor_list *in = stk__gpu_input(b, 0);
  size_t n = stk__gpu_batch_size(b);
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, SH_DTYPE));
  int ndim = stk_tensor_list_ndim(in);
  size_t es = stk_dtype_size(dt), bytes = (size_t)ndim * es;
  int64_t *shapes = stk__calloc(n ? n : 1, sizeof(int64_t), "shapes");
  char *host = stk__calloc((n ? n : 1) * (bytes ? bytes : 1), 1, "the shapes");
  stk_status st = shapes && host ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  stk_tensor_list *out = NULL;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    shapes[i] = ndim;
    for (int k = 0; k < ndim; k++)
      stk__store_double(host + i * bytes, dt, (size_t)k, (double)d.shape[k]);
  }
  if (st == STK_OK && n > 0) st = stk__gpu_alloc_list(b, dt, 1, shapes, "", true, &out);
  if (st == STK_OK && n > 0 && bytes) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    for (size_t i = 0; i < n && st == STK_OK;
         i++) { /* pageable source: the copy is taken at the call */
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      st = stk__gpu_op_check(node,
                             g->api->memcpy_async(g->ctx, d.data, host + i * bytes, bytes,
                                                  stk__gpu_stream(b), err, sizeof err),
                             err);
    }
  }
  free(shapes);
  free(host);
  return stk__gpu_finish(b, NULL, false, out, st);
}

static const stk_op_schema shapes_schema = {
    .name = "shapes",
    .doc =
        "The shape of every sample as a 1D tensor (DALI's shapes; what x.shape() on a data node "
        "becomes).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = shapes_in,
    .num_outputs = 1,
    .outputs = shapes_out,
    .num_args = sizeof shapes_args / sizeof shapes_args[0],
    .args = shapes_args,
    .gpu_check = "return shapes(IN, dtype=\"int32\", device=@)",
};
const stk__op_def stk__op_shapes = {
    .schema = &shapes_schema, .run_sample = shapes_run, .run_gpu = shapes_run_gpu};
