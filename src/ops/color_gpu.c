/* The GPU driver of the colour operators (color_gpu.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color_gpu.h"

#define LUT_STRIDE (4 * 256 * 4) /* bytes of tables per sample: 4 channels of 4-byte values */

void stk__point_lut(stk__point_fn f, const void *ctx, int64_t c, stk_dtype dtype, void *typed) {
  size_t es = stk_dtype_size(dtype);
  double tab[256];
  for (int64_t ch = 0; ch < c; ch++) {
    for (int v = 0; v < 256; v++) tab[v] = f((double)v, ch, ctx);
    stk__convert((char *)typed + (size_t)ch * 256 * es, dtype, tab, STK_DTYPE_FLOAT64, 256);
  }
}

/* The input list's geometry and layout check for sample i (as stk__image_input). */
static stk_status sample_in(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in, size_t i,
                            stk__cg_in *out, void **data) {
  stk_tensor_desc d;
  STK_TRY(stk_tensor_list_sample(in, i, &d));
  const char *l = d.layout;
  bool hwc = d.ndim == 3 && (l[0] == '\0' || strcmp(l, "HWC") == 0);
  bool hw = d.ndim == 2 && (l[0] == '\0' || strcmp(l, "HW") == 0);
  if (!hwc && !hw)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "expects an HWC image, got %d dimensions with layout '%s'", d.ndim, l);
  STK_TRY(stk__gpu_image_dims(node, in, i, &out->h, &out->w, &out->c, data));
  if (out->c < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "image has no channels");
  out->ndim = d.ndim;
  out->dtype = d.dtype;
  return STK_OK;
}

/* The per-sample plans and input pointers of a batch. */
typedef struct {
  size_t n;
  stk__cg_plan *plans;
  stk__cg_in *ins;
  void **src;
  void **dst;
  uint8_t *luts;
  int64_t *shapes;
} batch_plan;

static void plan_free(batch_plan *p) {
  free(p->plans);
  free(p->ins);
  free(p->src);
  free(p->dst);
  free(p->luts);
  free(p->shapes);
}

static stk_status plan_batch(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                             const stk_dtype *types, int ntypes, stk__cg_plan_fn fn,
                             batch_plan *p) {
  size_t n = p->n;
  stk_dtype dt = stk_tensor_list_dtype(in);
  bool ok = false;
  for (int k = 0; k < ntypes; k++) ok |= types[k] == dt;
  if (!ok)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "input type %s is not supported",
                      stk_dtype_name(dt) ? stk_dtype_name(dt) : "?");
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    stk__cg_in *ci = &p->ins[i];
    STK_TRY(sample_in(node, b, in, i, ci, &p->src[i]));
    stk__cg_plan *pl = &p->plans[i];
    memset(pl, 0, sizeof *pl);
    pl->out_dtype = ci->dtype;
    pl->out_c = ci->c;
    pl->out_ndim = ci->ndim;
    pl->lut = p->luts + i * LUT_STRIDE;
    STK_TRY(fn(node, s, ci, pl));
    const stk__cg_plan *p0 = &p->plans[0];
    if (pl->kind != p0->kind || pl->mode != p0->mode || pl->out_dtype != p0->out_dtype)
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                        "on the GPU every sample of a batch must "
                        "take the same path (kind %d mode %d %s; sample 0: %d, %d, %s)",
                        (int)pl->kind, pl->mode, stk_dtype_name(pl->out_dtype), (int)p0->kind,
                        p0->mode, stk_dtype_name(p0->out_dtype));
    int64_t *sh = p->shapes + i * 3;
    sh[0] = ci->h, sh[1] = ci->w, sh[2] = pl->out_c;
    if (i > 0 && pl->out_ndim != p0->out_ndim)
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                        "samples of %d and %d dimensions in one batch", p0->out_ndim, pl->out_ndim);
  }
  return STK_OK;
}

