/* The shape operators of the tensor toolbox: reshape, reinterpret, expand_dims, squeeze,
 * per_frame (the bytes stay as they are; only shape, type or layout change) and transpose
 * (a strided copy). On the GPU the metadata-only ones hand out a view of their input (no
 * copy); on the CPU each sample is copied into its own output (samples own their
 * memory there). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

#define TN_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool"

/* The result of a metadata operator for one sample. */
typedef struct {
  stk_dtype dtype;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
} shape_out;

/* `in` points at the sample's inputs (tensor_util.h: in[1] is the shape input). */
typedef stk_status (*shape_fn)(stk__node *node, stk__sample *s, const stk__tensor *in,
                               shape_out *o);

static size_t bytes_of(stk_dtype dt, int ndim, const int64_t *shape) {
  return stk_dtype_size(dt) * (size_t)stk__tn_volume(ndim, shape);
}

/* CPU: the input's bytes under the new metadata. */
static stk_status meta_run(stk__node *node, stk__sample *s, shape_fn fn) {
  stk__tensor ins[STK_TN_MAX_INPUTS];
  stk__tn_cpu_inputs(node, s, ins);
  const stk__tensor *in = &ins[0];
  shape_out o;
  STK_TRY(fn(node, s, in, &o));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, o.dtype, o.ndim, o.shape, o.layout, &out));
  size_t bytes = bytes_of(in->dtype, in->ndim, in->shape);
  if (bytes) memcpy(out->data, in->data, bytes);
  return STK_OK;
}

/* GPU: a view of the device input with the per-sample metadata (one rank per batch). */
static stk_status meta_run_gpu(stk__node *node, stk__gpu_batch *b, shape_fn fn) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int64_t *shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  stk_status st = shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  shape_out o0 = {.dtype = stk_tensor_list_dtype(in)};
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t[STK_TN_MAX_INPUTS];
    shape_out o;
    st = stk__tn_gpu_inputs(node, b, in, i, t);
    if (st != STK_OK) break;
    st = fn(node, stk__gpu_sample(b, i), t, &o);
    if (st != STK_OK) break;
    if (i == 0) o0 = o;
    if (o.ndim != o0.ndim)
      st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, stk__gpu_sample(b, i),
                      "the output has %d dimensions here and %d in sample 0", o.ndim, o0.ndim);
    memcpy(shapes + i * (size_t)o0.ndim, o.shape, (size_t)o.ndim * sizeof(int64_t));
  }
  if (st == STK_OK) st = stk__gpu_reshape_view(in, o0.dtype, o0.ndim, shapes, o0.layout, &out);
  free(shapes);
  if (st == STK_OK) st = stk__gpu_output(b, 0, out);
  if (owned) stk_tensor_list_release(in);
  return st;
}

/* ---- reshape / reinterpret ---- */

enum { R_SHAPE, R_REL_SHAPE, R_LAYOUT, R_SRC_DIMS, R_DTYPE, R_COUNT_ };
static const stk_arg_schema reshape_args[] = {
    [R_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "the output shape; one extent may be -1 (inferred from the volume). "
                        "A second input, when given, replaces it"},
    [R_REL_SHAPE] = {.name = "rel_shape",
                     .type = STK_ARG_FLOATS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "the output shape as multiples of the input's extents (extent d = "
                            "round(rel_shape[d] * in[d])); one entry may be -1 (inferred)"},
    [R_LAYOUT] = {.name = "layout",
                  .type = STK_ARG_STRING,
                  .doc = "the output layout; when absent, the input's is kept when the rank "
                         "does not change, else it is empty"},
    [R_SRC_DIMS] = {.name = "src_dims",
                    .type = STK_ARG_INTS,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .doc = "output extent d = input extent src_dims[d] (-1: a new unit axis); "
                           "dropped axes must have extent 1"},
    [R_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .choices = TN_DTYPES,
                 .doc = "reinterpret: the new element type (the bytes are kept; without a "
                        "shape, the last extent is rescaled)"},
};
STK__CHECK_ARGS(reshape_args, R_COUNT_);

