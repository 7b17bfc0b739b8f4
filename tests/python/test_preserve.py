"""Operators kept when no output depends on them, as DALI keeps them: Python functions
(called for their side effects, also with num_outputs=0) and any operator given
preserve=True. Without this a DALI program that logs or saves from a python_function would
run silently without calling it."""
import pytest

from stoker import fn, pipeline_def, types
from stoker.errors import StokerError


def build(graph):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1, prefetch_queue_depth=1)
    def p():
        return graph()
    pipe = p()
    pipe.build()
    return pipe


def test_python_function_with_an_unused_output_is_called():
    calls = []

    def count(x):
        calls.append(x.shape)
        return x

    def graph():
        x = fn.random.uniform(range=[0, 1], shape=[3])
        fn.python_function(x, function=count)
        return x
    pipe = build(graph)
    pipe.run()
    pipe.run()
    assert len(calls) >= 4 and all(s == (3,) for s in calls)


def test_python_function_without_outputs_is_called_per_sample_and_per_batch():
    per_sample, per_batch = [], []

    def graph():
        x = fn.random.uniform(range=[0, 1], shape=[2])
        fn.python_function(x, function=lambda a: per_sample.append(float(a[0])), num_outputs=0)
        fn.python_function(x, function=lambda b: per_batch.append(len(b)), num_outputs=0,
                           batch_processing=True)
        return x
    pipe = build(graph)
    out = pipe.run()
    first = [float(t[0]) for t in out[0]]
    assert per_sample[:2] == first  # the batch's samples, in order
    assert per_batch[0] == 2


def test_a_value_returned_without_outputs_is_an_error_naming_the_operator():
    def graph():
        x = fn.random.uniform(range=[0, 1], shape=[2])
        fn.python_function(x, function=lambda a: a, num_outputs=0, name="logger")
        return x
    pipe = build(graph)
    with pytest.raises(StokerError, match="logger"):
        pipe.run()


def test_preserve_keeps_an_operator_no_output_needs():
    # a reshape to 5 elements fails on every 2-element sample: it runs only if kept
    def graph(preserve):
        x = fn.random.uniform(range=[0, 1], shape=[2])
        fn.reshape(x, shape=[5], preserve=preserve, name="kept")
        return x
    build(lambda: graph(False)).run()  # pruned: nothing fails
    pipe = build(lambda: graph(True))
    with pytest.raises(StokerError, match="kept"):
        pipe.run()


def test_preserved_operators_are_in_the_text_form():
    def graph():
        x = fn.random.uniform(range=[0, 1], shape=[2])
        fn.cast(x, dtype=types.INT32, preserve=True, name="side")
        return x
    pipe = build(graph)
    assert "side" in pipe.serialize()
