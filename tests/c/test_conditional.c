/* Per-sample conditional execution: guards (split without copies), select (merge in the
 * original order), n-way selection, nesting, error cases, the text form. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "pipeline/internal.h"

#define N 16

/* A host function adding a constant to a float32 [1] input; counts its calls. */
typedef struct {
  float add;
  atomic_int calls;
  stk_dtype out_dtype;
} adder;

static stk_status add_fn(void *user, stk_host_call *call) {
  adder *a = user;
  atomic_fetch_add(&a->calls, 1);
  stk_tensor_desc in;
  stk_status st = stk_host_call_input(call, 0, &in);
  if (st != STK_OK) return st;
  void *out;
  st = stk_host_call_output(call, 0, a->out_dtype, 1, (int64_t[]){1}, "", &out);
  if (st != STK_OK) return st;
  float v = ((const float *)in.data)[0] + a->add;
  if (a->out_dtype == STK_DTYPE_FLOAT32)
    *(float *)out = v;
  else
    *(double *)out = v;
  return STK_OK;
}

static void add_op(stk_pipeline *p, const char *schema, const char *name, const char *const *inputs,
                   int n_in, const char *out, const char *guard, int64_t gval, const char *guard2,
                   int64_t gval2) {
  stk_op *op;
  TU_OK(stk_op_create(schema, "cpu", &op));
  if (name) TU_OK(stk_op_set_name(op, name));
  for (int i = 0; i < n_in; i++) TU_OK(stk_op_add_input(op, inputs[i]));
  TU_OK(stk_op_add_output(op, out));
  if (guard) TU_OK(stk_op_add_guard(op, guard, gval));
  if (guard2) TU_OK(stk_op_add_guard(op, guard2, gval2));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

/* x = external_source (values = 1000 * batch + i); pred from a random source */
static stk_pipeline *base(const char *pred_op, const char *pred_arg_a) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, N));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, 2));
  TU_OK(stk_pipeline_set(p, STK_PIPE_SEED, 3));
  add_op(p, "external_source", "src", NULL, 0, "x", NULL, 0, NULL, 0);
  stk_op *op;
  TU_OK(stk_op_create(pred_op, "cpu", &op));
  if (pred_arg_a) {
    double a = 3;
    TU_OK(stk_op_set_floats(op, pred_arg_a, &a, 1));
  } else {
    TU_OK(stk_op_set_string(op, "dtype", "bool"));
  }
  TU_OK(stk_op_add_output(op, "pred"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  return p;
}

static void feed(stk_pipeline *p, int b) {
  float vals[N];
  stk_tensor_desc d[N];
  for (int i = 0; i < N; i++) {
    vals[i] = (float)(1000 * b + i);
    d[i] = (stk_tensor_desc){
        .data = &vals[i], .ndim = 1, .shape = {1}, .strides = {4}, .dtype = STK_DTYPE_FLOAT32};
  }
  TU_OK(stk_pipeline_feed(p, "src", d, N));
}

static void test_if_else_each_sample_gets_its_branch(void **state) {
  adder yes = {.add = 100, .out_dtype = STK_DTYPE_FLOAT32},
        no = {.add = -100, .out_dtype = STK_DTYPE_FLOAT32};
  stk_pipeline *p = base("random.coin_flip", NULL);
  const char *in_x[] = {"x"};
  add_op(p, "python_function", "then", in_x, 1, "y_then", "pred", 1, NULL, 0);
  add_op(p, "python_function", "else", in_x, 1, "y_else", "pred", 0, NULL, 0);
  const char *sel_in[] = {"pred", "y_else", "y_then"};
  add_op(p, "select", "y", sel_in, 3, "y", NULL, 0, NULL, 0);
  const char *outs[] = {"y", "pred", "x"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 3));
  TU_OK(stk_pipeline_set_host_function(p, "then", add_fn, &yes, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "else", add_fn, &no, NULL));
  TU_OK(stk_pipeline_build(p));
  int trues = 0;
  for (int b = 0; b < 5; b++) {
    feed(p, b);
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    const float *y = stk_tensor_list_data(stk_batch_output(out, 0));
    const uint8_t *pred = stk_tensor_list_data(stk_batch_output(out, 1));
    const float *x = stk_tensor_list_data(stk_batch_output(out, 2));
    for (int i = 0; i < N; i++) {
      assert_float_equal(x[i], 1000 * b + i, 0); /* order preserved */
      assert_float_equal(y[i], x[i] + (pred[i] ? 100 : -100), 0);
      trues += pred[i];
    }
    stk_batch_release(out);
  }
  assert_true(trues > 15 && trues < 65); /* a fair coin over 80 samples */
  /* each branch ran exactly for its samples */
  assert_int_equal(atomic_load(&yes.calls), trues);
  assert_int_equal(atomic_load(&no.calls), 5 * N - trues);
  stk_pipeline_destroy(p);
}