static const stk_port_schema reshape_in[] = {
    {"input", "a tensor"}, {"shape", "optional: the output shape as a 1D integer tensor"}};
static const stk_port_schema reshape_out[] = {{"output", "the same bytes in the new shape"}};

/* Fills one -1 extent so the volume is `want`; checks the volume. */
static stk_status infer_extent(stk__node *node, stk__sample *s, int ndim, int64_t *shape,
                               int64_t want) {
  int free_at = -1;
  int64_t vol = 1;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == -1 && free_at < 0) {
      free_at = d;
      continue;
    }
    if (shape[d] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "shape[%d] = %lld: extents must be >= 0 with at most one -1", d,
                        (long long)shape[d]);
    vol *= shape[d];
  }
  if (free_at >= 0) {
    if (vol == 0 || want % vol != 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "cannot infer the -1 extent: %lld elements do not divide by %lld",
                        (long long)want, (long long)vol);
    shape[free_at] = want / vol;
    vol = want;
  }
  if (vol != want)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the new shape has %lld elements, the input %lld", (long long)vol,
                      (long long)want);
  return STK_OK;
}

/* The requested shape (before inference) from the shape input or argument, rel_shape or
 * src_dims; *given is false when none was. */
static stk_status requested_shape(stk__node *node, stk__sample *s, const stk__tensor *in,
                                  shape_out *o, bool *given) {
  *given = true;
  const int64_t *iv = NULL;
  const double *fv = NULL;
  size_t n = 0;
  if (stk__node_num_inputs(node) > 1) {
    const stk__tensor *sh = &in[1];
    n = (size_t)stk__tn_volume(sh->ndim, sh->shape);
    if (n > STK_MAX_NDIM)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the shape input has %zu values", n);
    for (size_t k = 0; k < n; k++) o->shape[k] = stk_ar_load_i(sh->data, sh->dtype, k);
  } else if (stk__arg_given(node, R_SHAPE)) {
    n = stk__arg_ints(node, s, R_SHAPE, &iv);
    if (n > STK_MAX_NDIM)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape has %zu values", n);
    memcpy(o->shape, iv, n * sizeof(int64_t));
  } else if (stk__arg_given(node, R_REL_SHAPE)) {
    n = stk__arg_floats(node, s, R_REL_SHAPE, &fv);
    if ((int)n > in->ndim)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "rel_shape has %zu values for an input of %d dimensions", n, in->ndim);
    for (size_t k = 0; k < n; k++)
      o->shape[k] = fv[k] < 0 ? -1 : (int64_t)llround(fv[k] * (double)in->shape[k]);
  } else if (stk__arg_given(node, R_SRC_DIMS)) {
    n = stk__arg_ints(node, s, R_SRC_DIMS, &iv);
    if (n > STK_MAX_NDIM)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "src_dims has %zu values", n);
    for (size_t k = 0; k < n; k++) {
      if (iv[k] < -1 || iv[k] >= in->ndim)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "src_dims[%zu] = %lld is not an input axis", k, (long long)iv[k]);
      o->shape[k] = iv[k] < 0 ? 1 : in->shape[iv[k]];
    }
  } else {
    *given = false;
  }
  o->ndim = (int)n;
  return STK_OK;
}

/* The output layout: the layout argument, the input's for an unchanged rank, else "". */
static stk_status reshape_layout(stk__node *node, stk__sample *s, const stk__tensor *in,
                                 shape_out *o) {
  o->layout[0] = '\0';
  if (stk__arg_given(node, R_LAYOUT)) {
    const char *l = stk__arg_string(node, R_LAYOUT);
    if (*l && (int)strlen(l) != o->ndim)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "layout = \"%s\" does not match the %d output dimensions", l, o->ndim);
    snprintf(o->layout, sizeof o->layout, "%s", l);
  } else if (o->ndim == in->ndim) {
    memcpy(o->layout, in->layout, sizeof o->layout);
  }
  return STK_OK;
}

