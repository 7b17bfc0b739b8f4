/* The pixel stage of stoker's own JPEG decoder on a GPU: src/cuda/jpeg_idct.cu compiled
 * into this program (with stand-ins for the runtime's allocation helpers, so it needs no
 * context), fed the coefficients libjpeg-turbo reads from files, must give libjpeg-turbo's
 * decode byte for byte (the CPU test, tests/c/test_jpeg_pixels.c, checks the same maths on
 * the host). Batches mix sizes, subsamplings (4:4:4, 4:2:2, 4:2:0, 4:4:0, gray), qualities
 * and regions; then a timing of batches of 128 500x375 4:2:0 images.
 *
 * usage: build/jpeg_pixels_gpu [iterations]   (exit 0: all equal; 1: a difference; 2: setup) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "jpeg_coefs.h"
#include "../../src/cuda/jpeg_idct.cu"

/* ---- stand-ins for runtime.cu (plain stream-ordered allocations) ---- */

#include "runtime_standins.cuh"
#include "jpeg_test_images.cuh"

/* ---- test data ---- */

typedef struct {
  uint8_t *jpeg;
  size_t n;
  jc_coded c;
  int16_t *d_coef;
  char name[96];
} item;

static item make_item(test_image im, int subsamp, int quality, const char *what) {
  item it;
  memset(&it, 0, sizeof it);
  tjhandle tj = tjInitCompress();
  unsigned char *out = NULL;
  unsigned long size = 0;
  if (tjCompress2(tj, im.p, im.w, 0, im.h, TJPF_RGB, &out, &size, subsamp, quality, 0))
    fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj)), exit(2);
  tjDestroy(tj);
  it.jpeg = (uint8_t *)malloc(size);
  memcpy(it.jpeg, out, size);
  it.n = size;
  tjFree(out);
  if (jc_read(it.jpeg, it.n, &it.c)) fprintf(stderr, "jc_read failed\n"), exit(2);
  size_t bytes = (size_t)it.c.f.total_blocks * 64 * sizeof(int16_t);
  CHECK_CUDA(cudaMalloc((void **)&it.d_coef, bytes));
  CHECK_CUDA(cudaMemcpy(it.d_coef, it.c.coef, bytes, cudaMemcpyHostToDevice));
  static const char *ss[] = {"4:4:4", "4:2:2", "4:2:0", "gray", "4:4:0"};
  snprintf(it.name, sizeof it.name, "%s %dx%d %s q%d", what, im.w, im.h,
           subsamp < 5 ? ss[subsamp] : "?", quality);
  return it;
}

/* One batch of every item in one colour, each whole (even index) or a random region;
 * returns the number of images that differ from libjpeg-turbo. */
static int check_batch(item *items, int n, int color, cudaStream_t st) {
  int ch = color == 2 ? 1 : 3, bad = 0;
  stk_jpeg_frame *frames = (stk_jpeg_frame *)malloc(sizeof *frames * n);
  const int16_t **coef = (const int16_t **)malloc(sizeof *coef * n);
  uint8_t **dst = (uint8_t **)malloc(sizeof *dst * n);
  size_t *pitch = (size_t *)malloc(sizeof *pitch * n);
  int *roi = (int *)malloc(sizeof *roi * 4 * n);
  for (int i = 0; i < n; i++) {
    stk_jpeg_frame *f = &items[i].c.f;
    frames[i] = *f;
    coef[i] = items[i].d_coef;
    int rw = f->width, rh = f->height, rx = 0, ry = 0;
    if (i % 2) {
      rw = rnd_in(1, f->width), rh = rnd_in(1, f->height);
      rx = rnd_in(0, f->width - rw), ry = rnd_in(0, f->height - rh);
    }
    roi[4 * i] = rx, roi[4 * i + 1] = ry, roi[4 * i + 2] = i % 2 ? rw : 0, roi[4 * i + 3] = rh;
    pitch[i] = (size_t)rw * ch + (size_t)(i % 3) * 5; /* some pitches wider than the rows */
    CHECK_CUDA(cudaMalloc((void **)&dst[i], pitch[i] * rh));
    CHECK_CUDA(cudaMemset(dst[i], 0x5A, pitch[i] * rh));
  }
  char err[512] = "";
  int rc = stk_gpu_jpeg_pixels(NULL, n, frames, coef, dst, pitch, roi, color, st, err, sizeof err);
  CHECK_CUDA(cudaStreamSynchronize(st));
  if (rc) fprintf(stderr, "stk_gpu_jpeg_pixels: %d: %s\n", rc, err), exit(1);
  for (int i = 0; i < n; i++) {
    int w, h;
    uint8_t *ref = jc_decode(items[i].jpeg, items[i].n, color, &w, &h);
    int rx = roi[4 * i], ry = roi[4 * i + 1], rw = roi[4 * i + 2] ? roi[4 * i + 2] : w;
    int rh = roi[4 * i + 3];
    uint8_t *got = (uint8_t *)malloc(pitch[i] * rh);
    CHECK_CUDA(cudaMemcpy(got, dst[i], pitch[i] * rh, cudaMemcpyDeviceToHost));
    long long diff = 0;
    int maxd = 0;
    for (int y = 0; y < rh; y++)
      for (int x = 0; x < rw * ch; x++) {
        int d = abs((int)got[y * pitch[i] + x] - (int)ref[((size_t)(ry + y) * w + rx) * ch + x]);
        diff += d != 0;
        maxd = d > maxd ? d : maxd;
      }
    if (diff) {
      printf("DIFF %s color %d region %dx%d at (%d,%d): %lld bytes differ (max %d)\n",
             items[i].name, color, rw, rh, rx, ry, diff, maxd);
      bad++;
    }
    free(got);
    free(ref);
    CHECK_CUDA(cudaFree(dst[i]));
  }
  free(frames), free(coef), free(dst), free(pitch), free(roi);
  return bad;
}