static void test_three_way_switch_and_nesting(void **state) {
  adder b0 = {.add = 10, .out_dtype = STK_DTYPE_FLOAT32},
        b1 = {.add = 20, .out_dtype = STK_DTYPE_FLOAT32},
        b2a = {.add = 30, .out_dtype = STK_DTYPE_FLOAT32},
        b2b = {.add = 40, .out_dtype = STK_DTYPE_FLOAT32};
  stk_pipeline *p = base("random.choice", "a"); /* pred in {0, 1, 2} */
  stk_op *op;
  TU_OK(stk_op_create("random.coin_flip", "cpu", &op));
  TU_OK(stk_op_set_string(op, "dtype", "bool"));
  TU_OK(stk_op_add_output(op, "inner"));
  TU_OK(stk_op_add_guard(op, "pred", 2)); /* the inner predicate exists only in branch 2 */
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *in_x[] = {"x"};
  add_op(p, "python_function", "f0", in_x, 1, "v0", "pred", 0, NULL, 0);
  add_op(p, "python_function", "f1", in_x, 1, "v1", "pred", 1, NULL, 0);
  add_op(p, "python_function", "f2a", in_x, 1, "v2a", "pred", 2, "inner", 1);
  add_op(p, "python_function", "f2b", in_x, 1, "v2b", "pred", 2, "inner", 0);
  const char *inner_in[] = {"inner", "v2b", "v2a"};
  add_op(p, "select", "v2", inner_in, 3, "v2", "pred", 2, NULL, 0);
  const char *sel_in[] = {"pred", "v0", "v1", "v2"};
  add_op(p, "select", "v", sel_in, 4, "v", NULL, 0, NULL, 0);
  const char *outs[] = {"v", "pred", "x"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 3));
  TU_OK(stk_pipeline_set_host_function(p, "f0", add_fn, &b0, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "f1", add_fn, &b1, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "f2a", add_fn, &b2a, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "f2b", add_fn, &b2b, NULL));
  TU_OK(stk_pipeline_build(p));
  int seen[4] = {0};
  for (int b = 0; b < 6; b++) {
    feed(p, b);
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    const float *v = stk_tensor_list_data(stk_batch_output(out, 0));
    const int32_t *k = stk_tensor_list_data(stk_batch_output(out, 1));
    const float *x = stk_tensor_list_data(stk_batch_output(out, 2));
    for (int i = 0; i < N; i++) {
      float d = v[i] - x[i];
      assert_true(k[i] >= 0 && k[i] <= 2);
      if (k[i] < 2)
        assert_float_equal(d, 10 + 10 * k[i], 0);
      else
        assert_true(d == 30 || d == 40);
      seen[k[i] < 2 ? k[i] : (d == 30 ? 2 : 3)]++;
    }
    stk_batch_release(out);
  }
  for (int c = 0; c < 4; c++) assert_true(seen[c] > 3); /* every path was taken */
  assert_int_equal(atomic_load(&b2a.calls) + atomic_load(&b2b.calls), seen[2] + seen[3]);
  stk_pipeline_destroy(p);
}

static stk_status build_and_run(stk_pipeline *p) {
  stk_status st = stk_pipeline_build(p);
  if (st != STK_OK) return st;
  feed(p, 0);
  stk_batch *out = NULL;
  st = stk_pipeline_run(p, &out);
  stk_batch_release(out);
  return st;
}

