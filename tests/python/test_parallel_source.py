"""external_source(parallel=True) (issue 21 item 2): sources run in worker processes
(py_num_workers, py_start_method), results handed over through shared memory, batches in
order, epochs and StopIteration as the serial source, worker exceptions re-raised with
their traceback, dead workers reported, workers and buffers gone after close()."""

import os
import signal
import time

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.errors import InvalidArgumentError, StokerError

SHM = "/dev/shm"


def per_sample(info):
    # everything SampleInfo holds, and the worker's pid, in one sample
    return np.array([info.idx_in_epoch, info.idx_in_batch, info.iteration, info.epoch_idx,
                     os.getpid()], np.int64)


def slow_early_batches(info):
    time.sleep(0.05 if info.iteration % 3 == 0 else 0.0)  # later batches finish first
    return [np.full((2, 3), info.iteration * 100 + i, np.int32) for i in range(4)]


def ends_at_12(info):
    if info.idx_in_epoch >= 12:
        raise StopIteration
    return np.array([info.idx_in_epoch, info.epoch_idx], np.int32)


def fails_at_7(info):
    if info.idx_in_epoch == 7:
        raise ValueError(f"boom at sample {info.idx_in_epoch}")
    return np.zeros(2, np.uint8)


def two_outputs(info):
    i = info.idx_in_epoch
    return np.full((i % 3 + 1,), i, np.float32), np.array(i * 2, np.int16)


def generator():
    for k in range(3):
        yield [np.full((2,), 10 * k + i, np.int64) for i in range(4)]


def build(source, batch_size=4, workers=3, method="fork", **kw):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=2, py_num_workers=workers,
                         py_start_method=method)
    def pipe():
        return fn.external_source(source=source, parallel=True, **kw)
    p = pipe()
    p.build()
    return p


def test_per_sample_callable_split_among_workers():
    p = build(per_sample, batch_size=5, batch=False)
    pids = set()
    for it in range(3):
        (out,) = p.run()
        a = out.as_array()
        assert a[:, 0].tolist() == list(range(5 * it, 5 * it + 5))
        assert a[:, 1].tolist() == list(range(5)) and set(a[:, 2]) == {it} and set(a[:, 3]) == {0}
        pids |= set(a[:, 4].tolist())
    assert len(pids) == 3 and os.getpid() not in pids  # chunks of 2, 2, 1 on three workers
    p.close()


def test_batch_callable_keeps_order_with_batches_done_out_of_order():
    p = build(slow_early_batches, batch=True, batch_info=True, prefetch_queue_depth=3)
    for it in range(7):
        (out,) = p.run()
        assert out.as_array()[:, 0, 0].tolist() == [it * 100 + i for i in range(4)]
    p.close()


def test_epochs_end_with_stop_iteration_and_restart_on_reset():
    p = build(ends_at_12, batch=False)
    for epoch in range(2):
        seen = [p.run()[0].as_array() for _ in range(3)]
        with pytest.raises(StopIteration):
            p.run()
        got = np.concatenate(seen)
        assert got[:, 0].tolist() == list(range(12)) and set(got[:, 1]) == {epoch}
        p.reset()
    p.close()


def test_generator_in_a_worker():
    p = build(generator, batch=True, workers=2)
    for epoch in range(2):
        assert [p.run()[0].as_array()[:, 0].tolist() for _ in range(3)] == \
            [[10 * k + i for i in range(4)] for k in range(3)]
        with pytest.raises(StopIteration):
            p.run()
        p.reset()
    p.close()


def test_worker_exception_is_reraised_with_its_traceback():
    p = build(fails_at_7, batch=False)
    p.run()  # samples 0..3
    with pytest.raises(ValueError, match="boom at sample 7") as info:
        p.run()
    cause = info.value.__cause__
    assert isinstance(cause, stoker._parallel.RemoteTraceback)
    assert "fails_at_7" in str(cause) and "raise ValueError" in str(cause)
    p.close()


def test_several_outputs_and_ragged_samples():
    @stoker.pipeline_def(batch_size=4, num_threads=2, py_num_workers=2)
    def pipe():
        a, b = fn.external_source(source=two_outputs, num_outputs=2, batch=False, parallel=True,
                                  layout=["A", ""])
        return a, b
    p = pipe()
    for it in range(2):
        a, b = p.run()
        for i in range(4):
            k = 4 * it + i
            assert np.array_equal(a.at(i), np.full((k % 3 + 1,), k, np.float32))
            assert b.at(i).shape == () and int(b.at(i)) == 2 * k
        assert a.layout() == "A"
    p.close()


def test_spawn_needs_a_picklable_source():
    p = build(per_sample, method="spawn", workers=2, batch=False)
    (out,) = p.run()
    assert out.as_array()[:, 0].tolist() == [0, 1, 2, 3]
    p.close()
    with pytest.raises(InvalidArgumentError, match="needs a source that pickles"):
        build(lambda info: np.zeros(1), method="spawn", batch=False)


def test_a_dead_worker_is_reported():
    p = build(slow_early_batches, batch=True, batch_info=True, workers=2)
    p.run()
    for proc in p._py_pool.procs:
        os.kill(proc.pid, signal.SIGKILL)
    with pytest.raises(StokerError, match=r"parallel source worker \d \(pid \d+\) died with exit code -9"):
        for _ in range(5):
            p.run()
    p.close()


def test_close_stops_workers_and_removes_shared_memory():
    p = build(per_sample, batch=False)
    p.run()
    pool = p._py_pool
    prefix = pool.prefix
    assert any(f.startswith(prefix) for f in os.listdir(SHM))
    p.close()
    assert not any(proc.is_alive() for proc in pool.procs)
    assert not any(f.startswith(prefix) for f in os.listdir(SHM))


def test_argument_errors():
    with pytest.raises(InvalidArgumentError, match="py_start_method must be 'fork' or 'spawn'"):
        stoker.Pipeline(batch_size=1, py_start_method="thread")
    with pytest.raises(InvalidArgumentError, match="py_num_workers must be >= 1"):
        stoker.Pipeline(batch_size=1, py_num_workers=0)
    with pytest.raises(InvalidArgumentError, match="batch=False needs a callable"):
        build([[np.zeros(1)]], batch=False)
    with pytest.raises(InvalidArgumentError, match="parallel=True needs a source"):
        build(None)
    with pytest.raises(InvalidArgumentError, match="prefetch_queue_depth must be >= 1"):
        build(per_sample, batch=False, prefetch_queue_depth=0)


ORPHAN = """
import os, sys
import numpy as np
sys.path.insert(0, {python!r})
import stoker
from stoker import fn
def src(info):
    return np.zeros(3, np.uint8)
@stoker.pipeline_def(batch_size=2, num_threads=1, py_num_workers=2)
def p():
    return fn.external_source(source=src, batch=False, parallel=True)
pipe = p()
pipe.run()
print(" ".join(str(x.pid) for x in pipe._py_pool.procs), pipe._py_pool.prefix, flush=True)
os.kill(os.getpid(), 9)
"""


def test_workers_leave_when_the_pipelines_process_dies():
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", ORPHAN.format(python=os.path.join(root, "python"))],
                         capture_output=True, text=True, timeout=60).stdout.split()
    pids, prefix = [int(x) for x in out[:2]], out[2]
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)
    assert not any(f.startswith(prefix + "-") for f in os.listdir(SHM))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
