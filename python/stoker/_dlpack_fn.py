"""``fn.dl_tensor_python_function``: DALI's python function over DLPack. The C operator is
the same host call as ``python_function`` (per sample, per batch, on the GPU); this hook
hands the function one DLPack capsule per input and sample (``torch.from_dlpack(c)``,
``np.from_dlpack`` after wrapping; device memory on the GPU) and takes back capsules or
any object with ``__dlpack__`` (NumPy arrays, torch tensors, CuPy arrays)."""

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
    """The python_function trampoline with capsules in and DLPack objects out."""

    uses_cupy = False

    def host_input(self, array):
        return array.__dlpack__()

    def host_output(self, result):
        return super().host_output(_to_numpy(result))

    def device_input(self, tensor):
        # (-1: no stream wait; the stream was synchronised before the call, or the function
        # queues its work on current_dali_stream())
        return tensor.__dlpack__(stream=-1)


class _DLTensorHook:
    extra_kwargs = {
        "function": "the callable, called as function(*dlpack_capsules) for every sample "
                    "(or with lists of capsules, batch_processing=True); returns one DLPack "
                    "tensor (capsule or object with __dlpack__), or a tuple of num_outputs "
                    "(lists)",
        "output_layouts": "layout string (or one per output) given to the outputs",
    }

    def call(self, schema, inputs, kwargs):
        kwargs = dict(kwargs)
        function = kwargs.pop("function", None)
        if not callable(function):
            raise InvalidArgumentError(
                "dl_tensor_python_function: argument 'function' must be a callable")
        layouts = kwargs.pop("output_layouts", None)
        inst = _graph.instantiate(schema, inputs, kwargs)
        label = f"dl_tensor_python_function '{inst.name}'"
        inst.payload = DLTensorTrampoline(function, len(inst.outputs), layouts, label,
                                          kwargs.get("batch_processing", False))
        return _graph.outputs_of(inst)


_opgen.HOOKS["dl_tensor_python_function"] = _DLTensorHook()
