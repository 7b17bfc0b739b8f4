"""Python data and Python code in pipelines: ``fn.external_source`` and
``fn.python_function``.

``external_source`` takes data from a Python iterable or callable. The pipeline feeds
the C operator through ``stk_pipeline_feed`` a few batches ahead of ``run()``; when the
source raises StopIteration, ``run()`` raises StopIteration once the batches fed before
it are used up (the end of an epoch, as in DALI), and ``reset()`` starts the next epoch.

``python_function`` runs a Python callable on every sample on the pipeline's worker
threads (holding the GIL while it runs), or once per batch (``batch_processing=True``,
and on the GPU: see _pyfunc.py). Inputs arrive as NumPy arrays (copies, so they may be
kept); the returned arrays are copied into the batch.
"""

import inspect

import numpy as np

from . import _graph, _opgen
from ._pyfunc import BatchCalls, split_outputs
from .errors import InvalidArgumentError, StateError


class SampleInfo:
    """Describes the sample a per-sample source (``batch=False``) must produce."""

    __slots__ = ("idx_in_epoch", "idx_in_batch", "iteration", "epoch_idx")

    def __init__(self, idx_in_epoch, idx_in_batch, iteration, epoch_idx):
        self.idx_in_epoch, self.idx_in_batch = idx_in_epoch, idx_in_batch
        self.iteration, self.epoch_idx = iteration, epoch_idx

    def __repr__(self):
        return (f"SampleInfo(idx_in_epoch={self.idx_in_epoch}, idx_in_batch={self.idx_in_batch}, "
                f"iteration={self.iteration}, epoch_idx={self.epoch_idx})")


class BatchInfo:
    """Passed to a batch source callable when ``batch_info=True``."""

    __slots__ = ("iteration", "epoch_idx")

    def __init__(self, iteration, epoch_idx):
        self.iteration, self.epoch_idx = iteration, epoch_idx

    def __repr__(self):
        return f"BatchInfo(iteration={self.iteration}, epoch_idx={self.epoch_idx})"


def _to_array(x, where):
    """One sample as a C-contiguous NumPy array of a supported dtype."""
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        try:
            x = np.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError):
            pass
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor on any device
        x = x.detach().cpu().numpy()
    elif hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):  # CuPy: to the host
        x = x.get()
    arr = np.asarray(x)
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d sample 1-d)
        arr = np.ascontiguousarray(arr)
    if arr.dtype.kind not in "biuf" or arr.dtype.itemsize > 8:
        raise InvalidArgumentError(f"{where}: element type {arr.dtype} is not supported")
    return arr


def _split_batch(batch, where):
    """A batch (list of samples, array with a batch dimension, TensorList) as samples."""
    if isinstance(batch, np.ndarray):
        if batch.ndim == 0:
            raise InvalidArgumentError(f"{where}: a batch must have a leading batch dimension")
        return [batch[i] for i in range(batch.shape[0])]
    if hasattr(batch, "dtype_name") and hasattr(batch, "_sample"):  # a stoker TensorList
        return [batch[i] for i in range(len(batch))]
    if hasattr(batch, "__dlpack__") or hasattr(batch, "__array_interface__"):
        return _split_batch(np.asarray(_to_array(batch, where)), where)
    try:
        return list(batch)
    except TypeError:
        raise InvalidArgumentError(
            f"{where}: expected a batch (a list of arrays or an array with a batch dimension), "
            f"got {type(batch).__name__}") from None


def _num_params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 0
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return 1
    return n


