/* Checkpoints: a pipeline resumed from a checkpoint goes on with exactly the batches the
 * original gave after it (samples, order, random draws), whatever the prefetch depth,
 * across epoch ends, for random-access and streaming readers; bad checkpoints fail the
 * build naming what does not fit. The reference is the uninterrupted run itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

enum { FILES = 23, BATCH = 4 };

static char dir[512];

static int setup(void **state) {
  (void)state;
  tu_tmpdir(dir, sizeof dir, "ckpt");
  for (int i = 0; i < FILES; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/f%02d.bin", dir, i);
    unsigned char byte = (unsigned char)i;
    tu_write(path, &byte, 1);
  }
  return 0;
}

/* A pipeline over the files: the reader's bytes and a random draw per sample. */
static stk_pipeline *make(const char *reader_args, int prefetch, const char *checkpoint) {
  char files[FILES * 620] = "", text[FILES * 620 + 1024];
  for (int i = 0; i < FILES; i++)
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s/f%02d.bin\"",
             i ? ", " : "", dir, i);
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nprefetch_queue_depth = %d\nseed = 3\n"
           "data, labels = readers.file(files=[%s], name=\"Reader\"%s)\n"
           "u = random.uniform(range=[0.0, 1.0])\nreturn data, u\n",
           BATCH, prefetch, files, reader_args);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  if (checkpoint) TU_OK(stk_pipeline_restore(p, checkpoint));
  TU_OK(stk_pipeline_build(p));
  return p;
}

/* The next `batches` batches as (byte, draw) pairs appended to out; returns the count. */
static size_t run(stk_pipeline *p, int batches, double *out) {
  size_t n = 0;
  for (int b = 0; b < batches; b++) {
    stk_batch *batch;
    TU_OK(stk_pipeline_run(p, &batch));
    stk_tensor_list *data = stk_batch_output(batch, 0), *u = stk_batch_output(batch, 1);
    for (size_t i = 0; i < stk_tensor_list_num_samples(data); i++) {
      stk_tensor_desc d, r;
      TU_OK(stk_tensor_list_sample(data, i, &d));
      TU_OK(stk_tensor_list_sample(u, i, &r));
      out[n++] = *(const unsigned char *)d.data;
      out[n++] = *(const float *)r.data;
    }
    stk_batch_release(batch);
  }
  return n;
}

static void check_resume(const char *reader_args) {
  for (int prefetch = 1; prefetch <= 3; prefetch += 2)
    for (int cut = 0; cut <= 13; cut += 3) { /* 6 batches per epoch: cuts across epochs */
      stk_pipeline *whole = make(reader_args, prefetch, NULL);
      static double before[4096], after[4096], resumed[4096];
      run(whole, cut, before);
      char *checkpoint;
      TU_OK(stk_pipeline_checkpoint(whole, &checkpoint));
      size_t n = run(whole, 9, after);
      stk_pipeline_destroy(whole);
      stk_pipeline *again = make(reader_args, 2, checkpoint);
      size_t m = run(again, 9, resumed);
      stk_pipeline_destroy(again);
      if (n != m || memcmp(after, resumed, n * sizeof(double)) != 0)
        fail_msg("%s, prefetch %d, cut after %d batches: the resumed run differs\n%s", reader_args,
                 prefetch, cut, checkpoint);
      stk_free(checkpoint);
    }
}

static void test_resume_goes_on_with_the_same_batches(void **state) {
  (void)state;
  check_resume("");
  check_resume(", random_shuffle=true");
  check_resume(", shuffle_after_epoch=true, num_shards=2, shard_id=1");
  check_resume(", random_shuffle=true, pad_last_batch=true, num_shards=3, shard_id=2");
}

static void test_checkpoint_text(void **state) {
  (void)state;
  stk_pipeline *p = make(", random_shuffle=true", 2, NULL);
  char *text;
  TU_OK(stk_pipeline_checkpoint(p, &text));
  assert_string_equal(text, "stoker-checkpoint 1\nordinal 0\nreader 0 23 23 Reader\n");
  stk_free(text);
  double out[64];
  run(p, 2, out);
  TU_OK(stk_pipeline_checkpoint(p, &text)); /* after the batches handed out, not made */
  assert_string_equal(text, "stoker-checkpoint 1\nordinal 8\nreader 0 15 23 Reader\n");
  stk_free(text);
  stk_pipeline_destroy(p);
}

static void expect_restore_error(const char *checkpoint, const char *fragment) {
  char files[700], text[1024];
  snprintf(files, sizeof files, "\"%s/f00.bin\", \"%s/f01.bin\"", dir, dir);
  snprintf(text, sizeof text,
           "batch_size = 2\ndata, l = readers.file(files=[%s], name=\"Reader\")\nreturn data\n",
           files);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_restore(p, checkpoint));
  stk_status st = stk_pipeline_build(p);
  if (st != STK_ERR_INVALID_ARGUMENT || !strstr(stk_last_error(), fragment))
    fail_msg("restoring '%s': %s, '%s' (wanted '%s')", checkpoint, stk_status_name(st),
             stk_last_error(), fragment);
  stk_pipeline_destroy(p);
}

static void test_bad_checkpoints_fail_the_build_naming_why(void **state) {
  (void)state;
  expect_restore_error("hello", "not a stoker checkpoint");
  expect_restore_error("stoker-checkpoint 1\nreader 0 2 2 Reader\n", "ordinal line is missing");
  expect_restore_error("stoker-checkpoint 1\nordinal 4\nreader 0 2 2 Other\n", "no reader 'Other'");
  expect_restore_error("stoker-checkpoint 1\nordinal 4\nreader 0 2 99 Reader\n", "taken over 99");
  expect_restore_error("stoker-checkpoint 1\nordinal 4\nreader 0 7 2 Reader\n", "does not fit");
  expect_restore_error("stoker-checkpoint 1\nordinal 4\nwhat 1\n", "unknown item");
  stk_pipeline *p = make("", 1, NULL);
  assert_int_equal(stk_pipeline_restore(p, "stoker-checkpoint 1\nordinal 0\n"), STK_ERR_STATE);
  stk_pipeline_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_goes_on_with_the_same_batches),
      cmocka_unit_test(test_checkpoint_text),
      cmocka_unit_test(test_bad_checkpoints_fail_the_build_naming_why),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
