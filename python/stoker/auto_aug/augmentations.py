"""The standard augmentations of AutoAugment, RandAugment and TrivialAugmentWide (DALI's
``nvidia.dali.auto_aug.augmentations``), and their torchvision definitions in
``augmentations.torchvision``.

Each is an :class:`~stoker.auto_aug.core.Augmentation`: called by the apply_* functions
as ``op(data, param, **kwargs)``, where ``param`` is the per-sample parameter
``mag_to_param(magnitude)``. They run stoker's ``auto_augment.augment`` operator, the code
of the fused ``auto_augment.apply``, so a list of built-ins gives the same bytes on the
fused path and on the per-sample selection path. Re-configure one with
``.augmentation(mag_range=..., randomly_negate=..., mag_to_param=..., name=...)``.

DALI's definitions (the module-level ones): brightness multiplies, contrast blends with
the image's float mean luma, color is the YIQ saturation, sharpness a 3x3 filter
(border reflect_101), equalize follows OpenCV, auto_contrast rounds; geometric ones fill
with 128 and interpolate linearly. torchvision's (``augmentations.torchvision``) are
Pillow's (ImageEnhance, ImageOps), fill 0 and nearest.
"""

import types as _pytypes

import numpy as np

from .. import fn
from .._graph import DataNode
from .core._augmentation import Augmentation


def _param(p):
    if p is None or isinstance(p, DataNode):
        return p
    return [float(v) for v in np.ravel(p)]


def _shape_arg(shape):
    if shape is None or isinstance(shape, DataNode):
        return shape
    return [float(v) for v in shape]


def _augment(op, data, param, convention, fill_value=None, interp_type=None, geometric=False,
             **extra):
    kwargs = {"op": op, "convention": convention}
    if param is not None:
        kwargs["param"] = _param(param)
    if geometric:
        if fill_value is None:
            kwargs["border"] = "clamp"
        else:
            kwargs["fill_value"] = [float(v) for v in np.ravel(fill_value)]
        if interp_type is not None:
            kwargs["interp_type"] = interp_type
    kwargs.update(extra)
    return fn.auto_augment.augment(data, **kwargs)


def _make(fun, convention, builtin, **config):
    return Augmentation(fun, convention=convention, builtin=builtin, **config)


# ---- DALI's mag_to_param mappings ----

def warp_x_param(magnitude):
    return [magnitude, 0]


def warp_y_param(magnitude):
    return [0, magnitude]


def shift_enhance_range(magnitude):
    """Enhance factors: 1 + magnitude (the magnitude being randomly negated)."""
    return 1 + magnitude


def sharpness_kernel(magnitude):
    """DALI's sharpness kernel (1 + m) delta - m blur, blur = [[1, 1, 1], [1, 5, 1],
    [1, 1, 1]] / 13, in float32."""
    blur = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13
    ident = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=np.float32)
    return -magnitude * blur + (1 + magnitude) * ident


def sharpness_kernel_shifted(magnitude):
    """The kernel for magnitudes in [0, 2] (AutoAugment's (0.1, 1.9) range)."""
    return sharpness_kernel(magnitude - 1)


def poster_mask_uint8(magnitude):
    """DALI's posterize mask: keep round(magnitude) bits (1 to 8)."""
    magnitude = np.round(magnitude).astype(np.uint32)
    magnitude = 1 if magnitude <= 0 else 8 if magnitude > 8 else magnitude
    nbits = np.round(8 - magnitude).astype(np.uint32)
    removal_mask = np.uint8(2) ** nbits - 1
    return np.array(np.uint8(255) ^ removal_mask, dtype=np.uint8)


def solarize_add_shift(shift):
    if shift >= 128:
        raise Exception("The solarize_add augmentation accepts shifts from 0 to 128")
    return np.uint8(shift)


# ---- DALI's augmentations ----

def _dali_shear(op):
    def shear(data, shear, fill_value=128, interp_type=None):
        return _augment(op, data, shear, "dali", fill_value, interp_type, True)
    shear.__name__ = op
    return shear


def _dali_translate(op):
    def translate(data, rel_offset, shape, fill_value=128, interp_type=None):
        return _augment(op, data, rel_offset, "dali", fill_value, interp_type, True,
                        shape=_shape_arg(shape), relative=True)
    translate.__name__ = op
    return translate


def _dali_translate_no_shape(op):
    def translate(data, offset, fill_value=128, interp_type=None):
        return _augment(op, data, offset, "dali", fill_value, interp_type, True)
    translate.__name__ = op + "_no_shape"
    return translate


def _rotate_op(convention, default_fill):
    def rotate(data, angle, fill_value=default_fill, interp_type=None, rotate_keep_size=True):
        if not rotate_keep_size:
            kw = {} if fill_value is None else {"fill_value": float(fill_value)}
            if interp_type is not None:
                kw["interp_type"] = interp_type
            return fn.rotate(data, angle=angle, keep_size=False, **kw)
        return _augment("rotate", data, angle, convention, fill_value, interp_type, True)
    return rotate


def _color_op(op, convention, param_name="parameter"):
    def color_op(data, parameter):
        return _augment(op, data, parameter, convention)
    color_op.__name__ = op
    return color_op


def _no_param_op(op, convention):
    def no_param(data, _):
        return _augment(op, data, None, convention)
    no_param.__name__ = op
    return no_param


def _identity(data, _):
    return data


_identity.__name__ = "identity"  # the augmentation's name, as DALI's

_D = "dali"
shear_x = _make(_dali_shear("shear_x"), _D, "shear_x", mag_range=(0, 0.3), randomly_negate=True,
                mag_to_param=warp_x_param)
