/* The operator registry: every operator definition, in one list. An operator file
 * defines its `stk__op_def`; add it here once. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"

/* Declarations of the operator definitions (one per line, grouped by file). */
#define STK__OPS(X)           \
  STK__OPS_RANDOM(X)          \
  STK__OPS_IMAGE(X)           \
  STK__OPS_DECODERS(X)        \
  STK__OPS_COLOR(X)           \
  STK__OPS_OCCLUSION(X)       \
  STK__OPS_NOISE(X)           \
  STK__OPS_READERS_FILE(X)    \
  STK__OPS_READERS_FORMATS(X) \
  STK__OPS_GEOMETRY(X)        \
  STK__OPS_FILTERS(X)         \
  STK__OPS_ARITHMETIC(X)      \
  STK__OPS_HOST(X)            \
  STK__OPS_AUTOAUG(X)         \
  STK__OPS_BATCH(X)           \
  STK__OPS_EFFECTS(X)         \
  STK__OPS_TENSOR(X)          \
  STK__OPS_DETECTION(X)       \
  STK__OPS_AUDIO(X)           \
  STK__OPS_VIDEO(X)           \
  /* (each list above ends with a backslash, so adding one is a one-line change) */

#define STK__OPS_RANDOM(X) /* random.c */ \
  X(stk__op_random_uniform)               \
  X(stk__op_random_normal)                \
  X(stk__op_random_coin_flip)             \
  X(stk__op_random_choice)                \
  X(stk__op_random_beta)

#define STK__OPS_IMAGE(X) /* resize, random_resized_crop, crop, flip, cmn, cast */ \
  X(stk__op_resize)                                                                \
  X(stk__op_tensor_resize)                                                         \
  X(stk__op_resize_crop_mirror)                                                    \
  X(stk__op_fast_resize_crop_mirror)                                               \
  X(stk__op_random_resized_crop)                                                   \
  X(stk__op_crop)                                                                  \
  X(stk__op_flip)                                                                  \
  X(stk__op_crop_mirror_normalize)                                                 \
  X(stk__op_cast)                                                                  \
  X(stk__op_copy_op)

#define STK__OPS_COLOR(X) /* color.c, color_pil.c */ \
  X(stk__op_brightness)                              \
  X(stk__op_contrast)                                \
  X(stk__op_brightness_contrast)                     \
  X(stk__op_hsv)                                     \
  X(stk__op_hue)                                     \
  X(stk__op_saturation)                              \
  X(stk__op_color_twist)                             \
  X(stk__op_color_space_conversion)                  \
  X(stk__op_grayscale)                               \
  X(stk__op_invert)                                  \
  X(stk__op_posterize)                               \
  X(stk__op_solarize)                                \
  X(stk__op_solarize_add)                            \
  X(stk__op_equalize)                                \
  X(stk__op_experimental_equalize)                   \
  X(stk__op_auto_contrast)                           \
  X(stk__op_sharpness)

#define STK__OPS_OCCLUSION(X) /* occlusion.c */ \
  X(stk__op_erase)                              \
  X(stk__op_grid_mask)

#define STK__OPS_NOISE(X) /* noise.c */ \
  X(stk__op_noise_gaussian)             \
  X(stk__op_noise_salt_and_pepper)      \
  X(stk__op_noise_shot)

#define STK__OPS_DECODERS(X) /* decoders.c */ \
  X(stk__op_decoders_image)                   \
  X(stk__op_decoders_image_random_crop)       \
  X(stk__op_decoders_image_crop)              \
  X(stk__op_decoders_image_slice)             \
  X(stk__op_peek_image_shape)

#define STK__OPS_READERS_FILE(X) /* readers_file.c */ X(stk__op_readers_file)

