"""python_function / dl_tensor_python_function with batch_processing=True on the CPU: the
function is called once per batch with, per input, the list of the batch's samples, and
returns a list per output (DALI's semantics). Checked against NumPy on the same samples;
conditionals (only the branch's samples), the bad-sample policy (replaced samples never
reach the function), and errors (the operator named, the exception chained)."""
import gc
import os

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker._dlpack_fn import _Capsule
from stoker.errors import InvalidArgumentError, StokerError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTO_DIR = os.path.join(ROOT, "data", "photos")
RAGGED = [np.arange(6, dtype=np.int32).reshape(2, 3),
          np.arange(8, dtype=np.int32).reshape(4, 2) + 50,
          np.array([[7]], np.int32)]


def build(graph, batch_size=len(RAGGED), **kw):
    kw.setdefault("num_threads", 2)

    @stoker.pipeline_def(batch_size=batch_size, seed=5, device_id=None, **kw)
    def pipe():
        return graph()
    p = pipe()
    p.build()
    return p


def samples(tl):
    return [np.asarray(tl.at(i)) for i in range(len(tl))]


def batches(batch_list):
    """An external_source of successive batches (each a list of samples)."""
    it = iter(batch_list)
    return fn.external_source(source=lambda: next(it))


def test_one_call_per_batch_with_lists_of_the_batch_samples():
    calls = []

    def f(xs):
        calls.append([x.copy() for x in xs])
        return [x.T * 3 for x in xs]  # a new shape per sample: ragged in and out

    p = build(lambda: fn.python_function(batches([RAGGED, RAGGED[::-1]]), function=f,
                                         batch_processing=True),
              prefetch_queue_depth=1, exec_async=False)
    first, = p.run()
    second, = p.run()
    for got, src in ((first, RAGGED), (second, RAGGED[::-1])):
        assert [g.shape for g in samples(got)] == [s.T.shape for s in src]
        for g, s in zip(samples(got), src):
            np.testing.assert_array_equal(g, s.T * 3)
    assert len(calls) == 2  # once per batch, not once per sample
    for call, src in zip(calls, (RAGGED, RAGGED[::-1])):
        assert len(call) == 3
        for a, b in zip(call, src):
            np.testing.assert_array_equal(a, b)


def test_several_inputs_and_outputs_with_layouts():
    a = [np.full((2, 2), i, np.float32) for i in range(4)]
    b = [np.array([i * 10], np.int64) for i in range(4)]

    def f(xs, ys):
        assert len(xs) == len(ys) == 4
        return [x + y[0] for x, y in zip(xs, ys)], [np.array([len(xs)], np.uint8)] * len(xs)

    p = build(lambda: fn.python_function(batches([a]), batches([b]), function=f, num_outputs=2,
                                         batch_processing=True, output_layouts=["HW", "C"]),
              batch_size=4)
    total, count = p.run()
    for i, t in enumerate(samples(total)):
        np.testing.assert_array_equal(t, np.full((2, 2), i + i * 10, np.float32))
    assert [int(c[0]) for c in samples(count)] == [4] * 4
    assert total.layout() == "HW" and count.layout() == "C"


def test_dl_tensor_form_gets_lists_of_capsules():
    def f(caps):
        assert all(type(c).__name__ == "PyCapsule" for c in caps)
        return [np.from_dlpack(_Capsule(c)).sum(keepdims=True) for c in caps]

    p = build(lambda: fn.dl_tensor_python_function(batches([RAGGED]), function=f,
                                                   batch_processing=True))
    out, = p.run()
    assert [s.shape for s in samples(out)] == [(1, 1)] * 3
    assert [int(s.ravel()[0]) for s in samples(out)] == [int(r.sum()) for r in RAGGED]


