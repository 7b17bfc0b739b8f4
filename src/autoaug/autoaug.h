/*
 * Automatic augmentation as data: the augmentation table (operation, magnitude range,
 * magnitude -> parameter mapping, random negation), the AutoAugment policies, and the
 * per-sample draw of RandAugment / TrivialAugmentWide / AutoAugment decisions.
 *
 * Everything here is pure (no executor accessors): the CPU operators in
 * src/ops/autoaug_op.c, the C tests, and later the GPU fused path use the same tables and
 * the same draw, so a sample's decisions are the same on every backend.
 *
 * Two conventions:
 *  - STK__AA_DALI (the default): DALI's auto_aug module. Magnitude bins are
 *    linspace(lo, hi, num_bins) in float32 (numpy's linspace), DALI's operation
 *    definitions (brightness = multiply, contrast about the float mean luma, colour =
 *    YIQ saturation, sharpness = 3x3 filter, OpenCV-style equalize, auto-contrast
 *    rounded), fill 128, linear interpolation.
 *  - STK__AA_TORCHVISION: torchvision's transforms.AutoAugment / RandAugment /
 *    TrivialAugmentWide on PIL images: its _augmentation_space formulas (torch's float32
 *    linspace, posterize 8 - round(k / ((N - 1) / 4)), translations truncated to
 *    integers), Pillow's operation definitions, fill 0, nearest interpolation.
 *
 * Decisions. One sample's decisions are a list of stages; each names an augmentation of
 * the scheme's list by index (-1: the stage does nothing), a magnitude bin and a sign.
 */
#ifndef STOKER_AUTOAUG_AUTOAUG_H
#define STOKER_AUTOAUG_AUTOAUG_H

#include "../core/core.h"

/* The operations (stable numbers: they appear in decision outputs). */
typedef enum {
  STK__AA_IDENTITY = 0,
  STK__AA_SHEAR_X,
  STK__AA_SHEAR_Y,
  STK__AA_TRANSLATE_X,
  STK__AA_TRANSLATE_Y,
  STK__AA_ROTATE,
  STK__AA_BRIGHTNESS,
  STK__AA_CONTRAST,
  STK__AA_COLOR,
  STK__AA_SHARPNESS,
  STK__AA_POSTERIZE,
  STK__AA_SOLARIZE,
  STK__AA_SOLARIZE_ADD,
  STK__AA_INVERT,
  STK__AA_EQUALIZE,
  STK__AA_AUTO_CONTRAST,
  STK__AA_NUM_OPS
} stk__aa_op;

#define STK__AA_OP_CHOICES                                                             \
  "identity|shear_x|shear_y|translate_x|translate_y|rotate|brightness|contrast|color|" \
  "sharpness|posterize|solarize|solarize_add|invert|equalize|auto_contrast"

typedef enum { STK__AA_DALI = 0, STK__AA_TORCHVISION = 1 } stk__aa_convention;
typedef enum {
  STK__AA_RAND_AUGMENT = 0,
  STK__AA_TRIVIAL_AUGMENT_WIDE = 1,
  STK__AA_AUTO_AUGMENT = 2
} stk__aa_scheme;

/* How a magnitude becomes the operation's parameter. `mag` is the signed magnitude. */
typedef enum {
  STK__AA_MAP_NONE = 0, /* no magnitude: parameter 0 */
  STK__AA_MAP_LINEAR,   /* mag (float32) */
  STK__AA_MAP_ENHANCE,  /* 1 + mag: an enhance factor */
  STK__AA_MAP_SHIFTED,  /* mag - 1 (DALI's sharpness with a (0.1, 1.9) range) */
  STK__AA_MAP_BITS,     /* posterize: DALI keeps clamp(rint(mag), 1, 8) bits and takes the
                           uint8 mask; torchvision's bits come from its own formula */
  STK__AA_MAP_SHIFT_U8, /* solarize_add: trunc(mag), which must stay below 128 */
} stk__aa_map;

/* One augmentation of a scheme's list. */
typedef struct {
  stk__aa_op op;
  double lo, hi; /* magnitude range: bin k of N is linspace(lo, hi, N)[k] */
  bool negate;   /* the magnitude's sign is random */
  stk__aa_map map;
  bool rel; /* translations: lo/hi are fractions of the width (x) / height (y) */
} stk__aa_entry;

#define STK__AA_MAX_SUITE 16

typedef struct {
  stk__aa_entry e[STK__AA_MAX_SUITE];
  int count;
} stk__aa_suite;

/* Translation ranges: absolute pixels, or fractions of the shape when use_shape. Values
 * below 0 mean "the scheme's default" (DALI: RandAugment 100 px or 100/224, TrivialAugment
 * 32 px or 1.0, AutoAugment 250 px or 1.0; torchvision: 150/331 of the size for RandAugment
 * and AutoAugment, 32 px for TrivialAugment). [0] is the height (translate_y), [1] the
 * width (translate_x). */
typedef struct {
  bool use_shape;
  double max_abs[2];
  double max_rel[2];
} stk__aa_translate;

/* One stage of an AutoAugment sub-policy: op -1 marks an absent stage. */
typedef struct {
  int8_t op;
  float prob;
  int8_t bin; /* -1: the operation takes no magnitude */
} stk__aa_stage;

