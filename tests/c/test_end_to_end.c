/* The basic pipeline end to end on the bundled photographs: determinism across threads
 * and prefetch depths, output shapes and value ranges, and bad files under both
 * policies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *PHOTOS[] = {"astronaut.png",         "camera.png", "chelsea.png", "coffee.png",
                               "hubble_deep_field.jpg", "retina.jpg", "rocket.jpg"};

/* The basic preset over the photos (files + labels), with a given decoder line. */
static char *pipeline_text(const char *extra_files, int threads, int prefetch,
                           const char *on_error) {
  static char buf[8192];
  char files[4096] = "";
  for (size_t i = 0; i < 7; i++) {
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "data/photos/%s", PHOTOS[i]);
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s\"", i ? ", " : "",
             tu_path(path, sizeof path, rel));
  }
  snprintf(
      buf, sizeof buf,
      "batch_size = 5\nnum_threads = %d\nprefetch_queue_depth = %d\nseed = 11\non_error = \"%s\"\n"
      "jpegs, labels = readers.file(files=[%s%s], random_shuffle=true, initial_fill=4, "
      "name=\"Reader\")\n"
      "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[96, 96])\n"
      "images = resize(crops, size=[96, 96])\n"
      "mirror = random.coin_flip(probability=0.5)\n"
      "out = crop_mirror_normalize(images, mirror=mirror, mean=[128.0], std=[64.0], "
      "dtype=\"float32\")\n"
      "return out, labels\n",
      threads, prefetch, on_error, files, extra_files);
  return buf;
}

/* What `epochs` whole epochs of a pipeline gave: every image (float32 3x96x96) and
 * label in order, how many, and the skip count. A batch never holds two epochs, and
 * stk_batch_ends_epoch marks each epoch's last one. */
typedef struct {
  float *images;
  int32_t *labels;
  size_t count;
  int64_t skipped;
} epochs_run;

static epochs_run run_epochs(const char *text, int epochs) {
  enum { PER = 3 * 96 * 96 };
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  epochs_run r = {malloc(sizeof(float) * PER * 64 * (size_t)epochs),
                  malloc(sizeof(int32_t) * 64 * (size_t)epochs), 0, 0};
  for (int e = 0; e < epochs;) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    assert_int_equal(stk_batch_epoch(out), e);
    stk_tensor_list *tl = stk_batch_output(out, 0), *lab = stk_batch_output(out, 1);
    size_t n = stk_tensor_list_num_samples(tl);
    assert_true(n <= 5);
    assert_int_equal(stk_tensor_list_num_samples(lab), n);
    assert_true(r.count + n <= 64 * (size_t)epochs);
    if (n > 0) {
      assert_true(stk_tensor_list_is_dense(tl));
      assert_string_equal(stk_tensor_list_layout(tl), "CHW");
      stk_tensor_desc d;
      TU_OK(stk_tensor_list_sample(tl, 0, &d));
      assert_int_equal(d.shape[0], 3);
      assert_int_equal(d.shape[1], 96);
      assert_int_equal(d.shape[2], 96);
      memcpy(r.images + PER * r.count, stk_tensor_list_data(tl), sizeof(float) * PER * n);
      for (size_t i = 0; i < n; i++) {
        stk_tensor_desc l;
        TU_OK(stk_tensor_list_sample(lab, i, &l));
        r.labels[r.count + i] = *(const int32_t *)l.data;
      }
    }
    r.count += n;
    if (stk_batch_ends_epoch(out))
      e++;
    else
      assert_int_equal(n, 5); /* only an epoch's last batch may be short here */
    stk_batch_release(out);
  }
  stk_stats s = {.struct_size = sizeof s};
  TU_OK(stk_pipeline_stats(p, &s));
  r.skipped = s.skipped;
  stk_pipeline_destroy(p);
  return r;
}

static void free_run(epochs_run *r) {
  free(r->images);
  free(r->labels);
}

static void test_basic_pipeline_is_deterministic(void **state) {
  epochs_run a = run_epochs(pipeline_text("", 1, 1, "error"), 3);
  epochs_run b = run_epochs(pipeline_text("", 2, 1, "error"), 3);
  epochs_run c = run_epochs(pipeline_text("", 2, 3, "error"), 3);
  size_t n = sizeof PHOTOS / sizeof *PHOTOS;
  assert_int_equal(a.count, 3 * n); /* every photo once per epoch */
  assert_int_equal(b.count, a.count);
  assert_int_equal(c.count, a.count);
  assert_memory_equal(a.images, b.images, sizeof(float) * 3 * 96 * 96 * a.count);
  assert_memory_equal(a.images, c.images, sizeof(float) * 3 * 96 * 96 * a.count);
  assert_memory_equal(a.labels, c.labels, sizeof(int32_t) * a.count);
  for (size_t e = 0; e < 3; e++) { /* each epoch a permutation of the labels */
    int seen[16] = {0};
    for (size_t i = 0; i < n; i++) seen[a.labels[e * n + i]]++;
    for (size_t k = 0; k < n; k++) assert_int_equal(seen[k], 1);
  }
  /* values are (pixel - 128) / 64 */
  for (size_t i = 0; i < a.count * 3 * 96 * 96; i += 97)
    assert_true(a.images[i] >= -2.0f && a.images[i] <= 127.0f / 64);
  free_run(&a), free_run(&b), free_run(&c);
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
  snprintf(extra, extra_cap,
           ", \"%s/truncated.jpg\", \"%s/empty.jpg\", \"%s/garbage.jpg\", \"%s/badcrc.png\"", dir,
           dir, dir, dir);
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
    if (!strstr(stk_last_error(), names[k]))
      fail_msg("message does not name %s: %s", names[k], stk_last_error());
    stk_pipeline_destroy(p);
  }
}

/* Under "skip", each epoch delivers every good file exactly once and no file twice, and
 * each bad file counts once per epoch: the batch that meets one takes a replacement from
 * the same epoch, and the epoch's last batch is shorter. Any thread count. */
static void test_skip_policy_counts_bad_files(void **state) {
  char dir[256], extra[2048];
  write_bad_files(dir, sizeof dir, extra, sizeof extra);
  size_t good = sizeof PHOTOS / sizeof *PHOTOS;
  for (int threads = 1; threads <= 3; threads += 2) {
    epochs_run r = run_epochs(pipeline_text(extra, threads, 2, "skip"), 3);
    assert_int_equal(r.count, 3 * good);
    assert_int_equal(r.skipped, 3 * 4);
    for (size_t e = 0; e < 3; e++) {
      int seen[16] = {0};
      for (size_t i = 0; i < good; i++) seen[r.labels[e * good + i]]++;
      for (size_t k = 0; k < good; k++) assert_int_equal(seen[k], 1);
    }
    free_run(&r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic_pipeline_is_deterministic),
      cmocka_unit_test(test_bad_files_fail_naming_the_file),
      cmocka_unit_test(test_skip_policy_counts_bad_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
