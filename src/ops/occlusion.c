/*
 * Occlusion operators with DALI's definitions: erase (one or more boxes filled with a
 * value) and grid_mask (GridMask, Chen et al. 2020: a rotated grid of black squares).
 * All numeric arguments may be fed per sample; any dtype.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "color.h"
#include "../shared/geometry_px.h"
#include "../cuda/api_geometry.h"
#include "gpu_util.h"

static const stk_port_schema occ_in[] = {{"input", "data with a layout (images: HWC)"}};
static const stk_port_schema occ_out[] = {{"output", "the occluded data"}};

/* The input's layout, or HWC / HW for an unlabelled 3-D / 2-D tensor. */
static const char *layout_of(const stk__tensor *t) {
  if (t->layout[0]) return t->layout;
  return t->ndim == 3 ? "HWC" : t->ndim == 2 ? "HW" : "";
}

/* ---------------------------------------------------------------------------------- */
/* erase                                                                              */
/* ---------------------------------------------------------------------------------- */

enum {
  E_ANCHOR,
  E_SHAPE,
  E_AXIS_NAMES,
  E_AXES,
  E_FILL,
  E_NORM_ANCHOR,
  E_NORM_SHAPE,
  E_NORM,
  E_CENTERED,
  ERASE_ARGS_COUNT_
};

static const stk_arg_schema erase_args[] = {
    [E_ANCHOR] =
        {.name = "anchor",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc = "start of each region along the axes of axis_names (k regions: k * naxes values, "
                "region after region); default: 0"},
    [E_SHAPE] =
        {.name = "shape",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc = "extent of each region along the axes of axis_names (k * naxes values); axes not "
                "named are erased whole. Without it nothing is erased"},
    [E_AXIS_NAMES] = {.name = "axis_names",
                      .type = STK_ARG_STRING,
                      .default_text = "\"HW\"",
                      .doc =
                          "layout letters of the axes anchor and shape refer to, in their order"},
    [E_AXES] = {.name = "axes",
                .type = STK_ARG_INTS,
                .doc = "axis indices instead of axis_names (used when axis_names is not given)"},
    [E_FILL] = {.name = "fill_value",
                .type = STK_ARG_FLOATS,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "[0.0]",
                .doc =
                    "value of the erased elements: one value, or one per channel (needs a C axis)"},
    [E_NORM_ANCHOR] = {.name = "normalized_anchor",
                       .type = STK_ARG_BOOL,
                       .default_text = "false",
                       .doc = "anchor is a fraction of the axis extent"},
    [E_NORM_SHAPE] = {.name = "normalized_shape",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = "shape is a fraction of the axis extent"},
    [E_NORM] = {.name = "normalized",
                .type = STK_ARG_BOOL,
                .default_text = "false",
                .doc = "both anchor and shape are fractions of the axis extent"},
    [E_CENTERED] = {.name = "centered_anchor",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = "anchor is the centre of the region rather than its start"},
};
STK__CHECK_ARGS(erase_args, ERASE_ARGS_COUNT_);

typedef struct {
  int naxes;
  int axes[STK_MAX_NDIM];
} erase_state;

/* Resolves axis_names (or axes) against a layout. */
static stk_status erase_axes(const stk__node *node, const stk__sample *s, const char *layout,
                             int ndim, erase_state *st) {
  if (!stk__arg_given(node, E_AXIS_NAMES) && stk__arg_given(node, E_AXES)) {
    const int64_t *ax;
    size_t n = stk__arg_ints(node, s, E_AXES, &ax);
    if (n == 0 || n > STK_MAX_NDIM)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'axes' needs 1 to %d values",
                        STK_MAX_NDIM);
    for (size_t i = 0; i < n; i++) {
      if (ax[i] < 0 || ax[i] >= ndim)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "'axes' has %lld, outside the %d dimensions of the input",
                          (long long)ax[i], ndim);
      st->axes[i] = (int)ax[i];
    }
    st->naxes = (int)n;
    return STK_OK;
  }
  const char *names = stk__arg_string(node, E_AXIS_NAMES);
  size_t n = strlen(names);
  if (n == 0 || n > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'axis_names' \"%s\" must name 1 to "
                      "%d axes",
                      names, STK_MAX_NDIM);
  for (size_t i = 0; i < n; i++) {
    const char *p = strchr(layout, names[i]);
    if (!p)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "'axis_names' \"%s\": axis '%c' "
                        "is not in the input layout \"%s\"",
                        names, names[i], layout);
    st->axes[i] = (int)(p - layout);
  }
  st->naxes = (int)n;
  return STK_OK;
}