class SourceGroup:
    """One Python source feeding one or more external_source instances (num_outputs)."""

    def __init__(self, source, num_outputs, cycle, batch, batch_info, layouts, label):
        if cycle not in (None, False, True, "quiet", "raise", "no"):
            raise InvalidArgumentError(f"{label}: cycle must be False, True, 'quiet' or 'raise', got {cycle!r}")
        self.source, self.num_outputs = source, num_outputs
        self.cycle = {None: False, "no": False, "quiet": True}.get(cycle, cycle)
        self.batch, self.batch_info, self.layouts, self.label = batch, batch_info, layouts, label
        self.op_names = []  # the C instance names, one per output
        self._callable = callable(source) and not inspect.isgeneratorfunction(source) and not (
            hasattr(source, "__iter__") or hasattr(source, "__next__"))
        if self._callable and cycle:
            raise InvalidArgumentError(f"{label}: cycle applies to iterables, not to callables")
        self._iterator = None
        self.epoch_idx = 0
        self.iteration = 0  # batches produced by the source in this epoch
        self.fed = 0  # batches fed to the C queue in this epoch
        self.consumed = 0  # batches run() returned in this epoch
        self.exhausted = False
        self.manual = source is None

    # ---- the source ----

    def _new_iterator(self):
        src = self.source
        if inspect.isgeneratorfunction(src):
            return iter(src())
        return iter(src)

    def _next_from_iterator(self):
        if self._iterator is None:
            self._iterator = self._new_iterator()
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = None
            if self.cycle is True:  # wrap around silently
                self._iterator = self._new_iterator()
                return next(self._iterator)
            raise

    def _next_batch(self, batch_size):
        """One batch per output, as lists of arrays; StopIteration at the epoch's end."""
        if not self.batch:
            return self._next_samples(batch_size)
        if self._callable:
            n = _num_params(self.source)
            if n == 0:
                data = self.source()
            else:
                arg = BatchInfo(self.iteration, self.epoch_idx) if self.batch_info else self.iteration
                data = self.source(arg)
        else:
            data = self._next_from_iterator()
        outs = self._per_output(data)
        return [_split_batch(o, self.label) for o in outs]

    def _next_samples(self, batch_size):
        samples = []
        for i in range(batch_size):
            if self._callable:
                info = SampleInfo(self.iteration * batch_size + i, i, self.iteration, self.epoch_idx)
                samples.append(self.source(info))
            else:
                samples.append(self._next_from_iterator())
        per_output = [self._per_output(s) for s in samples]
        return [[s[k] for s in per_output] for k in range(self.num_outputs)]

    def _per_output(self, data):
        if self.num_outputs == 1:
            return [data]
        try:
            outs = list(data)
        except TypeError:
            outs = None
        if outs is None or len(outs) != self.num_outputs:
            raise InvalidArgumentError(
                f"{self.label}: num_outputs={self.num_outputs}, but the source returned "
                f"{type(data).__name__} rather than {self.num_outputs} outputs")
        return outs

    # ---- feeding ----

    def feed(self, cpipe, per_output, layouts=None):
        """Feeds one batch (a list of samples per output) to the C queues."""
        if len(per_output) != len(self.op_names):
            raise InvalidArgumentError(f"{self.label}: expected {len(self.op_names)} outputs")
        for k, (name, samples) in enumerate(zip(self.op_names, per_output)):
            arrays = [_to_array(s, self.label) for s in samples]
            layout = (layouts or self.layouts)[k]
            cpipe.feed(name, arrays, layout)
        self.fed += 1

    def fill(self, cpipe, batch_size, ahead):
        """Feeds until `ahead` batches wait beyond those consumed, or the source ends."""
        if self.manual:
            return
        while not self.exhausted and self.fed - self.consumed < ahead:
            try:
                per_output = self._next_batch(batch_size)
            except StopIteration:
                self.exhausted = True
                break
            self.iteration += 1
            self.feed(cpipe, per_output)

    def at_end(self):
        """True when run() must raise StopIteration (nothing fed is left)."""
        return self.exhausted and self.consumed >= self.fed

    def check_has_data(self):
        if self.manual and self.fed <= self.consumed:
            raise StateError(
                f"{self.label}: no data was fed for this iteration; call "
                f"pipe.feed_input({self.label!r}, batch) before run()")

    def reset(self):
        """Starts the next epoch (after StopIteration)."""
        if not self.exhausted:
            return
        self.exhausted = False
        self._iterator = None
        self.epoch_idx += 1
        self.iteration = 0
        self.fed = self.consumed = 0


class _ExternalSourceHook:
    extra_kwargs = {
        "source": "an iterable, a generator function or a callable giving batches "
                  "(or samples with batch=False); None to feed with Pipeline.feed_input",
        "num_outputs": "the number of outputs the source gives (a tuple per batch)",
        "cycle": "for iterables: False (StopIteration ends the epoch), True/'quiet' "
                 "(restart silently) or 'raise' (end the epoch, restart on reset)",
        "batch": "True: the source gives whole batches; False: one sample per call",
        "batch_info": "pass a BatchInfo instead of the iteration number to batch callables",
        "parallel": "run the source in the pipeline's worker processes (Pipeline's "
                    "py_num_workers, py_start_method): a per-sample callable (batch=False) "
                    "has each batch split among the workers, a batch callable gets one "
                    "batch per worker, an iterable or generator runs in one worker",
        "prefetch_queue_depth": "with parallel=True: batches computed ahead by the workers "
                                "beyond those fed to the pipeline (default 1)",
        "cuda_stream": "accepted for DALI compatibility",
        "use_copy_kernel": "accepted for DALI compatibility",
        "repeat_last": "accepted for DALI compatibility (not supported: must be False)",
    }

    def call(self, schema, inputs, kwargs):
        kwargs = dict(kwargs)
        if inputs:
            raise InvalidArgumentError("external_source: takes no positional inputs (use source=)")
        source = kwargs.pop("source", None)
        num_outputs = kwargs.pop("num_outputs", None)
        cycle = kwargs.pop("cycle", None)
        batch = kwargs.pop("batch", True)
        batch_info = kwargs.pop("batch_info", False)
        parallel = bool(kwargs.pop("parallel", False))
        depth = kwargs.pop("prefetch_queue_depth", None)
        for k in ("cuda_stream", "use_copy_kernel"):
            kwargs.pop(k, None)
        if kwargs.pop("repeat_last", False):
            raise InvalidArgumentError("external_source: repeat_last=True is not supported")
        multi = num_outputs is not None
        n = 1 if num_outputs is None else int(num_outputs)
        if n < 1:
            raise InvalidArgumentError("external_source: num_outputs must be >= 1")
        name = kwargs.pop("name", None)
        per_output = []
        for k in range(n):
            kw = {}
            for key, value in kwargs.items():
                if multi and isinstance(value, (list, tuple)) and key in ("layout", "dtype", "ndim"):
                    if len(value) != n:
                        raise InvalidArgumentError(
                            f"external_source: '{key}' has {len(value)} entries for {n} outputs")
                    value = value[k]
                kw[key] = value
            if name is not None:
                kw["name"] = name if n == 1 else f"{name}_{k}"
            per_output.append(kw)
        layouts = [kw.get("layout") for kw in per_output]
        label = name or "external_source"
        if parallel:
            from ._parallel import ParallelSourceGroup
            group = ParallelSourceGroup(source, n, cycle, batch, batch_info, layouts, label, depth)
        else:
            group = SourceGroup(source, n, cycle, batch, batch_info, layouts, label)
        nodes = []
        for kw in per_output:
            inst = _graph.instantiate(schema, [], kw)
            inst.payload = group
            group.op_names.append(inst.name)
            nodes.append(inst.outputs[0])
        if name is None:
            group.label = f"external_source '{group.op_names[0]}'"
        return nodes if multi else nodes[0]