static stk_status reshape_shape(stk__node *node, stk__sample *s, const stk__tensor *in,
                                shape_out *o) {
  bool given;
  o->dtype = in->dtype;
  STK_TRY(requested_shape(node, s, in, o, &given));
  if (!given) {
    o->ndim = in->ndim;
    memcpy(o->shape, in->shape, sizeof o->shape);
  }
  STK_TRY(infer_extent(node, s, o->ndim, o->shape, stk__tn_volume(in->ndim, in->shape)));
  return reshape_layout(node, s, in, o);
}

/* reinterpret: the new type's extents; without a shape, the last extent takes up the
 * change of element size. */
static stk_status reinterpret_shape(stk__node *node, stk__sample *s, const stk__tensor *in,
                                    shape_out *o) {
  bool given;
  o->dtype =
      stk__arg_given(node, R_DTYPE) ? stk__dtype_arg(stk__arg_string(node, R_DTYPE)) : in->dtype;
  size_t in_bytes = bytes_of(in->dtype, in->ndim, in->shape), es = stk_dtype_size(o->dtype);
  STK_TRY(requested_shape(node, s, in, o, &given));
  if (!given) {
    o->ndim = in->ndim ? in->ndim : 1;
    memcpy(o->shape, in->shape, sizeof o->shape);
    if (!in->ndim) o->shape[0] = 1;
    int64_t last_bytes = o->shape[o->ndim - 1] * (int64_t)stk_dtype_size(in->dtype);
    if (last_bytes % (int64_t)es != 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the last extent holds %lld bytes, not a multiple of %s's %zu",
                        (long long)last_bytes, stk_dtype_name(o->dtype), es);
    o->shape[o->ndim - 1] = last_bytes / (int64_t)es;
  }
  if (in_bytes % es != 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "%zu bytes are not a whole number of %s",
                      in_bytes, stk_dtype_name(o->dtype));
  STK_TRY(infer_extent(node, s, o->ndim, o->shape, (int64_t)(in_bytes / es)));
  return reshape_layout(node, s, in, o);
}