/* Arguments the entry must refuse before launching anything. */
static int check_refusals(item *it, cudaStream_t st) {
  char err[512];
  uint8_t *dst = NULL;
  CHECK_CUDA(cudaMalloc((void **)&dst, 16));
  const int16_t *coef = it->d_coef;
  size_t pitch = 16;
  int bad = 0;
  int roi[4] = {it->c.f.width - 1, 0, 2, 1}; /* one column past the right edge */
  stk_jpeg_frame f = it->c.f;
  if (stk_gpu_jpeg_pixels(NULL, 1, &f, &coef, &dst, &pitch, roi, 0, st, err, sizeof err) !=
      STK_ERR_INVALID_ARGUMENT)
    printf("FAIL: region outside the image accepted\n"), bad++;
  f.comp[1].bw = 0;
  if (stk_gpu_jpeg_pixels(NULL, 1, &f, &coef, &dst, &pitch, NULL, 0, st, err, sizeof err) !=
      STK_ERR_INVALID_ARGUMENT)
    printf("FAIL: bad frame accepted\n"), bad++;
  CHECK_CUDA(cudaFree(dst));
  return bad;
}

static double bench(item *items, int n, int iters, cudaStream_t st) {
  stk_jpeg_frame *frames = (stk_jpeg_frame *)malloc(sizeof *frames * n);
  const int16_t **coef = (const int16_t **)malloc(sizeof *coef * n);
  uint8_t **dst = (uint8_t **)malloc(sizeof *dst * n);
  size_t *pitch = (size_t *)malloc(sizeof *pitch * n);
  for (int i = 0; i < n; i++) {
    frames[i] = items[i].c.f;
    coef[i] = items[i].d_coef;
    pitch[i] = (size_t)frames[i].width * 3;
    CHECK_CUDA(cudaMalloc((void **)&dst[i], pitch[i] * frames[i].height));
  }
  char err[512];
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int w = 0; w < 3; w++)
    if (stk_gpu_jpeg_pixels(NULL, n, frames, coef, dst, pitch, NULL, 0, st, err, sizeof err))
      fprintf(stderr, "%s\n", err), exit(1);
  CHECK_CUDA(cudaEventRecord(a, st));
  for (int k = 0; k < iters; k++)
    stk_gpu_jpeg_pixels(NULL, n, frames, coef, dst, pitch, NULL, 0, st, err, sizeof err);
  CHECK_CUDA(cudaEventRecord(b, st));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  for (int i = 0; i < n; i++) CHECK_CUDA(cudaFree(dst[i]));
  free(frames), free(coef), free(dst), free(pitch);
  return ms / iters;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 50;
  ti_seed(0x9e3779b9u);
  cudaStream_t st;
  CHECK_CUDA(cudaStreamCreate(&st));
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 20)); /* context up */
  static const int subsamps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440, TJSAMP_GRAY};
  static const int qualities[] = {50, 90, 100};
  static const int sizes[][2] = {{1, 1},   {2, 2},   {3, 1},    {7, 9},
                                 {17, 33}, {33, 17}, {4000, 3}, {3, 4000}};
  test_image photos[3] = {load_rgb("data/photos/rocket.jpg"), load_rgb("data/photos/retina.jpg"),
                          load_rgb("data/photos/hubble_deep_field.jpg")};
  item *items = (item *)malloc(sizeof *items * 512);
  int n = 0;
  for (int s = 0; s < 5; s++)
    for (int q = 0; q < 3; q++) {
      for (int p = 0; p < 3; p++)
        items[n++] = make_item(photos[p], subsamps[s], qualities[q], "photo");
      for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        test_image im = synthetic(sizes[z][0], sizes[z][1], 3);
        items[n++] = make_item(im, subsamps[s], qualities[q], "synthetic");
        free(im.p);
      }
    }
  int bad = 0;
  for (int color = 0; color < 3; color++) bad += check_batch(items, n, color, st);
  bad += check_refusals(&items[0], st);
  printf("jpeg_pixels_gpu: %d images x 3 colours (whole and regions): %s\n", n,
         bad ? "DIFFERENCES" : "all equal to libjpeg-turbo");

  /* timing: 128 different 500x375 windows of the photos, 4:2:0 q90 */
  item *bi = (item *)malloc(sizeof *bi * 128);
  for (int i = 0; i < 128; i++) {
    test_image s = photos[1 + i % 2];
    test_image im = window(s, rnd_in(0, s.w - 500), rnd_in(0, s.h - 375), 500, 375);
    bi[i] = make_item(im, TJSAMP_420, 90, "bench");
    free(im.p);
  }
  double ms = bench(bi, 128, iters, st);
  printf("jpeg_pixels_gpu: 128 x 500x375 4:2:0 RGB: %.3f ms per batch, %.0f images/s, %.0f Mpx/s\n",
         ms, 128 / ms * 1e3, 128 * 500.0 * 375 / ms / 1e3);
  return bad ? 1 : 0;
}
