"""The ``@augmentation`` decorator (DALI's signature)."""

from ._augmentation import Augmentation


def augmentation(function=None, *, mag_range=None, randomly_negate=None, mag_to_param=None,
                 param_device=None, name=None, augmentation_cls=None):
    """Turns ``function(data, param, **kwargs)`` (built from ``fn.*`` operators) into an
    augmentation usable by rand_augment / trivial_augment / auto_augment's apply_*
    functions.

    Args:
        mag_range: (low, high) magnitudes split into ``num_magnitude_bins`` bins, or an
            array of magnitudes. None: the augmentation takes no magnitude (param is None).
        randomly_negate: the magnitude is negated for half of the samples.
        mag_to_param: magnitude -> the parameter passed to ``function`` (NumPy data,
            computed once per bin). Default: the magnitude itself.
        param_device: accepted for DALI compatibility ("cpu").
        name: the augmentation's name (default: the function's).
    """
    cls = augmentation_cls or Augmentation

    def decorator(fun):
        return cls(fun, mag_range=mag_range, randomly_negate=randomly_negate,
                   mag_to_param=mag_to_param, param_device=param_device, name=name)

    if function is None:
        return decorator
    if not callable(function):
        raise Exception(f"The `@augmentation` decorator was used to decorate an object "
                        f"that is not callable: {function}.")
    return decorator(function)
