/*
 * Automatic augmentation operators (CPU):
 *   auto_augment.choose       per-sample decisions of RandAugment / TrivialAugmentWide /
 *                             AutoAugment (one row per stage), from the node's Philox stream
 *   auto_augment.apply        the fused path: a uint8 image (with an optional mask and
 *                             boxes) through its sample's whole sequence in one operator
 *   auto_augment.augment      one operation with a per-sample parameter (what the Python
 *                             built-in augmentations call on the generic path)
 *   auto_augment.stage_index  a stage's augmentation index, as a scalar (select / guards)
 *   auto_augment.stage_param  a stage's parameter looked up in a per-bin table
 *
 * Decisions travel as a float32 [stages, 5] tensor per sample: (augmentation index or
 * -1, operation id or -1, magnitude bin, negate, parameter). auto_augment.apply takes
 * them through its `decisions` argument (fed by auto_augment.choose), or draws them with
 * the same function when it is not fed; so the fused path, the generic path built from
 * choose + select, and a future GPU kernel fed the same tensor apply identical decisions.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_autoaug.h"
#include "autoaug_kernels.h"
#include "color.h"
#include "gpu_util.h"
#include "image_util.h"

#define DEC_COLS 5

/* ---------------------------------------------------------------------------------- */
/* Configuration shared by choose and apply                                           */
/* ---------------------------------------------------------------------------------- */

enum {
  A_POLICY,
  A_CONVENTION,
  A_N,
  A_M,
  A_BINS,
  A_MONOTONIC,
  A_EXCLUDED,
  A_AUGMENTATIONS,
  A_NUM_AUGS,
  A_POL_AUGS,
  A_POL_PROBS,
  A_POL_BINS,
  A_POL_STAGES,
  A_MAX_ABS,
  A_MAX_REL,
  A_USE_SHAPE,
  A_SEED,
  /* apply only */
  A_DECISIONS,
  A_SHAPE,
  A_FILL,
  A_BORDER,
  A_INTERP,
  A_WITH_MASK,
  A_WITH_BOXES,
  A_NORMALIZED,
  APPLY_ARGS_COUNT_
};

#define POLICY_CHOICES                                                                       \
  "rand_augment|trivial_augment_wide|auto_augment_image_net|auto_augment_reduced_image_net|" \
  "auto_augment_reduced_cifar10|auto_augment_svhn|auto_augment"
#define CONVENTION_ARG                                                                        \
  {                                                                                           \
    "convention", STK_ARG_STRING, 0, "\"dali\"", 0, 0, "dali|torchvision",                    \
        "\"dali\": DALI's auto_aug magnitudes and operation definitions (fill 128, linear); " \
        "\"torchvision\": torchvision's _augmentation_space and its Pillow operations (fill " \
        "0, nearest)"                                                                         \
  }

#define COMMON_ARGS                                                                             \
  {"policy",                                                                                    \
   STK_ARG_STRING,                                                                              \
   0,                                                                                           \
   "\"rand_augment\"",                                                                          \
   0,                                                                                           \
   0,                                                                                           \
   POLICY_CHOICES,                                                                              \
   "the scheme: RandAugment, TrivialAugmentWide, one of the published AutoAugment "             \
   "policies, or \"auto_augment\" with a custom policy (policy_* arguments)"},                  \
      CONVENTION_ARG,                                                                           \
      {"n", STK_ARG_INT, STK_ARGF_RANGE, "2",                                                   \
       0,   16,          NULL,           "RandAugment: operations applied to each sample"},     \
      {"m", STK_ARG_INT, 0,    "9",                                                             \
       0,   0,           NULL, "RandAugment: the magnitude bin, in [0, num_magnitude_bins)"},   \
      {"num_magnitude_bins",                                                                    \
       STK_ARG_INT,                                                                             \
       0,                                                                                       \
       "-1",                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "bins of each magnitude range; -1: 31 for RandAugment and TrivialAugment, the "          \
       "policy's (11 DALI, 10 torchvision) for AutoAugment"},                                   \
      {"monotonic_mag",                                                                         \
       STK_ARG_BOOL,                                                                            \
       0,                                                                                       \
       "true",                                                                                  \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "DALI's RandAugment: false takes its non-monotonic suite"},                              \
      {"excluded", STK_ARG_STRINGS,                                                             \
       0,          NULL,                                                                        \
       0,          0,                                                                           \
       NULL,       "names of augmentations left out of the default list"},                      \
      {"augmentations",                                                                         \
       STK_ARG_STRINGS,                                                                         \
       0,                                                                                       \
       NULL,                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "the list by name, in order (entries configured as in the scheme's list); default: "     \
       "the scheme's whole list"},                                                              \
      {"num_augmentations",                                                                     \
       STK_ARG_INT,                                                                             \
       0,                                                                                       \
       "0",                                                                                     \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "choose only: the size of a custom augmentation list (Python's apply_* with user "       \
       "augmentations)"},                                                                       \
      {"policy_augmentations",                                                                  \
       STK_ARG_INTS,                                                                            \
       0,                                                                                       \
       NULL,                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "custom AutoAugment policy: per (sub-policy, stage) the augmentation index, -1 absent"}, \
      {"policy_probabilities",                                                                  \
       STK_ARG_FLOATS,                                                                          \
       0,                                                                                       \
       NULL,                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "custom AutoAugment policy: per cell the probability"},                                  \
      {"policy_magnitude_bins",                                                                 \
       STK_ARG_INTS,                                                                            \
       0,                                                                                       \
       NULL,                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "custom AutoAugment policy: per cell the magnitude bin (-1: none)"},                     \
      {"policy_stages",                                                                         \
       STK_ARG_INT,                                                                             \
       0,                                                                                       \
       "0",                                                                                     \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "custom AutoAugment policy: stages per sub-policy (the cell rows' length)"},             \
      {"max_translate_abs",                                                                     \
       STK_ARG_FLOATS,                                                                          \
       0,                                                                                       \
       NULL,                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "largest translation in pixels, one value or [height, width] (defaults: DALI 100 "       \
       "RandAugment, 32 TrivialAugment, 250 AutoAugment; torchvision TrivialAugment 32)"},      \
      {"max_translate_rel",                                                                     \
       STK_ARG_FLOATS,                                                                          \
       0,                                                                                       \
       NULL,                                                                                    \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "largest translation as a fraction of the shape, one value or [height, width] "          \
       "(defaults: DALI 100/224 RandAugment, 1 otherwise; torchvision 150/331)"},               \
      {"use_shape",                                                                             \
       STK_ARG_BOOL,                                                                            \
       0,                                                                                       \
       "false",                                                                                 \
       0,                                                                                       \
       0,                                                                                       \
       NULL,                                                                                    \
       "DALI: translations relative to the image shape (`shape`, else the image's own)"},       \
  {                                                                                             \
    "seed", STK_ARG_INT, 0, "-1", 0, 0, NULL, "this operator's seed (-1: derived)"              \
  }

typedef struct {
  stk__aa_scheme scheme;
  stk__aa_convention conv;
  const stk__aa_policy *policy; /* built-in AutoAugment policy, or NULL */
  stk__aa_suite suite;          /* the list (entries valid when `builtin`) */
  bool builtin;
  int num_bins;
  int32_t *cells_aug, *cells_bin;
  float *cells_prob;
  stk__aa_sampler sampler;
  /* apply / augment */
  stk__interp interp;
  bool constant;
  bool with_mask, with_boxes, normalized;
  stk__aa_op op; /* augment */
} aa_state;

static void aa_destroy(stk__node *node) {
  aa_state *st = *stk__node_state(node);
  if (st) free(st->cells_aug), free(st->cells_bin), free(st->cells_prob);
  free(st);
  *stk__node_state(node) = NULL;
}

static stk_status parse_scheme(stk__node *node, aa_state *st) {
  const char *p = stk__arg_string(node, A_POLICY);
  if (!stk__aa_convention_parse(stk__arg_string(node, A_CONVENTION), &st->conv))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "convention must be dali or torchvision");
  if (strcmp(p, "rand_augment") == 0)
    st->scheme = STK__AA_RAND_AUGMENT;
  else if (strcmp(p, "trivial_augment_wide") == 0)
    st->scheme = STK__AA_TRIVIAL_AUGMENT_WIDE;
  else
    st->scheme = STK__AA_AUTO_AUGMENT;
  if (strncmp(p, "auto_augment_", 13) == 0 && !(st->policy = stk__aa_policy_find(p + 13, st->conv)))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "unknown policy \"%s\"", p);
  return STK_OK;
}

