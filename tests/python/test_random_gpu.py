"""Sources on device "gpu" whose GPU form is the host's work uploaded (schema flag
STK_OPF_GPU_ON_HOST): external_source, readers.numpy, and random.uniform / normal / coin_flip (DALI
has them there). For the random sources the values
are drawn on the host from the same Philox streams and uploaded, so a GPU source gives
exactly the CPU source's values for the same seed, on the device, and feeds GPU
operators. Run against the CPU stand-in for the GPU backend (tests/fake_gpu)."""
import numpy as np
import pytest

import stoker
from stoker import fn


def run(define, batch=4, **kw):
    pipe = stoker.pipeline_def(define, batch_size=batch, num_threads=2, device_id=0, seed=3,
                               **kw)()
    return pipe.run()


@pytest.mark.parametrize("make", [
    lambda dev: fn.random.uniform(range=[-2.0, 3.0], shape=[4, 3], seed=11, device=dev),
    lambda dev: fn.random.uniform(values=[1.0, 5.0, 9.0], shape=[6], seed=11, device=dev),
    lambda dev: fn.random.normal(mean=1.0, stddev=2.0, shape=[5], seed=12, device=dev,
                                 dtype="float64"),
    lambda dev: fn.random.coin_flip(probability=0.3, shape=[7], seed=13, device=dev),
])
def test_gpu_source_equals_cpu_source(fake_gpu, make):
    cpu, gpu = run(lambda: (make("cpu"), make("gpu")))
    assert cpu.device == "cpu" and gpu.device == "gpu"
    host = gpu.as_cpu()
    for i in range(len(cpu)):
        a, b = np.array(cpu[i]), np.array(host[i])
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_gpu_source_as_argument_of_a_gpu_operator(fake_gpu):
    """A GPU source feeding a GPU operator: the flips cast on the GPU equal the CPU's."""
    def define():
        c = fn.random.coin_flip(probability=0.5, shape=[3], seed=21, device="gpu")
        return fn.cast(c, dtype="float32", device="gpu"), fn.random.coin_flip(
            probability=0.5, shape=[3], seed=21)
    g, c = run(define)
    for i in range(len(c)):
        np.testing.assert_array_equal(np.array(g.as_cpu()[i]), np.array(c[i]).astype(np.float32))


def test_text_form_of_a_gpu_source(fake_gpu):
    """The text form builds it too, and the printed pipeline (the CPU draw and its upload)
    builds again to the same values."""
    text = ("batch_size = 2\nnum_threads = 1\ndevice_id = 0\nseed = 5\n"
            "u = random.uniform(range=[0.0, 1.0], shape=[3], seed=4, device=\"gpu\")\n"
            "return u\n")
    p = stoker.Pipeline.deserialize(text)
    out = p.run()[0]
    assert out.device == "gpu"
    first = [np.array(x) for x in out.as_cpu()]
    assert all(x.shape == (3,) and (x >= 0).all() and (x < 1).all() for x in first)
    printed = p.serialize()
    assert "__host" in printed  # the draw on the CPU, then its upload
    again = stoker.Pipeline.deserialize(printed)
    second = [np.array(x) for x in again.run()[0].as_cpu()]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_external_source_on_the_gpu(fake_gpu):
    """external_source(device="gpu"), as DALI programs write it: fed by a source callable
    and by feed_input under its name, the samples arrive on the device unchanged and feed
    GPU operators."""
    data = [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(3)]

    def define():
        x = fn.external_source(source=lambda: data, batch=True, device="gpu")
        return x, fn.cast(x, dtype="int32", device="gpu")

    a, b = run(define, batch=3)
    assert a.device == "gpu" and b.device == "gpu"
    for i in range(3):
        np.testing.assert_array_equal(np.array(a.as_cpu()[i]), data[i])
        np.testing.assert_array_equal(np.array(b.as_cpu()[i]), data[i].astype(np.int32))

    pipe = stoker.pipeline_def(lambda: fn.external_source(name="ES", device="gpu"),
                               batch_size=2, num_threads=1, device_id=0)()
    pipe.build()
    pipe.feed_input("ES", [d.astype(np.uint8) for d in data[:2]])
    out = pipe.run()[0]
    assert out.device == "gpu"
    for i in range(2):
        np.testing.assert_array_equal(np.array(out.as_cpu()[i]), data[i].astype(np.uint8))


def test_numpy_reader_on_the_gpu(fake_gpu, tmp_path):
    """readers.numpy(device="gpu") (DALI reads through GPUDirect Storage): the arrays on
    the device, equal to the files, shuffled epochs still permutations, and the instance
    name still names the reader for epoch_size."""
    arrays = [np.random.default_rng(i).standard_normal((2, i + 1)).astype(np.float32)
              for i in range(6)]
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"a{i}.npy", a)
    pipe = stoker.pipeline_def(
        lambda: fn.readers.numpy(file_root=str(tmp_path), random_shuffle=True, seed=7,
                                 name="R", device="gpu"),
        batch_size=3, num_threads=1, device_id=0)()
    pipe.build()
    assert pipe.epoch_size("R") == 6
    for _ in range(2):  # two epochs
        seen = []
        for _ in range(2):
            out = pipe.run()[0]
            assert out.device == "gpu"
            seen += [np.array(x) for x in out.as_cpu()]
        keys = sorted(next(i for i, a in enumerate(arrays) if a.shape == s.shape and
                           np.array_equal(a, s)) for s in seen)
        assert keys == list(range(6))


class FakeCupyArray:
    """What external_source sees of a CuPy array: device memory it cannot read directly
    (`__cuda_array_interface__`, no buffer protocol) and `get()` to copy it to the host."""

    def __init__(self, a):
        self._a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str,
                                         "data": (0, False), "version": 3}

    def get(self):
        return self._a.copy()

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed")


def test_external_source_takes_device_arrays_with_get(fake_gpu):
    """DALI programs feed CuPy arrays to external_source(device="gpu"): they are copied to
    the host with get() and uploaded."""
    data = [np.full((2, 2), i, np.int16) for i in range(2)]
    a = run(lambda: fn.external_source(source=lambda: [FakeCupyArray(d) for d in data],
                                       batch=True, device="gpu"), batch=2)[0]
    for i in range(2):
        np.testing.assert_array_equal(np.array(a.as_cpu()[i]), data[i])


def test_gpu_source_under_a_condition(fake_gpu):
    """A GPU source inside an `if` branch: the upload runs under the branch's condition,
    so each sample gets the value of the branch it took."""
    def define():
        c = fn.random.coin_flip(probability=0.5, seed=3)
        if c:
            v = fn.random.uniform(range=[0.0, 1.0], seed=5, device="gpu")
        else:
            v = fn.random.uniform(range=[2.0, 3.0], seed=5, device="gpu")
        return v, c

    pipe = stoker.pipeline_def(define, batch_size=16, num_threads=1, device_id=0,
                               enable_conditionals=True)()
    v, c = pipe.run()
    assert v.device == "gpu"
    flips = [int(np.array(x)) for x in c]
    assert 0 < sum(flips) < 16
    for i, f in enumerate(flips):
        x = float(np.array(v.as_cpu()[i]))
        assert (0.0 <= x < 1.0) if f else (2.0 <= x < 3.0), (i, f, x)
