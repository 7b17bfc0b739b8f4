"""Pipelines, DALI's shape: ``Pipeline``, ``pipeline_def`` and ``with pipe:`` graphs.

A pipeline is defined sample-wise in Python (operator calls on data nodes) and run
batch-wise by the C library: ``build()`` hands the graph to ``stk_pipeline_*`` and
starts the producer, ``run()`` returns one :class:`~stoker.tensors.TensorList` per
output.
"""

import atexit
import functools
import inspect
import os
import weakref

from . import _graph, _stoker
from ._graph import DataNode
from .errors import InvalidArgumentError, StateError, StokerError
from .external_source import PythonFunctionTrampoline, SourceGroup
from .tensors import TensorList  # noqa: F401  (registers the output class)

_SETTINGS = {
    "batch_size": _stoker.PIPE_BATCH_SIZE,
    "num_threads": _stoker.PIPE_NUM_THREADS,
    "seed": _stoker.PIPE_SEED,
    "prefetch_queue_depth": _stoker.PIPE_PREFETCH_QUEUE_DEPTH,
    "device_id": _stoker.PIPE_DEVICE_ID,
    "on_error": _stoker.PIPE_ON_ERROR,
    "max_image_pixels": _stoker.PIPE_MAX_IMAGE_PIXELS,
    "max_file_bytes": _stoker.PIPE_MAX_FILE_BYTES,
    "exec_async": _stoker.PIPE_EXEC_ASYNC,
    "timeout_ms": _stoker.PIPE_TIMEOUT_MS,
    "max_batch_bytes": _stoker.PIPE_MAX_BATCH_BYTES,
}

# DALI constructor arguments with no effect in stoker, accepted so DALI code ports as is.
_DALI_COMPAT_ARGS = ("bytes_per_sample", "set_affinity", "max_streams",
                     "default_cuda_stream_priority", "enable_memory_stats",
                     "py_callback_pickler", "output_dtype", "output_ndim",
                     "exec_dynamic", "experimental_exec_dynamic")

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Stop producers before the interpreter finalises: a worker thread that asks for the
    # GIL during finalisation (python_function) would hang or be killed mid-call.
    for pipe in list(_live):
        try:
            pipe.close()
        except Exception:
            pass


