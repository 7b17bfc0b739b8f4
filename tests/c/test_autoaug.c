/* Automatic augmentation tables and draws (src/autoaug): policies against DALI's published
 * lists (a second source: the C tables of three policies were transcribed from
 * torchvision's), magnitude mappings against DALI's numbers and torchvision's formulas,
 * draw statistics, argument checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../../src/autoaug/autoaug.h"

/* DALI's get_reduced_cifar10_policy (nvidia.dali.auto_aug.auto_augment), "op p bin" with
 * bin -1 for None; DALI drops torchvision's probability-0 stages. */
static const char *const dali_reduced_cifar10[25] = {"invert 0.1 -1,contrast 0.2 6",
                                                     "rotate 0.7 2,translate_x 0.3 9",
                                                     "sharpness 0.8 1,sharpness 0.9 3",
                                                     "shear_y 0.5 8,translate_y 0.7 9",
                                                     "auto_contrast 0.5 -1,equalize 0.9 -1",
                                                     "shear_y 0.2 7,posterize 0.3 7",
                                                     "color 0.4 3,brightness 0.6 7",
                                                     "sharpness 0.3 9,brightness 0.7 9",
                                                     "equalize 0.6 -1,equalize 0.5 -1",
                                                     "contrast 0.6 7,sharpness 0.6 5",
                                                     "color 0.7 7,translate_x 0.5 8",
                                                     "equalize 0.3 -1,auto_contrast 0.4 -1",
                                                     "translate_y 0.4 3,sharpness 0.2 6",
                                                     "brightness 0.9 6,color 0.2 8",
                                                     "solarize 0.5 2",
                                                     "equalize 0.2 -1,auto_contrast 0.6 -1",
                                                     "equalize 0.2 -1,equalize 0.6 -1",
                                                     "color 0.9 9,equalize 0.6 -1",
                                                     "auto_contrast 0.8 -1,solarize 0.2 8",
                                                     "brightness 0.1 3,color 0.7 0",
                                                     "solarize 0.4 5,auto_contrast 0.9 -1",
                                                     "translate_y 0.9 9,translate_y 0.7 9",
                                                     "auto_contrast 0.9 -1,solarize 0.8 3",
                                                     "equalize 0.8 -1,invert 0.1 -1",
                                                     "translate_y 0.7 9,auto_contrast 0.9 -1"};

static void test_reduced_cifar10_equals_dali(void **state) {
  (void)state;
  const stk__aa_policy *p = stk__aa_policy_find("reduced_cifar10", STK__AA_DALI);
  assert_non_null(p);
  assert_int_equal(p->num_sub, 25);
  assert_int_equal(p->num_bins, 11);
  for (int i = 0; i < 25; i++) {
    char got[128] = "";
    for (int k = 0; k < p->stages; k++) {
      const stk__aa_stage *c = &p->table[i * p->stages + k];
      if (c->op < 0 || c->prob == 0.0f) continue; /* DALI's form */
      char cell[48];
      snprintf(cell, sizeof cell, "%s%s %.1f %d", *got ? "," : "", stk__aa_op_name(c->op),
               (double)c->prob, c->bin);
      strcat(got, cell);
    }
    assert_string_equal(got, dali_reduced_cifar10[i]);
  }
  /* torchvision's table keeps the probability-0 stage: ("Solarize", 0.5, 2), ("Invert", 0.0) */
  assert_int_equal(p->table[14 * 2 + 1].op, STK__AA_INVERT);
  assert_true(stk__aa_policy_find("image_net", STK__AA_TORCHVISION)->table ==
              stk__aa_policy_find("reduced_image_net", STK__AA_TORCHVISION)->table);
  assert_null(stk__aa_policy_find("cifar100", STK__AA_DALI));
}

static const stk__aa_entry *find(const stk__aa_suite *s, stk__aa_op op) {
  for (int i = 0; i < s->count; i++)
    if (s->e[i].op == op) return &s->e[i];
  fail_msg("%s is not in the list", stk__aa_op_name(op));
  return NULL;
}

