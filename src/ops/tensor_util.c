/* Host helpers of the tensor toolbox (tensor_util.h). */
#include "tensor_util.h"

#include <stdlib.h>
#include <string.h>

int64_t stk__tn_volume(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

void stk__tn_dense_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    stride[d] = s;
    s *= shape[d];
  }
}

void stk__tn_copy_init(stk_tn_copy *p, void *dst, const void *src, int ndim, const int64_t *shape) {
  memset(p, 0, sizeof *p);
  p->src = src, p->dst = dst, p->ndim = ndim;
  p->count = stk__tn_volume(ndim, shape);
  memcpy(p->shape, shape, (size_t)ndim * sizeof(int64_t));
  memcpy(p->hi, shape, (size_t)ndim * sizeof(int64_t));
  stk__tn_dense_strides(ndim, shape, p->src_stride);
  stk__tn_dense_strides(ndim, shape, p->dst_stride);
  p->fill_axis = -1, p->nfill = 1;
}

/* Copies n elements with element strides ss (source) and ds (destination). */
static void copy_strided(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, int esize) {
  if (ss == 1 && ds == 1) {
    memcpy(dst, src, (size_t)(n * esize));
    return;
  }
  for (int64_t k = 0; k < n; k++) stk_tn_put(dst + k * ds * esize, src + k * ss * esize, esize);
}

/* One row (the last axis) of a copy: the window [lo, hi) copied, the rest filled. The
 * row's other coordinates are decoded once, so a transpose (strided rows) or a slice
 * (contiguous ones) pays no per-element division. */
static void copy_row(const stk_tn_copy *p, int esize, int64_t row, int64_t len) {
  int last = p->ndim - 1;
  int64_t e0 = row * len;
  int64_t lo = p->lo[last] < 0 ? 0 : p->lo[last], hi = p->hi[last] > len ? len : p->hi[last];
  if (p->fill_axis == last || hi <= lo) {
    for (int64_t k = 0; k < len; k++) stk_tn_copy_elem(p, esize, e0 + k);
    return;
  }
  for (int64_t k = 0; k < lo; k++) stk_tn_copy_elem(p, esize, e0 + k);
  for (int64_t k = hi; k < len; k++) stk_tn_copy_elem(p, esize, e0 + k);
  int64_t soff = 0, doff = 0, r = row;
  for (int d = last - 1; d >= 0; d--) {
    int64_t q = r / p->shape[d], c = r - q * p->shape[d];
    r = q;
    if (c < p->lo[d] || c >= p->hi[d]) { /* the row lies outside the window: fill */
      for (int64_t k = lo; k < hi; k++) stk_tn_copy_elem(p, esize, e0 + k);
      return;
    }
    soff += (c - p->lo[d]) * p->src_stride[d];
    doff += c * p->dst_stride[d];
  }
  int64_t ss = p->src_stride[last], ds = p->dst_stride[last];
  copy_strided((char *)p->dst + (doff + lo * ds) * esize, ds,
               (const char *)p->src + (soff + (lo - p->lo[last]) * ss) * esize, ss, hi - lo, esize);
}

void stk__tn_copy_run(const stk_tn_copy *p, int esize) {
  if (p->count == 0) return;
  if (p->ndim == 0) {
    stk_tn_copy_elem(p, esize, 0);
    return;
  }
  int64_t len = p->shape[p->ndim - 1], rows = p->count / len;
  for (int64_t r = 0; r < rows; r++) copy_row(p, esize, r, len);
}

/* Axis letters of the layout. */
static stk_status axes_from_names(stk__node *node, const stk__sample *s, const stk__tensor *in,
                                  const char *names, unsigned *mask) {
  if ((int)strlen(in->layout) != in->ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "axis_names = \"%s\" needs an input layout; the input has none", names);
  for (const char *c = names; *c; c++) {
    const char *at = strchr(in->layout, *c);
    if (!at)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "axis_names: '%c' is not in the input layout \"%s\"", *c, in->layout);
    *mask |= 1u << (at - in->layout);
  }
  return STK_OK;
}

stk_status stk__tn_axes(stk__node *node, const stk__sample *s, const stk__tensor *in, int a_axes,
                        int a_names, bool all_default, unsigned *mask) {
  *mask = 0;
  if (a_axes >= 0 && a_names >= 0 && stk__arg_given(node, a_axes) && stk__arg_given(node, a_names))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "axes and axis_names are mutually exclusive (as in DALI)");
  if (a_axes >= 0 && stk__arg_given(node, a_axes)) {
    const int64_t *ax;
    size_t n = stk__arg_ints(node, s, a_axes, &ax);
    for (size_t k = 0; k < n; k++) {
      int64_t a = ax[k] < 0 ? ax[k] + in->ndim : ax[k];
      if (a < 0 || a >= in->ndim)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "axes[%zu] = %lld is out of range for an input of %d dimensions", k,
                          (long long)ax[k], in->ndim);
      *mask |= 1u << a;
    }
    return STK_OK;
  }
  if (a_names >= 0 && stk__arg_given(node, a_names))
    return axes_from_names(node, s, in, stk__arg_string(node, a_names), mask);
  if (all_default) *mask = in->ndim ? (1u << in->ndim) - 1 : 0;
  return STK_OK;
}

void stk__tn_layout_drop(const stk__tensor *in, unsigned mask, char *out) {
  int k = 0;
  if ((int)strlen(in->layout) == in->ndim)
    for (int d = 0; d < in->ndim; d++)
      if (!(mask & (1u << d))) out[k++] = in->layout[d];
  out[k] = '\0';
}

