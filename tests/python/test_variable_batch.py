"""Variable batch size (DALI's max batch size semantics): an external_source may feed
fewer samples than batch_size, and everything downstream — operators, conditionals,
outputs, the iterators — takes the smaller batch as it is."""

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.plugin.base import LastBatchPolicy
from stoker.plugin.numpy import GenericIterator

SIZES = [4, 1, 3, 4, 2]


def batches():
    k = 0
    for n in SIZES:
        yield [np.full((2, 3), k + i, np.float32) for i in range(n)]
        k += n


@stoker.pipeline_def(batch_size=4, num_threads=2, seed=1)
def pipe(source):
    x = fn.external_source(source=source)
    y = fn.cast(x * 2.0 + 1.0, dtype=stoker.types.INT32)
    return x, y, fn.random.uniform(range=[0.0, 1.0])


def test_fed_batches_keep_their_size_through_the_graph():
    p = pipe(batches)
    k = 0
    for n in SIZES:
        x, y, u = p.run()
        assert len(x) == len(y) == len(u) == n
        for i in range(n):
            np.testing.assert_array_equal(np.asarray(x[i]), np.full((2, 3), k + i, np.float32))
            np.testing.assert_array_equal(np.asarray(y[i]), np.full((2, 3), 2 * (k + i) + 1, np.int32))
        k += n
    with pytest.raises(StopIteration):
        p.run()


def test_random_draws_follow_the_sample_not_the_batch():
    """A sample's random numbers depend on its place in the stream, whatever the batches."""
    us = []
    p = pipe(batches)
    for _ in SIZES:
        us += [float(np.asarray(t)) for t in p.run()[2]]

    def full():
        yield from ([np.zeros((2, 3), np.float32)] * 4 for _ in range(4))
    q = pipe(full)
    vs = []
    for _ in range(4):
        vs += [float(np.asarray(t)) for t in q.run()[2]]
    assert us == vs[:len(us)]


def test_iterator_with_size_minus_one_and_drop():
    it = GenericIterator(pipe(batches), ["x", "y", "u"], size=-1, last_batch_policy=LastBatchPolicy.DROP)
    got = [len(b[0]["x"]) for b in it]
    assert got == SIZES  # every fed batch, as fed, until the source ends


def test_feeding_more_than_the_batch_size_or_nothing_is_refused():
    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def p():
        return fn.external_source(name="src")

    q = p()
    q.build()
    with pytest.raises(stoker.InvalidArgumentError, match="fed 3 samples, must be 1 to the batch size"):
        q.feed_input("src", [np.zeros(1, np.float32)] * 3)
    with pytest.raises(stoker.InvalidArgumentError, match="fed 0 samples"):
        q.feed_input("src", [])
    q.feed_input("src", [np.zeros(1, np.float32)])
    (x,) = q.run()
    assert len(x) == 1


def test_two_sources_fed_different_sizes_is_an_error_naming_them():
    @stoker.pipeline_def(batch_size=4, num_threads=1)
    def p():
        return fn.external_source(name="a"), fn.external_source(name="b")

    q = p()
    q.build()
    q.feed_input("a", [np.zeros(1, np.float32)] * 3)
    q.feed_input("b", [np.zeros(1, np.float32)] * 2)
    with pytest.raises(stoker.StokerError, match="external source 'a': fed 3 samples, but the batch holds 2"):
        q.run()


def test_variable_batches_through_the_gpu_stage(fake_gpu):
    """Against the stand-in GPU backend (tests/fake_gpu): GPU operators see the fed size."""

    @stoker.pipeline_def(batch_size=4, num_threads=2, seed=1, device_id=0)
    def gpu_pipe():
        x = fn.external_source(source=batches)
        return fn.cast(x.gpu(), dtype=stoker.types.FLOAT, device="gpu")  # what the stand-in runs

    p = gpu_pipe()
    k = 0
    for n in SIZES:
        (y,) = p.run()
        host = y.as_cpu()
        assert len(host) == n
        for i in range(n):
            np.testing.assert_array_equal(np.asarray(host.at(i)), np.full((2, 3), k + i, np.float32))
        k += n