def test_batch_function_in_a_branch_sees_only_its_samples():
    seen = {"then": [], "else": []}

    def branch(key, delta):
        def f(xs):
            seen[key].append(len(xs))
            return [x + np.float32(delta) for x in xs]
        return f

    values = [np.array([float(i)], np.float32) for i in range(8)]

    @stoker.pipeline_def(batch_size=8, num_threads=2, seed=11, enable_conditionals=True,
                         exec_async=False, prefetch_queue_depth=1, device_id=None)
    def pipe():
        x = fn.external_source(source=[values], cycle=True)
        c = fn.random.coin_flip(dtype="bool")
        if c:
            y = fn.python_function(x, function=branch("then", 100), batch_processing=True)
        else:
            y = fn.python_function(x, function=branch("else", -100), batch_processing=True)
        return y, c, x

    p = pipe()
    p.build()
    y, c, x = (np.asarray(t.as_array()) for t in p.run())
    c = c.astype(bool).ravel()
    assert 0 < c.sum() < 8  # both branches taken (seed 11)
    np.testing.assert_array_equal(y.ravel(), x.ravel() + np.where(c, 100, -100))
    assert seen == {"then": [int(c.sum())], "else": [int((~c).sum())]}


def test_skipped_samples_are_replaced_before_the_batch_call(tmp_path):
    photos = sorted(f for f in os.listdir(PHOTO_DIR) if f.endswith(".jpg"))[:3]
    files = [os.path.join(PHOTO_DIR, f) for f in photos]
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8 not a jpeg at all" * 3)
    shapes = []

    def f(images):
        shapes.append([im.shape for im in images])
        return [np.array(im.shape, np.int64) for im in images]

    def graph():
        jpegs, _ = fn.readers.file(files=[files[0], str(bad), files[1], files[2]])
        images = fn.decoders.image(jpegs)
        return fn.python_function(images, function=f, batch_processing=True)

    p = build(graph, batch_size=2, on_error="skip", exec_async=False, prefetch_queue_depth=1)
    out, = p.run()
    got = [tuple(s) for s in samples(out)]
    assert len(got) == 2 and all(len(s) == 3 and s[2] == 3 for s in got)
    assert shapes[0] == got  # the function saw the decoded replacement, not the bad file


def test_wrong_number_of_samples_names_the_operator():
    p = build(lambda: fn.python_function(batches([RAGGED]), function=lambda xs: xs[:2],
                                         batch_processing=True, name="short"))
    with pytest.raises(StokerError, match=r"short.*output 0 must be a list of 3 samples"):
        p.run()


def test_a_bad_returned_sample_is_named():
    def complex_second(xs):  # refused by the conversion to arrays
        return [x if i != 1 else x.astype(np.complex64) for i, x in enumerate(xs)]

    def deep_third(xs):  # refused by the C side: more than 8 dimensions
        return [x if i != 2 else np.zeros((1,) * 9, np.int32) for i, x in enumerate(xs)]

    for f, which in ((complex_second, 1), (deep_third, 2)):
        p = build(lambda: fn.python_function(batches([RAGGED]), function=f,
                                             batch_processing=True, name="bad"))
        with pytest.raises(StokerError, match=rf"bad.*sample {which}\b"):
            p.run()


@pytest.mark.parametrize("batch_processing", [False, True])
def test_a_layout_that_is_not_a_string_is_refused(batch_processing):
    with pytest.raises(InvalidArgumentError, match="lay.*output_layouts must be strings, got 5"):
        build(lambda: fn.python_function(batches([RAGGED]), function=lambda x: x, name="lay",
                                         batch_processing=batch_processing,
                                         output_layouts=["HW", 5], num_outputs=2))


def test_exception_is_chained_and_the_pipeline_can_go():
    class Boom(Exception):
        pass

    def f(xs):
        raise Boom(f"no batch of {len(xs)}")

    p = build(lambda: fn.python_function(batches([RAGGED]), function=f, batch_processing=True,
                                         name="boomer"))
    with pytest.raises(StokerError, match="boomer.*no batch of 3") as info:
        p.run()
    assert isinstance(info.value.__cause__, Boom)
    del p
    gc.collect()
    # a new pipeline with the same function kind works afterwards
    p = build(lambda: fn.python_function(batches([RAGGED]), function=lambda xs: xs,
                                         batch_processing=True))
    out, = p.run()
    np.testing.assert_array_equal(samples(out)[2], RAGGED[2])


