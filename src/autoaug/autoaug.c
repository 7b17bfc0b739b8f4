/* The automatic augmentation tables, magnitude mappings and decision draws (see
 * autoaug.h). */
#include "autoaug.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* Names                                                                              */
/* ---------------------------------------------------------------------------------- */

static const char *const op_names[STK__AA_NUM_OPS] = {
    "identity",     "shear_x",  "shear_y",  "translate_x",  "translate_y", "rotate",
    "brightness",   "contrast", "color",    "sharpness",    "posterize",   "solarize",
    "solarize_add", "invert",   "equalize", "auto_contrast"};

const char *stk__aa_op_name(stk__aa_op op) {
  return (unsigned)op < STK__AA_NUM_OPS ? op_names[op] : "?";
}

bool stk__aa_op_parse(const char *name, stk__aa_op *out) {
  for (int i = 0; name && i < STK__AA_NUM_OPS; i++)
    if (strcmp(name, op_names[i]) == 0) {
      *out = (stk__aa_op)i;
      return true;
    }
  return false;
}

bool stk__aa_op_is_geometric(stk__aa_op op) {
  return op == STK__AA_SHEAR_X || op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_X ||
         op == STK__AA_TRANSLATE_Y || op == STK__AA_ROTATE;
}

bool stk__aa_convention_parse(const char *name, stk__aa_convention *out) {
  if (name && strcmp(name, "dali") == 0)
    *out = STK__AA_DALI;
  else if (name && strcmp(name, "torchvision") == 0)
    *out = STK__AA_TORCHVISION;
  else
    return false;
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* Policies                                                                           */
/* ---------------------------------------------------------------------------------- */

/* Cell macros: S(op, probability, bin); N(op, probability) for operations without a
 * magnitude; X for an absent stage. */
#define S(op, p, b) \
  { STK__AA_##op, (float)(p), (b) }
#define N(op, p) \
  { STK__AA_##op, (float)(p), -1 }
#define X \
  { -1, 0.0f, -1 }

/* DALI's "image_net" policy (nvidia.dali.auto_aug.auto_augment.get_image_net_policy),
 * which is policy_v0 of the TensorFlow TPU AutoAugment code (tensorflow/tpu,
 * models/official/efficientnet/autoaugment.py) with its two probability-0 stages
 * dropped. Bins of 11. */
static const stk__aa_stage image_net_v0[25 * 2] = {
    N(EQUALIZE, 0.8),     S(SHEAR_Y, 0.8, 4),
    S(COLOR, 0.4, 9),     N(EQUALIZE, 0.6),
    S(COLOR, 0.4, 1),     S(ROTATE, 0.6, 8),
    S(SOLARIZE, 0.8, 3),  N(EQUALIZE, 0.4),
    S(SOLARIZE, 0.4, 2),  S(SOLARIZE, 0.6, 2),
    S(COLOR, 0.2, 0),     N(EQUALIZE, 0.8),
    N(EQUALIZE, 0.4),     S(SOLARIZE_ADD, 0.8, 3),
    S(SHEAR_X, 0.2, 9),   S(ROTATE, 0.6, 8),
    S(COLOR, 0.6, 1),     N(EQUALIZE, 1.0),
    N(INVERT, 0.4),       S(ROTATE, 0.6, 0),
    N(EQUALIZE, 1.0),     S(SHEAR_Y, 0.6, 3),
    S(COLOR, 0.4, 7),     N(EQUALIZE, 0.6),
    S(POSTERIZE, 0.4, 6), N(AUTO_CONTRAST, 0.4),
    S(SOLARIZE, 0.6, 8),  S(COLOR, 0.6, 9),
    S(SOLARIZE, 0.2, 4),  S(ROTATE, 0.8, 9),
    S(ROTATE, 1.0, 7),    S(TRANSLATE_Y, 0.8, 9),
    S(SOLARIZE, 0.8, 4),  X,
    S(SHEAR_Y, 0.8, 0),   S(COLOR, 0.6, 4),
    S(COLOR, 1.0, 0),     S(ROTATE, 0.6, 2),
    N(EQUALIZE, 0.8),     X,
    N(EQUALIZE, 1.0),     N(AUTO_CONTRAST, 0.6),
    S(SHEAR_Y, 0.4, 7),   S(SOLARIZE_ADD, 0.6, 7),
    S(POSTERIZE, 0.8, 2), S(SOLARIZE, 0.6, 10),
    S(SOLARIZE, 0.6, 8),  N(EQUALIZE, 0.6),
    S(COLOR, 0.8, 6),     S(ROTATE, 0.4, 5),
};

/* The three policies of the AutoAugment paper (Cubuk et al., "AutoAugment: Learning
 * Augmentation Policies from Data", CVPR 2019, appendix), as torchvision publishes them
 * (torchvision.transforms.AutoAugment: IMAGENET, CIFAR10, SVHN) with their
 * probability-0 stages; DALI publishes the same sub-policies as reduced_image_net,
 * reduced_cifar10 and svhn with those stages dropped. The bins are torchvision's 10
 * (DALI reads them as bins of 11). */
static const stk__aa_stage reduced_image_net[25 * 2] = {
    S(POSTERIZE, 0.4, 8), S(ROTATE, 0.6, 9),   S(SOLARIZE, 0.6, 5),  N(AUTO_CONTRAST, 0.6),
    N(EQUALIZE, 0.8),     N(EQUALIZE, 0.6),    S(POSTERIZE, 0.6, 7), S(POSTERIZE, 0.6, 6),
    N(EQUALIZE, 0.4),     S(SOLARIZE, 0.2, 4), N(EQUALIZE, 0.4),     S(ROTATE, 0.8, 8),
    S(SOLARIZE, 0.6, 3),  N(EQUALIZE, 0.6),    S(POSTERIZE, 0.8, 5), N(EQUALIZE, 1.0),
    S(ROTATE, 0.2, 3),    S(SOLARIZE, 0.6, 8), N(EQUALIZE, 0.6),     S(POSTERIZE, 0.4, 6),
    S(ROTATE, 0.8, 8),    S(COLOR, 0.4, 0),    S(ROTATE, 0.4, 9),    N(EQUALIZE, 0.6),
    N(EQUALIZE, 0.0),     N(EQUALIZE, 0.8),    N(INVERT, 0.6),       N(EQUALIZE, 1.0),
    S(COLOR, 0.6, 4),     S(CONTRAST, 1.0, 8), S(ROTATE, 0.8, 8),    S(COLOR, 1.0, 2),
    S(COLOR, 0.8, 8),     S(SOLARIZE, 0.8, 7), S(SHARPNESS, 0.4, 7), N(INVERT, 0.6),
    S(SHEAR_X, 0.6, 5),   N(EQUALIZE, 1.0),    S(COLOR, 0.4, 0),     N(EQUALIZE, 0.6),
    N(EQUALIZE, 0.4),     S(SOLARIZE, 0.2, 4), S(SOLARIZE, 0.6, 5),  N(AUTO_CONTRAST, 0.6),
    N(INVERT, 0.6),       N(EQUALIZE, 1.0),    S(COLOR, 0.6, 4),     S(CONTRAST, 1.0, 8),
    N(EQUALIZE, 0.8),     N(EQUALIZE, 0.6),
};

static const stk__aa_stage reduced_cifar10[25 * 2] = {
    N(INVERT, 0.1),         S(CONTRAST, 0.2, 6),    S(ROTATE, 0.7, 2),      S(TRANSLATE_X, 0.3, 9),
    S(SHARPNESS, 0.8, 1),   S(SHARPNESS, 0.9, 3),   S(SHEAR_Y, 0.5, 8),     S(TRANSLATE_Y, 0.7, 9),
    N(AUTO_CONTRAST, 0.5),  N(EQUALIZE, 0.9),       S(SHEAR_Y, 0.2, 7),     S(POSTERIZE, 0.3, 7),
    S(COLOR, 0.4, 3),       S(BRIGHTNESS, 0.6, 7),  S(SHARPNESS, 0.3, 9),   S(BRIGHTNESS, 0.7, 9),
    N(EQUALIZE, 0.6),       N(EQUALIZE, 0.5),       S(CONTRAST, 0.6, 7),    S(SHARPNESS, 0.6, 5),
    S(COLOR, 0.7, 7),       S(TRANSLATE_X, 0.5, 8), N(EQUALIZE, 0.3),       N(AUTO_CONTRAST, 0.4),
    S(TRANSLATE_Y, 0.4, 3), S(SHARPNESS, 0.2, 6),   S(BRIGHTNESS, 0.9, 6),  S(COLOR, 0.2, 8),
    S(SOLARIZE, 0.5, 2),    N(INVERT, 0.0),         N(EQUALIZE, 0.2),       N(AUTO_CONTRAST, 0.6),
    N(EQUALIZE, 0.2),       N(EQUALIZE, 0.6),       S(COLOR, 0.9, 9),       N(EQUALIZE, 0.6),
    N(AUTO_CONTRAST, 0.8),  S(SOLARIZE, 0.2, 8),    S(BRIGHTNESS, 0.1, 3),  S(COLOR, 0.7, 0),
    S(SOLARIZE, 0.4, 5),    N(AUTO_CONTRAST, 0.9),  S(TRANSLATE_Y, 0.9, 9), S(TRANSLATE_Y, 0.7, 9),
    N(AUTO_CONTRAST, 0.9),  S(SOLARIZE, 0.8, 3),    N(EQUALIZE, 0.8),       N(INVERT, 0.1),
    S(TRANSLATE_Y, 0.7, 9), N(AUTO_CONTRAST, 0.9),
};

static const stk__aa_stage svhn[25 * 2] = {
    S(SHEAR_X, 0.9, 4),  N(INVERT, 0.2),         S(SHEAR_Y, 0.9, 8), N(INVERT, 0.7),
    N(EQUALIZE, 0.6),    S(SOLARIZE, 0.6, 6),    N(INVERT, 0.9),     N(EQUALIZE, 0.6),
    N(EQUALIZE, 0.6),    S(ROTATE, 0.9, 3),      S(SHEAR_X, 0.9, 4), N(AUTO_CONTRAST, 0.8),
    S(SHEAR_Y, 0.9, 8),  N(INVERT, 0.4),         S(SHEAR_Y, 0.9, 5), S(SOLARIZE, 0.2, 6),
    N(INVERT, 0.9),      N(AUTO_CONTRAST, 0.8),  N(EQUALIZE, 0.6),   S(ROTATE, 0.9, 3),
    S(SHEAR_X, 0.9, 4),  S(SOLARIZE, 0.3, 3),    S(SHEAR_Y, 0.8, 8), N(INVERT, 0.7),
    N(EQUALIZE, 0.9),    S(TRANSLATE_Y, 0.6, 6), N(INVERT, 0.9),     N(EQUALIZE, 0.6),
    S(CONTRAST, 0.3, 3), S(ROTATE, 0.8, 4),      N(INVERT, 0.8),     S(TRANSLATE_Y, 0.0, 2),
    S(SHEAR_Y, 0.7, 6),  S(SOLARIZE, 0.4, 8),    N(INVERT, 0.6),     S(ROTATE, 0.8, 4),
    S(SHEAR_Y, 0.3, 7),  S(TRANSLATE_X, 0.9, 3), S(SHEAR_X, 0.1, 6), N(INVERT, 0.6),
    S(SOLARIZE, 0.7, 2), S(TRANSLATE_Y, 0.6, 7), S(SHEAR_Y, 0.8, 4), N(INVERT, 0.8),
    S(SHEAR_X, 0.7, 9),  S(TRANSLATE_Y, 0.8, 3), S(SHEAR_Y, 0.8, 5), N(AUTO_CONTRAST, 0.7),
    S(SHEAR_X, 0.7, 2),  N(INVERT, 0.1),
};
#undef S
#undef N
#undef X

static const stk__aa_policy dali_policies[] = {
    {"image_net", 11, 25, 2, image_net_v0},
    {"reduced_image_net", 11, 25, 2, reduced_image_net},
    {"reduced_cifar10", 11, 25, 2, reduced_cifar10},
    {"svhn", 11, 25, 2, svhn},
};
static const stk__aa_policy tv_policies[] = {
    {"image_net", 10, 25, 2, reduced_image_net},
    {"reduced_image_net", 10, 25, 2, reduced_image_net},
    {"reduced_cifar10", 10, 25, 2, reduced_cifar10},
    {"svhn", 10, 25, 2, svhn},
};

const stk__aa_policy *stk__aa_policy_find(const char *name, stk__aa_convention conv) {
  const stk__aa_policy *t = conv == STK__AA_TORCHVISION ? tv_policies : dali_policies;
  for (int i = 0; name && i < 4; i++)
    if (strcmp(name, t[i].name) == 0) return &t[i];
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Augmentation lists                                                                 */
/* ---------------------------------------------------------------------------------- */

#define E(op, lo, hi, neg, map) \
  { STK__AA_##op, (lo), (hi), (neg), STK__AA_MAP_##map, false }

/* DALI: nvidia.dali.auto_aug.rand_augment.get_rand_augment_suite (monotonic) and
 * get_rand_augment_non_monotonic_suite, trivial_augment.get_trivial_augment_wide_suite;
 * translations come first and are filled in by add_translations. */
static const stk__aa_entry dali_ra[] = {
    E(SHEAR_X, 0, 0.3, true, LINEAR),    E(SHEAR_Y, 0, 0.3, true, LINEAR),
    E(ROTATE, 0, 30, true, LINEAR),      E(BRIGHTNESS, 0, 0.9, true, ENHANCE),
    E(CONTRAST, 0, 0.9, true, ENHANCE),  E(COLOR, 0, 0.9, true, ENHANCE),
    E(SHARPNESS, 0, 0.9, true, LINEAR),  E(POSTERIZE, 8, 4, false, BITS),
    E(SOLARIZE, 256, 0, false, LINEAR),  E(EQUALIZE, 0, 0, false, NONE),
    E(AUTO_CONTRAST, 0, 0, false, NONE), E(IDENTITY, 0, 0, false, NONE),
};
static const stk__aa_entry dali_ra_non_monotonic[] = {
    E(SHEAR_X, 0, 0.3, true, LINEAR),       E(SHEAR_Y, 0, 0.3, true, LINEAR),
    E(ROTATE, 0, 30, true, LINEAR),         E(BRIGHTNESS, 0.1, 1.9, false, LINEAR),
    E(CONTRAST, 0.1, 1.9, false, LINEAR),   E(COLOR, 0.1, 1.9, false, LINEAR),
    E(SHARPNESS, 0.1, 1.9, false, SHIFTED), E(POSTERIZE, 0, 4, false, BITS),
    E(SOLARIZE, 0, 256, false, LINEAR),     E(EQUALIZE, 0, 0, false, NONE),
    E(AUTO_CONTRAST, 0, 0, false, NONE),    E(IDENTITY, 0, 0, false, NONE),
};
static const stk__aa_entry dali_ta[] = {
    E(SHEAR_X, 0, 0.99, true, LINEAR),      E(SHEAR_Y, 0, 0.99, true, LINEAR),
    E(ROTATE, 0, 135, true, LINEAR),        E(BRIGHTNESS, 0.01, 0.99, true, ENHANCE),
    E(CONTRAST, 0.01, 0.99, true, ENHANCE), E(COLOR, 0.01, 0.99, true, ENHANCE),
    E(SHARPNESS, 0.01, 0.99, true, LINEAR), E(POSTERIZE, 8, 2, false, BITS),
    E(SOLARIZE, 256, 0, false, LINEAR),     E(EQUALIZE, 0, 0, false, NONE),
    E(AUTO_CONTRAST, 0, 0, false, NONE),    E(IDENTITY, 0, 0, false, NONE),
};
/* DALI's AutoAugment augmentations (get_*_policy): one configuration per operation. */
static const stk__aa_entry dali_aa[STK__AA_NUM_OPS] = {
    E(IDENTITY, 0, 0, false, NONE),           E(SHEAR_X, 0, 0.3, true, LINEAR),
    E(SHEAR_Y, 0, 0.3, true, LINEAR),         E(TRANSLATE_X, 0, 250, true, LINEAR),
    E(TRANSLATE_Y, 0, 250, true, LINEAR),     E(ROTATE, 0, 30, true, LINEAR),
    E(BRIGHTNESS, 0.1, 1.9, false, LINEAR),   E(CONTRAST, 0.1, 1.9, false, LINEAR),
    E(COLOR, 0.1, 1.9, false, LINEAR),        E(SHARPNESS, 0.1, 1.9, false, SHIFTED),
    E(POSTERIZE, 0, 4, false, BITS),          E(SOLARIZE, 0, 256, false, LINEAR),
    E(SOLARIZE_ADD, 0, 110, false, SHIFT_U8), E(INVERT, 0, 0, false, NONE),
    E(EQUALIZE, 0, 0, false, NONE),           E(AUTO_CONTRAST, 0, 0, false, NONE),
};

/* torchvision: the _augmentation_space of RandAugment, TrivialAugmentWide and
 * AutoAugment (torchvision/transforms/autoaugment.py), in its order. Posterize's range
 * (8, 4) or (8, 2) names its formula 8 - round(k / ((N - 1) / (8 - hi))). */
static const stk__aa_entry tv_ra[] = {
    E(IDENTITY, 0, 0, false, NONE),       E(SHEAR_X, 0, 0.3, true, LINEAR),
    E(SHEAR_Y, 0, 0.3, true, LINEAR),     E(TRANSLATE_X, 0, 0, true, LINEAR),
    E(TRANSLATE_Y, 0, 0, true, LINEAR),   E(ROTATE, 0, 30, true, LINEAR),
    E(BRIGHTNESS, 0, 0.9, true, ENHANCE), E(COLOR, 0, 0.9, true, ENHANCE),
    E(CONTRAST, 0, 0.9, true, ENHANCE),   E(SHARPNESS, 0, 0.9, true, ENHANCE),
    E(POSTERIZE, 8, 4, false, BITS),      E(SOLARIZE, 255, 0, false, LINEAR),
    E(AUTO_CONTRAST, 0, 0, false, NONE),  E(EQUALIZE, 0, 0, false, NONE),
};
static const stk__aa_entry tv_ta[] = {
    E(IDENTITY, 0, 0, false, NONE),        E(SHEAR_X, 0, 0.99, true, LINEAR),
    E(SHEAR_Y, 0, 0.99, true, LINEAR),     E(TRANSLATE_X, 0, 0, true, LINEAR),
    E(TRANSLATE_Y, 0, 0, true, LINEAR),    E(ROTATE, 0, 135, true, LINEAR),
    E(BRIGHTNESS, 0, 0.99, true, ENHANCE), E(COLOR, 0, 0.99, true, ENHANCE),
    E(CONTRAST, 0, 0.99, true, ENHANCE),   E(SHARPNESS, 0, 0.99, true, ENHANCE),
    E(POSTERIZE, 8, 2, false, BITS),       E(SOLARIZE, 255, 0, false, LINEAR),
    E(AUTO_CONTRAST, 0, 0, false, NONE),   E(EQUALIZE, 0, 0, false, NONE),
};
static const stk__aa_entry tv_aa[STK__AA_NUM_OPS] = {
    E(IDENTITY, 0, 0, false, NONE),           E(SHEAR_X, 0, 0.3, true, LINEAR),
    E(SHEAR_Y, 0, 0.3, true, LINEAR),         E(TRANSLATE_X, 0, 0, true, LINEAR),
    E(TRANSLATE_Y, 0, 0, true, LINEAR),       E(ROTATE, 0, 30, true, LINEAR),
    E(BRIGHTNESS, 0, 0.9, true, ENHANCE),     E(CONTRAST, 0, 0.9, true, ENHANCE),
    E(COLOR, 0, 0.9, true, ENHANCE),          E(SHARPNESS, 0, 0.9, true, ENHANCE),
    E(POSTERIZE, 8, 4, false, BITS),          E(SOLARIZE, 255, 0, false, LINEAR),
    E(SOLARIZE_ADD, 0, 110, false, SHIFT_U8), E(INVERT, 0, 0, false, NONE),
    E(EQUALIZE, 0, 0, false, NONE),           E(AUTO_CONTRAST, 0, 0, false, NONE),
};
#undef E

int stk__aa_default_bins(stk__aa_scheme scheme, stk__aa_convention conv) {
  if (scheme != STK__AA_AUTO_AUGMENT) return 31;
  return conv == STK__AA_TORCHVISION ? 10 : 11;
}

/* Resolves the translation range of one axis (0: y, 1: x) into the entry. */
static void set_translation(stk__aa_entry *e, stk__aa_scheme scheme, stk__aa_convention conv,
                            const stk__aa_translate *tr, int axis) {
  static const double dali_abs[3] = {100, 32, 250}, dali_rel[3] = {100.0 / 224.0, 1.0, 1.0};
  e->lo = 0;
  if (conv == STK__AA_DALI) {
    e->rel = tr->use_shape;
    double given = tr->use_shape ? tr->max_rel[axis] : tr->max_abs[axis];
    e->hi = given >= 0 ? given : tr->use_shape ? dali_rel[scheme] : dali_abs[scheme];
    return;
  }
  if (tr->max_abs[axis] >= 0) {
    e->rel = false, e->hi = tr->max_abs[axis];
  } else if (tr->max_rel[axis] >= 0) {
    e->rel = true, e->hi = tr->max_rel[axis];
  } else { /* torchvision: 150/331 of the image for RandAugment/AutoAugment, 32 px for TA */
    e->rel = scheme != STK__AA_TRIVIAL_AUGMENT_WIDE;
    e->hi = e->rel ? 150.0 / 331.0 : 32.0;
  }
}

static void append(stk__aa_suite *out, stk__aa_entry e) {
  if (out->count < STK__AA_MAX_SUITE) out->e[out->count++] = e;
}

/* The AutoAugment list: the policy's distinct operations in order of first appearance. */
static void policy_suite(const stk__aa_policy *policy, const stk__aa_entry *conf,
                         stk__aa_suite *out) {
  bool seen[STK__AA_NUM_OPS] = {false};
  for (int i = 0; i < policy->num_sub * policy->stages; i++) {
    int op = policy->table[i].op;
    if (op < 0 || seen[op]) continue;
    seen[op] = true;
    append(out, conf[op]);
  }
}

stk_status stk__aa_default_suite(stk__aa_scheme scheme, stk__aa_convention conv, bool monotonic,
                                 const stk__aa_policy *policy, const stk__aa_translate *tr,
                                 stk__aa_suite *out) {
  out->count = 0;
  const stk__aa_entry *list = NULL;
  size_t n = 0;
  bool tv = conv == STK__AA_TORCHVISION;
  if (scheme == STK__AA_AUTO_AUGMENT) {
    if (!policy) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "AutoAugment needs a policy");
    policy_suite(policy, tv ? tv_aa : dali_aa, out);
  } else if (tv) {
    list = scheme == STK__AA_RAND_AUGMENT ? tv_ra : tv_ta;
    n = scheme == STK__AA_RAND_AUGMENT ? sizeof tv_ra / sizeof *tv_ra
                                       : sizeof tv_ta / sizeof *tv_ta;
  } else {
    /* DALI lists start with translate_x, translate_y */
    append(out, (stk__aa_entry){STK__AA_TRANSLATE_X, 0, 0, true, STK__AA_MAP_LINEAR, false});
    append(out, (stk__aa_entry){STK__AA_TRANSLATE_Y, 0, 0, true, STK__AA_MAP_LINEAR, false});
    list = scheme == STK__AA_TRIVIAL_AUGMENT_WIDE ? dali_ta
           : monotonic                            ? dali_ra
                                                  : dali_ra_non_monotonic;
    n = sizeof dali_ra / sizeof *dali_ra; /* all three DALI lists have 12 entries */
  }
  for (size_t i = 0; i < n; i++) append(out, list[i]);
  for (int i = 0; i < out->count; i++) {
    if (out->e[i].op == STK__AA_TRANSLATE_X) set_translation(&out->e[i], scheme, conv, tr, 1);
    if (out->e[i].op == STK__AA_TRANSLATE_Y) set_translation(&out->e[i], scheme, conv, tr, 0);
  }
  return STK_OK;
}

bool stk__aa_entry_for(stk__aa_scheme scheme, stk__aa_convention conv, bool monotonic,
                       stk__aa_op op, const stk__aa_translate *tr, stk__aa_entry *out) {
  stk__aa_suite all;
  if (scheme == STK__AA_AUTO_AUGMENT) {
    *out = (conv == STK__AA_TORCHVISION ? tv_aa : dali_aa)[op];
    all.e[0] = *out, all.count = 1;
    if (op == STK__AA_TRANSLATE_X) set_translation(&all.e[0], scheme, conv, tr, 1);
    if (op == STK__AA_TRANSLATE_Y) set_translation(&all.e[0], scheme, conv, tr, 0);
    *out = all.e[0];
    return true;
  }
  stk__aa_default_suite(scheme, conv, monotonic, NULL, tr, &all);
  for (int i = 0; i < all.count; i++)
    if (all.e[i].op == op) {
      *out = all.e[i];
      return true;
    }
  return false;
}

void stk__aa_policy_cells(const stk__aa_policy *p, const stk__aa_suite *suite, int32_t *aug,
                          float *prob, int32_t *bin) {
  for (int i = 0; i < p->num_sub * p->stages; i++) {
    const stk__aa_stage *c = &p->table[i];
    aug[i] = -1;
    for (int k = 0; c->op >= 0 && k < suite->count; k++)
      if ((int)suite->e[k].op == c->op) {
        aug[i] = k;
        break;
      }
    prob[i] = c->prob;
    bin[i] = c->bin;
  }
}

/* ---------------------------------------------------------------------------------- */
/* Magnitudes and parameters                                                          */
/* ---------------------------------------------------------------------------------- */

float stk__aa_linspace(double lo, double hi, int k, int n, stk__aa_convention conv) {
  if (n <= 1) return (float)lo;
  if (conv == STK__AA_DALI) { /* numpy: k * step + start in float64, the last is `stop` */
    if (k == n - 1) return (float)hi;
    double step = (hi - lo) / (double)(n - 1);
    return (float)((double)k * step + lo);
  }
  /* torch's CPU kernel in float: symmetric about the midpoint */
  float start = (float)lo, end = (float)hi;
  float step = (end - start) / (float)(n - 1);
  if (k < n / 2) return start + step * (float)k;
  return end - step * (float)(n - 1 - k);
}

/* torchvision's posterize bits: 8 - round(k / ((N - 1) / div)) in float32, half to even. */
static int tv_posterize_bits(double hi, int k, int n) {
  if (n <= 1) return 8;
  float div = (float)((double)(n - 1) / (8.0 - hi));
  return 8 - (int)rintf((float)k / div);
}

double stk__aa_magnitude(const stk__aa_entry *e, stk__aa_convention conv, int bin, int num_bins,
                         bool negate) {
  if (e->map == STK__AA_MAP_NONE) return 0.0;
  if (e->map == STK__AA_MAP_BITS && conv == STK__AA_TORCHVISION)
    return tv_posterize_bits(e->hi, bin, num_bins);
  float m = stk__aa_linspace(e->lo, e->hi, bin, num_bins, conv);
  return negate && e->negate ? -(double)m : (double)m;
}

/* A translation in pixels for an image extent `size`. Relative translations multiply the
 * float32 fraction by the extent in float32 (DALI's param * shape; for torchvision the
 * fraction is torch's linspace(0, 150 / 331) and the product is truncated, which can
 * differ from torchvision's linspace(0, 150 / 331 * size) by one pixel where the offset
 * lies within float32 rounding of an integer). */
static double translation_px(const stk__aa_entry *e, stk__aa_convention conv, int bin, int num_bins,
                             bool neg, double size) {
  float m = (float)stk__aa_magnitude(e, conv, bin, num_bins, neg);
  double px = e->rel ? (double)(m * (float)size) : (double)m;
  return conv == STK__AA_TORCHVISION ? trunc(px) : px;
}

double stk__aa_param(const stk__aa_entry *e, stk__aa_convention conv, int bin, int num_bins,
                     bool negate, double h, double w) {
  if (e->op == STK__AA_TRANSLATE_X) return translation_px(e, conv, bin, num_bins, negate, w);
  if (e->op == STK__AA_TRANSLATE_Y) return translation_px(e, conv, bin, num_bins, negate, h);
  double m = stk__aa_magnitude(e, conv, bin, num_bins, negate);
  float mf = (float)m;
  switch (e->map) {
    case STK__AA_MAP_NONE:
      return 0.0;
    case STK__AA_MAP_LINEAR:
      return m;
    case STK__AA_MAP_ENHANCE:
      return (double)(1.0f + mf); /* exact in either convention */
    case STK__AA_MAP_SHIFTED:
      return (double)(mf - 1.0f);
    case STK__AA_MAP_SHIFT_U8:
      return m <= 0 ? 0.0 : m >= 255 ? 255.0 : trunc(m);
    case STK__AA_MAP_BITS: {
      if (conv == STK__AA_TORCHVISION) return m;
      double bits = rint(m); /* numpy's round: half to even */
      bits = bits < 1 ? 1 : bits > 8 ? 8 : bits;
      return (double)(255u ^ ((1u << (8 - (int)bits)) - 1u)); /* DALI's uint8 mask */
    }
  }
  return m;
}

/* ---------------------------------------------------------------------------------- */
/* Draws                                                                              */
/* ---------------------------------------------------------------------------------- */

int stk__aa_num_stages(const stk__aa_sampler *s) {
  switch (s->scheme) {
    case STK__AA_RAND_AUGMENT:
      return s->n;
    case STK__AA_TRIVIAL_AUGMENT_WIDE:
      return 1;
    default:
      return s->stages;
  }
}

stk_status stk__aa_sampler_check(const stk__aa_sampler *s) {
  if (s->num_bins < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "num_magnitude_bins = %d: must be positive",
                    s->num_bins);
  if (s->scheme == STK__AA_RAND_AUGMENT) {
    if (s->n < 0 || s->n > STK__AA_MAX_STAGES)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "n = %d: must be in [0, %d]", s->n,
                      STK__AA_MAX_STAGES);
    if (s->m < 0 || s->m >= s->num_bins)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "m = %d: must be in [0, num_magnitude_bins - 1 = %d]", s->m, s->num_bins - 1);
  }
  if (s->scheme != STK__AA_AUTO_AUGMENT) {
    if (s->num_augs < 1 || (s->n > 0 && s->num_augs < 1))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "the augmentation list is empty");
    return STK_OK;
  }
  if (s->num_sub < 1 || s->stages < 1 || s->stages > STK__AA_MAX_STAGES)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "the policy has %d sub-policies of %d stages",
                    s->num_sub, s->stages);
  for (int i = 0; i < s->num_sub * s->stages; i++) {
    if (s->aug[i] < -1 || s->aug[i] >= s->num_augs)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "policy cell %d names augmentation %d of %d", i,
                      (int)s->aug[i], s->num_augs);
    if (!(s->prob[i] >= 0.0f && s->prob[i] <= 1.0f))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "policy cell %d: probability %g is outside [0, 1]",
                      i, (double)s->prob[i]);
    if (s->bin[i] < -1 || s->bin[i] >= s->num_bins)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "policy cell %d: magnitude bin %d is outside "
                      "[0, %d)",
                      i, (int)s->bin[i], s->num_bins);
  }
  return STK_OK;
}

