/* The GPU pipeline end to end (on the GPU machine: scripts/gpu-check.sh): mixed
 * decoding, GPU operators and the fused resample + normalise against the CPU pipeline
 * with the same seed (identical random decisions), device memory over many batches, and
 * the errors of a machine without a usable GPU. CI runs it too, against the stand-in
 * backend tests/fake_gpu/fake_gpu.c (STK_CUDA_LIBRARY), which has no kernels and no
 * device memory counters: the two tests that need them are skipped there. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c/testutil.h"

static const char *PHOTOS[] = {"astronaut.png",         "camera.png", "chelsea.png", "coffee.png",
                               "hubble_deep_field.jpg", "retina.jpg", "rocket.jpg"};
#define N 7

static char *files_list(void) {
  static char files[4096];
  files[0] = 0;
  for (int i = 0; i < N; i++) {
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "data/photos/%s", PHOTOS[i]);
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s\"", i ? ", " : "",
             tu_path(path, sizeof path, rel));
  }
  return files;
}

/* Replaces every `key` in `text` (capacity cap) with `value`. */
static void replace_all(char *text, size_t cap, const char *key, const char *value) {
  char *at;
  size_t k = strlen(key), v = strlen(value);
  while ((at = strstr(text, key))) {
    assert_true(strlen(text) + v - k < cap);
    memmove(at + v, at + k, strlen(at + k) + 1);
    memcpy(at, value, v);
  }
}

/* body: operator lines using `jpegs`; @DEV@ and @MIX@ become the devices. */
static stk_pipeline *make(const char *body, bool gpu) {
  char text[8192];
  /* STK_TEST_SYNC=1 runs the stages on the calling thread (exec_async = 0) */
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nseed = 5\ndevice_id = %d\nexec_async = %d\n"
           "jpegs, labels = readers.file(files=[%s], name=\"Reader\")\n%s",
           N, gpu ? 0 : -1, getenv("STK_TEST_SYNC") ? 0 : 1, files_list(), body);
  replace_all(text, sizeof text, "@DEV@", gpu ? "\"gpu\"" : "\"cpu\"");
  replace_all(text, sizeof text, "@MIX@", gpu ? "mixed" : "cpu");
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

/* Runs one batch and returns host copies of the outputs. */
static stk_tensor_list **run_host(stk_pipeline *p, size_t nout, bool expect_device) {
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  stk_tensor_list **outs = calloc(nout, sizeof *outs);
  for (size_t o = 0; o < nout; o++) {
    stk_tensor_list *tl = stk_batch_output(b, o);
    if (o == 0)
      assert_int_equal(stk_tensor_list_storage(tl),
                       expect_device ? STK_STORAGE_DEVICE : STK_STORAGE_HOST);
    TU_OK(stk_tensor_list_to_host(tl, &outs[o]));
  }
  stk_batch_release(b);
  return outs;
}

typedef struct {
  double max, mean;
} diff;

static diff compare(const stk_tensor_list *a, const stk_tensor_list *b, size_t i) {
  stk_tensor_desc x, y;
  TU_OK(stk_tensor_list_sample(a, i, &x));
  TU_OK(stk_tensor_list_sample(b, i, &y));
  assert_int_equal(x.dtype, y.dtype);
  assert_int_equal(x.ndim, y.ndim);
  size_t n = 1;
  for (int d = 0; d < x.ndim; d++) {
    assert_int_equal(x.shape[d], y.shape[d]);
    n *= (size_t)x.shape[d];
  }
  diff r = {0, 0};
  for (size_t k = 0; k < n; k++) {
    double u = x.dtype == STK_DTYPE_UINT8 ? ((uint8_t *)x.data)[k] : ((float *)x.data)[k];
    double v = y.dtype == STK_DTYPE_UINT8 ? ((uint8_t *)y.data)[k] : ((float *)y.data)[k];
    double dd = fabs(u - v);
    r.max = fmax(r.max, dd);
    r.mean += dd;
  }
  r.mean /= (double)n;
  return r;
}

static bool is_png(size_t i) { return strstr(PHOTOS[i], ".png") != NULL; }

static void test_mixed_decode_matches_cpu(void **state) {
  const char *body = "images = decoders.image(jpegs, device=\"@MIX@\")\nreturn images\n";
  stk_pipeline *g = make(body, true), *c = make(body, false);
  stk_tensor_list **og = run_host(g, 1, true), **oc = run_host(c, 1, false);
  for (size_t i = 0; i < N; i++) {
    diff d = compare(og[0], oc[0], i);
    printf("# decode %-22s max %3.0f mean %.3f LSB\n", PHOTOS[i], d.max, d.mean);
    if (is_png(i))
      assert_true(d.max == 0); /* CPU decode + upload */
    else
      assert_true(d.mean < 1.0 && d.max <= 24); /* nvJPEG's IDCT is not libjpeg's islow */
  }
  stk_tensor_list_release(og[0]), stk_tensor_list_release(oc[0]), free(og), free(oc);
  stk_pipeline_destroy(g), stk_pipeline_destroy(c);
}