# ---- python_function ----

class _ArrayView:
    """Exposes borrowed C memory to NumPy through __array_interface__."""

    __slots__ = ("__array_interface__",)

    def __init__(self, ptr, shape, strides, typestr):
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


_TYPESTR = {"uint8": "|u1", "int8": "|i1", "uint16": "<u2", "int16": "<i2", "uint32": "<u4",
            "int32": "<i4", "uint64": "<u8", "int64": "<i8", "float16": "<f2",
            "float32": "<f4", "float64": "<f8", "bool": "|b1"}


class PythonFunctionTrampoline(BatchCalls):
    """Called by the C bridge for every sample: copies the inputs into NumPy arrays,
    calls the user's function, and returns [(array, layout), ...], or the error text.
    Batch calls (batch_processing, the GPU) go through ``call_batch`` (_pyfunc.py)."""

    def __init__(self, function, num_outputs, output_layouts, label, batch_processing=False):
        self.function, self.num_outputs, self.label = function, num_outputs, label
        self.batch_processing = bool(batch_processing)
        if output_layouts is None or isinstance(output_layouts, str):
            output_layouts = [output_layouts] * num_outputs
        # (DALI: a shorter list leaves the last outputs without a layout)
        self.output_layouts = (list(output_layouts) + [None] * num_outputs)[:num_outputs]
        # (the C bridge reads them as str: anything else left a Python error pending there,
        # dropped on the CPU and misreported on the GPU)
        bad = [x for x in self.output_layouts if x is not None and not isinstance(x, str)]
        if bad:
            raise InvalidArgumentError(f"{label}: output_layouts must be strings, got {bad[0]!r}")
        self.last_exception = None

    @staticmethod
    def copy_input(desc):
        p, shape, strides, dt, _layout = desc
        return np.array(_ArrayView(p, shape, strides, _TYPESTR[dt]), copy=True)

    def __call__(self, inputs, ordinal):
        try:
            arrays = [self.host_input(self.copy_input(t)) for t in inputs]
            result = self.function(*arrays)
            return self._outputs(result)
        except BaseException as e:  # reported through the C error, re-raised as the cause
            # (KeyboardInterrupt and SystemExit too: Pipeline.run re-raises them as they
            # are; escaping here they would be swallowed by the C caller)
            # (the operator is named by the caller)
            return self.failed(e, f"{type(e).__name__}: {e}")

    def _outputs(self, result):
        results = split_outputs(result, self.num_outputs, "arrays")
        return [(self.host_output(r), layout) for r, layout in zip(results, self.output_layouts)]


class _PythonFunctionHook:
    extra_kwargs = {
        "function": "the callable, called as function(*input_arrays) for every sample (or "
                    "with lists of samples, batch_processing=True); returns one array, or a "
                    "tuple of num_outputs arrays (lists)",
        "output_layouts": "layout string (or one per output) given to the outputs",
    }

    def call(self, schema, inputs, kwargs):
        kwargs = dict(kwargs)
        function = kwargs.pop("function", None)
        if not callable(function):
            raise InvalidArgumentError("python_function: argument 'function' must be a callable")
        layouts = kwargs.pop("output_layouts", None)
        inst = _graph.instantiate(schema, inputs, kwargs)
        label = f"python_function '{inst.name}'"
        inst.payload = PythonFunctionTrampoline(function, len(inst.outputs), layouts, label,
                                                kwargs.get("batch_processing", False))
        return _graph.outputs_of(inst)


_opgen.HOOKS["external_source"] = _ExternalSourceHook()
_opgen.HOOKS["python_function"] = _PythonFunctionHook()

