/*
 * bench_color: the colour kernels (src/cuda/color.cu) on a batch of decoded uint8 images
 * already on the device, one RESULT line per operator (tests/gpu/bench_util.h).
 *
 * Each operator is timed through the entry point its run_gpu uses, with the parameters
 * it would pass (tables and matrices computed by the CPU library's own helpers where
 * they matter for the work done). Bytes moved, per batch, by an ideal implementation:
 * - elementwise and whole-pixel maps: the input once and the output once;
 * - histogram / mean operators (equalize, auto_contrast, contrast pil / mean_center): the
 *   input twice (the statistics must be complete before the first output byte) and the
 *   output once;
 * - grayscale: the input once, a third of it written;
 * - sharpness: the input once (the stencil's neighbours hit the cache), the output once.
 * usage: bench_color [--batch N] [--lib PATH] [--size HxW]
 */
#include "bench_util.h"
#include "cuda/api_color.h"
#include "ops/color.h"

typedef struct {
  int kind; /* 0 lut, 1 point (unused here), 2 pixel, 3 stats, 4 sharpness */
  int mode;
  uint8_t *luts; /* lut: batch * 3 * 256 tables */
  double m[9], off[3];
  float factor;
  double p[4];
  int cout;
} job;

static int run_job(bu_bench *b, void *user) {
  const job *j = (const job *)user;
  const stk_gpu_api *api = b->api;
  int n = b->batch, rc = 0;
  int64_t pixels = (int64_t)b->h * b->w;
  if (j->kind == 0) {
    stk_gpu_clr_lut_sample *S = (stk_gpu_clr_lut_sample *)calloc((size_t)n, sizeof *S);
    for (int i = 0; i < n; i++)
      S[i] =
          (stk_gpu_clr_lut_sample){bu_image(b, i), bu_scratch(b, i), pixels, b->c, (size_t)i * 768};
    rc = stk_gpu_run_clr_lut(api, b->ctx, n, S,
                             &(stk_gpu_clr_lut_args){j->luts, (size_t)n * 768, STK_DTYPE_UINT8},
                             b->stream, b->err, sizeof b->err);
    free(S);
  } else if (j->kind == 2) {
    stk_gpu_clr_pixel_sample *S = (stk_gpu_clr_pixel_sample *)calloc((size_t)n, sizeof *S);
    for (int i = 0; i < n; i++) {
      S[i].src = bu_image(b, i), S[i].dst = bu_scratch(b, i), S[i].pixels = pixels;
      S[i].cin = 3, S[i].cout = j->cout, S[i].factor = j->factor;
      memcpy(S[i].m, j->m, sizeof j->m);
      memcpy(S[i].off, j->off, sizeof j->off);
    }
    rc = stk_gpu_run_clr_pixel(api, b->ctx, n, S,
                               &(stk_gpu_clr_mode_args){j->mode, STK_DTYPE_UINT8, STK_DTYPE_UINT8},
                               b->stream, b->err, sizeof b->err);
    free(S);
  } else if (j->kind == 3) {
    stk_gpu_clr_stats_sample *S = (stk_gpu_clr_stats_sample *)calloc((size_t)n, sizeof *S);
    for (int i = 0; i < n; i++) {
      S[i] =
          (stk_gpu_clr_stats_sample){bu_image(b, i), bu_scratch(b, i), pixels, b->c, {0, 0, 0, 0}};
      memcpy(S[i].p, j->p, sizeof j->p);
    }
    rc = stk_gpu_run_clr_stats(api, b->ctx, n, S,
                               &(stk_gpu_clr_mode_args){j->mode, STK_DTYPE_UINT8, STK_DTYPE_UINT8},
                               b->stream, b->err, sizeof b->err);
    free(S);
  } else {
    stk_gpu_clr_sharpness_sample *S = (stk_gpu_clr_sharpness_sample *)calloc((size_t)n, sizeof *S);
    for (int i = 0; i < n; i++)
      S[i] = (stk_gpu_clr_sharpness_sample){bu_image(b, i), bu_scratch(b, i), b->h, b->w,
                                            b->c,           j->factor};
    rc = stk_gpu_run_clr_sharpness(api, b->ctx, n, S, NULL, b->stream, b->err, sizeof b->err);
    free(S);
  }
  return rc;
}