static void test_random_crop_decode_draws_the_same_windows(void **state) {
  const char *body = "crops = decoders.image_random_crop(jpegs, device=\"@MIX@\")\nreturn crops\n";
  stk_pipeline *g = make(body, true), *c = make(body, false);
  for (int b = 0; b < 3; b++) {
    stk_tensor_list **og = run_host(g, 1, true), **oc = run_host(c, 1, false);
    for (size_t i = 0; i < N; i++) {
      diff d = compare(og[0], oc[0], i); /* same shapes asserted inside */
      if (is_png(i))
        assert_true(d.max == 0);
      else
        assert_true(d.mean < 1.0);
    }
    stk_tensor_list_release(og[0]), stk_tensor_list_release(oc[0]), free(og), free(oc);
  }
  stk_pipeline_destroy(g), stk_pipeline_destroy(c);
}

/* random_resized_crop as an output too: not fused; uint8 parity within 1 LSB on the PNGs
 * (identical decodes), and the fused normalised output against the CPU chain. */
/* Whether the backend is the CPU stand-in (CI): no kernels, no memory counters. */
static bool fake_backend(void) {
  const char *lib = getenv("STK_CUDA_LIBRARY");
  return lib && strstr(lib, "stk_fake_gpu");
}

static void test_resample_and_fused_normalise_parity(void **state) {
  if (fake_backend()) skip();
  const char *body =
      "images = decoders.image(jpegs, device=\"@MIX@\")\n"
      "crops = random_resized_crop(images, size=[160, 192], device=@DEV@)\n"
      "crops2 = random_resized_crop(images, size=[224, 224], device=@DEV@)\n"
      "mirror = random.coin_flip(probability=0.5)\n"
      "out = crop_mirror_normalize(crops2, mirror=mirror, mean=[123.675, 116.28, 103.53], "
      "std=[58.395, 57.12, 57.375], dtype=\"float32\", device=@DEV@)\n"
      "flipped = flip(crops, horizontal=mirror, device=@DEV@)\n"
      "as_float = cast(flipped, dtype=\"float32\", device=@DEV@)\n"
      "return crops, out, as_float\n";
  stk_pipeline *g = make(body, true), *c = make(body, false);
  for (int b = 0; b < 3; b++) {
    stk_tensor_list **og = run_host(g, 3, true), **oc = run_host(c, 3, false);
    for (size_t i = 0; i < N; i++) {
      diff crop = compare(og[0], oc[0], i), norm = compare(og[1], oc[1], i),
           cast = compare(og[2], oc[2], i);
      printf("# %-22s rrc max %.0f LSB, fused normalise max %.4f mean %.5f, flip+cast max %.0f\n",
             PHOTOS[i], crop.max, norm.max, norm.mean, cast.max);
      if (is_png(i)) {
        assert_true(crop.max <= 1);
        assert_true(norm.max <= 1.01 / 57.12); /* 1 LSB after normalisation */
        assert_true(cast.max <= 1);
      } else {
        assert_true(crop.mean < 1.0);
        assert_true(norm.mean < 1.0 / 57.12);
      }
    }
    for (int o = 0; o < 3; o++) stk_tensor_list_release(og[o]), stk_tensor_list_release(oc[o]);
    free(og), free(oc);
  }
  stk_pipeline_destroy(g), stk_pipeline_destroy(c);
}