/* A box [lo, hi) per dimension. */
typedef struct {
  int64_t lo[STK_MAX_NDIM], hi[STK_MAX_NDIM];
} box;

/* Turns region r of anchor/shape into a box: extent rounded, start rounded (half away
 * from zero), clipped to the tensor. */
static stk_status region_box(const stk__node *node, const stk__sample *s, const stk__tensor *t,
                             const erase_state *st, const double *anchor, const double *shape,
                             int r, box *b) {
  bool na = stk__arg_bool(node, s, E_NORM_ANCHOR) || stk__arg_bool(node, s, E_NORM);
  bool ns = stk__arg_bool(node, s, E_NORM_SHAPE) || stk__arg_bool(node, s, E_NORM);
  bool centered = stk__arg_bool(node, s, E_CENTERED);
  for (int d = 0; d < t->ndim; d++) b->lo[d] = 0, b->hi[d] = t->shape[d];
  for (int i = 0; i < st->naxes; i++) {
    int d = st->axes[i];
    double ext = (double)t->shape[d];
    double a = anchor ? anchor[r * st->naxes + i] : 0.0, sz = shape[r * st->naxes + i];
    if (na) a *= ext;
    if (ns) sz *= ext;
    if (!(sz >= 0.0 && sz < 9e15 && fabs(a) < 9e15))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "region %d: 'shape' %g / 'anchor' "
                        "%g along axis %d are not a valid extent and position",
                        r, sz, a, d);
    if (centered) a -= sz / 2.0;
    int64_t lo = (int64_t)round(a), hi = lo + (int64_t)round(sz);
    b->lo[d] = lo < 0 ? 0 : lo > t->shape[d] ? t->shape[d] : lo;
    b->hi[d] = hi < b->lo[d] ? b->lo[d] : hi > t->shape[d] ? t->shape[d] : hi;
  }
  return STK_OK;
}

/* Writes n copies of a value of `es` bytes. */
static void fill_run(uint8_t *d, const uint8_t *value, size_t es, size_t n) {
  for (size_t i = 0; i < n; i++) memcpy(d + i * es, value, es);
}

/* Fills one box. `fill` holds nfill typed values (1, or one per index of axis caxis). */
static void erase_box(const stk__tensor *t, uint8_t *data, const box *b, const uint8_t *fill,
                      size_t nfill, int caxis, uint8_t *pattern) {
  int nd = t->ndim;
  size_t es = stk_dtype_size(t->dtype);
  int64_t stride[STK_MAX_NDIM];
  stride[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; d--) stride[d] = stride[d + 1] * t->shape[d + 1];
  for (int d = 0; d < nd; d++)
    if (b->hi[d] <= b->lo[d]) return;
  /* The run: the last axis, or the last two when the box spans the last one whole. */
  int rd = nd - 1;
  if (nd >= 2 && b->lo[nd - 1] == 0 && b->hi[nd - 1] == t->shape[nd - 1]) rd = nd - 2;
  size_t run = (size_t)((b->hi[rd] - b->lo[rd]) * stride[rd]);
  if (rd == nd - 1) run = (size_t)(b->hi[rd] - b->lo[rd]);
  bool channel_in_run = nfill > 1 && caxis >= rd;
  if (channel_in_run || nfill == 1)
    for (size_t j = 0; j < run; j++) {
      size_t k = 0;
      if (channel_in_run) {
        int64_t p = b->lo[rd] * stride[rd] + (int64_t)j;
        k = (size_t)((p / stride[caxis]) % t->shape[caxis]);
      }
      memcpy(pattern + j * es, fill + k * es, es);
    }
  int64_t idx[STK_MAX_NDIM];
  for (int d = 0; d < rd; d++) idx[d] = b->lo[d];
  for (;;) {
    int64_t off = b->lo[rd] * stride[rd];
    for (int d = 0; d < rd; d++) off += idx[d] * stride[d];
    uint8_t *dst = data + (size_t)off * es;
    if (channel_in_run || nfill == 1)
      memcpy(dst, pattern, run * es);
    else
      fill_run(dst, fill + (size_t)idx[caxis] * es, es, run);
    int d = rd - 1; /* odometer over the axes before the run */
    while (d >= 0 && ++idx[d] == b->hi[d]) idx[d] = b->lo[d], d--;
    if (d < 0) break;
  }
}

