"""TensorCPU / TensorGPU (DALI's tensor objects): tl[i] and tl.as_tensor() as tensors with
DALI's methods, still zero-copy and still usable as NumPy arrays; as_reshaped_tensor,
copy_to_external, at(i); Pipeline.output_dtype / output_ndim. Expected values as DALI 2.4
gives them (checked by hand against DALI; DALI is not needed here)."""

import copy
import ctypes
import os
import pickle

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import InvalidArgumentError, StateError, UnsupportedError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
FAKE = os.path.join(BUILD, "libstk_fake_gpu.so")
PHOTO_DIR = os.path.join(ROOT, "data", "photos")
PHOTOS = sorted(os.path.join(PHOTO_DIR, f) for f in os.listdir(PHOTO_DIR) if f.endswith(".jpg"))


def batch(i):
    return np.arange(6, dtype=np.float32).reshape(2, 3) + i


def run_pipe():
    @stoker.pipeline_def(batch_size=3, num_threads=1, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: [batch(i) for i in range(3)], layout="HW",
                               dtype=types.FLOAT, ndim=2)
        r = fn.external_source(source=lambda: [np.full((i + 1,), i, np.int16) for i in range(3)])
        return x, r
    p = pipe()
    p.build()
    return p


def test_sample_is_a_tensor_cpu_with_dalis_methods():
    x, r = run_pipe().run()
    t = x[1]
    assert isinstance(t, stoker.TensorCPU) and t.device == "cpu"
    assert t.shape() == [2, 3] and isinstance(t.shape(), list)
    assert t.dtype == types.FLOAT and t.dtype is types.DALIDataType.FLOAT
    assert t.layout() == "HW" and t.ndim() == 2
    assert np.array_equal(np.array(t), batch(1)) and np.array_equal(t.as_array(), batch(1))
    assert t.as_cpu() is t and t.data_ptr() == x.as_array()[1].ctypes.data
    assert 'layout="HW"' in repr(t) and "shape=(2, 3)" in repr(t) and "TensorCPU(" in repr(t)
    assert np.array_equal(np.from_dlpack(t), batch(1)) and t.__dlpack_device__() == (1, 0)
    assert x[-1].shape() == [2, 3] and np.array_equal(x[-1], batch(2))
    assert r[2].shape() == [3] and r[2].layout() == "" and r[2].dtype == types.INT16
    with pytest.raises(IndexError, match="out of range"):
        x[3]
    with pytest.raises(TypeError, match="integers or slices"):
        x["a"]


def test_sample_still_behaves_as_the_numpy_array_without_a_copy():
    x, r = run_pipe().run()
    t = x[0]
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == np.float32 and t.size == 6
    assert np.shares_memory(t, x.as_array()) and np.shares_memory(np.from_dlpack(t), x.as_array())
    assert np.array_equal(t * 2 + 1, batch(0) * 2 + 1) and isinstance(t * 2, np.ndarray)
    assert (t == batch(0)).all() and t.max() == 5 and t.astype(np.uint8).dtype == np.uint8
    assert t.tolist() == batch(0).tolist() and t[1, 2] == 5 and len(t) == 2
    assert int(r[1][0]) == 1 and [list(row) for row in t] == batch(0).tolist()
    t[0, 0] = -7  # writes go to the batch, as with the NumPy view before
    assert x.as_array()[0, 0, 0] == -7 and x.at(0)[0, 0] == -7
    assert np.array_equal(np.stack(list(x))[1:], np.stack([batch(1), batch(2)]))
    assert np.sqrt(x[2]).dtype == np.float32 and x[2].astype(t.dtype).dtype == np.float32
    c = copy.deepcopy(x[1])
    assert isinstance(c, stoker.TensorCPU) and not np.shares_memory(c, x.as_array())
    p = pickle.loads(pickle.dumps(x[1]))
    assert p.layout() == "HW" and np.array_equal(p, batch(1))