/* One value or [height, width] (-1: not given). */
static stk_status hw_arg(stk__node *node, int arg, const char *name, double out[2]) {
  out[0] = out[1] = -1;
  if (!stk__arg_given(node, arg)) return STK_OK;
  const double *v;
  size_t n = stk__arg_floats(node, NULL, arg, &v);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "%s has %zu values; expected 1 or "
                      "[height, width]",
                      name, n);
  for (size_t i = 0; i < n; i++)
    if (!(v[i] >= 0 && v[i] < 1e9))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "%s = %g must be >= 0", name, v[i]);
  out[0] = v[0], out[1] = v[n - 1];
  return STK_OK;
}

static stk_status translate_args(stk__node *node, const aa_state *st, stk__aa_translate *tr) {
  tr->use_shape = stk__arg_bool(node, NULL, A_USE_SHAPE);
  STK_TRY(hw_arg(node, A_MAX_ABS, "max_translate_abs", tr->max_abs));
  STK_TRY(hw_arg(node, A_MAX_REL, "max_translate_rel", tr->max_rel));
  bool abs_given = tr->max_abs[0] >= 0, rel_given = tr->max_rel[0] >= 0;
  if (abs_given && rel_given)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give max_translate_abs or max_translate_rel, not both");
  if (st->conv == STK__AA_DALI && tr->use_shape && abs_given)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "max_translate_abs cannot be used "
                      "with image shapes (use_shape); use max_translate_rel");
  if (st->conv == STK__AA_DALI && !tr->use_shape && rel_given)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "max_translate_rel needs image "
                      "shapes (use_shape or shape); use max_translate_abs");
  return STK_OK;
}

static const char *scheme_name(stk__aa_scheme s) {
  return s == STK__AA_RAND_AUGMENT           ? "RandAugment"
         : s == STK__AA_TRIVIAL_AUGMENT_WIDE ? "TrivialAugmentWide"
                                             : "AutoAugment";
}

/* The augmentation list: by name, a custom size, or the scheme's default; minus `excluded`. */
static stk_status build_list(stk__node *node, aa_state *st, const stk__aa_translate *tr) {
  bool mono = stk__arg_bool(node, NULL, A_MONOTONIC);
  const char *const *names;
  st->builtin = true;
  if (stk__arg_given(node, A_AUGMENTATIONS)) {
    size_t n = stk__arg_strings(node, A_AUGMENTATIONS, &names);
    if (n > STK__AA_MAX_SUITE)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "augmentations has %zu names; at "
                        "most %d",
                        n, STK__AA_MAX_SUITE);
    st->suite.count = 0;
    for (size_t i = 0; i < n; i++) {
      stk__aa_op op;
      if (!stk__aa_op_parse(names[i], &op) ||
          !stk__aa_entry_for(st->scheme, st->conv, mono, op, tr, &st->suite.e[i]))
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                          "augmentations[%zu] = \"%s\" is "
                          "not in the %s list (" STK__AA_OP_CHOICES ")",
                          i, names[i], scheme_name(st->scheme));
      st->suite.count++;
    }
  } else if (stk__arg_int(node, NULL, A_NUM_AUGS) > 0) {
    int64_t k = stk__arg_int(node, NULL, A_NUM_AUGS);
    if (k > 4096)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "num_augmentations = %lld is too "
                        "large",
                        (long long)k);
    st->builtin = false, st->suite.count = (int)k;
  } else if (st->scheme == STK__AA_AUTO_AUGMENT && !st->policy) {
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "policy \"auto_augment\" needs its "
                      "list: augmentations or num_augmentations");
  } else {
    STK_TRY(stk__aa_default_suite(st->scheme, st->conv, mono, st->policy, tr, &st->suite));
  }
  if (!stk__arg_given(node, A_EXCLUDED)) return STK_OK;
  size_t n = stk__arg_strings(node, A_EXCLUDED, &names);
  for (size_t i = 0; i < n; i++) {
    int k = 0;
    while (k < st->suite.count &&
           (!st->builtin || strcmp(stk__aa_op_name(st->suite.e[k].op), names[i])))
      k++;
    if (k == st->suite.count)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "excluded \"%s\" is not in the %s "
                        "list",
                        names[i], scheme_name(st->scheme));
    memmove(&st->suite.e[k], &st->suite.e[k + 1],
            (size_t)(st->suite.count - k - 1) * sizeof(stk__aa_entry));
    st->suite.count--;
  }
  return STK_OK;
}

/* AutoAugment cells: from the policy_* arguments, or the built-in policy mapped onto the
 * list. */
static stk_status build_cells(stk__node *node, aa_state *st) {
  int rows, cols;
  const int64_t *ia = NULL, *ib = NULL;
  const double *pp = NULL;
  if (stk__arg_given(node, A_POL_AUGS)) {
    size_t n = stk__arg_ints(node, NULL, A_POL_AUGS, &ia);
    size_t np =
        stk__arg_given(node, A_POL_PROBS) ? stk__arg_floats(node, NULL, A_POL_PROBS, &pp) : 0;
    size_t nb = stk__arg_given(node, A_POL_BINS) ? stk__arg_ints(node, NULL, A_POL_BINS, &ib) : 0;
    cols = (int)stk__arg_int(node, NULL, A_POL_STAGES);
    if (cols < 1 || n % (size_t)cols || np != n || nb != n || n == 0 || n > 1u << 20)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "a custom policy needs "
                        "policy_stages >= 1 and policy_augmentations, policy_probabilities and "
                        "policy_magnitude_bins of one length, a multiple of it (got %zu, %zu, "
                        "%zu, stages %d)",
                        n, np, nb, cols);
    rows = (int)(n / (size_t)cols);
  } else if (st->policy) {
    rows = st->policy->num_sub, cols = st->policy->stages;
  } else {
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "policy \"auto_augment\" needs "
                      "policy_augmentations, policy_probabilities and policy_magnitude_bins");
  }
  size_t cells = (size_t)rows * (size_t)cols;
  st->cells_aug = stk__malloc(cells * sizeof(int32_t), "policy cells");
  st->cells_bin = stk__malloc(cells * sizeof(int32_t), "policy cells");
  st->cells_prob = stk__malloc(cells * sizeof(float), "policy cells");
  if (!st->cells_aug || !st->cells_bin || !st->cells_prob) return STK_ERR_OUT_OF_MEMORY;
  if (ia) {
    for (size_t i = 0; i < cells; i++)
      st->cells_aug[i] = (int32_t)ia[i], st->cells_bin[i] = (int32_t)ib[i],
      st->cells_prob[i] = (float)pp[i];
  } else {
    stk__aa_policy_cells(st->policy, &st->suite, st->cells_aug, st->cells_prob, st->cells_bin);
  }
  st->sampler.num_sub = rows, st->sampler.stages = cols;
  st->sampler.aug = st->cells_aug, st->sampler.prob = st->cells_prob,
  st->sampler.bin = st->cells_bin;
  return STK_OK;
}

static stk_status config_init(stk__node *node, aa_state *st) {
  STK_TRY(parse_scheme(node, st));
  stk__aa_translate tr;
  STK_TRY(translate_args(node, st, &tr));
  STK_TRY(build_list(node, st, &tr));
  int64_t bins = stk__arg_int(node, NULL, A_BINS);
  st->num_bins = bins > 0     ? (int)(bins > 100000 ? 100000 : bins)
                 : st->policy ? st->policy->num_bins
                              : stk__aa_default_bins(st->scheme, st->conv);
  st->sampler = (stk__aa_sampler){st->scheme,
                                  (int)stk__arg_int(node, NULL, A_N),
                                  (int)stk__arg_int(node, NULL, A_M),
                                  st->num_bins,
                                  st->suite.count,
                                  0,
                                  0,
                                  NULL,
                                  NULL,
                                  NULL};
  if (st->scheme == STK__AA_AUTO_AUGMENT) STK_TRY(build_cells(node, st));
  stk_status s = stk__aa_sampler_check(&st->sampler);
  if (s != STK_OK) return stk__wrap(s, "%s", stk__node_name(node));
  return STK_OK;
}

static stk_status state_new(stk__node *node, aa_state **out) {
  aa_state *st = stk__calloc(1, sizeof *st, "auto_augment state");
  if (!st) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = st;
  *out = st;
  return STK_OK;
}

