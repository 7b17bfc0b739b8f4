/* Test images for the GPU programs of the own JPEG decoder (jpeg_huffman_gpu.cu,
 * jpeg_pixels_gpu.cu): the bundled photographs decoded to RGB by libjpeg, windows of them,
 * and noisy synthetic gradients with 1 or 3 channels. Each program seeds the generator
 * (ti_seed) at its start, so its data stay the same from run to run. Include once, after
 * jpeg_coefs.h (libjpeg). */
#ifndef STK_TESTS_GPU_JPEG_TEST_IMAGES_CUH
#define STK_TESTS_GPU_JPEG_TEST_IMAGES_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t *p;
  int w, h, c;
} test_image;

static uint32_t ti_rng = 1;
static void ti_seed(uint32_t seed) { ti_rng = seed; }

/* xorshift32: a uniform int in [lo, hi] */
static int rnd_in(int lo, int hi) {
  ti_rng ^= ti_rng << 13, ti_rng ^= ti_rng >> 17, ti_rng ^= ti_rng << 5;
  return lo + (int)(ti_rng % (uint32_t)(hi - lo + 1));
}

/* A photograph under STK_SOURCE_DIR decoded to RGB (exit 2 when it cannot be read). */
static test_image load_rgb(const char *relative) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", STK_SOURCE_DIR, relative);
  FILE *fp = fopen(path, "rb");
  if (!fp) fprintf(stderr, "cannot open %s\n", path), exit(2);
  struct jpeg_decompress_struct ci;
  struct jpeg_error_mgr jerr;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&ci);
  jpeg_stdio_src(&ci, fp);
  jpeg_read_header(&ci, TRUE);
  ci.out_color_space = JCS_RGB;
  jpeg_start_decompress(&ci);
  test_image im = {(uint8_t *)malloc((size_t)ci.output_width * ci.output_height * 3),
                   (int)ci.output_width, (int)ci.output_height, 3};
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW row = im.p + (size_t)ci.output_scanline * im.w * 3;
    jpeg_read_scanlines(&ci, &row, 1);
  }
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  fclose(fp);
  return im;
}

/* The x0, y0, w x h window of an RGB image (clamped to it), as a new image. */
static test_image window(test_image s, int x0, int y0, int w, int h) {
  w = w < s.w - x0 ? w : s.w - x0;
  h = h < s.h - y0 ? h : s.h - y0;
  test_image o = {(uint8_t *)malloc((size_t)w * h * 3), w, h, 3};
  for (int y = 0; y < h; y++)
    memcpy(o.p + (size_t)y * w * 3, s.p + ((size_t)(y0 + y) * s.w + x0) * 3, (size_t)w * 3);
  return o;
}

/* A w x h gradient with c channels and uniform noise of 0..40. */
static test_image synthetic(int w, int h, int c) {
  test_image o = {(uint8_t *)malloc((size_t)w * h * c), w, h, c};
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++)
        o.p[((size_t)y * w + x) * c + k] =
            (uint8_t)(((x * 255 / w + y * 131 / h + k * 85) + rnd_in(0, 40)) & 255);
  return o;
}

#endif
