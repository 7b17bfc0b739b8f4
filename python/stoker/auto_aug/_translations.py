"""translate_x / translate_y with the scheme's ranges (DALI's get_translations rules)."""

from . import augmentations as a


def _hw(v):
    if isinstance(v, (tuple, list)):
        h, w = v
        return h, w
    return v, v


def get_translations(use_shape, default_abs, default_rel, max_translate_abs=None,
                     max_translate_rel=None, convention="dali", tv_relative=False):
    if not isinstance(use_shape, bool):
        raise Exception(f"The `use_shape` is a flag that should be set to either True or False, "
                        f"got {use_shape}.")
    if convention == "torchvision":
        t = a.torchvision
        if max_translate_abs is not None and max_translate_rel is not None:
            raise Exception("Give `max_translate_abs` or `max_translate_rel`, not both.")
        rel = max_translate_rel is not None or (max_translate_abs is None and tv_relative)
        if rel:
            h, w = _hw(max_translate_rel if max_translate_rel is not None else default_rel)
            return [t.translate_x.augmentation((0, w), True),
                    t.translate_y.augmentation((0, h), True)]
        h, w = _hw(max_translate_abs if max_translate_abs is not None else default_abs)
        return [t.translate_x_no_shape.augmentation((0, w), True),
                t.translate_y_no_shape.augmentation((0, h), True)]
    if use_shape:
        if max_translate_abs is not None:
            raise Exception("The argument `max_translate_abs` cannot be used with image shapes. "
                            "You may use `max_translate_rel` instead.")
        h, w = _hw(default_rel if max_translate_rel is None else max_translate_rel)
        return [a.translate_x.augmentation((0, w), True), a.translate_y.augmentation((0, h), True)]
    if max_translate_rel is not None:
        raise Exception("The argument `max_translate_rel` cannot be used without image shapes. "
                        "You may use `max_translate_abs` instead.")
    h, w = _hw(default_abs if max_translate_abs is None else max_translate_abs)
    return [a.translate_x_no_shape.augmentation((0, w), True),
            a.translate_y_no_shape.augmentation((0, h), True)]