/* The typed fill values and the axis they vary along. */
static stk_status erase_fill(const stk__node *node, stk__sample *s, const stk__tensor *t,
                             const char *layout, uint8_t **fill, size_t *nfill, int *caxis) {
  const double *v;
  size_t n = stk__arg_floats(node, s, E_FILL, &v);
  const char *c = strchr(layout, 'C');
  *caxis = c && (int)strlen(layout) == t->ndim ? (int)(c - layout) : -1;
  if (n == 0 || (n > 1 && (*caxis < 0 || (int64_t)n != t->shape[*caxis])))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'fill_value' has %zu values; expected "
                      "1 or one per channel (%lld)",
                      n, (long long)(*caxis >= 0 ? t->shape[*caxis] : 1));
  size_t es = stk_dtype_size(t->dtype);
  *fill = stk__scratch(s, n * es);
  if (!*fill) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (size_t i = 0; i < n; i++) stk__store_double(*fill, t->dtype, i, v[i]);
  *nfill = n;
  return STK_OK;
}

static stk_status erase_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype) || in->ndim < 1)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "needs a tensor of at least 1 dimension");
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, in->ndim, in->shape, in->layout, &out));
  size_t total = 1, es = stk_dtype_size(in->dtype);
  for (int d = 0; d < in->ndim; d++) total *= (size_t)in->shape[d];
  memcpy(out->data, in->data, total * es);
  if (!stk__arg_given(node, E_SHAPE)) return STK_OK;
  const char *layout = layout_of(in);
  erase_state st = {0};
  STK_TRY(erase_axes(node, s, layout, in->ndim, &st));
  const double *shape, *anchor = NULL;
  size_t ns = stk__arg_floats(node, s, E_SHAPE, &shape), na = ns;
  if (stk__arg_given(node, E_ANCHOR)) na = stk__arg_floats(node, s, E_ANCHOR, &anchor);
  if (na != ns || ns % (size_t)st.naxes != 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'anchor' (%zu values) and 'shape' "
                      "(%zu values) must both hold k regions of %d values (one per axis of "
                      "axis_names)",
                      na, ns, st.naxes);
  uint8_t *fill = NULL;
  size_t nfill = 0;
  int caxis = -1;
  STK_TRY(erase_fill(node, s, in, layout, &fill, &nfill, &caxis));
  /* the longest contiguous run erase_box writes: the last two axes */
  size_t run_max = (size_t)in->shape[in->ndim - 1];
  if (in->ndim >= 2) run_max *= (size_t)in->shape[in->ndim - 2];
  uint8_t *pattern = stk__scratch(s, run_max * es > 0 ? run_max * es : 1);
  if (!pattern) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (int r = 0; r < (int)(ns / (size_t)st.naxes); r++) {
    box b;
    STK_TRY(region_box(node, s, in, &st, anchor, shape, r, &b));
    erase_box(in, out->data, &b, fill, nfill, caxis, pattern);
  }
  return STK_OK;
}

