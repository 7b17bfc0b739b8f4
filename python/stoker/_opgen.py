"""Generates ``stoker.fn`` functions and ``stoker.ops`` classes from the C registry.

Each registry operator ``a.b.name`` becomes ``fn.a.b.name`` (a function) and
``ops.a.b.Name`` (a class in CamelCase), with a docstring and a signature built from its
schema. Operators that need Python-side behaviour (``external_source``,
``python_function``) register a hook in :data:`HOOKS`; their arguments are still checked
against the same schema.
"""

import inspect
import keyword
import os
import sys
import types as _pytypes

from . import _graph, _schema, tfrecord as _tfrecord
from .errors import InvalidArgumentError

#: schema name -> hook object with `extra_kwargs` ({name: doc}), `call(schema, inputs,
#: kwargs)` and optionally `optional_args` (required schema arguments the hook can fill
#: in) and `returns` (the stubs' return annotation).
HOOKS = {}


class _ListOutputsHook:
    """Readers with one output per entry of a list argument (the schema's num_outputs is
    -1: the C operator counts the entries). `prepare` may rewrite the keyword arguments
    first; `wrap(outputs, kwargs, given)` shapes what the call returns."""

    def __init__(self, count_arg, extra_kwargs=None, optional_args=(), prepare=None, wrap=None,
                 returns=None):
        self.count_arg = count_arg
        self.returns = returns  # the stubs' return annotation, when not the usual one
        self.extra_kwargs = dict(extra_kwargs or {})
        self.optional_args = tuple(optional_args)
        self._prepare, self._wrap = prepare, wrap

    def call(self, schema, inputs, kwargs):
        given = dict(kwargs)
        kwargs = self._prepare(schema, dict(given)) if self._prepare else dict(given)
        a = schema.args[self.count_arg]
        value = kwargs.get(self.count_arg)
        if value is None:
            raise InvalidArgumentError(f"{schema.name}: argument '{a.name}' is required")
        if isinstance(value, _graph.DataNode):
            raise InvalidArgumentError(
                f"{schema.name}: argument '{a.name}' sets the outputs and must be a constant")
        n = len(_schema.convert(schema.name, a, value))
        if n == 0:
            raise InvalidArgumentError(
                f"{schema.name}: argument '{a.name}' is empty (one output per entry)")
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=n)
        if self._wrap:
            return self._wrap(inst, kwargs, given)
        return _graph.outputs_of(inst)


def _tfrecord_features(schema, kwargs):
    """DALI's `features` dict as the C operator's parallel lists."""
    features = kwargs.pop("features", None)
    if features is None:
        return kwargs
    clash = [k for k in kwargs if k.startswith("feature_") and kwargs[k] is not None]
    if clash:
        raise InvalidArgumentError(
            f"{schema.name}: give either 'features' (a dict) or the feature_* lists, not both "
            f"(got features and {clash[0]})")
    kwargs.update(_tfrecord.feature_args(schema.name, features))
    return kwargs


def _tfrecord_outputs(inst, kwargs, given):
    """A dict {feature name: DataNode} for the `features` form (DALI's result); the
    outputs as usual for the feature_names form."""
    if given.get("features") is None:
        return _graph.outputs_of(inst)
    return dict(zip(kwargs["feature_names"], inst.outputs))


class _PairedReaderHook:
    """readers.file: two outputs (data, label), three with paired=True (data, data2,
    label: image + mask from a file list with two paths per line)."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        paired = kwargs.get("paired")
        if isinstance(paired, _graph.DataNode):
            raise InvalidArgumentError(f"{schema.name}: 'paired' sets the outputs and must be a constant")
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=3 if paired else 2)
        return _graph.outputs_of(inst)


class _FlagOutputsHook:
    """Operators with `base` outputs plus one per boolean flag that is on (readers.nemo_asr:
    audio, then sample_rate, text and idx as read_sample_rate, read_text, read_idxs say)."""
    extra_kwargs = {}

    def __init__(self, base, flags):
        self.base, self.flags = base, tuple(flags)

    def call(self, schema, inputs, kwargs):
        n = self.base
        for f in self.flags:
            value = kwargs.get(f)
            if isinstance(value, _graph.DataNode):
                raise InvalidArgumentError(
                    f"{schema.name}: '{f}' sets the outputs and must be a constant")
            n += bool(schema.args[f].default if value is None else value)
        return _graph.outputs_of(_graph.instantiate(schema, inputs, kwargs, num_outputs=n))


class _VideoReaderHook:
    """The video readers: video, then a label when labels, file_root or file_list is given,
    frame numbers with enable_frame_num (DALI also takes True / False for "scalar" /
    "none"), timestamps with enable_timestamps."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        fnum = kwargs.get("enable_frame_num")
        if isinstance(fnum, bool):
            kwargs["enable_frame_num"] = fnum = "scalar" if fnum else "none"
        for k in ("enable_frame_num", "enable_timestamps", "labels", "file_root", "file_list"):
            if isinstance(kwargs.get(k), _graph.DataNode):
                raise InvalidArgumentError(
                    f"{schema.name}: '{k}' sets the outputs and must be a constant")
        n = 1 + any(kwargs.get(k) is not None for k in ("labels", "file_root", "file_list"))
        n += fnum not in (None, "none") and 1
        n += bool(kwargs.get("enable_timestamps"))
        return _graph.outputs_of(_graph.instantiate(schema, inputs, kwargs, num_outputs=n))


