/* The GPU plan of the math family, checked on the CPU: the kernels of src/cuda/math.cu do,
 * per output element, exactly stk_ar_operand_index + stk_ar_binary_elem (and
 * stk_ar_unary_elem, stk_ar_one_hot_elem) from math_common.h with the operands that
 * stk__binary_gpu_operand plans. This test runs those same functions over every element
 * on the host and compares the bytes with the CPU operators' results (stk__binary,
 * stk__unary, stk__clamp) for every operation, a spread of type pairs and every kind of
 * broadcast (dense, scalar, periodic, strided). What it cannot check is the launch
 * geometry (blocks per sample), which the GPU parity tests cover. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/arithmetic.h"
#include "core/core.h"
#include "ops/image_util.h"

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

/* n elements of type t with small values, zeros, negatives, extremes and NaN. */
static void *fill(stk_dtype t, size_t n, uint64_t seed) {
  size_t es = stk_dtype_size(t);
  char *p = malloc(n * es + 8);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = lcg(&seed);
    double v;
    switch (r % 8) {
      case 0:
        v = 0.0;
        break;
      case 1:
        v = -(double)(r % 300) / 7.0;
        break;
      case 2:
        v = 1e30;
        break;
      case 3:
        v = -1e30;
        break;
      case 4:
        v = stk_dtype_size(t) >= 4 && (t == STK_DTYPE_FLOAT32 || t == STK_DTYPE_FLOAT64) ? NAN
                                                                                         : 1.0;
        break;
      default:
        v = (double)(r % 1000) / 3.0;
        break;
    }
    stk__store_double(p, t, i, v);
  }
  return p;
}

static int64_t numel(int nd, const int64_t *s) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= s[d];
  return n;
}

static int modes_seen[4];

/* One binary case: the emulated kernel against stk__binary. Returns mismatches. */
static int check_binary(stk__binop op, stk_dtype ta, int nda, const int64_t *sa, stk_dtype tb,
                        int ndb, const int64_t *sb, uint64_t seed) {
  stk_dtype ot;
  if (!stk__binop_type(op, ta, tb, &ot)) return 0; /* refused on both backends */
  void *da = fill(ta, (size_t)numel(nda, sa), seed),
       *db = fill(tb, (size_t)numel(ndb, sb), seed * 7 + 1);
  stk__operand a = {da, ta, nda, sa}, b = {db, tb, ndb, sb};
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  assert_true(stk__broadcast_shape(&a, &b, &ndim, shape));
  size_t n = (size_t)numel(ndim, shape), es = stk_dtype_size(ot);
  char *cpu = calloc(n + 1, es), *gpu = calloc(n + 1, es);
  stk__binary(op, &a, &b, cpu, ot, ndim, shape);
  stk_gpu_math_operand ga, gb;
  stk__binary_gpu_operand(&a, ndim, shape, &ga);
  stk__binary_gpu_operand(&b, ndim, shape, &gb);
  int kind = stk__binary_kind(op, ta, tb, ot);
  modes_seen[ga.mode & 3]++, modes_seen[gb.mode & 3]++;
  for (int64_t e = 0; e < (int64_t)n; e++) {
    size_t ia = stk_ar_operand_index(ga.mode, ga.period, ga.stride, ndim, shape, (int64_t)n, e);
    size_t ib = stk_ar_operand_index(gb.mode, gb.period, gb.stride, ndim, shape, (int64_t)n, e);
    stk_ar_binary_elem(op, kind, da, ta, ia, db, tb, ib, gpu, ot, (size_t)e);
  }
  int bad = 0;
  for (size_t e = 0; e < n; e++)
    if (memcmp(cpu + e * es, gpu + e * es, es) != 0) {
      /* NaN payloads may differ only in sign/bits of NaN: compare as NaN */
      double x = 0, y = 0;
      stk__convert(&x, STK_DTYPE_FLOAT64, cpu + e * es, ot, 1);
      stk__convert(&y, STK_DTYPE_FLOAT64, gpu + e * es, ot, 1);
      if (isnan(x) && isnan(y)) continue;
      if (bad++ < 3)
        print_error("%s %s,%s (modes %d,%d) element %zu: cpu %g emulated %g\n", stk__binop_name(op),
                    stk_dtype_name(ta), stk_dtype_name(tb), ga.mode, gb.mode, e, x, y);
    }
  free(da), free(db), free(cpu), free(gpu);
  return bad;
}

