/*
 * GPU benchmark of the geometry and occlusion kernels (api_geometry.h) and crop, on the
 * batch of bench_util.h (256 decoded 375x500x3 uint8 images on the device): one RESULT
 * line per operator. Bytes moved are what an ideal implementation reads and writes:
 * - rotate (15 degrees, linear, keep_size, fill) and warp_affine (scale + shear, linear):
 *   every output pixel written once, and about as many input pixels read;
 * - erase (3 boxes per image, out of place) and grid_mask: the image read and written;
 * - crop (224 x 224 in the centre): the window read and written.
 * usage: bench_geometry [--batch N] [--lib PATH] [--size HxW]
 */
#include <math.h>

#include "bench_util.h"
#include "cuda/api_geometry.h"

typedef struct {
  stk_gpu_warp_sample *ws;
  stk_gpu_warp_args wa;
  stk_gpu_erase_sample *es;
  stk_gpu_erase_box *boxes;
  stk_gpu_erase_args ea;
  stk_gpu_grid_mask_sample *gs;
  stk_gpu_crop_sample *cs;
  stk_gpu_crop_args ca;
} plans;

static int call_warp(bu_bench *b, void *u) {
  plans *p = (plans *)u;
  return stk_gpu_run_warp_affine(b->api, b->ctx, b->batch, p->ws, &p->wa, b->stream, b->err,
                                 sizeof b->err);
}

static int call_erase(bu_bench *b, void *u) {
  plans *p = (plans *)u;
  return stk_gpu_run_erase(b->api, b->ctx, b->batch, p->es, &p->ea, b->stream, b->err,
                           sizeof b->err);
}

static int call_grid(bu_bench *b, void *u) {
  plans *p = (plans *)u;
  return stk_gpu_run_grid_mask(b->api, b->ctx, b->batch, p->gs, &(stk_gpu_grid_mask_args){b->c},
                               b->stream, b->err, sizeof b->err);
}

static int call_crop(bu_bench *b, void *u) {
  plans *p = (plans *)u;
  return stk_gpu_run_crop(b->api, b->ctx, b->batch, p->cs, &p->ca, b->stream, b->err,
                          sizeof b->err);
}

/* Output -> input matrix of a rotation about the image centre (as stk__rotate_matrix). */
static void rotation(double deg, int h, int w, double m[6]) {
  double a = deg * 3.14159265358979323846 / 180.0, c = cos(a), s = sin(a);
  double ox = 0.5 * w, oy = 0.5 * h;
  m[0] = c, m[1] = -s, m[2] = ox - (c * ox - s * oy);
  m[3] = s, m[4] = c, m[5] = oy - (s * ox + c * oy);
}

static void plan_warp(const bu_bench *b, plans *p, const double m[6]) {
  for (int i = 0; i < b->batch; i++) {
    stk_gpu_warp_sample *s = &p->ws[i];
    memset(s, 0, sizeof *s);
    s->src = bu_image(b, i);
    s->src_pitch = (size_t)b->w * b->c;
    s->src_h = b->h, s->src_w = b->w;
    s->dst = bu_scratch(b, i);
    s->dst_h = b->h, s->dst_w = b->w;
    memcpy(s->m, m, sizeof s->m);
    s->constant_border = 1;
    for (int c = 0; c < 4; c++) s->fill[c] = 128.0f, s->fill_u8[c] = 128;
  }
  p->wa = (stk_gpu_warp_args){b->c, STK_DTYPE_UINT8, STK_DTYPE_UINT8, STK_GPU_INTERP_LINEAR};
}

