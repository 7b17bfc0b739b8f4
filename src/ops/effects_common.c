/* The CPU and GPU drivers of the per-pixel effects (see effects_common.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "effects_common.h"

const stk_dtype stk__fx_all_dtypes[4] = {STK_DTYPE_UINT8, STK_DTYPE_UINT16, STK_DTYPE_INT16,
                                         STK_DTYPE_FLOAT32};

int stk__fx_border_parse(const char *name) {
  static const char *const names[] = {"constant", "replicate", "reflect", "reflect_101", "wrap"};
  for (int i = 0; i < 5; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

int stk__fx_interp_parse(const char *name) {
  if (strcmp(name, "nearest") == 0) return STK_FX_NEAREST;
  if (strcmp(name, "linear") == 0) return STK_FX_LINEAR;
  if (strcmp(name, "cubic") == 0) return STK_FX_CUBIC;
  return -1;
}

void stk__fx_clahe_tiles(stk__fx_plan *plan, int64_t h, int64_t w) {
  stk_fx_params *p = &plan->p;
  /* OpenCV pads both axes (by tiles - size % tiles, a whole tile where it divides) as
   * soon as either does not divide */
  bool pad = h % p->tiles_y != 0 || w % p->tiles_x != 0;
  p->th = (int)(h / p->tiles_y + pad);
  p->tw = (int)(w / p->tiles_x + pad);
}

/* The clip limit in pixels per bin (OpenCV: truncated, at least 1). */
static int clahe_limit(const stk__fx_plan *plan) {
  double area = (double)plan->p.th * plan->p.tw;
  int lim = (int)(plan->clahe_clip * area / 256.0);
  return plan->clahe_clip > 0 ? (lim < 1 ? 1 : lim) : 0;
}

/* ---------------------------------------------------------------------------------- */
/* CPU                                                                                */
/* ---------------------------------------------------------------------------------- */

/* clahe's tables for one sample, into scratch. */
static stk_status clahe_luts_cpu(stk__node *node, stk__sample *s, const stk__image *in,
                                 stk__fx_plan *plan) {
  stk_fx_params *p = &plan->p;
  int planes = p->luma ? 1 : (int)in->c;
  size_t ntab = (size_t)planes * (size_t)p->tiles_y * (size_t)p->tiles_x;
  uint8_t *luts = stk__scratch(s, ntab * 256);
  if (!luts) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for %zu tables", ntab);
  int limit = clahe_limit(plan);
  for (int ch = 0; ch < planes; ch++)
    for (int ty = 0; ty < p->tiles_y; ty++)
      for (int tx = 0; tx < p->tiles_x; tx++) {
        int hist[256] = {0};
        for (int64_t y = (int64_t)ty * p->th; y < (int64_t)(ty + 1) * p->th; y++)
          for (int64_t x = (int64_t)tx * p->tw; x < (int64_t)(tx + 1) * p->tw; x++)
            hist[stk_fx_clahe_padded(in->data, in->h, in->w, in->c, x, y, ch, p->luma)]++;
        size_t t = ((size_t)ch * p->tiles_y + ty) * p->tiles_x + tx;
        stk_fx_clahe_lut(hist, p->th * p->tw, limit, luts + t * 256);
      }
  p->luts = luts;
  return STK_OK;
}

stk_status stk__fx_run_cpu(stk__node *node, stk__sample *s, const stk_dtype *dtypes, int ndtypes,
                           stk__fx_plan_fn planf) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, dtypes, ndtypes, &in));
  if (in.h < 1 || in.w < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "empty image (%lldx%lld)", (long long)in.h,
                      (long long)in.w);
  const stk__tensor *extra[STK_FX_MAX_REGIONS] = {NULL};
  int n_extra = stk__node_num_inputs(node) - 1;
  if (n_extra > STK_FX_MAX_REGIONS - 1) n_extra = STK_FX_MAX_REGIONS - 1;
  for (int k = 0; k < n_extra; k++) extra[k] = stk__input(s, k + 1);
  stk__fx_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.out_h = in.h, plan.out_w = in.w, plan.out_c = in.c, plan.out_dtype = in.dtype;
  STK_TRY(planf(node, s, &in, extra, n_extra, &plan));
  if ((double)plan.out_h * (double)plan.out_w > (double)stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "output %lldx%lld exceeds the pixel limit %lld",
                      (long long)plan.out_h, (long long)plan.out_w,
                      (long long)stk__node_max_pixels(node));
  if (plan.p.op == STK_FX_OP_CLAHE) STK_TRY(clahe_luts_cpu(node, s, &in, &plan));
  int in_ndim = stk__input(s, 0)->ndim;
  int64_t shape[3] = {plan.out_h, plan.out_w, plan.out_c};
  bool hw = in_ndim == 2 && plan.out_c == 1;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, plan.out_dtype, hw ? 2 : 3, shape, hw ? "HW" : "HWC", &out));
  stk_fx_image im = {in.data, in.dtype, in.h, in.w, in.c};
  int64_t i = 0;
  for (int64_t y = 0; y < plan.out_h; y++)
    for (int64_t x = 0; x < plan.out_w; x++, i += plan.out_c)
      stk_fx_eval_pixel(&plan.p, &im, x, y, plan.out_w, plan.out_c, out->data, plan.out_dtype, i);
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* GPU                                                                                */
/* ---------------------------------------------------------------------------------- */