/* Per-sample tables of f(v) (three channels, the same table), varying with the sample. */
static uint8_t *make_luts(int n, int op) {
  uint8_t *l = (uint8_t *)malloc((size_t)n * 768);
  for (int i = 0; i < n; i++)
    for (int v = 0; v < 256; v++) {
      double f = 0.8 + 0.4 * (double)i / n, x;
      switch (op) {
        case 0:
          x = v * f;
          break; /* brightness */
        case 1:
          x = 128 + f * (v - 128);
          break; /* contrast */
        case 2:
          x = 255 - v;
          break; /* invert */
        case 3:
          x = v & 0xF0;
          break; /* posterize 4 */
        case 4:
          x = v >= 128 ? 255 - v : v;
          break; /* solarize */
        default:
          x = v < 128 ? v + 40 : v;
          break; /* solarize_add */
      }
      uint8_t u = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x + 0.5);
      for (int k = 0; k < 3; k++) l[(size_t)i * 768 + k * 256 + v] = u;
    }
  return l;
}

int main(int argc, char **argv) {
  bu_bench b;
  bu_open(&b, argc, argv);
  if (!b.api->supports(b.ctx, STK_GPU_K_CLR_LUT)) {
    printf("bench_color: the library has no colour kernels\n");
    return 1;
  }
  double img = (double)b.image_bytes * b.batch, two = 2 * img, three = 3 * img;
  static const char *lut_names[] = {"brightness", "contrast", "invert",
                                    "posterize",  "solarize", "solarize_add"};
  for (int op = 0; op < 6; op++) {
    job j = {0};
    j.luts = make_luts(b.batch, op);
    bu_time(&b, lut_names[op], two, run_job, &j);
    if (op == 0) bu_time(&b, "brightness_contrast", two, run_job, &j);
    free(j.luts);
  }
  job aff = {2, STK_GPU_CLR_AFFINE};
  aff.cout = 3;
  stk__hsv_matrix(30.0, 1.3, 0.9, false, aff.m);
  bu_time(&b, "hsv", two, run_job, &aff);
  stk__hsv_matrix(45.0, 1.0, 1.0, false, aff.m);
  bu_time(&b, "hue", two, run_job, &aff);
  stk__hsv_matrix(0.0, 0.5, 1.0, false, aff.m);
  bu_time(&b, "saturation", two, run_job, &aff);
  stk__hsv_matrix(-20.0, 1.2, 1.0, false, aff.m);
  for (int k = 0; k < 9; k++) aff.m[k] *= 1.1 * 0.9;
  aff.off[0] = aff.off[1] = aff.off[2] = (128 - 128 * 0.9) * 1.1;
  bu_time(&b, "color_twist", two, run_job, &aff);
  stk__affine_color cs;
  stk__colorspace_affine(STK__CS_RGB, STK__CS_YCBCR, STK_DTYPE_UINT8, &cs);
  memcpy(aff.m, cs.m, sizeof aff.m);
  memcpy(aff.off, cs.off, sizeof aff.off);
  bu_time(&b, "color_space_conversion", two, run_job, &aff);
  job pc = {2, STK_GPU_CLR_PIL_COLOR};
  pc.cout = 3, pc.factor = 1.4f;
  bu_time(&b, "saturation_pil", two, run_job, &pc);
  job gray = {2, STK_GPU_CLR_PIL_GRAY};
  gray.cout = 1;
  bu_time(&b, "grayscale", img + img / 3, run_job, &gray);
  job eq = {3, STK_GPU_CLR_EQ_PIL};
  bu_time(&b, "equalize", three, run_job, &eq);
  eq.mode = STK_GPU_CLR_EQ_CV;
  bu_time(&b, "experimental.equalize", three, run_job, &eq);
  job ac = {3, STK_GPU_CLR_AUTOCONTRAST};
  ac.p[0] = 2.0, ac.p[1] = 1.0;
  bu_time(&b, "auto_contrast", three, run_job, &ac);
  job cp = {3, STK_GPU_CLR_PIL_CONTRAST};
  cp.p[0] = 0.6;
  bu_time(&b, "contrast_pil", three, run_job, &cp);
  job cm = {3, STK_GPU_CLR_MEAN_CONTRAST};
  cm.p[0] = 0.6, cm.p[1] = 1.0, cm.p[2] = 0.0, cm.p[3] = 0.6;
  bu_time(&b, "contrast_mean_center", three, run_job, &cm);
  job sh = {4};
  sh.factor = 1.8f;
  bu_time(&b, "sharpness", two, run_job, &sh);
  bu_close(&b);
  return 0;
}
