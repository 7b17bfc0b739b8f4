/* The GPU backend's generic kernel interface (src/cuda/gpu_kernels.h), from outside, on
 * the stand-in backend (tests/fake_gpu/fake_gpu.c), which has a subset of the kernels:
 * - the backend describes every kernel of the list, id by id, as the library expects;
 * - supports() tells the kernels it has from those it lacks and rejects unknown ids;
 * - launch() refuses a record whose sizes disagree with the kernel's, and a kernel the
 *   backend lacks with STK_ERR_UNSUPPORTED naming it;
 * - a pipeline whose GPU operator needs a missing kernel fails with an error naming the
 *   operator and the kernel, and a backend built from another kernel list is refused
 *   when the pipeline opens the device, before any kernel runs. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu_kernels.h"
#include "testutil.h"

static const stk_gpu_api *fake_api(void) {
  void *lib = dlopen(STK_FAKE_GPU_LIB, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(lib);
  stk_cuda_get_api_fn get = (stk_cuda_get_api_fn)dlsym(lib, "stk_cuda_get_api");
  assert_non_null(get);
  return get();
}

static void test_backend_describes_the_kernel_list(void **state) {
  (void)state;
  static const stk_gpu_kernel_info ours[STK_GPU_K_COUNT] = {STK_GPU_KERNELS(STK_GPU_KERNEL_INFO)};
  const stk_gpu_api *api = fake_api();
  assert_int_equal(api->abi_version, STK_GPU_ABI_VERSION);
  assert_int_equal(api->kernel_count, STK_GPU_K_COUNT);
  for (int k = 0; k < STK_GPU_K_COUNT; k++) {
    assert_string_equal(api->kernels[k].name, ours[k].name);
    assert_int_equal(api->kernels[k].sample_size, ours[k].sample_size);
    assert_int_equal(api->kernels[k].args_size, ours[k].args_size);
  }
  /* names are unique: an id is never ambiguous in messages */
  for (int a = 0; a < STK_GPU_K_COUNT; a++)
    for (int b = a + 1; b < STK_GPU_K_COUNT; b++)
      assert_true(strcmp(ours[a].name, ours[b].name) != 0);
}

static void test_supports_and_launch_checks(void **state) {
  (void)state;
  const stk_gpu_api *api = fake_api();
  stk_gpu_ctx *ctx = NULL;
  char err[STK_GPU_ERRLEN] = "";
  assert_int_equal(api->open(NULL, &ctx, err, sizeof err), 0);
  assert_true(api->supports(ctx, STK_GPU_K_CAST));
  assert_true(api->supports(ctx, STK_GPU_K_PNG_DECODE));
  assert_false(api->supports(ctx, STK_GPU_K_RESAMPLE)); /* the stand-in has no resampling */
  assert_false(api->supports(ctx, -1));
  assert_false(api->supports(ctx, STK_GPU_K_COUNT));

  /* a cast of 4 bytes, launched through the typed launcher, runs */
  void *src = NULL, *dst = NULL;
  uintptr_t s = api->stream(ctx, STK_GPU_STREAM_COMPUTE);
  assert_int_equal(api->device_alloc(ctx, 4, s, &src, err, sizeof err), 0);
  assert_int_equal(api->device_alloc(ctx, 16, s, &dst, err, sizeof err), 0);
  const uint8_t in[4] = {0, 1, 200, 255};
  assert_int_equal(api->memcpy_async(ctx, src, in, 4, s, err, sizeof err), 0);
  stk_gpu_cast_sample cs = {src, dst, 4};
  stk_gpu_io_args io = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};
  assert_int_equal(stk_gpu_run_cast(api, ctx, 1, &cs, &io, s, err, sizeof err), 0);
  float out[4];
  assert_int_equal(api->memcpy_async(ctx, out, dst, sizeof out, s, err, sizeof err), 0);
  assert_int_equal(api->stream_sync(ctx, s, err, sizeof err), 0);
  assert_true(out[0] == 0.0f && out[1] == 1.0f && out[2] == 200.0f && out[3] == 255.0f);

  /* a record of the wrong size is refused, not read */
  stk_gpu_launch l = {1, &cs, sizeof cs + 8, &io, sizeof io, s};
  err[0] = 0;
  assert_int_equal(api->launch(ctx, STK_GPU_K_CAST, &l, err, sizeof err), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "cast"));
  l.sample_size = sizeof cs, l.args_size = 1;
  assert_int_equal(api->launch(ctx, STK_GPU_K_CAST, &l, err, sizeof err), STK_ERR_INVALID_ARGUMENT);

  /* a kernel the backend lacks: unsupported, named */
  stk_gpu_resample_sample rs;
  stk_gpu_resample_args ra;
  memset(&rs, 0, sizeof rs), memset(&ra, 0, sizeof ra);
  err[0] = 0;
  assert_int_equal(stk_gpu_run_resample(api, ctx, 1, &rs, &ra, s, err, sizeof err),
                   STK_ERR_UNSUPPORTED);
  assert_non_null(strstr(err, "resample"));
  assert_int_equal(api->launch(ctx, 12345, &l, err, sizeof err), STK_ERR_UNSUPPORTED);

  api->device_free(ctx, src, s, NULL, 0);
  api->device_free(ctx, dst, s, NULL, 0);
  api->close(ctx);
}

