"""TensorList: indexing, dense and ragged batches, the buffer protocol, DLPack
(versioned and legacy capsules) and zero-copy lifetime against the pool statistics."""

import ctypes
import gc

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import StateError


def capsule_name_is(capsule, name):
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype = ctypes.c_int
    is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return bool(is_valid(capsule, name.encode()))


def uniform_pipe(batch_size=4, shape=(3, 5), dtype=types.FLOAT, **kw):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=1, seed=1, **kw)
    def pipe():
        return fn.random.uniform(range=[0, 100], shape=list(shape), dtype=dtype)
    return pipe()


def ragged_pipe():
    shapes = [(2, 3), (4, 1), (1, 1)]

    @stoker.pipeline_def(batch_size=3, num_threads=1)
    def pipe():
        return fn.external_source(
            source=lambda: [np.full(s, i, np.int32) for i, s in enumerate(shapes)], layout="AB")
    return pipe()


def test_dense_batch_indexing_and_views():
    (tl,) = uniform_pipe().run()
    assert len(tl) == 4 and tl.is_dense() and tl.is_dense_tensor()
    assert tl.dtype == types.FLOAT and tl.dtype_name == "float32" and tl.layout() == ""
    assert tl.shape() == [(3, 5)] * 4 and tl.ndim == 2 and tl.device == "cpu"
    arr = tl.as_array()
    assert arr.shape == (4, 3, 5) and arr.dtype == np.float32
    assert np.shares_memory(arr, tl[1]) and np.array_equal(arr[1], tl[1])
    assert np.array_equal(tl[-1], arr[3]) and np.array_equal(tl.at(2), arr[2])
    assert [s.shape for s in tl[1:3]] == [(3, 5)] * 2
    assert np.array_equal(np.stack(list(tl)), arr)
    assert np.array_equal(tl.as_tensor(), arr) and tl.as_cpu() is tl
    with pytest.raises(IndexError, match="out of range"):
        tl[4]
    assert "4 x (3, 5)" in repr(tl)


def test_buffer_protocol():
    (tl,) = uniform_pipe().run()
    m = memoryview(tl)
    assert m.format == "f" and m.shape == (4, 3, 5) and m.strides == (60, 20, 4)
    assert not m.readonly and m.nbytes == 240
    assert np.frombuffer(m, np.float32).reshape(4, 3, 5).tolist() == tl.as_array().tolist()


@pytest.mark.parametrize("dtype, np_dtype", [(types.FLOAT16, np.float16), (types.UINT8, np.uint8),
                                             (types.INT64, np.int64), (types.FLOAT64, np.float64),
                                             (types.BOOL, np.bool_)])
def test_dtypes_through_every_protocol(dtype, np_dtype):
    (tl,) = uniform_pipe(dtype=dtype).run()
    a, b, c = tl.as_array(), np.from_dlpack(tl), tl[0]
    assert a.dtype == b.dtype == c.dtype == np_dtype
    assert np.array_equal(a, b) and np.array_equal(a[0], c)


def test_ragged_batch():
    (tl,) = ragged_pipe().run()
    assert not tl.is_dense() and tl.shape() == [(2, 3), (4, 1), (1, 1)]
    assert tl.layout() == "AB" and tl.data_ptr() is None
    assert [int(s[0, 0]) for s in tl] == [0, 1, 2]
    with pytest.raises(StateError, match="ragged"):
        tl.as_array()
    with pytest.raises(BufferError, match="ragged"):
        memoryview(tl)
    with pytest.raises(BufferError, match="ragged"):
        np.from_dlpack(tl)
    # One sample exports through DLPack on its own.
    s = np.from_dlpack(_SampleExport(tl, 1))
    assert s.shape == (4, 1) and np.all(s == 1)


class _SampleExport:
    def __init__(self, tl, i):
        self.tl, self.i = tl, i

    def __dlpack__(self, **kw):
        return self.tl._sample_dlpack(self.i, **kw)

    def __dlpack_device__(self):
        return self.tl.__dlpack_device__()