class _CacheHook:
    """cache: one output per input (DALI has no such operator; the C schema's num_outputs is
    -1)."""
    extra_kwargs = {}
    returns = "DataNode | list[DataNode]"

    def call(self, schema, inputs, kwargs):
        if kwargs.get("path") is None:
            kwargs.pop("path", None)
        elif isinstance(kwargs["path"], os.PathLike):
            kwargs["path"] = os.fspath(kwargs["path"])
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=len(inputs))
        return _graph.outputs_of(inst)



for _name in ("readers.video", "experimental.readers.video", "readers.video_resize"):
    HOOKS[_name] = _VideoReaderHook()
HOOKS["readers.nemo_asr"] = _FlagOutputsHook(1, ("read_sample_rate", "read_text", "read_idxs"))
HOOKS["readers.file"] = _PairedReaderHook()
HOOKS["cache"] = _CacheHook()


class _CocoReaderHook:
    """readers.coco: images, bboxes, labels, then (polygons, vertices) with polygon_masks
    (or masks), pixelwise_masks with pixelwise_masks, image_ids with image_ids."""
    extra_kwargs = {}
    _SWITCHES = ("polygon_masks", "masks", "pixelwise_masks", "image_ids")

    def call(self, schema, inputs, kwargs):
        for k in self._SWITCHES:
            if isinstance(kwargs.get(k), _graph.DataNode):
                raise InvalidArgumentError(f"{schema.name}: '{k}' sets the outputs and must be a constant")
        poly = bool(kwargs.get("polygon_masks")) or bool(kwargs.get("masks"))
        n = 3 + 2 * poly + bool(kwargs.get("pixelwise_masks")) + bool(kwargs.get("image_ids"))
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=n)
        return _graph.outputs_of(inst)


HOOKS["readers.coco"] = _CocoReaderHook()


class _CaffeReaderHook:
    """readers.caffe: images (image_available) and labels (label_available)."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        flags = [kwargs.get(k, True) for k in ("image_available", "label_available")]
        if any(isinstance(f, _graph.DataNode) for f in flags):
            raise InvalidArgumentError(f"{schema.name}: the *_available flags must be constants")
        n = sum(1 for f in flags if f is None or f)
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=n)
        return _graph.outputs_of(inst)


HOOKS["readers.caffe"] = _CaffeReaderHook()


class _Caffe2ReaderHook:
    """readers.caffe2: images (image_available), labels (label_type != 4)."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        img, lt = kwargs.get("image_available", True), kwargs.get("label_type", 0)
        if isinstance(img, _graph.DataNode) or isinstance(lt, _graph.DataNode):
            raise InvalidArgumentError(f"{schema.name}: image_available and label_type must be constants")
        n = (1 if img is None or img else 0) + (0 if lt == 4 else 1)
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=n)
        return _graph.outputs_of(inst)


HOOKS["readers.caffe2"] = _Caffe2ReaderHook()


class _BBoxCropHook:
    """random_bbox_crop: anchor, shape, bboxes, then labels (with a labels input) and
    bbox_indices (output_bbox_indices=True)."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        if isinstance(kwargs.get("output_bbox_indices"), _graph.DataNode):
            raise InvalidArgumentError(
                f"{schema.name}: 'output_bbox_indices' sets the outputs and must be a constant")
        n = 3 + (len(inputs) > 1) + bool(kwargs.get("output_bbox_indices"))
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=n)
        return _graph.outputs_of(inst)


HOOKS["random_bbox_crop"] = _BBoxCropHook()


class _BBoxRotateHook:
    """bbox_rotate: the boxes, then the kept labels when a labels input is given."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=1 + (len(inputs) > 1))
        return _graph.outputs_of(inst)


HOOKS["bbox_rotate"] = _BBoxRotateHook()


