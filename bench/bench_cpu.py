#!/usr/bin/env python3
"""CPU benchmark of issue 2: stoker's basic pipeline against (a) the same work in Pillow +
NumPy on N processes (what a torchvision DataLoader with N workers does: PIL decode,
RandomResizedCrop with bilinear antialiased resize, random flip, normalise to float32
CHW) and (b) bare full-image libjpeg-turbo decoding of the same files on N threads.

usage: bench_cpu.py [--data DIR] [--count N] [--threads N] [--json OUT]
Make the machine quiet first: the figures are wall-clock throughput.
"""
import argparse
import io
import json
import math
import multiprocessing as mp
import os
import random
import subprocess
import sys
import time

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
MEAN = np.array([123.675, 116.28, 103.53], np.float32).reshape(3, 1, 1)
STD = np.array([58.395, 57.12, 57.375], np.float32).reshape(3, 1, 1)


def rrc_params(w, h, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params."""
    area = w * h
    for _ in range(10):
        target = area * rng.uniform(*scale)
        ar = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
        cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, w - cw), rng.randint(0, h - ch), cw, ch
    return 0, 0, w, h


def pil_sample(path, rng):
    with open(path, "rb") as f:
        img = Image.open(io.BytesIO(f.read())).convert("RGB")
    x, y, cw, ch = rrc_params(img.width, img.height, rng)
    img = img.resize((224, 224), Image.BILINEAR, box=(x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    a = np.asarray(img, np.float32).transpose(2, 0, 1)
    return (a - MEAN) / STD


def pil_worker(args):
    paths, seed = args
    rng = random.Random(seed)
    for p in paths:
        pil_sample(p, rng)
    return len(paths)


def bench_pil(files, procs, passes=2):
    jobs = files * passes
    chunks = [(jobs[i::procs * 8], i) for i in range(procs * 8)]
    with mp.Pool(procs) as pool:
        pool.map(pil_worker, [(files[:8], 0)] * procs)  # warm-up
        t0 = time.perf_counter()
        n = sum(pool.map(pil_worker, chunks))
        dt = time.perf_counter() - t0
    return {"images_per_s": n / dt, "images": n, "seconds": dt, "processes": procs}


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "imagenet-like"))
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_dataset.py"), a.data,
                        "--count", str(a.count), "--seed", "3"], check=True)
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(a.data) for f in fs if f.endswith(".jpg"))
    stoker = os.path.join(BUILD, "stoker")
    res = {}
    res["bare_decode"] = run_json([os.path.join(BUILD, "bare_decode"), a.data, str(a.threads), "2"])
    for preset in ("decode", "basic", "basic-full"):
        res["stoker_" + preset] = run_json([stoker, "bench", "--data", a.data, "--pipeline", preset,
                                            "--threads", str(a.threads), "--batch-size", "32",
                                            "--epochs", "2", "--json"])
    res["pillow_numpy"] = bench_pil(files, a.threads)
    base = res["bare_decode"]["images_per_s"]
    pil = res["pillow_numpy"]["images_per_s"]
    print(f"{len(files)} files, {a.threads} threads/processes")
    print(f"{'what':<34}{'images/s':>10}{'vs bare':>9}{'vs PIL':>8}")
    for k, v in res.items():
        ips = v["images_per_s"]
        print(f"{k:<34}{ips:>10.1f}{ips / base:>9.2f}{ips / pil:>8.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
