#!/usr/bin/env python3
"""torchvision baselines on the GPU machine, same files as stoker's benchmarks:
(1) torchvision.io.decode_jpeg on the GPU, batched (nvJPEG under torchvision);
(2) a torchvision DataLoader with N workers doing RandomResizedCrop(224) + flip +
    normalise (optionally + RandAugment(2, 9), AutoAugment(ImageNet) or
    TrivialAugmentWide after the crop), the classic CPU loader. bench_loader is also used
    on the CPU by bench_autoaug_cpu_vs_torch.py.
Prints one JSON line per measurement.

usage: bench_torchvision.py DATA_DIR [--workers 16] [--batch 256] [--batches 20]
                           [--randaugment | --policy randaugment|autoaugment|trivialaugment]
"""
import argparse
import json
import os
import time

import torch
import torchvision
from torchvision import transforms as T


def files_of(root):
    return sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f.endswith(".jpg"))


def bench_gpu_decode(files, batch):
    datas = [torchvision.io.read_file(f) for f in files]
    torchvision.io.decode_jpeg(datas[:batch], device="cuda")  # warm-up
    torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    for _ in range(3):
        for i in range(0, len(datas) - batch + 1, batch):
            torchvision.io.decode_jpeg(datas[i:i + batch], device="cuda")
            n += batch
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"what": "torchvision.io.decode_jpeg cuda batched", "images_per_s": n / dt, "images": n, "seconds": dt,
            "batch": batch}


POLICIES = ("none", "randaugment", "autoaugment", "trivialaugment")


def policy_transform(policy):
    """torchvision's automatic augmentation on PIL images (its defaults: nearest, fill 0)."""
    if policy == "randaugment":
        return T.RandAugment(num_ops=2, magnitude=9)
    if policy == "autoaugment":
        return T.AutoAugment(T.AutoAugmentPolicy.IMAGENET)
    if policy == "trivialaugment":
        return T.TrivialAugmentWide()
    return None


def loader_transform(policy="none"):
    """decode (ImageFolder's PIL loader) + RandomResizedCrop(224) [+ policy] + flip +
    ToTensor + Normalize."""
    tf = [T.RandomResizedCrop(224)]
    if policy_transform(policy) is not None:
        tf.append(policy_transform(policy))
    tf += [T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    return T.Compose(tf)


def _cpu_seconds(pids):
    """CPU time (user + system) of this process and of the processes `pids` (the loader's
    workers), from /proc; None where it cannot be read."""
    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, IndexError, ValueError):
            return None
    return total


def bench_loader(root, workers, batch, batches, randaugment=False, policy=None, device="cuda", transform=None,
                 what=None):
    """Images/s of a DataLoader over ImageFolder(root) after its first batch (the workers'
    start-up). batches=None: the rest of one epoch. `transform` replaces the torchvision
    one (e.g. timm's); `device` "cpu" keeps the batches on the host."""
    policy = policy or ("randaugment" if randaugment else "none")
    ds = torchvision.datasets.ImageFolder(root, transform or loader_transform(policy))
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, drop_last=True,
                                     persistent_workers=workers > 0, prefetch_factor=4 if workers > 0 else None)
    it = iter(dl)
    next(it)  # warm-up: workers started
    pids = [w.pid for w in getattr(it, "_workers", [])]
    n, t0, c0 = 0, time.perf_counter(), _cpu_seconds(pids)
    # Time at least twice what the workers have prefetched during the warm-up (workers x
    # prefetch_factor batches): fewer would time the dequeueing of ready batches. (On the
    # H100 machine, 2000 files at batch 256 with 16 workers gave an impossible 12.7k
    # images/s before this floor.)
    floor = 2 * workers * 4 if workers > 0 else 1
    count = batches if batches is not None else len(dl) - 1
    for _ in range(max(count, floor)):
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(dl)
            x, _ = next(it)
        if device != "cpu":
            x = x.to(device, non_blocking=True)
        n += x.shape[0]
    if device != "cpu":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    c1 = _cpu_seconds(pids)
    del it, dl
    if what is None:
        what = f"torchvision DataLoader {workers} workers RRC+flip+normalise" + ("" if policy == "none" else f" +{policy}")
    cpu = {"cpu_ms_per_image": 1e3 * (c1 - c0) / n} if c0 is not None and c1 is not None and n else {}
    return {"what": what, "images_per_s": n / dt, "images": n, "seconds": dt, "batch": batch, "workers": workers,
            **cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--randaugment", action="store_true")
    ap.add_argument("--policy", choices=POLICIES, help="automatic augmentation (--randaugment: randaugment)")
    ap.add_argument("--skip-decode", action="store_true")
    a = ap.parse_args()
    files = files_of(a.data)
    if not a.skip_decode:
        print(json.dumps(bench_gpu_decode(files, a.batch)), flush=True)
    print(json.dumps(bench_loader(a.data, a.workers, a.batch, a.batches, a.randaugment, a.policy)), flush=True)


if __name__ == "__main__":
    main()
