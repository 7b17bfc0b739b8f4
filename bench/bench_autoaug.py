#!/usr/bin/env python3
"""CPU benchmark of issue 6: stoker's basic pipeline with RandAugment (n=2, m=9), AutoAugment
(ImageNet) and TrivialAugmentWide (CLI presets randaugment / autoaugment / trivialaugment,
the fused auto_augment.apply) against the same work in Pillow + NumPy on N processes (what
a torchvision DataLoader with N workers does with transforms.RandAugment on PIL images:
decode, RandomResizedCrop, flip, RandAugment with torchvision's magnitudes and Pillow's
operations, normalise to float32 CHW). torch/timm are not needed.

usage: bench_autoaug.py [--data DIR] [--threads N] [--json OUT]
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import random
import sys

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cpu  # noqa: E402  (dataset, PIL crop and timing helpers)

ROOT = bench_cpu.ROOT
BUILD = bench_cpu.BUILD


def _affine(img, data):
    return img.transform(img.size, Image.AFFINE, data, Image.NEAREST, fillcolor=(0, 0, 0))


def rand_augment(img, rng, n=2, m=9, bins=31):
    """torchvision.transforms.RandAugment's ops and magnitudes on a PIL image."""
    w, h = img.size
    for _ in range(n):
        op = rng.randrange(14)
        sign = -1 if rng.random() < 0.5 else 1
        lin = lambda hi: hi * m / (bins - 1)  # noqa: E731
        if op == 1:
            img = _affine(img, (1, sign * lin(0.3), 0, 0, 1, 0))
        elif op == 2:
            img = _affine(img, (1, 0, 0, sign * lin(0.3), 1, 0))
        elif op == 3:
            img = _affine(img, (1, 0, -sign * int(lin(150 / 331 * w)), 0, 1, 0))
        elif op == 4:
            img = _affine(img, (1, 0, 0, 0, 1, -sign * int(lin(150 / 331 * h))))
        elif op == 5:
            img = img.rotate(sign * lin(30), resample=Image.NEAREST, fillcolor=(0, 0, 0))
        elif 6 <= op <= 9:
            enh = (ImageEnhance.Brightness, ImageEnhance.Color, ImageEnhance.Contrast,
                   ImageEnhance.Sharpness)[op - 6]
            img = enh(img).enhance(1 + sign * lin(0.9))
        elif op == 10:
            img = ImageOps.posterize(img, 8 - round(m / ((bins - 1) / 4)))
        elif op == 11:
            img = ImageOps.solarize(img, 255 - lin(255))
        elif op == 12:
            img = ImageOps.autocontrast(img)
        elif op == 13:
            img = ImageOps.equalize(img)
    return img


def sample(path, rng):
    img = Image.open(path).convert("RGB")
    x, y, cw, ch = bench_cpu.rrc_params(*img.size, rng)
    img = img.resize((224, 224), Image.BILINEAR, box=(x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    img = rand_augment(img, rng)
    a = np.asarray(img, np.float32).transpose(2, 0, 1)
    return (a - bench_cpu.MEAN) / bench_cpu.STD


def worker(args):
    paths, seed = args
    rng = random.Random(seed)
    for p in paths:
        sample(p, rng)
    return len(paths)


def bench_pil(files, procs):
    chunks = [(files[i::procs * 8], i) for i in range(procs * 8)]
    import time
    with mp.Pool(procs) as pool:
        pool.map(worker, [(files[:4], 0)] * procs)
        t0 = time.perf_counter()
        n = sum(pool.map(worker, chunks))
        dt = time.perf_counter() - t0
    return {"images_per_s": n / dt, "images": n, "seconds": dt, "processes": procs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "imagenet-like"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json")
    a = ap.parse_args()
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(a.data) for f in fs if f.endswith(".jpg"))
    stoker = os.path.join(BUILD, "stoker")
    res = {}
    for preset in ("basic", "randaugment", "autoaugment", "trivialaugment"):
        res["stoker_" + preset] = bench_cpu.run_json(
            [stoker, "bench", "--data", a.data, "--pipeline", preset, "--threads", str(a.threads),
             "--batch-size", "32", "--epochs", "1", "--json"])
    res["pillow_randaugment"] = bench_pil(files, a.threads)
    pil = res["pillow_randaugment"]["images_per_s"]
    base = res["stoker_basic"]["images_per_s"]
    print(f"{len(files)} files, {a.threads} threads/processes")
    print(f"{'what':<26}{'images/s':>10}{'vs basic':>10}{'vs PIL RA':>11}")
    for k, v in res.items():
        ips = v["images_per_s"]
        print(f"{k:<26}{ips:>10.1f}{ips / base:>10.2f}{ips / pil:>11.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
