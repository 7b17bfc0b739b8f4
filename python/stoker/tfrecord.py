"""Feature descriptions for ``fn.readers.tfrecord`` (DALI's ``dali.tfrecord`` module).

::

    import stoker.tfrecord as tfrec
    out = fn.readers.tfrecord(path=..., index_path=..., features={
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
        "bbox": tfrec.VarLenFeature(tfrec.float32, 0.0)})
    images, labels = out["image/encoded"], out["image/class/label"]

The C operator takes the dict as parallel lists (``feature_names``, ``feature_types``,
``feature_kinds``, ``feature_ndims``, ``feature_shapes``, ``feature_defaults``,
``feature_has_default``; see docs/formats.md); :func:`feature_args` does the mapping.
"""

import enum
import numbers
from collections.abc import Mapping

import numpy as np

from .errors import InvalidArgumentError

__all__ = ["FeatureType", "string", "int64", "float32", "FixedLenFeature", "VarLenFeature"]


class FeatureType(enum.Enum):
    """The element type of a feature: its bytes (``string``), ``int64`` or ``float32``."""

    string = "string"
    int64 = "int64"
    float32 = "float32"

    def __repr__(self):
        return f"stoker.tfrecord.{self.name}"


string = FeatureType.string
int64 = FeatureType.int64
float32 = FeatureType.float32


def _feature_type(dtype, what):
    if isinstance(dtype, FeatureType):
        return dtype
    if isinstance(dtype, str) and dtype in FeatureType.__members__:
        return FeatureType[dtype]
    raise InvalidArgumentError(
        f"{what}: dtype must be stoker.tfrecord.string, int64 or float32, got {dtype!r}")


def _shape(shape, what):
    if isinstance(shape, numbers.Integral):
        shape = [shape]
    try:
        dims = [int(d) for d in shape]
        ok = all(d >= 0 and d == e for d, e in zip(dims, shape))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidArgumentError(
            f"{what}: shape must be a list of non-negative ints (() for a scalar), got {shape!r}")
    return tuple(dims)


class FixedLenFeature:
    """A feature with exactly prod(shape) values, read as a tensor of that shape.

    A ``string`` feature holds one value (shape ``()`` or ``[1]``), read as its bytes.
    ``default_value`` (one value, broadcast, or prod(shape) values) replaces a missing
    feature; without it a record lacking the feature is an error.
    """

    __slots__ = ("shape", "dtype", "default_value")

    def __init__(self, shape, dtype, default_value=None):
        self.dtype = _feature_type(dtype, "FixedLenFeature")
        self.shape = _shape(shape, "FixedLenFeature")
        self.default_value = default_value

    def __repr__(self):
        return f"FixedLenFeature({list(self.shape)}, {self.dtype!r}, {self.default_value!r})"


class VarLenFeature:
    """A feature with any number of values, read as a 1-D tensor.

    ``default_value`` replaces a missing feature; without it a missing feature is empty.
    DALI's form with a partial shape first, ``VarLenFeature([-1], dtype, default)``, is
    accepted for 1-D shapes.
    """

    __slots__ = ("dtype", "default_value")

    def __init__(self, *args, **kwargs):
        if args and isinstance(args[0], (list, tuple, np.ndarray, numbers.Integral)):
            partial_shape, args = args[0], args[1:]
            if list(np.atleast_1d(partial_shape)) != [-1]:
                raise InvalidArgumentError(
                    f"VarLenFeature: partial shape {partial_shape!r} is not supported (the "
                    "feature is read as a 1-D tensor; use [-1] or leave it out)")
        try:
            dtype, default_value = self._parse(*args, **kwargs)
        except TypeError as e:
            raise InvalidArgumentError(f"VarLenFeature: {e}") from None
        self.dtype = _feature_type(dtype, "VarLenFeature")
        self.default_value = default_value

    @staticmethod
    def _parse(dtype, default_value=None):
        return dtype, default_value

    def __repr__(self):
        return f"VarLenFeature({self.dtype!r}, {self.default_value!r})"


def _string_default(value, what):
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgumentError(
                f"{what}: a bytes default must be UTF-8 (arguments reach the C library as "
                "text)") from None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what}: the default of a string feature must be str or "
                                   f"bytes, got {type(value).__name__}")
    if "\0" in value:
        raise InvalidArgumentError(f"{what}: the default cannot contain a NUL byte")
    return value


def _number_default(value, dtype, what):
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf" or arr.size == 0:
        raise InvalidArgumentError(
            f"{what}: the default of a {dtype.value} feature must be one number or a list of "
            f"numbers, got {value!r}")
    values = arr.ravel().tolist()
    if dtype is FeatureType.int64:
        if arr.dtype.kind == "f" and not all(float(v).is_integer() for v in values):
            raise InvalidArgumentError(f"{what}: the default of an int64 feature must be "
                                       f"integers, got {value!r}")
        return ", ".join(str(int(v)) for v in values)
    # repr() is the shortest text that reads back as the same double; the C side's strtof
    # then rounds it to the float32 that np.float32(v) would give.
    return ", ".join(repr(float(v)) for v in values)


def _default_text(feature, what):
    """The C form of a feature's default (None when it has none)."""
    if feature.default_value is None:
        return None
    if feature.dtype is FeatureType.string:
        return _string_default(feature.default_value, what)
    return _number_default(feature.default_value, feature.dtype, what)


def feature_args(op, features):
    """The C operator's parallel-list arguments for a DALI ``features`` dict."""
    if not isinstance(features, Mapping) or not features:
        raise InvalidArgumentError(
            f"{op}: argument 'features' must be a non-empty dict of feature name -> "
            "stoker.tfrecord.FixedLenFeature / VarLenFeature")
    names, types, kinds, ndims, shapes, defaults, has_default = [], [], [], [], [], [], []
    for key, feature in features.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{op}: feature names must be strings, got {key!r}")
        what = f"{op}: feature '{key}'"
        if not isinstance(feature, (FixedLenFeature, VarLenFeature)):
            raise InvalidArgumentError(
                f"{what} must be a stoker.tfrecord.FixedLenFeature or VarLenFeature, got "
                f"{type(feature).__name__}")
        names.append(key)
        types.append(feature.dtype.value)
        fixed = isinstance(feature, FixedLenFeature)
        kinds.append("fixed" if fixed else "var")
        ndims.append(len(feature.shape) if fixed else 0)
        shapes.extend(feature.shape if fixed else ())
        text = _default_text(feature, what)
        defaults.append("" if text is None else text)
        has_default.append(0 if text is None else 1)
    args = {"feature_names": names, "feature_types": types, "feature_kinds": kinds,
            "feature_ndims": ndims}
    if shapes:
        args["feature_shapes"] = shapes
    if any(has_default):
        args["feature_defaults"] = defaults
        args["feature_has_default"] = has_default
    return args