#define STK__OPS_GEOMETRY(X) /* geometry.c, transforms.c */ \
  X(stk__op_rotate)                                         \
  X(stk__op_warp_affine)                                    \
  X(stk__op_transforms_rotation)                            \
  X(stk__op_transforms_shear)                               \
  X(stk__op_transforms_translation)                         \
  X(stk__op_transforms_scale)                               \
  X(stk__op_transforms_combine)

#define STK__OPS_FILTERS(X) /* filters.c */ \
  X(stk__op_gaussian_blur)                  \
  X(stk__op_laplacian)                      \
  X(stk__op_filter)                         \
  X(stk__op_experimental_filter)

#define STK__OPS_ARITHMETIC(X) /* arithmetic.c, misc_ops.c, subscript.c */ \
  X(stk__op_math_binary)                                                   \
  X(stk__op_math_unary)                                                    \
  X(stk__op_math_clamp)                                                    \
  X(stk__op_one_hot)                                                       \
  X(stk__op_cast_like)                                                     \
  X(stk__op_subscript)                                                     \
  X(stk__op_shapes)

#define STK__OPS_READERS_FORMATS(X) /* readers_webdataset.c, _tfrecord.c, _numpy.c */ \
  X(stk__op_readers_webdataset)                                                       \
  X(stk__op_readers_tfrecord)                                                         \
  X(stk__op_readers_numpy)                                                            \
  X(stk__op_readers_coco)                                                             \
  X(stk__op_readers_mxnet)                                                            \
  X(stk__op_readers_sequence)                                                         \
  X(stk__op_readers_caffe)                                                            \
  X(stk__op_readers_caffe2)

#define STK__OPS_HOST(X) /* pipeline/host.c, pipeline/conditional.c, constant.c */ \
  X(stk__op_external_source)                                                       \
  X(stk__op_python_function)                                                       \
  X(stk__op_select)                                                                \
  X(stk__op_constant)                                                              \
  X(stk__op_cache)

#define STK__OPS_AUTOAUG(X) /* autoaug_op.c */ \
  X(stk__op_auto_augment_choose)               \
  X(stk__op_auto_augment_apply)                \
  X(stk__op_auto_augment_augment)              \
  X(stk__op_auto_augment_stage_index)          \
  X(stk__op_auto_augment_stage_param)

#define STK__OPS_AUDIO(X) /* audio_spectral.c, audio_features.c, audio_signal.c */ \
  X(stk__op_power_spectrum)                                                        \
  X(stk__op_spectrogram)                                                           \
  X(stk__op_mel_filter_bank)                                                       \
  X(stk__op_mfcc)                                                                  \
  X(stk__op_to_decibels)                                                           \
  X(stk__op_preemphasis_filter)                                                    \
  X(stk__op_nonsilent_region)                                                      \
  X(stk__op_audio_resample)                                                        \
  X(stk__op_decoders_audio)                                                        \
  X(stk__op_readers_nemo_asr)

#define STK__OPS_VIDEO(X) /* video_decode.c, readers_video.c */ \
  X(stk__op_decoders_video)                                     \
  X(stk__op_experimental_decoders_video)                        \
  X(stk__op_readers_video)                                      \
  X(stk__op_experimental_readers_video)                         \
  X(stk__op_readers_video_resize)
#define STK__OPS_BATCH(X) /* batch_ops.c, mixup.c, crop_generators.c */ \
  X(stk__op_batch_permutation)                                          \
  X(stk__op_permute_batch)                                              \
  X(stk__op_mixup)                                                      \
  X(stk__op_cutmix)                                                     \
  X(stk__op_random_crop_generator)                                      \
  X(stk__op_roi_random_crop)

/* Other names of operators (DALI's experimental.* names): each runs its target's
 * definition under a schema of its own (the alias's name, the target's documentation). */
