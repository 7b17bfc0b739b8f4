#!/usr/bin/env python3
"""The sample cache (issue 22): per-epoch throughput of the `cached` preset (decode +
resize_shorter 256 cached, then random_resized_crop 224 + mirror + normalise) with the
cache in memory, on disk, and off (--cache-bytes 0: the same graph, nothing kept), in
interleaved rounds. Prints epoch 1 and the mean of epochs 2+ per configuration, as
medians over the rounds, and the speed-up of epochs 2+ over the uncached pipeline.

usage: bench_cache.py [--data DIR] [--rounds N] [--epochs N] [--threads N] [--batch-size N]
--data defaults to bench/data/demo (scripts/demo.sh makes it: 512 ImageNet-like JPEGs).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))


def bench(args, extra):
    cmd = [os.path.join(BUILD, "stoker"), "bench", "--data", args.data, "--pipeline", "cached",
           "--epochs", str(args.epochs), "--threads", str(args.threads), "--batch-size",
           str(args.batch_size), "--json", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "demo"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        ap.error(f"no data set at {args.data}: run scripts/demo.sh or "
                 "scripts/make_dataset.py DIR --count 512 --seed 1, or pass --data")
    rates = {"off": [], "memory": [], "disk": []}
    for r in range(args.rounds):
        disk = tempfile.mkdtemp(prefix="stk-cache-")
        try:
            for name, extra in (("off", ["--cache-bytes", "0"]), ("memory", []),
                                ("disk", ["--cache-dir", disk])):
                res = bench(args, extra)
                e = [x["images_per_s"] for x in res["epochs"]]
                rates[name].append((e[0], statistics.mean(e[1:]), res["cache"]))
                print(f"round {r + 1} {name:6s}: " + ", ".join(f"{x:.0f}" for x in e) +
                      f" images/s per epoch; cache {res['cache']}", flush=True)
        finally:
            shutil.rmtree(disk, ignore_errors=True)
    off_later = statistics.median(x[1] for x in rates["off"])
    print("\nconfiguration | epoch 1 images/s | epochs 2+ images/s | epochs 2+ / uncached")
    for name, rs in rates.items():
        first = statistics.median(x[0] for x in rs)
        later = statistics.median(x[1] for x in rs)
        print(f"{name:6s} | {first:.0f} | {later:.0f} | {later / off_later:.2f}x")


if __name__ == "__main__":
    main()