static void test_conditional_errors(void **state) {
  adder yes = {.add = 1, .out_dtype = STK_DTYPE_FLOAT32},
        dbl = {.add = 1, .out_dtype = STK_DTYPE_FLOAT64};
  const char *in_x[] = {"x"};
  /* a variable assigned in one branch only, then returned */
  stk_pipeline *p = base("random.coin_flip", NULL);
  add_op(p, "python_function", "then", in_x, 1, "y", "pred", 1, NULL, 0);
  const char *outs[] = {"y"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 1));
  TU_OK(stk_pipeline_set_host_function(p, "then", add_fn, &yes, NULL));
  assert_int_equal(build_and_run(p), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "output 'y' has no value"));
  stk_pipeline_destroy(p);

  /* ... or used by an unconditional operator */
  p = base("random.coin_flip", NULL);
  add_op(p, "python_function", "then", in_x, 1, "y", "pred", 1, NULL, 0);
  const char *in_y[] = {"y"};
  add_op(p, "python_function", "after", in_y, 1, "z", NULL, 0, NULL, 0);
  const char *outs_z[] = {"z"};
  TU_OK(stk_pipeline_set_outputs(p, outs_z, 1));
  TU_OK(stk_pipeline_set_host_function(p, "then", add_fn, &yes, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "after", add_fn, &yes, NULL));
  assert_int_equal(build_and_run(p), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "input 'y' has no value"));
  stk_pipeline_destroy(p);

  /* branches disagreeing in dtype: the error names the merged variable */
  p = base("random.coin_flip", NULL);
  add_op(p, "python_function", "then", in_x, 1, "a", "pred", 1, NULL, 0);
  add_op(p, "python_function", "else", in_x, 1, "b", "pred", 0, NULL, 0);
  const char *sel_in[] = {"pred", "b", "a"};
  add_op(p, "select", "image", sel_in, 3, "m", NULL, 0, NULL, 0);
  add_op(p, "python_function", "after", (const char *[]){"m"}, 1, "z", NULL, 0, NULL, 0);
  TU_OK(stk_pipeline_set_outputs(p, outs_z, 1));
  TU_OK(stk_pipeline_set_host_function(p, "then", add_fn, &yes, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "else", add_fn, &dbl, NULL));
  TU_OK(stk_pipeline_set_host_function(p, "after", add_fn, &yes, NULL));
  assert_int_not_equal(build_and_run(p), STK_OK);
  assert_non_null(strstr(stk_last_error(), "'image': the branches disagree"));
  stk_pipeline_destroy(p);

  /* a condition on an edge nobody produces */
  p = base("random.coin_flip", NULL);
  add_op(p, "python_function", "then", in_x, 1, "y", "nothing", 1, NULL, 0);
  TU_OK(stk_pipeline_set_outputs(p, outs, 1));
  TU_OK(stk_pipeline_set_host_function(p, "then", add_fn, &yes, NULL));
  assert_int_equal(stk_pipeline_build(p), STK_ERR_NOT_FOUND);
  assert_non_null(strstr(stk_last_error(), "condition 'nothing'"));
  stk_pipeline_destroy(p);
}

/* A host list of n samples of shape [k] whose values are base + sample index. */
static stk_tensor_list *small_list(size_t n, int base, stk_dtype dtype) {
  stk_tensor_list *tl;
  assert_int_equal(stk__tensor_list_create(&tl, n, 1, NULL), STK_OK);
  tl->dtype = dtype;
  snprintf(tl->layout, sizeof tl->layout, "X");
  tl->malloc_block = calloc(n, 4);
  for (size_t i = 0; i < n; i++) {
    tl->shapes[i] = 1;
    tl->data[i] = (char *)tl->malloc_block + 4 * i;
    ((uint8_t *)tl->data[i])[0] = (uint8_t)(base + (int)i);
  }
  return tl;
}

/* The views the GPU stage uses for branches and merges (tensor_list.c): samples alias their
 * sources, holes have no value, the sources stay alive, disagreeing branches are named. */