/* Writes a stage's row of the decisions output. */
static void decision_row(float *row, const stk__aa_decision *d, const aa_state *st, double param) {
  bool on = d->index >= 0 && st->builtin && d->index < st->suite.count;
  row[0] = (float)d->index;
  row[1] = on ? (float)st->suite.e[d->index].op : -1.0f;
  row[2] = (float)d->bin;
  row[3] = (float)d->negate;
  row[4] = (float)param;
}

static stk_status decisions_output(stk__sample *s, int index, int stages, float **rows) {
  stk__tensor *t;
  int64_t shape[2] = {stages, DEC_COLS};
  STK_TRY(stk__output(s, index, STK_DTYPE_FLOAT32, 2, shape, NULL, &t));
  *rows = t->data;
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* auto_augment.choose                                                                */
/* ---------------------------------------------------------------------------------- */

static const stk_arg_schema choose_args[] = {COMMON_ARGS};
STK__CHECK_ARGS(choose_args, A_DECISIONS); /* choose takes the shared part */

static stk_status choose_init(stk__node *node) {
  aa_state *st;
  STK_TRY(state_new(node, &st));
  return config_init(node, st);
}

static stk_status choose_run(stk__node *node, stk__sample *s) {
  const aa_state *st = *stk__node_state(node);
  stk__philox g;
  stk__sample_rng(node, s, &g);
  int stages = stk__aa_num_stages(&st->sampler);
  stk__aa_decision dec[STK__AA_MAX_STAGES];
  stk__aa_draw(&st->sampler, &g, dec);
  float *rows;
  STK_TRY(decisions_output(s, 0, stages, &rows));
  for (int i = 0; i < stages; i++) {
    double mag = 0.0;
    if (dec[i].index >= 0 && st->builtin)
      mag = stk__aa_magnitude(&st->suite.e[dec[i].index], st->conv, dec[i].bin, st->num_bins,
                              dec[i].negate);
    decision_row(rows + i * DEC_COLS, &dec[i], st, mag);
  }
  return STK_OK;
}

static const stk_port_schema dec_out[] = {
    {"decisions",
     "float32 [stages, 5] per sample: augmentation index (-1: none), operation "
     "id (-1: custom), magnitude bin, negate, signed magnitude"}};
static const stk_op_schema choose_schema = {
    .name = "auto_augment.choose",
    .doc =
        "Draws each sample's automatic-augmentation decisions: RandAugment (n augmentations "
        "uniformly from the list, magnitude bin m, a random sign each), TrivialAugmentWide (one "
        "augmentation, a uniform bin and sign) or AutoAugment (a uniform sub-policy, each stage "
        "applied with its probability). auto_augment.apply (fused) and the per-sample "
        "selection of stoker.auto_aug (custom augmentations) both read these decisions, so they "
        "agree for one seed.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = 1,
    .outputs = dec_out,
    .num_args = sizeof choose_args / sizeof choose_args[0],
    .args = choose_args,
};
const stk__op_def stk__op_auto_augment_choose = {
    .schema = &choose_schema, .init = choose_init, .destroy = aa_destroy, .run_sample = choose_run};

/* ---------------------------------------------------------------------------------- */
/* Warp settings shared by apply and augment                                          */
/* ---------------------------------------------------------------------------------- */

#define WARP_ARGS(fill_doc)                                                                    \
  {"fill_value", STK_ARG_FLOATS, 0, NULL, 0, 0, NULL, fill_doc},                               \
      {"border",                                                                               \
       STK_ARG_STRING,                                                                         \
       0,                                                                                      \
       "\"constant\"",                                                                         \
       0,                                                                                      \
       0,                                                                                      \
       "constant|clamp",                                                                       \
       "outside the image: fill_value, or the edge pixels repeated (DALI's fill_value=None)"}, \
  {                                                                                            \
    "interp_type", STK_ARG_STRING, 0, "\"\"", 0, 0, "|nearest|linear|cubic",                   \
        "interpolation of the image in shears, translations and rotations; \"\": the "         \
        "convention's (DALI linear, torchvision nearest)"                                      \
  }
#define FILL_DOC                                                                        \
  "fill of the image outside its source in geometric operations, one value or one per " \
  "channel; default 128 (DALI) or 0 (torchvision)"

static stk_status warp_init(stk__node *node, aa_state *st, int interp_arg, int border_arg) {
  const char *it = stk__arg_string(node, interp_arg);
  st->interp = st->conv == STK__AA_TORCHVISION ? STK__INTERP_NEAREST : STK__INTERP_LINEAR;
  if (*it && (!stk__interp_parse(it, &st->interp) || st->interp == STK__INTERP_LANCZOS3))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "interp_type \"%s\": nearest, "
                      "linear or cubic",
                      it);
  st->constant = strcmp(stk__arg_string(node, border_arg), "constant") == 0;
  return STK_OK;
}

/* The image's fill into f[0..c): fill_value broadcast to c channels, or the convention's
 * default. */
static stk_status fill_into(stk__node *node, stk__sample *s, const aa_state *st, int arg, int64_t c,
                            float *f) {
  const double *v = NULL;
  size_t n = stk__arg_given(node, arg) ? stk__arg_floats(node, s, arg, &v) : 0;
  if (n != 0 && n != 1 && n != (size_t)c)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "fill_value has %zu values; expected 1 "
                      "or %lld",
                      n, (long long)c);
  double def = st->conv == STK__AA_TORCHVISION ? 0.0 : 128.0;
  for (int64_t k = 0; k < c; k++) f[k] = (float)(n == 0 ? def : v[n == 1 ? 0 : k]);
  return STK_OK;
}

/* The same in the sample's scratch. */
static stk_status fill_values(stk__node *node, stk__sample *s, const aa_state *st, int arg,
                              int64_t c, float **out) {
  float *f = stk__scratch(s, (size_t)c * sizeof(float));
  if (!f) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for the fill");
  *out = f;
  return fill_into(node, s, st, arg, c, f);
}

static void *sample_scratch(void *ctx, size_t bytes) {
  return stk__scratch(ctx, bytes ? bytes : 1);
}

/* The [height, width] relative translations scale with: `shape` (first two values) or
 * the image's. */
static stk_status shape_hw(stk__node *node, stk__sample *s, int arg, const stk__image *img,
                           double hw[2]) {
  hw[0] = (double)img->h, hw[1] = (double)img->w;
  if (!stk__arg_given(node, arg)) return STK_OK;
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  if (n < 2 || !(v[0] >= 0 && v[1] >= 0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "shape needs [height, width, ...], "
                      "got %zu values",
                      n);
  hw[0] = v[0], hw[1] = v[1];
  return STK_OK;
}

/* The parameter vector of a geometric operation from its scalar parameter. */
static void geometric_vec(stk__aa_op op, double p, double v[2]) {
  bool y = op == STK__AA_SHEAR_Y || op == STK__AA_TRANSLATE_Y;
  v[0] = y ? 0.0 : p, v[1] = y ? p : 0.0;
}

/* ---------------------------------------------------------------------------------- */
/* auto_augment.apply                                                                 */
/* ---------------------------------------------------------------------------------- */

static const stk_arg_schema apply_args[] = {
    COMMON_ARGS,
    {"decisions", STK_ARG_INTS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "the sample's decisions from auto_augment.choose (same policy arguments); drawn here "
     "from this operator's stream when not fed"},
    {"shape", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "[height, width, ...] that relative translations scale with; default: the image's"},
    WARP_ARGS(FILL_DOC),
    {"with_mask", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "input 1 is a uint8 mask (HW or HWC, the image's size): moved by the same geometric "
     "operations with nearest interpolation and fill 0, never recoloured"},
    {"with_boxes", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "the last input is float32 boxes [N, 4] (left, top, right, bottom): each becomes the "
     "box enclosing its moved corners, clipped to the image"},
    {"normalized_boxes", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "boxes are fractions of the width and height (else pixels)"},
};
STK__CHECK_ARGS(apply_args, APPLY_ARGS_COUNT_);

static stk_status apply_init(stk__node *node) {
  aa_state *st;
  STK_TRY(state_new(node, &st));
  STK_TRY(config_init(node, st));
  if (!st->builtin)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "the fused operator applies the "
                      "built-in augmentations only (give `augmentations` names, not "
                      "num_augmentations)");
  STK_TRY(warp_init(node, st, A_INTERP, A_BORDER));
  st->with_mask = stk__arg_bool(node, NULL, A_WITH_MASK);
  st->with_boxes = stk__arg_bool(node, NULL, A_WITH_BOXES);
  st->normalized = stk__arg_bool(node, NULL, A_NORMALIZED);
  int want = 1 + st->with_mask + st->with_boxes;
  if (stk__node_num_inputs(node) != want)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "expects %d inputs (image%s%s), "
                      "got %d",
                      want, st->with_mask ? ", mask" : "", st->with_boxes ? ", boxes" : "",
                      stk__node_num_inputs(node));
  return STK_OK;
}

