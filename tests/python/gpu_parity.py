"""CPU-GPU parity harness for the per-operator GPU tests (tests/python/test_gpu_*.py).

The GPU tests run only where stoker can open a CUDA device (the GPU machine, through
scripts/gpu-check.sh ops); elsewhere they skip. Each test builds ONE pipeline that applies
an operator to the same decoded batch twice, once on the CPU and once on the GPU
(`fn.op(images, ...)` and `fn.op(images.gpu(), ...)`), with the same argument nodes, so
per-sample random arguments are identical by construction; then it compares the two
outputs sample by sample with a stated tolerance.

    from gpu_parity import requires_gpu, compare_op
    pytestmark = requires_gpu

    def test_brightness():
        compare_op(lambda img, dev, brightness: fn.brightness(img, brightness=brightness, device=dev),
                   args=lambda: {"brightness": fn.random.uniform(range=[0.5, 1.5])}, atol=1)

Argument nodes must be made once and shared by both calls (`args`): two calls of
fn.random.uniform are two independent random streams.
"""
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTO_DIR = os.path.join(ROOT, "data", "photos")
PHOTOS = sorted(os.path.join(PHOTO_DIR, f) for f in os.listdir(PHOTO_DIR) if f.endswith((".jpg", ".png")))

_GPU = None


def gpu_available():
    """True when a GPU pipeline can run here (a CUDA device and libstoker_cuda.so)."""
    global _GPU
    if _GPU is None:
        try:
            import stoker
            from stoker import fn

            @stoker.pipeline_def(batch_size=1, num_threads=1, device_id=0, seed=1)
            def probe():
                return fn.constant(idata=[1, 2, 3]).gpu()

            p = probe()
            p.build()
            p.run()
            _GPU = True
        except Exception:  # no device, no driver or no CUDA backend: the tests skip
            _GPU = False
    return _GPU


requires_gpu = pytest.mark.skipif("not __import__('gpu_parity').gpu_available()",
                                  reason="needs a CUDA device (runs on the GPU machine)")


def to_numpy_samples(tl):
    """The samples of a CPU or GPU TensorList as a list of NumPy arrays."""
    if hasattr(tl, "as_cpu"):
        tl = tl.as_cpu()
    return [np.asarray(tl[i]) for i in range(len(tl))]


def run_both(build, args=None, files=None, batch_size=None, seed=42, iterations=1, resize=None, layout_hwc=True,
             gray=False, num_threads=2):
    """Runs `build(images, device)` on the CPU and on the GPU in one pipeline.

    build: (DataNode, "cpu" | "gpu", **args) -> DataNode (or a tuple of them).
    args: () -> dict of argument nodes/values, called once inside the pipeline definition;
    both calls of `build` receive the same dict.
    resize: optional (h, w) to resize every photo to first (a dense batch), else the
    decoded photos as they are (different sizes: a ragged batch).
    Returns a list (one per iteration) of (cpu_outputs, gpu_outputs), each a list of
    outputs, each a list of per-sample NumPy arrays.
    """
    import stoker
    from stoker import fn, types

    files = files or PHOTOS
    batch_size = batch_size or len(files)

    @stoker.pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=0, seed=seed)
    def pipe():
        data, _ = fn.readers.file(files=files, name="Reader")
        images = fn.decoders.image(data, output_type=types.GRAY if gray else types.RGB)
        if resize is not None:
            images = fn.resize(images, resize_y=resize[0], resize_x=resize[1])
        kw = args() if args else {}
        cpu = build(images, "cpu", **kw)
        gpu = build(images.gpu(), "gpu", **kw)
        cpu = list(cpu) if isinstance(cpu, (tuple, list)) else [cpu]
        gpu = list(gpu) if isinstance(gpu, (tuple, list)) else [gpu]
        assert len(cpu) == len(gpu)
        return tuple(cpu + gpu)

    p = pipe()
    p.build()
    results = []
    for _ in range(iterations):
        outs = p.run()
        k = len(outs) // 2
        results.append(([to_numpy_samples(o) for o in outs[:k]], [to_numpy_samples(o) for o in outs[k:]]))
    return results


def assert_close(cpu, gpu, atol=0, max_mismatch_fraction=0.0, what=""):
    """Sample-by-sample comparison: same shape and dtype; |cpu - gpu| <= atol everywhere
    except at most `max_mismatch_fraction` of the elements (for kernels whose rounding
    differs on ties; say why in the test)."""
    assert len(cpu) == len(gpu), f"{what}: {len(cpu)} CPU samples vs {len(gpu)} GPU samples"
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape, f"{what} sample {i}: shape CPU {c.shape} vs GPU {g.shape}"
        assert c.dtype == g.dtype, f"{what} sample {i}: dtype CPU {c.dtype} vs GPU {g.dtype}"
        if c.size == 0:
            continue
        c64, g64 = c.astype(np.float64), g.astype(np.float64)
        with np.errstate(invalid="ignore"):  # inf - inf: equal infinities count as equal below
            diff = np.where(c64 == g64, 0.0, np.abs(c64 - g64))
        both_nan = np.isnan(c64) & np.isnan(g64)
        diff = np.where(both_nan, 0.0, diff)
        bad = (diff > atol) | np.isnan(diff)  # NaN on one side only, or opposite infinities
        frac = bad.mean()
        if frac > max_mismatch_fraction:
            where = np.argwhere(bad)[:5].tolist()
            raise AssertionError(f"{what} sample {i}: {bad.sum()} of {c.size} elements differ by more than "
                                 f"{atol} (max {diff.max():.4g}); first at {where}: "
                                 f"CPU {[c[tuple(w)] for w in where]} GPU {[g[tuple(w)] for w in where]}")


def compare_op(build, args=None, atol=0, max_mismatch_fraction=0.0, iterations=2, what=None, **kwargs):
    """run_both + assert_close on every output and iteration."""
    what = what or getattr(build, "__name__", "op")
    for it, (cpu, gpu) in enumerate(run_both(build, args, iterations=iterations, **kwargs)):
        for o, (c, g) in enumerate(zip(cpu, gpu)):
            assert_close(c, g, atol=atol, max_mismatch_fraction=max_mismatch_fraction,
                         what=f"{what} (iteration {it}, output {o})")