/* Sample i of a list as a tensor view (device data pointer). */
static stk__tensor view_of(const stk_tensor_list *tl, size_t i) {
  stk_tensor_desc d;
  stk__tensor t;
  memset(&t, 0, sizeof t);
  if (stk_tensor_list_sample(tl, i, &d) != STK_OK) return t;
  t.data = d.data, t.ndim = d.ndim, t.dtype = d.dtype;
  memcpy(t.shape, d.shape, sizeof t.shape);
  memcpy(t.layout, d.layout, sizeof t.layout);
  return t;
}

typedef struct {
  stk_tensor_list *in, *extra[STK_FX_MAX_REGIONS];
  bool owned[STK_FX_MAX_REGIONS + 1];
  int n_extra;
  stk_gpu_fx_sample *fs;
  stk_gpu_clahe_sample *cs;
  int64_t *shapes;
  void *luts;
  stk__tensor *views0; /* every sample of input 0 */
} fx_batch;

static void fx_batch_free(stk__gpu_batch *b, fx_batch *fb) {
  for (int k = 0; k < fb->n_extra; k++)
    if (fb->owned[k + 1]) stk_tensor_list_release(fb->extra[k]);
  if (fb->luts) {
    stk__gpu *g = stk__gpu_device(b);
    g->api->device_free(g->ctx, fb->luts, stk__gpu_stream(b), NULL, 0);
  }
  free(fb->fs);
  free(fb->cs);
  free(fb->shapes);
  free(fb->views0);
}

/* Plans sample i into fb->fs[i] and its output shape. */
static stk_status plan_gpu_sample(stk__node *node, stk__gpu_batch *b, fx_batch *fb, size_t i,
                                  const stk_dtype *dtypes, int ndtypes, stk__fx_plan_fn planf,
                                  stk_dtype *out_dtype) {
  stk__sample *s = stk__gpu_sample(b, i);
  stk__tensor t = view_of(fb->in, i);
  bool ok = (t.ndim == 3 && (!t.layout[0] || strcmp(t.layout, "HWC") == 0)) ||
            (t.ndim == 2 && (!t.layout[0] || strcmp(t.layout, "HW") == 0));
  bool dt_ok = false;
  for (int k = 0; k < ndtypes; k++) dt_ok |= t.dtype == dtypes[k];
  if (!ok || !dt_ok)
    return STK__SFAIL(dt_ok ? STK_ERR_INVALID_ARGUMENT : STK_ERR_UNSUPPORTED, node, s,
                      "expects an HWC image of a supported type, got %d dimensions of %s, "
                      "layout '%s'",
                      t.ndim, stk_dtype_name(t.dtype) ? stk_dtype_name(t.dtype) : "?", t.layout);
  stk__image in = {t.data, t.dtype, t.shape[0], t.shape[1], t.ndim == 3 ? t.shape[2] : 1};
  if (in.h < 1 || in.w < 1 || in.h > INT32_MAX || in.w > INT32_MAX || in.c > INT32_MAX)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "image %lldx%lld is empty or too large",
                      (long long)in.h, (long long)in.w);
  stk__tensor ex[STK_FX_MAX_REGIONS];
  const stk__tensor *exp[STK_FX_MAX_REGIONS] = {NULL};
  for (int k = 0; k < fb->n_extra; k++) ex[k] = view_of(fb->extra[k], i), exp[k] = &ex[k];
  stk__fx_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.out_h = in.h, plan.out_w = in.w, plan.out_c = in.c, plan.out_dtype = in.dtype;
  plan.batch0 = fb->views0, plan.batch_n = stk__gpu_batch_size(b);
  STK_TRY(planf(node, s, &in, exp, fb->n_extra, &plan));
  if ((double)plan.out_h * (double)plan.out_w > (double)stk__node_max_pixels(node) ||
      plan.out_h > INT32_MAX || plan.out_w > INT32_MAX)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "output %lldx%lld exceeds the pixel limit %lld",
                      (long long)plan.out_h, (long long)plan.out_w,
                      (long long)stk__node_max_pixels(node));
  if (i > 0 && plan.out_dtype != *out_dtype)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "output type differs from sample 0's");
  *out_dtype = plan.out_dtype;
  stk_gpu_fx_sample *f = &fb->fs[i];
  f->src = in.data;
  f->h = (int)in.h, f->w = (int)in.w, f->c = (int)in.c;
  f->out_h = (int)plan.out_h, f->out_w = (int)plan.out_w, f->out_c = (int)plan.out_c;
  f->p = plan.p;
  if (plan.p.op == STK_FX_OP_CLAHE) {
    stk_gpu_clahe_sample *c = &fb->cs[i];
    *c =
        (stk_gpu_clahe_sample){in.data,           NULL,           f->h,      f->w,      f->c,
                               plan.p.tiles_y,    plan.p.tiles_x, plan.p.th, plan.p.tw, plan.p.luma,
                               clahe_limit(&plan)};
  }
  int64_t *sh = fb->shapes + i * 3;
  sh[0] = plan.out_h, sh[1] = plan.out_w, sh[2] = plan.out_c;
  return STK_OK;
}