shear_y = _make(_dali_shear("shear_y"), _D, "shear_y", mag_range=(0, 0.3), randomly_negate=True,
                mag_to_param=warp_y_param)
translate_x = _make(_dali_translate("translate_x"), _D, "translate_x", mag_range=(0.0, 1.0),
                    randomly_negate=True, mag_to_param=warp_x_param)
translate_x_no_shape = _make(_dali_translate_no_shape("translate_x"), _D, "translate_x",
                             mag_range=(0, 250), randomly_negate=True,
                             mag_to_param=warp_x_param, name="translate_x")
translate_y = _make(_dali_translate("translate_y"), _D, "translate_y", mag_range=(0.0, 1.0),
                    randomly_negate=True, mag_to_param=warp_y_param)
translate_y_no_shape = _make(_dali_translate_no_shape("translate_y"), _D, "translate_y",
                             mag_range=(0, 250), randomly_negate=True,
                             mag_to_param=warp_y_param, name="translate_y")
rotate = _make(_rotate_op(_D, 128), _D, "rotate", mag_range=(0, 30), randomly_negate=True)
brightness = _make(_color_op("brightness", _D), _D, "brightness", mag_range=(0, 0.9),
                   randomly_negate=True, mag_to_param=shift_enhance_range)
contrast = _make(_color_op("contrast", _D), _D, "contrast", mag_range=(0, 0.9),
                 randomly_negate=True, mag_to_param=shift_enhance_range)
color = _make(_color_op("color", _D), _D, "color", mag_range=(0, 0.9), randomly_negate=True,
              mag_to_param=shift_enhance_range)
sharpness = _make(_color_op("sharpness", _D), _D, "sharpness", mag_range=(0, 0.9),
                  randomly_negate=True, mag_to_param=sharpness_kernel)
posterize = _make(_color_op("posterize", _D), _D, "posterize", mag_range=(0, 4),
                  mag_to_param=poster_mask_uint8)
solarize = _make(_color_op("solarize", _D), _D, "solarize", mag_range=(256, 0))
solarize_add = _make(_color_op("solarize_add", _D), _D, "solarize_add", mag_range=(0, 110),
                     mag_to_param=solarize_add_shift)
invert = _make(_no_param_op("invert", _D), _D, "invert")
equalize = _make(_no_param_op("equalize", _D), _D, "equalize")
auto_contrast = _make(_no_param_op("auto_contrast", _D), _D, "auto_contrast")
identity = _make(_identity, _D, "identity")


# ---- torchvision's augmentations (Pillow definitions) ----

def _tv_translate(op):
    def translate(data, rel_offset, fill_value=0, interp_type=None):
        return _augment(op, data, rel_offset, "torchvision", fill_value, interp_type, True,
                        relative=True)
    translate.__name__ = op
    return translate


def _tv_translate_no_shape(op):
    def translate(data, offset, fill_value=0, interp_type=None):
        return _augment(op, data, offset, "torchvision", fill_value, interp_type, True)
    translate.__name__ = op + "_no_shape"
    return translate


def _tv_shear(op):
    def shear(data, shear, fill_value=0, interp_type=None):
        return _augment(op, data, shear, "torchvision", fill_value, interp_type, True)
    shear.__name__ = op
    return shear


def _trunc(magnitude):
    """torchvision's int() of a translation."""
    return np.trunc(np.float32(magnitude)).astype(np.float32)


def _bits(magnitude):
    return np.int32(magnitude)


def _tv_suite():
    T = "torchvision"
    ns = _pytypes.SimpleNamespace()
    ns.shear_x = _make(_tv_shear("shear_x"), T, "shear_x", mag_range=(0, 0.3), randomly_negate=True)
    ns.shear_y = _make(_tv_shear("shear_y"), T, "shear_y", mag_range=(0, 0.3), randomly_negate=True)
    ns.translate_x = _make(_tv_translate("translate_x"), T, "translate_x",
                           mag_range=(0, 150.0 / 331.0), randomly_negate=True)
    ns.translate_y = _make(_tv_translate("translate_y"), T, "translate_y",
                           mag_range=(0, 150.0 / 331.0), randomly_negate=True)
    ns.translate_x_no_shape = _make(_tv_translate_no_shape("translate_x"), T, "translate_x",
                                    mag_range=(0, 32), randomly_negate=True, mag_to_param=_trunc,
                                    name="translate_x")
    ns.translate_y_no_shape = _make(_tv_translate_no_shape("translate_y"), T, "translate_y",
                                    mag_range=(0, 32), randomly_negate=True, mag_to_param=_trunc,
                                    name="translate_y")
    ns.rotate = _make(_rotate_op(T, 0), T, "rotate", mag_range=(0, 30), randomly_negate=True)
    for op in ("brightness", "color", "contrast", "sharpness"):
        setattr(ns, op, _make(_color_op(op, T), T, op, mag_range=(0, 0.9), randomly_negate=True,
                              mag_to_param=shift_enhance_range))
    ns.posterize = _make(_color_op("posterize", T), T, "posterize", mag_range=(8, 4),
                         mag_to_param=_bits)
    ns.solarize = _make(_color_op("solarize", T), T, "solarize", mag_range=(255, 0))
    ns.solarize_add = _make(_color_op("solarize_add", T), T, "solarize_add", mag_range=(0, 110),
                            mag_to_param=solarize_add_shift)
    for op in ("invert", "equalize", "auto_contrast"):
        setattr(ns, op, _make(_no_param_op(op, T), T, op))
    ns.identity = _make(_identity, T, "identity")
    return ns


torchvision = _tv_suite()
