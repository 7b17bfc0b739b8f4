"""AutoAugment (Cubuk et al., https://arxiv.org/abs/1805.09501) with the published
policies, DALI's signatures; ``convention="torchvision"`` gives torchvision's AutoAugment
(its policy tables, 10 bins, its magnitudes and Pillow operations)."""

from . import _apply
from . import augmentations as a
from ._conventions import check_convention
from ._translations import get_translations
from .core import Policy

# The sub-policies as published: DALI's image_net is policy_v0 of the TensorFlow TPU
# AutoAugment code; the other three are the AutoAugment paper's tables as torchvision
# lists them (IMAGENET, CIFAR10, SVHN), probability-0 stages included -- DALI lists the
# same sub-policies without those stages (its reduced_image_net, reduced_cifar10, svhn).
_IMAGE_NET_V0 = [
    [("equalize", 0.8, None), ("shear_y", 0.8, 4)], [("color", 0.4, 9), ("equalize", 0.6, None)],
    [("color", 0.4, 1), ("rotate", 0.6, 8)], [("solarize", 0.8, 3), ("equalize", 0.4, None)],
    [("solarize", 0.4, 2), ("solarize", 0.6, 2)], [("color", 0.2, 0), ("equalize", 0.8, None)],
    [("equalize", 0.4, None), ("solarize_add", 0.8, 3)], [("shear_x", 0.2, 9), ("rotate", 0.6, 8)],
    [("color", 0.6, 1), ("equalize", 1.0, None)], [("invert", 0.4, None), ("rotate", 0.6, 0)],
    [("equalize", 1.0, None), ("shear_y", 0.6, 3)], [("color", 0.4, 7), ("equalize", 0.6, None)],
    [("posterize", 0.4, 6), ("auto_contrast", 0.4, None)], [("solarize", 0.6, 8), ("color", 0.6, 9)],
    [("solarize", 0.2, 4), ("rotate", 0.8, 9)], [("rotate", 1.0, 7), ("translate_y", 0.8, 9)],
    [("solarize", 0.8, 4)], [("shear_y", 0.8, 0), ("color", 0.6, 4)],
    [("color", 1.0, 0), ("rotate", 0.6, 2)], [("equalize", 0.8, None)],
    [("equalize", 1.0, None), ("auto_contrast", 0.6, None)],
    [("shear_y", 0.4, 7), ("solarize_add", 0.6, 7)], [("posterize", 0.8, 2), ("solarize", 0.6, 10)],
    [("solarize", 0.6, 8), ("equalize", 0.6, None)], [("color", 0.8, 6), ("rotate", 0.4, 5)],
]
_REDUCED_IMAGE_NET = [
    [("posterize", 0.4, 8), ("rotate", 0.6, 9)], [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
    [("equalize", 0.8, None), ("equalize", 0.6, None)], [("posterize", 0.6, 7), ("posterize", 0.6, 6)],
    [("equalize", 0.4, None), ("solarize", 0.2, 4)], [("equalize", 0.4, None), ("rotate", 0.8, 8)],
    [("solarize", 0.6, 3), ("equalize", 0.6, None)], [("posterize", 0.8, 5), ("equalize", 1.0, None)],
    [("rotate", 0.2, 3), ("solarize", 0.6, 8)], [("equalize", 0.6, None), ("posterize", 0.4, 6)],
    [("rotate", 0.8, 8), ("color", 0.4, 0)], [("rotate", 0.4, 9), ("equalize", 0.6, None)],
    [("equalize", 0.0, None), ("equalize", 0.8, None)], [("invert", 0.6, None), ("equalize", 1.0, None)],
    [("color", 0.6, 4), ("contrast", 1.0, 8)], [("rotate", 0.8, 8), ("color", 1.0, 2)],
    [("color", 0.8, 8), ("solarize", 0.8, 7)], [("sharpness", 0.4, 7), ("invert", 0.6, None)],
    [("shear_x", 0.6, 5), ("equalize", 1.0, None)], [("color", 0.4, 0), ("equalize", 0.6, None)],
    [("equalize", 0.4, None), ("solarize", 0.2, 4)], [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
    [("invert", 0.6, None), ("equalize", 1.0, None)], [("color", 0.6, 4), ("contrast", 1.0, 8)],
    [("equalize", 0.8, None), ("equalize", 0.6, None)],
]
_REDUCED_CIFAR10 = [
    [("invert", 0.1, None), ("contrast", 0.2, 6)], [("rotate", 0.7, 2), ("translate_x", 0.3, 9)],
    [("sharpness", 0.8, 1), ("sharpness", 0.9, 3)], [("shear_y", 0.5, 8), ("translate_y", 0.7, 9)],
    [("auto_contrast", 0.5, None), ("equalize", 0.9, None)], [("shear_y", 0.2, 7), ("posterize", 0.3, 7)],
    [("color", 0.4, 3), ("brightness", 0.6, 7)], [("sharpness", 0.3, 9), ("brightness", 0.7, 9)],
    [("equalize", 0.6, None), ("equalize", 0.5, None)], [("contrast", 0.6, 7), ("sharpness", 0.6, 5)],
    [("color", 0.7, 7), ("translate_x", 0.5, 8)], [("equalize", 0.3, None), ("auto_contrast", 0.4, None)],
    [("translate_y", 0.4, 3), ("sharpness", 0.2, 6)], [("brightness", 0.9, 6), ("color", 0.2, 8)],
    [("solarize", 0.5, 2), ("invert", 0.0, None)], [("equalize", 0.2, None), ("auto_contrast", 0.6, None)],
    [("equalize", 0.2, None), ("equalize", 0.6, None)], [("color", 0.9, 9), ("equalize", 0.6, None)],
    [("auto_contrast", 0.8, None), ("solarize", 0.2, 8)], [("brightness", 0.1, 3), ("color", 0.7, 0)],
    [("solarize", 0.4, 5), ("auto_contrast", 0.9, None)], [("translate_y", 0.9, 9), ("translate_y", 0.7, 9)],
    [("auto_contrast", 0.9, None), ("solarize", 0.8, 3)], [("equalize", 0.8, None), ("invert", 0.1, None)],
    [("translate_y", 0.7, 9), ("auto_contrast", 0.9, None)],
]
_SVHN = [
    [("shear_x", 0.9, 4), ("invert", 0.2, None)], [("shear_y", 0.9, 8), ("invert", 0.7, None)],
    [("equalize", 0.6, None), ("solarize", 0.6, 6)], [("invert", 0.9, None), ("equalize", 0.6, None)],
    [("equalize", 0.6, None), ("rotate", 0.9, 3)], [("shear_x", 0.9, 4), ("auto_contrast", 0.8, None)],
    [("shear_y", 0.9, 8), ("invert", 0.4, None)], [("shear_y", 0.9, 5), ("solarize", 0.2, 6)],
    [("invert", 0.9, None), ("auto_contrast", 0.8, None)], [("equalize", 0.6, None), ("rotate", 0.9, 3)],
    [("shear_x", 0.9, 4), ("solarize", 0.3, 3)], [("shear_y", 0.8, 8), ("invert", 0.7, None)],
    [("equalize", 0.9, None), ("translate_y", 0.6, 6)], [("invert", 0.9, None), ("equalize", 0.6, None)],
    [("contrast", 0.3, 3), ("rotate", 0.8, 4)], [("invert", 0.8, None), ("translate_y", 0.0, 2)],
    [("shear_y", 0.7, 6), ("solarize", 0.4, 8)], [("invert", 0.6, None), ("rotate", 0.8, 4)],
    [("shear_y", 0.3, 7), ("translate_x", 0.9, 3)], [("shear_x", 0.1, 6), ("invert", 0.6, None)],
    [("solarize", 0.7, 2), ("translate_y", 0.6, 7)], [("shear_y", 0.8, 4), ("invert", 0.8, None)],
    [("shear_x", 0.7, 9), ("translate_y", 0.8, 3)], [("shear_y", 0.8, 5), ("auto_contrast", 0.7, None)],
    [("shear_x", 0.7, 2), ("invert", 0.1, None)],
]


def _augmentations(convention, use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """name -> the policies' augmentation of each operation."""
    if convention == "torchvision":
        t = a.torchvision
        tx, ty = get_translations(use_shape, 100, 150 / 331, max_translate_abs, max_translate_rel,
                                  convention, tv_relative=True)
        augs = [t.shear_x, t.shear_y, tx, ty, t.rotate, t.brightness, t.color, t.contrast,
                t.sharpness, t.posterize, t.solarize, t.solarize_add, t.auto_contrast,
                t.equalize, t.invert]
    else:
        tx, ty = get_translations(use_shape, 250, 1.0, max_translate_abs, max_translate_rel)
        augs = [a.shear_x.augmentation((0, 0.3), True), a.shear_y.augmentation((0, 0.3), True),
                tx, ty, a.rotate.augmentation((0, 30), True),
                a.brightness.augmentation((0.1, 1.9), False, None),
                a.color.augmentation((0.1, 1.9), False, None),
                a.contrast.augmentation((0.1, 1.9), False, None),
                a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
                a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
                a.solarize.augmentation((0, 256), False), a.solarize_add.augmentation((0, 110), False),
                a.invert, a.equalize, a.auto_contrast]
    return {x.name: x for x in augs}


def _policy(name, title, table, convention, use_shape, max_translate_abs, max_translate_rel):
    check_convention(convention)
    augs = _augmentations(convention, use_shape, max_translate_abs, max_translate_rel)
    tv = convention == "torchvision"
    subs = [[(augs[op], p, mag) for op, p, mag in sp if tv or p > 0] for sp in table]
    policy = Policy(title, 10 if tv else 11, subs)
    policy._builtin = (name, convention)
    return policy


def get_image_net_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None,
                         convention="dali"):
    """DALI's ImageNet policy (policy_v0 of the TensorFlow TPU code, 11 bins); with
    convention="torchvision", torchvision's AutoAugmentPolicy.IMAGENET (the paper's table,
    10 bins)."""
    table = _REDUCED_IMAGE_NET if convention == "torchvision" else _IMAGE_NET_V0
    return _policy("image_net", "ImageNetPolicy", table, convention, use_shape,
                   max_translate_abs, max_translate_rel)


def get_reduced_image_net_policy(convention="dali"):
    """The paper's ImageNet policy (searched on reduced ImageNet)."""
    return _policy("reduced_image_net", "ReducedImageNetPolicy", _REDUCED_IMAGE_NET, convention,
                   False, None, None)


def get_reduced_cifar10_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None,
                               convention="dali"):
    """The paper's reduced CIFAR-10 policy (torchvision's CIFAR10)."""
    return _policy("reduced_cifar10", "ReducedCifar10Policy", _REDUCED_CIFAR10, convention,
                   use_shape, max_translate_abs, max_translate_rel)


def get_svhn_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None,
                    convention="dali"):
    """The paper's SVHN policy."""
    return _policy("svhn", "SvhnPolicy", _SVHN, convention, use_shape, max_translate_abs,
                   max_translate_rel)