static void test_device_memory_is_flat(void **state) {
  if (fake_backend()) skip();
  /* STK_TEST_DECODER / STK_TEST_HW_LOAD vary the decoder (diagnosing the hardware path) */
  char body[1024];
  const char *decoder =
      getenv("STK_TEST_DECODER") ? getenv("STK_TEST_DECODER") : "decoders.image_random_crop";
  const char *hw = getenv("STK_TEST_HW_LOAD") ? getenv("STK_TEST_HW_LOAD") : "1.0";
  snprintf(body, sizeof body,
           "crops = %s(jpegs, hw_decoder_load=%s, device=\"mixed\")\n"
           "images = resize(crops, size=[224, 224], device=\"gpu\")\n"
           "out = crop_mirror_normalize(images, dtype=\"float16\", device=\"gpu\")\n"
           "return out\n",
           decoder, hw);
  stk_pipeline *g = make(body, true);
  stk_stats s = {.struct_size = sizeof s};
  int64_t after_warmup = 0;
  for (int b = 0; b < 300; b++) {
    stk_batch *batch;
    TU_OK(stk_pipeline_run(g, &batch));
    stk_tensor_list *tl = stk_batch_output(batch, 0);
    assert_true(stk_tensor_list_is_dense(tl));
    assert_non_null(stk_tensor_list_ready_event(tl));
    stk_batch_release(batch);
    TU_OK(stk_pipeline_stats(g, &s));
    if (b == 20) after_warmup = s.device_bytes_in_use + s.device_bytes_cached;
  }
  stk_decoder_diagnostics d = {.struct_size = sizeof d};
  TU_OK(stk_pipeline_decoder_diagnostics(g, &d));
  printf(
      "# device pool: %lld in use, %lld cached after 300 batches (%lld after 20); host blocks "
      "pinned %lld, "
      "pinning failed %lld\n",
      (long long)s.device_bytes_in_use, (long long)s.device_bytes_cached, (long long)after_warmup,
      (long long)d.host_blocks_pinned, (long long)d.host_pin_failures);
  assert_true(d.host_blocks_pinned > 0); /* the files the decoder reads are page-locked */
  assert_int_equal(d.host_pin_failures, 0);
  /* asynchronous: the decoder runs on its own thread (GPU operators follow it); in sync
   * mode everything runs on the caller's thread and the decode stage stays empty */
  printf("# decode stage %.3f ms/batch, GPU stage %.3f ms/batch\n", s.decode_stage_ns / 300e6,
         s.gpu_stage_ns / 300e6);
  if (getenv("STK_TEST_SYNC"))
    assert_int_equal(s.decode_stage_ns, 0);
  else
    assert_true(s.decode_stage_ns > 0 && d.decode_hw_call_ns > 0);
  assert_true(s.device_bytes_in_use + s.device_bytes_cached <= 2 * after_warmup + (8 << 20));
  stk_pipeline_destroy(g);
}

/* A copy of rocket.jpg changed by `spoil`, in a temporary file named into `path`
 * (a mkstemps template ending in ".jpg"). */
static void write_bad_copy(char *path, size_t (*spoil)(uint8_t *jpeg, size_t size)) {
  char src[1024];
  size_t n;
  uint8_t *buf = tu_read(tu_path(src, sizeof src, "data/photos/rocket.jpg"), &n);
  n = spoil(buf, n);
  int fd = mkstemps(path, 4);
  assert_true(fd >= 0);
  FILE *out = fdopen(fd, "wb");
  fwrite(buf, 1, n, out);
  fclose(out);
  free(buf);
}

static size_t truncate_half(uint8_t *jpeg, size_t size) { /* half the file: no EOI */
  (void)jpeg;
  return size / 2;
}

static size_t corrupt_scan(uint8_t *jpeg, size_t size) {
  tu_corrupt_scan(jpeg, size);
  return size;
}

/* Three epochs of the photos plus `bad` under on_error="skip" through `body` (operator
 * lines using `jpegs`): no batch fails, and every sample of an epoch is either delivered
 * once or skipped (a bad one leaves its batch: an epoch's batches hold N + 1 - skipped
 * samples). Returns the skipped count. */
static long long skipped_over_three_epochs(const char *bad, const char *body) {
  char text[8192];
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nseed = 5\ndevice_id = 0\non_error = \"skip\"\n"
           "jpegs, labels = readers.file(files=[%s, \"%s\"])\n%s",
           N, files_list(), bad, body);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  long long delivered = 0;
  for (int e = 0; e < 3;) {
    stk_batch *batch;
    TU_OK(stk_pipeline_run(p, &batch));
    size_t n = stk_tensor_list_num_samples(stk_batch_output(batch, 0));
    assert_true(n <= N);
    delivered += (long long)n;
    assert_int_equal(stk_batch_epoch(batch), e);
    e += stk_batch_ends_epoch(batch);
    stk_batch_release(batch);
  }
  stk_stats s = {.struct_size = sizeof s};
  TU_OK(stk_pipeline_stats(p, &s));
  stk_pipeline_destroy(p);
  assert_int_equal(delivered + s.skipped, 3 * (N + 1));
  return s.skipped;
}

/* A truncated JPEG among the files: nvJPEG's verdict (no EOI) is known in the CPU stage,
 * whose CPU decode refuses it, so on_error="skip" replaces it like on the CPU backend. */
