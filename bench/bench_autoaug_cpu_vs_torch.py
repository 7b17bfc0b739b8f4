#!/usr/bin/env python3
"""Issue 6 item 7 (CPU part) and issue 2's missing baseline: stoker's CPU pipelines
against a torchvision DataLoader and timm's transforms at equal cores.

stoker: `stoker bench --pipeline P --device cpu --threads N --batch-size B --epochs 1
--json` for P in basic, randaugment (n=2, m=9), autoaugment (ImageNet), trivialaugment
(the CLI presets: ROI decode of the crop window, resize 224, the policy, mirror,
normalise to float32 CHW).

torch: a DataLoader with N workers over torchvision.datasets.ImageFolder (PIL decode),
batch B, with (bench_torchvision.loader_transform)
  basic:          RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize
  randaugment:    RandomResizedCrop(224) + RandAugment(2, 9) + flip + ToTensor + Normalize
  autoaugment:    ... + AutoAugment(IMAGENET) + ...
  trivialaugment: ... + TrivialAugmentWide() + ...
and timm's training transform, timm.data.create_transform(224, is_training=True,
auto_augment=A, interpolation="bilinear"): RandomResizedCropAndInterpolation + flip +
timm's RandAugment 'rand-m9-n2-mstd0' (or AutoAugment 'original') + ToTensor + Normalize
(timm turns colour jitter off when auto_augment is set; no random erasing).

Each measurement runs --repeats times (fresh process / fresh DataLoader each time) and
the median images/s is reported with the range; the first batch is not timed (worker
start-up). Also reported: CPU time per image of all the processes involved (stoker: the
CLI process, from getrusage; torch: the main process and the workers during the timed
batches, from /proc), whose ratio is the speed ratio at equal cores when the machine is
shared and wall-clock throughput is noisy. Needs torch, torchvision and timm in the running interpreter (not in the
project venv: see bench/requirements-torch.txt) and the stoker CLI (build/stoker).

usage: bench_autoaug_cpu_vs_torch.py [--data DIR] [--threads 2] [--batch 32]
           [--repeats 3] [--only stoker,torchvision,timm] [--json OUT]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
sys.path.insert(0, HERE)

PRESETS = ("basic", "randaugment", "autoaugment", "trivialaugment")
TIMM = (("randaugment", "rand-m9-n2-mstd0"), ("autoaugment", "original"))


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def stoker_run(data, preset, threads, batch):
    """(images/s, CPU ms per image). The CPU time is the whole process's (start-up and the
    untimed first batch included: a slight overestimate)."""
    cmd = [os.path.join(BUILD, "stoker"), "bench", "--data", data, "--pipeline", preset, "--device", "cpu",
           "--threads", str(threads), "--batch-size", str(batch), "--epochs", "1", "--json"]
    c0 = _children_cpu()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    cpu = _children_cpu() - c0
    r = json.loads(out.strip().splitlines()[-1])
    return r["images_per_s"], 1e3 * cpu / r["images"]


def torch_run(data, policy, workers, batch, timm_aa=None):
    # A fresh interpreter per run: no state (page cache aside) carried between runs.
    code = ("import json, sys; sys.path.insert(0, %r); import bench_autoaug_cpu_vs_torch as b; "
            "print(json.dumps(b._torch_once(%r, %r, %d, %d, %r)))" % (HERE, data, policy, workers, batch, timm_aa))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["images_per_s"], r.get("cpu_ms_per_image")


def _torch_once(data, policy, workers, batch, timm_aa):
    import torch
    import bench_torchvision as btv
    torch.set_num_threads(1)  # the main process only collates; the workers set 1 themselves
    transform = None
    if timm_aa:
        import timm.data
        transform = timm.data.create_transform(224, is_training=True, auto_augment=timm_aa,
                                               interpolation="bilinear")
    return btv.bench_loader(data, workers, batch, None, policy=policy, device="cpu", transform=transform)


def versions():
    code = ("import torch, torchvision, timm, PIL; print(torch.__version__, torchvision.__version__, "
            "timm.__version__, PIL.__version__)")
    try:
        return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                              text=True).stdout.strip()
    except subprocess.CalledProcessError:
        return "torch/torchvision/timm not importable"


def summarise(runs):
    ips = [r[0] for r in runs]
    cpu = [r[1] for r in runs if r[1] is not None]
    return {"median": statistics.median(ips), "min": min(ips), "max": max(ips), "runs": ips,
            "cpu_ms_per_image": statistics.median(cpu) if cpu else None, "cpu_runs": cpu}


def table(summ, threads, key):
    """Markdown table of images/s (key "median") or CPU ms per image (key "cpu")."""
    unit = "images/s, median (range)" if key == "median" else "CPU ms per image (all processes), median"
    out = [f"| pipeline ({unit}) | stoker, {threads} threads | torchvision DataLoader, {threads} workers "
           f"| timm transform, {threads} workers | stoker / torchvision | stoker / timm |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for p in PRESETS:
        cells, val = [], {}
        for lib in ("stoker", "torchvision", "timm"):
            s = summ.get(f"{lib} {p}")
            if key == "median":
                val[lib] = s["median"] if s else None
                cells.append(f"{s['median']:.0f} ({s['min']:.0f}-{s['max']:.0f})" if s else "-")
            else:
                val[lib] = s["cpu_ms_per_image"] if s else None
                cells.append(f"{val[lib]:.2f}" if val[lib] else "-")

        def ratio(other):
            if not val["stoker"] or not val[other]:
                return "-"
            r = val["stoker"] / val[other] if key == "median" else val[other] / val["stoker"]
            return f"{r:.2f}x"
        out.append(f"| {p} | " + " | ".join(cells) + f" | {ratio('torchvision')} | {ratio('timm')} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "imagenet-like"))
    ap.add_argument("--threads", type=int, default=2, help="stoker threads = DataLoader workers")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="stoker,torchvision,timm")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        sys.exit(f"no dataset at {a.data}: make one with scripts/make_dataset.py {a.data} --count 2000 --seed 3")
    only = a.only.split(",")
    nfiles = sum(f.endswith(".jpg") for _, _, fs in os.walk(a.data) for f in fs)
    print(f"{nfiles} files in {a.data}; {a.threads} threads / workers, batch {a.batch}, "
          f"{a.repeats} runs each; torch, torchvision, timm, Pillow: {versions()}", flush=True)
    res = {}
    # Interleave the libraries run by run so that a change in the machine's load hits all.
    for rep in range(a.repeats):
        for p in PRESETS:
            if "stoker" in only:
                res.setdefault(("stoker", p), []).append(stoker_run(a.data, p, a.threads, a.batch))
            if "torchvision" in only:
                res.setdefault(("torchvision", p), []).append(
                    torch_run(a.data, "none" if p == "basic" else p, a.threads, a.batch))
        if "timm" in only:
            for p, aa in TIMM:
                res.setdefault(("timm", p), []).append(torch_run(a.data, "none", a.threads, a.batch, aa))
        print(f"run {rep + 1}: " + ", ".join(f"{k[0]} {k[1]} {v[-1][0]:.0f}/s {v[-1][1] or 0:.2f} ms"
                                             for k, v in res.items()), flush=True)
    summ = {f"{k[0]} {k[1]}": summarise(v) for k, v in res.items()}
    print()
    print(table(summ, a.threads, "median"))
    print()
    print(table(summ, a.threads, "cpu"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summ, f, indent=1)


if __name__ == "__main__":
    main()