void stk__aa_draw(const stk__aa_sampler *s, stk__philox *g, stk__aa_decision *out) {
  uint64_t k = (uint64_t)(s->num_augs > 0 ? s->num_augs : 1);
  switch (s->scheme) {
    case STK__AA_RAND_AUGMENT:
      for (int i = 0; i < s->n; i++) {
        out[i].index = (int32_t)stk__philox_below(g, k);
        out[i].negate = (int32_t)stk__philox_below(g, 2);
        out[i].bin = s->m;
      }
      return;
    case STK__AA_TRIVIAL_AUGMENT_WIDE:
      out[0].index = (int32_t)stk__philox_below(g, k);
      out[0].bin = (int32_t)stk__philox_below(g, (uint64_t)s->num_bins);
      out[0].negate = (int32_t)stk__philox_below(g, 2);
      return;
    case STK__AA_AUTO_AUGMENT: {
      int sub = (int)stk__philox_below(g, (uint64_t)s->num_sub);
      for (int i = 0; i < s->stages; i++) {
        int cell = sub * s->stages + i;
        double u = stk__philox_uniform(g);
        out[i].negate = (int32_t)stk__philox_below(g, 2);
        bool run = s->aug[cell] >= 0 && u < (double)s->prob[cell];
        out[i].index = run ? s->aug[cell] : -1;
        out[i].bin = s->bin[cell] >= 0 ? s->bin[cell] : 0;
      }
      return;
    }
  }
}