typedef struct {
  const char *name;           /* "image_net", "reduced_image_net", "reduced_cifar10", "svhn" */
  int num_bins;               /* 11 for DALI's tables, 10 for torchvision's */
  int num_sub, stages;        /* sub-policies, stages per sub-policy (table rows x columns) */
  const stk__aa_stage *table; /* num_sub * stages entries, row-major */
} stk__aa_policy;

/* A decision for one stage. */
typedef struct {
  int32_t index;  /* augmentation index in the list, -1: nothing */
  int32_t bin;    /* magnitude bin */
  int32_t negate; /* 1: the magnitude is negated (for entries with `negate`) */
} stk__aa_decision;

/* What a sampler needs to draw decisions. For AutoAugment, aug/prob/bin give each
 * (sub-policy, stage) cell: the augmentation index in the list (-1: absent), the
 * probability and the magnitude bin. */
typedef struct {
  stk__aa_scheme scheme;
  int n;        /* RandAugment: operations per sample */
  int m;        /* RandAugment: the magnitude bin */
  int num_bins; /* magnitude bins */
  int num_augs; /* size of the augmentation list */
  int num_sub, stages;
  const int32_t *aug;
  const float *prob;
  const int32_t *bin;
} stk__aa_sampler;

#define STK__AA_MAX_STAGES 16

/* ---- names ---- */
const char *stk__aa_op_name(stk__aa_op op);
bool stk__aa_op_parse(const char *name, stk__aa_op *out);
/* Shear, translation and rotation: the operations that move pixels (masks and boxes
 * follow them). */
bool stk__aa_op_is_geometric(stk__aa_op op);
bool stk__aa_convention_parse(const char *name, stk__aa_convention *out);

/* ---- tables ---- */
/* The published policy `name` for a convention: DALI's four tables, or torchvision's
 * three (under torchvision, "image_net" and "reduced_image_net" both name torchvision's
 * IMAGENET table, the policy the AutoAugment paper searched on reduced ImageNet). NULL
 * when unknown. */
const stk__aa_policy *stk__aa_policy_find(const char *name, stk__aa_convention conv);

/* The default list of a scheme: RandAugment (`monotonic`: DALI's default suite, else its
 * non-monotonic variant; torchvision has one), TrivialAugmentWide, or, for AutoAugment,
 * the distinct operations of `policy` in order of first appearance. */
stk_status stk__aa_default_suite(stk__aa_scheme scheme, stk__aa_convention conv, bool monotonic,
                                 const stk__aa_policy *policy, const stk__aa_translate *tr,
                                 stk__aa_suite *out);

/* The configuration of `op` in a scheme's default list (AutoAugment: its configuration in
 * the policies of the convention). False when the list has no such operation. */
bool stk__aa_entry_for(stk__aa_scheme scheme, stk__aa_convention conv, bool monotonic,
                       stk__aa_op op, const stk__aa_translate *tr, stk__aa_entry *out);

/* The policy's cells as sampler arrays (num_sub * stages each): the index in `suite` of
 * each cell's operation (its first entry; -1 when absent or not in the list), the
 * probability and the bin. */
void stk__aa_policy_cells(const stk__aa_policy *p, const stk__aa_suite *suite, int32_t *aug,
                          float *prob, int32_t *bin);

/* The default number of magnitude bins: 31 (RandAugment, TrivialAugment), 11 (DALI's
 * AutoAugment) or 10 (torchvision's AutoAugment). */
int stk__aa_default_bins(stk__aa_scheme scheme, stk__aa_convention conv);

/* Magnitude bin k of n: DALI: numpy's linspace(lo, hi, n) rounded to float32; torchvision:
 * torch's float32 linspace (start + step k below the midpoint, end - step (n - 1 - k)
 * from it). */
float stk__aa_linspace(double lo, double hi, int k, int n, stk__aa_convention conv);

/* The signed magnitude of an entry at a bin (as stored by the frameworks, float32). */
double stk__aa_magnitude(const stk__aa_entry *e, stk__aa_convention conv, int bin, int num_bins,
                         bool negate);

/* The operation's parameter for a decision, for an image of h x w (relative
 * translations scale with it):
 *   shear_*: the shear factor; translate_*: the offset in pixels (torchvision: an
 *   integer); rotate: degrees counter-clockwise; brightness / contrast / color: the
 *   factor; sharpness: DALI: s of the kernel (1 + s) delta - s blur, torchvision: the
 *   enhance factor; posterize: DALI: the uint8 mask, torchvision: the bits kept;
 *   solarize: the threshold; solarize_add: the shift; others: 0. */
double stk__aa_param(const stk__aa_entry *e, stk__aa_convention conv, int bin, int num_bins,
                     bool negate, double h, double w);

/* ---- draws ---- */
/* Stages per sample: n, 1, or the policy's stages. */
int stk__aa_num_stages(const stk__aa_sampler *s);
/* Checks a sampler's numbers (n, m, bins, list size, policy cells); the message names
 * the culprit argument. */
stk_status stk__aa_sampler_check(const stk__aa_sampler *s);
/* Draws one sample's decisions (stk__aa_num_stages of them) from g:
 *   RandAugment: per stage, index = below(K), negate = below(2); bin = m.
 *   TrivialAugmentWide: index = below(K), bin = below(N), negate = below(2).
 *   AutoAugment: sub-policy = below(rows); per stage u = uniform [0, 1), negate = below(2);
 *   the stage runs when its cell has an augmentation and u < probability. */
void stk__aa_draw(const stk__aa_sampler *s, stk__philox *g, stk__aa_decision *out);

#endif /* STOKER_AUTOAUG_AUTOAUG_H */
