"""The shape_like input of random.uniform / normal / coin_flip / beta / choice (DALI's: each
output sample takes its shape, any type, no layout; excludes `shape`), random.choice's
DALI call form choice(a, shape_like) with `a` a constant or fed per sample and the output
of a's type; the values checked against the distributions' published moments, the
errors, and where DALI 2.4 is installed its shapes and types for the same calls."""

import json
import os
import subprocess

import numpy as np
import pytest

from stoker import fn, pipeline_def
from stoker.errors import StokerError

DALI_PY = "/work/dali-venv/bin/python"
LIKE = [np.zeros((30, 40, 2), np.uint8), np.zeros((50, 1, 3), np.uint8)]


def run(build, batch_size=2, like=LIKE, raw=False):
    @pipeline_def(batch_size=batch_size, num_threads=2, seed=5)
    def pipe():
        x = fn.external_source(source=lambda: like, layout="HWC")
        out = build(x)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    out = p.run()
    return out if raw else [[np.array(t[i]) for i in range(len(t))] for t in out]


CALLS = {
    "uniform": lambda x: fn.random.uniform(x, range=[2, 6]),
    "normal": lambda x: fn.random.normal(x, mean=1.0, stddev=2.0),
    "coin_flip": lambda x: fn.random.coin_flip(x, probability=0.25),
    "beta": lambda x: fn.random.beta(x, alpha=2.0, beta=5.0),
    "choice": lambda x: fn.random.choice(5, x),
    "choice_float": lambda x: fn.random.choice([0.5, 1.5, 2.5], x, p=[0.2, 0.3, 0.5]),
}
DTYPES = {"uniform": np.float32, "normal": np.float32, "coin_flip": np.int32,
          "beta": np.float32, "choice": np.int32, "choice_float": np.float32}


def test_outputs_take_each_samples_shape():
    outs = run(lambda x: tuple(c(x) for c in CALLS.values()))
    for name, samples in zip(CALLS, outs):
        assert [s.shape for s in samples] == [(30, 40, 2), (50, 1, 3)], name
        assert all(s.dtype == DTYPES[name] for s in samples), name
    # the input's layout (HWC) is not carried over, as in DALI
    assert all(t.layout() == "" for t in run(lambda x: tuple(c(x) for c in CALLS.values()),
                                              raw=True))


def test_values_follow_the_distributions():
    # 2400 + 150 draws per operator; bounds are several standard errors wide
    u, n, c, b, ch, cf = (np.concatenate([s.ravel() for s in o])
                          for o in run(lambda x: tuple(c(x) for c in CALLS.values())))
    assert u.min() >= 2 and u.max() < 6 and abs(u.mean() - 4) < 0.1  # sd 1.15 / sqrt(2550)
    assert abs(n.mean() - 1) < 0.2 and abs(n.std() - 2) < 0.15
    assert set(np.unique(c)) <= {0, 1} and abs(c.mean() - 0.25) < 0.04
    assert b.min() >= 0 and b.max() <= 1 and abs(b.mean() - 2 / 7) < 0.015  # alpha/(alpha+beta)
    assert abs(b.var() - 10 / (49 * 8)) < 0.004  # ab / ((a+b)^2 (a+b+1))
    assert set(np.unique(ch)) <= set(range(5)) and len(np.unique(ch)) == 5
    freq = [np.mean(cf == v) for v in (0.5, 1.5, 2.5)]
    np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.04)


def test_choice_a_fed_per_sample_keeps_its_type():
    def build(x):
        a = fn.external_source(source=lambda: [np.array([10, 20, 30], np.int64),
                                               np.array([7], np.int64)])
        return fn.random.choice(a, x)
    got, = run(build)
    assert got[0].dtype == np.int64 and set(np.unique(got[0])) == {10, 20, 30}
    # one fed value n is range(n), as a scalar a
    assert got[1].shape == (50, 1, 3) and set(np.unique(got[1])) == set(range(7))


def test_shape_and_shape_like_exclude_each_other():
    for name in ("uniform", "normal", "coin_flip", "beta", "choice"):
        op = getattr(fn.random, name)
        with pytest.raises(StokerError, match="'shape' or the shape_like input"):
            run(lambda x: op(x, shape=[2]) if name != "choice" else op(3, x, shape=[2]))


def test_choice_bad_a():
    with pytest.raises(StokerError, match="1-D"):
        run(lambda x: fn.random.choice([[1, 2], [3, 4]], x))
    with pytest.raises(StokerError, match="positive integer"):
        run(lambda x: fn.random.choice(0, x))

    def fed_zero(x):
        a = fn.external_source(source=lambda: [np.array([3], np.int32), np.array([0], np.int32)])
        return fn.random.choice(a, x)
    with pytest.raises(StokerError, match=r"a single value of 'a' \(0\)"):
        run(fed_zero)


DALI_SCRIPT = r"""
import json, sys
import numpy as np
from nvidia.dali import pipeline_def, fn
like = [np.zeros((30, 40, 2), np.uint8), np.zeros((50, 1, 3), np.uint8)]
calls = {
    "uniform": lambda x: fn.random.uniform(x, range=[2, 6]),
    "normal": lambda x: fn.random.normal(x, mean=1.0, stddev=2.0),
    "coin_flip": lambda x: fn.random.coin_flip(x, probability=0.25),
    "beta": lambda x: fn.random.beta(x, alpha=2.0, beta=5.0),
    "choice": lambda x: fn.random.choice(5, x),
    "choice_float": lambda x: fn.random.choice([0.5, 1.5, 2.5], x, p=[0.2, 0.3, 0.5]),
}
res = {}
for name, call in calls.items():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
    def p():
        x = fn.external_source(source=lambda: like, layout="HWC")
        return call(x)
    pipe = p()
    pipe.build()
    o = pipe.run()[0]
    res[name] = [[list(np.array(o[i]).shape), str(np.array(o[i]).dtype)] for i in range(2)]
    res[name].append(o.layout())
print(json.dumps(res))
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI 2.4 oracle venv absent")
def test_shapes_and_types_match_dali():
    r = subprocess.run([DALI_PY, "-c", DALI_SCRIPT], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    want = json.loads(r.stdout.strip().splitlines()[-1])
    outs = run(lambda x: tuple(c(x) for c in CALLS.values()))
    for name, samples in zip(CALLS, outs):
        got = [[list(s.shape), str(s.dtype)] for s in samples]
        assert got == want[name][:2], name
        assert want[name][2] == ""  # DALI drops the layout, as stoker (checked above)
