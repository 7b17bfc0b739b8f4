"""Operator schemas from the C registry, and argument validation against them.

Everything the Python API knows about operators comes from ``_stoker.registry()``: the
``fn``/``ops`` namespaces, their docstrings and signatures, the checks below, and the
``.pyi`` stubs. No operator is described by hand.
"""

import json
import math
import numbers

import numpy as np

from . import _stoker
from .errors import InvalidArgumentError
from . import types as _types

# Keyword arguments every operator call accepts besides its schema's arguments.
COMMON_KWARGS = ("device", "name")
# DALI arguments with no meaning in stoker, accepted and ignored so DALI code ports as is.
IGNORED_KWARGS = ("preserve", "bytes_per_sample_hint")

_TYPE_DESC = {
    "bool": "a bool",
    "int": "an int",
    "float": "a float",
    "str": "a string",
    "ints": "a list of ints",
    "floats": "a list of floats",
    "strs": "a list of strings",
}
_PY_TYPE = {"bool": "bool", "int": "int", "float": "float", "str": "str",
            "ints": "Sequence[int]", "floats": "Sequence[float]", "strs": "Sequence[str]"}


def parse_default(text):
    """The Python value of a default written in the C registry's text form."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    low = text.strip().lower()
    if low in ("inf", "+inf", "infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    if low == "nan":
        return math.nan
    return text


class ArgSchema:
    """One typed argument of an operator."""

    __slots__ = ("name", "type", "required", "per_sample", "range", "default_text", "default",
                 "choices", "doc")

    def __init__(self, d):
        self.name = d["name"]
        self.type = d["type"]
        self.required = d["required"]
        self.per_sample = d["per_sample"]
        self.range = d["range"]
        self.default_text = d["default"]
        self.default = parse_default(d["default"])
        self.choices = d["choices"].split("|") if d["choices"] else None
        self.doc = d["doc"] or ""

    @property
    def is_list(self):
        return self.type in ("ints", "floats", "strs")

    @property
    def py_type(self):
        """The type annotation used in stubs and signatures."""
        base = _PY_TYPE[self.type]
        return f"{base} | DataNode" if self.per_sample else base

    def describe(self):
        """One docstring paragraph: type, default, constraints, doc."""
        parts = [_TYPE_DESC[self.type]]
        if self.required:
            parts.append("required")
        elif self.default_text is not None:
            parts.append(f"default {self.default_text}")
        if self.range is not None:
            parts.append(f"in [{_fmt_num(self.range[0])}, {_fmt_num(self.range[1])}]")
        if self.choices:
            parts.append("one of " + ", ".join(repr(c) for c in self.choices))
        if self.per_sample:
            parts.append("may be a DataNode (per-sample argument input)")
        return f"{self.name} ({'; '.join(parts)}): {self.doc}"


def _fmt_num(x):
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


# DALI's ops.* class names that are not the plain CamelCase of the fn name.
# ops.* classes whose DALI spelling is not the CamelCase of the fn name (acronyms kept).
_CLASS_NAMES = {
    "readers.tfrecord": "TFRecord",
    "readers.coco": "COCO",
    "readers.mxnet": "MXNet",
    "reductions.rms": "RMS",
    "segmentation.random_object_bbox": "RandomObjectBBox",
    "bbox_paste": "BBoxPaste",
    "bbox_rotate": "BBoxRotate",
    "mfcc": "MFCC",
    "roi_random_crop": "ROIRandomCrop",
    "random_bbox_crop": "RandomBBoxCrop",
    "ssd_random_crop": "SSDRandomCrop",
    "dl_tensor_python_function": "DLTensorPythonFunction",
}

# DALI's deprecated names, still in its fn and ops modules and in older DALI programs:
# fn.<legacy> / ops.<Legacy> are the operators named here (ops.FileReader is
# ops.readers.File, fn.uniform is fn.random.uniform, ...).
LEGACY_NAMES = {
    "audio_decoder": "decoders.audio",
    "caffe2_reader": "readers.caffe2",
    "caffe_reader": "readers.caffe",
    "coco_reader": "readers.coco",
    "coin_flip": "random.coin_flip",
    "file_reader": "readers.file",
    "image_decoder": "decoders.image",
    "image_decoder_crop": "decoders.image_crop",
    "image_decoder_random_crop": "decoders.image_random_crop",
    "image_decoder_slice": "decoders.image_slice",
    "mxnet_reader": "readers.mxnet",
    "nemo_asr_reader": "readers.nemo_asr",
    "normal_distribution": "random.normal",
    "numpy_reader": "readers.numpy",
    "sequence_reader": "readers.sequence",
    "tfrecord_reader": "readers.tfrecord",
    "transform_translation": "transforms.translation",
    "uniform": "random.uniform",
    "video_reader": "readers.video",
    "video_reader_resize": "readers.video_resize",
}
# their ops.* spellings, where not the CamelCase of the fn name
LEGACY_CLASS_NAMES = {"coco_reader": "COCOReader", "mxnet_reader": "MXNetReader",
                      "tfrecord_reader": "TFRecordReader"}


def camel_case(snake):
    """file_reader -> FileReader (DALI's ops.* spelling of an fn.* name, acronyms aside)."""
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


def legacy_class_name(legacy):
    """The ops.* spelling of one of LEGACY_NAMES."""
    return LEGACY_CLASS_NAMES.get(legacy) or camel_case(legacy)


class OpSchema:
    """One operator of the registry."""

    def __init__(self, d):
        self.name = d["name"]
        self.doc = d["doc"] or ""
        self.devices = tuple(d["devices"])
        self.is_reader = d["reader"]
        self.is_random = d["random"]
        self.no_input = d["no_input"]
        self.min_inputs = d["min_inputs"]
        self.max_inputs = d["max_inputs"]
        self.inputs = list(d["inputs"])
        self.num_outputs = d["num_outputs"]
        self.outputs = list(d["outputs"])
        self.args = {a["name"]: ArgSchema(a) for a in d["args"]}
        #: the CPU/GPU parity check in the text form (docs/text-form.md), or None
        self.gpu_check = d.get("gpu_check")

    @property
    def path(self):
        """The dotted namespace, e.g. ("readers",) for readers.file."""
        return tuple(self.name.split(".")[:-1])

    @property
    def leaf(self):
        return self.name.split(".")[-1]

    @property
    def class_name(self):
        """The ops.* class name: the last component in CamelCase, or DALI's spelling
        where it is not that (ops.readers.TFRecord)."""
        return _CLASS_NAMES.get(self.name) or camel_case(self.leaf)

    def docstring(self, extra_args=()):
        """The docstring shared by fn.<name> and ops.<Name>."""
        lines = [self.doc.strip() or f"The {self.name} operator.", ""]
        lines.append(f"Devices: {', '.join(self.devices)}.")
        if self.max_inputs > 0:
            lines += ["", "Inputs:"]
            for i, (pname, pdoc) in enumerate(self.inputs):
                opt = "" if i < self.min_inputs else " (optional)"
                lines.append(f"    {pname or f'input{i}'}{opt}: {pdoc or ''}")
            if self.max_inputs > len(self.inputs):
                lines.append(f"    (up to {self.max_inputs} inputs)")
        lines += ["", "Outputs:"]
        if self.num_outputs < 0:
            see = " (see num_outputs)" if "num_outputs" in self.args else ""
            lines.append(f"    a number set by the arguments{see}")
        for pname, pdoc in self.outputs:
            lines.append(f"    {pname}: {pdoc or ''}")
        lines += ["", "Keyword args:"]
        for a in self.args.values():
            lines.append("    " + a.describe())
        for name, doc in extra_args:
            lines.append(f"    {name}: {doc}")
        lines.append('    device (str, default "cpu"): one of ' + ", ".join(repr(d) for d in self.devices))
        lines.append("    name (str): the instance name (readers: the name for epoch_size, "
                     "reader_meta and iterators' reader_name)")
        return "\n".join(lines)


_REGISTRY = None


def registry():
    """name -> OpSchema for every registered operator (read once)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = {d["name"]: OpSchema(d) for d in _stoker.registry()}
    return _REGISTRY


# ---- value conversion ----

def _fail(op, arg, msg):
    raise InvalidArgumentError(f"{op}: argument '{arg}' {msg}")


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))


def _scalar(op, a, value, kind):
    """Converts one scalar to `kind` ("bool", "int", "float", "str") or raises."""
    v = value
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if kind == "bool":
        if _is_bool(v) or (isinstance(v, numbers.Integral) and v in (0, 1)):
            return bool(v)
    elif kind == "int":
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real) and float(v).is_integer():
            return int(v)
    elif kind == "float":
        if isinstance(v, numbers.Real) and not isinstance(v, str):
            return float(v)
    elif kind == "str":
        v = _types.to_c_value(v)
        if isinstance(v, str):
            return str(v)
    _fail(op, a.name, f"expects {_TYPE_DESC[a.type]}, got {value!r} ({type(value).__name__})")


def _check_range(op, a, values):
    if a.range is None:
        return
    lo, hi = a.range
    for v in values:
        if isinstance(v, (int, float)) and not (lo <= v <= hi):
            _fail(op, a.name, f"= {v!r} is out of range [{_fmt_num(lo)}, {_fmt_num(hi)}]")


def _check_choices(op, a, values):
    if not a.choices:
        return
    for v in values:
        if v not in a.choices:
            _fail(op, a.name, f"= {v!r} is not one of {', '.join(repr(c) for c in a.choices)}")


def convert(op, a, value):
    """The value of argument `a` of operator `op`, checked against the schema.

    Scalars given to list arguments become one-element lists; enum members of
    stoker.types become their C strings. Raises InvalidArgumentError naming the argument.
    """
    if a.is_list:
        kind = a.type[:-1] if a.type != "strs" else "str"
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") or (
                isinstance(value, np.ndarray) and value.ndim == 0):
            items = [value]
        else:
            items = list(np.asarray(value).ravel()) if isinstance(value, np.ndarray) else list(value)
        out = [_scalar(op, a, v, kind) for v in items]
    else:
        if isinstance(value, (list, tuple)) and a.type != "str":
            _fail(op, a.name, f"expects {_TYPE_DESC[a.type]}, got a {type(value).__name__}")
        out = [_scalar(op, a, value, a.type)]
    _check_range(op, a, out)
    _check_choices(op, a, out)
    return out if a.is_list else out[0]