/* One API call for the batch, by kind. */
static int call_api(const stk__gpu *g, uintptr_t stream, const batch_plan *p, stk_dtype in_dt,
                    char *err, size_t errlen) {
  const stk_gpu_api *api = g->api;
  size_t n = p->n;
  const stk__cg_plan *p0 = &p->plans[0];
  stk_dtype ot = p0->out_dtype;
  int rc = STK_ERR_OUT_OF_MEMORY;
  if (p0->kind == STK__CG_LUT) {
    /* the tables packed back to back: what travels to the device is only what is used */
    size_t es = stk_dtype_size(ot), total = 0;
    for (size_t i = 0; i < n; i++) total += (size_t)p->ins[i].c * 256 * es;
    stk_gpu_clr_lut_sample *S = calloc(n, sizeof *S);
    uint8_t *packed = malloc(total ? total : 1);
    if (S && packed) {
      size_t off = 0;
      for (size_t i = 0; i < n; i++) {
        size_t bytes = (size_t)p->ins[i].c * 256 * es;
        memcpy(packed + off, p->luts + i * LUT_STRIDE, bytes);
        S[i] = (stk_gpu_clr_lut_sample){p->src[i], p->dst[i], (int64_t)p->ins[i].h * p->ins[i].w,
                                        p->ins[i].c, off};
        off += bytes;
      }
      rc = stk_gpu_run_clr_lut(api, g->ctx, (int)n, S, &(stk_gpu_clr_lut_args){packed, total, ot},
                               stream, err, errlen);
    }
    free(S);
    free(packed);
  } else if (p0->kind == STK__CG_POINT) {
    stk_gpu_clr_point_sample *S = calloc(n, sizeof *S);
    if (!S) return rc;
    for (size_t i = 0; i < n; i++) {
      const stk__cg_plan *pl = &p->plans[i];
      S[i] = (stk_gpu_clr_point_sample){p->src[i],
                                        p->dst[i],
                                        (int64_t)p->ins[i].h * p->ins[i].w * p->ins[i].c,
                                        pl->point_op,
                                        {pl->p[0], pl->p[1], pl->p[2]}};
    }
    rc = stk_gpu_run_clr_point(api, g->ctx, (int)n, S, &(stk_gpu_io_args){in_dt, ot}, stream, err,
                               errlen);
    free(S);
  } else if (p0->kind == STK__CG_PIXEL) {
    stk_gpu_clr_pixel_sample *S = calloc(n, sizeof *S);
    if (!S) return rc;
    for (size_t i = 0; i < n; i++) {
      const stk__cg_plan *pl = &p->plans[i];
      stk_gpu_clr_pixel_sample *q = &S[i];
      q->src = p->src[i], q->dst = p->dst[i], q->pixels = (int64_t)p->ins[i].h * p->ins[i].w;
      q->cin = p->ins[i].c, q->cout = pl->out_c, q->factor = pl->factor;
      memcpy(q->m, pl->m, sizeof q->m);
      memcpy(q->off, pl->off, sizeof q->off);
    }
    rc = stk_gpu_run_clr_pixel(api, g->ctx, (int)n, S,
                               &(stk_gpu_clr_mode_args){p0->mode, in_dt, ot}, stream, err, errlen);
    free(S);
  } else if (p0->kind == STK__CG_STATS) {
    stk_gpu_clr_stats_sample *S = calloc(n, sizeof *S);
    if (!S) return rc;
    for (size_t i = 0; i < n; i++) {
      const stk__cg_plan *pl = &p->plans[i];
      S[i] = (stk_gpu_clr_stats_sample){p->src[i],
                                        p->dst[i],
                                        (int64_t)p->ins[i].h * p->ins[i].w,
                                        p->ins[i].c,
                                        {pl->p[0], pl->p[1], pl->p[2], pl->p[3]}};
    }
    rc = stk_gpu_run_clr_stats(api, g->ctx, (int)n, S,
                               &(stk_gpu_clr_mode_args){p0->mode, in_dt, ot}, stream, err, errlen);
    free(S);
  } else {
    stk_gpu_clr_sharpness_sample *S = calloc(n, sizeof *S);
    if (!S) return rc;
    for (size_t i = 0; i < n; i++)
      S[i] = (stk_gpu_clr_sharpness_sample){p->src[i],   p->dst[i],   p->ins[i].h,
                                            p->ins[i].w, p->ins[i].c, p->plans[i].factor};
    rc = stk_gpu_run_clr_sharpness(api, g->ctx, (int)n, S, NULL, stream, err, errlen);
    free(S);
  }
  return rc;
}

stk_status stk__color_run_gpu(stk__node *node, stk__gpu_batch *b, const stk_dtype *types,
                              int ntypes, stk__cg_plan_fn fn) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  size_t m = n ? n : 1;
  batch_plan p = {n,
                  calloc(m, sizeof(stk__cg_plan)),
                  calloc(m, sizeof(stk__cg_in)),
                  calloc(m, sizeof(void *)),
                  calloc(m, sizeof(void *)),
                  calloc(m, LUT_STRIDE),
                  calloc(m * 3, sizeof(int64_t))};
  stk_status st =
      p.plans && p.ins && p.src && p.dst && p.luts && p.shapes
          ? STK_OK
          : STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, NULL, "no memory for a colour plan");
  if (st == STK_OK && n > 0) st = plan_batch(node, b, in, types, ntypes, fn, &p);
  if (st == STK_OK && n > 0) {
    int ndim = p.plans[0].out_ndim;
    if (ndim == 2) /* HW: drop the channel extent */
      for (size_t i = 0; i < n; i++)
        p.shapes[i * 2] = p.shapes[i * 3], p.shapes[i * 2 + 1] = p.shapes[i * 3 + 1];
    st = stk__gpu_alloc_list(b, p.plans[0].out_dtype, ndim, p.shapes, ndim == 2 ? "HW" : "HWC",
                             stk__gpu_shapes_equal(p.shapes, n, ndim), &out);
  }
  if (st == STK_OK && n > 0) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      p.dst[i] = d.data;
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    int rc = call_api(g, stk__gpu_stream(b), &p, stk_tensor_list_dtype(in), err, sizeof err);
    if (rc == STK_ERR_OUT_OF_MEMORY && !err[0]) snprintf(err, sizeof err, "no host memory");
    st = stk__gpu_op_check(node, rc, err);
  } else if (st == STK_OK) { /* an empty batch: an empty list of the input's type */
    st = stk__gpu_alloc_list(b, stk_tensor_list_dtype(in), stk_tensor_list_ndim(in), p.shapes,
                             stk_tensor_list_layout(in), true, &out);
  }
  plan_free(&p);
  return stk__gpu_finish(b, in, owned, out, st);
}