/* clahe: one device block for every sample's tables, filled by clahe_luts. */
static stk_status clahe_luts_gpu(stk__node *node, stk__gpu_batch *b, fx_batch *fb, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const stk_gpu_clahe_sample *c = &fb->cs[i];
    total += (size_t)(c->luma ? 1 : c->c) * c->tiles_y * c->tiles_x * 256;
  }
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  STK_TRY(stk__gpu_op_check(
      node, g->api->device_alloc(g->ctx, total, stk__gpu_stream(b), &fb->luts, err, sizeof err),
      err));
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    stk_gpu_clahe_sample *c = &fb->cs[i];
    c->luts = (uint8_t *)fb->luts + off;
    fb->fs[i].p.luts = c->luts;
    off += (size_t)(c->luma ? 1 : c->c) * c->tiles_y * c->tiles_x * 256;
  }
  return stk__gpu_op_check(node,
                           stk_gpu_run_fx_clahe_luts(g->api, g->ctx, (int)n, fb->cs, NULL,
                                                     stk__gpu_stream(b), err, sizeof err),
                           err);
}

stk_status stk__fx_run_gpu_inputs(stk__node *node, stk__gpu_batch *b, const stk_dtype *dtypes,
                                  int ndtypes, stk__fx_plan_fn planf, bool upload_extra) {
  size_t n = stk__gpu_batch_size(b);
  fx_batch fb;
  memset(&fb, 0, sizeof fb);
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_FX_PIXEL));
  STK_TRY(stk__gpu_device_input(b, 0, &fb.in, &fb.owned[0]));
  fb.n_extra = stk__node_num_inputs(node) - 1;
  stk_status st = STK_OK;
  if (fb.n_extra > STK_FX_MAX_REGIONS - 1) fb.n_extra = STK_FX_MAX_REGIONS - 1;
  for (int k = 0; k < fb.n_extra && st == STK_OK; k++)
    if (upload_extra)
      st = stk__gpu_device_input(b, k + 1, &fb.extra[k], &fb.owned[k + 1]);
    else if (stk_tensor_list_storage(fb.extra[k] = stk__gpu_input(b, k + 1)) == STK_STORAGE_DEVICE)
      st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "on the GPU input %d is read on the host: it must come from a CPU "
                      "operator",
                      k + 1);
  fb.fs = stk__calloc(n ? n : 1, sizeof *fb.fs, "an effects plan");
  fb.cs = stk__calloc(n ? n : 1, sizeof *fb.cs, "a clahe plan");
  fb.shapes = stk__calloc(n * 3 + 1, sizeof(int64_t), "shapes");
  fb.views0 = stk__calloc(n ? n : 1, sizeof *fb.views0, "sample views");
  if (st == STK_OK && (!fb.fs || !fb.cs || !fb.shapes || !fb.views0)) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) fb.views0[i] = view_of(fb.in, i);
  stk_dtype out_dtype = STK_DTYPE_UINT8;
  for (size_t i = 0; i < n && st == STK_OK; i++)
    st = plan_gpu_sample(node, b, &fb, i, dtypes, ndtypes, planf, &out_dtype);
  if (st == STK_OK && n && fb.fs[0].p.op == STK_FX_OP_CLAHE) st = clahe_luts_gpu(node, b, &fb, n);
  stk_tensor_list *out = NULL;
  bool hw = stk_tensor_list_ndim(fb.in) == 2;
  for (size_t i = 0; i < n && hw; i++) hw = fb.shapes[i * 3 + 2] == 1;
  if (hw)
    for (size_t i = 0; i < n; i++)
      fb.shapes[i * 2] = fb.shapes[i * 3], fb.shapes[i * 2 + 1] = fb.shapes[i * 3 + 1];
  int ndim = hw ? 2 : 3;
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, out_dtype, ndim, fb.shapes, hw ? "HW" : "HWC",
                             stk__gpu_shapes_equal(fb.shapes, n, ndim), &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      fb.fs[i].dst = d.data;
    }
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_fx_pixel(g->api, g->ctx, (int)n, fb.fs,
                             &(stk_gpu_io_args){stk_tensor_list_dtype(fb.in), out_dtype},
                             stk__gpu_stream(b), err, sizeof err),
        err);
  }
  fx_batch_free(b, &fb);
  return stk__gpu_finish(b, fb.in, fb.owned[0], out, st);
}

stk_status stk__fx_run_gpu(stk__node *node, stk__gpu_batch *b, const stk_dtype *dtypes, int ndtypes,
                           stk__fx_plan_fn planf) {
  return stk__fx_run_gpu_inputs(node, b, dtypes, ndtypes, planf, true);
}