static stk_status reshape_check(stk__node *node) {
  int k = stk__arg_given(node, R_SHAPE) + stk__arg_given(node, R_REL_SHAPE) +
          stk__arg_given(node, R_SRC_DIMS) + (stk__node_num_inputs(node) > 1);
  if (k > 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give at most one of shape, rel_shape, src_dims and the shape input");
  return STK_OK;
}

static stk_status reshape_init(stk__node *node) {
  STK_TRY(reshape_check(node));
  if (stk__arg_given(node, R_DTYPE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "dtype belongs to reinterpret; reshape keeps the type");
  return STK_OK;
}

static stk_status reshape_run(stk__node *n, stk__sample *s) {
  return meta_run(n, s, reshape_shape);
}
static stk_status reshape_gpu(stk__node *n, stk__gpu_batch *b) {
  return meta_run_gpu(n, b, reshape_shape);
}
static stk_status reinterpret_run(stk__node *n, stk__sample *s) {
  return meta_run(n, s, reinterpret_shape);
}
static stk_status reinterpret_gpu(stk__node *n, stk__gpu_batch *b) {
  return meta_run_gpu(n, b, reinterpret_shape);
}

static const stk_op_schema reshape_schema = {
    .name = "reshape",
    .doc =
        "Gives each sample a new shape with the same elements in the same order (DALI's "
        "reshape): from shape (or a second input), rel_shape or src_dims. On the GPU no "
        "byte is copied.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = reshape_in,
    .num_outputs = 1,
    .outputs = reshape_out,
    .num_args = R_COUNT_,
    .args = reshape_args,
    .gpu_check = "return reshape(IN, shape=[-1, 3], layout=\"XC\", device=@)",
};
const stk__op_def stk__op_reshape = {
    .schema = &reshape_schema,
    .init = reshape_init,
    .run_sample = reshape_run,
    .run_gpu = reshape_gpu,
};

static const stk_op_schema reinterpret_schema = {
    .name = "reinterpret",
    .doc =
        "Reads each sample's bytes as another element type and/or shape (DALI's "
        "reinterpret); without a shape the last extent is rescaled. On the GPU no byte "
        "is copied.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = reshape_in,
    .num_outputs = 1,
    .outputs = reshape_out,
    .num_args = R_COUNT_,
    .args = reshape_args,
    .gpu_check = "return reinterpret(IN, dtype=\"int8\", device=@)",
};
const stk__op_def stk__op_reinterpret = {
    .schema = &reinterpret_schema,
    .init = reshape_check,
    .run_sample = reinterpret_run,
    .run_gpu = reinterpret_gpu,
};

/* ---- expand_dims / squeeze ---- */

enum { E_AXES, E_NEW_NAMES, E_COUNT_ };
static const stk_arg_schema expand_args[] = {
    [E_AXES] = {.name = "axes",
                .type = STK_ARG_INTS,
                .flags = STK_ARGF_REQUIRED,
                .doc = "where the new unit axes go, as indices in the output"},
    [E_NEW_NAMES] = {.name = "new_axis_names",
                     .type = STK_ARG_STRING,
                     .default_text = "\"\"",
                     .doc = "one letter per new axis, inserted into the input's layout"},
};
STK__CHECK_ARGS(expand_args, E_COUNT_);

static const stk_port_schema one_in[] = {{"input", "a tensor"}};
static const stk_port_schema one_out[] = {{"output", "the result"}};

static stk_status expand_shape(stk__node *node, stk__sample *s, const stk__tensor *in,
                               shape_out *o) {
  const int64_t *ax;
  size_t na = stk__arg_ints(node, s, E_AXES, &ax);
  const char *names = stk__arg_string(node, E_NEW_NAMES);
  int ndim = in->ndim + (int)na;
  if (ndim > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "%d dimensions exceed %d", ndim,
                      STK_MAX_NDIM);
  if (*names && strlen(names) != na)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "new_axis_names = \"%s\" needs one letter per axis (%zu)", names, na);
  bool has_layout = in->ndim == 0 || (int)strlen(in->layout) == in->ndim;
  if (*names && !has_layout)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "new_axis_names needs an input layout; the input has none");
  int slot[STK_MAX_NDIM];
  for (int d = 0; d < ndim; d++) slot[d] = -1;
  for (size_t k = 0; k < na; k++) {
    if (ax[k] < 0 || ax[k] >= ndim || slot[ax[k]] >= 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "axes[%zu] = %lld is out of [0, %d) or repeated", k, (long long)ax[k],
                        ndim);
    slot[ax[k]] = (int)k;
  }
  o->dtype = in->dtype, o->ndim = ndim;
  int src = 0;
  for (int d = 0; d < ndim; d++) {
    bool new_axis = slot[d] >= 0;
    o->shape[d] = new_axis ? 1 : in->shape[src];
    o->layout[d] = new_axis ? (*names ? names[slot[d]] : 0) : in->layout[src];
    if (!new_axis) src++;
  }
  o->layout[ndim] = '\0';
  if (!*names || !has_layout) o->layout[0] = '\0';
  return STK_OK;
}

static stk_status expand_run(stk__node *n, stk__sample *s) { return meta_run(n, s, expand_shape); }
static stk_status expand_gpu(stk__node *n, stk__gpu_batch *b) {
  return meta_run_gpu(n, b, expand_shape);
}

static const stk_op_schema expand_schema = {
    .name = "expand_dims",
    .doc =
        "Inserts unit axes at `axes` (indices in the output), named by new_axis_names "
        "(DALI's expand_dims). Without names the layout is dropped.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = one_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = E_COUNT_,
    .args = expand_args,
    .gpu_check = "return expand_dims(IN, axes=[0, 3], new_axis_names=\"FX\", device=@)",
};
const stk__op_def stk__op_expand_dims = {
    .schema = &expand_schema,
    .run_sample = expand_run,
    .run_gpu = expand_gpu,
};

enum { Q_AXES, Q_AXIS_NAMES, Q_COUNT_ };
static const stk_arg_schema squeeze_args[] = {
    [Q_AXES] = {.name = "axes",
                .type = STK_ARG_INTS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = "the axes to remove (extent 1 each); negative ones count from the end"},
    [Q_AXIS_NAMES] = {.name = "axis_names",
                      .type = STK_ARG_STRING,
                      .doc = "the axes to remove, as layout letters"},
};
STK__CHECK_ARGS(squeeze_args, Q_COUNT_);

