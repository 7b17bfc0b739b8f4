"""Pipeline outputs: :class:`TensorList`, one per output per batch.

The memory belongs to the pipeline's pools and is shared, not copied, with every view
(indexing, ``as_array()``, the buffer protocol, ``__dlpack__``,
``__cuda_array_interface__``). It returns to the pool when the last view and the
TensorList are gone.
"""

import numpy as np

from . import _stoker
from . import types as _types
from .errors import StateError, UnsupportedError


class _SampleView:
    """Keeps the TensorList alive behind a NumPy array of one sample."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, owner, ptr, shape, strides, typestr):
        self._owner = owner
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


_TYPESTR = {"uint8": "|u1", "int8": "|i1", "uint16": "<u2", "int16": "<i2", "uint32": "<u4",
            "int32": "<i4", "uint64": "<u8", "int64": "<i8", "float16": "<f2",
            "float32": "<f4", "float64": "<f8", "bool": "|b1"}


class TensorList(_stoker.TensorList):
    """A batch: ``len(tl)`` samples sharing a dtype and a layout.

    ``tl[i]`` is sample i as a NumPy array (CPU lists; a view that keeps the batch
    alive). ``as_array()`` / ``as_tensor()`` give the whole batch as one
    ``[N, ...]`` array when all samples have one shape. ``np.from_dlpack(tl)``,
    ``torch.from_dlpack(tl)`` and ``np.asarray(tl)`` share the memory.
    """

    __slots__ = ()

    # ---- description ----

    @property
    def dtype(self):
        """The element type as a stoker.types.DALIDataType member."""
        return _types.dtype_from_name(self.dtype_name)

    @property
    def device(self):
        """"gpu" for device memory, "cpu" otherwise."""
        return "gpu" if self.storage == "device" else "cpu"

    def shape(self):
        """The list of per-sample shapes (tuples)."""
        return self._shapes()

    def __repr__(self):
        shapes = self._shapes()
        uniform = shapes and all(s == shapes[0] for s in shapes)
        shape = f"{len(shapes)} x {shapes[0]}" if uniform else f"{len(shapes)} samples, ragged"
        return (f"TensorList({shape}, dtype={self.dtype_name}, layout={self.layout()!r}, "
                f"device={self.device!r})")

    # ---- samples ----

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        ptr, shape, strides, dtype, _layout = self._sample(index)
        if self.device != "cpu":
            return _GpuSample(self, index)
        return np.asarray(_SampleView(self, ptr, shape, strides, _TYPESTR[dtype]))

    def at(self, index):
        """Sample `index` as a NumPy array (DALI's TensorListCPU.at)."""
        return self[index]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ---- dense views ----

    def as_array(self):
        """The batch as one [N, ...] NumPy array, without a copy (CPU lists)."""
        if self.device != "cpu":
            raise UnsupportedError("TensorList.as_array: GPU data; call as_cpu() first")
        if not self.is_dense():
            raise StateError(
                f"TensorList.as_array: the samples differ in shape ({self._shape_summary()}); "
                "a ragged batch has no dense array: index the list per sample")
        return np.asarray(self)

    def as_tensor(self):
        """Same as as_array() (DALI returns a dense tensor here)."""
        return self.as_array()

    def as_cpu(self):
        """The batch in host memory: this list for CPU data."""
        if self.device == "cpu":
            return self
        return self._to_host()

    def _shape_summary(self):
        shapes = self._shapes()
        distinct = sorted(set(shapes))
        return ", ".join(str(s) for s in distinct[:3]) + (" ..." if len(distinct) > 3 else "")


class _GpuSample:
    """One sample of a GPU list: exported through DLPack (torch.from_dlpack, cupy...)."""

    __slots__ = ("_owner", "_index")

    def __init__(self, owner, index):
        self._owner, self._index = owner, index

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._owner._sample_dlpack(self._index, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return self._owner.__dlpack_device__()


TensorListCPU = TensorList
TensorListGPU = TensorList

_stoker._set_tensorlist_class(TensorList)
