/* Hostile input that once crashed, hung or misled (issue 19): each case fails on the code
 * before its fix. Fuzzer finds live in tests/fuzz/corpus (replayed by CTest). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "codecs/codecs.h"
#include "io/file_list.h"
#include "io/npy.h"
#include "io/tfrecord.h"
#include "stoker/stoker.h"
#include "testutil.h"

static stk_pipeline *feeder(void) {
  stk_pipeline *p = NULL;
  TU_OK(stk_pipeline_from_text("batch_size = 1\nsrc = external_source(name=\"src\")\nreturn src\n",
                               &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

/* A NULL data pointer segfaulted; a 2^62-element float32 shape overflowed to 0 bytes and
 * divided by zero (SIGFPE). */
static void test_feed_null_and_overflowing_shapes(void **state) {
  stk_pipeline *p = feeder();
  stk_tensor_desc d = {
      .data = NULL, .ndim = 1, .shape = {4}, .strides = {4}, .dtype = STK_DTYPE_FLOAT32};
  assert_int_equal(stk_pipeline_feed(p, "src", &d, 1), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "NULL"));
  assert_non_null(strstr(stk_last_error(), "'src', sample 0"));
  float one = 1;
  d = (stk_tensor_desc){.data = &one,
                        .ndim = 1,
                        .shape = {(int64_t)1 << 62},
                        .strides = {4},
                        .dtype = STK_DTYPE_FLOAT32};
  assert_int_equal(stk_pipeline_feed(p, "src", &d, 1), STK_ERR_LIMIT);
  d = (stk_tensor_desc){.data = &one,
                        .ndim = 3,
                        .shape = {(int64_t)1 << 31, (int64_t)1 << 31, 8},
                        .strides = {4, 4, 4},
                        .dtype = STK_DTYPE_FLOAT32};
  assert_int_equal(stk_pipeline_feed(p, "src", &d, 1), STK_ERR_LIMIT);
  stk_pipeline_destroy(p);
}

/* A zero extent beside huge ones made region copies compute overflowing strides (UBSan). */
static void test_npy_zero_extent_with_huge_others(void **state) {
  char hdr[128];
  int n = snprintf(hdr, sizeof hdr,
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (0, %lld, %lld), }",
                   (long long)1 << 40, (long long)1 << 40);
  uint8_t file[256];
  memcpy(file, "\x93NUMPY\x01\x00", 8);
  file[8] = (uint8_t)n, file[9] = 0;
  memcpy(file + 10, hdr, (size_t)n);
  stk__npy_header h;
  assert_int_equal(stk__npy_parse(file, 10 + (size_t)n, 10 + n, "z.npy", &h), STK_ERR_LIMIT);
  assert_non_null(strstr(stk_last_error(), "z.npy"));
  /* A zero extent with small others is fine: an empty array. */
  n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }");
  memcpy(file + 10, hdr, (size_t)n);
  file[8] = (uint8_t)n;
  assert_int_equal(stk__npy_parse(file, 10 + (size_t)n, 10 + n, "e.npy", &h), STK_OK);
  assert_int_equal(h.data_bytes, 0);
}

/* Unpacked int64 values (wire type 0) made the reader offset a NULL pointer (UBSan; the
 * fuzzer's first find, tests/fuzz/corpus/fuzz_cli_info/regress-int64-varint-null-offset). */
