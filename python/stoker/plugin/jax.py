"""JAX iterator: batches as jax arrays through DLPack, and DALI's ``data_iterator``.

``Iterator`` (alias ``DALIGenericIterator``) takes the arguments of DALI's JAX iterator
(pipelines, output_map, size, reader_name, auto_reset, last_batch_policy,
last_batch_padded, prepare_first_batch, sharding, pmap_compatible) and yields one dict
per step, with DALI's epoch semantics:

* one pipeline, no ``sharding``: ``{name: jax.Array}``, the pipeline's batch;
* several pipelines (one per device) with ``sharding``: ``{name: jax.Array}`` where each
  array is one global array of shape ``[devices * batch, ...]`` made of the pipelines'
  batches, each on its device (``jax.make_array_from_single_device_arrays``);
* ``pmap_compatible=True`` (the default when ``data_iterator`` gets ``devices``): arrays
  of shape ``[devices, batch, ...]``, sharded over the devices along the first axis, as
  ``jax.pmap`` takes them.

``data_iterator`` turns a pipeline-defining function into a factory of such iterators
(one pipeline per device when given ``sharding`` or ``devices``, each reading its shard:
the function receives ``shard_id`` and ``num_shards`` when its signature takes them).
"""

import functools
import inspect
import os

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import InvalidArgumentError
from ..pipeline import pipeline_def
from .base import BaseIterator, LastBatchPolicy

__all__ = ["Iterator", "DALIGenericIterator", "LastBatchPolicy", "data_iterator", "to_jax"]


def to_jax(tensor_list):
    """One dense TensorList as a jax array (zero-copy where JAX allows it)."""
    if not tensor_list.is_dense():
        raise ValueError("stoker.plugin.jax: the batch is ragged (samples differ in shape)")
    return jnp.from_dlpack(tensor_list)