/* This sample's decisions: fed, or drawn. */
static stk_status sample_decisions(stk__node *node, stk__sample *s, const aa_state *st,
                                   stk__aa_decision *dec, int stages) {
  if (!stk__arg_given(node, A_DECISIONS)) {
    stk__philox g;
    stk__sample_rng(node, s, &g);
    stk__aa_draw(&st->sampler, &g, dec);
    return STK_OK;
  }
  const int64_t *v;
  size_t n = stk__arg_ints(node, s, A_DECISIONS, &v);
  if (n != (size_t)stages * DEC_COLS)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "decisions has %zu values; expected "
                      "%d stages x %d (auto_augment.choose with the same policy)",
                      n, stages, DEC_COLS);
  for (int i = 0; i < stages; i++) {
    const int64_t *r = v + i * DEC_COLS;
    if (r[0] < -1 || r[0] >= st->suite.count || r[2] < 0 || r[2] >= st->num_bins)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "decisions row %d (%lld, bin %lld) "
                        "does not fit the list of %d or %d bins",
                        i, (long long)r[0], (long long)r[2], st->suite.count, st->num_bins);
    dec[i] = (stk__aa_decision){(int32_t)r[0], (int32_t)r[2], r[3] != 0};
  }
  return STK_OK;
}

/* A sample's program: its decisions (fed, or drawn from the node's Philox stream) and
 * each stage's operation and parameter for an image of h x w, with the decisions
 * output rows. The one function both backends call, so the CPU and the GPU apply the
 * same sequence. op[i] is -1 for a stage that does nothing. */
static stk_status sample_plan(stk__node *node, stk__sample *s, const aa_state *st,
                              const stk__image *img, int stages, int *op, double *param,
                              float *rows) {
  stk__aa_decision dec[STK__AA_MAX_STAGES];
  STK_TRY(sample_decisions(node, s, st, dec, stages));
  double hw[2];
  STK_TRY(shape_hw(node, s, A_SHAPE, img, hw));
  for (int i = 0; i < stages; i++) {
    param[i] = 0.0, op[i] = -1;
    if (dec[i].index >= 0) {
      const stk__aa_entry *e = &st->suite.e[dec[i].index];
      param[i] = stk__aa_param(e, st->conv, dec[i].bin, st->num_bins, dec[i].negate, hw[0], hw[1]);
      op[i] = (int)e->op;
    }
    decision_row(rows + i * DEC_COLS, &dec[i], st, param[i]);
  }
  return STK_OK;
}

/* An image-sized pair of ping-pong buffers and the current contents. */
typedef struct {
  stk__image cur, buf[2];
  int next;
} pingpong;

static stk_status pingpong_init(stk__node *node, stk__sample *s, const stk__image *in,
                                pingpong *pp) {
  size_t bytes = (size_t)(in->h * in->w * in->c);
  pp->cur = *in, pp->next = 0;
  for (int i = 0; i < 2; i++) {
    pp->buf[i] = *in;
    if (!(pp->buf[i].data = stk__scratch(s, bytes ? bytes : 1)))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for the image");
  }
  return STK_OK;
}

static const stk__image *pingpong_dst(pingpong *pp) { return &pp->buf[pp->next]; }
static void pingpong_swap(pingpong *pp) {
  pp->cur = pp->buf[pp->next];
  pp->next ^= 1;
}

typedef struct {
  pingpong img, mask;
  bool has_mask;
  float *boxes;
  int64_t num_boxes;
  float *fill, *row, zero[4];
  double hw[2];
} sequence;

/* Applies one operation to the image (and its targets). */
static stk_status apply_one(stk__node *node, stk__sample *s, const aa_state *st, sequence *q,
                            stk__aa_op op, double param) {
  if (!stk__aa_op_is_geometric(op)) {
    STK_TRY(stk__sample_wrap(stk__aa_color(op, st->conv, &param, 1, &q->img.cur,
                                           pingpong_dst(&q->img), sample_scratch, s),
                             node, s));
    pingpong_swap(&q->img);
    return STK_OK;
  }
  double v[2], m[6];
  geometric_vec(op, param, v);
  if (op == STK__AA_ROTATE) v[0] = param;
  const stk__image *im = &q->img.cur;
  STK_TRY(stk__sample_wrap(stk__aa_matrix(op, st->conv, v, im->h, im->w, m), node, s));
  STK_TRY(stk__sample_wrap(
      stk__aa_warp(im, pingpong_dst(&q->img), m, st->interp, st->constant, q->fill, q->row), node,
      s));
  pingpong_swap(&q->img);
  if (q->has_mask) {
    const stk__image *mk = &q->mask.cur;
    float zero[STK__AA_MAX_SUITE] = {0};
    if (mk->c > STK__AA_MAX_SUITE)
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "masks have at most %d channels",
                        STK__AA_MAX_SUITE);
    STK_TRY(stk__sample_wrap(
        stk__aa_warp(mk, pingpong_dst(&q->mask), m, STK__INTERP_NEAREST, true, zero, q->row), node,
        s));
    pingpong_swap(&q->mask);
  }
  if (q->num_boxes)
    STK_TRY(stk__sample_wrap(stk__aa_boxes(q->boxes, q->num_boxes, m, im->h, im->w, st->normalized),
                             node, s));
  return STK_OK;
}

/* Opens the mask and boxes inputs and the outputs 1 and 2 (empty when absent). */
static stk_status open_targets(stk__node *node, stk__sample *s, const aa_state *st,
                               const stk__image *img, sequence *q) {
  static const stk_dtype u8[] = {STK_DTYPE_UINT8};
  int next_input = 1;
  stk__tensor *t;
  q->has_mask = st->with_mask;
  if (st->with_mask) {
    stk__image mk;
    STK_TRY(stk__image_input(node, s, next_input++, u8, 1, &mk));
    if (mk.h != img->h || mk.w != img->w)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the mask is %lldx%lld, the image "
                        "%lldx%lld",
                        (long long)mk.h, (long long)mk.w, (long long)img->h, (long long)img->w);
    STK_TRY(pingpong_init(node, s, &mk, &q->mask));
  }
  q->num_boxes = 0;
  if (st->with_boxes) {
    const stk__tensor *b = stk__input(s, next_input);
    bool ok = b->dtype == STK_DTYPE_FLOAT32 &&
              ((b->ndim == 2 && b->shape[1] == 4) || (b->ndim == 1 && b->shape[0] == 0));
    if (!ok) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "boxes must be float32 [N, 4]");
    q->num_boxes = b->ndim == 2 ? b->shape[0] : 0;
    int64_t shape[2] = {q->num_boxes, 4};
    STK_TRY(stk__output(s, 2, STK_DTYPE_FLOAT32, 2, shape, NULL, &t));
    memcpy(t->data, b->data, (size_t)q->num_boxes * 4 * sizeof(float));
    q->boxes = t->data;
  } else {
    int64_t shape[2] = {0, 4};
    STK_TRY(stk__output(s, 2, STK_DTYPE_FLOAT32, 2, shape, NULL, &t));
  }
  return STK_OK;
}

/* Copies the final contents of a ping-pong into output `index` (input `in_index`'s
 * layout and shape). */
static stk_status emit(stk__sample *s, int index, int in_index, const pingpong *pp) {
  const stk__tensor *in = stk__input(s, in_index);
  stk__tensor *out;
  STK_TRY(stk__output(s, index, STK_DTYPE_UINT8, in->ndim, in->shape, in->layout, &out));
  memcpy(out->data, pp->cur.data, (size_t)(pp->cur.h * pp->cur.w * pp->cur.c));
  return STK_OK;
}