static void test_tf_unpacked_int64(void **state) {
  stk__strbuf f = {0}, ex = {0};
  /* Int64List { value: 7 (unpacked), value: 9 (unpacked) } by hand. */
  const uint8_t list[] = {0x1a, 0x04, 0x08, 0x07, 0x08, 0x09};
  const uint8_t feature[] = {0x0a, 0x01, 'x', 0x12, sizeof list};
  TU_OK(stk__strbuf_append(&f, "\x0a", 1));
  char len = (char)(sizeof feature + sizeof list);
  TU_OK(stk__strbuf_append(&f, &len, 1));
  TU_OK(stk__strbuf_append(&f, (const char *)feature, sizeof feature));
  TU_OK(stk__strbuf_append(&f, (const char *)list, sizeof list));
  TU_OK(stk__tf_example_finish(&f, &ex));
  const char *names[] = {"x"};
  stk__tf_feature out;
  TU_OK(stk__tf_example_find((const uint8_t *)ex.data, ex.len, names, 1, &out));
  assert_int_equal(out.kind, STK__TF_INT64);
  assert_int_equal(out.count, 2);
  int64_t v[2];
  TU_OK(stk__tf_feature_int64(&out, v));
  assert_int_equal(v[0], 7);
  assert_int_equal(v[1], 9);
  stk__strbuf_free(&f);
  stk__strbuf_free(&ex);
}

/* A JPEG cut short after a region's rows used to decode that region; now truncation is
 * found before decoding, whatever the window. */
static void test_jpeg_truncation_whatever_window(void **state) {
  char path[512];
  size_t size;
  uint8_t *jpg = tu_read(tu_path(path, sizeof path, "data/photos/rocket.jpg"), &size);
  stk__image_info info;
  TU_OK(stk__image_peek(jpg, size, "rocket.jpg", &info));
  stk__decode_opts o = {.roi_x = 0, .roi_y = 0, .roi_w = 16, .roi_h = 16};
  stk__decoded out;
  TU_OK(stk__image_decode(jpg, size, "rocket.jpg", &o, stk__image_alloc_malloc, NULL, &out));
  free(out.data);
  stk_status st =
      stk__image_decode(jpg, size * 3 / 4, "cut.jpg", &o, stk__image_alloc_malloc, NULL, &out);
  free(out.data);
  assert_int_equal(st, STK_ERR_DECODE);
  assert_non_null(strstr(stk_last_error(), "cut.jpg: JPEG is truncated"));
  assert_null(strstr(stk_last_error(), "stk__"));
  /* Trailing bytes after the EOI are allowed. */
  uint8_t *padded = malloc(size + 100);
  memcpy(padded, jpg, size);
  memset(padded + size, 0, 100);
  TU_OK(
      stk__image_decode(padded, size + 100, "padded.jpg", &o, stk__image_alloc_malloc, NULL, &out));
  free(out.data);
  free(padded);
  free(jpg);
}

/* A damaged IDAT (one bit) is an error for a window at the top of the image too. */
static void test_png_damage_below_window(void **state) {
  char path[512];
  size_t size;
  uint8_t *png = tu_read(tu_path(path, sizeof path, "data/photos/camera.png"), &size);
  stk__decode_opts o = {.roi_x = 0, .roi_y = 0, .roi_w = 8, .roi_h = 8};
  int refused = 0, trials = 0;
  for (size_t at = size / 2; at < size - 64 && trials < 40; at += (size / 2) / 40, trials++) {
    png[at] ^= 0x10;
    stk__decoded out;
    stk_status st =
        stk__image_decode(png, size, "flip.png", &o, stk__image_alloc_malloc, NULL, &out);
    free(out.data);
    refused += st != STK_OK;
    png[at] ^= 0x10;
  }
  assert_int_equal(refused, trials);
  free(png);
}

