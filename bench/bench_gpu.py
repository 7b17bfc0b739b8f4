#!/usr/bin/env python3
"""torchvision comparisons for the GPU benchmarks (run by scripts/gpu-check.sh).

On the same folder of JPEGs as tests/gpu/gpu_bench:
  decode      torchvision.io.decode_jpeg(list, device="cuda"), batches of --batch
  gpu-rrc     the same decode + RandomResizedCrop 224 (antialias) + random flip +
              normalise + float16, per image on the GPU (torchvision.transforms.v2)
  dataloader  torch DataLoader, --workers processes: PIL decode + RandomResizedCrop 224 +
              flip + ToTensor + Normalize (the usual CPU pipeline), batches of --batch
Prints one "RESULT" line per measurement.

usage: bench_gpu.py DIR [--batch 256] [--epochs 3] [--workers 16] [--skip-loader]
"""
import argparse
import os
import sys
import time

import torch
import torchvision
from torchvision.io import decode_jpeg
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as F


def jpegs(folder):
    out = []
    for dp, _, fs in os.walk(folder):
        out += [os.path.join(dp, f) for f in fs if f.lower().endswith((".jpg", ".jpeg"))]
    return sorted(out)


def timed(fn, epochs):
    fn(1)  # warm-up: one batch
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n = 0
    for _ in range(epochs):
        n += fn(None)
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--skip-loader", action="store_true")
    args = ap.parse_args()
    files = jpegs(args.dir)
    if not files:
        sys.exit(f"bench_gpu: no JPEGs under {args.dir}")
    data = [torchvision.io.read_file(p) for p in files]
    b = args.batch
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"{torch.cuda.get_device_name()}; {len(files)} files, batch {b}", flush=True)

    def decode_only(limit):
        n = 0
        for s in range(0, len(data), b):
            imgs = decode_jpeg(data[s:s + b], device="cuda")
            n += len(imgs)
            if limit:
                break
        return n

    n, t = timed(decode_only, args.epochs)
    print(f"RESULT torchvision_decode_jpeg_cuda batch {b}: {n} images in {t:.3f} s = "
          f"{n / t:.0f} img/s", flush=True)

    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    gen = torch.Generator().manual_seed(0)

    def gpu_rrc(limit):
        n = 0
        for s in range(0, len(data), b):
            imgs = decode_jpeg(data[s:s + b], device="cuda")
            outs = []
            for img in imgs:
                i, j, h, w = T.RandomResizedCrop.get_params(img, [0.08, 1.0], [3 / 4, 4 / 3])
                o = F.resized_crop(img, i, j, h, w, [224, 224], antialias=True)
                if torch.rand(1, generator=gen).item() < 0.5:
                    o = F.horizontal_flip(o)
                outs.append(o)
            x = ((torch.stack(outs).float() - mean) / std).half()
            n += x.shape[0]
            if limit:
                break
        return n

    n, t = timed(gpu_rrc, args.epochs)
    print(f"RESULT torchvision_gpu_decode+rrc224+flip+norm_f16 batch {b}: {n} images in "
          f"{t:.3f} s = {n / t:.0f} img/s", flush=True)

    if args.skip_loader:
        return
    from PIL import Image

    tf = T.Compose([T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip(),
                    T.PILToTensor(), T.ToDtype(torch.float32, scale=True),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    class Folder(torch.utils.data.Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            with Image.open(files[i]) as im:
                return tf(im.convert("RGB")), 0

    loader = torch.utils.data.DataLoader(Folder(), batch_size=b, shuffle=True,
                                         num_workers=args.workers, persistent_workers=True,
                                         prefetch_factor=4, pin_memory=True, drop_last=False)
    for _ in loader:  # warm-up epoch: worker start-up
        pass
    t0 = time.perf_counter()
    n = 0
    for _ in range(2):
        for x, _ in loader:
            x = x.cuda(non_blocking=True).half()
            n += x.shape[0]
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
    print(f"RESULT torchvision_dataloader_{args.workers}workers_rrc224+flip+norm batch {b}: "
          f"{n} images in {t:.3f} s = {n / t:.0f} img/s", flush=True)


if __name__ == "__main__":
    main()
