/* Built-in pipelines, in the text form. ${DATA} is the --data directory. */
#include <string.h>

#include "cli.h"

/* ImageNet mean and std in 0..255 units (torchvision's constants times 255). */
#define IMAGENET_NORMALIZE "mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375]"

/* CPU presets first; the GPU ones (name + "@gpu") place decoding on the mixed device
 * (nvJPEG) and the image operators on the GPU, with the same random decisions. */
static const struct {
  const char *name, *text;
} presets[] = {
    {"basic",
     "# Decode only a random crop window (ROI + DCT downscaling), resize it to 224x224,\n"
     "# mirror half of the images, normalise to float32 CHW.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[224, 224])\n"
     "images = resize(crops, size=[224, 224])\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(images, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float32\", output_layout=\"CHW\")\n"
     "return out, labels\n"},
    {"basic-full",
     "# Decode whole images, then random_resized_crop 224, mirror, normalise to float32 CHW.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\")\n"
     "crops = random_resized_crop(images, size=[224, 224])\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(crops, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float32\", output_layout=\"CHW\")\n"
     "return out, labels\n"},
    {"cached",
     "# The sample cache (issue 22): decode + resize the shorter side to 256 run once per\n"
     "# image; later epochs take them (and the labels) from the cache, skipping the reader\n"
     "# and the decoder, and run only random_resized_crop 224 + mirror + normalise.\n"
     "# --cache-bytes sets capacity_bytes (0: nothing kept, the baseline), --cache-dir a path.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\")\n"
     "small = resize(images, resize_shorter=256)\n"
     "kept, kept_labels = cache(small, labels, capacity_bytes=${CACHE_BYTES}, "
     "path=\"${CACHE_DIR}\")\n"
     "crops = random_resized_crop(kept, size=[224, 224])\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(crops, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float32\", output_layout=\"CHW\")\n"
     "return out, kept_labels\n"},
    {"decode",
     "# Bare full-image decoding: the ceiling for every decode-bound pipeline.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\")\n"
     "return images, labels\n"},
    {"basic@gpu",
     "# nvJPEG decodes whole images into GPU memory (the engines' region decoding is off:\n"
     "# see src/cuda/decode.cu); random_resized_crop + mirror + normalise to float16 CHW run\n"
     "# as one fused resampling (two launches).\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "crops = random_resized_crop(images, size=[224, 224], device=\"gpu\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(crops, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float16\", output_layout=\"CHW\", device=\"gpu\")\n"
     "return out, labels\n"},
    {"basic-roi@gpu",
     "# Decode only the random crop window (the engines decode the whole image and the window\n"
     "# is copied out, see src/cuda/decode.cu);\n"
     "# resize + mirror + normalise to float16 CHW as one fused resampling.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "images = resize(crops, size=[224, 224], device=\"gpu\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(images, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float16\", output_layout=\"CHW\", device=\"gpu\")\n"
     "return out, labels\n"},
    {"basic-full@gpu",
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "crops = random_resized_crop(images, size=[224, 224], device=\"gpu\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(crops, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float16\", output_layout=\"CHW\", device=\"gpu\")\n"
     "return out, labels\n"},
    {"decode@gpu",
     "jpegs, labels = readers.file(file_root=\"${DATA}\", name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "return images, labels\n"},
    {"randaugment",
     "# The basic pipeline plus RandAugment (n=2, m=9 of 31 bins, DALI's magnitudes) "
     "(auto_augment.apply: the fused CPU path)\n"
     "# between the resize and the normalisation.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[224, 224])\n"
     "images = resize(crops, size=[224, 224])\n"
     "augmented, no_mask, no_boxes, decisions = auto_augment.apply(images, "
     "policy=\"rand_augment\", n=2, m=9)\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(augmented, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float32\", output_layout=\"CHW\")\n"
     "return out, labels\n"},
    {"autoaugment",
     "# The basic pipeline plus AutoAugment (DALI's ImageNet policy) (auto_augment.apply: the "
     "fused CPU path)\n"
     "# between the resize and the normalisation.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[224, 224])\n"
     "images = resize(crops, size=[224, 224])\n"
     "augmented, no_mask, no_boxes, decisions = auto_augment.apply(images, "
     "policy=\"auto_augment_image_net\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(augmented, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float32\", output_layout=\"CHW\")\n"
     "return out, labels\n"},
    {"trivialaugment",
     "# The basic pipeline plus TrivialAugmentWide (auto_augment.apply: the fused CPU path)\n"
     "# between the resize and the normalisation.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "crops = decoders.image_random_crop(jpegs, output_type=\"RGB\", size=[224, 224])\n"
     "images = resize(crops, size=[224, 224])\n"
     "augmented, no_mask, no_boxes, decisions = auto_augment.apply(images, "
     "policy=\"trivial_augment_wide\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(augmented, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float32\", output_layout=\"CHW\")\n"
     "return out, labels\n"},
    {"randaugment@gpu",
     "# basic@gpu plus RandAugment (n=2, m=9) on the GPU (auto_augment.apply: the fused GPU path, "
     "one\n"
     "# launch per batch; the decisions are drawn on the host as on the CPU) after the\n"
     "# random_resized_crop, before the normalisation.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "crops = random_resized_crop(images, size=[224, 224], device=\"gpu\")\n"
     "augmented, no_mask, no_boxes, decisions = auto_augment.apply(crops, policy=\"rand_augment\", "
     "n=2, m=9, device=\"gpu\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(augmented, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float16\", output_layout=\"CHW\", device=\"gpu\")\n"
     "return out, labels\n"},
    {"autoaugment@gpu",
     "# basic@gpu plus AutoAugment (DALI's ImageNet policy) on the GPU (auto_augment.apply: the "
     "fused GPU path, one\n"
     "# launch per batch; the decisions are drawn on the host as on the CPU) after the\n"
     "# random_resized_crop, before the normalisation.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "crops = random_resized_crop(images, size=[224, 224], device=\"gpu\")\n"
     "augmented, no_mask, no_boxes, decisions = auto_augment.apply(crops, "
     "policy=\"auto_augment_image_net\", device=\"gpu\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(augmented, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float16\", output_layout=\"CHW\", device=\"gpu\")\n"
     "return out, labels\n"},
    {"trivialaugment@gpu",
     "# basic@gpu plus TrivialAugmentWide on the GPU (auto_augment.apply: the fused GPU path, one\n"
     "# launch per batch; the decisions are drawn on the host as on the CPU) after the\n"
     "# random_resized_crop, before the normalisation.\n"
     "jpegs, labels = readers.file(file_root=\"${DATA}\", random_shuffle=true, name=\"Reader\")\n"
     "images = decoders.image(jpegs, output_type=\"RGB\", device=\"mixed\")\n"
     "crops = random_resized_crop(images, size=[224, 224], device=\"gpu\")\n"
     "augmented, no_mask, no_boxes, decisions = auto_augment.apply(crops, "
     "policy=\"trivial_augment_wide\", device=\"gpu\")\n"
     "mirror = random.coin_flip(probability=0.5)\n"
     "out = crop_mirror_normalize(augmented, mirror=mirror, " IMAGENET_NORMALIZE
     ", dtype=\"float16\", output_layout=\"CHW\", device=\"gpu\")\n"
     "return out, labels\n"},
};

const char *cli_preset(const char *name) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, name) == 0) return presets[i].text;
  return NULL;
}

const char *cli_preset_names(void) {
  return "basic basic-full cached decode randaugment autoaugment trivialaugment";
}