class Pipeline:
    """A data pipeline (``nvidia.dali.Pipeline``'s API).

    Args:
        batch_size: samples per batch (required before build).
        num_threads: CPU worker threads (default: the number of CPUs).
        device_id: the CUDA device, or None for a CPU-only pipeline.
        seed: the pipeline's seed; -1 uses stoker's fixed default seed (runs are
            reproducible unless you choose otherwise).
        prefetch_queue_depth: batches produced ahead of run() (an int, or DALI's
            {"cpu_size": n, "gpu_size": m}, of which the larger is used).
        exec_async: produce batches on a background thread.
        exec_pipelined: False limits the prefetch depth to 1.
        enable_conditionals: rewrite the graph-defining function (``define_graph`` or the
            ``pipeline_def`` function, and the functions it calls) so that ``if`` /
            ``elif`` / ``else``, ``x if c else y``, ``and``, ``or`` and ``not`` on data
            nodes choose per sample (see docs/python.md, "Conditional execution").
        on_error: "error" (a bad sample stops the run with an error naming it) or "skip"
            (bad samples are skipped, counted in stats(), batches kept full).
        max_image_pixels, max_file_bytes, max_batch_bytes: limits for untrusted input
            (defaults 2^26 pixels, 256 MiB, 2 GiB; see docs/hardening.md).
        timeout_ms: the bound of every wait on the device, on nvJPEG and between the
            pipeline's stages (default 300000, 5 minutes). When run() has waited this long
            for a batch, it raises an error naming the stage, the batch and what it waited
            for (:class:`DeviceError` for the GPU stages), and the pipeline stays failed;
            close() returns within about this bound. Waiting for an external source's data
            is not bounded. stoker's own setting (DALI has none).
        enable_checkpointing: accepted as in DALI; stoker can always take a checkpoint.
        checkpoint: a checkpoint (``pipe.checkpoint()``'s text) to resume from: the
            pipeline, built alike, goes on with the batches that followed it.
        py_num_workers, py_start_method: the worker processes of the external sources
            with ``parallel=True`` ("fork" or "spawn"; spawn needs picklable sources);
            started by build() (or start_py_workers()) before the pipeline's threads.
    """

    def __init__(self, batch_size=-1, num_threads=-1, device_id=None, seed=-1,
                 exec_pipelined=True, prefetch_queue_depth=2, exec_async=True,
                 enable_conditionals=False, on_error="error", max_image_pixels=None,
                 max_file_bytes=None, timeout_ms=300000, enable_checkpointing=False,
                 checkpoint=None, py_num_workers=1, py_start_method="fork", max_batch_bytes=None,
                 **kwargs):
        unknown = [k for k in kwargs if k not in _DALI_COMPAT_ARGS]
        if unknown:
            raise InvalidArgumentError(f"Pipeline: unknown argument '{unknown[0]}'")
        if isinstance(prefetch_queue_depth, dict):
            prefetch_queue_depth = max(int(v) for v in prefetch_queue_depth.values())
        if on_error not in ("error", "skip"):
            raise InvalidArgumentError(f"Pipeline: on_error must be 'error' or 'skip', got {on_error!r}")
        self._batch_size = int(batch_size)
        self._num_threads = int(num_threads) if num_threads not in (None, -1) else (os.cpu_count() or 1)
        self._device_id = None if device_id in (None, -1) else int(device_id)
        self._seed = int(seed) if seed is not None else -1
        self._exec_pipelined = bool(exec_pipelined)
        self._prefetch_queue_depth = int(prefetch_queue_depth) if exec_pipelined else 1
        self._exec_async = bool(exec_async)
        self._enable_conditionals = bool(enable_conditionals)
        self._on_error = on_error
        self._max_image_pixels, self._max_file_bytes = max_image_pixels, max_file_bytes
        self._max_batch_bytes = max_batch_bytes
        self._timeout_ms = int(timeout_ms)
        self._enable_checkpointing = bool(enable_checkpointing)
        if checkpoint is not None and not isinstance(checkpoint, str):
            raise InvalidArgumentError("Pipeline: checkpoint must be the text pipe.checkpoint() gave")
        self._restore_from = checkpoint
        self._checkpoint = None  # the state after the last batch run() returned
        self._outputs = None
        self._ops = []
        self._op_counter = 0
        self._preserved = []  # instances run whether or not an output needs them
        self._c = None
        self._built = False
        self._groups = []
        self._functions = []
        self._readers = []
        self._pending = []  # batches run ahead by schedule_run(), with their info
        self._last_batch_info = None
        self._out_types = None  # [(dtype, ndim)] of the outputs, from the last batch
        if py_start_method not in ("fork", "spawn"):
            raise InvalidArgumentError(
                f"Pipeline: py_start_method must be 'fork' or 'spawn', got {py_start_method!r}")
        if int(py_num_workers) < 1:
            raise InvalidArgumentError(f"Pipeline: py_num_workers must be >= 1, got {py_num_workers}")
        self._py_num_workers, self._py_start_method = int(py_num_workers), py_start_method
        self._py_pool = None  # worker processes of parallel external sources

    # ---- properties (DALI names) ----
    batch_size = property(lambda self: self._batch_size)
    max_batch_size = batch_size
    num_threads = property(lambda self: self._num_threads)
    device_id = property(lambda self: self._device_id)
    seed = property(lambda self: self._seed)
    exec_pipelined = property(lambda self: self._exec_pipelined)
    exec_async = property(lambda self: self._exec_async)
    prefetch_queue_depth = property(lambda self: self._prefetch_queue_depth)
    enable_conditionals = property(lambda self: self._enable_conditionals)
    on_error = property(lambda self: self._on_error)
    timeout_ms = property(lambda self: self._timeout_ms)

    @property
    def built(self):
        return self._built

    # ---- graph definition ----

    @staticmethod
    def current():
        """The pipeline whose graph is being defined in this thread (``with pipe:``)."""
        return _graph.current_pipeline()

    def __enter__(self):
        _graph.pipeline_stack().append(self)
        return self

    def __exit__(self, *exc):
        stack = _graph.pipeline_stack()
        if stack and stack[-1] is self:
            stack.pop()
        return False

    def _next_op_index(self):
        k = self._op_counter
        self._op_counter += 1
        return k

    def define_graph(self):
        """Override in subclasses: return the output DataNodes."""
        raise NotImplementedError(
            "Pipeline.define_graph: subclass Pipeline and define the graph, use "
            "@pipeline_def, or call set_outputs()")

    def set_outputs(self, *outputs):
        """Sets the output data nodes (in order)."""
        if self._built:
            raise StateError("Pipeline.set_outputs: the pipeline is already built")
        flat = []
        for o in outputs:
            if isinstance(o, (list, tuple)):
                flat.extend(o)
            else:
                flat.append(o)
        for i, o in enumerate(flat):
            _graph.check_defined(o)
            if not isinstance(o, DataNode):
                raise InvalidArgumentError(
                    f"Pipeline.set_outputs: output {i} is a {type(o).__name__}, not a DataNode")
        if not flat:
            raise InvalidArgumentError("Pipeline.set_outputs: a pipeline needs at least one output")
        self._outputs = flat

    def _preserve(self, inst):
        """Keeps `inst` in the graph when no output depends on it (preserve=True, or an
        operator that is never pruned, such as python_function)."""
        self._preserved.append(inst)

    def _collect(self):
        """The instances reachable from the outputs or preserved, in creation (topological)
        order."""
        seen, stack = {}, [o.op for o in self._outputs] + list(self._preserved)
        while stack:
            inst = stack.pop()
            if id(inst) in seen:
                continue
            seen[id(inst)] = inst
            stack.extend(inst.upstream())
        ops = sorted(seen.values(), key=lambda i: i.seq)
        names, edges = {}, {}
        for inst in ops:
            if inst.name in names:
                raise InvalidArgumentError(f"Pipeline: two operators are named '{inst.name}'")
            names[inst.name] = inst
            for k in range(len(inst.outputs)):
                e = inst.edge_name(k)
                if e in edges:
                    raise InvalidArgumentError(
                        f"Pipeline: operators '{edges[e].name}' and '{inst.name}' give the same "
                        f"edge name '{e}'; rename one of them")
                edges[e] = inst
        return ops

    # ---- building ----

    def _apply_settings(self, c):
        if self._batch_size < 1:
            raise InvalidArgumentError("Pipeline: batch_size must be set (>= 1) before build")
        values = {
            "batch_size": self._batch_size,
            "num_threads": self._num_threads,
            "seed": self._seed,
            "prefetch_queue_depth": self._prefetch_queue_depth,
            "device_id": -1 if self._device_id is None else self._device_id,
            "on_error": _stoker.ON_ERROR_SKIP if self._on_error == "skip" else _stoker.ON_ERROR_FAIL,
            "exec_async": int(self._exec_async),
            "timeout_ms": self._timeout_ms,
        }
        if self._max_image_pixels is not None:
            values["max_image_pixels"] = int(self._max_image_pixels)
        if self._max_file_bytes is not None:
            values["max_file_bytes"] = int(self._max_file_bytes)
        if self._max_batch_bytes is not None:
            values["max_batch_bytes"] = int(self._max_batch_bytes)
        for key, value in values.items():
            try:
                c.set(_SETTINGS[key], value)
            except OverflowError:
                raise OverflowError(f"Pipeline: {key}={value!r} does not fit in a 64-bit "
                                    "integer") from None

    def build(self):
        """Checks the graph, creates the C pipeline and starts its producer."""
        if self._built:
            return
        self._define_outputs()
        ops = self._collect()
        self._start_py_workers(ops)  # before any thread of this pipeline exists (fork)
        c = _stoker.Pipeline()
        try:
            self._apply_settings(c)
            for inst in ops:
                c.add_op(inst.schema.name, inst.device, inst.name,
                         [n.name for n in inst.inputs],
                         [inst.edge_name(k) for k in range(len(inst.outputs))],
                         inst.args, {k: n.name for k, n in inst.arg_inputs.items()},
                         [(n.name, v) for n, v in inst.guards])
            c.set_outputs([o.name for o in self._outputs])
            if self._restore_from is not None:
                c.restore(self._restore_from)
            groups, functions = [], []
            for inst in ops:
                if isinstance(inst.payload, PythonFunctionTrampoline):
                    c.set_host_function(inst.name, inst.payload)
                    functions.append(inst.payload)
                elif isinstance(inst.payload, SourceGroup) and all(
                        g is not inst.payload for g in groups):
                    groups.append(inst.payload)
            c.build()
        except BaseException:
            c.close()
            self._stop_py_workers()
            raise
        self._c, self._ops, self._groups, self._functions = c, ops, groups, functions
        self._checkpoint = c.checkpoint()  # the start (or where it resumed)
        self._readers = [i.name for i in ops if i.schema.is_reader]
        self._built = True
        _live.add(self)

    def _define_outputs(self):
        if self._outputs is None:
            with self:
                if self._enable_conditionals:
                    from . import _conditionals
                    outs = _conditionals.call_converted(self.define_graph)
                else:
                    outs = self.define_graph()
            if isinstance(outs, DataNode):
                outs = [outs]
            self.set_outputs(*outs)

    def start_py_workers(self):
        """Starts the worker processes of the parallel external sources (build() does it
        too); DALI's name. With "fork", call it before creating threads of your own."""
        if self._py_pool is None and not self._built:
            self._define_outputs()
            self._start_py_workers(self._collect())

    def _start_py_workers(self, ops):
        if self._py_pool is not None:
            return
        from ._parallel import ParallelSourceGroup, WorkerPool
        groups = []
        for inst in ops:
            g = inst.payload
            if isinstance(g, ParallelSourceGroup) and all(g is not x for x in groups):
                groups.append(g)
        if groups:
            self._py_pool = WorkerPool(groups, self._py_num_workers, self._py_start_method)

    def _stop_py_workers(self):
        if self._py_pool is not None:
            self._py_pool.close()
            for g in self._py_pool.groups:
                g.pool = None
            self._py_pool = None

    def _require_built(self):
        if not self._built:
            self.build()
        if self._c is None or self._c.closed:
            raise StateError("Pipeline: the pipeline is closed")

    # ---- running ----

    def _run_one(self):
        for g in self._groups:
            g.fill(self._c, self._batch_size, self._prefetch_queue_depth)
        for g in self._groups:
            if g.at_end():
                raise StopIteration
            g.check_has_data()
        try:
            out, epoch, ends_epoch = self._c.run()
        except StokerError as e:
            # the named sample's exception: several may have failed at once on the workers
            found = [f.cause_of(str(e)) for f in self._functions]  # (all consumed)
            found.sort(key=lambda c: not c[1])  # the one the error names first
            cause = next((c for c, _ in found if c is not None), None)
            if cause is not None and not isinstance(cause, Exception):
                raise cause  # KeyboardInterrupt, SystemExit: as themselves
            if cause is not None:
                raise e from cause
            raise
        for g in self._groups:
            g.consumed += 1
        return out, {"epoch": epoch, "ends_epoch": ends_epoch,
                     "size": len(out[0]) if out else 0}, self._c.checkpoint()

    def _take(self, batch):
        out, self._last_batch_info, self._checkpoint = batch
        self._out_types = [(tl.dtype, tl.ndim) for tl in out]
        return out

    def run(self):
        """The next batch: a tuple with one TensorList per output.

        A batch never holds samples of two reader epochs: the last batch of an epoch
        may be shorter than the batch size (and, under ``on_error="skip"``, any batch
        may be); ``last_batch_info()`` says which epoch the batch belongs to and
        whether it ends it. Raises StopIteration at the end of an external source's
        epoch (call reset()).
        """
        self._require_built()
        if self._pending:
            return self._take(self._pending.pop(0))
        return self._take(self._run_one())

    def checkpoint(self, filename=None):
        """The pipeline's state after the last batch run() returned (before the first:
        the start), as text; written to `filename` too when given. A pipeline built alike
        with ``checkpoint=`` this text goes on with the same batches: the readers'
        positions and every random draw. External sources are the caller's to resume."""
        self._require_built()
        text = self._checkpoint
        if filename is not None:
            with open(filename, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def last_batch_info(self):
        """About the batch the last run() returned: ``{"epoch": e, "ends_epoch": bool,
        "size": n}``, e being the first reader's epoch (-1 without a reader) and
        ``ends_epoch`` whether the next batch starts the next epoch."""
        if self._last_batch_info is None:
            raise StateError("Pipeline: no batch has been returned yet")
        return dict(self._last_batch_info)

    def output_dtype(self):
        """The element type (types.DALIDataType) of every output, in order; None where
        it is not known yet: before the first batch, only outputs whose operator states
        its type (``external_source(dtype=)``, ``cast``, ...) are known."""
        return [t[0] for t in self._output_types()]

    def output_ndim(self):
        """The number of dimensions of every output's samples; None where not known yet
        (see output_dtype)."""
        return [t[1] for t in self._output_types()]

    def _output_types(self):
        self._require_built()
        if self._out_types is not None:
            return self._out_types
        return [_declared_type(o) for o in self._outputs]

    def schedule_run(self):
        """DALI compatibility: prepares a batch for share_outputs()/outputs()."""
        self._require_built()
        self._pending.append(self._run_one())

    def share_outputs(self):
        return self.run()

    outputs = share_outputs

    def release_outputs(self):
        """DALI compatibility: outputs are released when their objects are dropped."""

    def empty(self):
        return not self._pending

    def feed_input(self, data_node, data, layout=None, cuda_stream=None, use_copy_kernel=False):
        """Feeds one batch to an external_source that has no ``source``."""
        self._require_built()
        name = data_node.op.name if isinstance(data_node, DataNode) else data_node
        for g in self._groups:
            if name in g.op_names or name == g.label:
                from .external_source import _split_batch
                if g.num_outputs != 1:
                    raise InvalidArgumentError(f"feed_input: {name!r} has several outputs")
                g.feed(self._c, [_split_batch(data, g.label)], [layout or g.layouts[0]])
                return
        raise InvalidArgumentError(f"feed_input: no external_source named {name!r}")

    def reset(self):
        """Starts a new epoch for external sources that reached their end."""
        for g in self._groups:
            g.reset()

    # ---- metadata ----

    def epoch_size(self, name=None):
        """Samples per epoch of reader `name`; a {name: size} dict when name is None."""
        self._require_built()
        if name is not None:
            return self._c.epoch_size(name)
        return {r: self._c.epoch_size(r) for r in self._readers}

    def reader_meta(self, name=None):
        """Reader metadata (epoch_size, epoch_size_padded, number_of_shards, shard_id,
        pad_last_batch, stick_to_shard); a {name: meta} dict when name is None."""
        self._require_built()
        if name is not None:
            return self._c.reader_meta(name)
        return {r: self._c.reader_meta(r) for r in self._readers}

    def stats(self):
        """Batches, samples, skipped samples, pool memory, stage times and the sample
        cache's counters (cache_hits, cache_misses, cache_bytes, cache_entries,
        cache_dropped: docs/python.md) (stk_pipeline_stats)."""
        self._require_built()
        return self._c.stats()

    def decoder_diagnostics(self):
        """The GPU decoders' instrumentation (stk_pipeline_decoder_diagnostics): time
        parsing headers, in the hardware engines' call and waiting for the hybrid path,
        the engines' share, page-locked pool blocks, the automatic cpu_decoder_load's
        current quota. Zeros without a GPU; the keys may change between versions."""
        self._require_built()
        return self._c.decoder_diagnostics()

    def executor_statistics(self):
        """{instance name: {"time_ns": ...}} for every operator."""
        self._require_built()
        return {name: {"time_ns": ns} for name, ns in self._c.op_times()}

    def serialize(self):
        """The pipeline's text form (one operator call per line)."""
        self._require_built()
        return self._c.to_text()

    to_text = serialize

    @classmethod
    def deserialize(cls, serialized_pipeline=None, filename=None, **kwargs):
        """A built pipeline from its text form (a string, or a file). Settings come from
        the text; keyword arguments (e.g. ``num_threads=8``) override them. External
        sources and Python functions cannot be restored from text."""
        if (serialized_pipeline is None) == (filename is None):
            raise InvalidArgumentError("Pipeline.deserialize: give the text or a filename")
        if filename is not None:
            with open(filename, encoding="utf-8") as f:
                serialized_pipeline = f.read()
        c = _stoker.Pipeline.from_text(serialized_pipeline)
        settings = {k: c.get(v) for k, v in _SETTINGS.items()}
        settings["device_id"] = None if settings["device_id"] < 0 else settings["device_id"]
        settings["on_error"] = "skip" if settings["on_error"] == _stoker.ON_ERROR_SKIP else "error"
        settings["exec_async"] = bool(settings["exec_async"])
        settings.update(kwargs)
        pipe = cls(**settings)
        try:
            pipe._apply_settings(c)
            c.build()
        except BaseException:
            c.close()
            pipe._stop_py_workers()
            raise
        pipe._c, pipe._outputs, pipe._built = c, [], True
        _live.add(pipe)
        return pipe

    def close(self):
        """Stops the producer and frees the C pipeline (outputs stay valid)."""
        if self._c is not None:
            self._c.close()
        self._stop_py_workers()
        _live.discard(self)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_PIPELINE_ARGS = tuple(inspect.signature(Pipeline.__init__).parameters)[1:-1] + _DALI_COMPAT_ARGS


def pipeline_def(fn=None, **pipeline_kwargs):
    """Turns a graph-defining function into a pipeline factory (DALI's decorator).

    ``@pipeline_def(batch_size=32, num_threads=4)`` (or bare ``@pipeline_def``) on a
    function returning output data nodes; calling it returns a Pipeline. Pipeline
    arguments given to the call override the decorator's; the other arguments go to the
    function. With ``enable_conditionals=True`` the function's syntax tree is rewritten
    so that ``if`` statements on data nodes choose per sample (stoker._conditionals).
    """

    def decorate(func):
        @functools.wraps(func)
        def create(*args, **kwargs):
            ctor = dict(pipeline_kwargs)
            for k in list(kwargs):
                if k in _PIPELINE_ARGS:
                    ctor[k] = kwargs.pop(k)
            pipe = Pipeline(**ctor)
            with pipe:
                if pipe.enable_conditionals:
                    from . import _conditionals
                    outs = _conditionals.call_converted(func, *args, **kwargs)
                else:
                    outs = func(*args, **kwargs)
            _graph.check_defined(outs)
            if outs is None:
                raise InvalidArgumentError(
                    f"pipeline_def: {func.__name__} returned None; return the output data nodes")
            if isinstance(outs, DataNode):
                outs = (outs,)
            pipe.set_outputs(*outs)
            return pipe

        create._is_pipeline_def = True
        return create

    return decorate(fn) if fn is not None else decorate


def _declared_type(node):
    """(dtype, ndim) of a graph output as its operator's arguments state them (None
    where they do not): `dtype` of external_source / cast / constant ..., `ndim` of
    external_source."""
    from . import types
    args = node.op.args
    dtype = args.get("dtype") if node.op.schema.name != "cast_like" else None
    if isinstance(dtype, str):
        try:
            dtype = types.dtype_from_name(dtype)
        except ValueError:
            dtype = None
    else:
        dtype = None
    ndim = args.get("ndim") if node.op.schema.name == "external_source" else None
    return dtype, (int(ndim) if ndim is not None else None)