#define STK__ALIASES(X)                                                            \
  X("experimental.decoders.image", stk__op_decoders_image)                         \
  X("experimental.decoders.image_random_crop", stk__op_decoders_image_random_crop) \
  X("experimental.decoders.image_crop", stk__op_decoders_image_crop)               \
  X("experimental.decoders.image_slice", stk__op_decoders_image_slice)             \
  X("experimental.resize", stk__op_resize)                                         \
  X("experimental.tensor_resize", stk__op_tensor_resize)                           \
  X("experimental.peek_image_shape", stk__op_peek_image_shape)                     \
  X("experimental.audio_resample", stk__op_audio_resample)                         \
  X("debayer", stk__op_experimental_debayer)
#define STK__OPS_TENSOR(X)    /* tensor_shape.c, tensor_slice.c, tensor_fill.c, reductions.c, \
                                 tensor_io.c, pipeline/host.c */                              \
  X(stk__op_reshape)                                                                          \
  X(stk__op_reinterpret)                                                                      \
  X(stk__op_expand_dims)                                                                      \
  X(stk__op_squeeze)                                                                          \
  X(stk__op_per_frame)                                                                        \
  X(stk__op_transpose)                                                                        \
  X(stk__op_slice)                                                                            \
  X(stk__op_pad)                                                                              \
  X(stk__op_cat)                                                                              \
  X(stk__op_stack)                                                                            \
  X(stk__op_element_extract)                                                                  \
  X(stk__op_sequence_rearrange)                                                               \
  X(stk__op_reductions_min)                                                                   \
  X(stk__op_reductions_max)                                                                   \
  X(stk__op_reductions_sum)                                                                   \
  X(stk__op_reductions_mean)                                                                  \
  X(stk__op_reductions_mean_square)                                                           \
  X(stk__op_reductions_rms)                                                                   \
  X(stk__op_reductions_std_dev)                                                               \
  X(stk__op_reductions_variance)                                                              \
  X(stk__op_normalize)                                                                        \
  X(stk__op_zeros)                                                                            \
  X(stk__op_ones)                                                                             \
  X(stk__op_full)                                                                             \
  X(stk__op_zeros_like)                                                                       \
  X(stk__op_ones_like)                                                                        \
  X(stk__op_full_like)                                                                        \
  X(stk__op_lookup_table)                                                                     \
  X(stk__op_get_property)                                                                     \
  X(stk__op_io_file_read)                                                                     \
  X(stk__op_decoders_numpy)                                                                   \
  X(stk__op_decoders_inflate)                                                                 \
  X(stk__op_experimental_inflate)                                                             \
  X(stk__op_dump_image)                                                                       \
  X(stk__op_dl_tensor_python_function)
#define STK__OPS_DETECTION(X) /* boxes.c, coord_transform.c, box_encoder.c, ... */ \
  X(stk__op_bb_flip)                                                               \
  X(stk__op_bbox_paste)                                                            \
  X(stk__op_bbox_rotate)                                                           \
  X(stk__op_coord_flip)                                                            \
  X(stk__op_box_encoder)                                                           \
  X(stk__op_random_bbox_crop)                                                      \
  X(stk__op_coord_transform)                                                       \
  X(stk__op_select_masks)                                                          \
  X(stk__op_transforms_crop)                                                       \
  X(stk__op_random_mask_pixel)                                                     \
  X(stk__op_ssd_random_crop)                                                       \
  X(stk__op_random_object_bbox)

#define STK__OPS_EFFECTS(X) /* effects_warp.c, effects_window.c, paste.c, jpeg_distortion.c */ \
  X(stk__op_water)                                                                             \
  X(stk__op_sphere)                                                                            \
  X(stk__op_jitter)                                                                            \
  X(stk__op_experimental_warp_perspective)                                                     \
  X(stk__op_experimental_remap)                                                                \
  X(stk__op_experimental_median_blur)                                                          \
  X(stk__op_experimental_dilate)                                                               \
  X(stk__op_experimental_erode)                                                                \
  X(stk__op_experimental_debayer)                                                              \
  X(stk__op_clahe)                                                                             \
  X(stk__op_paste)                                                                             \
  X(stk__op_multi_paste)                                                                       \
  X(stk__op_jpeg_compression_distortion)

