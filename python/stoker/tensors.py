"""Pipeline outputs: :class:`TensorList`, one per output per batch, and the
:class:`TensorCPU` / :class:`TensorGPU` objects its samples and dense views are.

The memory belongs to the pipeline's pools and is shared, not copied, with every view
(indexing, ``as_array()``, ``as_tensor()``, the buffer protocol, ``__dlpack__``,
``__cuda_array_interface__``). It returns to the pool when the last view and the
TensorList are gone.
"""

import ctypes

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from . import _stoker
from . import types as _types
from .errors import InvalidArgumentError, StateError, UnsupportedError


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


class _Shape(tuple):
    """A tensor's shape: a tuple (NumPy's ``t.shape == (2, 3)``) that can also be called
    (DALI's ``t.shape()``, which returns a list)."""

    __slots__ = ()

    def __call__(self):
        return list(self)


class _Ndim(int):
    """The number of dimensions: an int (NumPy's ``t.ndim``) that can also be called
    (DALI's ``t.ndim()``)."""

    __slots__ = ()

    def __call__(self):
        return int(self)


def _pointer(ptr, what):
    """An integer address from an int, a ctypes pointer or c_void_p."""
    if isinstance(ptr, int):
        return ptr
    if isinstance(ptr, ctypes.c_void_p):
        return ptr.value or 0
    if isinstance(ptr, ctypes._Pointer) or isinstance(ptr, ctypes.Array):
        return ctypes.addressof(ptr.contents if isinstance(ptr, ctypes._Pointer) else ptr)
    raise InvalidArgumentError(
        f"{what}: 'ptr' must be an address (int, ctypes.c_void_p or a ctypes pointer) or a "
        f"writable NumPy array, got {type(ptr).__name__}")


def _device_destination(ptr, what):
    """(address, bytes it holds or None) of a copy's destination: an address, a ctypes
    pointer, or an object with __cuda_array_interface__ (a torch / CuPy array)."""
    if isinstance(ptr, np.ndarray):  # host memory: unified addressing copies there too
        if not (ptr.flags.writeable and ptr.flags.c_contiguous):
            raise InvalidArgumentError(f"{what}: the destination array must be writable and C-contiguous")
        return ptr.ctypes.data, ptr.nbytes
    cai = getattr(ptr, "__cuda_array_interface__", None)
    if cai is not None:
        nbytes = int(np.prod(cai["shape"], dtype=np.int64)) * np.dtype(cai["typestr"]).itemsize
        return int(cai["data"][0]), nbytes
    return _pointer(ptr, what), None


def _stream_handle(cuda_stream):
    """A CUDA stream as an integer handle (None: stoker's copy stream)."""
    if cuda_stream is None:
        return 0
    for attr in ("cuda_stream", "ptr", "value"):  # torch.cuda.Stream, CuPy, ctypes.c_void_p
        value = getattr(cuda_stream, attr, None)
        if isinstance(value, int):
            return value
    return int(cuda_stream)


def _copy_to_device(owner, first, count, nbytes, ptr, cuda_stream, non_blocking, what):
    """Samples [first, first + count) of a device list copied back to back to `ptr`."""
    address, room = _device_destination(ptr, what)
    if room is not None and room < nbytes:
        raise InvalidArgumentError(f"{what}: the destination holds {room} bytes, the data {nbytes}")
    owner._copy_out(first, count, address, nbytes if room is None else room,
                    _stream_handle(cuda_stream), not non_blocking)


def _copy_to_host(src, ptr, what):
    """Copies the C-contiguous array `src` to `ptr`: an address or a writable array of
    the same number of bytes."""
    if isinstance(ptr, np.ndarray) or (hasattr(ptr, "__array_interface__") and not isinstance(ptr, int)):
        dst = np.asarray(ptr)
        if not dst.flags.writeable or not dst.flags.c_contiguous:
            raise InvalidArgumentError(f"{what}: the destination array must be writable and C-contiguous")
        if dst.nbytes != src.nbytes:
            raise InvalidArgumentError(
                f"{what}: the destination holds {dst.nbytes} bytes, the data {src.nbytes}")
        dst.reshape(-1).view(np.uint8)[:] = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
        return
    address = _pointer(ptr, what)
    if not address:
        raise InvalidArgumentError(f"{what}: 'ptr' is a null pointer")
    ctypes.memmove(address, np.ascontiguousarray(src).ctypes.data, src.nbytes)