/* ---- erase on the GPU: the regions and fill read on the host as on the CPU, then one
 * launch that copies every element or fills it when it lies in one of the boxes. ---- */

/* Sample i of the input as a tensor view (shape and layout), as the CPU sees it. */
static void erase_gpu_view(const stk_tensor_list *in, size_t i, stk__tensor *t) {
  stk_tensor_desc d;
  stk_tensor_list_sample(in, i, &d);
  memset(t, 0, sizeof *t);
  t->data = d.data;
  t->ndim = d.ndim;
  t->dtype = d.dtype;
  memcpy(t->shape, d.shape, sizeof t->shape);
  memcpy(t->layout, d.layout, sizeof t->layout);
}

/* Plans sample i: its boxes (in the sample's scratch) and its fill pattern. */
static stk_status erase_gpu_sample(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                   size_t i, stk_gpu_erase_sample *es) {
  stk__sample *s = stk__gpu_sample(b, i);
  stk__tensor t;
  erase_gpu_view(in, i, &t);
  memset(es, 0, sizeof *es);
  es->src = t.data;
  for (int d = 0; d < t.ndim; d++) es->shape[d] = t.shape[d];
  es->nfill = 1;
  if (!stk__arg_given(node, E_SHAPE)) return STK_OK;
  const char *layout = layout_of(&t);
  erase_state st = {0};
  STK_TRY(erase_axes(node, s, layout, t.ndim, &st));
  const double *shape, *anchor = NULL;
  size_t ns = stk__arg_floats(node, s, E_SHAPE, &shape), na = ns;
  if (stk__arg_given(node, E_ANCHOR)) na = stk__arg_floats(node, s, E_ANCHOR, &anchor);
  if (na != ns || ns % (size_t)st.naxes != 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'anchor' (%zu values) and 'shape' (%zu values) must "
                      "both hold k regions of %d values (one per axis of axis_names)",
                      na, ns, st.naxes);
  uint8_t *fill = NULL;
  size_t nfill = 0, esz = stk_dtype_size(t.dtype);
  int caxis = -1;
  STK_TRY(erase_fill(node, s, &t, layout, &fill, &nfill, &caxis));
  if (nfill * esz > sizeof es->fill)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "%zu fill values of %zu bytes exceed the GPU's 64 bytes", nfill, esz);
  memcpy(es->fill, fill, nfill * esz);
  es->nfill = (int)nfill;
  es->fill_axis = caxis;
  int k = (int)(ns / (size_t)st.naxes);
  stk_gpu_erase_box *boxes = stk__scratch(s, (size_t)(k ? k : 1) * sizeof *boxes);
  if (!boxes) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (int r = 0; r < k; r++) {
    box bx;
    STK_TRY(region_box(node, s, &t, &st, anchor, shape, r, &bx));
    memset(&boxes[r], 0, sizeof boxes[r]);
    memcpy(boxes[r].lo, bx.lo, sizeof(int64_t) * (size_t)t.ndim);
    memcpy(boxes[r].hi, bx.hi, sizeof(int64_t) * (size_t)t.ndim);
  }
  es->boxes = boxes;
  es->nboxes = k;
  return STK_OK;
}