/* A pipeline of `body` (on uint8 images fed from one photo) built and run once; returns
 * the status, the message in msg. */
static stk_status run_pipeline(const char *body, char *msg, size_t msglen) {
  char path[1024];
  snprintf(path, sizeof path, "%s/data/photos/rocket.jpg", STK_SOURCE_DIR);
  char text[4096];
  snprintf(text, sizeof text,
           "batch_size = 2\nnum_threads = 1\ndevice_id = 0\n"
           "jpegs, labels = readers.file(files=[\"%s\", \"%s\"])\n"
           "images = decoders.image(jpegs, device=\"mixed\")\n%sreturn out\n",
           path, path, body);
  stk_pipeline *p = NULL;
  stk_status st = stk_pipeline_from_text(text, &p);
  if (st == STK_OK) st = stk_pipeline_build(p);
  stk_batch *b = NULL;
  if (st == STK_OK) st = stk_pipeline_run(p, &b);
  snprintf(msg, msglen, "%s", st == STK_OK ? "" : stk_last_error());
  if (b) stk_batch_release(b);
  stk_pipeline_destroy(p);
  return st;
}

static void test_operator_needing_a_missing_kernel(void **state) {
  (void)state;
  char msg[1024];
  /* flip is one of the kernels the stand-in lacks */
  const char *flip = "out = flip(images, horizontal=1, device=\"gpu\")\n";
  stk_status st = run_pipeline(flip, msg, sizeof msg);
  printf("  %s\n", msg);
  assert_int_equal(st, STK_ERR_UNSUPPORTED);
  assert_non_null(strstr(msg, "flip"));
  /* a kernel it has runs: the same images cast to float */
  st = run_pipeline("out = cast(images, dtype=\"float32\", device=\"gpu\")\n", msg, sizeof msg);
  assert_int_equal(st, STK_OK);
}

static void test_backend_from_another_kernel_list_is_refused(void **state) {
  (void)state;
  char msg[1024];
  setenv("STK_FAKE_GPU_KERNEL_SKEW", "1", 1);
  const char *cast = "out = cast(images, dtype=\"float32\", device=\"gpu\")\n";
  stk_status st = run_pipeline(cast, msg, sizeof msg);
  unsetenv("STK_FAKE_GPU_KERNEL_SKEW");
  assert_int_equal(st, STK_ERR_DEVICE);
  printf("  %s\n", msg);
  assert_non_null(strstr(msg, "another list of kernels"));
}

int main(void) {
  char lib[] = STK_FAKE_GPU_LIB;
  setenv("STK_CUDA_LIBRARY", lib, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backend_describes_the_kernel_list),
      cmocka_unit_test(test_supports_and_launch_checks),
      cmocka_unit_test(test_operator_needing_a_missing_kernel),
      cmocka_unit_test(test_backend_from_another_kernel_list_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