static stk_status apply_run(stk__node *node, stk__sample *s) {
  const aa_state *st = *stk__node_state(node);
  static const stk_dtype u8[] = {STK_DTYPE_UINT8};
  int stages = stk__aa_num_stages(&st->sampler);
  stk__image img;
  STK_TRY(stk__image_input(node, s, 0, u8, 1, &img));
  sequence q = {0};
  STK_TRY(pingpong_init(node, s, &img, &q.img));
  STK_TRY(open_targets(node, s, st, &img, &q));
  STK_TRY(fill_values(node, s, st, A_FILL, img.c, &q.fill));
  int64_t wc = img.w * (q.has_mask && q.mask.cur.c > img.c ? q.mask.cur.c : img.c);
  if (!(q.row = stk__scratch(s, (size_t)(wc ? wc : 1) * sizeof(float))))
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for a row");
  float *rows;
  STK_TRY(decisions_output(s, 3, stages, &rows));
  int op[STK__AA_MAX_STAGES];
  double param[STK__AA_MAX_STAGES];
  STK_TRY(sample_plan(node, s, st, &img, stages, op, param, rows));
  /* the last operation writes straight into the output (no final copy): it is the
   * ping-pong buffer that operation number `steps` - 1 writes */
  int steps = 0;
  for (int i = 0; i < stages; i++) steps += op[i] >= 0;
  const stk__tensor *in = stk__input(s, 0);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, in->ndim, in->shape, in->layout, &out));
  if (steps == 0)
    memcpy(out->data, img.data, (size_t)(img.h * img.w * img.c));
  else
    q.img.buf[(steps - 1) % 2].data = out->data;
  for (int i = 0; i < stages; i++)
    if (op[i] >= 0) STK_TRY(apply_one(node, s, st, &q, (stk__aa_op)op[i], param[i]));
  if (q.has_mask) return emit(s, 1, 1, &q.mask);
  stk__tensor *t;
  return stk__output(s, 1, STK_DTYPE_UINT8, 1, (int64_t[]){0}, NULL, &t);
}

/* ---------------------------------------------------------------------------------- */
/* auto_augment.apply on the GPU                                                      */
/* ---------------------------------------------------------------------------------- */

/* The batch's programs, tables and float payload (decisions rows and moved boxes), as
 * the GPU entry point takes them (api_autoaug.h). */
typedef struct {
  stk_gpu_aa_sample *smp;
  stk_gpu_aa_step *steps;
  uint8_t *luts;
  float *floats;
  int num_steps, num_luts, num_floats;
} gpu_prog;

/* Boxes of sample i (host input `index`) into the payload; *count boxes. */
static stk_status gpu_boxes_in(stk__node *node, stk__gpu_batch *b, int index, size_t i,
                               const float **data, int64_t *count) {
  stk_tensor_desc d;
  STK_TRY(stk_tensor_list_sample(stk__gpu_input(b, index), i, &d));
  bool ok = d.dtype == STK_DTYPE_FLOAT32 &&
            ((d.ndim == 2 && d.shape[1] == 4) || (d.ndim == 1 && d.shape[0] == 0));
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "boxes must be "
                      "float32 [N, 4]");
  *count = d.ndim == 2 ? d.shape[0] : 0;
  *data = d.data;
  return STK_OK;
}

/* Plans sample i: its steps, tables and payload; the moved boxes go to the payload. */
static stk_status gpu_plan_sample(stk__node *node, stk__gpu_batch *b, const aa_state *st,
                                  const stk_tensor_list *in, const stk_tensor_list *mask, size_t i,
                                  int stages, gpu_prog *g) {
  stk__sample *s = stk__gpu_sample(b, i);
  stk_gpu_aa_sample *q = &g->smp[i];
  int h, w, c;
  void *data;
  STK_TRY(stk__gpu_image_dims(node, in, i, &h, &w, &c, &data));
  q->src = data, q->h = h, q->w = w, q->c = c;
  if (mask) {
    int mh, mw, mc;
    STK_TRY(stk__gpu_image_dims(node, mask, i, &mh, &mw, &mc, &data));
    if (mh != h || mw != w)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the mask is %dx%d, the image %dx%d", mh,
                        mw, h, w);
    q->mask_src = data, q->mask_c = mc;
  }
  float fill[STK_GPU_AA_MAX_CHANNELS];
  STK_TRY(fill_into(node, s, st, A_FILL, c, fill));
  memcpy(q->fill, fill, sizeof fill);
  stk__convert(q->fill8, STK_DTYPE_UINT8, fill, STK_DTYPE_FLOAT32, (size_t)c); /* as the CPU warp */
  stk__image img = {NULL, STK_DTYPE_UINT8, h, w, c};
  int op[STK__AA_MAX_STAGES];
  double param[STK__AA_MAX_STAGES];
  q->dec_off = g->num_floats, q->dec_count = stages * DEC_COLS;
  STK_TRY(sample_plan(node, s, st, &img, stages, op, param, g->floats + g->num_floats));
  g->num_floats += stages * DEC_COLS;
  float *boxes = NULL;
  int64_t nb = 0;
  if (st->with_boxes) {
    const float *bin;
    STK_TRY(gpu_boxes_in(node, b, 1 + st->with_mask, i, &bin, &nb));
    boxes = g->floats + g->num_floats;
    memcpy(boxes, bin, (size_t)nb * 4 * sizeof(float));
    q->box_off = g->num_floats, q->box_count = (int)(nb * 4);
    g->num_floats += (int)(nb * 4);
  }
  q->first_step = g->num_steps;
  for (int k = 0; k < stages; k++) {
    if (op[k] < 0) continue;
    double m[6];
    bool uses_lut = false;
    stk_gpu_aa_step *step = &g->steps[g->num_steps];
    STK_TRY(stk__sample_wrap(stk__aa_gpu_step((stk__aa_op)op[k], st->conv, param[k], h, w, step, m,
                                              g->luts + (size_t)g->num_luts * 256, &uses_lut),
                             node, s));
    if (uses_lut) step->lut = g->num_luts++;
    if (step->code == STK_GPU_AA_COPY) continue; /* identity: nothing to run */
    g->num_steps++;
    if (step->code == STK_GPU_AA_WARP && nb)
      STK_TRY(stk__sample_wrap(stk__aa_boxes(boxes, nb, m, h, w, st->normalized), node, s));
  }
  if (g->num_steps == q->first_step) g->steps[g->num_steps++] = (stk_gpu_aa_step){0};
  q->num_steps = g->num_steps - q->first_step;
  return STK_OK;
}

/* Output lists: image (input's shapes), mask, boxes, decisions. */
static stk_status gpu_outputs(stk__gpu_batch *b, const aa_state *st, const stk_tensor_list *in,
                              const stk_tensor_list *mask, gpu_prog *g, int stages,
                              stk_tensor_list **outs) {
  size_t n = stk__gpu_batch_size(b);
  int ndim = stk_tensor_list_ndim(in), mdim = mask ? stk_tensor_list_ndim(mask) : 1;
  int64_t *shapes = stk__calloc(n * 4, sizeof(int64_t), "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  stk_status rc = STK_OK;
  const stk_tensor_list *src[2] = {in, mask};
  int dims[2] = {ndim, mdim};
  for (int o = 0; o < 2 && rc == STK_OK; o++) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d = {0};
      if (src[o]) stk_tensor_list_sample(src[o], i, &d);
      for (int k = 0; k < dims[o]; k++)
        shapes[i * (size_t)dims[o] + (size_t)k] = src[o] ? d.shape[k] : 0;
    }
    rc = stk__gpu_alloc_list(b, STK_DTYPE_UINT8, dims[o], shapes,
                             src[o] ? stk_tensor_list_layout(src[o]) : "",
                             stk__gpu_shapes_equal(shapes, n, dims[o]), &outs[o]);
  }
  for (size_t i = 0; i < n && rc == STK_OK; i++)
    shapes[i * 2] = g->smp[i].box_count / 4, shapes[i * 2 + 1] = 4;
  if (rc == STK_OK)
    rc = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, 2, shapes, "",
                             stk__gpu_shapes_equal(shapes, n, 2), &outs[2]);
  for (size_t i = 0; i < n && rc == STK_OK; i++)
    shapes[i * 2] = stages, shapes[i * 2 + 1] = DEC_COLS;
  if (rc == STK_OK) rc = stk__gpu_alloc_list(b, STK_DTYPE_FLOAT32, 2, shapes, "", true, &outs[3]);
  free(shapes);
  (void)st;
  return rc;
}

