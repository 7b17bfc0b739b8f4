"""Enumerations and constants, named as in ``nvidia.dali.types``.

Operator arguments accept these members or the plain strings the C library uses:
``dtype=types.FLOAT`` is ``dtype="float32"``, ``output_type=types.RGB`` is
``output_type="RGB"``, ``interp_type=types.INTERP_LINEAR`` is ``interp_type="linear"``.
"""

import enum

import numpy as np


class _CEnum(enum.Enum):
    """An enum whose members stand for one string value of the C library."""

    @property
    def c_value(self):
        return self.value[0]

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"


class DALIDataType(_CEnum):
    """Element types. ``FLOAT`` is float32, ``FLOAT64`` is float64 (as in DALI)."""

    UINT8 = ("uint8", np.uint8)
    UINT16 = ("uint16", np.uint16)
    UINT32 = ("uint32", np.uint32)
    UINT64 = ("uint64", np.uint64)
    INT8 = ("int8", np.int8)
    INT16 = ("int16", np.int16)
    INT32 = ("int32", np.int32)
    INT64 = ("int64", np.int64)
    FLOAT16 = ("float16", np.float16)
    FLOAT = ("float32", np.float32)
    FLOAT64 = ("float64", np.float64)
    BOOL = ("bool", np.bool_)

    @property
    def numpy(self):
        return np.dtype(self.value[1])

    # NumPy reads the type of an object from its `dtype` attribute (np.dtype(types.FLOAT),
    # array.astype(tensor.dtype) work).
    dtype = numpy

    def __eq__(self, other):
        # A member also equals its NumPy type, so code written for tl[i] as a NumPy array
        # (`tl[i].dtype == np.uint8`) keeps working now that tl[i] is a TensorCPU.
        if isinstance(other, DALIDataType):
            return self is other
        if isinstance(other, np.dtype) or (isinstance(other, type) and issubclass(other, np.generic)):
            return self.numpy == np.dtype(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = enum.Enum.__hash__


DataType = DALIDataType


class DALIImageType(_CEnum):
    """Colour spaces of decoded images."""

    RGB = ("RGB",)
    BGR = ("BGR",)
    GRAY = ("GRAY",)
    YCbCr = ("YCbCr",)


class DALIInterpType(_CEnum):
    """Interpolation methods (C names: nearest, linear, cubic, lanczos3)."""

    INTERP_NN = ("nearest",)
    INTERP_LINEAR = ("linear",)
    INTERP_CUBIC = ("cubic",)
    INTERP_LANCZOS3 = ("lanczos3",)
    # DALI's triangular filter is its linear one (antialiased when downscaling unless
    # antialias=False): DALI 2.4 gives identical bytes for both, so it runs as "linear".
    INTERP_TRIANGULAR = ("linear", "triangular")
    INTERP_GAUSSIAN = ("gaussian",)


class TensorLayout(str):
    """A layout string such as "HWC"; a plain ``str`` subclass, as in DALI."""

    __slots__ = ()


class PipelineAPIType(enum.Enum):
    """Accepted for DALI compatibility; stoker has one execution API."""

    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


# Module-level aliases, as DALI users write them: types.FLOAT, types.RGB, ...
for _enum in (DALIDataType, DALIImageType, DALIInterpType):
    for _member in _enum:
        globals()[_member.name] = _member
NO_TYPE = None

NHWC, NCHW, HWC, CHW = TensorLayout("NHWC"), TensorLayout("NCHW"), TensorLayout("HWC"), TensorLayout("CHW")
NFHWC, NFCHW, FHWC, FCHW = (TensorLayout("NFHWC"), TensorLayout("NFCHW"), TensorLayout("FHWC"),
                            TensorLayout("FCHW"))

_DTYPE_BY_NAME = {m.c_value: m for m in DALIDataType}
_DTYPE_BY_NAME.update({"float": DALIDataType.FLOAT, "double": DALIDataType.FLOAT64,
                       "half": DALIDataType.FLOAT16})


def to_c_value(value):
    """The C library's string for an enum member (other values pass through)."""
    if isinstance(value, _CEnum):
        return value.c_value
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    return value


def dtype_from_name(name):
    """The DALIDataType for a C dtype name ("uint8", "float32"...)."""
    try:
        return _DTYPE_BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype name {name!r}") from None


def to_numpy_type(dtype):
    """The NumPy dtype of a DALIDataType or dtype name."""
    if isinstance(dtype, str):
        dtype = dtype_from_name(dtype)
    return dtype.numpy


# ---- type promotion of arithmetic on data nodes (DALI's table) ----

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_FLOAT_BITS = {"float16": 16, "float32": 32, "float64": 64}


def promote(a, b):
    """The result type of a binary arithmetic operator on types ``a`` and ``b``.

    DALI's rules: T op T -> T; a float with a non-float -> the float; two floats, two
    signed or two unsigned integers -> the wider; signed intX with unsigned uintY -> int of
    twice Y's width if X <= Y (capped at 64 bits), else intX; bool with T -> T. Accepts and
    returns C dtype names.
    """
    a, b = to_c_value(a), to_c_value(b)
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if a in _FLOAT_BITS or b in _FLOAT_BITS:
        if a in _FLOAT_BITS and b in _FLOAT_BITS:
            return a if _FLOAT_BITS[a] >= _FLOAT_BITS[b] else b
        return a if a in _FLOAT_BITS else b
    if a in _INT_BITS and b in _INT_BITS:
        return a if _INT_BITS[a] >= _INT_BITS[b] else b
    if a in _UINT_BITS and b in _UINT_BITS:
        return a if _UINT_BITS[a] >= _UINT_BITS[b] else b
    signed, unsigned = (a, b) if a in _INT_BITS else (b, a)
    if _INT_BITS[signed] <= _UINT_BITS[unsigned]:
        return f"int{min(2 * _UINT_BITS[unsigned], 64)}"
    return signed


class ScalarConstant:
    """A constant operand of arithmetic on data nodes (see :func:`Constant`)."""

    __slots__ = ("value", "dtype", "shape", "layout", "device")

    def __init__(self, value, dtype=None, shape=None, layout=None, device=None):
        self.value, self.dtype, self.shape = value, dtype, shape
        self.layout, self.device = layout, device

    def __repr__(self):
        return f"Constant({self.value!r}, dtype={self.dtype!r})"

    def __getitem__(self, index):
        """Indexes the constant as a data node (``types.Constant(table)[idx_node]`` picks
        an entry per sample, as in DALI)."""
        from ._graph import constant_node
        return constant_node(self)[index]


def Constant(value, dtype=None, shape=None, layout=None, device=None, **kwargs):
    """A constant for pipeline graphs, as ``nvidia.dali.types.Constant``.

    Python ints are int32 and floats float32 unless ``dtype`` says otherwise; an array
    keeps its own dtype. Used as an operand of arithmetic on data nodes, or as a data
    node itself when the registry has a ``constant`` operator.
    """
    if isinstance(value, (list, tuple)) or isinstance(value, np.ndarray):
        arr = np.asarray(value)
        if dtype is None:
            dtype = {"int64": "int32", "float64": "float32"}.get(arr.dtype.name, arr.dtype.name)
        return ScalarConstant(arr, dtype=to_c_value(dtype), shape=shape or arr.shape,
                              layout=layout, device=device)
    if dtype is None:
        dtype = "bool" if isinstance(value, (bool, np.bool_)) else (
            "int32" if isinstance(value, (int, np.integer)) else "float32")
    return ScalarConstant(value, dtype=to_c_value(dtype), shape=shape, layout=layout, device=device)
