"""``fn.dl_tensor_python_function``: DALI's python function over DLPack. The C operator is
the same per-sample host call as ``python_function``; this hook hands the function one
DLPack capsule per input (``torch.from_dlpack(c)``, ``np.from_dlpack`` after wrapping) and
takes back capsules or any object with ``__dlpack__`` (NumPy arrays, CPU torch tensors)."""

import numpy as np

from . import _graph, _opgen
from .errors import InvalidArgumentError
from .external_source import PythonFunctionTrampoline


class _Capsule:
    """A bare DLPack capsule as an object NumPy's from_dlpack accepts (CPU memory)."""

    __slots__ = ("capsule",)

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def _to_numpy(x):
    if type(x).__name__ == "PyCapsule":
        return np.from_dlpack(_Capsule(x))
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    return np.asarray(x)


class DLTensorTrampoline(PythonFunctionTrampoline):
    """Wraps the user's function: NumPy arrays in -> capsules; capsules out -> arrays."""

    def __init__(self, function, num_outputs, output_layouts, label):
        def call(*arrays):
            result = function(*[a.__dlpack__() for a in arrays])
            if num_outputs == 1:
                return _to_numpy(result)
            if not isinstance(result, (tuple, list)):
                raise ValueError(f"the function must return {num_outputs} tensors")
            return tuple(_to_numpy(r) for r in result)
        super().__init__(call, num_outputs, output_layouts, label)


class _DLTensorHook:
    extra_kwargs = {
        "function": "the callable, called as function(*dlpack_capsules) for every sample; "
                    "returns one DLPack tensor (capsule or object with __dlpack__), or a "
                    "tuple of num_outputs",
        "output_layouts": "layout string (or one per output) given to the outputs",
    }

    def call(self, schema, inputs, kwargs):
        kwargs = dict(kwargs)
        function = kwargs.pop("function", None)
        if not callable(function):
            raise InvalidArgumentError(
                "dl_tensor_python_function: argument 'function' must be a callable")
        if kwargs.get("batch_processing"):
            raise InvalidArgumentError(
                "dl_tensor_python_function: batch_processing=True is not supported; stoker "
                "calls the function per sample, on the worker threads")
        layouts = kwargs.pop("output_layouts", None)
        inst = _graph.instantiate(schema, inputs, kwargs)
        label = f"dl_tensor_python_function '{inst.name}'"
        inst.payload = DLTensorTrampoline(function, len(inst.outputs), layouts, label)
        return _graph.outputs_of(inst)


_opgen.HOOKS["dl_tensor_python_function"] = _DLTensorHook()
