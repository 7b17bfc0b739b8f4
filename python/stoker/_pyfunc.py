"""Batch calls of ``python_function`` and ``dl_tensor_python_function``.

The C library calls a trampoline's ``call_batch`` once per batch in two cases:

- ``batch_processing=True`` on the CPU, on the pipeline's producer thread: the inputs
  arrive per input as lists of (pointer, shape, strides, dtype, layout) tuples;
- every call of an instance on the GPU, on the GPU stage's thread: the inputs arrive as
  device TensorLists. With ``batch_processing=False`` the function is still called once
  per sample, here, in batch order.

``call_batch`` returns, per output, (list of per-sample results, layout): host arrays for
CPU calls; for GPU calls any DLPack object (CuPy arrays, torch tensors, capsules; host
arrays are accepted too), which the C side copies into the pipeline's device memory on
its stream before the objects are dropped.
"""

import threading

import numpy as np

_local = threading.local()


def current_dali_stream():
    """The pipeline's CUDA stream (a ``cudaStream_t`` as an int) while a GPU python
    function runs: work queued on it is ordered before stoker's copies of the outputs
    (with ``synchronize_stream=False`` the function must queue its work there)."""
    stream = getattr(_local, "stream", None)
    if stream is None:
        raise RuntimeError("current_dali_stream(): only valid inside a GPU python function call")
    return stream


class CUDAStream:
    """A CUDA stream handle (DALI's types.CUDAStream): ``ptr`` is the cudaStream_t."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def __repr__(self):
        return f"CUDAStream(ptr={self.ptr:#x})"


def current_stream():
    """DALI's ``ops.PythonFunction.current_stream()``: current_dali_stream() as a
    CUDAStream."""
    return CUDAStream(current_dali_stream())


class _DeviceCall:
    """Makes the stream current for the call (current_dali_stream)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        self.previous = getattr(_local, "stream", None)
        _local.stream = self.stream

    def __exit__(self, *exc):
        _local.stream = self.previous


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def split_outputs(result, num_outputs, what):
    """The function's result as a list of num_outputs results."""
    if num_outputs == 0 and result is None:  # a function run for its side effects
        return []
    if num_outputs == 1:
        return [result]
    if isinstance(result, (tuple, list)) and len(result) == num_outputs:
        return list(result)
    raise ValueError(f"the function must return {num_outputs} {what}, got {type(result).__name__}")


class BatchCalls:
    """Mixed into the trampolines: ``call_batch`` and the per-form conversions, which the
    dl_tensor form overrides (capsules instead of arrays)."""

    batch_processing = False
    uses_cupy = True  # python_function's GPU inputs are CuPy arrays when CuPy is installed
    _failures = None

    def failed(self, exc, message):
        """Keeps `exc` under the message the C side reports for it (the message is
        returned). Calls run on several workers at once: the pipeline's error names the
        first failure, and cause_of() finds that one's exception by its message."""
        if self._failures is None:
            self._failures = {}
        self._failures[message] = exc  # (one dict store: atomic under the GIL)
        self.last_exception = exc
        return message

    def cause_of(self, error_text):
        """(exception, named): the exception whose message the pipeline error
        `error_text` carries (named True), else this function's latest (a message the C
        side cut short), or (None, False); consumed."""
        failures, self._failures = self._failures or {}, None
        latest, self.last_exception = getattr(self, "last_exception", None), None
        found = [m for m in failures if m in error_text]
        if found:
            return failures[max(found, key=len)], True
        return latest, False

    def host_input(self, array):
        return array

    def host_output(self, result):
        arr = np.ascontiguousarray(np.asarray(result))
        if arr.dtype.kind not in "biuf" or arr.dtype.itemsize > 8:
            raise TypeError(f"returned an array of unsupported type {arr.dtype}")
        return arr

    def device_input(self, tensor):
        cupy = _cupy() if self.uses_cupy else None
        return cupy.from_dlpack(tensor) if cupy is not None else tensor

    def device_output(self, result):
        if isinstance(result, np.ndarray):  # host memory, uploaded (made contiguous first)
            return self._uploadable(result)
        if type(result).__name__ == "PyCapsule" or hasattr(result, "__dlpack__"):
            return result
        return self._uploadable(result)  # lists, scalars: host memory too

    def _uploadable(self, result):
        arr = self.host_output(result)
        # NumPy refuses to hand a read-only array (np.frombuffer, np.asarray of a PIL image,
        # broadcasts) over a legacy DLPack capsule, which the C side asks for
        return arr if arr.flags.writeable else arr.copy()

    def call_batch(self, inputs, ordinal, size, device, stream):
        self.failed_sample = None
        try:
            with _DeviceCall(stream if device >= 0 else None):
                outputs = self._run(inputs, size, device, stream)
            convert = self.host_output if device < 0 else self.device_output
            converted = []
            for samples, layout in zip(outputs, self.output_layouts):
                converted.append(([], layout))
                for i, r in enumerate(samples):
                    self.failed_sample = i  # (named in the error if the conversion fails)
                    converted[-1][0].append(convert(r))
            self.failed_sample = None
            return converted
        except BaseException as e:  # reported through the C error, re-raised as the cause
            where = "" if self.failed_sample is None else f"sample {self.failed_sample}: "
            return self.failed(e, f"{where}{type(e).__name__}: {e}")

    def _run(self, inputs, size, device, stream):
        """Per output, the list of the batch's results."""
        if device < 0:
            batches = [[self.host_input(self.copy_input(t)) for t in samples] for samples in inputs]
            return self._call(batches, size)
        cupy = _cupy() if self.uses_cupy else None
        if cupy is None:
            return self._call(self._device_batches(inputs), size)
        # CuPy's current stream is the pipeline's: the inputs' DLPack hand-over waits on it
        # (a no-op) and the function's CuPy work is queued on it
        with cupy.cuda.ExternalStream(stream):
            return self._call(self._device_batches(inputs), size)

    def _device_batches(self, lists):
        return [[self.device_input(tl[i]) for i in range(len(tl))] for tl in lists]

    def _call(self, batches, size):
        if self.batch_processing:
            outputs = split_outputs(self.function(*batches), self.num_outputs, "lists")
            for k, out in enumerate(outputs):
                if not isinstance(out, (list, tuple)) or len(out) != size:
                    raise ValueError(
                        f"batch_processing: output {k} must be a list of {size} samples, got "
                        f"{len(out) if isinstance(out, (list, tuple)) else type(out).__name__}")
            return [list(out) for out in outputs]
        outputs = [[] for _ in range(self.num_outputs)]
        for i in range(size):
            self.failed_sample = i  # (named in the error if the call fails)
            result = self.function(*[b[i] for b in batches])
            for k, r in enumerate(split_outputs(result, self.num_outputs, "arrays")):
                outputs[k].append(r)
        self.failed_sample = None
        return outputs
