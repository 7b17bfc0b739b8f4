"""TrivialAugmentWide (Müller and Hutter, https://arxiv.org/abs/2103.10158), DALI's
signatures, with ``convention="torchvision"`` for torchvision's TrivialAugmentWide."""

from . import _apply
from . import augmentations as a
from ._conventions import check_convention
from ._translations import get_translations


def trivial_augment_wide(data, num_magnitude_bins=31, shape=None, fill_value=_apply.DEFAULT,
                         interp_type=None, max_translate_abs=None, max_translate_rel=None,
                         seed=None, excluded=None, convention="dali", masks=None, boxes=None,
                         normalized_boxes=False):
    """Applies TrivialAugmentWide: one augmentation per sample, drawn uniformly from the wide
    suite, with a magnitude bin drawn uniformly from `num_magnitude_bins` (and a random
    sign). Translations: up to 32 pixels, or `max_translate_rel` (default 1) of `shape`.
    See rand_augment for the other arguments."""
    check_convention(convention)
    fill_value = _apply.resolve_fill(fill_value, convention)
    aug_kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    use_shape = shape is not None
    if use_shape:
        if convention == "torchvision":
            raise Exception("Under the torchvision convention, `shape` is not used.")
        aug_kwargs["shape"] = shape
    suite = get_trivial_augment_wide_suite(use_shape, max_translate_abs, max_translate_rel,
                                           convention=convention)
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise Exception(f"The `{name}` was specified in `excluded`, but the "
                            f"TrivialAugmentWide suite does not contain augmentation with this "
                            f"name. The augmentations in the suite are: {', '.join(names)}.")
    selected = [aug for aug in suite if aug.name not in (excluded or [])]
    return apply_trivial_augment(selected, data, num_magnitude_bins=num_magnitude_bins,
                                 seed=seed, masks=masks, boxes=boxes,
                                 normalized_boxes=normalized_boxes, **aug_kwargs)


def apply_trivial_augment(augmentations, data, num_magnitude_bins=31, seed=None, **kwargs):
    """Applies `augmentations` in TrivialAugment fashion: one per sample, uniformly, with a
    uniformly drawn magnitude bin."""
    masks, boxes = kwargs.pop("masks", None), kwargs.pop("boxes", None)
    normalized_boxes = kwargs.pop("normalized_boxes", False)
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise Exception(f"The `num_magnitude_bins` must be a positive integer, got "
                        f"{num_magnitude_bins}.")
    if len(augmentations) == 0:
        raise Exception("The `augmentations` list cannot be empty. Got empty list in "
                        "`apply_trivial_augment` call.")
    policy = dict(policy="trivial_augment_wide", num_magnitude_bins=num_magnitude_bins)
    conv = augmentations[0].convention
    refs = {x.name: x for x in get_trivial_augment_wide_suite(convention=conv)}
    if _apply.fusable(augmentations, refs):
        args, apply = _apply.fused_args(augmentations, kwargs, "apply_trivial_augment")
        args.update(policy)
        decisions = _apply.choose(seed, **args)
        return _apply.apply_fused(data, decisions, args, apply, masks, boxes, normalized_boxes)
    _apply.no_targets(masks, boxes, "apply_trivial_augment", augmentations)
    _apply.forbid_unused_kwargs(augmentations, kwargs, "apply_trivial_augment")
    decisions = _apply.choose(seed, num_augmentations=len(augmentations), **policy)
    return _apply.run_stages(augmentations, data, decisions, 1, num_magnitude_bins, kwargs,
                             False, "apply_trivial_augment")


def get_trivial_augment_wide_suite(use_shape=False, max_translate_abs=None,
                                   max_translate_rel=None, convention="dali"):
    """The 14 augmentations of TrivialAugment's wide space (DALI's list, or torchvision's
    TrivialAugmentWide space with convention="torchvision")."""
    check_convention(convention)
    if convention == "torchvision":
        t = a.torchvision
        tx, ty = get_translations(use_shape, 32, 1.0, max_translate_abs, max_translate_rel,
                                  convention)
        wide = (0, 0.99)
        return [t.identity, t.shear_x.augmentation(mag_range=wide),
                t.shear_y.augmentation(mag_range=wide), tx, ty,
                t.rotate.augmentation(mag_range=(0, 135)),
                t.brightness.augmentation(mag_range=wide), t.color.augmentation(mag_range=wide),
                t.contrast.augmentation(mag_range=wide), t.sharpness.augmentation(mag_range=wide),
                t.posterize.augmentation(mag_range=(8, 2)), t.solarize, t.auto_contrast,
                t.equalize]
    translations = get_translations(use_shape, 32, 1.0, max_translate_abs, max_translate_rel)
    return translations + [
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
