"""python_function / dl_tensor_python_function on device "gpu", end to end through the CPU
stand-in backend (tests/fake_gpu: "device" memory is host memory). The function runs on
the GPU stage's thread once per batch (per sample inside it unless batch_processing);
its inputs are device tensors (capsules claiming kDLCUDA, read here through ctypes since
they point at host memory), its outputs are copied into pipeline-owned device memory.
The same tests with torch and CuPy on a real GPU: test_python_function_gpu.py."""
import ctypes
import gc

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.errors import StokerError

K_DLCPU, K_DLCUDA = 1, 2
INTS = [np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(8, dtype=np.int32).reshape(4, 2) + 50,
        np.array([[7]], np.int32)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8),
                ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def read_capsule(capsule):
    """(DLPack device type, a NumPy copy) of a legacy capsule whose memory is host memory
    (the fake GPU's "device" memory): read through ctypes, not torch.cuda."""
    t = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    shape = tuple(t.shape[k] for k in range(t.ndim))
    dtype = np.dtype({0: "i", 1: "u", 2: "f"}[t.code] + str(t.bits // 8))
    assert not t.strides or all(t.strides[k] == int(np.prod(shape[k + 1:])) for k in range(t.ndim))
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = ctypes.string_at(t.data + t.byte_offset, nbytes) if nbytes else b""
    return t.device_type, np.frombuffer(raw, dtype).reshape(shape).copy()


def read_tensor_gpu(x):
    """A stoker TensorGPU (python_function's GPU input without CuPy) as NumPy."""
    device, arr = read_capsule(x.__dlpack__(stream=-1))
    assert device == K_DLCUDA
    return arr


def build(graph, batch_size=len(INTS), **kw):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=2, seed=5, device_id=0, **kw)
    def pipe():
        return graph()
    p = pipe()
    p.build()
    return p


def host(tl):
    assert tl.device == "gpu"
    tl = tl.as_cpu()
    return [np.asarray(tl.at(i)) for i in range(len(tl))]


def gpu_batches(batch_list):
    it = iter(batch_list)
    return fn.external_source(source=lambda: next(it), device="gpu")


def test_dl_tensor_identity_returns_the_device_capsules(fake_gpu):
    seen = []

    def f(c):
        seen.append(read_capsule(c))
        return c  # the capsule itself: copied device to device

    p = build(lambda: fn.dl_tensor_python_function(gpu_batches([INTS]), function=f, device="gpu"))
    out, = p.run()
    assert [d for d, _ in seen] == [K_DLCUDA] * 3
    for (_, arr), src in zip(seen, INTS):  # per sample, in batch order
        np.testing.assert_array_equal(arr, src)
    for g, src in zip(host(out), INTS):
        assert g.dtype == src.dtype
        np.testing.assert_array_equal(g, src)


def test_dl_tensor_batch_processing_on_the_gpu(fake_gpu):
    calls = []

    def f(caps):
        calls.append(len(caps))
        return [read_capsule(c)[1].astype(np.float32) / 2 for c in caps]  # host arrays: uploaded

    p = build(lambda: fn.dl_tensor_python_function(gpu_batches([INTS]), function=f, device="gpu",
                                                   batch_processing=True, output_layouts="HW"))
    out, = p.run()
    assert calls == [3]
    assert out.layout() == "HW"
    for g, src in zip(host(out), INTS):
        np.testing.assert_array_equal(g, src.astype(np.float32) / 2)


def test_python_function_gpu_two_outputs_and_a_gpu_operator_after(fake_gpu):
    images = [np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3),
              np.arange(4 * 2 * 3, dtype=np.uint8).reshape(4, 2, 3) + 100]

    def f(x):
        assert type(x).__name__ == "TensorGPU"  # (CuPy is not installed here)
        a = read_tensor_gpu(x)
        return x, np.array(a.shape, np.int64)

    def graph():
        same, shape = fn.python_function(gpu_batches([images]), function=f, device="gpu",
                                         num_outputs=2, output_layouts=["HWC", None])
        return fn.transpose(same, perm=[1, 0, 2], device="gpu"), shape

    p = build(graph, batch_size=2)
    moved, shape = p.run()
    for g, src in zip(host(moved), images):
        np.testing.assert_array_equal(g, src.transpose(1, 0, 2))
    assert [tuple(s) for s in host(shape)] == [im.shape for im in images]


def test_batches_stay_in_order(fake_gpu):
    data = [[np.array([10 * b + i], np.int32) for i in range(3)] for b in range(4)]
    order = []

    def f(xs):
        order.append([int(read_tensor_gpu(x)[0]) for x in xs])
        return [read_tensor_gpu(x) + 1000 for x in xs]

    p = build(lambda: fn.python_function(gpu_batches(data), function=f, device="gpu",
                                         batch_processing=True), batch_size=3)
    for b in range(4):
        out, = p.run()
        assert [int(s[0]) for s in host(out)] == [10 * b + i + 1000 for i in range(3)]
    assert order[:4] == [[10 * b + i for i in range(3)] for b in range(4)]


def test_stream_without_synchronisation(fake_gpu):
    streams = []

    def f(c):
        streams.append(stoker.current_dali_stream())
        assert stoker.ops.PythonFunction.current_stream().ptr == streams[-1]  # DALI's spelling
        return c

    p = build(lambda: fn.dl_tensor_python_function(gpu_batches([INTS, INTS]), function=f,
                                                   device="gpu", synchronize_stream=False))
    for _ in range(2):
        out, = p.run()
        for g, src in zip(host(out), INTS):
            np.testing.assert_array_equal(g, src)
    assert len(streams) == 6 and len(set(streams)) == 1
    assert isinstance(streams[0], int) and streams[0] != 0
    with pytest.raises(RuntimeError, match="current_dali_stream"):
        stoker.current_dali_stream()  # outside a GPU call