class _ObjectBBoxHook:
    """segmentation.random_object_bbox: anchor and shape (or start and end; one output
    with format="box"), then the class with output_class=True."""
    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        for k in ("format", "output_class"):
            if isinstance(kwargs.get(k), _graph.DataNode):
                raise InvalidArgumentError(f"{schema.name}: '{k}' sets the outputs and must be a constant")
        n = (1 if kwargs.get("format") == "box" else 2) + bool(kwargs.get("output_class"))
        inst = _graph.instantiate(schema, inputs, kwargs, num_outputs=n)
        return _graph.outputs_of(inst)


HOOKS["segmentation.random_object_bbox"] = _ObjectBBoxHook()
HOOKS["readers.webdataset"] = _ListOutputsHook("ext")
HOOKS["element_extract"] = _ListOutputsHook("element_map")
HOOKS["readers.tfrecord"] = _ListOutputsHook(
    "feature_names",
    extra_kwargs={"features": "DALI's dict {name: stoker.tfrecord.FixedLenFeature(shape, dtype, "
                              "default_value) | VarLenFeature(dtype, default_value)}; the call "
                              "then returns {name: DataNode}. Replaces the feature_* lists"},
    optional_args=("feature_names", "feature_types"),
    prepare=_tfrecord_features, wrap=_tfrecord_outputs,
    returns="dict[str, DataNode] | DataNode | list[DataNode]")


class _ChoiceHook:
    """random.choice(a, shape_like=None, ...): DALI passes `a` as the first positional
    input (a constant or a DataNode); the C operator takes it as its `a` argument (fed per
    sample by a DataNode) and shape_like as its only input. A float constant `a` gives a
    float32 output, as in DALI (its output has a's type), unless dtype is given."""

    extra_kwargs = {}
    optional_args = ("a",)

    def call(self, schema, inputs, kwargs):
        import numpy as np
        kwargs = dict(kwargs)
        inputs = list(inputs)
        if inputs and "a" not in kwargs:
            kwargs["a"] = inputs.pop(0)
        a = kwargs.get("a")
        if a is None:
            raise InvalidArgumentError(
                f"{schema.name}: argument 'a' is required (DALI's first input)")
        if not isinstance(a, _graph.DataNode):
            arr = np.asarray(a)
            if arr.ndim > 1:
                raise InvalidArgumentError(
                    f"{schema.name}: 'a' must be a scalar or a 1-D list, got shape {arr.shape}")
            if np.issubdtype(arr.dtype, np.floating) and kwargs.get("dtype") is None:
                kwargs["dtype"] = "float32"
            kwargs["a"] = arr.ravel().tolist()
        return _graph.outputs_of(_graph.instantiate(schema, inputs, kwargs))


HOOKS["random.choice"] = _ChoiceHook()


class _FilterHook:
    """filter(data, filter, fill_value): DALI gives the border value as an optional third
    input (a scalar per sample); the C operator takes it as its per-sample `fill_value`
    argument, fed by that node (or set, for a constant)."""

    extra_kwargs = {}

    def call(self, schema, inputs, kwargs):
        inputs = list(inputs)
        if len(inputs) == 3:
            if kwargs.get("fill_value") is not None:
                raise InvalidArgumentError(
                    f"{schema.name}: fill_value given both as input 2 and as an argument")
            kwargs = dict(kwargs, fill_value=inputs.pop())
        return _graph.outputs_of(_graph.instantiate(schema, inputs, kwargs))


HOOKS["filter"] = HOOKS["experimental.filter"] = _FilterHook()


def required(schema, a):
    """Whether argument `a` must be given (a hook may fill in required arguments)."""
    hook = HOOKS.get(schema.name)
    return a.required and a.name not in getattr(hook, "optional_args", ())


def _call(schema, inputs, kwargs):
    hook = HOOKS.get(schema.name)
    if hook is not None:
        return hook.call(schema, inputs, kwargs)
    return _graph.outputs_of(_graph.instantiate(schema, inputs, kwargs))


def _extra_kwargs(schema):
    hook = HOOKS.get(schema.name)
    return dict(hook.extra_kwargs) if hook is not None else {}


def signature(schema):
    """An inspect.Signature: *inputs, then keyword-only schema arguments."""
    params = [inspect.Parameter("inputs", inspect.Parameter.VAR_POSITIONAL)]
    seen = set()
    for a in schema.args.values():
        if keyword.iskeyword(a.name) or not a.name.isidentifier():
            continue
        default = inspect.Parameter.empty if required(schema, a) else a.default
        params.append(inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=default))
        seen.add(a.name)
    for name in list(_extra_kwargs(schema)) + ["device", "name"]:
        if name not in seen:
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None))
            seen.add(name)
    return inspect.Signature(params)