#define STK__DECLARE(def) extern const stk__op_def def;
STK__OPS(STK__DECLARE)
#undef STK__DECLARE

static const stk__op_def *const registry[] = {
#define STK__ENTRY(def) &def,
    STK__OPS(STK__ENTRY)
#undef STK__ENTRY
};
#define NUM_DEFS (sizeof registry / sizeof registry[0])

static const struct {
  const char *name;
  const stk__op_def *target;
} aliases[] = {
#define STK__ALIAS(name, def) {name, &def},
    STK__ALIASES(STK__ALIAS)
#undef STK__ALIAS
};
#define NUM_ALIASES (sizeof aliases / sizeof aliases[0])

/* The aliases' schemas and definitions: copies of their targets', made once. */
static stk_op_schema alias_schemas[NUM_ALIASES];
static stk__op_def alias_defs[NUM_ALIASES];
static pthread_once_t aliases_once = PTHREAD_ONCE_INIT;

/* `text` with every call "target(" written "alias(" (the parity check then runs the alias);
 * malloc'ed, NULL when out of memory. */
static char *rename_calls(const char *text, const char *target, const char *alias) {
  size_t tn = strlen(target), an = strlen(alias), len = strlen(text), n = 0;
  for (const char *p = strstr(text, target); p; p = strstr(p + tn, target)) n++;
  char *out = malloc(len + n * (an > tn ? an - tn : 0) + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = text; *p;) {
    bool call = strncmp(p, target, tn) == 0 && p[tn] == '(' &&
                (p == text || !(p[-1] == '_' || p[-1] == '.' || isalnum((unsigned char)p[-1])));
    if (call) {
      memcpy(o, alias, an), o += an, p += tn;
    } else {
      *o++ = *p++;
    }
  }
  *o = '\0';
  return out;
}

static void make_aliases(void) {
  for (size_t i = 0; i < NUM_ALIASES; i++) {
    const stk_op_schema *t = aliases[i].target->schema;
    alias_schemas[i] = *t;
    alias_schemas[i].name = aliases[i].name;
    /* the documentation says whose alias it is (kept for the process's lifetime) */
    size_t len = strlen(t->name) + strlen(t->doc) + 64;
    char *doc = malloc(len);
    if (doc) {
      snprintf(doc, len, "Another name of %s (DALI's). %s", t->name, t->doc);
      alias_schemas[i].doc = doc;
    }
    if (t->gpu_check) {
      char *check = rename_calls(t->gpu_check, t->name, aliases[i].name);
      alias_schemas[i].gpu_check = check ? check : t->gpu_check;
    }
    alias_defs[i] = *aliases[i].target;
    alias_defs[i].schema = &alias_schemas[i];
  }
}

size_t stk__registry_size(void) { return NUM_DEFS + NUM_ALIASES; }

const stk__op_def *stk__registry_at(size_t index) {
  if (index < NUM_DEFS) return registry[index];
  if (index >= stk__registry_size()) return NULL;
  pthread_once(&aliases_once, make_aliases);
  return &alias_defs[index - NUM_DEFS];
}

const stk__op_def *stk__registry_lookup(const char *name) {
  for (size_t i = 0; i < stk__registry_size(); i++) {
    const stk__op_def *d = stk__registry_at(i);
    if (strcmp(d->schema->name, name) == 0) return d;
  }
  return NULL;
}

size_t stk_registry_count(void) { return stk__registry_size(); }

const stk_op_schema *stk_registry_get(size_t index) {
  const stk__op_def *d = stk__registry_at(index);
  return d ? d->schema : NULL;
}

const stk_op_schema *stk_registry_find(const char *name) {
  const stk__op_def *d = name ? stk__registry_lookup(name) : NULL;
  return d ? d->schema : NULL;
}
