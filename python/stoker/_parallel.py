"""Parallel external sources: ``fn.external_source(source, parallel=True)`` runs the
source in worker processes (``Pipeline(py_num_workers=, py_start_method=)``).

The main process schedules tasks and feeds the C pipeline in order; the workers call the
source and write what it returns into shared memory (files in /dev/shm that the main
process maps), so only small descriptions travel through the queues. Per-sample
callables (``batch=False``) have each batch split into one contiguous chunk of samples
per worker; batch callables get whole batches, one per worker in turn; iterables and
generator functions run in one worker each (their order is their state). Up to the
pipeline's ``prefetch_queue_depth`` batches are fed ahead of ``run()``, and the source's
own ``prefetch_queue_depth`` more are being computed. A worker's exception is re-raised
by ``run()`` with the worker's traceback as its cause; a worker that dies is reported by
its exit code.

The workers are started when the pipeline is built, before its C threads exist, so
"fork" duplicates no running thread of this pipeline ("spawn" needs a picklable source:
a module-level function or an instance of a module-level class).
"""

import inspect
import itertools
import mmap
import os
import pickle
import queue
import tempfile
import traceback

import numpy as np

from .errors import InvalidArgumentError, StokerError
from .external_source import SourceGroup

_ALIGN = 64
_SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_pool_ids = itertools.count()


