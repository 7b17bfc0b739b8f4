#!/usr/bin/env python3
"""Trains a small CNN for a few steps on an ImageFolder dataset, fed by stoker through
the PyTorch iterator (zero-copy DLPack tensors).

    python examples/train_torch.py [DATA_DIR] [--steps 20] [--batch-size 32]

DATA_DIR defaults to bench/data/demo (made by `make demo`); when it does not exist, a
small ImageNet-like set is generated from the bundled photographs first. Under torchrun,
each process reads its own shard (stoker.plugin.torch.distributed_info).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # a checkout without `pip install .`

from stoker import fn, pipeline_def, types  # noqa: E402
from stoker.plugin.torch import ClassificationIterator, LastBatchPolicy, distributed_info  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pipeline_def
def train_pipeline(data_dir, size, shard_id, num_shards, decode_device):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, initial_fill=256,
                                    shard_id=shard_id, num_shards=num_shards,
                                    pad_last_batch=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, device=decode_device, output_type=types.RGB,
                                           random_area=[0.25, 1.0])
    images = fn.resize(images, resize_x=size, resize_y=size)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                      mean=MEAN, std=STD,
                                      mirror=fn.random.coin_flip(probability=0.5))
    return images, labels


def small_cnn(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, num_classes))


def ensure_dataset(path):
    if path and os.path.isdir(path):
        return path
    out = path or os.path.join(tempfile.mkdtemp(prefix="stoker-demo-"), "demo")
    print(f"making a demo dataset in {out}", flush=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_dataset.py"), out,
                    "--count", "256", "--seed", "1"], check=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=os.path.join(ROOT, "bench", "data", "demo"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    data = ensure_dataset(args.data if os.path.isdir(args.data) else None)
    classes = sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d)))
    dist = distributed_info()
    device = torch.device(f"cuda:{dist['device_id']}" if dist["device_id"] is not None else "cpu")

    pipe = train_pipeline(data, args.size, dist["shard_id"], dist["num_shards"], "cpu",
                          batch_size=args.batch_size, num_threads=args.threads, seed=1,
                          device_id=None)
    loader = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                    last_batch_policy=LastBatchPolicy.PARTIAL)
    model = small_cnn(len(classes)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(f"{len(classes)} classes, {pipe.epoch_size('Reader')} images, {len(loader)} batches "
          f"per epoch, training on {device}", flush=True)

    step, seen, start = 0, 0, time.perf_counter()
    while step < args.steps:
        for batch in loader:
            images = batch[0]["data"].to(device, non_blocking=True)
            labels = batch[0]["label"].squeeze(1).long().to(device, non_blocking=True)
            loss = loss_fn(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            seen += images.shape[0]
            if step % 5 == 0 or step == 1:
                rate = seen / (time.perf_counter() - start)
                print(f"step {step:4d}  loss {loss.item():.4f}  {rate:7.1f} images/s", flush=True)
            if step >= args.steps:
                break
    print("done")


if __name__ == "__main__":
    main()