static void test_mixed_bad_file_is_skipped(void **state) {
  char bad[] = "/tmp/stk-truncated-XXXXXX.jpg";
  write_bad_copy(bad, truncate_half);
  long long skipped = skipped_over_three_epochs(
      bad, "images = decoders.image(jpegs, device=\"mixed\")\nreturn images\n");
  printf("# truncated JPEG among %d files: %lld skipped over 3 epochs\n", N + 1, skipped);
  assert_int_equal(skipped, 3); /* once per epoch */
  remove(bad);
}

/* A JPEG with a DHT marker written into the middle of its scan: the header passes, so
 * it reaches the GPU stage. Under on_error="skip" no batch may fail, whichever path
 * decodes it: nvJPEG reports a failure (the CPU decoder then refuses it too and the
 * sample is rejected: it leaves the batch), or it
 * decodes the data to garbage without a word. hw_decoder_load 0 and 1: both paths. */
static void test_mixed_corrupt_scan_does_not_fail_the_batch(void **state) {
  char bad[] = "/tmp/stk-corrupt-scan-XXXXXX.jpg";
  write_bad_copy(bad, corrupt_scan);
  for (int hw = 0; hw <= 1; hw++) {
    char body[512];
    snprintf(body, sizeof body,
             "images = decoders.image(jpegs, device=\"mixed\", hw_decoder_load=%d.0, "
             "cpu_decoder_load=0)\n"
             "out = cast(images, dtype=\"uint8\", device=\"gpu\")\nreturn out\n",
             hw);
    printf(
        "# corrupt scan among %d files, hw_decoder_load %d: %lld skipped over 3 epochs (0: decoded "
        "without a reported error)\n",
        N + 1, hw, skipped_over_three_epochs(bad, body));
  }
  remove(bad);
}

/* cpu_decoder_load=1: every sample decoded by libjpeg-turbo in the CPU stage and only
 * uploaded, so the mixed decoders' outputs are the CPU decoders' byte for byte (the
 * random crop with the same windows), followed by a GPU operator or not; counted in
 * stats.host_decoded. */
static void test_host_decoded_share_is_the_cpu_decode(void **state) {
  const char *bodies[] = {
      "images = decoders.image(jpegs, device=\"@MIX@\", cpu_decoder_load=1)\nreturn images\n",
      "images = decoders.image_random_crop(jpegs, device=\"@MIX@\", cpu_decoder_load=1)\nreturn "
      "images\n",
      "images = decoders.image(jpegs, device=\"@MIX@\", cpu_decoder_load=1)\n"
      "out = cast(images, dtype=\"uint8\", device=@DEV@)\nreturn out\n"};
  for (int k = 0; k < 3; k++) {
    stk_pipeline *g = make(bodies[k], true), *c = make(bodies[k], false);
    for (int batch = 0; batch < 2; batch++) {
      stk_tensor_list **og = run_host(g, 1, true), **oc = run_host(c, 1, false);
      for (size_t i = 0; i < N; i++) {
        diff d = compare(og[0], oc[0], i);
        if (d.max != 0)
          fail_msg("pipeline %d batch %d %s: differs from the CPU decode by up to %.0f", k, batch,
                   PHOTOS[i], d.max);
      }
      stk_tensor_list_release(og[0]), stk_tensor_list_release(oc[0]);
      free(og), free(oc);
    }
    stk_stats s = {.struct_size = sizeof s};
    TU_OK(stk_pipeline_stats(g, &s));
    assert_true(s.host_decoded >= 2 * N);
    stk_pipeline_destroy(g), stk_pipeline_destroy(c);
  }
}

static void test_gpu_errors(void **state) {
  char text[4096];
  snprintf(text, sizeof text,
           "batch_size = 2\njpegs, labels = readers.file(files=[%s])\n"
           "images = decoders.image(jpegs, device=\"mixed\")\nreturn images\n",
           files_list());
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  assert_int_equal(stk_pipeline_build(p), STK_ERR_DEVICE); /* device_id -1 */
  assert_non_null(strstr(stk_last_error(), "device_id"));
  stk_pipeline_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mixed_decode_matches_cpu),
      cmocka_unit_test(test_random_crop_decode_draws_the_same_windows),
      cmocka_unit_test(test_resample_and_fused_normalise_parity),
      cmocka_unit_test(test_device_memory_is_flat),
      cmocka_unit_test(test_mixed_bad_file_is_skipped),
      cmocka_unit_test(test_mixed_corrupt_scan_does_not_fail_the_batch),
      cmocka_unit_test(test_host_decoded_share_is_the_cpu_decode),
      cmocka_unit_test(test_gpu_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