def test_per_sample_default_is_unchanged():
    calls = []

    def f(x):
        calls.append(x.shape)
        return x + 1

    p = build(lambda: fn.python_function(batches([RAGGED]), function=f),
              prefetch_queue_depth=1, exec_async=False)
    out, = p.run()
    assert sorted(calls) == sorted(r.shape for r in RAGGED)
    for g, r in zip(samples(out), RAGGED):
        np.testing.assert_array_equal(g, r + 1)


# ---- DALI 2.4 (CPU) as the oracle: the same batch function, the same outputs ----

DALI_PY = os.environ.get("STK_DALI_PYTHON", "/work/dali-venv/bin/python")
BATCH_FN = """
def centre(xs, ys):
    m = np.float32(np.mean([x.mean() for x in xs]))  # a statistic of the whole batch
    return [(x - m).astype(np.float32) for x in xs], [y[::-1].copy() for y in ys]
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="no DALI venv (oracle)")
def test_batch_function_matches_dali(tmp_path):
    import subprocess
    import textwrap
    xs = [np.arange(6, dtype=np.float32).reshape(2, 3) * (i + 1) for i in range(3)]
    ys = [np.arange(i + 2, dtype=np.int32) for i in range(3)]
    np.savez(tmp_path / "in.npz", *xs, *ys)
    script = textwrap.dedent(f"""
        import numpy as np
        from nvidia.dali import pipeline_def, fn
        d = np.load({str(tmp_path / 'in.npz')!r}); a = [d[k] for k in d.files]
        xs, ys = a[:3], a[3:]
        {textwrap.indent(BATCH_FN, '        ').strip()}
        @pipeline_def(batch_size=3, num_threads=1, device_id=None)
        def pipe():
            x = fn.external_source(source=lambda: xs)
            y = fn.external_source(source=lambda: ys)
            return tuple(fn.python_function(x, y, function=centre, num_outputs=2,
                                            batch_processing=True, output_layouts=["HW"]))
        p = pipe(); p.build(); o = p.run()
        np.savez({str(tmp_path / 'out.npz')!r}, *[np.array(t.at(i)) for t in o for i in range(3)])
        print(o[0].layout(), "|", o[1].layout())
    """)
    r = subprocess.run([DALI_PY, "-c", script], check=True, capture_output=True, text=True,
                       timeout=300)
    dali_layouts = [s.strip() for s in r.stdout.strip().splitlines()[-1].split("|")]
    o = np.load(tmp_path / "out.npz")
    want = [o[k] for k in o.files]
    scope = {"np": np}
    exec(BATCH_FN, scope)
    p = build(lambda: fn.python_function(batches([xs]), batches([ys]), function=scope["centre"],
                                         num_outputs=2, batch_processing=True,
                                         output_layouts=["HW"]))
    a, b = p.run()
    got = samples(a) + samples(b)
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    assert [a.layout(), b.layout()] == dali_layouts == ["HW", ""]


def test_the_chained_cause_is_the_named_samples_exception():
    """Samples fail at once on several workers: the error names the first failure, and the
    exception chained as its cause must be that sample's, not whichever failed last (it
    was another sample's on every one of 30 tries before)."""
    import time

    def fail(x):
        time.sleep(0.002)  # the workers' calls overlap
        raise ValueError(f"value {int(x[0])}")

    for trial in range(10):
        @stoker.pipeline_def(batch_size=8, num_threads=4, device_id=None, seed=trial,
                             prefetch_queue_depth=1)
        def p():
            x = fn.external_source(source=lambda: [np.array([i], np.int32) for i in range(8)])
            return fn.python_function(x, function=fail)
        pipe = p()
        pipe.build()
        with pytest.raises(StokerError) as e:
            pipe.run()
        assert isinstance(e.value.__cause__, ValueError)
        assert str(e.value.__cause__) in str(e.value), (str(e.value), str(e.value.__cause__))