/* A symbolic-link DAG (each level links twice to the next) was walked 2^depth times. */
static void test_symlink_dag_listed_once(void **state) {
  char dir[512], a[700], b[700];
  tu_tmpdir(dir, sizeof dir, "dag");
  snprintf(a, sizeof a, "%s/cls", dir);
  assert_int_equal(mkdir(a, 0755), 0);
  enum { DEPTH = 24 };
  for (int i = DEPTH; i >= 0; i--) {
    snprintf(a, sizeof a, "%s/l%d", dir, i);
    assert_int_equal(mkdir(a, 0755), 0);
    if (i < DEPTH) {
      char target[64];
      snprintf(target, sizeof target, "../l%d", i + 1);
      snprintf(b, sizeof b, "%s/l%d/x", dir, i);
      assert_int_equal(symlink(target, b), 0);
      snprintf(b, sizeof b, "%s/l%d/y", dir, i);
      assert_int_equal(symlink(target, b), 0);
    }
  }
  snprintf(a, sizeof a, "%s/l%d/leaf.jpg", dir, DEPTH);
  tu_write(a, "x", 1);
  snprintf(a, sizeof a, "%s/cls/top", dir);
  assert_int_equal(symlink("../l0", a), 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  stk__file_list fl;
  size_t nf = 0;
  while (stk__default_file_filters[nf]) nf++;
  TU_OK(stk__file_list_scan(&fl, dir, stk__default_file_filters, nf, false));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  /* classes: cls, l0..l24; each lists leaf.jpg once through the first path reaching it */
  int64_t in_cls = 0;
  for (int64_t i = 0; i < fl.count; i++) in_cls += fl.labels[i] == 0;
  assert_int_equal(in_cls, 1);
  assert_true(t1.tv_sec - t0.tv_sec < 5);
  stk__file_list_free(&fl);
}

/* A FIFO named like an image blocked every reader forever (open() waits for a writer). */
static void test_fifo_never_blocks(void **state) {
  char dir[512], fifo[700], list[700];
  tu_tmpdir(dir, sizeof dir, "fifo");
  snprintf(fifo, sizeof fifo, "%s/x.jpg", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  uint8_t *data;
  size_t size;
  assert_int_equal(stk__read_file(fifo, 1 << 20, &data, &size), STK_ERR_IO);
  assert_non_null(strstr(stk_last_error(), "not a regular file"));
  snprintf(list, sizeof list, "%s/list.txt", dir);
  tu_write(list, "x.jpg 0\n", 8);
  char text[2048];
  snprintf(text, sizeof text,
           "batch_size = 1\nj, l = readers.file(file_list=\"%s\")\nreturn j, l\n", list);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  stk_status st = stk_pipeline_build(p);
  stk_batch *out = NULL;
  if (st == STK_OK) st = stk_pipeline_run(p, &out);
  assert_int_not_equal(st, STK_OK);
  assert_non_null(strstr(stk_last_error(), "x.jpg"));
  stk_pipeline_destroy(p);
}

/* roi_start near INT64_MAX plus roi_shape overflowed (UBSan: signed overflow). */
static void test_npy_roi_near_int64_max(void **state) {
  char dir[512], file[700], text[2048];
  tu_tmpdir(dir, sizeof dir, "npyroi");
  snprintf(file, sizeof file, "%s/a.npy", dir);
  const char *hdr = "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }          \n";
  uint8_t buf[128];
  size_t n = strlen(hdr);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (uint8_t)n, buf[9] = 0;
  memcpy(buf + 10, hdr, n);
  memcpy(buf + 10 + n, "\1\2\3\4", 4);
  tu_write(file, buf, 10 + n + 4);
  snprintf(text, sizeof text,
           "batch_size = 1\nx = readers.numpy(file_root=\"%s\", "
           "roi_start=[9223372036854775800], roi_shape=[100], out_of_bounds_policy=\"pad\")\n"
           "return x\n",
           dir);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  stk_status st = stk_pipeline_build(p);
  stk_batch *out = NULL;
  if (st == STK_OK) st = stk_pipeline_run(p, &out);
  assert_int_not_equal(st, STK_OK);
  assert_non_null(strstr(stk_last_error(), "overflows"));
  stk_pipeline_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_feed_null_and_overflowing_shapes),
      cmocka_unit_test(test_npy_zero_extent_with_huge_others),
      cmocka_unit_test(test_tf_unpacked_int64),
      cmocka_unit_test(test_jpeg_truncation_whatever_window),
      cmocka_unit_test(test_png_damage_below_window),
      cmocka_unit_test(test_symlink_dag_listed_once),
      cmocka_unit_test(test_fifo_never_blocks),
      cmocka_unit_test(test_npy_roi_near_int64_max),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
