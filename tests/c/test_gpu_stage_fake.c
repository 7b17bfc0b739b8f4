/* The executor's GPU stage on a machine without a GPU: pipelines with mixed decoders run
 * against tests/fake_gpu/fake_gpu.c, a backend whose queued work runs only when
 * something waits for it, and whose decodes read the JPEG bytes only then (as nvJPEG's
 * hardware path does). Each batch must equal the CPU pipeline's: a job whose host memory
 * went back to the pool before the device had read it would decode another file's bytes.
 * Both forms of the stage are run: decoding alone (the decoders on the compute stream)
 * and decoding followed by a GPU operator (the decoders on their own thread and stream);
 * also CPU outputs moved to the GPU, synchronous mode, teardown with work queued, a
 * corrupt JPEG found only in the GPU stage under both bad-sample policies, and a decode
 * call that never returns (the pipeline's timeout). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

#include "testutil.h"

/* src/pipeline/executor.c (internal): the automatic cpu_decoder_load's rule */
int stk__host_quota_next(int q, int n, int64_t wait_ns, int64_t busy_ns, int64_t cpu_ns);

#define FILES 24
#define BATCH 4

static char files[FILES * 160];
static char paths[FILES][512]; /* the files, in order */

/* FILES distinct JPEGs of a few sizes (similar byte counts, so the host pool's blocks
 * are reused from batch to batch), in a fresh directory. */
static void make_files(void) {
  char dir[256];
  tu_tmpdir(dir, sizeof dir, "fakegpu");
  tjhandle tj = tjInitCompress();
  assert_non_null(tj);
  unsigned seed = 12345;
  files[0] = 0;
  for (int f = 0; f < FILES; f++) {
    int w = 72 + 8 * (f % 3), h = 64 + 4 * (f % 2);
    unsigned char *px = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++) {
      seed = seed * 1103515245u + 12345u;
      px[i] = (unsigned char)((i / 3 % w) * 3 + f * 7 + (seed >> 27));
    }
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    assert_int_equal(tjCompress2(tj, px, w, 0, h, TJPF_RGB, &jpeg, &size, TJSAMP_420, 90, 0), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/f%02d.jpg", dir, f);
    tu_write(path, jpeg, size);
    snprintf(paths[f], sizeof paths[f], "%s", path);
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s\"%s\"", f ? ", " : "", path);
    tjFree(jpeg);
    free(px);
  }
  tjDestroy(tj);
}

static bool sync_mode; /* exec_async = 0: every stage on the calling thread */

static stk_pipeline *make(const char *body, bool gpu) {
  char text[8192];
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nseed = 3\ndevice_id = %d\nprefetch_queue_depth = 2\n"
           "exec_async = %d\njpegs, labels = readers.file(files=[%s], name=\"Reader\")\n%s",
           BATCH, gpu ? 0 : -1, sync_mode ? 0 : 1, files, body);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* `batches` batches of the GPU and the CPU form of `body`, compared sample by sample;
 * the consumer pauses before each copy so that the producer runs ahead and refills the
 * host pool's blocks. */
static void check_against_cpu_stats(const char *gpu_body, const char *cpu_body, int batches,
                                    stk_stats *stats, stk_decoder_diagnostics *diag) {
  stk_pipeline *g = make(gpu_body, true), *c = make(cpu_body, false);
  for (int k = 0; k < batches; k++) {
    stk_batch *gb, *cb;
    TU_OK(stk_pipeline_run(g, &gb));
    TU_OK(stk_pipeline_run(c, &cb));
    stk_tensor_list *dev = stk_batch_output(gb, 0), *host = NULL, *ref = stk_batch_output(cb, 0);
    assert_int_equal(stk_tensor_list_storage(dev), STK_STORAGE_DEVICE);
    sleep_ms(5);
    TU_OK(stk_tensor_list_to_host(dev, &host));
    for (size_t i = 0; i < BATCH; i++) {
      stk_tensor_desc x, y;
      TU_OK(stk_tensor_list_sample(host, i, &x));
      TU_OK(stk_tensor_list_sample(ref, i, &y));
      assert_int_equal(x.ndim, 3);
      assert_int_equal(x.shape[0], y.shape[0]);
      assert_int_equal(x.shape[1], y.shape[1]);
      size_t bytes = (size_t)x.shape[0] * x.shape[1] * x.shape[2];
      if (memcmp(x.data, y.data, bytes) != 0)
        fail_msg(
            "batch %d sample %zu: the GPU stage's output differs from the CPU pipeline's (memory "
            "reused before the device had read it?)",
            k, i);
    }
    stk_tensor_list_release(host);
    stk_batch_release(gb);
    stk_batch_release(cb);
  }
  if (stats) TU_OK(stk_pipeline_stats(g, stats));
  if (diag) TU_OK(stk_pipeline_decoder_diagnostics(g, diag));
  stk_pipeline_destroy(g);
  stk_pipeline_destroy(c);
}