class Iterator(BaseIterator):
    """DALI's JAX DALIGenericIterator (see the module's documentation).

    Args beyond BaseIterator's:
        sharding: a ``jax.sharding.Sharding`` over the pipelines' devices (one pipeline
            per device, in the order of ``devices``); each output becomes one global
            array.
        pmap_compatible: stack the pipelines' batches as ``[devices, batch, ...]``.
        devices: the jax device of each pipeline (default: ``jax.local_devices()`` in
            order when several pipelines are given, a CPU pipeline's output is placed
            there; GPU pipelines' outputs already are).
    """

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 last_batch_padded=False, last_batch_policy=LastBatchPolicy.FILL,
                 prepare_first_batch=True, sharding=None, pmap_compatible=None, devices=None):
        if sharding is not None and not isinstance(sharding, jax.sharding.Sharding):
            raise InvalidArgumentError(
                f"stoker.plugin.jax: sharding must be a jax.sharding.Sharding, got {type(sharding).__name__}")
        self._sharding = sharding
        self._pmap_compatible = bool(pmap_compatible)
        npipes = len(pipelines) if isinstance(pipelines, (list, tuple)) else 1
        self._devices = list(devices) if devices is not None else None
        if self._devices is not None and len(self._devices) != npipes:
            raise InvalidArgumentError(
                f"stoker.plugin.jax: {len(self._devices)} devices for {npipes} pipelines")
        if self._devices is None and (npipes > 1 or sharding is not None or self._pmap_compatible):
            local = jax.local_devices()
            if npipes > len(local):
                raise InvalidArgumentError(
                    f"stoker.plugin.jax: {npipes} pipelines but only {len(local)} local jax devices")
            self._devices = local[:npipes]
        super().__init__(pipelines, output_map, size=size, reader_name=reader_name,
                         auto_reset=auto_reset, last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)

    def _convert(self, tensor_list, pipe):
        return to_jax(tensor_list)

    def _slice(self, tensor, n):
        return tensor[:n]

    def _fill(self, tensor, last, k):
        return jnp.concatenate([tensor, jnp.repeat(last, k, axis=0)])

    def __next__(self):
        batches = super().__next__()
        if len(batches) == 1 and self._sharding is None and not self._pmap_compatible:
            return batches[0]
        return {name: self._combine(name, [b[name] for b in batches]) for name in self.output_map}

    def _placed(self, shards):
        out = []
        for k, s in enumerate(shards):
            dev = self._devices[k]
            out.append(s if dev in s.devices() else jax.device_put(s, dev))
        return out

    def _combine(self, name, shards):
        shapes = {tuple(s.shape) for s in shards}
        if len(shapes) != 1:
            raise InvalidArgumentError(
                f"stoker.plugin.jax: the pipelines' batches of '{name}' differ in shape "
                f"({sorted(shapes)}); a global array needs equal shards (a PARTIAL last "
                "batch cannot be sharded: use FILL or DROP)")
        shape = shards[0].shape
        placed = self._placed(shards)
        if self._sharding is not None:
            return jax.make_array_from_single_device_arrays(
                (len(shards) * shape[0],) + tuple(shape[1:]), self._sharding, placed)
        mesh = jax.sharding.Mesh(np.array(self._devices), ("device",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("device"))
        return jax.make_array_from_single_device_arrays(
            (len(shards),) + tuple(shape), sharding, [s[None] for s in placed])


DALIGenericIterator = Iterator


def _sharding_devices(sharding):
    """The local devices of a sharding, in the order of its mesh where it has one."""
    mesh = getattr(sharding, "mesh", None)
    if mesh is not None:
        return [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
    return sorted(sharding.addressable_devices, key=lambda d: d.id)


def _accepts(func, name):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def data_iterator(pipeline_fn=None, output_map=(), size=-1, reader_name=None, auto_reset=False,
                  last_batch_padded=False, last_batch_policy=LastBatchPolicy.FILL,
                  prepare_first_batch=True, sharding=None, devices=None, pmap_compatible=None):
    """Decorates a pipeline-defining function (as ``pipeline_def`` would take it) so that
    calling it with pipeline arguments (``batch_size``, ``seed``, ...) returns an
    :class:`Iterator` (DALI's ``nvidia.dali.plugin.jax.data_iterator``).

    Without ``sharding`` and ``devices``: one pipeline (``device_id`` 0 when jax runs on a
    GPU, a CPU pipeline otherwise). With ``sharding`` (a jax Sharding) or ``devices`` (a
    list of jax devices): one pipeline per local device; ``batch_size`` is the global
    batch, divided by ``jax.device_count()``; pipeline k gets ``shard_id`` (its device's
    id) and ``num_shards`` (the device count, or ``len(devices)``) when the function takes
    them, and runs on GPU k when the devices are GPUs. Outputs: see :class:`Iterator`.
    """
    if sharding is not None and devices is not None:
        raise InvalidArgumentError("data_iterator: give sharding or devices, not both")

    def decorate(func):
        make = pipeline_def(func)

        @functools.wraps(func)
        def create(*args, **kwargs):
            kwargs.setdefault("num_threads", max(1, (os.cpu_count() or 1) // max(1, jax.local_device_count())))
            common = dict(output_map=list(output_map), size=size, reader_name=reader_name,
                          auto_reset=auto_reset, last_batch_padded=last_batch_padded,
                          last_batch_policy=last_batch_policy, prepare_first_batch=prepare_first_batch)
            if sharding is None and devices is None:
                dev = jax.devices()[0]
                kwargs.setdefault("device_id", 0 if dev.platform == "gpu" else None)
                return Iterator([make(*args, **kwargs)], pmap_compatible=pmap_compatible, **common)
            if "batch_size" not in kwargs:
                raise InvalidArgumentError("data_iterator: give batch_size (the global batch) when sharding")
            global_batch = int(kwargs["batch_size"])
            count = jax.device_count() if devices is None else len(devices)
            if global_batch % count:
                raise InvalidArgumentError(
                    f"data_iterator: batch_size {global_batch} does not divide among {count} devices")
            kwargs["batch_size"] = global_batch // count
            use = list(devices) if devices is not None else _sharding_devices(sharding)
            if devices is not None and jax.local_device_count() != jax.device_count():
                raise InvalidArgumentError(
                    "data_iterator: devices= (pmap) does not work across processes; use sharding=")
            pipes, gpu_index = [], 0
            for dev in use:
                kw = dict(kwargs)
                if dev.platform == "gpu":
                    kw["device_id"], gpu_index = gpu_index, gpu_index + 1
                else:
                    kw["device_id"] = None
                if _accepts(func, "shard_id"):
                    kw["shard_id"] = dev.id
                if _accepts(func, "num_shards"):
                    kw["num_shards"] = count
                pipes.append(make(*args, **kw))
            pmap = pmap_compatible if pmap_compatible is not None else devices is not None
            return Iterator(pipes, sharding=sharding, pmap_compatible=pmap, devices=use, **common)

        return create

    return decorate(pipeline_fn) if pipeline_fn is not None else decorate