/* Points the programs at the outputs and at one scratch block (image and mask
 * ping-pong buffers of every sample); *scratch is the block to free. */
static stk_status gpu_bind(stk__gpu_batch *b, gpu_prog *g, stk_tensor_list **outs, void **scratch) {
  size_t n = stk__gpu_batch_size(b), total = 0;
  for (size_t i = 0; i < n; i++) {
    const stk_gpu_aa_sample *q = &g->smp[i];
    size_t px = (size_t)q->h * (size_t)q->w;
    total += ((px * (size_t)q->c + 255) & ~(size_t)255) +
             (q->mask_src ? ((px * (size_t)q->mask_c + 255) & ~(size_t)255) : 0);
  }
  stk__gpu *gpu = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  *scratch = NULL;
  STK_TRY(stk__gpu_check(gpu->api->device_alloc(gpu->ctx, total ? total : 256, stk__gpu_stream(b),
                                                scratch, err, sizeof err),
                         err));
  char *at = *scratch;
  for (size_t i = 0; i < n; i++) {
    stk_gpu_aa_sample *q = &g->smp[i];
    size_t px = (size_t)q->h * (size_t)q->w;
    stk_tensor_desc d;
    stk_tensor_list_sample(outs[0], i, &d), q->dst = d.data;
    q->scratch = (uint8_t *)at, at += (px * (size_t)q->c + 255) & ~(size_t)255;
    if (q->mask_src) {
      stk_tensor_list_sample(outs[1], i, &d), q->mask_dst = d.data;
      q->mask_scratch = (uint8_t *)at, at += (px * (size_t)q->mask_c + 255) & ~(size_t)255;
    }
    stk_tensor_list_sample(outs[2], i, &d), q->box_dst = d.data;
    stk_tensor_list_sample(outs[3], i, &d), q->dec_dst = d.data;
    /* an empty image (no bytes, NULL pointers) still needs valid pointers for the
     * descriptor check; nothing is read or written through them */
    if (!q->src) q->src = q->scratch;
    if (!q->dst) q->dst = q->scratch;
    if (q->mask_src && !q->mask_dst) q->mask_dst = q->mask_scratch;
  }
  return STK_OK;
}

/* The GPU kernel's interpolation code of the operator's. */
static int gpu_interp(int interp) {
  return interp == STK__INTERP_NEAREST  ? STK_GPU_INTERP_NEAREST
         : interp == STK__INTERP_LINEAR ? STK_GPU_INTERP_LINEAR
                                        : STK_GPU_INTERP_CUBIC;
}

/* The fused program on the GPU: the host draws and encodes every sample's sequence
 * (sample_plan, as the CPU), one call runs the batch. */