static void check_against_cpu(const char *gpu_body, const char *cpu_body, int batches) {
  check_against_cpu_stats(gpu_body, cpu_body, batches, NULL, NULL);
}

/* The pipelines compared: mixed decoding alone, mixed decoding followed by a GPU
 * operator (a same-type cast: a copy), and the CPU reference. */
#define MIXED_ALONE "images = decoders.image(jpegs, device=\"mixed\")\nreturn images\n"
#define MIXED_THEN_GPU                                 \
  "images = decoders.image(jpegs, device=\"mixed\")\n" \
  "out = cast(images, dtype=\"uint8\", device=\"gpu\")\nreturn out\n"
#define CPU_DECODE "images = decoders.image(jpegs)\nreturn images\n"

static void test_decoders_alone(void **state) {
  (void)state;
  check_against_cpu(MIXED_ALONE, CPU_DECODE, 3 * FILES / BATCH);
}

static void test_decoders_on_their_own_thread(void **state) {
  (void)state;
  check_against_cpu(MIXED_THEN_GPU, CPU_DECODE, 3 * FILES / BATCH);
}

/* CPU data moved to the GPU (`.gpu()` in Python): through pinned staging whose blocks are
 * reused only once the stream has passed the upload. */
static void test_cpu_outputs_moved_to_the_gpu(void **state) {
  (void)state;
  check_against_cpu(
      "images = decoders.image(jpegs)\nout = copy(images, device=\"gpu\")\nreturn out\n",
      CPU_DECODE, 2 * FILES / BATCH);
}

static void test_sync_mode(void **state) {
  (void)state;
  sync_mode = true;
  check_against_cpu(MIXED_THEN_GPU, CPU_DECODE, 2 * FILES / BATCH);
  sync_mode = false;
}

/* Destroying a pipeline with batches still queued on the device waits for them before
 * their memory goes (nothing to compare: the fake would read freed memory otherwise,
 * which the sanitizers and the checksum of the next run would show). */
static void test_destroy_with_work_queued(void **state) {
  (void)state;
  stk_pipeline *g = make(MIXED_THEN_GPU, true);
  stk_batch *b;
  TU_OK(stk_pipeline_run(g, &b));
  stk_batch_release(b);
  sleep_ms(20); /* the producer and the decode thread fill the prefetch queue */
  stk_pipeline_destroy(g);
  check_against_cpu(MIXED_ALONE, CPU_DECODE, 2);
}

/* cpu_decoder_load: a fixed share of every batch decoded in the CPU stage into page-locked
 * pool blocks and only uploaded by the GPU stage. The fake copies from page-locked memory
 * only when the stream is waited for, so blocks released with the batch's CPU part (not
 * with its job) would show as other files' pixels. Counted in stats.host_decoded: whole
 * batches' shares (the stage may have run ahead of the consumer). */
static void test_host_decoded_share(void **state) {
  (void)state;
  const double loads[] = {1.0, 0.5, 0.0,
                          -1.0}; /* -1: automatic (outputs still right; the quota in range) */
  for (int sync = 0; sync < 2; sync++)
    for (int l = 0; l < 4; l++)
      for (int then_gpu = 0; then_gpu < 2; then_gpu++) {
        char body[512];
        snprintf(body, sizeof body,
                 "images = decoders.image(jpegs, device=\"mixed\", cpu_decoder_load=%g)\n%s",
                 loads[l],
                 then_gpu ? "out = cast(images, dtype=\"uint8\", device=\"gpu\")\nreturn out\n"
                          : "return images\n");
        int batches = 2 * FILES / BATCH, per_batch = (int)(loads[l] * BATCH + 0.5);
        sync_mode = sync;
        stk_stats st = {.struct_size = sizeof st};
        stk_decoder_diagnostics diag = {.struct_size = sizeof diag};
        check_against_cpu_stats(body, CPU_DECODE, batches, &st, &diag);
        sync_mode = false;
        if (loads[l] < 0) {
          assert_true(diag.host_decode_quota >= 0 && diag.host_decode_quota <= BATCH);
          assert_true(st.host_decoded >= 0);
          continue;
        }
        if (per_batch == 0) {
          assert_int_equal(st.host_decoded, 0);
          continue;
        }
        assert_int_equal(st.host_decoded % per_batch, 0);
        assert_true(st.host_decoded >= (int64_t)batches * per_batch);
        assert_true(st.host_decoded <= (int64_t)(batches + 4) * per_batch);
        assert_int_equal(diag.host_decode_quota, 0); /* a fixed share: no balance */
      }
}