static void test_branch_views(void **state) {
  (void)state;
  stk_tensor_list *a = small_list(4, 10, STK_DTYPE_UINT8), *b = small_list(4, 20, STK_DTYPE_UINT8);
  /* a branch: samples 1 and 3 of a */
  stk_tensor_list *sub;
  int which_sub[2] = {0, 0};
  size_t idx_sub[2] = {1, 3};
  assert_int_equal(stk__tensor_list_view(&a, 1, which_sub, idx_sub, 2, "branch", &sub), STK_OK);
  assert_ptr_equal(sub->data[0], a->data[1]);
  assert_ptr_equal(sub->data[1], a->data[3]);
  assert_null(sub->dense);
  /* spread back with holes at 0 and 2 */
  stk_tensor_list *spread;
  int which_sp[4] = {-1, 0, -1, 0};
  size_t idx_sp[4] = {0, 0, 0, 1};
  assert_int_equal(stk__tensor_list_view(&sub, 1, which_sp, idx_sp, 4, "branch", &spread), STK_OK);
  assert_false(stk__tensor_list_has_sample(spread, 0));
  assert_true(stk__tensor_list_has_sample(spread, 1));
  assert_int_equal(((uint8_t *)spread->data[3])[0], 13);
  /* merge: sample i from spread where it has one, else from b */
  stk_tensor_list *srcs[2] = {b, spread}, *merged;
  int which_m[4] = {0, 1, 0, 1};
  size_t idx_m[4] = {0, 1, 2, 3};
  assert_int_equal(stk__tensor_list_view(srcs, 2, which_m, idx_m, 4, "merge", &merged), STK_OK);
  int want[4] = {20, 11, 22, 13};
  for (int i = 0; i < 4; i++) assert_int_equal(((uint8_t *)merged->data[i])[0], want[i]);
  /* taking a hole gives a hole (the select and the outputs check for them) */
  int which_bad[4] = {1, 1, 0, 0};
  stk_tensor_list *bad = NULL;
  assert_int_equal(stk__tensor_list_view(srcs, 2, which_bad, idx_m, 4, "merge", &bad), STK_OK);
  assert_false(stk__tensor_list_has_sample(bad, 0));
  assert_true(stk__tensor_list_has_sample(bad, 1));
  stk_tensor_list_release(bad);
  /* the sources live as long as the views: release them first */
  stk_tensor_list_release(a);
  stk_tensor_list_release(sub);
  stk_tensor_list_release(spread);
  assert_int_equal(((uint8_t *)merged->data[3])[0], 13);
  /* branches of different dtypes are refused, naming the merge */
  stk_tensor_list *f = small_list(4, 0, STK_DTYPE_INT8), *mixed[2] = {b, f}, *m2 = NULL;
  assert_int_equal(stk__tensor_list_view(mixed, 2, which_m, idx_m, 4, "picture", &m2),
                   STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "'picture': the branches disagree"));
  stk_tensor_list_release(f);
  stk_tensor_list_release(b);
  stk_tensor_list_release(merged);
}

static void test_text_form_conditions(void **state) {
  const char *text =
      "batch_size = 8\n"
      "k = random.choice(a=[3])\n"
      "c = random.coin_flip(dtype=\"bool\")\n"
      "u0 = random.uniform(range=[0.0, 1.0]) if k == 0\n"
      "u1 = random.uniform(range=[10.0, 11.0]) if k == 1 and c == 1\n"
      "u1b = random.uniform(range=[20.0, 21.0]) if k == 1 and c == 0\n"
      "m1 = select(c, u1b, u1) if k == 1\n"
      "u2 = random.uniform(range=[30.0, 31.0]) if k == 2\n"
      "v = select(k, u0, m1, u2)\n"
      "return v, k, c\n";
  stk_pipeline *p, *q;
  TU_OK(stk_pipeline_from_text(text, &p));
  char *t1, *t2;
  TU_OK(stk_pipeline_to_text(p, &t1));
  TU_OK(stk_pipeline_from_text(t1, &q));
  TU_OK(stk_pipeline_to_text(q, &t2));
  assert_string_equal(t1, t2);
  assert_non_null(strstr(t1, "if k == 1 and c == 1"));
  TU_OK(stk_pipeline_build(p));
  for (int b = 0; b < 4; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    const float *v = stk_tensor_list_data(stk_batch_output(out, 0));
    const int32_t *k = stk_tensor_list_data(stk_batch_output(out, 1));
    const uint8_t *c = stk_tensor_list_data(stk_batch_output(out, 2)); /* bool */
    for (int i = 0; i < 8; i++) {
      float lo = k[i] == 0 ? 0 : k[i] == 2 ? 30 : c[i] ? 10 : 20;
      assert_true(v[i] >= lo && v[i] < lo + 1);
    }
    stk_batch_release(out);
  }
  stk_free(t1), stk_free(t2);
  stk_pipeline_destroy(p);
  stk_pipeline_destroy(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_if_else_each_sample_gets_its_branch),
      cmocka_unit_test(test_three_way_switch_and_nesting),
      cmocka_unit_test(test_conditional_errors),
      cmocka_unit_test(test_text_form_conditions),
      cmocka_unit_test(test_branch_views),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