class RemoteTraceback(Exception):
    """The traceback of an exception raised in an external source's worker process (the
    ``__cause__`` of the exception run() re-raises)."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return self.text


# ---------------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------------

class _Slots:
    """A worker's shared-memory buffers: files in /dev/shm, reused once the main process
    has copied what they hold (it sends "release")."""

    def __init__(self, prefix):
        self.prefix, self.free, self.all, self.count = prefix, [], {}, 0

    def take(self, nbytes):
        fits = [s for s in self.free if self.all[s][1] >= nbytes]
        if fits:
            name = min(fits, key=lambda s: self.all[s][1])
            self.free.remove(name)
            return name, self.all[name][0], None
        retired = None
        if self.free:  # none large enough: replace the smallest free one
            retired = min(self.free, key=lambda s: self.all[s][1])
            self.free.remove(retired)
            m, _ = self.all.pop(retired)
            m.close()
            os.unlink(os.path.join(_SHM_DIR, retired))
        name = f"{self.prefix}-{self.count}"
        self.count += 1
        size = max(nbytes, 1 << 16)
        size += size // 4  # room to grow a little
        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            m = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.all[name] = (m, size)
        return name, m, retired

    def release(self, name):
        if name in self.all and name not in self.free:
            self.free.append(name)

    def close(self):
        for name, (m, _) in self.all.items():
            m.close()
            try:
                os.unlink(os.path.join(_SHM_DIR, name))
            except OSError:
                pass
        self.all.clear()


def _write(slots, outputs):
    """Writes per-output lists of arrays into one slot; returns its description."""
    arrays = [[_as_array(a) for a in samples] for samples in outputs]
    offsets, total = [], 0
    for samples in arrays:
        row = []
        for a in samples:
            row.append((total, a.shape, a.dtype.str))
            total += (a.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
        offsets.append(row)
    name, m, retired = slots.take(total)
    for samples, row in zip(arrays, offsets):
        for a, (off, _, _) in zip(samples, row):
            if a.nbytes:
                np.frombuffer(m, np.uint8, a.nbytes, off)[:] = a.reshape(-1).view(np.uint8)
    return name, retired, offsets


def _as_array(x):
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.dtype.kind not in "biuf" or a.dtype.itemsize > 8:
        raise TypeError(f"the source returned an array of unsupported type {a.dtype}")
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _num_params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 0
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return 1
    return n


def _per_output(data, n):
    if n == 1:
        return [data]
    outs = list(data) if isinstance(data, (list, tuple)) else None
    if outs is None or len(outs) != n:
        raise ValueError(f"num_outputs={n}, but the source returned {type(data).__name__} "
                         f"rather than {n} outputs")
    return outs


def _split(batch):
    if isinstance(batch, np.ndarray):
        if batch.ndim == 0:
            raise ValueError("a batch must have a leading batch dimension")
        return [batch[i] for i in range(batch.shape[0])]
    return list(batch)


class _WorkerState:
    def __init__(self, specs):
        self.specs = specs          # per group: dict(kind, source, num_outputs, batch_info, cycle)
        self.iterators = {}         # group -> (epoch, iterator)

    def run(self, gid, epoch, it, lo, hi, batch_size):
        from .external_source import BatchInfo, SampleInfo
        spec = self.specs[gid]
        n, src, kind = spec["num_outputs"], spec["source"], spec["kind"]
        if kind == "sample":
            per = [_per_output(src(SampleInfo(it * batch_size + i, i, it, epoch)), n)
                   for i in range(lo, hi)]
            return [[p[k] for p in per] for k in range(n)]
        if kind == "batch":
            if _num_params(src) == 0:
                data = src()
            else:
                data = src(BatchInfo(it, epoch) if spec["batch_info"] else it)
        else:
            data = self._next(gid, epoch, spec)
        return [_split(o) for o in _per_output(data, n)]

    def _next(self, gid, epoch, spec):
        cur = self.iterators.get(gid)
        if cur is None or cur[0] != epoch:
            cur = (epoch, _new_iterator(spec["source"]))
            self.iterators[gid] = cur
        try:
            return next(cur[1])
        except StopIteration:
            if spec["cycle"] is True:
                cur = (epoch, _new_iterator(spec["source"]))
                self.iterators[gid] = cur
                return next(cur[1])
            raise


def _new_iterator(src):
    return iter(src()) if inspect.isgeneratorfunction(src) else iter(src)


def _exception_payload(e):
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    try:
        blob = pickle.dumps(e)
        pickle.loads(blob)
    except Exception:
        blob = None
    return blob, type(e).__name__, str(e), tb


def _worker_main(worker_id, specs, tasks, results, prefix):
    """A worker process: runs tasks until it reads None."""
    state, slots = _WorkerState(specs), _Slots(prefix)
    parent = os.getppid()
    try:
        while True:
            try:
                msg = tasks.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent:  # the pipeline's process died: do not linger
                    break
                continue
            if msg is None:
                break
            if msg[0] == "release":
                slots.release(msg[1])
                continue
            _, gid, epoch, it, lo, hi, batch_size = msg
            try:
                outputs = state.run(gid, epoch, it, lo, hi, batch_size)
                name, retired, meta = _write(slots, outputs)
                results.put(("ok", worker_id, gid, epoch, it, lo, name, retired, meta))
            except StopIteration:
                results.put(("stop", worker_id, gid, epoch, it, lo))
            except BaseException as e:  # noqa: B036 - reported, the worker goes on
                results.put(("error", worker_id, gid, epoch, it, lo, _exception_payload(e)))
    except KeyboardInterrupt:
        pass
    finally:
        slots.close()


# ---------------------------------------------------------------------------------
# Main side
# ---------------------------------------------------------------------------------

class WorkerPool:
    """The worker processes of one pipeline and the parallel sources they serve."""

    def __init__(self, groups, num_workers, start_method):
        import multiprocessing as mp
        if start_method not in ("fork", "spawn"):
            raise InvalidArgumentError(
                f"Pipeline: py_start_method must be 'fork' or 'spawn', got {start_method!r}")
        if int(num_workers) < 1:
            raise InvalidArgumentError(f"Pipeline: py_num_workers must be >= 1, got {num_workers}")
        self.groups = groups
        self.num_workers = int(num_workers)
        specs = []
        for gid, g in enumerate(groups):
            g.pool, g.gid = self, gid
            specs.append(g.worker_spec())
        ctx = mp.get_context(start_method)
        if start_method == "spawn":
            for g, spec in zip(groups, specs):
                try:
                    pickle.dumps(spec["source"])
                except Exception as e:
                    raise InvalidArgumentError(
                        f"{g.label}: parallel=True with py_start_method='spawn' needs a source "
                        f"that pickles (a module-level function or an instance of a module-level "
                        f"class): {type(e).__name__}: {e}") from None
        self.prefix = f"stoker-{os.getpid()}-{next(_pool_ids)}"
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(self.num_workers)]
        self.maps = {}  # slot name -> mmap in this process
        self.procs = []
        self.closed = False
        for w in range(self.num_workers):
            p = ctx.Process(target=_worker_main, name=f"stoker-source-worker-{w}",
                            args=(w, specs, self.tasks[w], self.results, f"{self.prefix}-{w}"),
                            daemon=True)
            p.start()
            self.procs.append(p)

    # ---- tasks and results ----

    def submit(self, worker, gid, epoch, it, lo, hi, batch_size):
        self.tasks[worker].put(("task", gid, epoch, it, lo, hi, batch_size))

    def release(self, worker, name):
        if not self.closed:
            self.tasks[worker].put(("release", name))

    def poll(self, block):
        """Hands the results that arrived to their groups; with `block`, waits for one."""
        while True:
            try:
                msg = self.results.get(timeout=0.5) if block else self.results.get_nowait()
            except queue.Empty:
                if not block:
                    return
                self._check_alive()
                continue
            self.groups[msg[2]].deliver(msg)
            block = False

    def _check_alive(self):
        for w, p in enumerate(self.procs):
            if not p.is_alive():
                labels = ", ".join(g.label for g in self.groups)
                raise StokerError(
                    f"{labels}: parallel source worker {w} (pid {p.pid}) died with exit code "
                    f"{p.exitcode}")

    def view(self, name, offset, shape, dtype):
        m = self.maps.get(name)
        if m is None:
            fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDONLY)
            try:
                m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            finally:
                os.close(fd)
            self.maps[name] = m
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(m, dt, count, offset).reshape(shape)

    def retire(self, name):
        m = self.maps.pop(name, None)
        if m is not None:
            try:
                m.close()
            except BufferError:  # a view still lives: the mapping goes with it
                self.maps[name + "#retired"] = m

    def close(self):
        if self.closed:
            return
        self.closed = True
        for q in self.tasks:
            try:
                q.put(None)
            except Exception:
                pass
        for p in self.procs:
            p.join(timeout=2)
            if p.is_alive():
                p.terminate()
                p.join(timeout=1)
        for m in self.maps.values():
            try:
                m.close()
            except BufferError:
                pass
        self.maps.clear()
        for q in self.tasks + [self.results]:
            q.close()
            q.cancel_join_thread()
        try:  # what a killed worker could not remove
            for f in os.listdir(_SHM_DIR):
                if f.startswith(self.prefix + "-"):
                    os.unlink(os.path.join(_SHM_DIR, f))
        except OSError:
            pass


class ParallelSourceGroup(SourceGroup):
    """The main-process side of one parallel external source: SourceGroup's interface
    (fill, at_end, check_has_data, reset, consumed) with the source run by the pool."""

    def __init__(self, source, num_outputs, cycle, batch, batch_info, layouts, label, depth):
        super().__init__(source, num_outputs, cycle, batch, batch_info, layouts, label)
        if source is None:
            raise InvalidArgumentError(f"{label}: parallel=True needs a source")
        if not self._callable and not batch:
            raise InvalidArgumentError(
                f"{label}: parallel=True with batch=False needs a callable taking a SampleInfo "
                "(an iterable or a generator gives whole batches: use batch=True)")
        if not self._callable and not (inspect.isgeneratorfunction(source) or hasattr(source, "__iter__")):
            raise InvalidArgumentError(f"{label}: the source is neither callable nor iterable")
        self.depth = 1 if depth is None else int(depth)
        if self.depth < 1:
            raise InvalidArgumentError(f"{label}: prefetch_queue_depth must be >= 1, got {depth}")
        self.kind = "iter" if not self._callable else ("batch" if batch else "sample")
        self.pool, self.gid = None, None
        self.scheduled = 0
        self.chunks = {}     # iteration -> {lo: ("ok", worker, name, meta) | ("stop",) | ("error", worker, payload)}
        self.stop_at = None  # the first iteration the source ended at
        self._expected = 1

    def worker_spec(self):
        return {"kind": self.kind, "source": self.source, "num_outputs": self.num_outputs,
                "batch_info": self.batch_info, "cycle": self.cycle}

    # ---- scheduling ----

    def _chunks_of(self, batch_size):
        """(worker, lo, hi) of every task of one iteration."""
        if self.kind != "sample":
            return None
        w = self.pool.num_workers
        step = -(-batch_size // w)
        return [(k, lo, min(lo + step, batch_size)) for k, lo in enumerate(range(0, batch_size, step))]

    def _schedule(self, batch_size, upto):
        while self.stop_at is None and self.scheduled < upto:
            it = self.scheduled
            if self.kind == "sample":
                for worker, lo, hi in self._chunks_of(batch_size):
                    self.pool.submit(worker, self.gid, self.epoch_idx, it, lo, hi, batch_size)
            else:
                worker = (it if self.kind == "batch" else self.gid) % self.pool.num_workers
                self.pool.submit(worker, self.gid, self.epoch_idx, it, 0, batch_size, batch_size)
            self.scheduled += 1
        self._expected = len(self._chunks_of(batch_size)) if self.kind == "sample" else 1

    def deliver(self, msg):
        status, worker, _gid, epoch, it, lo = msg[:6]
        if epoch != self.epoch_idx or (self.stop_at is not None and it > self.stop_at):
            if status == "ok":  # a result nobody will feed: give its buffer back
                self._drop(worker, msg[6], msg[7])
            return
        if status == "ok":
            entry = ("ok", worker, msg[6], msg[8])
            if msg[7]:
                self.pool.retire(msg[7])
        elif status == "stop":
            entry = ("stop",)
            self.stop_at = it if self.stop_at is None else min(self.stop_at, it)
        else:
            entry = ("error", worker, msg[6])
        self.chunks.setdefault(it, {})[lo] = entry

    def _drop(self, worker, name, retired):
        if retired:
            self.pool.retire(retired)
        self.pool.release(worker, name)

    def _complete(self, it):
        got = self.chunks.get(it, {})
        if any(e[0] == "stop" for e in got.values()):
            return True
        return len(got) >= self._expected

    # ---- the SourceGroup interface ----

    def fill(self, cpipe, batch_size, ahead):
        if self.exhausted:
            return
        if self.pool is None:
            raise StokerError(f"{self.label}: the parallel source's workers are not running "
                              "(the pipeline is closed)")
        self._schedule(batch_size, self.consumed + ahead + self.depth)
        while not self.exhausted and self.fed - self.consumed < ahead:
            self.pool.poll(block=False)
            if not (self._complete(self.fed) or self._stopped()):
                if self.fed > self.consumed:
                    break  # run() has a batch; feed the rest later
                while not (self._complete(self.fed) or self._stopped()):
                    self.pool.poll(block=True)
            if self._stopped():
                self._end_epoch()
                break
            if self.fed > self.consumed and any(
                    e[0] == "error" for e in self.chunks.get(self.fed, {}).values()):
                break  # raised by the run() that asks for this batch, not before
            self._feed_iteration(cpipe, self.fed)
            self._schedule(batch_size, self.consumed + ahead + self.depth)

    def _stopped(self):
        return self.stop_at is not None and self.fed >= self.stop_at

    def _feed_iteration(self, cpipe, it):
        got = self.chunks.pop(it)
        for lo in sorted(got):
            if got[lo][0] == "error":
                for e in got.values():  # give the other chunks' buffers back first
                    if e[0] == "ok":
                        self.pool.release(e[1], e[2])
                self._raise(got[lo][1], got[lo][2], it)
        per_output = [[] for _ in range(self.num_outputs)]
        for lo in sorted(got):
            _, worker, name, meta = got[lo]
            for k, row in enumerate(meta):
                per_output[k].extend(self.pool.view(name, off, shape, dt) for off, shape, dt in row)
        try:
            self.feed(cpipe, per_output)  # copies into the C queue
        finally:
            del per_output
            for lo in got:
                self.pool.release(got[lo][1], got[lo][2])
        self.iteration = it + 1

    def _raise(self, worker, payload, it):
        blob, tname, text, tb = payload
        cause = RemoteTraceback(f"\n\nThe traceback in worker {worker}:\n\n{tb}")
        exc = None
        if blob is not None:
            try:
                exc = pickle.loads(blob)
            except Exception:
                exc = None
        if exc is None:
            exc = StokerError(f"{self.label}: the source raised {tname}: {text} (batch {it}, "
                              f"worker {worker})")
        raise exc from cause

    def _end_epoch(self):
        self.exhausted = True
        for it in list(self.chunks):
            for e in self.chunks.pop(it).values():
                if e[0] == "ok":
                    self.pool.release(e[1], e[2])

    def reset(self):
        if not self.exhausted:
            return
        self._end_epoch()
        self.exhausted = False
        self.epoch_idx += 1
        self.iteration = 0
        self.fed = self.consumed = 0
        self.scheduled = 0
        self.stop_at = None
