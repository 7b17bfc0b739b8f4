#!/usr/bin/env python3
"""Cost of custom augmentations in automatic augmentation lists (issue 21 item 1): decode +
random_resized_crop 224 + flip, then nothing / TrivialAugmentWide fused (the built-in
list: one auto_augment.apply) / the same list + a custom cutout (the per-sample path: a
switch of 15 branches, the built-ins through auto_augment.augment) / RandAugment n=2 the
same two ways. Variants alternate round by round in one process (same machine state);
images/s per variant, the median of the rounds.

    python bench/bench_custom_augs.py --data DIR [--device gpu|cpu] [--batch 128]
        [--batches 20] [--rounds 3] [--threads 8]

--device gpu decodes with device="mixed" (nvJPEG) and augments on the GPU; cpu runs the
whole pipeline on the CPU. DIR is an ImageFolder or a flat folder of JPEGs (default: the
bundled data/photos).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import stoker  # noqa: E402
from stoker import fn, types  # noqa: E402
from stoker.auto_aug import rand_augment as ra  # noqa: E402
from stoker.auto_aug import trivial_augment as ta  # noqa: E402
from stoker.auto_aug.core import augmentation  # noqa: E402


@augmentation(mag_range=(0.1, 0.5), mag_to_param=lambda m: np.array([m, m], dtype=np.float32))
def cutout(data, size, fill_value=128):
    anchor = fn.random.uniform(range=[0, 1], shape=[2])
    return fn.erase(data, anchor=anchor, shape=size, normalized=True, centered_anchor=True,
                    fill_value=fill_value)


def variants():
    suite = ta.get_trivial_augment_wide_suite()
    rsuite = ra.get_rand_augment_suite()
    return {
        "none": lambda x: x,
        "trivial fused": lambda x: ta.apply_trivial_augment(suite, x, fill_value=0),
        "trivial + cutout": lambda x: ta.apply_trivial_augment(suite + [cutout], x, fill_value=0),
        "rand n=2 fused": lambda x: ra.apply_rand_augment(rsuite, x, 2, 9, fill_value=0),
        "rand n=2 + cutout": lambda x: ra.apply_rand_augment(rsuite + [cutout], x, 2, 9, fill_value=0),
    }


def files_of(root):
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.join(d, n) for n in names if n.lower().endswith((".jpg", ".jpeg"))]
    return sorted(out)


def make(files, device, batch, threads, aug):
    @stoker.pipeline_def(batch_size=batch, num_threads=threads, seed=1,
                         device_id=0 if device == "gpu" else None)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                                   output_type=types.RGB)
        images = fn.random_resized_crop(images, size=[224, 224])
        images = fn.flip(images, horizontal=fn.random.coin_flip())
        return aug(images), labels
    p = pipe()
    p.build()
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "photos"))
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    files = files_of(args.data)
    if not files:
        sys.exit(f"no JPEGs under {args.data}")
    pipes = {name: make(files, args.device, args.batch, args.threads, aug) for name, aug in variants().items()}
    for p in pipes.values():  # warm-up: pools sized, kernels loaded
        for _ in range(3):
            p.run()
    rates = {name: [] for name in pipes}
    for _ in range(args.rounds):
        for name, p in pipes.items():
            t = time.perf_counter()
            for _ in range(args.batches):
                out = p.run()
            if args.device == "gpu":
                out[0].as_cpu()  # the last batch finished
            rates[name].append(args.batches * args.batch / (time.perf_counter() - t))
    base = statistics.median(rates["none"])
    print(f"{len(files)} files, device {args.device}, batch {args.batch}, {args.batches} batches x "
          f"{args.rounds} rounds")
    for name, r in rates.items():
        m = statistics.median(r)
        print(f"  {name:20s} {m:9.0f} images/s  ({100 * m / base:5.1f}% of no augmentation)")


if __name__ == "__main__":
    main()
