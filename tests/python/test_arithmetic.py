"""Arithmetic on data nodes and stoker.math, run through pipelines and checked against
NumPy, with result types checked against DALI's promotion table (types.promote)."""

import numpy as np
import pytest

import stoker
from stoker import fn, math, types, _schema

pytestmark = pytest.mark.skipif(
    not {"math.binary", "math.unary", "math.clamp"} <= set(_schema.registry()),
    reason="elementwise operators not in this build")

A = [np.array([[10, 200, 3], [4, 0, 255]], np.uint8), np.array([[1, 2, 250], [7, 9, 11]], np.uint8)]
B = [np.array([[0.5, -1.5, 2.0], [3.25, 1.0, -0.5]], np.float32)] * 2


def run(build, a=A, b=B):
    @stoker.pipeline_def(batch_size=2, num_threads=2)
    def pipe():
        x = fn.external_source(source=[a], cycle=True)
        y = fn.external_source(source=[b], cycle=True)
        return build(x, y)

    outs = pipe().run()
    return [tl.as_array() for tl in outs]


@pytest.mark.parametrize("name, expr, ref", [
    ("mix", lambda x, y: 0.5 * x + 0.5 * y, lambda a, b: 0.5 * a.astype(np.float32) + 0.5 * b),
    ("add_int", lambda x, y: x + 1, lambda a, b: a.astype(np.int32) + 1),
    ("rsub", lambda x, y: 2 - x, lambda a, b: 2 - a.astype(np.int32)),
    ("div", lambda x, y: x / 4, lambda a, b: a.astype(np.float32) / 4),
    ("floordiv", lambda x, y: x // 3, lambda a, b: a.astype(np.int32) // 3),
    ("mod", lambda x, y: y % 1.5, lambda a, b: np.mod(b, np.float32(1.5))),
    ("mul_nodes", lambda x, y: x * y, lambda a, b: a.astype(np.float32) * b),
    ("lt", lambda x, y: x < 100, lambda a, b: a < 100),
    ("ge_nodes", lambda x, y: y >= x, lambda a, b: b >= a),
    ("and", lambda x, y: x & 0x0F, lambda a, b: a.astype(np.int32) & 0x0F),
    ("neg", lambda x, y: -y, lambda a, b: -b),
    ("abs", lambda x, y: abs(y), lambda a, b: np.abs(b)),
    ("min", lambda x, y: math.min(x, 7), lambda a, b: np.minimum(a.astype(np.int32), 7)),
    ("max", lambda x, y: math.max(y, x), lambda a, b: np.maximum(b, a.astype(np.float32))),
    # DALI promotes a clamp's type with its bounds': uint8 with Python ints is int32
    ("clamp", lambda x, y: math.clamp(x, 5, 100), lambda a, b: np.clip(a, 5, 100).astype(np.int32)),
    ("clamp_same_type", lambda x, y: math.clamp(x, np.uint8(5), np.uint8(100)), lambda a, b: np.clip(a, 5, 100)),
    ("sqrt", lambda x, y: math.sqrt(x), lambda a, b: np.sqrt(a.astype(np.float32))),
])
def test_against_numpy(name, expr, ref):
    (got,) = run(lambda x, y: expr(x, y))
    want = np.stack([ref(a, b) for a, b in zip(A, B)])
    assert got.dtype == want.dtype, name
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6), name


@pytest.mark.parametrize("left, right", [("uint8", "float32"), ("int8", "uint8"), ("int16", "uint8"),
                                         ("int32", "uint32"), ("uint16", "uint8"),
                                         ("bool", "int16"), ("float16", "int64"),
                                         ("float32", "float64")])
def test_promotion_matches_the_table(left, right):
    a = [np.ones((2,), left)] * 2
    b = [np.ones((2,), right)] * 2
    (got,) = run(lambda x, y: x + y, a, b)
    assert got.dtype.name == types.promote(left, right)


def test_math_reports_operations_the_build_lacks():
    schema = _schema.registry()["math.unary"]
    missing = [n for n in ("asinh", "acosh", "atanh") if n not in schema.args["op"].choices]
    for name in missing:
        with pytest.raises(stoker.UnsupportedError, match=name):
            getattr(math, name)(fn.random.uniform())


def test_clamp_promotes_as_dali():
    """Output types and values as DALI 2.4's math.clamp gives them (checked against DALI):
    the input's type promoted with the bounds' (Python int -> int32, float -> float32,
    NumPy scalars and types.Constant keep theirs, a node its own)."""
    img = [np.arange(0, 256, 5, dtype=np.uint8).reshape(1, -1)] * 2

    def graph(x, y):
        f, i16 = fn.cast(x, dtype=types.FLOAT), fn.cast(x, dtype=types.INT16)
        lo_node = fn.cast(fn.random.uniform(range=[10, 11]), dtype=types.INT16)
        return (math.clamp(x, 10, 200), math.clamp(x, 10.5, 200), math.clamp(f, 10, 200),
                math.clamp(i16, 10.0, 20), math.clamp(x, types.Constant(10, dtype=types.INT16), 200),
                math.clamp(x, -5, 300), math.clamp(x, np.uint8(10), np.uint8(200)),
                math.clamp(x, lo=lo_node), math.clamp(x, hi=np.float64(3.5)))
    outs = run(graph, img, img)
    a = img[0].astype(np.int64)
    want = [("int32", np.clip(a, 10, 200)), ("float32", np.clip(a, 10.5, 200)),
            ("float32", np.clip(a, 10, 200)), ("float32", np.clip(a, 10, 20)),
            ("int32", np.clip(a, 10, 200)), ("int32", a), ("uint8", np.clip(a, 10, 200)),
            ("int16", np.clip(a, 10, None)), ("float64", np.clip(a, None, 3.5))]
    for k, (got, (dtype, ref)) in enumerate(zip(outs, want)):
        assert got.dtype.name == dtype, k
        assert np.array_equal(np.asarray(got)[0], ref.astype(dtype)), k