def auto_augment(data, policy_name="image_net", shape=None, fill_value=_apply.DEFAULT,
                 interp_type=None, max_translate_abs=None, max_translate_rel=None, seed=None,
                 convention="dali", masks=None, boxes=None, normalized_boxes=False):
    """Applies a published AutoAugment policy ("image_net", "reduced_image_net", "svhn",
    "reduced_cifar10") to uint8 HWC images: per sample one sub-policy uniformly, each of its
    stages with its probability. Translations: up to 250 pixels, or `max_translate_rel`
    (default 1) of `shape`. See rand_augment for fill_value, interp_type, seed,
    convention, masks and boxes."""
    check_convention(convention)
    getters = {"image_net": get_image_net_policy, "reduced_image_net": None,
               "svhn": get_svhn_policy, "reduced_cifar10": get_reduced_cifar10_policy}
    if not isinstance(policy_name, str) or policy_name not in getters:
        names = ", ".join(f"`{n}`" for n in getters)
        raise Exception(f"The `policy_name` must be a string that takes one of the values: {names}")
    fill_value = _apply.resolve_fill(fill_value, convention)
    aug_kwargs = {"fill_value": fill_value, "interp_type": interp_type}
    if policy_name == "reduced_image_net":
        for arg, name in ((shape, "shape"), (max_translate_abs, "max_translate_abs"),
                          (max_translate_rel, "max_translate_rel")):
            if arg is not None:
                raise Exception(f"The policy `{policy_name}` does not contain any augmentations "
                                f"that rely on the image shape. The `{name}` argument must not "
                                f"be specified in that case.")
        policy = get_reduced_image_net_policy(convention=convention)
    else:
        if shape is not None:
            if convention == "torchvision":
                raise Exception("Under the torchvision convention, `shape` is not used.")
            aug_kwargs["shape"] = shape
        policy = getters[policy_name](shape is not None, max_translate_abs, max_translate_rel,
                                      convention=convention)
    return apply_auto_augment(policy, data, seed, masks=masks, boxes=boxes,
                              normalized_boxes=normalized_boxes, **aug_kwargs)


