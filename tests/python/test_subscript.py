"""DataNode indexing (issue 21 item 5): x[...] per sample as NumPy's a[...] (the subscript
operator) and x.shape() (shapes), on the CPU and, through the fake GPU backend, on the
GPU stage. Values and layouts are what DALI 2.4 gives (checked by hand against DALI), or
NumPy's where DALI has no answer (ellipsis, bare None)."""

import os

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import InvalidArgumentError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
FAKE = os.path.join(BUILD, "libstk_fake_gpu.so")

A = [np.arange(24, dtype=np.int16).reshape(2, 3, 4) + 100 * i for i in range(3)]
RAGGED = [np.arange(n * 5, dtype=np.float32).reshape(n, 5) for n in (1, 3, 4)]


def run(graph, data=A, layout="HWC", device_id=None, **kw):
    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=5, device_id=device_id, **kw)
    def pipe():
        x = fn.external_source(source=lambda: list(data), layout=layout)
        return graph(x)
    outs = pipe().run()
    return [[np.asarray(t.as_cpu().at(i)) for i in range(len(t))] for t in outs], outs


CASES = [
    (lambda x: x[1], lambda a: a[1], "WC"),
    (lambda x: x[-1], lambda a: a[-1], "WC"),
    (lambda x: x[:, 1], lambda a: a[:, 1], "HC"),
    (lambda x: x[0, ::2], lambda a: a[0, ::2], "WC"),
    (lambda x: x[0, ::-1], lambda a: a[0, ::-1], "WC"),
    (lambda x: x[0, 1, ::-2], lambda a: a[0, 1, ::-2], "C"),
    (lambda x: x[0:100], lambda a: a[0:100], "HWC"),
    (lambda x: x[1:1], lambda a: a[1:1], "HWC"),
    (lambda x: x[0, 2:0], lambda a: a[0, 2:0], "WC"),
    (lambda x: x[0, 0, -10:10], lambda a: a[0, 0, -10:10], "C"),
    (lambda x: x[0, 1, 2], lambda a: a[0, 1, 2], ""),
    (lambda x: x[::-1, 1:, ::3], lambda a: a[::-1, 1:, ::3], "HWC"),
    (lambda x: x[:, -2::-1], lambda a: a[:, -2::-1], "HWC"),
    (lambda x: x[..., 0], lambda a: a[..., 0], "HW"),
    (lambda x: x[1, ..., ::-1], lambda a: a[1, ..., ::-1], "WC"),
    (lambda x: x[..., None], lambda a: a[..., None], ""),
    (lambda x: x[0, None, 1], lambda a: a[0, None, 1], ""),
    (lambda x: x[stoker.newaxis("F"), :, 2], lambda a: a[None, :, 2], "FHC"),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_subscripts_match_numpy(k):
    graph, ref, layout = CASES[k]
    (got,), (tl,) = run(lambda x: graph(x))
    assert tl.layout() == layout
    for g, a in zip(got, A):
        want = ref(a)
        assert g.shape == want.shape and g.dtype == want.dtype and np.array_equal(g, want)


def test_per_sample_indices_and_bounds():
    def graph(x):
        i = fn.external_source(source=lambda: [np.int32(v) for v in (0, -1, 1)])
        lo = fn.external_source(source=lambda: [np.int64(v) for v in (1, 0, 2)])
        return x[i], x[:, lo:], x[1, :, lo::-1]
    (at, sl, back), _ = run(graph)
    for s, (a, i, lo) in enumerate(zip(A, (0, -1, 1), (1, 0, 2))):
        assert np.array_equal(at[s], a[i]) and np.array_equal(sl[s], a[:, lo:])
        assert np.array_equal(back[s], a[1, :, lo::-1])


def test_ragged_batches_slice_per_sample():
    (first, last, tail), _ = run(lambda x: (x[0], x[-1, 1:4], x[1:]), data=RAGGED, layout="AB")
    for a, f, l, t in zip(RAGGED, first, last, tail):
        assert np.array_equal(f, a[0]) and np.array_equal(l, a[-1, 1:4]) and np.array_equal(t, a[1:])


def test_shape_and_constant_lookup():
    def graph(x):
        idx = fn.external_source(source=lambda: [np.int32(v) for v in (2, 0, 1)])
        table = types.Constant(np.array([10.0, 20.0, 30.0], np.float32))
        return x.shape(), x.shape()[1], x[0].shape(dtype=types.INT32), table[idx]
    (shape, second, inner, picked), outs = run(graph, data=RAGGED, layout="AB")
    assert [s.tolist() for s in shape] == [[1, 5], [3, 5], [4, 5]] and outs[0].dtype == types.INT64
    assert [int(s) for s in second] == [5, 5, 5] and outs[1].ndim == 0
    assert [s.tolist() for s in inner] == [[5]] * 3 and outs[2].dtype == types.INT32
    assert [float(p) for p in picked] == [30.0, 10.0, 20.0]


@pytest.mark.parametrize("index, message", [
    (3, r"at_0 \(position 0 of the subscript\): index 3 is out of range for axis 0 of extent 2"),
    ((0, -4), r"at_1 \(position 1 of the subscript\): index -4 is out of range for axis 1 of extent 3"),
    ((0, 0, 0, 0), r"the expression indexes 4 axes of a 3-dimensional input"),
    ((0, slice(None, None, 0)), r"step_1 \(position 1 of the subscript\): the slice step of axis 1 is 0"),
])
def test_errors_name_the_index(index, message):
    with pytest.raises(InvalidArgumentError, match=message):
        run(lambda x: x[index])


def test_definition_errors():
    @stoker.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        x = fn.external_source(source=lambda: [A[0]])
        with pytest.raises(TypeError, match="the index at position 0 must be an integer or a DataNode, got float"):
            x[1.5]
        with pytest.raises(TypeError, match="slice hi at position 1"):
            x[0, :"a"]
        with pytest.raises(InvalidArgumentError, match="single ellipsis"):
            x[..., 0, ...]
        with pytest.raises(InvalidArgumentError, match="at most 8"):
            x[(None,) * 9]
        with pytest.raises(TypeError, match="not iterable"):
            a, b = x
        return x
    pipe().run()


def test_gpu_subscripts_match_the_cpu(fake_gpu):
    def graph(x):
        g = x.gpu()
        i = fn.external_source(source=lambda: [np.int32(v) for v in (1, 0, 1)])
        return (g[1], g[:, ::-2, 1:], g[..., None], g[i, 2], g.shape(), g[0, 1, 3])
    got, outs = run(graph, device_id=0)
    assert all(t.device == "gpu" for t in outs)
    refs = [lambda a, i: a[1], lambda a, i: a[:, ::-2, 1:], lambda a, i: a[..., None],
            lambda a, i: a[i, 2], lambda a, i: np.array(a.shape, np.int64), lambda a, i: a[0, 1, 3]]
    for k, ref in enumerate(refs):
        for s, (a, i) in enumerate(zip(A, (1, 0, 1))):
            want = ref(a, i)
            assert got[k][s].shape == want.shape and np.array_equal(got[k][s], want), (k, s)
    assert outs[1].layout() == "HWC" and outs[0].layout() == "WC"


def test_gpu_ragged_subscripts(fake_gpu):
    (got,), (tl,) = run(lambda x: x.gpu()[1:, ::2], data=RAGGED, layout="AB", device_id=0)
    assert tl.device == "gpu"
    for a, g in zip(RAGGED, got):
        assert np.array_equal(g, a[1:, ::2])
