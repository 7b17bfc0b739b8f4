/* TFRecord: the record walk (length CRCs), each record's check (data CRC), and the
 * tf.train.Example reader over every record that checks: each feature listed, a few
 * looked up by name and their values read out. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/fileset.h"
#include "io/tfrecord.h"

static stk_status on_bytes(void *user, const uint8_t *p, size_t n) {
  size_t *total = user;
  *total += n;
  (void)p;
  return STK_OK;
}

static void read_feature(const stk__tf_feature *f) {
  if (f->count < 0 || f->count > (1 << 20)) return;
  size_t n = (size_t)f->count ? (size_t)f->count : 1, total = 0;
  if (f->kind == STK__TF_INT64) {
    int64_t *v = malloc(n * sizeof *v);
    if (v) stk__tf_feature_int64(f, v);
    free(v);
  } else if (f->kind == STK__TF_FLOAT) {
    float *v = malloc(n * sizeof *v);
    if (v) stk__tf_feature_float(f, v);
    free(v);
  } else if (f->kind == STK__TF_BYTES) {
    stk__tf_feature_bytes(f, on_bytes, &total);
  }
}

static stk_status each(void *user, const char *name, size_t len, const stk__tf_feature *f) {
  (void)user, (void)name, (void)len;
  read_feature(f);
  return STK_OK;
}

static void example(const uint8_t *p, size_t n) {
  static const char *const names[] = {"image/encoded", "image/class/label", "label", "x"};
  stk__tf_feature found[4];
  stk__tf_example_each(p, n, each, NULL);
  if (stk__tf_example_find(p, n, names, 4, found) == STK_OK)
    for (int i = 0; i < 4; i++) read_feature(&found[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  if (fd < 0) return 0;
  stk__tfrecord_index idx;
  memset(&idx, 0, sizeof idx);
  if (stk__tfrecord_index_build(&idx, fd, "fuzz.tfrecord", (int64_t)size) == STK_OK) {
    for (int64_t i = 0; i < idx.count; i++) {
      if (idx.offsets[i] < 0 || idx.sizes[i] < 16 || idx.offsets[i] + idx.sizes[i] > (int64_t)size)
        __builtin_trap(); /* a record outside the file */
      const uint8_t *payload;
      size_t len;
      if (stk__tfrecord_check(data + idx.offsets[i], (size_t)idx.sizes[i], "fuzz.tfrecord",
                              idx.offsets[i], &payload, &len) == STK_OK)
        example(payload, len);
    }
    stk__tfrecord_index_free(&idx);
  }
  close(fd);
  /* The Example reader on the raw input too: most inputs never get past the CRCs. */
  example(data, size);
  return 0;
}
