"""fn.external_source (batch and per-sample sources, epochs, cycling, several outputs,
feed_input) and fn.python_function (per-sample Python code on the worker threads)."""

import threading

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import InvalidArgumentError, StateError, StokerError


def batches_of(pipe, max_batches=100):
    """Runs until StopIteration; each batch as a list of per-sample arrays per output."""
    out = []
    try:
        for _ in range(max_batches):
            out.append([[np.array(s) for s in tl] for tl in pipe.run()])
    except StopIteration:
        return out
    raise AssertionError("the epoch did not end")


def make_batch(i, bs=2):
    return [np.full((2, 3), 10 * i + k, dtype=np.int16) for k in range(bs)]


def test_iterable_source_ends_the_epoch_and_restarts_after_reset():
    data = [make_batch(i) for i in range(3)]

    @stoker.pipeline_def(batch_size=2, num_threads=2, prefetch_queue_depth=2)
    def pipe():
        return fn.external_source(source=data, layout="HW")

    p = pipe()
    for epoch in range(3):
        got = batches_of(p)
        assert len(got) == 3
        for i, (batch,) in enumerate(got):
            assert [s[0, 0] for s in batch] == [10 * i, 10 * i + 1]
            assert batch[0].dtype == np.int16 and batch[0].shape == (2, 3)
        with pytest.raises(StopIteration):
            p.run()  # stays at the end until reset
        p.reset()
    (tl,) = p.run()
    assert tl.layout() == "HW" and tl.dtype == types.INT16


def test_generator_function_gives_a_new_generator_each_epoch():
    def gen():
        for i in range(2):
            yield np.arange(4, dtype=np.float32).reshape(2, 2) + i  # batch as one array

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.external_source(source=gen)

    p = pipe()
    first = batches_of(p)
    p.reset()
    second = batches_of(p)
    assert len(first) == 2 and all(np.array_equal(a[0][0], b[0][0]) for a, b in zip(first, second))
    assert first[1][0][1].tolist() == [3.0, 4.0]


def test_callable_batch_source_gets_the_iteration_or_batch_info():
    seen = []

    def source(info):
        seen.append((info.iteration, info.epoch_idx))
        if info.iteration == 2:
            raise StopIteration
        return [np.array([info.iteration, k], dtype=np.int32) for k in range(3)]

    @stoker.pipeline_def(batch_size=3, num_threads=1, prefetch_queue_depth=1)
    def pipe():
        return fn.external_source(source=source, batch_info=True)

    p = pipe()
    got = batches_of(p)
    assert [b[0][2].tolist() for b in got] == [[0, 2], [1, 2]]
    p.reset()
    got = batches_of(p)
    assert len(got) == 2 and (0, 1) in seen and (2, 1) in seen


def test_per_sample_source_gets_sample_info():
    infos = []

    def sample(info):
        infos.append(info)
        if info.idx_in_epoch >= 6:
            raise StopIteration
        return np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration], dtype=np.int64)

    @stoker.pipeline_def(batch_size=3, num_threads=2)
    def pipe():
        return fn.external_source(source=sample, batch=False)

    p = pipe()
    got = batches_of(p)
    assert [[s.tolist() for s in b[0]] for b in got] == [
        [[0, 0, 0], [1, 1, 0], [2, 2, 0]], [[3, 0, 1], [4, 1, 1], [5, 2, 1]]]
    p.reset()
    assert len(batches_of(p)) == 2 and infos[-1].epoch_idx == 1


def test_cycle_quiet_wraps_around():
    data = [make_batch(0), make_batch(1)]

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.external_source(source=data, cycle=True)

    p = pipe()
    firsts = [p.run()[0][0][0, 0] for _ in range(5)]
    assert firsts == [0, 10, 0, 10, 0]