static stk_status erase_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_dtype dt = stk_tensor_list_dtype(in);
  stk_gpu_erase_sample *es = stk__calloc(n ? n : 1, sizeof *es, "an erase plan");
  int64_t *shapes = stk__calloc(n * (size_t)(ndim > 0 ? ndim : 1), sizeof(int64_t), "shapes");
  stk_status st = es && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK && (!stk__dtype_valid(dt) || ndim < 1 || ndim > STK_GPU_ERASE_MAX_NDIM))
    st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "needs a tensor of 1 to %d dimensions",
                    STK_GPU_ERASE_MAX_NDIM);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    st = erase_gpu_sample(node, b, in, i, &es[i]);
    memcpy(shapes + i * (size_t)ndim, es[i].shape, sizeof(int64_t) * (size_t)ndim);
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, dt, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (st == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      es[i].dst = d.data;
    }
    stk_gpu_erase_args a = {ndim, (int)stk_dtype_size(dt)};
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_erase(g->api, g->ctx, (int)n, es, &a, stk__gpu_stream(b), err, sizeof err),
        err);
  }
  free(es);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema erase_schema = {
    .name = "erase",
    .doc =
        "Erases one or more boxes (DALI's erase): the elements with lo <= index < lo + extent "
        "along every axis of axis_names (the whole extent along other axes) take fill_value. "
        "lo = round(anchor) and extent = round(shape), after scaling by the axis extent for "
        "normalized_anchor / normalized_shape and moving the anchor back by shape / 2 for "
        "centered_anchor (round: half away from zero); boxes are clipped to the data.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = occ_in,
    .num_outputs = 1,
    .outputs = occ_out,
    .num_args = sizeof erase_args / sizeof erase_args[0],
    .args = erase_args,
    .gpu_check =
        "return erase(IN, anchor=[10, 20, 50, 60], shape=[30, 40, 300, 10], fill_value=[77.0], "
        "device=@)",
};
const stk__op_def stk__op_erase = {
    .schema = &erase_schema,
    .run_sample = erase_run,
    .run_gpu = erase_run_gpu,
};

/* ---------------------------------------------------------------------------------- */
/* grid_mask                                                                          */
/* ---------------------------------------------------------------------------------- */

enum { GM_TILE, GM_RATIO, GM_ANGLE, GM_SHIFT_X, GM_SHIFT_Y, GRID_ARGS_COUNT_ };
static const stk_arg_schema grid_args[] = {
    [GM_TILE] =
        {.name = "tile",
         .type = STK_ARG_INT,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "100",
         .doc = "side of one grid tile in pixels (a black square plus the gap after it), >= 1"},
    [GM_RATIO] = {.name = "ratio",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "0.5",
                  .doc = "black square side / tile side, in [0, 1]"},
    [GM_ANGLE] = {.name = "angle",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "0.0",
                  .doc = "rotation of the grid around the origin, in radians"},
    [GM_SHIFT_X] = {.name = "shift_x",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0.0",
                    .doc = "x translation of the grid after the rotation, in pixels"},
    [GM_SHIFT_Y] = {.name = "shift_y",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "0.0",
                    .doc = "y translation of the grid after the rotation, in pixels"},
};
STK__CHECK_ARGS(grid_args, GRID_ARGS_COUNT_);

/* The sample's grid arguments, checked as on the CPU. */
static stk_status grid_params(stk__node *node, stk__sample *s, double *tile, double *ratio,
                              double *angle, double *sx, double *sy) {
  int64_t t = stk__arg_int(node, s, GM_TILE);
  if (t < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "argument 'tile' = %lld must be >= 1",
                      (long long)t);
  *tile = (double)t;
  STK_TRY(stk__float_arg_in(node, s, GM_RATIO, "ratio", 0.0, 1.0, ratio));
  STK_TRY(stk__float_arg_in(node, s, GM_ANGLE, "angle", -1e9, 1e9, angle));
  STK_TRY(stk__float_arg_in(node, s, GM_SHIFT_X, "shift_x", -DBL_MAX, DBL_MAX, sx));
  STK_TRY(stk__float_arg_in(node, s, GM_SHIFT_Y, "shift_y", -DBL_MAX, DBL_MAX, sy));
  return STK_OK;
}

