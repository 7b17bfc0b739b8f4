#!/usr/bin/env python3
"""The baselines of bench/performance.sh, one measurement per call, each printing its rate
as a line "N images/s" (what bench/interleave.py reads).

  perf_baselines.py pil  basic|randaugment  --data DIR --procs N [--passes P]
      torchvision's per-sample work in Pillow + NumPy on N processes (what a DataLoader
      with N workers does: PIL decode, RandomResizedCrop 224 bilinear, flip, [RandAugment(2, 9)
      with torchvision's magnitudes,] normalise to float32 CHW); for machines without torch.
  perf_baselines.py torchvision  basic|randaugment  --data DIR --procs N [--batch B] [--batches K]
      a real torchvision DataLoader (bench/bench_torchvision.py's bench_loader, batches kept
      on the host); needs torch + torchvision.
  perf_baselines.py dali  basic|randaugment  --data DIR --threads N [--device cpu|gpu]
      [--batch B] [--epochs E]
      NVIDIA DALI doing what stoker's preset of the same name does: readers.file (shuffled),
      decoders.image_random_crop (CPU: libjpeg-turbo region decoding; gpu: "mixed", nvJPEG),
      resize 224x224, [auto_aug.rand_augment(n=2, m=9),] crop_mirror_normalize with a coin
      flip to float32 (CPU) / float16 (GPU) CHW. Needs nvidia.dali; used only as a
      black-box comparison, never by stoker.

The first batch (worker / thread start-up) is not timed, as in `stoker bench`.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


def files_of(root):
    return sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f.endswith(".jpg"))


def run_pil(a):
    import bench_cpu
    files = files_of(a.data) * a.passes
    if a.what == "basic":
        r = bench_cpu.bench_pil(files, a.procs, passes=1)
    else:
        import bench_autoaug
        r = bench_autoaug.bench_pil(files, a.procs)
    return r["images_per_s"], r["images"]


def run_torchvision(a):
    import bench_torchvision
    policy = "randaugment" if a.what == "randaugment" else "none"
    r = bench_torchvision.bench_loader(a.data, a.procs, a.batch, a.batches, policy=policy, device="cpu")
    return r["images_per_s"], r["images"]


def run_dali(a):
    from nvidia.dali import fn, pipeline_def, types
    gpu = a.device == "gpu"

    @pipeline_def(batch_size=a.batch, num_threads=a.threads, device_id=0 if gpu else None,
                  enable_conditionals=a.what == "randaugment")
    def pipe():
        jpegs, labels = fn.readers.file(file_root=a.data, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
        images = fn.resize(images, resize_x=224, resize_y=224)
        if a.what == "randaugment":
            from nvidia.dali.auto_aug import rand_augment
            images = rand_augment.rand_augment(images, n=2, m=9)
        out = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(probability=0.5),
                                       dtype=types.FLOAT16 if gpu else types.FLOAT, output_layout="CHW",
                                       mean=MEAN, std=STD)
        return out, labels

    p = pipe()
    p.build()
    per_epoch = -(-p.epoch_size("Reader") // a.batch)
    p.run()  # the first batch: threads started, not timed
    n, t0 = 0, time.perf_counter()
    for _ in range(a.epochs * per_epoch - 1):
        outs = p.run()
        n += len(outs[0])
    if gpu:
        outs[0].as_cpu()  # the last batch's work done
    return n / (time.perf_counter() - t0), n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=("pil", "torchvision", "dali"))
    ap.add_argument("what", choices=("basic", "randaugment"))
    ap.add_argument("--data", required=True)
    ap.add_argument("--procs", type=int, default=os.cpu_count(), help="processes / DataLoader workers")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="DALI's num_threads")
    ap.add_argument("--passes", type=int, default=1, help="pil: passes over the files")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--batches", type=int, default=None, help="torchvision: batches timed (default: one epoch)")
    ap.add_argument("--epochs", type=int, default=2, help="dali: epochs timed")
    a = ap.parse_args()
    rate, n = {"pil": run_pil, "torchvision": run_torchvision, "dali": run_dali}[a.kind](a)
    print(f"{a.kind} {a.what} ({a.device if a.kind == 'dali' else 'cpu'}): {n} images timed")
    print(f"  {rate:.1f} images/s")


if __name__ == "__main__":
    main()