def test_error_names_operator_and_sample_and_chains(fake_gpu):
    class Boom(Exception):
        pass

    def f(x):
        if read_tensor_gpu(x).size == 8:
            raise Boom("eight elements")
        return x

    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=f, device="gpu",
                                         name="gpu_boom"))
    with pytest.raises(StokerError, match="gpu_boom.*sample 1.*eight elements") as info:
        p.run()
    assert isinstance(info.value.__cause__, Boom)
    del p, info
    gc.collect()
    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=lambda x: x, device="gpu"))
    out, = p.run()
    np.testing.assert_array_equal(host(out)[1], INTS[1])


def test_bad_outputs_are_refused(fake_gpu):
    def short(xs):
        return xs[:1]

    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=short, device="gpu",
                                         batch_processing=True, name="short"))
    with pytest.raises(StokerError, match="short.*output 0 must be a list of 3 samples"):
        p.run()

    class Strided:  # a DLPack producer handing out a non-contiguous view
        def __init__(self):
            self.a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return (K_DLCPU, 0)

    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=lambda x: Strided(),
                                         device="gpu", name="strided"))
    with pytest.raises(StokerError, match="strided.*not contiguous"):
        p.run()

    def mixed(xs):
        return [np.zeros(2, np.int32), np.zeros(2, np.float32), np.zeros(2, np.int32)]

    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=mixed, device="gpu",
                                         batch_processing=True, name="mixed"))
    with pytest.raises(StokerError, match="mixed.*sample 1.*one dtype and rank"):
        p.run()


def test_gpu_function_in_a_branch(fake_gpu):
    values = [np.array([float(i)], np.float32) for i in range(8)]
    seen = []

    def f(xs):
        seen.append(len(xs))
        return [read_tensor_gpu(x) + np.float32(100) for x in xs]

    @stoker.pipeline_def(batch_size=8, num_threads=2, seed=11, enable_conditionals=True,
                         exec_async=False, prefetch_queue_depth=1, device_id=0)
    def pipe():
        x = fn.external_source(source=[values], cycle=True)
        c = fn.random.coin_flip(dtype="bool")
        g = x.gpu()
        if c:
            y = fn.python_function(g, function=f, device="gpu", batch_processing=True)
        else:
            y = g
        return y, c, x

    p = pipe()
    p.build()
    y, c, x = p.run()
    c = np.asarray(c.as_array()).astype(bool).ravel()
    x = np.asarray(x.as_array()).ravel()
    y = np.concatenate([s.ravel() for s in host(y)])
    assert 0 < c.sum() < 8
    np.testing.assert_array_equal(y, x + np.where(c, 100, 0))
    assert seen == [int(c.sum())]


def test_cpu_input_of_a_gpu_function_is_uploaded(fake_gpu):
    def f(x):
        device, arr = read_capsule(x)
        assert device == K_DLCUDA  # uploaded before the call
        return arr * 5

    p = build(lambda: fn.dl_tensor_python_function(fn.external_source(source=lambda: list(INTS)),
                                                   function=f, device="gpu"))
    out, = p.run()
    for g, src in zip(host(out), INTS):
        np.testing.assert_array_equal(g, src * 5)


def test_strided_host_arrays_are_made_contiguous(fake_gpu):
    def f(x):
        return np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]  # a NumPy view: copied dense

    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=f, device="gpu"))
    out, = p.run()
    for g in host(out):
        np.testing.assert_array_equal(g, [[0, 2], [4, 6], [8, 10]])


def test_read_only_host_arrays_are_accepted(fake_gpu):
    # np.asarray(PIL image), np.frombuffer, broadcasts: read-only arrays, which NumPy will
    # not hand over through a legacy DLPack capsule; the CPU form takes them, so must this
    def f(x):
        a = np.frombuffer(np.array([3, 1, 4], np.int32).tobytes(), np.int32)
        assert not a.flags.writeable
        return a

    def g(c):
        return np.broadcast_to(np.float32(2.5), (2, 2))

    p = build(lambda: (fn.python_function(gpu_batches([INTS]), function=f, device="gpu"),
                       fn.dl_tensor_python_function(gpu_batches([INTS]), function=g,
                                                    device="gpu")))
    a, b = p.run()
    for s in host(a):
        np.testing.assert_array_equal(s, [3, 1, 4])
    for s in host(b):
        np.testing.assert_array_equal(s, np.full((2, 2), 2.5, np.float32))


def test_an_unreadable_returned_sample_is_named(fake_gpu):
    class Complex:  # a DLPack producer of a type stoker has no dtype for
        def __dlpack__(self, stream=None):
            return np.zeros(2, np.complex64).__dlpack__()

        def __dlpack_device__(self):
            return (K_DLCPU, 0)

    def f(xs):
        return [x if i != 2 else Complex() for i, x in enumerate(xs)]

    p = build(lambda: fn.python_function(gpu_batches([INTS]), function=f, device="gpu",
                                         batch_processing=True, name="unreadable"))
    with pytest.raises(StokerError, match=r"unreadable.*sample 2: .*unsupported DLPack"):
        p.run()