/* The automatic share's rule (stk__host_quota_next): it grows while the CPU stage makes a
 * batch well within the decoders' time and the decoders did not wait for it, shrinks
 * when they waited or the CPU stage nears their time, by 1/32 of the batch (at least 1),
 * within [0, n]. */
static void test_host_quota_rule(void **state) {
  (void)state;
  const int64_t ms = 1000000;
  assert_int_equal(stk__host_quota_next(0, 256, 0, 10 * ms, 5 * ms),
                   8); /* CPU stage at 50%: grow */
  assert_int_equal(stk__host_quota_next(8, 256, 0, 10 * ms, 9 * ms), 8);       /* at 90%: hold */
  assert_int_equal(stk__host_quota_next(8, 256, 0, 10 * ms, 99 * ms / 10), 0); /* at 99%: shrink */
  assert_int_equal(stk__host_quota_next(16, 256, 2 * ms, 10 * ms, 5 * ms),
                   8);                                                      /* waited 20%: shrink */
  assert_int_equal(stk__host_quota_next(16, 256, ms, 10 * ms, 5 * ms), 24); /* waited 10%: grow */
  assert_int_equal(stk__host_quota_next(4, 256, 5 * ms, 10 * ms, 5 * ms), 0); /* never below 0 */
  assert_int_equal(stk__host_quota_next(254, 256, 0, 10 * ms, ms), 256);      /* never above n */
  assert_int_equal(stk__host_quota_next(3, 4, 0, 10 * ms, ms), 4); /* small batches: steps of 1 */
  assert_int_equal(stk__host_quota_next(3, 4, 0, 0, ms), 3);       /* no timing: unchanged */
}

static int setup_files(void **state) {
  (void)state;
  make_files();
  return 0;
}

/* ---- a JPEG whose header is fine and whose entropy-coded data is not ---- */

/* A copy of `path` with a marker in the middle of its scan: the header parses (the CPU
 * stage's checks pass), the decoders fail on the data. */
static void write_corrupt_copy(const char *path, const char *out) {
  size_t size;
  uint8_t *b = tu_read(path, &size);
  tu_corrupt_scan(b, size);
  tu_write(out, b, size);
  free(b);
}

/* The reference decode of a file (libjpeg-turbo, as the CPU decoder). */
static uint8_t *reference(const char *path, int *w, int *h) {
  size_t size;
  uint8_t *jpeg = tu_read(path, &size);
  tjhandle tj = tjInitDecompress();
  int ss, cs;
  assert_int_equal(tjDecompressHeader3(tj, jpeg, (unsigned long)size, w, h, &ss, &cs), 0);
  uint8_t *px = malloc((size_t)*w * *h * 3);
  assert_int_equal(tjDecompress2(tj, jpeg, (unsigned long)size, px, *w, 0, *h, TJPF_RGB, 0), 0);
  tjDestroy(tj);
  free(jpeg);
  return px;
}

/* 11 good files and a corrupt one, labelled by position, decoded by the (fake) nvJPEG
 * (cpu_decoder_load=0: the corruption is found only in the GPU stage) or in the CPU stage
 * (cpu_decoder_load=1). Under on_error="skip" the corrupt sample leaves its batch (image and label;
 * the batch is one shorter), and is counted once per epoch; under "error" the run fails naming it.
 */