def test_at_gives_numpy_arrays_and_slices_give_lists():
    x, _ = run_pipe().run()
    assert type(x.at(2)) is np.ndarray and np.array_equal(x.at(2), batch(2))
    assert [s.shape() for s in x[0:2]] == [[2, 3], [2, 3]]
    assert all(isinstance(s, stoker.TensorCPU) for s in x)


def test_as_tensor_is_one_dense_tensor_with_the_n_layout():
    x, r = run_pipe().run()
    t = x.as_tensor()
    assert isinstance(t, stoker.TensorCPU) and t.shape() == [3, 2, 3] and t.layout() == "NHW"
    assert np.shares_memory(t, x.as_array()) and np.array_equal(t[2], batch(2))
    with pytest.raises(StateError, match=r"as_tensor: the samples differ in shape \(\(1,\), \(2,\), \(3,\)\)"):
        r.as_tensor()


def test_as_reshaped_tensor():
    x, r = run_pipe().run()
    t = x.as_reshaped_tensor([9, 2])
    assert t.shape() == [9, 2] and t.layout() == "" and np.shares_memory(t, x.as_array())
    assert np.array_equal(t, np.stack([batch(i) for i in range(3)]).reshape(9, 2))
    assert x.as_reshaped_tensor((18,)).shape == (18,)
    with pytest.raises(InvalidArgumentError, match=r"new_shape \[4, 4\] holds 16 elements; the batch has 18"):
        x.as_reshaped_tensor([4, 4])
    with pytest.raises(StateError, match="as_reshaped_tensor: the samples differ"):
        r.as_reshaped_tensor([6])


def test_copy_to_external():
    x, r = run_pipe().run()
    out = np.zeros((3, 2, 3), np.float32)
    x.copy_to_external(ctypes.c_void_p(out.ctypes.data))  # DALI's way: a ctypes pointer
    assert np.array_equal(out, np.stack([batch(i) for i in range(3)]))
    one = np.zeros((2, 3), np.float32)
    x[1].copy_to_external(one.ctypes.data)
    assert np.array_equal(one, batch(1))
    arr = np.zeros(3, np.int16)
    r[2].copy_to_external(arr)  # a writable array of the same size
    assert arr.tolist() == [2, 2, 2]
    with pytest.raises(InvalidArgumentError, match="destination holds 6 bytes, the data 4"):
        r[1].copy_to_external(np.zeros(3, np.int16))
    with pytest.raises(InvalidArgumentError, match="'ptr' must be an address"):
        x.copy_to_external("nowhere")
    with pytest.raises(StateError, match="copy_to_external: the samples differ"):
        r.copy_to_external(np.zeros(6, np.int16))


def test_squeeze_and_set_layout():
    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.external_source(source=lambda: [np.zeros((1, 4, 1), np.uint8)] * 2, layout="AHB")
    (tl,) = pipe().run()
    t = tl[0]
    assert t.squeeze(0) is True and t.shape() == [4, 1] and t.layout() == "HB"
    assert t.squeeze() is True and t.shape() == [4] and t.layout() == "H"
    assert t.squeeze() is False
    with pytest.raises(InvalidArgumentError, match="dim = 0 is not an axis of extent 1"):
        t.squeeze(0)
    t.set_layout("W")
    assert t.layout() == "W"
    with pytest.raises(InvalidArgumentError, match="has 2 letters for a tensor of 1 dimensions"):
        t.set_layout("HW")


def test_output_dtype_and_ndim():
    p = run_pipe()
    # before the first batch: what the arguments state (DALI gives None where unknown)
    assert p.output_dtype() == [types.FLOAT, None] and p.output_ndim() == [2, None]
    p.run()
    assert p.output_dtype() == [types.FLOAT, types.INT16] and p.output_ndim() == [2, 1]


def test_dali_data_type_equals_its_numpy_type():
    assert types.UINT8 == np.uint8 and types.UINT8 == np.dtype("uint8") and types.UINT8 != np.int8
    assert np.dtype(types.FLOAT) == np.float32 and types.FLOAT != types.FLOAT64
    assert len({types.UINT8, types.UINT8, types.INT8}) == 2