def test_dlpack_capsules_versioned_and_legacy():
    (tl,) = uniform_pipe().run()
    assert tl.__dlpack_device__() == (1, 0)
    assert capsule_name_is(tl.__dlpack__(), "dltensor")
    assert capsule_name_is(tl.__dlpack__(max_version=(0, 8)), "dltensor")
    assert capsule_name_is(tl.__dlpack__(max_version=(1, 0)), "dltensor_versioned")
    assert capsule_name_is(tl.__dlpack__(max_version=(1, 2)), "dltensor_versioned")
    with pytest.raises(BufferError, match="stream must be None"):
        tl.__dlpack__(stream=1)
    tl.__dlpack__(stream=-1)
    with pytest.raises(BufferError, match="cross-device"):
        tl.__dlpack__(dl_device=(2, 0))
    assert capsule_name_is(tl.__dlpack__(dl_device=(1, 0)), "dltensor")
    assert not hasattr(tl, "__cuda_array_interface__")


def test_dlpack_copy():
    (tl,) = uniform_pipe().run()
    shared, copied = np.from_dlpack(tl), np.from_dlpack(tl, copy=True)
    assert np.array_equal(shared, copied)
    assert copied.ctypes.data != tl.data_ptr() == shared.ctypes.data


def test_two_dlpack_views_share_one_pointer():
    (tl,) = uniform_pipe().run()
    a, b = np.from_dlpack(tl), np.from_dlpack(tl)
    assert a.ctypes.data == b.ctypes.data == tl.data_ptr() == tl.as_array().ctypes.data
    a[0, 0, 0] = -1.0
    assert b[0, 0, 0] == -1.0 and tl[0][0, 0] == -1.0


def test_views_keep_memory_alive_then_return_it_to_the_pool():
    pipe = uniform_pipe(batch_size=8, shape=(1000,), exec_async=False, prefetch_queue_depth=1)
    batch_bytes = 8 * 1000 * 4
    (tl,) = pipe.run()
    expected = tl.as_array().copy()
    views = [np.from_dlpack(tl), np.from_dlpack(tl), tl[3], np.asarray(tl)]
    ptr = tl.data_ptr()
    del tl
    gc.collect()
    held = pipe.stats()["host_bytes_in_use"]
    assert held >= batch_bytes
    for _ in range(3):  # later batches must not reuse the memory the views hold
        (other,) = pipe.run()
        assert other.data_ptr() != ptr
        del other
    assert np.array_equal(views[0], expected) and np.array_equal(views[2], expected[3])
    before = pipe.stats()
    del views
    gc.collect()
    after = pipe.stats()
    assert after["host_bytes_in_use"] <= before["host_bytes_in_use"] - batch_bytes
    assert after["host_bytes_cached"] >= before["host_bytes_cached"] + batch_bytes


def test_outputs_outlive_their_pipeline():
    pipe = uniform_pipe()
    (tl,) = pipe.run()
    view = np.from_dlpack(tl)
    expected = view.copy()
    pipe.close()
    del pipe, tl
    gc.collect()
    assert np.array_equal(view, expected)


def test_tensor_lists_cannot_be_made_directly():
    with pytest.raises(TypeError, match="come from Pipeline.run"):
        stoker.TensorList()


def test_pool_memory_stays_bounded_over_many_batches():
    depth, batch_bytes = 2, 16 * 256 * 4
    pipe = uniform_pipe(batch_size=16, shape=(256,), prefetch_queue_depth=depth)
    for _ in range(300):
        (tl,) = pipe.run()
        np.from_dlpack(tl).sum()
    # At most: the batch held here, the one being returned, the queue, the one in the
    # making; never more, however many batches ran.
    assert pipe.stats()["host_bytes_peak"] <= (depth + 3) * batch_bytes