static void test_corrupt_data_found_in_the_gpu_stage(void **state) {
  (void)state;
  enum { GOOD = 11 };
  char bad[600], list[GOOD * 520 + 600] = "", labels[200] = "";
  snprintf(bad, sizeof bad, "%s.corrupt.jpg", paths[0]);
  write_corrupt_copy(paths[0], bad);
  for (int f = 0; f <= GOOD; f++) {
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", f ? ", " : "",
             f < GOOD ? paths[f] : bad);
    snprintf(labels + strlen(labels), sizeof labels - strlen(labels), "%s%d", f ? ", " : "", f);
  }
  uint8_t *ref[GOOD];
  int rw[GOOD], rh[GOOD];
  for (int f = 0; f < GOOD; f++) ref[f] = reference(paths[f], &rw[f], &rh[f]);
  for (int route = 0; route < 4; route++) {
    int policy = route % 2,
        host = route / 2; /* host: decoded in the CPU stage (cpu_decoder_load=1) */
    char text[16384];
    snprintf(text, sizeof text,
             "batch_size = %d\nnum_threads = 2\nseed = 3\ndevice_id = 0\non_error = \"%s\"\n"
             "jpegs, labels = readers.file(files=[%s], labels=[%s], name=\"Reader\")\n"
             "images = decoders.image(jpegs, device=\"mixed\", cpu_decoder_load=%d)\n"
             "out = cast(images, dtype=\"uint8\", device=\"gpu\")\nreturn out, labels\n",
             BATCH, policy == 0 ? "skip" : "error", list, labels, host);
    stk_pipeline *p;
    TU_OK(stk_pipeline_from_text(text, &p));
    TU_OK(stk_pipeline_build(p));
    stk_status st = STK_OK;
    int seen[GOOD] = {0}, delivered = 0;
    for (int k = 0; k < 2 * ((GOOD + 1) / BATCH) && st == STK_OK; k++) { /* two epochs */
      stk_batch *b;
      st = stk_pipeline_run(p, &b);
      if (st != STK_OK) break;
      stk_tensor_list *img = NULL;
      TU_OK(stk_tensor_list_to_host(stk_batch_output(b, 0), &img));
      stk_tensor_list *lab = stk_batch_output(b, 1);
      size_t n = stk_tensor_list_num_samples(img);
      assert_int_equal(stk_tensor_list_num_samples(lab), n);
      for (size_t i = 0; i < n; i++) {
        stk_tensor_desc x, l;
        TU_OK(stk_tensor_list_sample(img, i, &x));
        TU_OK(stk_tensor_list_sample(lab, i, &l));
        int label = (int)((const int32_t *)l.data)[0];
        if (l.dtype == STK_DTYPE_INT64) label = (int)((const int64_t *)l.data)[0];
        assert_true(label >= 0 && label < GOOD); /* never the corrupt file's */
        seen[label]++;
        delivered++;
        assert_int_equal(x.shape[0], rh[label]);
        assert_int_equal(x.shape[1], rw[label]);
        if (memcmp(x.data, ref[label], (size_t)rw[label] * rh[label] * 3) != 0)
          fail_msg("batch %d sample %zu (label %d): not the decode of its file", k, i, label);
      }
      stk_tensor_list_release(img);
      stk_batch_release(b);
    }
    if (policy == 0) { /* every good file once per epoch, none twice: the bad one left its batch */
      assert_int_equal(delivered, 2 * GOOD);
      for (int f = 0; f < GOOD; f++) assert_int_equal(seen[f], 2);
    }
    stk_stats stats = {.struct_size = sizeof stats};
    TU_OK(stk_pipeline_stats(p, &stats));
    if (policy == 0) {
      TU_OK(st);
      assert_int_equal(stats.skipped, 2); /* once per epoch */
    } else {
      assert_int_equal(st, STK_ERR_DECODE);
      assert_non_null(strstr(stk_last_error(), ".corrupt.jpg"));
    }
    stk_pipeline_destroy(p);
  }
  for (int f = 0; f < GOOD; f++) free(ref[f]);
}

/* Issue 27: a decode call that never returns (the fake blocks inside decode_batch, as
 * nvJPEG's call spun for ever on the GPU machine). stk_pipeline_run fails within the
 * pipeline's timeout_ms naming the stage, the batch and what it waited for; the failure
 * stays; stk_pipeline_destroy returns within the bound; the call, released afterwards,
 * returns into the pipeline that destroy kept for it. Both forms of the stage: the
 * decoders on their own thread (stage "decode") and on the GPU thread (stage "GPU"). */
