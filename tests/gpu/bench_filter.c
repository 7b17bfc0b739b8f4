/*
 * bench_filter: GPU filters and noise (api_filter.h) on the batch of bench_util.h (256
 * decoded 375x500x3 uint8 images on the device), one RESULT line per operator. Weights
 * come from the CPU operators' functions (src/ops/filters.h). Bytes moved: the ideal,
 * the input once and the output once (uint8 -> uint8); the separable passes' float32
 * temporary is not counted, so the percentage shows what it costs.
 * Cases: gaussian_blur sigma 2 (13 taps per axis), laplacian window 3 (two pairs), filter
 * a 3x3 sharpening kernel (9 taps), noise.gaussian stddev 10, salt_and_pepper 10%
 * per pixel, shot factor 20.
 * usage: bench_filter [--batch N] [--lib PATH] [--size HxW]
 */
#include "bench_util.h"

#include "cuda/api_filter.h"
#include "ops/filters.h"

typedef struct {
  int npairs, kh, kw;
  const float *w;
} conv_case;

static int run_conv(bu_bench *b, void *user) {
  const conv_case *cc = (const conv_case *)user;
  stk_gpu_conv_sample *s = (stk_gpu_conv_sample *)calloc((size_t)b->batch, sizeof *s);
  for (int i = 0; i < b->batch; i++) {
    s[i].src = bu_image(b, i), s[i].dst = bu_scratch(b, i);
    s[i].h = b->h, s[i].w = b->w, s[i].c = b->c, s[i].out_h = b->h, s[i].out_w = b->w;
    s[i].kh = cc->kh, s[i].kw = cc->kw, s[i].ay = cc->kh / 2, s[i].ax = cc->kw / 2;
    s[i].border = STK__BORDER_REFLECT_101, s[i].fill = 0.0f;
    s[i].npairs = cc->npairs, s[i].weights = cc->w;
  }
  int rc = stk_gpu_run_conv(b->api, b->ctx, b->batch, s,
                            &(stk_gpu_io_args){STK_DTYPE_UINT8, STK_DTYPE_UINT8}, b->stream, b->err,
                            sizeof b->err);
  free(s);
  return rc;
}

typedef struct {
  int kind;
  double p[4];
  int64_t group;
} noise_case;

static int run_noise(bu_bench *b, void *user) {
  const noise_case *nc = (const noise_case *)user;
  stk_gpu_noise_sample *s = (stk_gpu_noise_sample *)calloc((size_t)b->batch, sizeof *s);
  for (int i = 0; i < b->batch; i++) {
    s[i].src = bu_image(b, i), s[i].dst = bu_scratch(b, i);
    s[i].count = (int64_t)b->image_bytes, s[i].group = nc->group;
    s[i].key[0] = 0x1234u, s[i].key[1] = 0xabcdu, s[i].ordinal[0] = (uint32_t)i;
    memcpy(s[i].p, nc->p, sizeof s[i].p);
  }
  int rc = stk_gpu_run_noise(b->api, b->ctx, b->batch, s,
                             &(stk_gpu_noise_args){nc->kind, STK_DTYPE_UINT8}, b->stream, b->err,
                             sizeof b->err);
  free(s);
  return rc;
}

int main(int argc, char **argv) {
  bu_bench b;
  bu_open(&b, argc, argv);
  double bytes = 2.0 * (double)b.image_bytes * b.batch;

  /* gaussian_blur, sigma 2: 13 taps per axis */
  float g[26];
  stk__gaussian_window(g, 13, 2.0);
  stk__gaussian_window(g + 13, 13, 2.0);
  conv_case gc = {1, 13, 13, g};
  bu_time(&b, "gaussian_blur", bytes, run_conv, &gc);

  /* laplacian, window 3: two pairs */
  float l[12];
  stk__second_derivative_window(l, 3);
  stk__binomial_window(l + 3, 3);
  stk__binomial_window(l + 6, 3);
  stk__second_derivative_window(l + 9, 3);
  conv_case lc = {2, 3, 3, l};
  bu_time(&b, "laplacian", bytes, run_conv, &lc);

  /* filter: a 3x3 sharpening kernel (not separable: all 9 taps) */
  static const float sharpen[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
  conv_case fc = {0, 3, 3, sharpen};
  bu_time(&b, "filter", bytes, run_conv, &fc);

  noise_case ng = {STK_GPU_NOISE_GAUSSIAN, {0.0, 10.0, 0.0, 0.0}, 1};
  bu_time(&b, "noise.gaussian", bytes, run_noise, &ng);
  noise_case ns = {STK_GPU_NOISE_SALT_AND_PEPPER, {0.05, 0.1, 255.0, 0.0}, 3};
  bu_time(&b, "noise.salt_and_pepper", bytes, run_noise, &ns);
  noise_case nh = {STK_GPU_NOISE_SHOT, {20.0, 0.0, 0.0, 0.0}, 1};
  bu_time(&b, "noise.shot", bytes, run_noise, &nh);
  bu_close(&b);
  return 0;
}
