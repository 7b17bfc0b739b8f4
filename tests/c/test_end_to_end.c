/* The basic pipeline end to end on the bundled photographs: determinism across threads
 * and prefetch depths, output shapes and value ranges, and bad files under both
 * policies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *PHOTOS[] = {"astronaut.png", "camera.png", "chelsea.png", "coffee.png",
                               "hubble_deep_field.jpg", "retina.jpg", "rocket.jpg"};

/* The basic preset over the photos (files + labels), with a given decoder line. */
static char *pipeline_text(const char *extra_files, int threads, int prefetch, const char *on_error) {
  static char buf[8192];
  char files[4096] = "";
  for (size_t i = 0; i < 7; i++) {
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "data/photos/%s", PHOTOS[i]);
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s\"", i ? ", " : "",
             tu_path(path, sizeof path, rel));
  }
  snprintf(buf, sizeof buf,
           "batch_size = 5\nnum_threads = %d\nprefetch_queue_depth = %d\nseed = 11\non_error = \"%s\"\n"
           "jpegs, labels = readers.file(files=[%s%s], random_shuffle=true, initial_fill=4, name=\"Reader\")\n"
           "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[96, 96])\n"
           "images = resize(crops, size=[96, 96])\n"
           "mirror = random.coin_flip(probability=0.5)\n"
           "out = crop_mirror_normalize(images, mirror=mirror, mean=[128.0], std=[64.0], dtype=\"float32\")\n"
           "return out, labels\n",
           threads, prefetch, on_error, files, extra_files);
  return buf;
}

static float *run_batches(const char *text, int batches, int64_t *skipped) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  size_t per = 5 * 3 * 96 * 96;
  float *all = malloc(sizeof(float) * per * (size_t)batches);
  for (int b = 0; b < batches; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    stk_tensor_list *tl = stk_batch_output(out, 0);
    assert_true(stk_tensor_list_is_dense(tl));
    assert_string_equal(stk_tensor_list_layout(tl), "CHW");
    stk_tensor_desc d;
    TU_OK(stk_tensor_list_sample(tl, 0, &d));
    assert_int_equal(d.shape[0], 3);
    assert_int_equal(d.shape[1], 96);
    assert_int_equal(d.shape[2], 96);
    memcpy(all + per * (size_t)b, stk_tensor_list_data(tl), sizeof(float) * per);
    stk_batch_release(out);
  }
  stk_stats s;
  TU_OK(stk_pipeline_stats(p, &s));
  if (skipped) *skipped = s.skipped;
  stk_pipeline_destroy(p);
  return all;
}

static void test_basic_pipeline_is_deterministic(void **state) {
  size_t bytes = sizeof(float) * 5 * 3 * 96 * 96 * 4;
  float *a = run_batches(pipeline_text("", 1, 1, "error"), 4, NULL);
  float *b = run_batches(pipeline_text("", 2, 1, "error"), 4, NULL);
  float *c = run_batches(pipeline_text("", 2, 3, "error"), 4, NULL);
  assert_memory_equal(a, b, bytes);
  assert_memory_equal(a, c, bytes);
  /* values are (pixel - 128) / 64 */
  for (size_t i = 0; i < bytes / sizeof(float); i += 97) assert_true(a[i] >= -2.0f && a[i] <= 127.0f / 64);
  free(a), free(b), free(c);
}

static void write_bad_files(char *dir, size_t cap, char *extra, size_t extra_cap) {
  tu_tmpdir(dir, cap, "bad");
  char path[1200];
  size_t size;
  char src[1024];
  uint8_t *jpeg = tu_read(tu_path(src, sizeof src, "data/photos/rocket.jpg"), &size);
  snprintf(path, sizeof path, "%s/truncated.jpg", dir);
  tu_write(path, jpeg, size / 2);
  free(jpeg);
  snprintf(path, sizeof path, "%s/empty.jpg", dir);
  tu_write(path, "", 0);
  snprintf(path, sizeof path, "%s/garbage.jpg", dir);
  tu_write(path, "this is not an image at all, not even close", 44);
  uint8_t *png = tu_read(tu_path(src, sizeof src, "data/photos/coffee.png"), &size);
  png[40] ^= 0x55; /* inside the first IDAT's data: its CRC no longer matches */
  snprintf(path, sizeof path, "%s/badcrc.png", dir);
  tu_write(path, png, size);
  free(png);
  snprintf(extra, extra_cap, ", \"%s/truncated.jpg\", \"%s/empty.jpg\", \"%s/garbage.jpg\", \"%s/badcrc.png\"",
           dir, dir, dir, dir);
}

static void test_bad_files_fail_naming_the_file(void **state) {
  char dir[256], extra[2048];
  write_bad_files(dir, sizeof dir, extra, sizeof extra);
  const char *names[] = {"truncated.jpg", "empty.jpg", "garbage.jpg", "badcrc.png"};
  for (int k = 0; k < 4; k++) {
    char one[1024];
    snprintf(one, sizeof one, ", \"%s/%s\"", dir, names[k]);
    stk_pipeline *p;
    TU_OK(stk_pipeline_from_text(pipeline_text(one, 2, 2, "error"), &p));
    TU_OK(stk_pipeline_build(p));
    stk_status st = STK_OK;
    for (int b = 0; b < 4 && st == STK_OK; b++) { /* 8 files, batch 5: all seen in 2 batches */
      stk_batch *out = NULL;
      st = stk_pipeline_run(p, &out);
      stk_batch_release(out);
    }
    assert_int_not_equal(st, STK_OK);
    if (!strstr(stk_last_error(), names[k])) fail_msg("message does not name %s: %s", names[k], stk_last_error());
    stk_pipeline_destroy(p);
  }
}

static void test_skip_policy_counts_bad_files(void **state) {
  char dir[256], extra[2048];
  write_bad_files(dir, sizeof dir, extra, sizeof extra);
  int64_t skipped = 0;
  /* 11 files, 4 bad; 11 batches of 5 = 55 samples drawn: about 20 bad ones skipped */
  float *v = run_batches(pipeline_text(extra, 2, 2, "skip"), 11, &skipped);
  free(v);
  assert_true(skipped >= 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic_pipeline_is_deterministic),
      cmocka_unit_test(test_bad_files_fail_naming_the_file),
      cmocka_unit_test(test_skip_policy_counts_bad_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
