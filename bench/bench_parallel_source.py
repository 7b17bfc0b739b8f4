"""external_source(parallel=True): a CPU-bound per-sample Python callable run by worker
processes, stoker against DALI on the same callable, rounds alternated (A B A B) in one
process so that both see the same machine state.

    python bench/bench_parallel_source.py [--workers 4] [--batches 20] [--rounds 3]

Run it with a Python that has both packages (e.g. DALI's venv with stoker's python/ on
the path: `/path/to/dali-venv/bin/python bench/bench_parallel_source.py`); without DALI
only stoker's figures are printed. stoker's serial source (parallel=False) is measured
too, as the baseline the workers must beat.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

BATCH = 32
WORK = 60_000  # Python-level loop iterations per sample: CPU-bound, holds the GIL


def sample(info):
    """One 64x64x3 uint8 sample after a CPU-bound Python computation."""
    acc = 0
    for i in range(WORK):
        acc = (acc * 31 + i + info.idx_in_epoch) & 0xFFFF
    return np.full((64, 64, 3), acc & 0xFF, np.uint8)


def make(lib, parallel, workers):
    if lib == "dali":
        from nvidia.dali import fn, pipeline_def
        kw = {"device_id": None}
    else:
        from stoker import fn, pipeline_def
        kw = {}
    if parallel:
        kw.update(py_num_workers=workers, py_start_method="fork")

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=1, prefetch_queue_depth=2, **kw)
    def pipe():
        return fn.external_source(source=sample, batch=False, parallel=parallel, layout="HWC")
    p = pipe()
    p.build()
    return p


def timed(lib, parallel, workers, batches):
    p = make(lib, parallel, workers)
    p.run()  # warm-up: workers started, first batch out
    t0 = time.perf_counter()
    for _ in range(batches):
        (out,) = p.run()
    dt = time.perf_counter() - t0
    check = np.asarray(out.as_cpu().at(0) if hasattr(out, "as_cpu") else out.at(0))[0, 0, 0]
    del out, p
    return dt, int(check)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    try:
        import nvidia.dali  # noqa: F401
        libs = ["stoker", "dali"]
    except ImportError:
        libs = ["stoker"]
    arms = [("stoker", False)] + [(lib, True) for lib in libs]
    times = {arm: [] for arm in arms}
    checks = {}
    for r in range(a.rounds):
        order = arms if r % 2 == 0 else arms[::-1]
        for lib, par in order:
            dt, check = timed(lib, par, a.workers, a.batches)
            times[(lib, par)].append(dt)
            checks[(lib, par)] = check
    print(f"{a.batches} batches of {BATCH} samples, {WORK} Python loop steps per sample, "
          f"{a.workers} workers, {os.cpu_count()} CPUs")
    for (lib, par), ts in times.items():
        name = f"{lib} {'parallel' if par else 'serial'}"
        print(f"  {name:18s} median {np.median(ts):6.3f} s  (rounds: {', '.join(f'{t:.3f}' for t in ts)})"
              f"  last sample byte {checks[(lib, par)]}")
    if ("dali", True) in times:
        print(f"  stoker parallel / DALI parallel: "
              f"{np.median(times[('stoker', True)]) / np.median(times[('dali', True)]):.2f}")


if __name__ == "__main__":
    main()
