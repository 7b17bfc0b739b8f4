/* The "constant" operator: values, dtype conversion (rounding, saturation), broadcast of
 * one value, scalar shape, layout, bad arguments; and a constant merged with a data node
 * by "select" (what a literal in one branch of a Python `if` becomes). */
#include <math.h>
#include <string.h>

#include "testutil.h"

/* Builds the pipeline of `text` and runs one batch; returns the status of build+run. */
static stk_status run_text(const char *text, stk_pipeline **p, stk_batch **out) {
  *out = NULL;
  stk_status st = stk_pipeline_from_text(text, p);
  if (st != STK_OK) return st;
  st = stk_pipeline_build(*p);
  if (st == STK_OK) st = stk_pipeline_run(*p, out);
  return st;
}

static void test_values_shapes_and_types(void **state) {
  (void)state;
  stk_pipeline *p;
  stk_batch *b;
  TU_OK(run_text(
      "batch_size = 3\n"
      "a = constant(fdata=[1.5, -2.5, 300.0, -7.0], shape=[2, 2], dtype=\"uint8\", layout=\"HW\")\n"
      "f = constant(fdata=[0.25, 2.0])\n"
      "i = constant(idata=[7], shape=[2, 3], dtype=\"int16\")\n"
      "s = constant(idata=[1], shape=[], dtype=\"bool\")\n"
      "big = constant(idata=[9007199254740993], shape=[], dtype=\"int64\")\n"
      "return a, f, i, s, big\n",
      &p, &b));
  for (int k = 0; k < 3; k++) {
    /* float -> uint8: half away from zero, saturated */
    stk_tensor_desc d;
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 0), (size_t)k, &d));
    assert_int_equal(d.dtype, STK_DTYPE_UINT8);
    assert_int_equal(d.ndim, 2);
    assert_int_equal(d.shape[0], 2);
    assert_int_equal(d.shape[1], 2);
    assert_string_equal(d.layout, "HW");
    const uint8_t *a = d.data;
    assert_int_equal(a[0], 2);
    assert_int_equal(a[1], 0);
    assert_int_equal(a[2], 255);
    assert_int_equal(a[3], 0);
    /* fdata without dtype/shape: float32 1D */
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 1), (size_t)k, &d));
    assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
    assert_int_equal(d.ndim, 1);
    assert_int_equal(d.shape[0], 2);
    assert_float_equal(((const float *)d.data)[0], 0.25, 0);
    assert_float_equal(((const float *)d.data)[1], 2.0, 0);
    /* one value fills the shape */
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 2), (size_t)k, &d));
    assert_int_equal(d.dtype, STK_DTYPE_INT16);
    for (int e = 0; e < 6; e++) assert_int_equal(((const int16_t *)d.data)[e], 7);
    /* scalar bool */
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 3), (size_t)k, &d));
    assert_int_equal(d.dtype, STK_DTYPE_BOOL);
    assert_int_equal(d.ndim, 0);
    assert_int_equal(*(const uint8_t *)d.data, 1);
    /* int64 beyond 2^53 stays exact */
    TU_OK(stk_tensor_list_sample(stk_batch_output(b, 4), (size_t)k, &d));
    assert_true(*(const int64_t *)d.data == 9007199254740993LL);
  }
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

static void test_constant_in_a_branch(void **state) {
  (void)state;
  stk_pipeline *p;
  stk_batch *b;
  /* x = 0.5 if c else uniform in [10, 11) */
  TU_OK(
      run_text("batch_size = 16\nseed = 4\n"
               "c = random.coin_flip(dtype=\"bool\")\n"
               "k = constant(fdata=[0.5], shape=[]) if c == 1\n"
               "u = random.uniform(range=[10.0, 11.0]) if c == 0\n"
               "x = select(c, u, k)\n"
               "return x, c\n",
               &p, &b));
  const float *x = stk_tensor_list_data(stk_batch_output(b, 0));
  const uint8_t *c = stk_tensor_list_data(stk_batch_output(b, 1));
  int trues = 0;
  for (int i = 0; i < 16; i++) {
    if (c[i])
      assert_float_equal(x[i], 0.5, 0);
    else
      assert_true(x[i] >= 10 && x[i] < 11);
    trues += c[i];
  }
  assert_true(trues > 0 && trues < 16);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

static void test_bad_arguments(void **state) {
  (void)state;
  static const struct {
    const char *text, *needle;
  } cases[] = {
      {"k = constant(shape=[2])\nreturn k\n", "exactly one of fdata and idata"},
      {"k = constant(fdata=[1.0], idata=[1])\nreturn k\n", "exactly one of fdata and idata"},
      {"k = constant(fdata=[1.0, 2.0, 3.0], shape=[2, 2])\nreturn k\n", "do not fill the shape"},
      {"k = constant(idata=[1], shape=[-1])\nreturn k\n", "shape[0]"},
      {"k = constant(fdata=[], shape=[])\nreturn k\n", "fdata is empty"},
      {"k = constant(idata=[1], dtype=\"complex\")\nreturn k\n", "dtype"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    stk_pipeline *p = NULL;
    stk_batch *b = NULL;
    stk_status st = run_text(cases[i].text, &p, &b);
    assert_int_not_equal(st, STK_OK);
    if (!strstr(stk_last_error(), cases[i].needle))
      fail_msg("case %zu: '%s' lacks '%s'", i, stk_last_error(), cases[i].needle);
    stk_batch_release(b);
    stk_pipeline_destroy(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values_shapes_and_types),
      cmocka_unit_test(test_constant_in_a_branch),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