static void test_binary_every_op_type_and_broadcast(void **state) {
  (void)state;
  static const stk_dtype pairs[][2] = {
      {STK_DTYPE_UINT8, STK_DTYPE_UINT8},     {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32},
      {STK_DTYPE_INT8, STK_DTYPE_UINT8},      {STK_DTYPE_INT16, STK_DTYPE_UINT32},
      {STK_DTYPE_UINT64, STK_DTYPE_INT32},    {STK_DTYPE_INT64, STK_DTYPE_INT64},
      {STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT64}, {STK_DTYPE_BOOL, STK_DTYPE_INT8},
      {STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16}, {STK_DTYPE_UINT16, STK_DTYPE_BOOL},
  };
  /* (a shape, b shape): dense, [C] periodic, scalar, strided on one or both sides */
  static const int64_t s453[] = {4, 5, 3}, s3[] = {3}, s1[] = {1}, s413[] = {4, 1, 3},
                       s51[] = {5, 1}, s13[] = {1, 3}, s2131[] = {2, 1, 3, 1}, s435[] = {4, 3, 5},
                       s153[] = {1, 5, 3};
  struct {
    int na;
    const int64_t *a;
    int nb;
    const int64_t *b;
  } shapes[] = {
      {3, s453, 3, s453},  {3, s453, 1, s3},   {1, s3, 3, s453}, {1, s1, 3, s453},
      {3, s453, 0, s1},    {3, s413, 3, s453}, {2, s51, 2, s13}, {4, s2131, 3, s435},
      {3, s435, 4, s2131}, {3, s153, 3, s413},
  };
  int bad = 0;
  uint64_t seed = 1;
  for (int op = 0; op < STK__BIN_COUNT; op++)
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
      for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        bad += check_binary((stk__binop)op, pairs[p][0], shapes[k].na, shapes[k].a, pairs[p][1],
                            shapes[k].nb, shapes[k].b, seed++);
  assert_int_equal(bad, 0);
  for (int m = 0; m < 4; m++) assert_true(modes_seen[m] > 0); /* every operand mode ran */
}

static void test_unary_and_clamp_every_op_and_type(void **state) {
  (void)state;
  int bad = 0;
  size_t n = 257;
  for (int t = 0; t < STK_DTYPE_COUNT; t++)
    for (int op = -1; op < STK__UN_COUNT; op++) {
      stk_dtype ot = (stk_dtype)t;
      if (op >= 0 && !stk__unop_type((stk__unop)op, (stk_dtype)t, &ot)) continue;
      void *in = fill((stk_dtype)t, n, (uint64_t)(t * 100 + op + 5));
      size_t es = stk_dtype_size(ot);
      char *cpu = calloc(n, es), *gpu = calloc(n, es);
      double lo = -3.5, hi = 120.25;
      int64_t ilo = 0, ihi = 0;
      uint64_t ulo = 0, uhi = 0;
      if (op < 0) {
        stk__clamp(in, cpu, (stk_dtype)t, n, lo, hi);
        if (!stk_ar_is_float(t)) stk_ar_int_bounds(t, lo, hi, &ilo, &ihi, &ulo, &uhi);
      } else {
        stk__unary((stk__unop)op, in, (stk_dtype)t, cpu, ot, n);
      }
      int kind = stk_ar_unary_kind(op, t);
      for (size_t i = 0; i < n; i++)
        stk_ar_unary_elem(op, kind, in, t, gpu, ot, i, lo, hi, ilo, ihi, ulo, uhi);
      for (size_t i = 0; i < n; i++)
        if (memcmp(cpu + i * es, gpu + i * es, es) != 0) {
          double x = 0, y = 0;
          stk__convert(&x, STK_DTYPE_FLOAT64, cpu + i * es, ot, 1);
          stk__convert(&y, STK_DTYPE_FLOAT64, gpu + i * es, ot, 1);
          if (isnan(x) && isnan(y)) continue;
          if (bad++ < 3)
            print_error("unary %d on %s element %zu: cpu %g emulated %g\n", op, stk_dtype_name(t),
                        i, x, y);
        }
      free(in), free(cpu), free(gpu);
    }
  assert_int_equal(bad, 0);
}

/* one_hot's element rule against a direct reference: [2, 3] int labels, axis 1. */
static void test_one_hot_elements(void **state) {
  (void)state;
  int32_t labels[6] = {0, 4, -1, 2, 7, 3};
  int64_t ncls = 5, inner = 3; /* axis 1 of [2, 3]: output [2, 5, 3] */
  float on = 2.5f, off = -1.0f, out[30];
  uint64_t bon = 0, boff = 0;
  memcpy(&bon, &on, 4), memcpy(&boff, &off, 4);
  for (int64_t e = 0; e < 30; e++)
    stk_ar_one_hot_elem(labels, STK_DTYPE_INT32, out, 4, ncls, inner, bon, boff, e);
  for (int o = 0; o < 2; o++)
    for (int c = 0; c < 5; c++)
      for (int j = 0; j < 3; j++)
        assert_true(out[(o * 5 + c) * 3 + j] == (labels[o * 3 + j] == c ? on : off));
}

/* The shared float16 conversions are the CPU's, bit for bit (NaN patterns included). */
static void test_float16_conversions_are_the_cpus(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = stk__f16_to_f32((uint16_t)h), b = stk_ar_f16_to_f32((uint16_t)h);
    assert_memory_equal(&a, &b, sizeof a);
  }
  for (uint64_t x = 0; x < 0x100000000ull; x += 4093) {
    uint32_t u = (uint32_t)x;
    float f;
    memcpy(&f, &u, 4);
    assert_int_equal(stk__f32_to_f16(f), stk_ar_f32_to_f16(f));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_binary_every_op_type_and_broadcast),
      cmocka_unit_test(test_unary_and_clamp_every_op_and_type),
      cmocka_unit_test(test_one_hot_elements),
      cmocka_unit_test(test_float16_conversions_are_the_cpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