def auto_augment_image_net(data, shape=None, fill_value=_apply.DEFAULT, interp_type=None,
                           max_translate_abs=None, max_translate_rel=None, seed=None,
                           convention="dali", masks=None, boxes=None, normalized_boxes=False):
    """auto_augment with policy_name="image_net"."""
    return auto_augment(data, "image_net", shape, fill_value, interp_type, max_translate_abs,
                        max_translate_rel, seed, convention, masks, boxes, normalized_boxes)


def _cells(policy, augs):
    stages = max(len(sp) for sp in policy.sub_policies)
    index = {id(x): k for k, x in enumerate(augs)}
    cells = {"policy_augmentations": [], "policy_probabilities": [], "policy_magnitude_bins": []}
    for sp in policy.sub_policies:
        padded = list(sp) + [None] * (stages - len(sp))
        for d in padded:
            cells["policy_augmentations"].append(-1 if d is None else index[id(d[0])])
            cells["policy_probabilities"].append(0.0 if d is None else float(d[1]))
            cells["policy_magnitude_bins"].append(-1 if d is None or d[2] is None else int(d[2]))
    cells["policy_stages"] = stages
    return stages, cells


def apply_auto_augment(policy, data, seed=None, **kwargs):
    """Applies an AutoAugment `policy` (core.Policy): per sample one sub-policy uniformly,
    then each of its stages with its probability. `kwargs` go to the augmentations that
    accept them; `masks`, `boxes` and `normalized_boxes` are taken by built-in policies."""
    masks, boxes = kwargs.pop("masks", None), kwargs.pop("boxes", None)
    normalized_boxes = kwargs.pop("normalized_boxes", False)
    if len(policy.sub_policies) == 0:
        raise Exception(f"Cannot run empty policy. Got {policy} in `apply_auto_augment` call.")
    augs = policy._ordered_augmentations()
    stages, cells = _cells(policy, augs)
    common = dict(policy="auto_augment", num_magnitude_bins=policy.num_magnitude_bins, **cells)
    conv = augs[0].convention
    if len(augs) <= 16 and _apply.fusable(augs, _augmentations(conv)):
        args, apply = _apply.fused_args(augs, kwargs, "apply_auto_augment")
        args.update(common)
        decisions = _apply.choose(seed, **args)
        return _apply.apply_fused(data, decisions, args, apply, masks, boxes, normalized_boxes)
    _apply.no_targets(masks, boxes, "apply_auto_augment", augs)
    _apply.forbid_unused_kwargs(augs, kwargs, "apply_auto_augment")
    decisions = _apply.choose(seed, num_augmentations=len(augs), **common)
    return _apply.run_stages(augs, data, decisions, stages, policy.num_magnitude_bins, kwargs,
                             True, "apply_auto_augment")
