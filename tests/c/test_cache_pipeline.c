/* The sample cache through the C API and the text form: a cached pipeline's bytes equal
 * the uncached one's over two epochs, the second epoch is all hits, and stk_pipeline_stats
 * still serves a caller whose struct_size stops before the cache's fields. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define BATCH 3
static const char *photos[] = {"data/photos/astronaut.png", "data/photos/camera.png",
                               "data/photos/chelsea.png", "data/photos/rocket.jpg"};
#define NPHOTOS 4

static stk_pipeline *make(bool cached) {
  char files[4096] = "", path[1024], text[8192];
  for (int i = 0; i < NPHOTOS; i++)
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s\"", i ? ", " : "",
             tu_path(path, sizeof path, photos[i]));
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nseed = 3\nprefetch_queue_depth = 1\n"
           "exec_async = 0\n"
           "jpegs, labels = readers.file(files=[%s], random_shuffle=true, name=\"Reader\")\n"
           "images = decoders.image(jpegs, output_type=\"RGB\")\n"
           "small = resize(images, resize_shorter=20)\n"
           "%s"
           "crops = random_resized_crop(kept, size=[8, 8], name=\"rrc\")\n"
           "return crops, kept_labels\n",
           BATCH, files,
           cached ? "kept, kept_labels = cache(small, labels)\n"
                  : "kept = copy(small)\nkept_labels = copy(labels)\n");
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

/* Every byte of `batches` batches, concatenated (outputs in order). */
static size_t collect(stk_pipeline *p, int batches, unsigned char *out, size_t cap) {
  size_t n = 0;
  for (int b = 0; b < batches; b++) {
    stk_batch *batch;
    TU_OK(stk_pipeline_run(p, &batch));
    for (size_t o = 0; o < 2; o++) {
      stk_tensor_list *tl = stk_batch_output(batch, o);
      for (size_t i = 0; i < stk_tensor_list_num_samples(tl); i++) {
        stk_tensor_desc d;
        TU_OK(stk_tensor_list_sample(tl, i, &d));
        size_t bytes = stk_dtype_size(d.dtype);
        for (int k = 0; k < d.ndim; k++) bytes *= (size_t)d.shape[k];
        assert_true(n + bytes <= cap);
        memcpy(out + n, d.data, bytes);
        n += bytes;
      }
    }
    stk_batch_release(batch);
  }
  return n;
}

static void test_cached_equals_uncached_and_hits(void **state) {
  (void)state;
  size_t cap = 1 << 20;
  unsigned char *a = malloc(cap), *b = malloc(cap);
  int batches = 2 * ((NPHOTOS + BATCH - 1) / BATCH); /* two epochs */
  stk_pipeline *plain = make(false), *cached = make(true);
  size_t na = collect(plain, batches, a, cap), nb = collect(cached, batches, b, cap);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na);
  stk_stats s = {.struct_size = sizeof s};
  TU_OK(stk_pipeline_stats(cached, &s));
  assert_int_equal(s.cache_misses, NPHOTOS);
  assert_int_equal(s.cache_hits, NPHOTOS);
  assert_int_equal(s.cache_entries, NPHOTOS);
  /* a program built before the cache's fields: served, the fields past its size kept */
  stk_stats old;
  memset(&old, 0x5a, sizeof old);
  old.struct_size = offsetof(stk_stats, cache_hits);
  TU_OK(stk_pipeline_stats(cached, &old));
  assert_int_equal(old.samples, s.samples);
  assert_int_equal(old.cache_hits, 0x5a5a5a5a5a5a5a5all);
  stk_pipeline_destroy(plain);
  stk_pipeline_destroy(cached);
  free(a);
  free(b);
}

static void test_random_prefix_refused_naming_operators(void **state) {
  (void)state;
  char path[1024], text[4096];
  snprintf(text, sizeof text,
           "jpegs, labels = readers.file(files=[\"%s\"])\n"
           "images = decoders.image(jpegs)\n"
           "noisy = noise.gaussian(images, stddev=3.0, name=\"grain\")\n"
           "kept = cache(noisy, name=\"store\")\nreturn kept\n",
           tu_path(path, sizeof path, photos[0]));
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  assert_int_equal(stk_pipeline_build(p), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "'store'"));
  assert_non_null(strstr(stk_last_error(), "'grain' (noise.gaussian), a random operator"));
  stk_pipeline_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cached_equals_uncached_and_hits),
      cmocka_unit_test(test_random_prefix_refused_naming_operators),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