def test_gpu_samples_are_tensor_gpu(fake_gpu):
    @stoker.pipeline_def(batch_size=2, num_threads=2, seed=4, device_id=0)
    def pipe():
        jpegs, _ = fn.readers.file(files=PHOTOS[:2])
        images = fn.decoders.image(jpegs)
        return images, images.gpu(), fn.cast(fn.random.uniform(range=[0, 9], shape=[2, 3]), dtype=types.UINT8).gpu()
    p = pipe()
    p.build()
    cpu, gpu, dense = p.run()
    for i in range(2):
        t = gpu[i]
        assert isinstance(t, stoker.TensorGPU) and t.device == "gpu"
        assert t.shape() == list(cpu[i].shape) and t.dtype == types.UINT8 and t.layout() == "HWC"
        host = t.as_cpu()
        assert isinstance(host, stoker.TensorCPU) and np.array_equal(host, cpu[i])
        cai = t.__cuda_array_interface__
        assert cai["shape"] == tuple(cpu[i].shape) and cai["typestr"] == "|u1"
        assert cai["data"] == (t.data_ptr(), False) and cai["version"] == 3
        assert t.__dlpack_device__()[0] == 2  # kDLCUDA
        assert type(t.__dlpack__()).__name__ == "PyCapsule"
        with pytest.raises(UnsupportedError, match="as_cpu"):
            t.as_array()
    assert gpu.at(1).shape() == list(cpu[1].shape)
    d = dense.as_tensor()
    assert isinstance(d, stoker.TensorGPU) and d.shape() == [2, 2, 3]
    assert np.array_equal(d.as_cpu(), dense.as_cpu().as_array())
    rs = dense.as_reshaped_tensor([3, 4])
    assert rs.shape() == [3, 4] and rs.data_ptr() == d.data_ptr()
    assert np.array_equal(rs.as_cpu(), dense.as_cpu().as_array().reshape(3, 4))
    out = np.zeros(12, np.uint8)  # GPU lists copy into device or (unified addressing) host memory
    dense.copy_to_external(out)
    assert np.array_equal(out, dense.as_cpu().as_array().ravel())
    one = np.zeros(cpu[1].shape, np.uint8)
    gpu[1].copy_to_external(one, non_blocking=False)
    assert np.array_equal(one, cpu[1])
    with pytest.raises(stoker.InvalidArgumentError, match="holds 11 bytes, the data 12"):
        dense.copy_to_external(np.zeros(11, np.uint8))


def _dlpack_shape(capsule):
    """(ndim, shape, strides) of a legacy "dltensor" capsule, read with ctypes (DLPack's
    published C layout: data, device (2 ints), ndim, dtype (3 bytes + lanes), shape,
    strides, byte_offset)."""
    ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
    ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = ctypes.pythonapi.PyCapsule_GetPointer(capsule, b"dltensor")

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int), ("device_id", ctypes.c_int),
                    ("ndim", ctypes.c_int), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]
    t = DLTensor.from_address(ptr)
    return t.ndim, [t.shape[k] for k in range(t.ndim)], [t.strides[k] for k in range(t.ndim)]


def test_reshaped_gpu_tensor_exports_dlpack(fake_gpu):
    @stoker.pipeline_def(batch_size=2, num_threads=1, seed=4, device_id=0)
    def pipe():
        return fn.cast(fn.random.uniform(range=[0, 9], shape=[2, 3]), dtype=types.UINT8).gpu()
    (dense,) = pipe().run()
    rs = dense.as_reshaped_tensor([3, 4])
    cap = rs.__dlpack__()
    assert type(cap).__name__ == "PyCapsule"
    assert _dlpack_shape(cap) == (2, [3, 4], [4, 1])  # C-contiguous under the new shape
    assert _dlpack_shape(dense.as_tensor().__dlpack__()) == (3, [2, 2, 3], [6, 3, 1])
