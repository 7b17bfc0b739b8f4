#!/usr/bin/env python3
"""Runs benchmark commands in interleaved rounds and compares them within each round.

The GPU machine's speed drifts more between minutes than the variants being compared
differ (bare nvJPEG alone swings 26-40k images/s, bench/RESULTS.md), so each round runs
every command once, in order, and each command is judged by its ratio to the reference
command of the same round; the summary gives the median of those ratios over the rounds.

Interference on a shared machine only slows a run down (bench/RESULTS.md saw single runs
at half speed, at any position in a round), so the summary also gives each command's best
round and the ratio of the bests, the estimate least touched by such events.

A command's rate is read from its output: gpu_bench's "RESULT ... = N img/s",
the top-level "images_per_s" of the last JSON line that has one, else stoker bench's
"N images/s" line.
--json FILE writes every command and its rate in every round (bench/perf_table.py makes
Markdown of it).

usage: bench/interleave.py [--rounds N] [--ref LABEL] [--show REGEX] [--json FILE] LABEL=COMMAND [...]
  (COMMAND is run by the shell; the first label is the reference unless --ref names one;
  --show prints, beside each round's rate, what REGEX matches in the command's output,
  e.g. the time per call of nvJPEG: --show '[0-9.]+ ms per call|decode_hw_call +[0-9.]+')
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys

RATE_RES = [re.compile(r"= ([0-9.]+) img/s"), re.compile(r"^\s*([0-9.]+) images/s", re.M),
            re.compile(r'"images_per_s": ([0-9.]+)')]


def rate_of(output):
    # a JSON line's top-level "images_per_s" (stoker bench --json also gives one per epoch,
    # inside its "epochs" list, after the run's own: a regex taking the last match read the
    # last epoch's rate)
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("images_per_s"), (int, float)):
                return float(rec["images_per_s"])
    for rx in RATE_RES:
        found = rx.findall(output)
        if found:
            return float(found[-1])
    return None


def shown(regex, output):
    """What `regex` matches in a command's output (whole matches, whitespace squeezed)."""
    return [" ".join(m.group(0).split()) for m in re.finditer(regex, output, re.M)]


def run(cmd, timeout):
    """Output, error output and exit status of a shell command; on a timeout its whole
    process group is killed (background loops it started included)."""
    p = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return out, err, p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return out, err + f"\n(killed after {timeout:.0f} s)", "timeout"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ref", default=None, help="the label the others are compared with")
    ap.add_argument("--timeout", type=float, default=180, help="seconds a command may run (its process group is killed)")
    ap.add_argument("--show", default=None, help="a regular expression: its matches in each output are printed")
    ap.add_argument("--json", default=None, help="write the commands and every round's rates to this file")
    ap.add_argument("runs", nargs="+", help="LABEL=COMMAND")
    a = ap.parse_args()
    runs = []
    for r in a.runs:
        label, sep, cmd = r.partition("=")
        if not sep or not label or not cmd:
            sys.exit(f"interleave: expected LABEL=COMMAND, got {r!r}")
        runs.append((label, cmd))
    ref = a.ref or runs[0][0]
    if ref not in {label for label, _ in runs}:
        sys.exit(f"interleave: --ref {ref!r} names no command")
    rates = {label: [] for label, _ in runs}
    for rnd in range(1, a.rounds + 1):
        for label, cmd in runs:
            out, err, code = run(cmd, a.timeout)
            r = rate_of(out)
            rates[label].append(r)
            note = "" if r is not None else f"  (no rate; exit {code}: {(out + err)[-300:]!r})"
            if a.show:
                note += "".join(f"  [{m}]" for m in shown(a.show, out))
            print(f"round {rnd} {label:<28} {r if r is not None else float('nan'):10.0f}{note}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": a.rounds, "runs": [{"label": label, "command": cmd, "rates": rates[label]}
                                                    for label, cmd in runs]}, f, indent=1)
    print(f"\nsummary over {a.rounds} rounds (ratio: to {ref} in the same round)")
    print(f"{'command':<28} {'median':>10} {'min':>10} {'max':>10} {'ratio med':>10} {'ratio min':>10} "
          f"{'ratio max':>10} {'best/best':>10}")
    ref_best = max([x for x in rates[ref] if x is not None], default=None)
    for label, _ in runs:
        xs = [x for x in rates[label] if x is not None]
        ratios = [x / y for x, y in zip(rates[label], rates[ref]) if x is not None and y]
        if not xs:
            print(f"{label:<28} no rates")
            continue
        rs = (statistics.median(ratios), min(ratios), max(ratios)) if ratios else (float("nan"),) * 3
        best_ratio = max(xs) / ref_best if ref_best else float("nan")
        print(f"{label:<28} {statistics.median(xs):10.0f} {min(xs):10.0f} {max(xs):10.0f} "
              f"{rs[0]:10.3f} {rs[1]:10.3f} {rs[2]:10.3f} {best_ratio:10.3f}")


if __name__ == "__main__":
    main()
