/* The operator registry: every operator definition, in one list. An operator file
 * defines its `stk__op_def`; add it here once. */
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
  STK__OPS_AUDIO(X)           \
  STK__OPS_VIDEO(X)

#define STK__OPS_RANDOM(X) /* random.c */ \
  X(stk__op_random_uniform)               \
  X(stk__op_random_normal)                \
  X(stk__op_random_coin_flip)             \
  X(stk__op_random_choice)

#define STK__OPS_IMAGE(X) /* resize, random_resized_crop, crop, flip, cmn, cast */ \
  X(stk__op_resize)                                                                \
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
  X(stk__op_readers_numpy)

#define STK__OPS_HOST(X) /* pipeline/host.c, pipeline/conditional.c, constant.c */ \
  X(stk__op_external_source)                                                       \
  X(stk__op_python_function)                                                       \
  X(stk__op_select)                                                                \
  X(stk__op_constant)

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

#define STK__DECLARE(def) extern const stk__op_def def;
STK__OPS(STK__DECLARE)
#undef STK__DECLARE

static const stk__op_def *const registry[] = {
#define STK__ENTRY(def) &def,
    STK__OPS(STK__ENTRY)
#undef STK__ENTRY
};

size_t stk__registry_size(void) { return sizeof registry / sizeof registry[0]; }

const stk__op_def *stk__registry_at(size_t index) {
  return index < stk__registry_size() ? registry[index] : NULL;
}

const stk__op_def *stk__registry_lookup(const char *name) {
  for (size_t i = 0; i < stk__registry_size(); i++)
    if (strcmp(registry[i]->schema->name, name) == 0) return registry[i];
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