static void test_decode_call_that_never_returns(void **state) {
  (void)state;
  void *fake = dlopen(STK_FAKE_GPU_LIB, RTLD_NOW | RTLD_LOCAL); /* the module the pipeline loads */
  assert_non_null(fake);
  void (*hang)(int) = (void (*)(int))dlsym(fake, "stk_fake_gpu_hang_decodes");
  int (*hung)(void) = (int (*)(void))dlsym(fake, "stk_fake_gpu_hung_calls");
  assert_non_null(hang);
  assert_non_null(hung);
  const char *bodies[2] = {MIXED_THEN_GPU, MIXED_ALONE},
             *stages[2] = {"the decode stage", "the GPU stage"};
  for (int k = 0; k < 2; k++) {
    char text[8192];
    snprintf(text, sizeof text,
             "batch_size = %d\nnum_threads = 2\nseed = 3\ndevice_id = 0\ntimeout_ms = 300\n"
             "jpegs, labels = readers.file(files=[%s], name=\"Reader\")\n%s",
             BATCH, files, bodies[k]);
    stk_pipeline *p;
    TU_OK(stk_pipeline_from_text(text, &p));
    hang(1);
    TU_OK(stk_pipeline_build(p));
    int64_t t0 = now_ns();
    stk_batch *b = NULL;
    assert_int_equal(stk_pipeline_run(p, &b), STK_ERR_DEVICE);
    int64_t waited_ms = (now_ns() - t0) / 1000000;
    const char *msg = stk_last_error();
    if (!strstr(msg, stages[k]) || !strstr(msg, "on batch 0") || !strstr(msg, "nvJPEG") ||
        !strstr(msg, "timeout_ms"))
      fail_msg("the timeout's message should name the stage, the batch and the wait: %s", msg);
    assert_true(waited_ms >= 250 && waited_ms < 5000);
    assert_true(hung() == 1);
    assert_int_equal(stk_pipeline_run(p, &b), STK_ERR_DEVICE); /* the pipeline stays failed */
    assert_non_null(strstr(stk_last_error(), "earlier error"));
    t0 = now_ns();
    stk_pipeline_destroy(p); /* the stuck thread is left; its pipeline kept */
    assert_true((now_ns() - t0) / 1000000 < 5000);
    hang(0);
    for (int i = 0; i < 500 && hung() > 0; i++) sleep_ms(2);
    assert_int_equal(hung(), 0);
    sleep_ms(50); /* the released thread leaves its loop (stop is set) */
  }
  dlclose(fake);
}

/* A device host call (python_function on device "gpu") that asks for outputs past the
 * last: every such index is refused, whatever its width (a size_t that a cast to int
 * would make negative or wrap to 0 once named output -1 or output 0), and the function
 * still hands over its real output, the input copied. */
typedef struct {
  int refused, calls;
} device_index_log;

static stk_status device_copier(void *user, stk_host_call *call) {
  device_index_log *log = user;
  log->calls++;
  size_t n = stk_host_call_batch_size(call);
  stk_tensor_desc in[BATCH];
  for (size_t i = 0; i < n && i < BATCH; i++) TU_OK(stk_host_call_sample_input(call, i, 0, &in[i]));
  const size_t bad[] = {1, (size_t)-1, (size_t)1 << 32, 64, 65};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    if (stk_host_call_set_device_output(call, bad[k], in, n, "") == STK_ERR_INVALID_ARGUMENT)
      log->refused++;
  return stk_host_call_set_device_output(call, 0, in, n, "");
}

static void test_device_host_call_output_index_checked(void **state) {
  (void)state;
  char text[1024];
  snprintf(text, sizeof text,
           "batch_size = %d\nnum_threads = 2\nseed = 3\ndevice_id = 0\n"
           "u = random.uniform(range=[0.0, 1.0], shape=[3])\n"
           "d = python_function(u, device=\"gpu\", name=\"copier\")\nreturn d, u\n",
           BATCH);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  device_index_log log = {0};
  TU_OK(stk_pipeline_set_host_function(p, "copier", device_copier, &log, NULL));
  TU_OK(stk_pipeline_build(p));
  for (int k = 0; k < 2; k++) {
    stk_batch *b;
    TU_OK(stk_pipeline_run(p, &b));
    stk_tensor_list *host = NULL;
    TU_OK(stk_tensor_list_to_host(stk_batch_output(b, 0), &host));
    const float *u = stk_tensor_list_data(stk_batch_output(b, 1));
    for (size_t i = 0; i < BATCH; i++) {
      stk_tensor_desc x;
      TU_OK(stk_tensor_list_sample(host, i, &x));
      assert_memory_equal(x.data, u + 3 * i, 3 * sizeof(float));
    }
    stk_tensor_list_release(host);
    stk_batch_release(b);
  }
  stk_pipeline_destroy(p);
  assert_true(log.calls >= 2);
  assert_int_equal(log.refused, 5 * log.calls);
}

int main(void) {
  char lib[] = STK_FAKE_GPU_LIB;
  setenv("STK_CUDA_LIBRARY", lib, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decoders_alone),
      cmocka_unit_test(test_decoders_on_their_own_thread),
      cmocka_unit_test(test_cpu_outputs_moved_to_the_gpu),
      cmocka_unit_test(test_sync_mode),
      cmocka_unit_test(test_corrupt_data_found_in_the_gpu_stage),
      cmocka_unit_test(test_destroy_with_work_queued),
      cmocka_unit_test(test_host_decoded_share),
      cmocka_unit_test(test_host_quota_rule),
      cmocka_unit_test(test_decode_call_that_never_returns),
      cmocka_unit_test(test_device_host_call_output_index_checked),
  };
  return cmocka_run_group_tests(tests, setup_files, NULL);
}