class TensorCPU(NDArrayOperatorsMixin):
    """One tensor in host memory: a sample of a CPU TensorList (``tl[i]``) or a whole
    dense batch (``tl.as_tensor()``), without a copy (DALI's TensorCPU).

    DALI's methods: ``shape()`` (a list), ``dtype`` (a ``types.DALIDataType``),
    ``layout()``, ``ndim()``, ``data_ptr()``, ``as_cpu()``, ``copy_to_external(ptr)``,
    ``squeeze(dim)``, ``__array__``, the array interface and DLPack. It also behaves as
    the NumPy array it wraps, as ``tl[i]`` did before: ``t.shape == (h, w, c)``, ``t[0, 1]``
    (reads and writes), arithmetic and ufuncs (giving NumPy arrays), ``t.astype(...)``,
    ``t.tolist()``, ``t.max()``, ``int(label)``; ``as_array()`` gives the array itself.
    The memory stays valid while the tensor (or any view made from it) lives.
    """

    __slots__ = ("_array", "_layout")
    device = "cpu"

    def __init__(self, array, layout=""):
        self._array, self._layout = array, layout or ""

    # ---- DALI's interface ----

    @property
    def shape(self):
        return _Shape(self._array.shape)

    @property
    def ndim(self):
        return _Ndim(self._array.ndim)

    @property
    def dtype(self):
        """The element type as a ``types.DALIDataType`` (it compares equal to the NumPy
        type too: ``t.dtype == np.uint8``)."""
        return _types.dtype_from_name(self._array.dtype.name)

    def layout(self):
        return self._layout

    def set_layout(self, layout):
        layout = layout or ""
        if layout and len(layout) != self._array.ndim:
            raise InvalidArgumentError(
                f"TensorCPU.set_layout: layout {layout!r} has {len(layout)} letters for a tensor "
                f"of {self._array.ndim} dimensions")
        self._layout = layout

    def data_ptr(self):
        return self._array.__array_interface__["data"][0]

    def as_array(self):
        """The data as a NumPy array, without a copy."""
        return self._array

    def as_cpu(self):
        return self

    def as_tensor(self):
        return self

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking=False, use_copy_kernel=False):
        """Copies the data to ``ptr``: an address (int, ctypes.c_void_p) with room for
        the tensor's bytes, or a writable NumPy array of the same size."""
        _copy_to_host(self._array, ptr, "TensorCPU.copy_to_external")

    def squeeze(self, dim=None):
        """Removes axes of extent 1 (only `dim` when given), in place, with their layout
        letters; returns whether the shape changed (as DALI's)."""
        a = self._array
        if dim is None:
            axes = [d for d in range(a.ndim) if a.shape[d] == 1]
        else:
            d = int(dim) + (a.ndim if int(dim) < 0 else 0)
            if not 0 <= d < a.ndim or a.shape[d] != 1:
                raise InvalidArgumentError(
                    f"TensorCPU.squeeze: dim = {dim} is not an axis of extent 1 of shape {a.shape}")
            axes = [d]
        if not axes:
            return False
        self._array = a.reshape([n for k, n in enumerate(a.shape) if k not in axes])
        if self._layout:
            self._layout = "".join(c for k, c in enumerate(self._layout) if k not in axes)
        return True

    def source_info(self):
        return ""

    # ---- the array protocols ----

    @property
    def __array_interface__(self):
        return self._array.__array_interface__

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._array, dtype=dtype, copy=True)
        return self._array if dtype is None else self._array.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        unwrap = lambda x: x._array if isinstance(x, TensorCPU) else x
        inputs = tuple(unwrap(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(unwrap(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        kwargs = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return self._array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    # ---- the NumPy array it wraps ----

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._array, name)

    def __getitem__(self, index):
        return self._array[index]

    def __setitem__(self, index, value):
        self._array[index] = value

    def __len__(self):
        return len(self._array)

    def __iter__(self):
        return iter(self._array)

    def __contains__(self, value):
        return value in self._array

    def __bool__(self):
        return bool(self._array)

    def __int__(self):
        return int(self._array)

    def __float__(self):
        return float(self._array)

    def __index__(self):
        return self._array.__index__()

    def __copy__(self):
        return TensorCPU(self._array.copy(), self._layout)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return (TensorCPU, (np.array(self._array), self._layout))

    def __repr__(self):
        body = np.array2string(self._array, separator=" ", prefix="    ")
        layout = f'    layout="{self._layout}",\n' if self._layout else ""
        return (f"TensorCPU(\n    {body},\n    dtype={self.dtype},\n{layout}    device=\"cpu\",\n"
                f"    shape={tuple(self._array.shape)})")

    __str__ = __repr__


class TensorGPU:
    """One tensor in device memory: a sample of a GPU TensorList (``tl[i]``) or a whole
    dense batch (``tl.as_tensor()``), without a copy (DALI's TensorGPU).

    ``shape()``, ``dtype``, ``layout()``, ``ndim()``, ``data_ptr()``; ``as_cpu()`` copies
    it to a :class:`TensorCPU`; ``__dlpack__`` / ``__dlpack_device__`` and
    ``__cuda_array_interface__`` (v3) export it to torch, cupy, JAX... The batch stays
    alive while the tensor does.
    """

    __slots__ = ("_owner", "_index", "_ptr", "_shape", "_dtype_name", "_layout")
    device = "gpu"

    def __init__(self, owner, index, ptr, shape, dtype_name, layout):
        # index None: the whole dense list, viewed with `shape`
        self._owner, self._index, self._ptr = owner, index, ptr
        self._shape, self._dtype_name, self._layout = tuple(shape), dtype_name, layout or ""

    @property
    def shape(self):
        return _Shape(self._shape)

    @property
    def ndim(self):
        return _Ndim(len(self._shape))

    @property
    def dtype(self):
        return _types.dtype_from_name(self._dtype_name)

    @property
    def device_id(self):
        return self._owner.device_id

    def layout(self):
        return self._layout

    def data_ptr(self):
        return self._ptr

    def as_cpu(self):
        """A copy in host memory, as a TensorCPU (waits for the batch to be ready)."""
        host = self._owner.as_cpu()
        if self._index is not None:
            return TensorCPU(host._sample_array(self._index), self._layout)
        return TensorCPU(np.asarray(host).reshape(self._shape), self._layout)

    def as_array(self):
        raise UnsupportedError("TensorGPU.as_array: the data is in GPU memory; call as_cpu() first")

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking=False, use_copy_kernel=False):
        """Copies the data to ``ptr`` (device or host memory: an address, a ctypes
        pointer, or an array with __cuda_array_interface__) on ``cuda_stream`` (None: a
        stream of stoker's), after the batch's producer; returns when done unless
        ``non_blocking``."""
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * np.dtype(self._dtype_name).itemsize
        first, count = (0, len(self._owner)) if self._index is None else (self._index, 1)
        _copy_to_device(self._owner, first, count, nbytes, ptr, cuda_stream, non_blocking,
                        "TensorGPU.copy_to_external")

    def _wait(self):
        # Exporting a capsule for the legacy default stream (1) makes that stream wait
        # for the batch's producer; the capsule itself is dropped unused.
        self._owner.__dlpack__(stream=1) if self._index is None else \
            self._owner._sample_dlpack(self._index, 1)

    @property
    def __cuda_array_interface__(self):
        self._wait()
        return {"shape": self._shape, "typestr": _TYPESTR[self._dtype_name],
                "data": (self._ptr, False), "strides": None, "version": 3, "stream": 1}

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self._index is None:
            if self._shape != (len(self._owner),) + tuple(self._owner._shapes()[0]):
                return self._owner._reshaped_dlpack(self._shape, stream, max_version, dl_device, copy)
            return self._owner.__dlpack__(stream, max_version, dl_device, copy)
        return self._owner._sample_dlpack(self._index, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return self._owner.__dlpack_device__()

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __repr__(self):
        layout = f'layout="{self._layout}", ' if self._layout else ""
        return (f"TensorGPU(dtype={self.dtype}, {layout}device=\"gpu\", "
                f"device_id={self.device_id}, shape={self._shape})")


class TensorList(_stoker.TensorList):
    """A batch: ``len(tl)`` samples sharing a dtype and a layout (DALI's TensorListCPU /
    TensorListGPU).

    ``tl[i]`` is sample i as a :class:`TensorCPU` or :class:`TensorGPU` (a view that keeps
    the batch alive; a TensorCPU also behaves as a NumPy array); ``tl.at(i)`` is sample i
    as a NumPy array (CPU lists). ``as_array()`` gives the whole batch as one
    ``[N, ...]`` NumPy array and ``as_tensor()`` as one tensor, when all samples have one
    shape. ``np.from_dlpack(tl)``, ``torch.from_dlpack(tl)`` and ``np.asarray(tl)`` share
    the memory.
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

    def _sample_array(self, index):
        ptr, shape, strides, dtype, _layout = self._sample(index)
        return np.asarray(_SampleView(self, ptr, shape, strides, _TYPESTR[dtype]))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"TensorList indices must be integers or slices, not {type(index).__name__}")
        if self.device != "cpu":
            ptr, shape, _strides, dtype, layout = self._sample(index)
            n = len(self)
            return TensorGPU(self, index + n if index < 0 else index, ptr, shape, dtype, layout)
        return TensorCPU(self._sample_array(index), self.layout())

    def at(self, index):
        """Sample `index` as a NumPy array (CPU lists, as DALI's TensorListCPU.at); a
        TensorGPU for GPU lists."""
        if self.device != "cpu":
            return self[index]
        return self._sample_array(index)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ---- dense views ----

    def _require_dense(self, what):
        if not self.is_dense():
            raise StateError(
                f"TensorList.{what}: the samples differ in shape ({self._shape_summary()}); "
                "a ragged batch has no dense tensor: index the list per sample")

    def as_array(self):
        """The batch as one [N, ...] NumPy array, without a copy (CPU lists)."""
        if self.device != "cpu":
            raise UnsupportedError("TensorList.as_array: GPU data; call as_cpu() first")
        self._require_dense("as_array")
        return np.asarray(self)

    def as_tensor(self):
        """The batch as one [N, ...] tensor (TensorCPU or TensorGPU), without a copy; its
        layout is "N" followed by the samples' layout (as DALI)."""
        self._require_dense("as_tensor")
        shapes = self._shapes()
        shape = (len(shapes),) + tuple(shapes[0])
        layout = "N" + self.layout() if self.layout() else ""
        return self._dense_tensor(shape, layout)

    def as_reshaped_tensor(self, new_shape):
        """The dense batch as one tensor of shape `new_shape` (same number of elements),
        without a copy; the layout is empty (as DALI)."""
        self._require_dense("as_reshaped_tensor")
        try:
            shape = tuple(int(n) for n in new_shape)
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"TensorList.as_reshaped_tensor: new_shape must be a list of integers, got {new_shape!r}") from None
        volume = sum(int(np.prod(s, dtype=np.int64)) for s in self._shapes())
        if any(n < 0 for n in shape) or int(np.prod(shape, dtype=np.int64)) != volume:
            raise InvalidArgumentError(
                f"TensorList.as_reshaped_tensor: new_shape {list(shape)} holds "
                f"{int(np.prod(shape, dtype=np.int64))} elements; the batch has {volume}")
        return self._dense_tensor(shape, "")

    def _dense_tensor(self, shape, layout):
        if self.device == "cpu":
            return TensorCPU(np.asarray(self).reshape(shape), layout)
        return TensorGPU(self, None, self.data_ptr(), shape, self.dtype_name, layout)

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking=False, use_copy_kernel=False):
        """Copies the batch to ``ptr``. CPU lists (dense): an address (int,
        ctypes.c_void_p) with room for all its bytes, or a writable NumPy array of the
        same size. GPU lists: every sample back to back into device (or host) memory,
        as TensorGPU.copy_to_external."""
        if self.device != "cpu":  # every sample back to back, as in DALI
            itemsize = np.dtype(self.dtype_name).itemsize
            nbytes = sum(int(np.prod(s, dtype=np.int64)) * itemsize for s in self._shapes())
            _copy_to_device(self, 0, len(self), nbytes, ptr, cuda_stream, non_blocking,
                            "TensorList.copy_to_external")
            return
        self._require_dense("copy_to_external")
        _copy_to_host(np.asarray(self), ptr, "TensorList.copy_to_external")

    def as_cpu(self):
        """The batch in host memory: this list for CPU data."""
        if self.device == "cpu":
            return self
        return self._to_host()

    def _shape_summary(self):
        shapes = self._shapes()
        distinct = sorted(set(shapes))
        return ", ".join(str(s) for s in distinct[:3]) + (" ..." if len(distinct) > 3 else "")


TensorCPU.__module__ = TensorGPU.__module__ = __name__
_GpuSample = TensorGPU  # the name of the GPU sample object before TensorGPU existed


TensorListCPU = TensorList
TensorListGPU = TensorList

_stoker._set_tensorlist_class(TensorList)
