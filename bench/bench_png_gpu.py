#!/usr/bin/env python3
"""PNG decoding throughput (issue 23 item 3): stoker's GPU PNG decoder against the CPU.

Two generated sets, made under bench/data/png/ on first use (Pillow, default zlib level
and adaptive filters, as a training set's files usually are):
  masks   --count 512x512 8-bit gray label masks (a segmentation set's: a few classes in
          blobs, values 0..20)
  rgb     --count RGB photos' crops, 512x512 (from data/photos), 8-bit

Measured, images/s over --epochs passes after one warm-up pass:
  stoker mixed   readers.file + decoders.image(device="mixed"): the GPU PNG decoder
  stoker cpu     the same with device="cpu", --threads workers (libspng)
  torchvision    torchvision.io.decode_png on the CPU, --threads Python threads (if torch)
  dali mixed     nvidia.dali decoders.image(device="mixed") (if DALI is installed)
Prints one "RESULT" line per measurement; --json writes them all.

usage: bench_png_gpu.py [--count 2048] [--batch 256] [--threads 16] [--epochs 3]
                        [--sets masks,rgb] [--json OUT]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data", "png")


def make_masks(folder, count, rng):
    os.makedirs(folder, exist_ok=True)
    yy, xx = np.mgrid[0:512, 0:512]
    for i in range(count):
        m = np.zeros((512, 512), np.uint8)
        for _ in range(rng.integers(3, 12)):  # a few objects: discs and boxes of a class
            cls = int(rng.integers(1, 21))
            cy, cx, r = rng.integers(0, 512), rng.integers(0, 512), rng.integers(20, 140)
            if rng.random() < 0.5:
                m[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = cls
            else:
                m[max(cy - r, 0):cy + r, max(cx - r, 0):cx + r] = cls
        Image.fromarray(m, "L").save(os.path.join(folder, f"mask_{i:05d}.png"))


def make_rgb(folder, count, rng):
    os.makedirs(folder, exist_ok=True)
    photos_dir = os.path.join(ROOT, "data", "photos")
    photos = [Image.open(os.path.join(photos_dir, f)).convert("RGB")
              for f in sorted(os.listdir(photos_dir)) if f.endswith((".jpg", ".png"))]
    for i in range(count):
        p = photos[i % len(photos)]
        s = int(rng.integers(256, min(p.size) + 1))
        x, y = int(rng.integers(0, p.size[0] - s + 1)), int(rng.integers(0, p.size[1] - s + 1))
        crop = p.crop((x, y, x + s, y + s)).resize((512, 512))
        crop.save(os.path.join(folder, f"rgb_{i:05d}.png"))


def dataset(name, count):
    folder = os.path.join(DATA, f"{name}_{count}")
    if not os.path.isdir(folder) or len(os.listdir(folder)) < count:
        rng = np.random.default_rng(4)
        (make_masks if name == "masks" else make_rgb)(folder, count, rng)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder))


def timed(run_epoch, epochs):
    run_epoch()  # warm-up
    t0 = time.perf_counter()
    n = sum(run_epoch() for _ in range(epochs))
    return n / (time.perf_counter() - t0)


def bench_stoker(files, device, color, batch, threads, epochs):
    import stoker
    from stoker import fn

    @stoker.pipeline_def(batch_size=batch, num_threads=threads, seed=1,
                         device_id=0 if device == "mixed" else None)
    def pipe():
        enc, _ = fn.readers.file(files=files, name="Reader")
        return fn.decoders.image(enc, device=device, output_type=color)

    p = pipe()
    p.build()
    steps = len(files) // batch

    def epoch():
        out = None
        for _ in range(steps):
            out, = p.run()
        if hasattr(out, "as_cpu"):
            out.as_cpu()  # the device work of the last batch has completed
        return steps * batch

    rate = timed(epoch, epochs)
    stats = p.stats()
    return rate, {"host_decoded": stats.get("host_decoded")}


def bench_torchvision(files, color, threads, epochs):
    import torch
    from concurrent.futures import ThreadPoolExecutor
    from torchvision.io import ImageReadMode, decode_png
    torch.set_num_threads(1)
    blobs = [torch.frombuffer(bytearray(open(f, "rb").read()), dtype=torch.uint8) for f in files]
    mode = ImageReadMode.GRAY if color == "GRAY" else ImageReadMode.RGB
    pool = ThreadPoolExecutor(threads)

    def epoch():
        list(pool.map(lambda b: decode_png(b, mode), blobs))
        return len(blobs)

    return timed(epoch, epochs), {}


def bench_dali(files, color, batch, threads, epochs):
    from nvidia.dali import fn, pipeline_def, types
    ot = types.GRAY if color == "GRAY" else types.RGB

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0)
    def pipe():
        enc, _ = fn.readers.file(files=files, name="Reader")
        return fn.decoders.image(enc, device="mixed", output_type=ot)

    p = pipe()
    p.build()
    steps = len(files) // batch

    def epoch():
        for _ in range(steps):
            out, = p.run()
        out.as_cpu()
        return steps * batch

    return timed(epoch, epochs), {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--sets", default="masks,rgb")
    ap.add_argument("--json")
    a = ap.parse_args()
    results = []

    def report(name, set_name, fn):
        try:
            rate, extra = fn()
        except Exception as e:  # a missing library or GPU: reported, the others still run
            print(f"SKIP {name} on {set_name}: {type(e).__name__}: {e}", flush=True)
            return
        results.append({"set": set_name, "what": name, "images_per_s": rate, **extra})
        print(f"RESULT {set_name:6s} {name:28s} {rate:10.1f} images/s {extra or ''}", flush=True)

    for set_name in a.sets.split(","):
        files = dataset(set_name, a.count)
        color = "GRAY" if set_name == "masks" else "RGB"
        mb = sum(os.path.getsize(f) for f in files) / 1e6
        print(f"# {set_name}: {len(files)} files, {mb:.1f} MB, output {color}", flush=True)
        report("stoker mixed (GPU PNG)", set_name,
               lambda: bench_stoker(files, "mixed", color, a.batch, a.threads, a.epochs))
        report(f"stoker cpu {a.threads} threads", set_name,
               lambda: bench_stoker(files, "cpu", color, a.batch, a.threads, a.epochs))
        report(f"torchvision cpu {a.threads} thr", set_name,
               lambda: bench_torchvision(files, color, a.threads, a.epochs))
        report("dali mixed", set_name,
               lambda: bench_dali(files, color, a.batch, a.threads, a.epochs))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