def test_several_outputs_from_one_source():
    def source():
        return [np.ones((2,), np.uint8)] * 2, [np.zeros((1,), np.float64)] * 2

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        a, b = fn.external_source(source=source, num_outputs=2, layout=["X", "Y"])
        return a, b

    a, b = pipe().run()
    assert a.dtype == types.UINT8 and b.dtype == types.FLOAT64
    assert a.layout() == "X" and b.layout() == "Y"


def test_feed_input_without_source():
    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.external_source(name="in", dtype=types.FLOAT)

    p = pipe()
    p.build()
    with pytest.raises(StateError, match="feed_input"):
        p.run()
    p.feed_input("in", np.arange(6, dtype=np.float32).reshape(2, 3))
    (tl,) = p.run()
    assert tl.as_array().tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(InvalidArgumentError, match="fed int32, declared dtype float32"):
        p.feed_input("in", [np.zeros(2, np.int32)] * 2)


def test_source_errors():
    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def wrong_size():
        return fn.external_source(source=lambda: [np.zeros(1)] * 3)

    with pytest.raises(InvalidArgumentError, match="fed 3 samples, must be 1 to the batch size .2."):
        wrong_size().run()

    @stoker.pipeline_def(batch_size=1, num_threads=1)
    def bad_type():
        return fn.external_source(source=lambda: [np.array(["a"])])

    with pytest.raises(InvalidArgumentError, match="not supported"):
        bad_type().run()

    with pytest.raises(InvalidArgumentError, match="cycle"):
        fn.external_source(source=[1], cycle="sometimes")
    with pytest.raises(InvalidArgumentError, match="unknown argument 'sauce'"):
        fn.external_source(sauce=[1])


# ---- python_function ----

def test_python_function_per_sample_with_two_outputs_and_layouts():
    thread_ids = set()

    def f(x, y):
        thread_ids.add(threading.get_ident())
        return (x.astype(np.float32) * 2 + y).T, np.array([x.sum()], dtype=np.int64)

    data = [[np.arange(6, dtype=np.uint8).reshape(2, 3) + i for i in range(4)]]

    @stoker.pipeline_def(batch_size=4, num_threads=2)
    def pipe():
        x = fn.external_source(source=data, cycle=True)
        y = fn.random.uniform(range=[0, 1])
        a, b = fn.python_function(x, y, function=f, num_outputs=2, output_layouts=["WH", None])
        return x, y, a, b

    x, y, a, b = pipe().run()
    for i in range(4):
        assert np.allclose(a[i], (x[i].astype(np.float32) * 2 + y[i]).T)
        assert b[i].tolist() == [int(x[i].sum())]
    assert a.layout() == "WH" and a.dtype == types.FLOAT and b.dtype == types.INT64
    assert threading.get_ident() not in thread_ids  # ran on worker threads


def test_python_function_inputs_are_copies_that_may_be_kept():
    kept = []

    def keep(x):
        kept.append(x)
        return x + 1

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.python_function(fn.random.uniform(range=[0, 1], shape=[64]), function=keep)

    p = pipe()
    out = [p.run()[0].as_array().copy() for _ in range(3)]
    # One worker: calls come in sample order; the first two made batch 0, and the
    # arrays kept since then still hold its inputs.
    assert np.allclose(np.stack(kept[:2]) + 1, out[0])


def test_python_function_exception_reaches_the_caller():
    def boom(x):
        raise ZeroDivisionError("nothing to divide")

    @stoker.pipeline_def(batch_size=2, num_threads=2)
    def pipe():
        return fn.python_function(fn.random.uniform(), function=boom, name="bomb")

    with pytest.raises(StokerError) as info:
        pipe().run()
    msg = str(info.value)
    assert "ZeroDivisionError: nothing to divide" in msg and "bomb" in msg
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_python_function_bad_return_is_reported():
    @stoker.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return fn.python_function(fn.random.uniform(), function=lambda x: (x, x), num_outputs=3)

    with pytest.raises(StokerError, match="must return 3 arrays"):
        pipe().run()
    with pytest.raises(InvalidArgumentError, match="'function' must be a callable"):
        fn.python_function(fn.random.uniform(), function=None)