static void plan_erase(const bu_bench *b, plans *p) {
  for (int i = 0; i < b->batch; i++) {
    stk_gpu_erase_sample *s = &p->es[i];
    memset(s, 0, sizeof *s);
    s->src = bu_image(b, i);
    s->dst = bu_scratch(b, i);
    s->shape[0] = b->h, s->shape[1] = b->w, s->shape[2] = b->c;
    s->boxes = p->boxes + 3 * i;
    s->nboxes = 3;
    s->nfill = 1;
    for (int k = 0; k < 3; k++) {
      stk_gpu_erase_box *bx = &p->boxes[3 * i + k];
      memset(bx, 0, sizeof *bx);
      bx->lo[0] = (i * 37 + k * 101) % (b->h / 2), bx->hi[0] = bx->lo[0] + b->h / 4;
      bx->lo[1] = (i * 53 + k * 67) % (b->w / 2), bx->hi[1] = bx->lo[1] + b->w / 5;
      bx->lo[2] = 0, bx->hi[2] = b->c;
    }
  }
  p->ea = (stk_gpu_erase_args){3, 1};
}

static void plan_grid(const bu_bench *b, plans *p) {
  for (int i = 0; i < b->batch; i++)
    p->gs[i] =
        (stk_gpu_grid_mask_sample){bu_image(b, i), bu_scratch(b, i), b->h, b->w,          cos(0.3),
                                   sin(0.3),       (double)(i % 17), 3.0,  64.0 + i % 32, 0.5};
}

static void plan_crop(const bu_bench *b, plans *p, int ch, int cw) {
  for (int i = 0; i < b->batch; i++) {
    stk_gpu_crop_sample *s = &p->cs[i];
    memset(s, 0, sizeof *s);
    s->src = bu_image(b, i);
    s->src_pitch = (size_t)b->w * b->c;
    s->src_h = b->h, s->src_w = b->w;
    s->dst = bu_scratch(b, i);
    s->dst_h = ch, s->dst_w = cw;
    s->y = (b->h - ch) / 2, s->x = (b->w - cw) / 2;
  }
  p->ca = (stk_gpu_crop_args){b->c, STK_DTYPE_UINT8, STK_DTYPE_UINT8};
}

int main(int argc, char **argv) {
  bu_bench b;
  bu_open(&b, argc, argv);
  BU_DIE_IF(&b, !b.api->supports(b.ctx, STK_GPU_K_WARP_AFFINE),
            "the backend has no geometry kernels");
  plans p;
  memset(&p, 0, sizeof p);
  p.ws = (stk_gpu_warp_sample *)calloc((size_t)b.batch, sizeof *p.ws);
  p.es = (stk_gpu_erase_sample *)calloc((size_t)b.batch, sizeof *p.es);
  p.boxes = (stk_gpu_erase_box *)calloc((size_t)b.batch * 3, sizeof *p.boxes);
  p.gs = (stk_gpu_grid_mask_sample *)calloc((size_t)b.batch, sizeof *p.gs);
  p.cs = (stk_gpu_crop_sample *)calloc((size_t)b.batch, sizeof *p.cs);
  BU_DIE_IF(&b, !p.ws || !p.es || !p.boxes || !p.gs || !p.cs, "out of host memory");
  double image = (double)b.image_bytes * b.batch;

  double m[6];
  rotation(15.0, b.h, b.w, m);
  plan_warp(&b, &p, m);
  bu_time(&b, "rotate", 2.0 * image, call_warp, &p);

  const double affine[6] = {0.9, 0.15, 10.0, -0.1, 1.05, -5.0};
  plan_warp(&b, &p, affine);
  p.wa.interp = STK_GPU_INTERP_LINEAR;
  bu_time(&b, "warp_affine", 2.0 * image, call_warp, &p);

  plan_erase(&b, &p);
  bu_time(&b, "erase", 2.0 * image, call_erase, &p);

  plan_grid(&b, &p);
  bu_time(&b, "grid_mask", 2.0 * image, call_grid, &p);

  int ch = b.h < 224 ? b.h : 224, cw = b.w < 224 ? b.w : 224;
  plan_crop(&b, &p, ch, cw);
  bu_time(&b, "crop", 2.0 * (double)ch * cw * b.c * b.batch, call_crop, &p);

  free(p.ws);
  free(p.es);
  free(p.boxes);
  free(p.gs);
  free(p.cs);
  bu_close(&b);
  return 0;
}