static void test_rand_augment_m9_of_31(void **state) {
  (void)state;
  stk__aa_translate tr = {false, {-1, -1}, {-1, -1}};
  stk__aa_suite d, t;
  TU_OK(stk__aa_default_suite(STK__AA_RAND_AUGMENT, STK__AA_DALI, true, NULL, &tr, &d));
  TU_OK(stk__aa_default_suite(STK__AA_RAND_AUGMENT, STK__AA_TORCHVISION, true, NULL, &tr, &t));
  assert_int_equal(d.count, 14);
  assert_int_equal(t.count, 14);
  assert_int_equal(d.e[0].op, STK__AA_TRANSLATE_X); /* DALI's order */
  assert_int_equal(t.e[0].op, STK__AA_IDENTITY);    /* torchvision's order */
  const double H = 224, W = 300;
  /* torchvision: linspace(0, 0.3, 31)[9], linspace(0, 30, 31)[9], 1 +- 0.27,
   * 8 - round(9 / 7.5) bits, linspace(255, 0, 31)[9], int(150/331 * W * 9 / 30) */
  assert_float_equal(
      stk__aa_param(find(&t, STK__AA_SHEAR_X), STK__AA_TORCHVISION, 9, 31, false, H, W), 0.09,
      1e-7);
  assert_float_equal(
      stk__aa_param(find(&t, STK__AA_ROTATE), STK__AA_TORCHVISION, 9, 31, true, H, W), -9.0, 1e-5);
  assert_float_equal(stk__aa_param(find(&t, STK__AA_COLOR), STK__AA_TORCHVISION, 9, 31, true, H, W),
                     0.73, 1e-6);
  assert_float_equal(
      stk__aa_param(find(&t, STK__AA_POSTERIZE), STK__AA_TORCHVISION, 9, 31, false, H, W), 7, 0);
  assert_float_equal(
      stk__aa_param(find(&t, STK__AA_SOLARIZE), STK__AA_TORCHVISION, 9, 31, false, H, W), 178.5, 0);
  assert_float_equal(
      stk__aa_param(find(&t, STK__AA_TRANSLATE_X), STK__AA_TORCHVISION, 9, 31, false, H, W),
      floor(150.0 / 331.0 * 9.0 / 30.0 * W), 0);
  /* DALI: the same ranges, posterize (8, 4) bits as a mask, solarize (256, 0), 100 px */
  assert_float_equal(stk__aa_param(find(&d, STK__AA_SHEAR_Y), STK__AA_DALI, 9, 31, false, H, W),
                     0.09, 1e-7);
  assert_float_equal(stk__aa_param(find(&d, STK__AA_BRIGHTNESS), STK__AA_DALI, 9, 31, false, H, W),
                     1.27, 1e-6);
  assert_float_equal(stk__aa_param(find(&d, STK__AA_SHARPNESS), STK__AA_DALI, 9, 31, true, H, W),
                     -0.27, 1e-6);
  assert_float_equal(stk__aa_param(find(&d, STK__AA_POSTERIZE), STK__AA_DALI, 9, 31, false, H, W),
                     0xFE, 0);
  assert_float_equal(stk__aa_param(find(&d, STK__AA_SOLARIZE), STK__AA_DALI, 9, 31, false, H, W),
                     179.2, 1e-4);
  assert_float_equal(stk__aa_param(find(&d, STK__AA_TRANSLATE_X), STK__AA_DALI, 9, 31, false, H, W),
                     30.0, 1e-5);
  /* relative to the shape: DALI's default 100/224 of the width */
  tr.use_shape = true;
  TU_OK(stk__aa_default_suite(STK__AA_RAND_AUGMENT, STK__AA_DALI, true, NULL, &tr, &d));
  assert_float_equal(stk__aa_param(find(&d, STK__AA_TRANSLATE_Y), STK__AA_DALI, 30, 31, true, H, W),
                     -100.0, 1e-4);
}