static stk_status squeeze_init(stk__node *node) {
  if (stk__arg_given(node, Q_AXES) == stk__arg_given(node, Q_AXIS_NAMES))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give exactly one of axes and axis_names");
  return STK_OK;
}

static stk_status squeeze_shape(stk__node *node, stk__sample *s, const stk__tensor *in,
                                shape_out *o) {
  unsigned mask;
  STK_TRY(stk__tn_axes(node, s, in, Q_AXES, Q_AXIS_NAMES, false, &mask));
  o->dtype = in->dtype, o->ndim = 0;
  for (int d = 0; d < in->ndim; d++) {
    if (!(mask & (1u << d))) {
      o->shape[o->ndim++] = in->shape[d];
      continue;
    }
    if (in->shape[d] != 1)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "axis %d has extent %lld; only unit axes can be squeezed", d,
                        (long long)in->shape[d]);
  }
  stk__tn_layout_drop(in, mask, o->layout);
  return STK_OK;
}

static stk_status squeeze_run(stk__node *n, stk__sample *s) {
  return meta_run(n, s, squeeze_shape);
}
static stk_status squeeze_gpu(stk__node *n, stk__gpu_batch *b) {
  return meta_run_gpu(n, b, squeeze_shape);
}

static const stk_op_schema squeeze_schema = {
    .name = "squeeze",
    .doc =
        "Removes unit axes given by `axes` or `axis_names` (DALI's squeeze); their letters "
        "leave the layout.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = one_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = Q_COUNT_,
    .args = squeeze_args,
    .gpu_check =
        "x = expand_dims(IN, axes=[0], new_axis_names=\"F\", device=@)\n"
        "return squeeze(x, axis_names=\"F\", device=@)",
};
const stk__op_def stk__op_squeeze = {
    .schema = &squeeze_schema,
    .init = squeeze_init,
    .run_sample = squeeze_run,
    .run_gpu = squeeze_gpu,
};

/* ---- per_frame ---- */

enum { PF_REPLACE, PF_COUNT_ };
static const stk_arg_schema per_frame_args[] = {
    [PF_REPLACE] = {.name = "replace",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = "a layout already there: false, an error; true, its first letter "
                           "becomes F"},
};
STK__CHECK_ARGS(per_frame_args, PF_COUNT_);