static stk_status apply_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const aa_state *st = *stk__node_state(node);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_AUTOAUG));
  size_t n = stk__gpu_batch_size(b);
  int stages = stk__aa_num_stages(&st->sampler);
  stk_tensor_list *in = NULL, *mask = NULL, *outs[4] = {NULL, NULL, NULL, NULL};
  bool owned = false, mask_owned = false;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_status rc =
      stk_tensor_list_dtype(in) == STK_DTYPE_UINT8
          ? STK_OK
          : STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "expects uint8 images, got %s",
                       stk_dtype_name(stk_tensor_list_dtype(in)));
  if (rc == STK_OK && st->with_mask) rc = stk__gpu_device_input(b, 1, &mask, &mask_owned);
  if (rc == STK_OK && mask && stk_tensor_list_dtype(mask) != STK_DTYPE_UINT8)
    rc = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "the mask must be uint8");
  if (rc == STK_OK && st->with_boxes &&
      stk_tensor_list_storage(stk__gpu_input(b, 1 + st->with_mask)) == STK_STORAGE_DEVICE)
    rc = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                    "boxes must come from the CPU (they are "
                    "moved on the host)");
  size_t total_boxes = 0;
  for (size_t i = 0; i < n && rc == STK_OK && st->with_boxes; i++) {
    const float *bd;
    int64_t nb;
    rc = gpu_boxes_in(node, b, 1 + st->with_mask, i, &bd, &nb);
    total_boxes += (size_t)nb;
  }
  size_t max_steps = n * (size_t)(stages > 0 ? stages : 1);
  gpu_prog g = {0};
  g.smp = stk__calloc(n ? n : 1, sizeof *g.smp, "GPU programs");
  g.steps = stk__calloc(max_steps + 1, sizeof *g.steps, "GPU programs");
  g.luts = stk__calloc(max_steps + 1, 256, "GPU tables");
  g.floats = stk__calloc(n * (size_t)stages * DEC_COLS + total_boxes * 4 + 1, sizeof(float),
                         "GPU payload");
  if (rc == STK_OK && (!g.smp || !g.steps || !g.luts || !g.floats)) rc = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && rc == STK_OK; i++)
    rc = gpu_plan_sample(node, b, st, in, mask, i, stages, &g);
  if (rc == STK_OK) rc = gpu_outputs(b, st, in, mask, &g, stages, outs);
  void *scratch = NULL;
  if (rc == STK_OK) rc = gpu_bind(b, &g, outs, &scratch);
  stk__gpu *gpu = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  if (rc == STK_OK) {
    stk_gpu_aa_args args = {.interp = gpu_interp(st->interp),
                            .constant = st->constant,
                            .num_steps = g.num_steps,
                            .steps = g.steps,
                            .num_luts = g.num_luts,
                            .luts = g.luts,
                            .num_floats = g.num_floats,
                            .floats = g.floats};
    rc = stk__gpu_op_check(node,
                           stk_gpu_run_autoaug(gpu->api, gpu->ctx, (int)n, g.smp, &args,
                                               stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  if (scratch) gpu->api->device_free(gpu->ctx, scratch, stk__gpu_stream(b), NULL, 0);
  free(g.smp), free(g.steps), free(g.luts), free(g.floats);
  if (mask_owned) stk_tensor_list_release(mask);
  for (int o = 1; o < 4; o++) {
    if (rc == STK_OK)
      rc = stk__gpu_output(b, o, outs[o]), outs[o] = NULL;
    else
      stk_tensor_list_release(outs[o]);
  }
  return stk__gpu_finish(b, in, owned, outs[0], rc);
}

static const stk_port_schema apply_in[] = {
    {"input", "uint8 HWC (or HW) image"},
    {"mask", "with_mask: uint8 mask of the image's size (HW or HWC)"},
    {"boxes", "with_boxes: float32 [N, 4] boxes (left, top, right, bottom)"}};
static const stk_port_schema apply_out[] = {
    {"output", "the augmented image"},
    {"mask", "the moved mask (an empty uint8 [0] without with_mask)"},
    {"boxes", "the moved boxes (float32 [0, 4] without with_boxes)"},
    {"decisions",
     "float32 [stages, 5]: augmentation index (-1: none), operation id, bin, "
     "negate, and the parameter applied (pixels for translations)"}};
static const stk_op_schema apply_schema = {
    .name = "auto_augment.apply",
    .doc =
        "Automatic augmentation in one operator (the fused path): each uint8 image goes through "
        "its own sequence of (operation, magnitude) decisions -- RandAugment, "
        "TrivialAugmentWide or an AutoAugment policy, with DALI's or torchvision's magnitudes "
        "and operation definitions -- one pass per operation. A mask follows the geometric "
        "operations (nearest, fill 0) and boxes are moved with them. Outputs: image, mask, "
        "boxes, decisions.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 3,
    .inputs = apply_in,
    .num_outputs = 4,
    .outputs = apply_out,
    .num_args = sizeof apply_args / sizeof apply_args[0],
    .args = apply_args,
    .gpu_check =
        "# atol=1 mismatch=0.002\n"
        "o, a, b, c = auto_augment.apply(IN, policy=\"rand_augment\", n=2, m=9, seed=7, device=@)\n"
        "return o",
};
const stk__op_def stk__op_auto_augment_apply = {.schema = &apply_schema,
                                                .init = apply_init,
                                                .destroy = aa_destroy,
                                                .run_sample = apply_run,
                                                .run_gpu = apply_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* auto_augment.augment                                                               */
/* ---------------------------------------------------------------------------------- */

enum {
  G_OP,
  G_PARAM,
  G_CONVENTION,
  G_SHAPE,
  G_RELATIVE,
  G_FILL,
  G_BORDER,
  G_INTERP,
  AUGMENT_ARGS_COUNT_
};
static const stk_arg_schema augment_args[] = {
    {"op", STK_ARG_STRING, STK_ARGF_REQUIRED, NULL, 0, 0, STK__AA_OP_CHOICES, "the operation"},
    {"param", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "the operation's parameter (see auto_augment.apply's decisions): [sx, sy] for shears, "
     "[tx, ty] for translations (pixels, or fractions with `relative`), degrees, factors, "
     "DALI's sharpness s or 3x3 kernel, DALI's posterize mask / torchvision's bits, "
     "thresholds, shifts"},
    CONVENTION_ARG,
    {"shape", STK_ARG_FLOATS, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "[height, width, ...] for relative translations; default: the image's"},
    {"relative", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "translations: param is a fraction of the shape (DALI: offset = param * extent in "
     "float32; torchvision: truncated to an integer)"},
    WARP_ARGS(FILL_DOC),
};
STK__CHECK_ARGS(augment_args, AUGMENT_ARGS_COUNT_);

static stk_status augment_init(stk__node *node) {
  aa_state *st;
  STK_TRY(state_new(node, &st));
  if (!stk__aa_convention_parse(stk__arg_string(node, G_CONVENTION), &st->conv) ||
      !stk__aa_op_parse(stk__arg_string(node, G_OP), &st->op))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "bad op or convention");
  return warp_init(node, st, G_INTERP, G_BORDER);
}

/* The parameter vector (up to 9 values) of this sample. */
static stk_status augment_param(stk__node *node, stk__sample *s, const aa_state *st,
                                const stk__image *img, double p[9], int *np) {
  const double *v = NULL;
  size_t n = stk__arg_given(node, G_PARAM) ? stk__arg_floats(node, s, G_PARAM, &v) : 0;
  bool needs = st->op != STK__AA_IDENTITY && st->op != STK__AA_INVERT &&
               st->op != STK__AA_EQUALIZE && st->op != STK__AA_AUTO_CONTRAST;
  bool ok = !needs || n == 1 || (n == 2 && stk__aa_op_is_geometric(st->op)) ||
            (n == 9 && st->op == STK__AA_SHARPNESS && st->conv == STK__AA_DALI);
  if (!ok)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%s takes a parameter of %s, got %zu "
                      "values",
                      stk__aa_op_name(st->op),
                      stk__aa_op_is_geometric(st->op) ? "1 or 2 values" : "1 value", n);
  *np = (int)n;
  for (size_t i = 0; i < n; i++) p[i] = v[i];
  if (!stk__aa_op_is_geometric(st->op)) return STK_OK;
  if (n == 1 && st->op != STK__AA_ROTATE) geometric_vec(st->op, v[0], p), *np = 2;
  if (stk__arg_bool(node, s, G_RELATIVE) &&
      (st->op == STK__AA_TRANSLATE_X || st->op == STK__AA_TRANSLATE_Y)) {
    double hw[2];
    STK_TRY(shape_hw(node, s, G_SHAPE, img, hw));
    float ext = (float)(st->op == STK__AA_TRANSLATE_X ? hw[1] : hw[0]);
    for (int i = 0; i < 2; i++) {
      float off = (float)p[i] * ext; /* float32, as the product of DALI's param and shape */
      p[i] = st->conv == STK__AA_TORCHVISION ? trunc((double)off) : (double)off;
    }
  }
  return STK_OK;
}

static stk_status augment_run(stk__node *node, stk__sample *s) {
  const aa_state *st = *stk__node_state(node);
  static const stk_dtype u8[] = {STK_DTYPE_UINT8};
  stk__image img;
  STK_TRY(stk__image_input(node, s, 0, u8, 1, &img));
  double p[9] = {0};
  int np = 0;
  STK_TRY(augment_param(node, s, st, &img, p, &np));
  stk__image dst = img;
  STK_TRY(stk__image_output(s, stk__input(s, 0)->ndim, &dst));
  if (!stk__aa_op_is_geometric(st->op))
    return stk__sample_wrap(stk__aa_color(st->op, st->conv, p, np, &img, &dst, sample_scratch, s),
                            node, s);
  double m[6];
  float *fill, *row = stk__scratch(s, (size_t)(img.w * img.c) * sizeof(float));
  if (!row) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for a row");
  STK_TRY(fill_values(node, s, st, G_FILL, img.c, &fill));
  STK_TRY(stk__sample_wrap(stk__aa_matrix(st->op, st->conv, p, img.h, img.w, m), node, s));
  return stk__sample_wrap(stk__aa_warp(&img, &dst, m, st->interp, st->constant, fill, row), node,
                          s);
}

/* Sample i of auto_augment.augment on the GPU: its descriptor, its one step (a table
 * appended to `luts` when the step uses one) and its output shape. */
static stk_status augment_gpu_sample(stk__node *node, stk__gpu_batch *b, const aa_state *st,
                                     const stk_tensor_list *in, size_t i, stk_gpu_aa_sample *q,
                                     stk_gpu_aa_step *step, uint8_t *luts, int *num_luts,
                                     int64_t *shape) {
  stk__sample *s = stk__gpu_sample(b, i);
  int h, w, c;
  void *data;
  STK_TRY(stk__gpu_image_dims(node, in, i, &h, &w, &c, &data));
  q->src = data, q->h = h, q->w = w, q->c = c;
  shape[0] = h, shape[1] = w;
  if (stk_tensor_list_ndim(in) == 3) shape[2] = c;
  float fill[STK_GPU_AA_MAX_CHANNELS];
  STK_TRY(fill_into(node, s, st, G_FILL, c, fill));
  memcpy(q->fill, fill, sizeof fill);
  stk__convert(q->fill8, STK_DTYPE_UINT8, fill, STK_DTYPE_FLOAT32, (size_t)c); /* as the CPU warp */
  stk__image img = {NULL, STK_DTYPE_UINT8, h, w, c};
  double p[9] = {0}, m[6];
  int np = 0;
  bool uses_lut = false;
  STK_TRY(augment_param(node, s, st, &img, p, &np));
  STK_TRY(stk__sample_wrap(stk__aa_gpu_step_vec(st->op, st->conv, p, np, h, w, step, m,
                                                luts + (size_t)*num_luts * 256, &uses_lut),
                           node, s));
  if (uses_lut) step->lut = (*num_luts)++;
  q->first_step = (int)i, q->num_steps = 1; /* a COPY step copies: identity, sharpness 0 */
  return STK_OK;
}

/* auto_augment.augment on the GPU: every sample's operation becomes a one-step program of
 * the fused operator's kernel (api_autoaug.h), its parameter vector read per sample with
 * augment_param as on the CPU; one launch per batch (what a built-in augmentation costs
 * inside a list with custom ones, on the sub-batch of the samples that picked it). */
static stk_status augment_run_gpu(stk__node *node, stk__gpu_batch *b) {
  const aa_state *st = *stk__node_state(node);
  stk__gpu *gpu = stk__gpu_device(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_AUTOAUG));
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in = NULL, *out = NULL;
  bool owned = false;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_status rc =
      stk_tensor_list_dtype(in) == STK_DTYPE_UINT8
          ? STK_OK
          : STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "expects uint8 images, got %s",
                       stk_dtype_name(stk_tensor_list_dtype(in)));
  if (rc == STK_OK) rc = stk__gpu_check_image_layout(node, in);
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_aa_sample *smp = stk__calloc(n ? n : 1, sizeof *smp, "GPU programs");
  stk_gpu_aa_step *steps = stk__calloc(n ? n : 1, sizeof *steps, "GPU programs");
  uint8_t *luts = stk__calloc(n ? n : 1, 256, "GPU tables");
  int64_t *shapes = stk__calloc((n ? n : 1) * 3, sizeof(int64_t), "shapes");
  if (rc == STK_OK && (!smp || !steps || !luts || !shapes)) rc = STK_ERR_OUT_OF_MEMORY;
  int num_luts = 0;
  size_t total = 0;
  for (size_t i = 0; i < n && rc == STK_OK; i++) {
    rc = augment_gpu_sample(node, b, st, in, i, &smp[i], &steps[i], luts, &num_luts,
                            shapes + i * (size_t)ndim);
    total += ((size_t)smp[i].h * (size_t)smp[i].w * (size_t)smp[i].c + 255) & ~(size_t)255;
  }
  if (rc == STK_OK)
    rc = stk__gpu_alloc_list(b, STK_DTYPE_UINT8, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  void *scratch = NULL;
  char err[STK_GPU_ERRLEN] = "";
  if (rc == STK_OK)
    rc = stk__gpu_check(gpu->api->device_alloc(gpu->ctx, total ? total : 256, stk__gpu_stream(b),
                                               &scratch, err, sizeof err),
                        err);
  if (rc == STK_OK) {
    char *at = scratch;
    for (size_t i = 0; i < n; i++) {
      stk_gpu_aa_sample *q = &smp[i];
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d), q->dst = d.data;
      q->scratch = (uint8_t *)at;
      at += ((size_t)q->h * (size_t)q->w * (size_t)q->c + 255) & ~(size_t)255;
      if (!q->src) q->src = q->scratch; /* an empty image: valid pointers, nothing read */
      if (!q->dst) q->dst = q->scratch;
    }
    stk_gpu_aa_args args = {.interp = gpu_interp(st->interp),
                            .constant = st->constant,
                            .num_steps = (int)n,
                            .steps = steps,
                            .num_luts = num_luts,
                            .luts = luts};
    if (n > 0)
      rc = stk__gpu_op_check(node,
                             stk_gpu_run_autoaug(gpu->api, gpu->ctx, (int)n, smp, &args,
                                                 stk__gpu_stream(b), err, sizeof err),
                             err);
  }
  if (scratch) gpu->api->device_free(gpu->ctx, scratch, stk__gpu_stream(b), NULL, 0);
  free(smp), free(steps), free(luts), free(shapes);
  return stk__gpu_finish(b, in, owned, out, rc);
}