static void test_auto_augment_and_trivial_mappings(void **state) {
  (void)state;
  stk__aa_translate tr = {false, {-1, -1}, {-1, -1}};
  stk__aa_suite s;
  const stk__aa_policy *p = stk__aa_policy_find("image_net", STK__AA_DALI);
  TU_OK(stk__aa_default_suite(STK__AA_AUTO_AUGMENT, STK__AA_DALI, true, p, &tr, &s));
  /* DALI's AutoAugment: posterize (0, 4) keeps clamp(round(m), 1, 8) bits; bin 6 of 11 = 2.4 */
  assert_float_equal(stk__aa_param(find(&s, STK__AA_POSTERIZE), STK__AA_DALI, 6, 11, false, 1, 1),
                     0xC0, 0);
  assert_float_equal(stk__aa_param(find(&s, STK__AA_POSTERIZE), STK__AA_DALI, 0, 11, false, 1, 1),
                     0x80, 0);
  assert_float_equal(
      stk__aa_param(find(&s, STK__AA_SOLARIZE_ADD), STK__AA_DALI, 7, 11, false, 1, 1), 77, 0);
  assert_float_equal(stk__aa_param(find(&s, STK__AA_COLOR), STK__AA_DALI, 9, 11, true, 1, 1),
                     (float)1.72, 1e-6);
  assert_float_equal(stk__aa_param(find(&s, STK__AA_TRANSLATE_Y), STK__AA_DALI, 9, 11, false, 1, 1),
                     225, 1e-4);
  /* torchvision's TrivialAugmentWide: 32 px, 135 degrees, posterize 8 - round(k / 5) */
  TU_OK(stk__aa_default_suite(STK__AA_TRIVIAL_AUGMENT_WIDE, STK__AA_TORCHVISION, true, NULL, &tr,
                              &s));
  assert_float_equal(
      stk__aa_param(find(&s, STK__AA_TRANSLATE_X), STK__AA_TORCHVISION, 30, 31, true, 9, 9), -32,
      0);
  assert_float_equal(
      stk__aa_param(find(&s, STK__AA_ROTATE), STK__AA_TORCHVISION, 30, 31, false, 9, 9), 135, 1e-5);
  assert_float_equal(
      stk__aa_param(find(&s, STK__AA_POSTERIZE), STK__AA_TORCHVISION, 30, 31, false, 9, 9), 2, 0);
  assert_float_equal(
      stk__aa_param(find(&s, STK__AA_POSTERIZE), STK__AA_TORCHVISION, 12, 31, false, 9, 9), 6, 0);
}

static void test_draws(void **state) {
  (void)state;
  stk__aa_sampler ra = {STK__AA_RAND_AUGMENT, 2, 9, 31, 14, 0, 0, NULL, NULL, NULL};
  TU_OK(stk__aa_sampler_check(&ra));
  int counts[14] = {0}, neg = 0;
  for (int i = 0; i < 7000; i++) {
    stk__philox g;
    stk__philox_init(&g, 42, (uint64_t)i);
    stk__aa_decision d[2];
    stk__aa_draw(&ra, &g, d);
    for (int k = 0; k < 2; k++)
      counts[d[k].index]++, neg += d[k].negate, assert_int_equal(d[k].bin, 9);
  }
  for (int k = 0; k < 14; k++) assert_true(abs(counts[k] - 1000) < 130); /* 4 sigma */
  assert_true(abs(neg - 7000) < 340);
  ra.m = 31;
  assert_int_equal(stk__aa_sampler_check(&ra), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "m = 31"));
  /* AutoAugment: a stage of probability p runs with frequency p */
  int32_t aug[2] = {0, -1}, bin[2] = {3, -1};
  float prob[2] = {0.3f, 0.0f};
  stk__aa_sampler aa = {STK__AA_AUTO_AUGMENT, 0, 0, 11, 1, 1, 2, aug, prob, bin};
  TU_OK(stk__aa_sampler_check(&aa));
  int ran = 0;
  for (int i = 0; i < 10000; i++) {
    stk__philox g;
    stk__philox_init(&g, 7, (uint64_t)i);
    stk__aa_decision d[2];
    stk__aa_draw(&aa, &g, d);
    ran += d[0].index == 0;
    assert_int_equal(d[1].index, -1);
  }
  assert_true(abs(ran - 3000) < 184); /* 4 sigma */
  prob[0] = 1.5f;
  assert_int_equal(stk__aa_sampler_check(&aa), STK_ERR_INVALID_ARGUMENT);
}

static void test_apply_rejects_bad_arguments(void **state) {
  (void)state;
  stk_op *op;
  const char *names[] = {"shear_x", "warp"};
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_op_create("external_source", "cpu", &op));
  TU_OK(stk_op_set_name(op, "src"));
  TU_OK(stk_op_add_output(op, "x"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("auto_augment.apply", "cpu", &op));
  TU_OK(stk_op_set_name(op, "aa"));
  TU_OK(stk_op_add_input(op, "x"));
  for (int i = 0; i < 4; i++) {
    char e[8];
    snprintf(e, sizeof e, "o%d", i);
    TU_OK(stk_op_add_output(op, e));
  }
  TU_OK(stk_op_set_strings(op, "augmentations", names, 2));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"o0"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 1));
  assert_int_equal(stk_pipeline_build(p), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "\"warp\""));
  assert_non_null(strstr(stk_last_error(), "aa"));
  stk_pipeline_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduced_cifar10_equals_dali),
      cmocka_unit_test(test_rand_augment_m9_of_31),
      cmocka_unit_test(test_auto_augment_and_trivial_mappings),
      cmocka_unit_test(test_draws),
      cmocka_unit_test(test_apply_rejects_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