static stk_status per_frame_shape(stk__node *node, stk__sample *s, const stk__tensor *in,
                                  shape_out *o) {
  o->dtype = in->dtype, o->ndim = in->ndim;
  memcpy(o->shape, in->shape, sizeof o->shape);
  if (in->ndim == 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "a scalar has no frame axis");
  if (*in->layout && !stk__arg_bool(node, s, PF_REPLACE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the input already has layout \"%s\" (replace=True overrides it)",
                      in->layout);
  if (*in->layout) {
    memcpy(o->layout, in->layout, sizeof o->layout);
  } else {
    memset(o->layout, '*', (size_t)in->ndim);
    o->layout[in->ndim] = '\0';
  }
  o->layout[0] = 'F';
  return STK_OK;
}

static stk_status per_frame_run(stk__node *n, stk__sample *s) {
  return meta_run(n, s, per_frame_shape);
}
static stk_status per_frame_gpu(stk__node *n, stk__gpu_batch *b) {
  return meta_run_gpu(n, b, per_frame_shape);
}

static const stk_op_schema per_frame_schema = {
    .name = "per_frame",
    .doc =
        "Marks the outermost axis as frames: the layout becomes \"F\" followed by '*' per "
        "other axis, or the input's with its first letter replaced (replace=True) (DALI's "
        "per_frame). stoker's operators read per-sample arguments, not per-frame ones: "
        "the mark only travels with the layout.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = one_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = PF_COUNT_,
    .args = per_frame_args,
    .gpu_check = "return per_frame(IN, replace=true, device=@)",
};
const stk__op_def stk__op_per_frame = {
    .schema = &per_frame_schema,
    .run_sample = per_frame_run,
    .run_gpu = per_frame_gpu,
};

/* ---- transpose ---- */

enum { T_PERM, T_TRANSPOSE_LAYOUT, T_OUTPUT_LAYOUT, T_COUNT_ };
static const stk_arg_schema transpose_args[] = {
    [T_PERM] = {.name = "perm",
                .type = STK_ARG_INTS,
                .doc = "output axis d is input axis perm[d]; default: the axes reversed"},
    [T_TRANSPOSE_LAYOUT] = {.name = "transpose_layout",
                            .type = STK_ARG_BOOL,
                            .default_text = "true",
                            .doc = "permute the layout's letters too"},
    [T_OUTPUT_LAYOUT] = {.name = "output_layout",
                         .type = STK_ARG_STRING,
                         .doc = "the output layout (overrides transpose_layout)"},
};
STK__CHECK_ARGS(transpose_args, T_COUNT_);

static stk_status transpose_plan(stk__node *node, stk__sample *s, const stk__tensor *in,
                                 stk_tn_copy *p, int *ndim, int64_t *shape, char *layout) {
  int nd = in->ndim, perm[STK_MAX_NDIM];
  const int64_t *pv;
  size_t np = stk__arg_given(node, T_PERM) ? stk__arg_ints(node, s, T_PERM, &pv) : 0;
  if (stk__arg_given(node, T_PERM) && (int)np != nd)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "perm has %zu entries for an input of %d dimensions", np, nd);
  unsigned seen = 0;
  for (int d = 0; d < nd; d++) {
    perm[d] = np ? (int)pv[d] : nd - 1 - d;
    if (perm[d] < 0 || perm[d] >= nd || (seen & (1u << perm[d])))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "perm is not a permutation of 0..%d (entry %d)", nd - 1, d);
    seen |= 1u << perm[d];
  }
  int64_t in_stride[STK_MAX_NDIM];
  stk__tn_dense_strides(nd, in->shape, in_stride);
  for (int d = 0; d < nd; d++) shape[d] = in->shape[perm[d]];
  stk__tn_copy_init(p, NULL, in->data, nd, shape);
  for (int d = 0; d < nd; d++) p->src_stride[d] = in_stride[perm[d]];
  *ndim = nd;
  bool has_layout = (int)strlen(in->layout) == nd && nd > 0;
  layout[0] = '\0';
  if (stk__arg_given(node, T_OUTPUT_LAYOUT)) {
    snprintf(layout, STK_MAX_LAYOUT + 1, "%s", stk__arg_string(node, T_OUTPUT_LAYOUT));
  } else if (has_layout && stk__arg_bool(node, s, T_TRANSPOSE_LAYOUT)) {
    for (int d = 0; d < nd; d++) layout[d] = in->layout[perm[d]];
    layout[nd] = '\0';
  } else {
    memcpy(layout, in->layout, STK_MAX_LAYOUT + 1);
  }
  if (*layout && (int)strlen(layout) != nd)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "output_layout = \"%s\" does not match %d dimensions", layout, nd);
  return STK_OK;
}

static stk_status transpose_run(stk__node *node, stk__sample *s) {
  stk__tensor ins[STK_TN_MAX_INPUTS];
  stk__tn_cpu_inputs(node, s, ins);
  const stk__tensor *in = &ins[0];
  stk_tn_copy p;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
  STK_TRY(transpose_plan(node, s, in, &p, &ndim, shape, layout));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, ndim, shape, layout, &out));
  p.dst = out->data;
  stk__tn_copy_run(&p, (int)stk_dtype_size(in->dtype));
  return STK_OK;
}

static stk_status transpose_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__tn_gpu_copy_op(node, b, transpose_plan, STK_DTYPE_COUNT);
}

static const stk_op_schema transpose_schema = {
    .name = "transpose",
    .doc =
        "Permutes the axes: output axis d is input axis perm[d] (DALI's transpose); the "
        "layout follows unless transpose_layout is false or output_layout is given.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = one_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = T_COUNT_,
    .args = transpose_args,
    .gpu_check = "return transpose(IN, perm=[2, 0, 1], device=@)",
};
const stk__op_def stk__op_transpose = {
    .schema = &transpose_schema,
    .run_sample = transpose_run,
    .run_gpu = transpose_gpu,
};