static const stk_port_schema image_in[] = {{"input", "uint8 HWC (or HW) image"}};
static const stk_port_schema image_out[] = {{"output", "the augmented image"}};
static const stk_op_schema augment_schema = {
    .name = "auto_augment.augment",
    .doc =
        "Applies one automatic-augmentation operation with a per-sample parameter, with the "
        "same code as auto_augment.apply (DALI's or torchvision's definition). The Python "
        "built-in augmentations (stoker.auto_aug.augmentations) call it; on the GPU, the fused "
        "operator's kernel with a one-step program per sample.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof augment_args / sizeof augment_args[0],
    .args = augment_args,
    .gpu_check =
        "# atol=1 mismatch=0.002\n"
        "p = random.uniform(range=[-0.3, 0.3], shape=[1])\n"
        "return auto_augment.augment(IN, op=\"shear_x\", param=p, device=@)",
};
const stk__op_def stk__op_auto_augment_augment = {.schema = &augment_schema,
                                                  .init = augment_init,
                                                  .destroy = aa_destroy,
                                                  .run_sample = augment_run,
                                                  .run_gpu = augment_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* auto_augment.stage_index / stage_param                                             */
/* ---------------------------------------------------------------------------------- */

/* Row `stage` of the sample's decisions. */
static stk_status stage_row(stk__node *node, stk__sample *s, int64_t stage, float row[DEC_COLS]) {
  const stk__tensor *t = stk__input(s, 0);
  if (t->dtype != STK_DTYPE_FLOAT32 || t->ndim != 2 || t->shape[1] != DEC_COLS)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects auto_augment.choose's float32 "
                      "[stages, %d] decisions",
                      DEC_COLS);
  if (stage < 0 || stage >= t->shape[0])
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "stage %lld of %lld", (long long)stage,
                      (long long)t->shape[0]);
  memcpy(row, (const float *)t->data + stage * DEC_COLS, sizeof(float) * DEC_COLS);
  return STK_OK;
}

enum { SI_STAGE, SI_SKIP, STAGE_INDEX_ARGS_COUNT_ };
static const stk_arg_schema stage_index_args[] = {
    [SI_STAGE] = {.name = "stage",
                  .type = STK_ARG_INT,
                  .flags = STK_ARGF_REQUIRED,
                  .doc = "the stage (row)"},
    [SI_SKIP] =
        {.name = "skip_index",
         .type = STK_ARG_INT,
         .default_text = "-1",
         .doc = "the value given for a stage that does nothing (AutoAugment stages not applied)"},
};
STK__CHECK_ARGS(stage_index_args, STAGE_INDEX_ARGS_COUNT_);

static stk_status stage_index_run(stk__node *node, stk__sample *s) {
  float row[DEC_COLS];
  STK_TRY(stage_row(node, s, stk__arg_int(node, s, SI_STAGE), row));
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT32, 0, NULL, NULL, &t));
  *(int32_t *)t->data = row[0] < 0 ? (int32_t)stk__arg_int(node, s, SI_SKIP) : (int32_t)row[0];
  return STK_OK;
}

static const stk_port_schema dec_in[] = {{"decisions", "auto_augment.choose's output"}};
static const stk_port_schema index_out[] = {{"index", "int32 scalar"}};
static const stk_op_schema stage_index_schema = {
    .name = "auto_augment.stage_index",
    .doc =
        "The augmentation index a sample's decisions give for one stage (a scalar for select "
        "and conditional guards).",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = dec_in,
    .num_outputs = 1,
    .outputs = index_out,
    .num_args = sizeof stage_index_args / sizeof stage_index_args[0],
    .args = stage_index_args,
};
const stk__op_def stk__op_auto_augment_stage_index = {.schema = &stage_index_schema,
                                                      .run_sample = stage_index_run};

enum { SP_STAGE, SP_VALUES, SP_SHAPE, SP_DTYPE, SP_SIGNED, STAGE_PARAM_ARGS_COUNT_ };
static const stk_arg_schema stage_param_args[] = {
    [SP_STAGE] = {.name = "stage",
                  .type = STK_ARG_INT,
                  .flags = STK_ARGF_REQUIRED,
                  .doc = "the stage (row)"},
    [SP_VALUES] =
        {.name = "values",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_REQUIRED,
         .doc =
             "the parameter table, row-major: one parameter (of `shape`) per bin, or with `signed` "
             "two per bin (bin 2k: positive, 2k + 1: negated magnitude)"},
    [SP_SHAPE] = {.name = "shape",
                  .type = STK_ARG_INTS,
                  .doc = "shape of one parameter (scalar: absent)"},
    [SP_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"float32\"",
                  .choices = "uint8|int32|float32",
                  .doc = "output type"},
    [SP_SIGNED] = {.name = "signed",
                   .type = STK_ARG_BOOL,
                   .default_text = "false",
                   .doc = "the table has a negated row per bin"},
};
STK__CHECK_ARGS(stage_param_args, STAGE_PARAM_ARGS_COUNT_);

static stk_status stage_param_run(stk__node *node, stk__sample *s) {
  float row[DEC_COLS];
  STK_TRY(stage_row(node, s, stk__arg_int(node, s, SP_STAGE), row));
  const int64_t *shape = NULL;
  size_t nd = stk__arg_given(node, SP_SHAPE) ? stk__arg_ints(node, s, SP_SHAPE, &shape) : 0;
  size_t per = 1;
  for (size_t d = 0; d < nd; d++) per *= (size_t)(shape[d] > 0 ? shape[d] : 0);
  const double *v;
  size_t n = stk__arg_floats(node, s, SP_VALUES, &v);
  bool sign = stk__arg_bool(node, s, SP_SIGNED);
  size_t k = (size_t)(row[2] < 0 ? 0 : row[2]) * (sign ? 2 : 1) + (sign && row[3] != 0);
  if (nd > STK_MAX_NDIM || per == 0 || (k + 1) * per > n)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the table of %zu values has no entry "
                      "%zu of %zu values",
                      n, k, per);
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, SP_DTYPE));
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, dt, (int)nd, shape, NULL, &t));
  for (size_t i = 0; i < per; i++) stk__store_double(t->data, dt, i, v[k * per + i]);
  return STK_OK;
}

static const stk_port_schema param_out[] = {{"param", "the stage's parameter"}};
static const stk_op_schema stage_param_schema = {
    .name = "auto_augment.stage_param",
    .doc =
        "Looks up a stage's parameter in a per-magnitude-bin table by the sample's decisions "
        "(what a Python augmentation's mag_to_param gives for each bin and sign).",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = dec_in,
    .num_outputs = 1,
    .outputs = param_out,
    .num_args = sizeof stage_param_args / sizeof stage_param_args[0],
    .args = stage_param_args,
};
const stk__op_def stk__op_auto_augment_stage_param = {.schema = &stage_param_schema,
                                                      .run_sample = stage_param_run};
