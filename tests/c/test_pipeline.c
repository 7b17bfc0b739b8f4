/* The executor through the public API: running, determinism, external data, host
 * functions, the bad-sample policy, graph errors, the text form, memory. */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

/* ---- helpers ---- */

static stk_pipeline *make_pipe(int batch, int threads, int prefetch, int64_t seed) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, batch));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, threads));
  TU_OK(stk_pipeline_set(p, STK_PIPE_PREFETCH_QUEUE_DEPTH, prefetch));
  TU_OK(stk_pipeline_set(p, STK_PIPE_SEED, seed));
  return p;
}

static void add_uniform(stk_pipeline *p, const char *out, double lo, double hi, int64_t len) {
  stk_op *op;
  TU_OK(stk_op_create("random.uniform", "cpu", &op));
  double range[2] = {lo, hi};
  TU_OK(stk_op_set_floats(op, "range", range, 2));
  if (len > 0) TU_OK(stk_op_set_ints(op, "shape", &len, 1));
  TU_OK(stk_op_add_output(op, out));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

static void set_outputs1(stk_pipeline *p, const char *name) {
  const char *outs[] = {name};
  TU_OK(stk_pipeline_set_outputs(p, outs, 1));
}

/* Runs `batches` batches and concatenates output 0 (float32 samples of `len`). */
static float *collect(stk_pipeline *p, int batches, int batch_size, int len) {
  float *all = calloc((size_t)batches * batch_size * len, sizeof(float));
  for (int b = 0; b < batches; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    stk_tensor_list *tl = stk_batch_output(out, 0);
    assert_int_equal(stk_tensor_list_num_samples(tl), batch_size);
    assert_int_equal(stk_tensor_list_dtype(tl), STK_DTYPE_FLOAT32);
    for (int i = 0; i < batch_size; i++) {
      stk_tensor_desc d;
      TU_OK(stk_tensor_list_sample(tl, (size_t)i, &d));
      memcpy(&all[((size_t)b * batch_size + i) * len], d.data, sizeof(float) * len);
    }
    stk_batch_release(out);
  }
  return all;
}

static float *run_uniform(int batch, int threads, int prefetch, int64_t seed, int total) {
  stk_pipeline *p = make_pipe(batch, threads, prefetch, seed);
  add_uniform(p, "u", 2.0, 5.0, 3);
  set_outputs1(p, "u");
  TU_OK(stk_pipeline_build(p));
  float *v = collect(p, total / batch, batch, 3);
  stk_pipeline_destroy(p);
  return v;
}

/* ---- tests ---- */

static void test_uniform_values_and_dense_output(void **state) {
  stk_pipeline *p = make_pipe(8, 2, 2, 7);
  add_uniform(p, "u", 2.0, 5.0, 3);
  set_outputs1(p, "u");
  TU_OK(stk_pipeline_build(p));
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  assert_int_equal(stk_batch_num_outputs(out), 1);
  stk_tensor_list *tl = stk_batch_output(out, 0);
  assert_int_equal(stk_tensor_list_ndim(tl), 1);
  assert_true(stk_tensor_list_is_dense(tl)); /* fixed shape: one dense block */
  const float *v = stk_tensor_list_data(tl);
  double sum = 0;
  for (int i = 0; i < 24; i++) {
    assert_true(v[i] >= 2.0f && v[i] < 5.0f);
    sum += v[i];
  }
  assert_true(fabs(sum / 24 - 3.5) < 0.6);
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(tl, 7, &d));
  assert_int_equal(d.shape[0], 3);
  assert_int_equal(d.strides[0], 4);
  assert_ptr_equal(d.data, v + 21);
  assert_int_equal(stk_tensor_list_sample(tl, 8, &d), STK_ERR_INVALID_ARGUMENT);
  stk_batch_release(out);
  stk_pipeline_destroy(p);
}

static void test_determinism_threads_prefetch_batch(void **state) {
  float *ref = run_uniform(4, 1, 1, 123, 48);
  float *threads = run_uniform(4, 2, 1, 123, 48);
  float *prefetch = run_uniform(4, 2, 3, 123, 48);
  float *batch = run_uniform(8, 2, 2, 123, 48);
  float *other_seed = run_uniform(4, 1, 1, 124, 48);
  size_t bytes = 48 * 3 * sizeof(float);
  assert_memory_equal(ref, threads, bytes);
  assert_memory_equal(ref, prefetch, bytes);
  assert_memory_equal(ref, batch, bytes);
  assert_memory_not_equal(ref, other_seed, bytes);
  free(ref), free(threads), free(prefetch), free(batch), free(other_seed);
}

