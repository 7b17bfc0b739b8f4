#!/usr/bin/env python3
"""Where a running program's threads spend their time, without a profiler.

The GPU machine has no perf, gdb or Nsight Systems (the device tool's KINDS.md), but it
has cuda-gdb, which attaches to a process and prints every thread's native stack, and
/proc, which counts every thread's CPU time. This script starts a command, lets it warm
up, then for a window of time:
  - reads each thread's CPU time (user + system) at the window's start and end, so a
    thread that was inside a library call all along shows whether that call computed
    (CPU time close to the window) or waited (CPU time close to zero);
  - samples every thread's stack SAMPLES times (a poor man's profiler: each attach stops
    the process for a moment, so the samples are few and coarse, but unbiased in time).
It prints, for the threads whose stacks contain MATCH (a function name, e.g.
nvjpegDecodeBatched), the innermost frames seen and how often, and for every thread its
share of one core over the window.

usage: bench/tools/stack_sample.py [--warmup S] [--window S] [--samples N] [--match NAME]
                               [--depth K] [--debugger cuda-gdb] [--let-finish] -- CMD ARGS...
(--samples 0: CPU times only, the command undisturbed. cuda-gdb's attach takes a lock in
the CUDA driver, so a thread inside a driver call is caught waiting on it: the stacks say
which library call a thread was in, not whether it computed or waited; the CPU times say
that.)
"""
import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")
THREAD_RE = re.compile(r"^Thread \S+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)")
FRAME_RE = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*?\)(?: (?:from|at) (\S+))?")


def tasks(pid):
    """The thread ids of pid ([] once it has ended)."""
    try:
        return os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []


def thread_cpu(pid):
    """{tid: CPU seconds (user + system)} of every thread of pid."""
    out = {}
    for tid in tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return out


def thread_names(pid):
    names = {}
    for tid in tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[int(tid)] = f.read().strip()
        except (FileNotFoundError, ProcessLookupError):
            pass
    return names


def parse_stacks(text):
    """{tid: [(function, library), ...] innermost first} from 'thread apply all bt'."""
    stacks, tid = {}, None
    for line in text.splitlines():
        m = THREAD_RE.match(line)
        if m:
            tid = int(m.group(1))
            stacks[tid] = []
            continue
        m = FRAME_RE.match(line)
        if m and tid is not None:
            lib = os.path.basename(m.group(2)) if m.group(2) else ""
            stacks[tid].append((m.group(1), lib))
    return stacks


def sample(debugger, pid, depth):
    cmd = [debugger, "-q", "-batch", "-nx", "-p", str(pid), "-ex", "set pagination off",
           "-ex", f"thread apply all bt {depth}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return {}
    return parse_stacks(r.stdout)


def label(frame):
    fn, lib = frame
    return f"{fn} [{lib}]" if lib else fn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--match", default="nvjpegDecodeBatched")
    ap.add_argument("--depth", type=int, default=40)
    ap.add_argument("--let-finish", action="store_true",
                    help="wait for the command to end (its own summary) instead of interrupting it")
    ap.add_argument("--debugger", default=shutil.which("cuda-gdb") or shutil.which("gdb") or "cuda-gdb")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    proc = subprocess.Popen(cmd)
    time.sleep(a.warmup)
    if proc.poll() is not None:
        print(f"stack_sample: the command ended during the warm-up (exit {proc.returncode})")
        return 1
    t0, cpu0 = time.monotonic(), thread_cpu(proc.pid)
    samples = []
    for k in range(a.samples):
        due = t0 + a.window * k / a.samples
        time.sleep(max(0.0, due - time.monotonic()))
        if proc.poll() is not None:
            break
        samples.append(sample(a.debugger, proc.pid, a.depth))
    time.sleep(max(0.0, t0 + a.window - time.monotonic()))
    t1, cpu1, names = time.monotonic(), thread_cpu(proc.pid), thread_names(proc.pid)
    if proc.poll() is None and a.let_finish:
        proc.wait()
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    wall = t1 - t0
    print(f"\nstack_sample: {len(samples)} stack samples over {wall:.1f} s of {' '.join(cmd)[:160]}")

    # threads whose stack held MATCH in any sample, and what they were doing then
    inner, frames_in_call, matched = collections.Counter(), collections.Counter(), set()
    in_call = 0
    for s in samples:
        for tid, st in s.items():
            functions = [f for f, _ in st]
            if a.match not in functions:
                continue
            matched.add(tid)
            in_call += 1
            cut = functions.index(a.match)
            inner[label(st[0])] += 1
            for f in set(st[:cut]):  # every frame between the innermost and the call
                frames_in_call[label(f)] += 1
    print(f"threads inside {a.match}: {in_call} thread-samples in {len(samples)} samples")
    print("innermost frame when inside it:")
    for f, c in inner.most_common(15):
        print(f"  {c:3d}  {f}")
    print(f"frames seen between the innermost and {a.match} (samples holding each):")
    for f, c in frames_in_call.most_common(25):
        print(f"  {c:3d}  {f}")

    print(f"\nCPU time per thread over the window ({wall:.1f} s), busiest first:")
    busy = sorted(((cpu1.get(t, 0) - cpu0.get(t, 0), t) for t in cpu1), reverse=True)
    for sec, tid in busy[:24]:
        tag = f"  <- inside {a.match} in some samples" if tid in matched else ""
        print(f"  tid {tid:7d} {names.get(tid, '?'):15s} {100 * sec / wall:6.1f}% of a core{tag}")
    total = sum(s for s, _ in busy)
    print(f"  all {len(busy)} threads: {total / wall:.2f} cores")
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for sec, tid in busy:
        group = re.sub(r"-?\d+$", "", names.get(tid, "?"))
        by_name[group][0] += 1
        by_name[group][1] += sec
    print("  by name (numbers dropped): " + ", ".join(
        f"{g} x{n} {100 * sec / wall:.0f}%" for g, (n, sec) in sorted(by_name.items(), key=lambda kv: -kv[1][1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
