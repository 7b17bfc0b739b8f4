#!/usr/bin/env python3
"""Interleaved, repeated timings of `stoker bench` pipelines on the GPU machine.

Pipeline throughput on a shared GPU machine drifts by 10-20% between runs (clocks, page
cache, the first pipeline of a process tree paying for warm-up), so comparing two
pipelines from single runs is noise. This runs every pipeline once per round, for several
rounds, in the same order, and reports each one's median and its ratio to the first
(the reference, e.g. basic@gpu), and optionally to a ceiling measured in the same session
(bare nvJPEG from gpu_bench), or measures that ceiling itself in every round (--bare), so
each pipeline's share of bare decoding is a median of same-round ratios.

usage: bench_gpu_presets.py --stoker build/stoker --data DIR [--rounds 3] [--epochs 2]
                            [--ceiling IMG_PER_S | --bare build/gpu_bench [--bare-pinned]]
                            [--env NAME=VALUE:LABEL ...] PIPELINE...
PIPELINE: a preset name (run with --device gpu) or a pipeline file. --env runs the first
pipeline once more per round with an environment variable set (an A/B of a knob).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


STAGES = []  # stage_ms_per_batch of every run_once, in order


def stage_note():
    """'gpu_stage G ms, engines' call H ms (H/G)' for the last run, where it has those timers."""
    st = STAGES[-1] if STAGES else {}
    g, h, d = st.get("gpu_stage"), st.get("decode_hw_call"), st.get("decode_stage")
    if d and h:  # the decoders on their own thread: the engines' call is inside decode_stage
        return f"; decode_stage {d:.2f} ms/batch, engines' call {h:.2f} ({h / d:.0%}), gpu_stage {g:.2f}"
    return f"; gpu_stage {g:.2f} ms/batch, engines' call {h:.2f} ({h / g:.0%})" if g and h else ""


def run_once(stoker, data, pipeline, epochs, batch, threads, env=None, device="gpu"):
    cmd = [stoker, "bench", "--data", data, "--pipeline", pipeline, "--device", device, "--batch-size", str(batch),
           "--threads", str(threads), "--epochs", str(epochs), "--json"]
    e = dict(os.environ, **(env or {}))
    out = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=300)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            r = json.loads(line)
            STAGES.append(r.get("stage_ms_per_batch", {}))
            return r["images_per_s"]
    raise RuntimeError(f"{pipeline}: no result (exit {out.returncode}): {out.stderr[-400:]}")


def run_bare(gpu_bench, data, epochs, batch, threads, pinned=False):
    """images/s of bare nvJPEG hardware batched decoding (gpu_bench --only bare), from the
    files' bytes in pageable memory or (pinned) in page-locked copies."""
    cmd = [gpu_bench, data, "--batch", str(batch), "--epochs", str(epochs), "--threads", str(threads), "--only", "bare"]
    cmd += ["--bare-pinned"] if pinned else []
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT bare_nvjpeg_hw"):
            return float(line.split("=")[-1].split()[0])
    raise RuntimeError(f"gpu_bench --only bare: no result (exit {out.returncode}): {out.stdout[-300:]}{out.stderr[-300:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stoker", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=15)
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--ceiling", type=float, help="images/s of the ceiling measured in the same session")
    ap.add_argument("--bare", metavar="GPU_BENCH", help="measure bare nvJPEG (gpu_bench --only bare) in every round")
    ap.add_argument("--bare-pinned", action="store_true",
                    help="with --bare: also bare nvJPEG from pinned copies of the files, a second ceiling")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE:LABEL, an A/B of the first pipeline")
    ap.add_argument("pipelines", nargs="+")
    a = ap.parse_args()
    runs = [(p, p, None) for p in a.pipelines]
    for spec in a.env:
        kv, label = spec.split(":", 1)
        k, v = kv.split("=", 1)
        runs.append((f"{a.pipelines[0]} [{label}]", a.pipelines[0], {k: v}))
    results = {label: [] for label, _, _ in runs}
    bare, bare_p = [], []
    run_once(a.stoker, a.data, a.pipelines[0], 1, a.batch, a.threads, None, a.device)  # warm-up: page cache, clocks
    for r in range(a.rounds):
        if a.bare:
            try:
                bare.append(run_bare(a.bare, a.data, a.epochs * 2, a.batch, a.threads))
                print(f"round {r}: bare nvJPEG {bare[-1]:.0f} img/s", flush=True)
            except Exception as exc:
                print(f"round {r}: bare: {exc}", file=sys.stderr)
                bare.append(None)
        if a.bare and a.bare_pinned:
            try:
                bare_p.append(run_bare(a.bare, a.data, a.epochs * 2, a.batch, a.threads, pinned=True))
                print(f"round {r}: bare nvJPEG, pinned input {bare_p[-1]:.0f} img/s", flush=True)
            except Exception as exc:
                print(f"round {r}: bare pinned: {exc}", file=sys.stderr)
                bare_p.append(None)
        for label, pipe, env in runs:
            try:
                results[label].append(run_once(a.stoker, a.data, pipe, a.epochs, a.batch, a.threads, env, a.device))
            except Exception as exc:  # report and go on: one broken pipeline must not hide the others
                print(f"round {r}: {label}: {exc}", file=sys.stderr)
                results[label].append(None)
            else:
                print(f"round {r}: {label} {results[label][-1]:.0f} img/s{stage_note()}", flush=True)
    ceiling = a.ceiling
    if a.bare and any(b for b in bare):
        ceiling = statistics.median([b for b in bare if b])
        print(f"RESULT {'bare nvJPEG (gpu_bench --only bare)':48s} {ceiling:12.0f} "
              f"{' '.join(f'{x:.0f}' if x else '-' for x in bare):>28s}")
    if bare_p and any(b for b in bare_p):
        print(f"RESULT {'bare nvJPEG, pinned input (--bare-pinned)':48s} {statistics.median([b for b in bare_p if b]):12.0f} "
              f"{' '.join(f'{x:.0f}' if x else '-' for x in bare_p):>28s}")
    ok = {label: [x for x in v if x] for label, v in results.items()}
    ref = statistics.median(ok[runs[0][0]]) if ok[runs[0][0]] else None
    print(f"{'pipeline':48s} {'median img/s':>12s} {'runs':>28s} {'vs first':>9s} {'time +%':>8s}"
          + (f" {'of ceiling':>10s}" if ceiling else "")
          + (f" {'same-round':>10s}" if a.bare else "")
          + (f" {'vs pinned':>10s}" if bare_p else ""))
    for label, _, _ in runs:
        v = ok[label]
        if not v:
            print(f"{label:48s} {'FAILED':>12s}")
            continue
        m = statistics.median(v)
        extra = (ref / m - 1) * 100 if ref else float("nan")
        line = (f"{label:48s} {m:12.0f} {' '.join(f'{x:.0f}' for x in v):>28s} {m / ref:9.3f} {extra:+8.1f}")
        if ceiling:
            line += f" {m / ceiling:10.1%}"
        if a.bare:  # the median of this pipeline's ratio to the bare decode of the same round
            pairs = [x / b for x, b in zip(results[label], bare) if x and b]
            line += f" {statistics.median(pairs):10.1%}" if pairs else f" {'-':>10s}"
        if bare_p:  # the same against the pinned-input ceiling
            pairs = [x / b for x, b in zip(results[label], bare_p) if x and b]
            line += f" {statistics.median(pairs):10.1%}" if pairs else f" {'-':>10s}"
        print("RESULT " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