static void test_sync_execution_matches_async(void **state) {
  float *async = run_uniform(4, 2, 2, 5, 16);
  stk_pipeline *p = make_pipe(4, 2, 2, 5);
  TU_OK(stk_pipeline_set(p, STK_PIPE_EXEC_ASYNC, 0));
  add_uniform(p, "u", 2.0, 5.0, 3);
  set_outputs1(p, "u");
  TU_OK(stk_pipeline_build(p));
  float *sync = collect(p, 4, 4, 3);
  assert_memory_equal(async, sync, 16 * 3 * sizeof(float));
  stk_pipeline_destroy(p);
  free(async), free(sync);
}

/* Per-sample argument input: shape fed by random.choice -> ragged outputs. */
static void test_per_sample_argument_and_ragged_output(void **state) {
  stk_pipeline *p = make_pipe(16, 2, 2, 3);
  stk_op *op;
  TU_OK(stk_op_create("random.choice", "cpu", &op));
  double a[] = {1, 2, 3, 4};
  TU_OK(stk_op_set_floats(op, "a", a, 4));
  TU_OK(stk_op_set_ints(op, "shape", (int64_t[]){1}, 1));
  TU_OK(stk_op_set_string(op, "dtype", "int64"));
  TU_OK(stk_op_add_output(op, "len"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("random.normal", "cpu", &op));
  TU_OK(stk_op_set_arg_input(op, "shape", "len"));
  TU_OK(stk_op_add_output(op, "x"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"x", "len"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  TU_OK(stk_pipeline_build(p));
  for (int b = 0; b < 3; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    stk_tensor_list *x = stk_batch_output(out, 0), *len = stk_batch_output(out, 1);
    bool varied = false;
    for (size_t i = 0; i < 16; i++) {
      stk_tensor_desc dx, dl;
      TU_OK(stk_tensor_list_sample(x, i, &dx));
      TU_OK(stk_tensor_list_sample(len, i, &dl));
      int64_t n = ((int64_t *)dl.data)[0];
      assert_true(n >= 1 && n <= 4);
      assert_int_equal(dx.shape[0], n);
      varied |= n != ((int64_t *)stk_tensor_list_data(len))[0];
    }
    assert_true(varied);
    assert_false(stk_tensor_list_is_dense(x));
    stk_batch_release(out);
  }
  stk_pipeline_destroy(p);
}

static void test_external_source_feed(void **state) {
  stk_pipeline *p = make_pipe(3, 2, 2, 1);
  stk_op *op;
  TU_OK(stk_op_create("external_source", "cpu", &op));
  TU_OK(stk_op_set_name(op, "src"));
  TU_OK(stk_op_set_string(op, "layout", "HW"));
  TU_OK(stk_op_add_output(op, "data"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  set_outputs1(p, "data");
  TU_OK(stk_pipeline_build(p));
  for (int b = 0; b < 4; b++) {
    int16_t vals[3][2][2];
    stk_tensor_desc d[3];
    for (int i = 0; i < 3; i++) {
      for (int k = 0; k < 4; k++) vals[i][k / 2][k % 2] = (int16_t)(b * 100 + i * 10 + k);
      d[i] = (stk_tensor_desc){
          .data = vals[i], .ndim = 2, .shape = {2, 2}, .strides = {4, 2}, .dtype = STK_DTYPE_INT16};
    }
    /* sample 2 fed transposed through strides */
    d[2].strides[0] = 2, d[2].strides[1] = 4;
    /* sample 1 fed with a row pitch of 3 elements (dense rows, strided outer axis) */
    int16_t padded[2][3] = {{vals[1][0][0], vals[1][0][1], -1}, {vals[1][1][0], vals[1][1][1], -1}};
    d[1].data = padded, d[1].strides[0] = 6;
    TU_OK(stk_pipeline_feed(p, "src", d, 3));
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    stk_tensor_list *tl = stk_batch_output(out, 0);
    assert_string_equal(stk_tensor_list_layout(tl), "HW");
    const int16_t *o = stk_tensor_list_data(tl);
    assert_non_null(o);
    assert_int_equal(o[0], b * 100);
    assert_int_equal(o[4 + 2], b * 100 + 12); /* row pitch */
    assert_int_equal(o[4 + 3], b * 100 + 13);
    assert_int_equal(o[8 + 1], b * 100 + 22); /* transposed */
    assert_int_equal(o[8 + 2], b * 100 + 21);
    stk_batch_release(out);
  }
  int16_t one = 7;
  stk_tensor_desc bad[4];
  for (int i = 0; i < 4; i++)
    bad[i] = (stk_tensor_desc){.data = &one, .ndim = 0, .dtype = STK_DTYPE_INT16};
  assert_int_equal(stk_pipeline_feed(p, "src", bad, 4),
                   STK_ERR_INVALID_ARGUMENT); /* more than a batch */
  assert_non_null(strstr(stk_last_error(), "must be 1 to the batch size (3)"));
  assert_int_equal(stk_pipeline_feed(p, "nope", bad, 1), STK_ERR_NOT_FOUND);
  TU_OK(stk_pipeline_feed(p, "src", bad, 2)); /* fewer: a batch of 2 */
  stk_batch *small;
  TU_OK(stk_pipeline_run(p, &small));
  assert_int_equal(stk_tensor_list_num_samples(stk_batch_output(small, 0)), 2);
  assert_int_equal(*(const int16_t *)stk_tensor_list_data(stk_batch_output(small, 0)), 7);
  stk_batch_release(small);
  TU_OK(stk_pipeline_feed_end(p, "src"));
  stk_batch *out;
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_STATE);
  assert_non_null(strstr(stk_last_error(), "exhausted"));
  stk_pipeline_destroy(p);
}

/* A host function: doubles its input; fails with a decode error on chosen ordinals. */
static stk_status doubler(void *user, stk_host_call *call) {
  const int *fail_every = user;
  stk_tensor_desc in;
  TU_OK(stk_host_call_input(call, 0, &in));
  if (*fail_every && stk_host_call_ordinal(call) % *fail_every == 1) {
    stk_host_call_fail(call, "planted failure");
    return STK_ERR_DECODE;
  }
  void *data;
  stk_status st = stk_host_call_output(call, 0, STK_DTYPE_FLOAT32, in.ndim, in.shape, "", &data);
  if (st != STK_OK) return st;
  for (int i = 0; i < in.shape[0]; i++) ((float *)data)[i] = 2 * ((const float *)in.data)[i];
  return STK_OK;
}

static stk_pipeline *host_pipe(int *fail_every, int on_error) {
  stk_pipeline *p = make_pipe(5, 2, 2, 9);
  TU_OK(stk_pipeline_set(p, STK_PIPE_ON_ERROR, on_error));
  add_uniform(p, "u", 0, 1, 2);
  stk_op *op;
  TU_OK(stk_op_create("python_function", "cpu", &op));
  TU_OK(stk_op_set_name(op, "double"));
  TU_OK(stk_op_add_input(op, "u"));
  TU_OK(stk_op_add_output(op, "d"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"u", "d"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  TU_OK(stk_pipeline_set_host_function(p, "double", doubler, fail_every, NULL));
  TU_OK(stk_pipeline_build(p));
  return p;
}

static void test_host_function(void **state) {
  int never = 0;
  stk_pipeline *p = host_pipe(&never, STK_ON_ERROR_FAIL);
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  const float *u = stk_tensor_list_data(stk_batch_output(out, 0));
  const float *d = stk_tensor_list_data(stk_batch_output(out, 1));
  for (int i = 0; i < 10; i++) assert_float_equal(d[i], 2 * u[i], 0);
  stk_batch_release(out);
  stk_pipeline_destroy(p);
}

/* batch_processing=true: one call per batch, reading every sample; output i = u[i] + i. */
typedef struct {
  int calls, bad_sizes, misuse_refused;
} batch_log;

static stk_status batch_adder(void *user, stk_host_call *call) {
  batch_log *log = user;
  size_t n = stk_host_call_batch_size(call);
  log->calls++;
  if (n != 5 || stk_host_call_device(call) != -1 || stk_host_call_stream(call) != 0)
    log->bad_sizes++;
  stk_tensor_desc in;
  void *data;
  /* out of range samples and device-only entries are refused on a host batch call */
  if (stk_host_call_sample_input(call, n, 0, &in) == STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_input_list(call, 0) == NULL &&
      stk_host_call_set_device_output(call, 0, &in, 1, "") == STK_ERR_STATE &&
      /* an output index past the last, also one a cast to int would wrap to 0 */
      stk_host_call_sample_output(call, 0, 1, STK_DTYPE_FLOAT32, 0, NULL, "", &data) ==
          STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_sample_output(call, 0, (size_t)1 << 32, STK_DTYPE_FLOAT32, 0, NULL, "",
                                  &data) == STK_ERR_INVALID_ARGUMENT &&
      /* NULL pointers are refused, not dereferenced */
      stk_host_call_sample_input(call, 0, 0, NULL) == STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_sample_input(NULL, 0, 0, &in) == STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_sample_output(call, 0, 0, STK_DTYPE_FLOAT32, 1, NULL, "", &data) ==
          STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_sample_output(call, 0, 0, STK_DTYPE_FLOAT32, 0, NULL, "", NULL) ==
          STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_sample_output(NULL, 0, 0, STK_DTYPE_FLOAT32, 0, NULL, "", &data) ==
          STK_ERR_INVALID_ARGUMENT &&
      stk_host_call_set_device_output(NULL, 0, &in, 1, "") == STK_ERR_INVALID_ARGUMENT)
    log->misuse_refused++;
  for (size_t i = 0; i < n; i++) {
    TU_OK(stk_host_call_sample_input(call, i, 0, &in));
    TU_OK(stk_host_call_sample_output(call, i, 0, STK_DTYPE_FLOAT32, in.ndim, in.shape, "", &data));
    for (int k = 0; k < in.shape[0]; k++)
      ((float *)data)[k] = ((const float *)in.data)[k] + (float)i;
  }
  return STK_OK;
}

static void test_host_function_per_batch(void **state) {
  batch_log log = {0};
  stk_pipeline *p = make_pipe(5, 2, 1, 9);
  add_uniform(p, "u", 0, 1, 2);
  stk_op *op;
  TU_OK(stk_op_create("python_function", "cpu", &op));
  TU_OK(stk_op_set_name(op, "adder"));
  TU_OK(stk_op_set_bool(op, "batch_processing", 1));
  TU_OK(stk_op_add_input(op, "u"));
  TU_OK(stk_op_add_output(op, "d"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"u", "d"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  TU_OK(stk_pipeline_set_host_function(p, "adder", batch_adder, &log, NULL));
  TU_OK(stk_pipeline_build(p));
  for (int b = 0; b < 3; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    const float *u = stk_tensor_list_data(stk_batch_output(out, 0));
    const float *d = stk_tensor_list_data(stk_batch_output(out, 1));
    for (int i = 0; i < 10; i++) assert_float_equal(d[i], u[i] + (float)(i / 2), 0);
    stk_batch_release(out);
  }
  stk_pipeline_destroy(p);
  assert_true(log.calls >= 3 && log.calls <= 4); /* per batch (one may run ahead) */
  assert_int_equal(log.bad_sizes, 0);
  assert_int_equal(log.misuse_refused, log.calls);
}

/* A host function still running when the pipeline is destroyed, past timeout_ms: the
 * destroy gives up on the producer (it is inside the CPU stage, on the thread pool) and
 * keeps the pipeline for it; the producer must then finish its batch on a pool that is
 * still there, and later calls of the function see nothing freed. */
static atomic_int slow_calls, slow_done;

static stk_status slow_after_first_batch(void *user, stk_host_call *call) {
  (void)user;
  if (atomic_fetch_add(&slow_calls, 1) >= 4) {
    struct timespec ts = {0, 250 * 1000000L};
    nanosleep(&ts, NULL);
  }
  stk_tensor_desc in;
  void *data;
  stk_status st = stk_host_call_input(call, 0, &in);
  if (st == STK_OK)
    st = stk_host_call_output(call, 0, STK_DTYPE_FLOAT32, in.ndim, in.shape, "", &data);
  if (st == STK_OK) memcpy(data, in.data, sizeof(float) * (size_t)in.shape[0]);
  atomic_fetch_add(&slow_done, 1);
  return st;
}

static void test_destroy_while_a_host_function_outlives_timeout(void **state) {
  (void)state;
  atomic_store(&slow_calls, 0);
  atomic_store(&slow_done, 0);
  stk_pipeline *p = make_pipe(4, 1, 1, 9);
  TU_OK(stk_pipeline_set(p, STK_PIPE_TIMEOUT_MS, 200));
  add_uniform(p, "u", 0, 1, 2);
  stk_op *op;
  TU_OK(stk_op_create("python_function", "cpu", &op));
  TU_OK(stk_op_set_name(op, "slow"));
  TU_OK(stk_op_add_input(op, "u"));
  TU_OK(stk_op_add_output(op, "d"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  set_outputs1(p, "d");
  TU_OK(stk_pipeline_set_host_function(p, "slow", slow_after_first_batch, NULL, NULL));
  TU_OK(stk_pipeline_build(p));
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  stk_batch_release(out);
  struct timespec ts = {0, 50 * 1000000L}; /* the producer is inside the slow batch */
  nanosleep(&ts, NULL);
  stk_pipeline_destroy(p); /* gives up after 200 ms */
  ts.tv_sec = 1;
  ts.tv_nsec = 500 * 1000000L; /* the abandoned producer finishes its batch */
  nanosleep(&ts, NULL);
  assert_true(atomic_load(&slow_calls) >= 5);
  assert_int_equal(atomic_load(&slow_done), atomic_load(&slow_calls));
}

static void test_bad_sample_fails_by_default_naming_it(void **state) {
  int every = 4;
  stk_pipeline *p = host_pipe(&every, STK_ON_ERROR_FAIL);
  stk_batch *out;
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_DECODE);
  const char *msg = stk_last_error();
  assert_non_null(strstr(msg, "operator 'double', sample 1"));
  assert_non_null(strstr(msg, "planted failure"));
  /* the pipeline stays failed */
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_DECODE);
  assert_non_null(strstr(stk_last_error(), "earlier error"));
  stk_pipeline_destroy(p);
}

static void test_skip_policy_keeps_batches_full(void **state) {
  int every = 4;
  stk_pipeline *p = host_pipe(&every, STK_ON_ERROR_SKIP);
  for (int b = 0; b < 6; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    const float *u = stk_tensor_list_data(stk_batch_output(out, 0));
    const float *d = stk_tensor_list_data(stk_batch_output(out, 1));
    assert_int_equal(stk_tensor_list_num_samples(stk_batch_output(out, 1)), 5);
    for (int i = 0; i < 10; i++) assert_float_equal(d[i], 2 * u[i], 0);
    stk_batch_release(out);
  }
  stk_stats stats = {.struct_size = sizeof stats};
  TU_OK(stk_pipeline_stats(p, &stats));
  assert_int_equal(stats.batches, 6);
  /* ordinals 1, 5, 9, ... fail: about a quarter of all attempts */
  assert_true(stats.skipped >= 8 && stats.skipped <= 12);
  stk_pipeline_destroy(p);
}

static void expect_build_error(stk_pipeline *p, stk_status want, const char *fragment) {
  stk_status st = stk_pipeline_build(p);
  if (st != want || !strstr(stk_last_error(), fragment))
    fail_msg("expected %s with '%s', got %s: %s", stk_status_name(want), fragment,
             stk_status_name(st), stk_last_error());
  stk_pipeline_destroy(p);
}

static void test_argument_and_graph_errors(void **state) {
  stk_op *op;
  assert_int_equal(stk_op_create("no.such.op", "cpu", &op), STK_ERR_NOT_FOUND);
  assert_non_null(strstr(stk_last_error(), "no.such.op"));
  assert_int_equal(stk_op_create("random.uniform", "tpu", &op), STK_ERR_INVALID_ARGUMENT);
  TU_OK(stk_op_create("random.coin_flip", "cpu", &op));
  assert_int_equal(stk_op_set_float(op, "probabilty", 0.5), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "'probabilty'"));
  assert_int_equal(stk_op_set_float(op, "probability", 1.5), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "out of range"));
  assert_int_equal(stk_op_set_string(op, "probability", "x"), STK_ERR_INVALID_ARGUMENT);
  assert_int_equal(stk_op_set_string(op, "dtype", "complex"), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "not one of"));
  assert_int_equal(stk_op_set_arg_input(op, "dtype", "x"), STK_ERR_INVALID_ARGUMENT);
  TU_OK(stk_op_add_input(op, "x")); /* shape_like, its only input */
  assert_int_equal(stk_op_add_input(op, "y"), STK_ERR_INVALID_ARGUMENT);
  stk_op_destroy(op);

  stk_pipeline *p = make_pipe(2, 1, 1, 1);
  expect_build_error(p, STK_ERR_INVALID_ARGUMENT, "no operators");

  p = make_pipe(2, 1, 1, 1);
  add_uniform(p, "u", 0, 1, 0);
  set_outputs1(p, "missing");
  expect_build_error(p, STK_ERR_NOT_FOUND, "output 'missing'");

  p = make_pipe(2, 1, 1, 1);
  add_uniform(p, "u", 0, 1, 0);
  add_uniform(p, "u", 0, 1, 0);
  set_outputs1(p, "u");
  expect_build_error(p, STK_ERR_INVALID_ARGUMENT, "produced twice");

  p = make_pipe(2, 1, 1, 1);
  TU_OK(stk_op_create("python_function", "cpu", &op));
  TU_OK(stk_op_add_input(op, "b"));
  TU_OK(stk_op_add_output(op, "a"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("python_function", "cpu", &op));
  TU_OK(stk_op_add_input(op, "a"));
  TU_OK(stk_op_add_output(op, "b"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  set_outputs1(p, "a");
  expect_build_error(p, STK_ERR_INVALID_ARGUMENT, "cycle");

  p = make_pipe(2, 1, 1, 1);
  TU_OK(stk_op_create("random.choice", "cpu", &op));
  TU_OK(stk_op_add_output(op, "c"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  set_outputs1(p, "c");
  expect_build_error(p, STK_ERR_INVALID_ARGUMENT, "'a' is required");

  p = make_pipe(2, 1, 1, 1);
  TU_OK(stk_op_create("random.normal", "cpu", &op));
  TU_OK(stk_op_set_arg_input(op, "mean", "nowhere"));
  TU_OK(stk_op_add_output(op, "n"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  set_outputs1(p, "n");
  expect_build_error(p, STK_ERR_NOT_FOUND, "'nowhere'");

  assert_int_equal(stk_pipeline_create(&p), STK_OK);
  assert_int_equal(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, 0), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "batch_size"));
  stk_batch *out;
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_STATE);
  stk_pipeline_destroy(p);
  stk_pipeline_destroy(NULL);
}

static const char *TEXT =
    "# a test pipeline\n"
    "batch_size = 4\n"
    "num_threads = 2\n"
    "seed = 77\n"
    "n = random.choice(a=[1, 2, 3], p=[0.25, 0.25, 0.5], dtype=\"int32\", name=\"pick "
    "\\\"one\\\"\")\n"
    "x = random.normal(mean=n, stddev=0.5, shape=[2])  # per-sample mean\n"
    "return x, n\n";

static void test_text_form_round_trip(void **state) {
  stk_pipeline *a, *b;
  TU_OK(stk_pipeline_from_text(TEXT, &a));
  char *ta, *tb;
  TU_OK(stk_pipeline_to_text(a, &ta));
  TU_OK(stk_pipeline_from_text(ta, &b));
  TU_OK(stk_pipeline_to_text(b, &tb));
  assert_string_equal(ta, tb);
  assert_non_null(strstr(ta, "mean=n"));
  assert_non_null(strstr(ta, "name=\"pick \\\"one\\\"\""));
  TU_OK(stk_pipeline_build(a));
  TU_OK(stk_pipeline_build(b));
  float *va = collect(a, 3, 4, 2), *vb = collect(b, 3, 4, 2);
  assert_memory_equal(va, vb, 3 * 4 * 2 * sizeof(float));
  free(va), free(vb), stk_free(ta), stk_free(tb);
  stk_pipeline_destroy(a);
  stk_pipeline_destroy(b);

  /* true/false are literals, not edge names */
  stk_pipeline *lit;
  TU_OK(stk_pipeline_from_text("e = external_source(no_copy=true, blocking=false)\nreturn e\n",
                               &lit));
  char *tl;
  TU_OK(stk_pipeline_to_text(lit, &tl));
  assert_non_null(strstr(tl, "no_copy=true, blocking=false"));
  stk_free(tl);
  stk_pipeline_destroy(lit);

  stk_pipeline *bad;
  assert_int_equal(stk_pipeline_from_text("batch_size = 4\nx = random.normal(stdev=1)\n", &bad),
                   STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "line 2"));
  assert_non_null(strstr(stk_last_error(), "'stdev'"));
  assert_int_equal(stk_pipeline_from_text("x = random.normal(mean=[1\n", &bad), STK_ERR_PARSE);
  assert_non_null(strstr(stk_last_error(), "line 1"));
  assert_int_equal(stk_pipeline_from_text("colour = 3\n", &bad), STK_ERR_PARSE);
  assert_non_null(strstr(stk_last_error(), "unknown setting 'colour'"));
}

static void test_outputs_outlive_pipeline_and_memory_is_flat(void **state) {
  stk_pipeline *p = make_pipe(16, 2, 3, 1);
  add_uniform(p, "u", 0, 1, 1000);
  set_outputs1(p, "u");
  TU_OK(stk_pipeline_build(p));
  stk_stats s = {.struct_size = sizeof s};
  for (int b = 0; b < 300; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    stk_batch_release(out);
  }
  TU_OK(stk_pipeline_stats(p, &s));
  assert_int_equal(s.struct_size, sizeof s); /* kept */
  assert_int_equal(s.batches, 300);
  /* A caller that did not say its struct's size gets an error naming the field, and an
   * older, smaller struct is refused rather than overrun. */
  stk_stats unsized = {0};
  assert_int_equal(stk_pipeline_stats(p, &unsized), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "struct_size"));
  stk_decoder_diagnostics diag = {.struct_size = sizeof diag, .host_decode_quota = 99};
  TU_OK(stk_pipeline_decoder_diagnostics(p, &diag)); /* no GPU: zeros */
  assert_int_equal(diag.decode_hw_call_ns, 0);
  assert_int_equal(diag.host_decode_quota, 0);
  /* At most prefetch (3) queued + 1 being made + 1 held by us, each one 64 KiB block. */
  assert_true(s.host_bytes_peak <= 5 * 65536);
  assert_true(s.host_bytes_in_use <= 4 * 65536);
  stk_batch *kept;
  TU_OK(stk_pipeline_run(p, &kept));
  stk_tensor_list *tl = stk_batch_output(kept, 0);
  stk_tensor_list_retain(tl);
  stk_batch_release(kept);
  stk_pipeline_destroy(p);
  const float *v = stk_tensor_list_data(tl);
  for (int i = 0; i < 16000; i++) assert_true(v[i] >= 0 && v[i] < 1);
  stk_tensor_list_release(tl);
}

static void test_registry_introspection(void **state) {
  size_t n = stk_registry_count();
  assert_true(n >= 6);
  for (size_t i = 0; i < n; i++) {
    const stk_op_schema *s = stk_registry_get(i);
    assert_non_null(s->name);
    assert_true(strlen(s->doc) > 10);
    assert_ptr_equal(stk_registry_find(s->name), s);
    /* every GPU operator carries its parity check (tests/python/registry_parity.py),
     * except the transfer and the branch merge, tested on their own, the host
     * functions (python_function: no text form for a callable), the sources whose GPU
     * form is the host's work uploaded (test_random_gpu.py), and the video decoders and
     * readers (the harness feeds photos: test_video_gpu.py) */
    bool gpu = s->devices & (STK_DEVICE_GPU | STK_DEVICE_MIXED);
    const char *name = strrchr(s->name, '.') ? strrchr(s->name, '.') + 1 : s->name;
    bool exempt = strcmp(s->name, "copy") == 0 || strcmp(s->name, "select") == 0 ||
                  /* the text form cannot name a host function: test_python_function_gpu_fake.py */
                  strstr(s->name, "python_function") != NULL ||
                  ((s->flags & STK_OPF_GPU_ON_HOST) && (s->flags & STK_OPF_NO_INPUT)) ||
                  strcmp(name, "video") == 0 || strcmp(name, "video_resize") == 0;
    if (gpu && !exempt && !s->gpu_check) fail_msg("%s has a GPU backend but no gpu_check", s->name);
    if (!gpu && s->gpu_check) fail_msg("%s has a gpu_check but no GPU backend", s->name);
    for (int a = 0; a < s->num_args; a++) {
      assert_non_null(s->args[a].name);
      assert_non_null(s->args[a].doc);
    }
  }
  const stk_op_schema *u = stk_registry_find("random.uniform");
  assert_non_null(u);
  assert_string_equal(u->args[0].name, "range");
  assert_int_equal(u->args[0].type, STK_ARG_FLOATS);
  assert_true(u->args[0].flags & STK_ARGF_PER_SAMPLE);
  assert_null(stk_registry_get(n));
  assert_null(stk_registry_find("nope"));
}

/* Batch operators: the CPU stage splits at them (graph.c plan_passes). Output sample i of
 * permute_batch is input sample idx[i]; a per-sample operator after the barrier (cast)
 * sees the permuted values; the same bytes for any thread count, async or not. */
static const char *BATCH_TEXT =
    "batch_size = 6\n"
    "seed = 9\n"
    "u = random.uniform(range=[0.0, 1.0], shape=[4])\n"
    "idx = batch_permutation(no_fixed_points=true)\n"
    "p = permute_batch(u, indices=idx)\n"
    "c = cast(p, dtype=\"float64\")\n"
    "return u, idx, p, c\n";

static void run_batch_text(int threads, int async, int batches, char *bytes, size_t cap) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(BATCH_TEXT, &p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, threads));
  TU_OK(stk_pipeline_set(p, STK_PIPE_EXEC_ASYNC, async));
  TU_OK(stk_pipeline_build(p));
  size_t at = 0;
  for (int b = 0; b < batches; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    const float *u = stk_tensor_list_data(stk_batch_output(out, 0));
    const int32_t *idx = stk_tensor_list_data(stk_batch_output(out, 1));
    const float *perm = stk_tensor_list_data(stk_batch_output(out, 2));
    const double *cast = stk_tensor_list_data(stk_batch_output(out, 3));
    assert_non_null(u), assert_non_null(idx), assert_non_null(perm), assert_non_null(cast);
    int seen = 0;
    for (int i = 0; i < 6; i++) {
      assert_true(idx[i] >= 0 && idx[i] < 6 && idx[i] != i);
      seen |= 1 << idx[i];
      for (int k = 0; k < 4; k++) {
        assert_true(perm[i * 4 + k] == u[idx[i] * 4 + k]);
        assert_true(cast[i * 4 + k] == (double)perm[i * 4 + k]);
      }
    }
    assert_int_equal(seen, 63); /* a permutation */
    assert_true(at + 6 * 4 * 4 + 6 * 4 <= cap);
    memcpy(bytes + at, perm, 6 * 4 * sizeof(float)), at += 6 * 4 * sizeof(float);
    memcpy(bytes + at, idx, 6 * sizeof(int32_t)), at += 6 * sizeof(int32_t);
    stk_batch_release(out);
  }
  stk_pipeline_destroy(p);
}

static void test_batch_operators_split_the_cpu_stage(void **state) {
  enum { BATCHES = 5, CAP = BATCHES * (6 * 4 * 4 + 6 * 4) };
  char one[CAP], three[CAP], sync[CAP];
  run_batch_text(1, 1, BATCHES, one, CAP);
  run_batch_text(3, 1, BATCHES, three, CAP);
  run_batch_text(3, 0, BATCHES, sync, CAP);
  assert_memory_equal(one, three, CAP);
  assert_memory_equal(one, sync, CAP);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uniform_values_and_dense_output),
      cmocka_unit_test(test_determinism_threads_prefetch_batch),
      cmocka_unit_test(test_sync_execution_matches_async),
      cmocka_unit_test(test_per_sample_argument_and_ragged_output),
      cmocka_unit_test(test_external_source_feed),
      cmocka_unit_test(test_host_function),
      cmocka_unit_test(test_host_function_per_batch),
      cmocka_unit_test(test_destroy_while_a_host_function_outlives_timeout),
      cmocka_unit_test(test_bad_sample_fails_by_default_naming_it),
      cmocka_unit_test(test_skip_policy_keeps_batches_full),
      cmocka_unit_test(test_argument_and_graph_errors),
      cmocka_unit_test(test_text_form_round_trip),
      cmocka_unit_test(test_outputs_outlive_pipeline_and_memory_is_flat),
      cmocka_unit_test(test_registry_introspection),
      cmocka_unit_test(test_batch_operators_split_the_cpu_stage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