def docstring(schema):
    return schema.docstring(tuple(_extra_kwargs(schema).items()))


def make_function(schema, module_name):
    def op_function(*inputs, **kwargs):
        return _call(schema, inputs, kwargs)

    op_function.__name__ = schema.leaf
    op_function.__qualname__ = schema.leaf
    op_function.__module__ = module_name
    op_function.__doc__ = docstring(schema)
    op_function.__signature__ = signature(schema)
    op_function.schema = schema
    return op_function


class Operator:
    """Base of the generated ``ops.*`` classes (DALI's object API).

    ``ops.Resize(device="cpu", resize_x=224)`` checks the constant arguments now;
    calling the object with inputs (and more keyword arguments, per-sample DataNodes
    included) adds one operator instance to the graph being defined.
    """

    schema = None

    def __init__(self, *, device=None, **kwargs):
        schema = self.schema
        extras = _extra_kwargs(schema)
        checked = {}
        for key, value in kwargs.items():
            if key in extras or key == "name" or key in _schema.IGNORED_KWARGS or value is None:
                checked[key] = value
                continue
            a = schema.args.get(key)
            if a is None:
                known = ", ".join(list(schema.args) + list(extras) + list(_schema.COMMON_KWARGS))
                raise InvalidArgumentError(f"{schema.name}: unknown argument '{key}' (known: {known})")
            if isinstance(value, _graph.DataNode):
                raise InvalidArgumentError(
                    f"{schema.name}: argument '{key}' is a DataNode; pass per-sample arguments "
                    "when calling the operator, not when creating it")
            checked[key] = _schema.convert(schema.name, a, value)
        if device is not None and device not in schema.devices:
            from .errors import UnsupportedError
            raise UnsupportedError(
                f"{schema.name}: device {device!r} is not supported (devices: {', '.join(schema.devices)})")
        self._device = device
        self._kwargs = checked

    @property
    def device(self):
        return self._device or "cpu"

    def __call__(self, *inputs, **kwargs):
        merged = dict(self._kwargs)
        merged.update(kwargs)
        if self._device is not None:
            merged.setdefault("device", self._device)
        return _call(self.schema, inputs, merged)

    def __repr__(self):
        return f"ops.{self.schema.name}(device={self.device!r})"


def make_class(schema, module_name):
    cls = type(schema.class_name, (Operator,), {
        "schema": schema,
        "__doc__": docstring(schema),
        "__module__": module_name,
    })
    cls.__init__.__doc__ = None
    return cls


def _namespace(root, root_name, path):
    """The (sub)module object for `path` under `root`, created as needed."""
    obj, name = root, root_name
    for part in path:
        name = f"{name}.{part}"
        sub = getattr(obj, part, None) if not isinstance(obj, dict) else obj.get(part)
        if not isinstance(sub, _pytypes.ModuleType):
            sub = _pytypes.ModuleType(name, f"stoker operators in the {name} namespace")
            sys.modules[name] = sub
            if isinstance(obj, dict):
                obj[part] = sub
            else:
                setattr(obj, part, sub)
        obj = sub
    return obj, name


def _populate(module_globals, module_name, make, key):
    """Makes every registry operator's object under its namespace; returns the top-level
    names and the objects by operator name."""
    names, made = [], {}
    for schema in _schema.registry().values():
        target, target_name = _namespace(module_globals, module_name, schema.path)
        obj = made[schema.name] = make(schema, target_name)
        attr = key(schema)
        if isinstance(target, dict):
            target[attr] = obj
        else:
            setattr(target, attr, obj)
        if not schema.path:
            names.append(attr)
        elif schema.path[0] not in names:
            names.append(schema.path[0])
    return names, made


def _add_legacy_names(module_globals, made, spelling):
    """DALI's deprecated top-level names (_schema.LEGACY_NAMES), spelt by `spelling`, as
    aliases of the operators they name where stoker has them; not in __all__."""
    for legacy, name in _schema.LEGACY_NAMES.items():
        if name in made:
            module_globals[spelling(legacy)] = made[name]


def populate_fn(module_globals, module_name):
    """Fills the stoker.fn module; returns the top-level names."""
    names, made = _populate(module_globals, module_name, make_function, lambda s: s.leaf)
    _add_legacy_names(module_globals, made, lambda legacy: legacy)
    return names


def populate_ops(module_globals, module_name):
    """Fills the stoker.ops module; returns the top-level names."""
    names, made = _populate(module_globals, module_name, make_class, lambda s: s.class_name)
    _add_legacy_names(module_globals, made, _schema.legacy_class_name)
    return names
