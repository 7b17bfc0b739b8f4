"""python_function / dl_tensor_python_function / TorchPythonFunction on a real GPU with
torch CUDA tensors and CuPy arrays (runs where torch sees a CUDA device and
libstoker_cuda.so loads; skipped elsewhere; the CuPy tests also need CuPy). The same paths
without a GPU: test_python_function_gpu_fake.py."""
import gc

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import stoker  # noqa: E402
from stoker import fn  # noqa: E402
from stoker.errors import StokerError  # noqa: E402

from gpu_parity import gpu_available  # noqa: E402

if not gpu_available():
    pytest.skip("stoker's CUDA backend is not available", allow_module_level=True)

RNG = np.random.default_rng(3)
IMAGES = [RNG.integers(0, 256, size=s, dtype=np.uint8)
          for s in ((64, 48, 3), (17, 90, 3), (33, 33, 3))]
BIG = [RNG.standard_normal((1024, 1024), dtype=np.float32) for _ in range(4)]


def build(graph, batch_size, **kw):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=2, seed=5, device_id=0, **kw)
    def pipe():
        return graph()
    p = pipe()
    p.build()
    return p


def gpu_source(data):
    return fn.external_source(source=lambda: list(data), device="gpu")


def host(tl):
    assert tl.device == "gpu"
    tl = tl.as_cpu()
    return [np.asarray(tl.at(i)) for i in range(len(tl))]


def test_torch_identity_through_dlpack():
    def f(c):
        t = torch.from_dlpack(c)
        assert t.is_cuda
        return t

    p = build(lambda: fn.dl_tensor_python_function(gpu_source(IMAGES), function=f, device="gpu"), 3)
    for _ in range(3):
        out, = p.run()
        for g, src in zip(host(out), IMAGES):
            np.testing.assert_array_equal(g, src)


def test_torch_op_on_the_batch():
    def f(caps):
        return [torch.from_dlpack(c).float().permute(2, 0, 1).contiguous() * 0.5 + 1 for c in caps]

    p = build(lambda: fn.dl_tensor_python_function(gpu_source(IMAGES), function=f, device="gpu",
                                                   batch_processing=True, output_layouts="CHW"), 3)
    out, = p.run()
    assert out.layout() == "CHW"
    for g, src in zip(host(out), IMAGES):
        want = src.astype(np.float32).transpose(2, 0, 1) * 0.5 + 1
        np.testing.assert_allclose(g, want, rtol=1e-6)


def test_work_on_the_pipeline_stream_without_synchronisation():
    """Heavy kernels queued on current_dali_stream() with synchronize_stream=False: the
    outputs' copies are ordered after them (a race would show stale or partial values)."""
    def f(c):
        stream = torch.cuda.ExternalStream(stoker.current_dali_stream())
        with torch.cuda.stream(stream):
            t = torch.from_dlpack(c)
            for _ in range(20):
                t = t @ torch.eye(t.shape[0], device=t.device) + 0  # slow, value-preserving
            return t * 2

    p = build(lambda: fn.dl_tensor_python_function(gpu_source(BIG), function=f, device="gpu",
                                                   synchronize_stream=False), 4)
    for _ in range(3):
        out, = p.run()
        for g, src in zip(host(out), BIG):
            np.testing.assert_allclose(g, src * 2, rtol=1e-4, atol=1e-4)


def test_torch_error_is_chained():
    def f(c):
        return torch.from_dlpack(c).float() @ torch.ones((5, 5), device="cuda")  # bad shapes

    p = build(lambda: fn.dl_tensor_python_function(gpu_source(IMAGES), function=f, device="gpu",
                                                   name="matmul"), 3)
    with pytest.raises(StokerError, match="matmul.*sample 0") as info:
        p.run()
    assert isinstance(info.value.__cause__, RuntimeError)
    del p, info
    gc.collect()
    torch.cuda.synchronize()  # the device is still usable


def test_torch_python_function_plugin():
    from stoker.plugin.torch import TorchPythonFunction

    flip = TorchPythonFunction(function=lambda t: t.flip(1), device="gpu")
    norms = TorchPythonFunction(function=lambda ts: [t.float().mean().reshape(1) for t in ts],
                                device="gpu", batch_processing=True)

    def graph():
        x = gpu_source(IMAGES)
        return flip(x), norms(x)

    p = build(graph, 3)
    flipped, means = p.run()
    for g, src in zip(host(flipped), IMAGES):
        np.testing.assert_array_equal(g, src[:, ::-1])
    for g, src in zip(host(means), IMAGES):
        np.testing.assert_allclose(g[0], src.astype(np.float64).mean(), rtol=1e-5)


def test_torch_non_contiguous_result_of_queued_work():
    """TorchPythonFunction's contiguous copy of a non-contiguous result must follow the
    function's kernels on the pipeline's stream: with them held back by a sleep queued
    there, a copy on torch's default stream (not ordered with stoker's non-blocking
    stream) reads the result before it is computed. Each call adds a new constant, so
    memory left by an earlier call cannot pass for the result."""
    from stoker.plugin.torch import TorchPythonFunction

    calls = []

    def f(t):
        calls.append(len(calls) + 1)
        torch.cuda._sleep(200_000_000)  # on the current stream: the pipeline's
        return (t + calls[-1]).t()

    tf = TorchPythonFunction(function=f, device="gpu")
    p = build(lambda: tf(gpu_source(BIG)), 4)
    for b in range(2):
        out, = p.run()
        for i, (g, src) in enumerate(zip(host(out), BIG)):
            np.testing.assert_array_equal(g, (src + np.float32(4 * b + i + 1)).T)


def test_torch_python_function_plugin_on_the_cpu():
    from stoker.plugin.torch import torch_python_function

    @stoker.pipeline_def(batch_size=3, num_threads=2, seed=5, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: list(IMAGES))
        return torch_python_function(x, function=lambda t: t.sum(dim=2, dtype=torch.int32))

    p = pipe()
    p.build()
    out, = p.run()
    for i, src in enumerate(IMAGES):
        np.testing.assert_array_equal(np.asarray(out.at(i)), src.sum(axis=2, dtype=np.int32))


def test_cupy_python_function_per_sample_and_batch():
    cupy = pytest.importorskip("cupy")
    kinds = []

    def f(x):
        kinds.append(type(x))
        return x.astype(cupy.int16) - 100

    def g(xs):
        return [x[::2].copy() for x in xs]

    def graph():
        x = gpu_source(IMAGES)
        return (fn.python_function(x, function=f, device="gpu"),
                fn.python_function(x, function=g, device="gpu", batch_processing=True))

    p = build(graph, 3)
    less, halves = p.run()
    assert kinds and all(k is cupy.ndarray for k in kinds)
    for a, b, src in zip(host(less), host(halves), IMAGES):
        np.testing.assert_array_equal(a, src.astype(np.int16) - 100)
        np.testing.assert_array_equal(b, src[::2])


def test_cupy_output_from_dl_tensor_function():
    cupy = pytest.importorskip("cupy")

    def f(c):
        return cupy.from_dlpack(c).sum(axis=(0, 1), dtype=cupy.float64)

    p = build(lambda: fn.dl_tensor_python_function(gpu_source(IMAGES), function=f, device="gpu"), 3)
    out, = p.run()
    for g, src in zip(host(out), IMAGES):
        np.testing.assert_allclose(g, src.sum(axis=(0, 1), dtype=np.float64))
