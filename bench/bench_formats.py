#!/usr/bin/env python3
"""Read throughput of stoker's dataset formats (issue 7): loose JPEG files (readers.file),
WebDataset tar shards (readers.webdataset), TFRecord files (readers.tfrecord) and
pre-decoded .npy arrays (readers.numpy, mapped and read), each through `stoker bench`
with a pipeline that only reads, and then with the basic training pipeline fed from it.

The page cache is warm (one untimed pass first). MB/s counts the sample bytes the reader
hands out (the JPEG files' bytes, or the arrays' bytes).

usage: bench_formats.py [--data DIR] [--count N] [--npy-count N] [--threads N]
                        [--batch-size N] [--epochs N] [--repeat N] [--json OUT]
--repeat runs each measurement N times and keeps the best (for a noisy machine).
The shards and arrays are made under bench/data/formats/ on first use (`stoker convert`).
Set STOKER to the stoker binary (default: $STK_BUILD_DIR/stoker or build/stoker).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
STOKER = os.environ.get("STOKER", os.path.join(BUILD, "stoker"))
NORMALIZE = "mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375]"

READERS = {
    "loose files": 'jpegs, labels = readers.file(file_root="${DATA}", name="Reader")',
    "tar shards": 'jpegs, labels = readers.webdataset(paths="${DATA}/shard-{000000..%06d}.tar", '
                  'index_paths="${DATA}/shard-{000000..%06d}.idx", ext=["jpg", "cls"], name="Reader")',
    "TFRecord": 'jpegs, labels = readers.tfrecord(path="${DATA}/shard-{000000..%06d}.tfrecord", '
                'index_path="${DATA}/shard-{000000..%06d}.idx", '
                'feature_names=["image/encoded", "image/class/label"], '
                'feature_types=["string", "int64"], name="Reader")',
    ".npy (mmap)": 'images = readers.numpy(file_root="${DATA}", name="Reader")',
    ".npy (read)": 'images = readers.numpy(file_root="${DATA}", dont_use_mmap=true, name="Reader")',
}

BASIC_JPEG = (
    'crops = decoders.image_random_crop(jpegs, output_type="RGB", size=[224, 224])\n'
    'images = resize(crops, size=[224, 224])\n'
    'mirror = random.coin_flip(probability=0.5)\n'
    'out = crop_mirror_normalize(images, mirror=mirror, ' + NORMALIZE +
    ', dtype="float32", output_layout="CHW")\n'
    'return out, labels\n')
BASIC_ARRAYS = (
    'crops = random_resized_crop(images, size=[224, 224])\n'
    'mirror = random.coin_flip(probability=0.5)\n'
    'out = crop_mirror_normalize(crops, mirror=mirror, ' + NORMALIZE +
    ', dtype="float32", output_layout="CHW")\n'
    'return out\n')


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def prepare(a):
    """The JPEG dataset, its tar and TFRecord shards, and .npy arrays of decoded images."""
    if not os.path.isdir(a.data):
        run([sys.executable, os.path.join(ROOT, "scripts", "make_dataset.py"), a.data,
             "--count", str(a.count), "--seed", "3"])
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(a.data) for f in fs
                   if f.endswith(".jpg"))
    base = os.path.join(ROOT, "bench", "data", "formats")
    shards = (len(files) + a.shard_size - 1) // a.shard_size
    for fmt in ("wds", "tfrecord"):
        out = os.path.join(base, fmt)
        if not os.path.isdir(out):
            run([STOKER, "convert", a.data, "--to", fmt, "--out", out,
                 "--shard-size", str(a.shard_size)])
    npy = os.path.join(base, "npy")
    if not os.path.isdir(npy):
        for i, path in enumerate(files[:a.npy_count]):
            cls = os.path.basename(os.path.dirname(path))
            os.makedirs(os.path.join(npy, cls), exist_ok=True)
            arr = np.asarray(Image.open(path).convert("RGB"))
            np.save(os.path.join(npy, cls, f"{i:06d}.npy"), arr)
    npy_files = [os.path.join(dp, f) for dp, _, fs in os.walk(npy) for f in fs]
    jpeg_bytes = sum(os.path.getsize(f) for f in files) / len(files)
    npy_bytes = sum(os.path.getsize(f) - 128 for f in npy_files) / len(npy_files)
    return {
        "loose files": (a.data, jpeg_bytes, len(files)),
        "tar shards": (os.path.join(base, "wds"), jpeg_bytes, len(files)),
        "TFRecord": (os.path.join(base, "tfrecord"), jpeg_bytes, len(files)),
        ".npy (mmap)": (npy, npy_bytes, len(npy_files)),
        ".npy (read)": (npy, npy_bytes, len(npy_files)),
    }, shards


def bench(pipeline_text, data, a, epochs):
    """The best of a.repeat runs."""
    runs = [bench_once(pipeline_text, data, a, epochs) for _ in range(a.repeat)]
    return max(runs, key=lambda r: r["images_per_s"])


def bench_once(pipeline_text, data, a, epochs):
    with tempfile.NamedTemporaryFile("w", suffix=".stk", delete=False) as f:
        f.write(pipeline_text)
        path = f.name
    try:
        cmd = [STOKER, "bench", "--data", data, "--pipeline", path, "--threads", str(a.threads),
               "--batch-size", str(a.batch_size), "--json"]
        run(cmd + ["--epochs", "1"])  # warm the page cache
        out = run(cmd + ["--epochs", str(epochs)])
        return json.loads(out.strip().splitlines()[-1])
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "imagenet-like"))
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--npy-count", type=int, default=500)
    ap.add_argument("--shard-size", type=int, default=250)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    sources, shards = prepare(a)
    results = {}
    print(f"{a.threads} threads, batch {a.batch_size}; page cache warm")
    print(f"{'source':<14}{'samples':>8}{'KB/sample':>10}{'read samples/s':>16}{'read MB/s':>11}"
          f"{'basic img/s':>13}")
    for name, reader in READERS.items():
        data, sample_bytes, count = sources[name]
        line = reader.replace("%06d", "%06d" % (shards - 1))
        ret = "return images\n" if "images =" in line else "return jpegs, labels\n"
        read = bench(line + "\n" + ret, data, a, a.epochs)
        basic = bench(line + "\n" + (BASIC_ARRAYS if "images =" in line else BASIC_JPEG), data, a, 1)
        mbs = read["images_per_s"] * sample_bytes / 1e6
        results[name] = {"samples": count, "sample_bytes": sample_bytes,
                         "read_samples_per_s": read["images_per_s"], "read_mb_per_s": mbs,
                         "basic_images_per_s": basic["images_per_s"]}
        print(f"{name:<14}{count:>8}{sample_bytes / 1e3:>10.1f}{read['images_per_s']:>16.0f}"
              f"{mbs:>11.0f}{basic['images_per_s']:>13.0f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
