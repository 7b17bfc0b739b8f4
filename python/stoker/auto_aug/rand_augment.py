"""RandAugment (Cubuk et al., https://arxiv.org/abs/1909.13719), DALI's signatures, with
``convention="torchvision"`` for torchvision's RandAugment semantics."""

import warnings

from . import _apply
from . import augmentations as a
from ._conventions import check_convention
from ._translations import get_translations


def rand_augment(data, n, m, num_magnitude_bins=31, shape=None, fill_value=_apply.DEFAULT,
                 interp_type=None, max_translate_abs=None, max_translate_rel=None, seed=None,
                 monotonic_mag=True, excluded=None, convention="dali", masks=None, boxes=None,
                 normalized_boxes=False):
    """Applies RandAugment to a batch of uint8 HWC images: each sample gets `n`
    augmentations drawn uniformly from the suite, each with magnitude bin `m` of
    `num_magnitude_bins` (and a random sign where the augmentation negates).

    Args:
        shape: (H, W) or a DataNode of image shapes: translations are relative to it
            (up to `max_translate_rel`, default 100/224) instead of absolute (up to
            `max_translate_abs` pixels, default 100).
        fill_value: fill of shears, translations and rotations (default 128; 0 under
            torchvision's convention); None repeats the border.
        interp_type: their interpolation (default linear; torchvision: nearest).
        seed: seed of the random choices.
        monotonic_mag: False takes DALI's non-monotonic suite.
        excluded: names left out of the suite.
        convention: "dali" (default) or "torchvision" (torchvision.transforms.RandAugment's
            magnitudes and Pillow operations; translations relative to each image).
        masks, boxes: optional uint8 masks (moved with nearest interpolation, fill 0) and
            float32 [N, 4] boxes (left, top, right, bottom; fractions with
            `normalized_boxes`) that follow the geometric augmentations. When given, a
            tuple (images, masks?, boxes?) is returned.
    """
    check_convention(convention)
    fill_value = _apply.resolve_fill(fill_value, convention)
    aug_kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    use_shape = shape is not None
    if use_shape:
        if convention == "torchvision":
            raise Exception("Under the torchvision convention, translations are relative to "
                            "each image's own size; `shape` is not used.")
        aug_kwargs["shape"] = shape
    suite = get_rand_augment_suite(use_shape, max_translate_abs, max_translate_rel,
                                   convention=convention, monotonic_mag=monotonic_mag)
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise Exception(f"The `{name}` was specified in `excluded`, but the RandAugment "
                            f"suite does not contain augmentation with this name. The "
                            f"augmentations in the suite are: {', '.join(names)}.")
    selected = [aug for aug in suite if aug.name not in (excluded or [])]
    return apply_rand_augment(selected, data, n, m, num_magnitude_bins=num_magnitude_bins,
                              seed=seed, masks=masks, boxes=boxes,
                              normalized_boxes=normalized_boxes, **aug_kwargs)


def apply_rand_augment(augmentations, data, n, m, num_magnitude_bins=31, seed=None, **kwargs):
    """Applies `augmentations` in RandAugment fashion: `n` of them per sample, uniformly,
    each with magnitude bin `m`. `kwargs` go to the augmentations whose signature names
    them (an unused one is an error); `masks`, `boxes` and `normalized_boxes` are taken
    by built-in lists (see rand_augment)."""
    masks, boxes = kwargs.pop("masks", None), kwargs.pop("boxes", None)
    normalized_boxes = kwargs.pop("normalized_boxes", False)
    if not isinstance(n, int) or n < 0:
        raise Exception(f"The number of operations to apply `n` must be a non-negative integer, "
                        f"got {n}.")
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise Exception(f"The `num_magnitude_bins` must be a positive integer, got "
                        f"{num_magnitude_bins}.")
    if not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise Exception(f"The magnitude bin `m` must be an integer from "
                        f"`[0, {num_magnitude_bins - 1}]` range. Got {m}.")
    if n == 0:
        warnings.warn("The `apply_rand_augment` was called with `n=0`, no augmentation will be "
                      "applied.", Warning)
        return data
    if len(augmentations) == 0:
        raise Exception("The `augmentations` list cannot be empty, unless n=0. Got empty list "
                        "in `apply_rand_augment` call.")
    policy = dict(policy="rand_augment", n=n, m=m, num_magnitude_bins=num_magnitude_bins)
    for mono in (True, False):
        conv = augmentations[0].convention
        refs = {x.name: x for x in get_rand_augment_suite(False, convention=conv, monotonic_mag=mono)}
        if _apply.fusable(augmentations, refs):
            args, apply = _apply.fused_args(augmentations, kwargs, "apply_rand_augment")
            args.update(policy, monotonic_mag=mono)
            decisions = _apply.choose(seed, **args)
            return _apply.apply_fused(data, decisions, args, apply, masks, boxes,
                                      normalized_boxes)
    _apply.no_targets(masks, boxes, "apply_rand_augment", augmentations)
    _apply.forbid_unused_kwargs(augmentations, kwargs, "apply_rand_augment")
    decisions = _apply.choose(seed, num_augmentations=len(augmentations), **policy)
    return _apply.run_stages(augmentations, data, decisions, n, num_magnitude_bins, kwargs,
                             False, "apply_rand_augment")


def get_rand_augment_suite(use_shape=False, max_translate_abs=None, max_translate_rel=None,
                           convention="dali", monotonic_mag=True):
    """The RandAugment suite: DALI's (translate_x, translate_y, shear_x, shear_y, rotate,
    brightness, contrast, color, sharpness, posterize, solarize, equalize, auto_contrast,
    identity) or, with convention="torchvision", torchvision's RandAugment space in its
    order."""
    check_convention(convention)
    if convention == "torchvision":
        t = a.torchvision
        tx, ty = get_translations(use_shape, 100, 150 / 331, max_translate_abs,
                                  max_translate_rel, convention, tv_relative=True)
        return [t.identity, t.shear_x, t.shear_y, tx, ty, t.rotate, t.brightness, t.color,
                t.contrast, t.sharpness, t.posterize.augmentation(mag_range=(8, 4)),
                t.solarize, t.auto_contrast, t.equalize]
    if not monotonic_mag:
        return get_rand_augment_non_monotonic_suite(use_shape, max_translate_abs,
                                                    max_translate_rel)
    translations = get_translations(use_shape, 100, 100 / 224, max_translate_abs,
                                    max_translate_rel)
    return translations + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(use_shape=False, max_translate_abs=None,
                                         max_translate_rel=None):
    """DALI's RandAugment suite with AutoAugment's (non-monotonic) colour ranges."""
    translations = get_translations(use_shape, 100, 100 / 224, max_translate_abs,
                                    max_translate_rel)
    return translations + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