void stk__tn_from_list(const stk_tensor_list *tl, size_t i, stk__tensor *t) {
  stk_tensor_desc d;
  stk_tensor_list_sample(tl, i, &d);
  memset(t, 0, sizeof *t);
  t->data = d.data, t->ndim = d.ndim, t->dtype = d.dtype;
  memcpy(t->shape, d.shape, sizeof t->shape);
  memcpy(t->layout, d.layout, sizeof t->layout);
}

int stk__tn_cpu_inputs(stk__node *node, stk__sample *s, stk__tensor *ins) {
  int n = stk__node_num_inputs(node);
  n = n > STK_TN_MAX_INPUTS ? STK_TN_MAX_INPUTS : n;
  for (int k = 0; k < n; k++) ins[k] = *stk__input(s, k);
  return n;
}

stk_status stk__tn_gpu_inputs(stk__node *node, stk__gpu_batch *b, stk_tensor_list *data, size_t i,
                              stk__tensor *ins) {
  int n = stk__node_num_inputs(node);
  stk__tn_from_list(data, i, &ins[0]);
  for (int k = 1; k < n && k < STK_TN_MAX_INPUTS; k++) {
    stk_tensor_list *l = stk__gpu_input(b, k);
    if (stk_tensor_list_storage(l) == STK_STORAGE_DEVICE)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                        "input %d must be CPU data (GPU operators read shapes and anchors on "
                        "the host)",
                        k);
    stk__tn_from_list(l, i, &ins[k]);
  }
  return STK_OK;
}

/* ---- GPU ---- */

stk_status stk__tn_gpu_copy(stk__node *node, stk__gpu_batch *b, const stk_tn_copy *plans,
                            size_t count, int esize) {
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  int rc =
      stk_gpu_run_tn_copy(g->api, g->ctx, (int)count, plans, &(stk_gpu_elem_args){(size_t)esize},
                          stk__gpu_stream(b), err, sizeof err);
  return stk__gpu_op_check(node, rc, err);
}

/* `tmp` (the copies, in the input's type) converted into a new list of `dt` (the cast
 * kernel: stk__convert's rules). */
static stk_status gpu_cast_list(stk__node *node, stk__gpu_batch *b, stk_tensor_list *tmp,
                                stk_dtype dt, const int64_t *shapes, stk_tensor_list **out) {
  size_t n = stk__gpu_batch_size(b);
  int nd = stk_tensor_list_ndim(tmp);
  stk_gpu_cast_sample *cs = stk__calloc(n ? n : 1, sizeof *cs, "a cast plan");
  stk_status st = cs ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, dt, nd, shapes, stk_tensor_list_layout(tmp),
                             stk__gpu_shapes_equal(shapes, n, nd), out);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc s, d;
    stk_tensor_list_sample(tmp, i, &s);
    stk_tensor_list_sample(*out, i, &d);
    cs[i] = (stk_gpu_cast_sample){s.data, d.data, stk__tn_volume(nd, s.shape)};
  }
  if (st == STK_OK) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_cast(g->api, g->ctx, (int)n, cs,
                                            &(stk_gpu_io_args){stk_tensor_list_dtype(tmp), dt},
                                            stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(cs);
  stk_tensor_list_release(tmp); /* stream-ordered: the cast has read it by then */
  return st;
}

stk_status stk__tn_gpu_copy_op(stk__node *node, stk__gpu_batch *b, stk__tn_plan_fn plan,
                               stk_dtype out_dtype) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_tn_copy *plans = stk__calloc(n ? n : 1, sizeof *plans, "copy plans");
  int64_t *shapes = stk__calloc((n ? n : 1) * STK_MAX_NDIM, sizeof(int64_t), "shapes");
  stk_status st = plans && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  int ndim0 = 0;
  char layout[STK_MAX_LAYOUT + 1] = "";
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t[STK_TN_MAX_INPUTS];
    int ndim;
    char lay[STK_MAX_LAYOUT + 1] = "";
    st = stk__tn_gpu_inputs(node, b, in, i, t);
    if (st != STK_OK) break;
    st = plan(node, stk__gpu_sample(b, i), t, &plans[i], &ndim, shapes + i * STK_MAX_NDIM, lay);
    if (st == STK_OK && i == 0) ndim0 = ndim, memcpy(layout, lay, sizeof layout);
    if (st == STK_OK && ndim != ndim0)
      st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, stk__gpu_sample(b, i),
                      "the output has %d dimensions here and %d in sample 0", ndim, ndim0);
  }
  /* stk__gpu_alloc_list wants n * ndim packed shapes. */
  for (size_t i = 1; i < n && st == STK_OK; i++)
    memmove(shapes + i * (size_t)ndim0, shapes + i * STK_MAX_NDIM, (size_t)ndim0 * sizeof(int64_t));
  stk_dtype dt = stk_tensor_list_dtype(in);
  if (st == STK_OK && n > 0)
    st = stk__gpu_alloc_list(b, dt, ndim0, shapes, layout, stk__gpu_shapes_equal(shapes, n, ndim0),
                             &out);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    plans[i].dst = d.data;
  }
  if (st == STK_OK && n > 0) st = stk__tn_gpu_copy(node, b, plans, n, (int)stk_dtype_size(dt));
  if (st == STK_OK && n > 0 && out_dtype != STK_DTYPE_COUNT && out_dtype != dt) {
    stk_tensor_list *tmp = out;
    out = NULL;
    st = gpu_cast_list(node, b, tmp, out_dtype, shapes, &out);
  }
  free(plans);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}