static stk_status grid_run(stk__node *node, stk__sample *s) {
  double t, ratio, angle, sx, sy;
  STK_TRY(grid_params(node, s, &t, &ratio, &angle, &sx, &sy));
  stk__image src, dst;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &src));
  if (!stk__dtype_valid(src.dtype))
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "unknown input type");
  dst = src;
  STK_TRY(stk__image_output(s, stk__input(s, 0)->ndim, &dst));
  size_t px = (size_t)src.c * stk_dtype_size(src.dtype);
  double ca = cos(angle), sa = sin(angle);
  for (int64_t y = 0; y < src.h; y++) {
    const uint8_t *in = (const uint8_t *)src.data + (size_t)(y * src.w) * px;
    uint8_t *out = (uint8_t *)dst.data + (size_t)(y * src.w) * px;
    for (int64_t x = 0; x < src.w; x++) {
      if (stk_grid_keep(x, y, ca, sa, sx, sy, t, ratio))
        memcpy(out + (size_t)x * px, in + (size_t)x * px, px);
      else
        memset(out + (size_t)x * px, 0, px);
    }
  }
  return STK_OK;
}

/* grid_mask on the GPU: the same per-pixel test (geometry_px.h) in one launch. */
static stk_status grid_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_dtype dt = stk_tensor_list_dtype(in);
  stk_gpu_grid_mask_sample *gs = stk__calloc(n ? n : 1, sizeof *gs, "a grid_mask plan");
  int64_t *shapes = stk__calloc(n * 3, sizeof(int64_t), "shapes");
  stk_status st = gs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK && !stk__dtype_valid(dt))
    st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "unknown input type");
  if (st == STK_OK) st = stk__gpu_check_image_layout(node, in);
  int c0 = 0;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    double tile, ratio, angle, sx, sy;
    st = grid_params(node, s, &tile, &ratio, &angle, &sx, &sy);
    int h, w, c;
    void *data;
    if (st == STK_OK) st = stk__gpu_image_dims(node, in, i, &h, &w, &c, &data);
    if (st != STK_OK) break;
    if (i == 0) c0 = c;
    if (c != c0 || (size_t)c * stk_dtype_size(dt) > 64) {
      st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "%d channels (sample 0: %d): the GPU needs one channel count "
                      "per batch and at most 64 bytes per pixel",
                      c, c0);
      break;
    }
    gs[i] = (stk_gpu_grid_mask_sample){.src = data,
                                       .h = h,
                                       .w = w,
                                       .ca = cos(angle),
                                       .sa = sin(angle),
                                       .shift_x = sx,
                                       .shift_y = sy,
                                       .tile = tile,
                                       .ratio = ratio};
    int64_t *sh = shapes + i * (size_t)ndim;
    sh[0] = h, sh[1] = w;
    if (ndim == 3) sh[2] = c;
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, dt, ndim, shapes, ndim == 2 ? "HW" : "HWC",
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (st == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      gs[i].dst = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_grid_mask(g->api, g->ctx, (int)n, gs,
                              &(stk_gpu_grid_mask_args){c0 * (int)stk_dtype_size(dt)},
                              stk__gpu_stream(b), err, sizeof err),
        err);
  }
  free(gs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema grid_schema = {
    .name = "grid_mask",
    .doc =
        "GridMask (DALI's grid_mask): zeroes the pixels inside a grid of squares. With u = (x "
        "cos(angle) - y sin(angle) - shift_x) / tile and v = (x sin(angle) + y cos(angle) - "
        "shift_y) / tile, a pixel is kept when frac(u) >= ratio or frac(v) >= ratio. Computed "
        "in float64 (DALI uses float32, so pixels exactly on a square's edge may differ).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = occ_in,
    .num_outputs = 1,
    .outputs = occ_out,
    .num_args = sizeof grid_args / sizeof grid_args[0],
    .args = grid_args,
    .gpu_check =
        "t = random.uniform(values=[20, 48, 100], dtype=\"int32\")\n"
        "r = random.uniform(range=[0.1, 0.9])\n"
        "a = random.uniform(range=[0.0, 1.0])\n"
        "return grid_mask(IN, tile=t, ratio=r, angle=a, device=@)",
};
const stk__op_def stk__op_grid_mask = {
    .schema = &grid_schema,
    .run_sample = grid_run,
    .run_gpu = grid_run_gpu,
};
