/* The basic pipeline's faster paths end to end: the `basic` preset's graph (random crop
 * window decode, resize to 224x224, random mirror, ImageNet normalisation to float32 and
 * float16 CHW) run with every faster path off (JPEG rows through the staging row, the
 * portable resampler loops, crop_mirror_normalize's table) and on, over the same files
 * with the same seed, must deliver the same bytes in every batch.
 *
 * The files: JPEGs written here with TurboJPEG (sizes from 48 to 520 pixels, 4:4:4, 4:2:2,
 * 4:2:0 and gray, some progressive, some with an EXIF orientation) and the bundled
 * photographs. STK_BASIC_PATHS_DATA=DIR runs it over a folder of JPEGs instead (e.g.
 * bench/data/imagenet-like: `STK_BASIC_PATHS_DATA=$PWD/bench/data/imagenet-like
 * build/test_basic_paths`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "testutil.h"
#include "codecs/codecs.h"
#include "ops/cmn_fast.h"
#include "ops/resample_rows.h"

static uint32_t rng_state = 0xc0ffee;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return rng_state;
}

/* Writes `count` JPEGs into dir/class/ (smooth colours with noise). */
static void write_jpegs(const char *dir, int count) {
  char sub[1100];
  snprintf(sub, sizeof sub, "%s/a", dir);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", sub);
  if (system(cmd) != 0) fail_msg("%s failed", cmd);
  static const int subsamps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_420, TJSAMP_GRAY};
  for (int i = 0; i < count; i++) {
    int w = 48 + (int)(rnd() % 473), h = 48 + (int)(rnd() % 473);
    int ss = subsamps[rnd() % 5], c = ss == TJSAMP_GRAY ? 1 : 3;
    uint8_t *px = malloc((size_t)w * h * c);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        for (int k = 0; k < c; k++)
          px[((size_t)y * w + x) * c + k] =
              (uint8_t)((x * 200 / w + y * 90 / h + k * 50 + (int)(rnd() % 30)) & 255);
    tjhandle tj = tjInitCompress();
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    if (tjCompress2(tj, px, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, &jpg, &n, ss, 85,
                    rnd() % 4 == 0 ? TJFLAG_PROGRESSIVE : 0))
      fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
    tjDestroy(tj);
    char path[1200];
    snprintf(path, sizeof path, "%s/img_%03d.jpg", sub, i);
    int orientation = rnd() % 3 == 0 ? 1 + (int)(rnd() % 8) : 0;
    if (orientation) { /* an APP1 Exif block after SOI: little-endian TIFF, IFD0 entry 0x112 */
      uint8_t app[] = {0xff, 0xe1, 0, 34, 'E', 'x', 'i', 'f', 0,    0,    'I', 'I',
                       42,   0,    8, 0,  0,   0,   1,   0,   0x12, 0x01, 3,   0,
                       1,    0,    0, 0,  0,   0,   0,   0,   0,    0,    0,   0};
      app[28] = (uint8_t)orientation;
      uint8_t *all = malloc(n + sizeof app);
      memcpy(all, jpg, 2);
      memcpy(all + 2, app, sizeof app);
      memcpy(all + 2 + sizeof app, jpg + 2, n - 2);
      tu_write(path, all, n + sizeof app);
      free(all);
    } else {
      tu_write(path, jpg, n);
    }
    tjFree(jpg);
    free(px);
  }
}

static char *pipeline_text(const char *dir, const char *dtype) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "batch_size = 8\nnum_threads = 2\nseed = 5\n"
           "jpegs, labels = readers.file(file_root=\"%s\", random_shuffle=true, name=\"Reader\")\n"
           "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[224, 224])\n"
           "images = resize(crops, size=[224, 224])\n"
           "mirror = random.coin_flip(probability=0.5)\n"
           "out = crop_mirror_normalize(images, mirror=mirror, mean=[123.675, 116.28, 103.53], "
           "std=[58.395, 57.12, 57.375], dtype=\"%s\", output_layout=\"CHW\")\n"
           "return out, labels\n",
           dir, dtype);
  return buf;
}

static void all_paths(bool fast) {
  stk__jpeg_rows_staged = !fast;
  stk__resample_rows_off = !fast;
  stk__cmn_fast_off = !fast;
}

/* Every batch of one epoch, concatenated. */
static uint8_t *run_epoch(const char *text, size_t *bytes, size_t *samples) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  uint8_t *all = NULL;
  size_t used = 0;
  *samples = 0;
  for (;;) {
    stk_batch *b;
    TU_OK(stk_pipeline_run(p, &b));
    stk_tensor_list *tl = stk_batch_output(b, 0);
    for (size_t i = 0; i < stk_tensor_list_num_samples(tl); i++) {
      stk_tensor_desc d;
      TU_OK(stk_tensor_list_sample(tl, i, &d));
      size_t n = stk_dtype_size(d.dtype);
      for (int k = 0; k < d.ndim; k++) n *= (size_t)d.shape[k];
      all = realloc(all, used + n);
      memcpy(all + used, d.data, n);
      used += n;
      (*samples)++;
    }
    bool last = stk_batch_ends_epoch(b);
    stk_batch_release(b);
    if (last) break;
  }
  stk_pipeline_destroy(p);
  *bytes = used;
  return all;
}

static void compare(const char *dir, const char *dtype) {
  const char *text = pipeline_text(dir, dtype);
  size_t na, nb, sa, sb;
  all_paths(false);
  uint8_t *a = run_epoch(text, &na, &sa);
  all_paths(true);
  uint8_t *b = run_epoch(text, &nb, &sb);
  assert_true(sa > 0);
  assert_int_equal(sa, sb);
  assert_int_equal(na, nb);
  if (memcmp(a, b, na) != 0) {
    size_t i = 0;
    while (a[i] == b[i]) i++;
    fail_msg("%s %s: the faster paths differ at byte %zu (sample %zu)", dir, dtype, i,
             i / (na / sa));
  }
  printf("%s, %s: %zu samples, %zu bytes identical\n", dir, dtype, sa, na);
  free(a);
  free(b);
}

static void test_basic_pipeline_same_bytes(void **state) {
  (void)state;
  const char *data = getenv("STK_BASIC_PATHS_DATA");
  char dir[1024];
  if (!data) {
    tu_tmpdir(dir, sizeof dir, "basic_paths");
    write_jpegs(dir, 48);
    data = dir;
  }
  compare(data, "float32");
  compare(data, "float16");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic_pipeline_same_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
