#!/usr/bin/env python3
"""Data-parallel training (DDP) fed by one stoker pipeline per rank, launched by torchrun.

    torchrun --nproc_per_node=2 examples/ddp_train.py --data DIR [--epochs 1] [--steps 0]
    torchrun --nproc_per_node=2 examples/ddp_train.py --data DIR --pipeline-only
    torchrun --nproc_per_node=2 examples/ddp_train.py --data DIR --device cpu --arch tiny

Each rank builds its own pipeline: it reads shard `rank` of `world size`
(stoker.plugin.torch.distributed_info(), so the shards of an epoch are disjoint and cover
the data set, as torch's DistributedSampler), runs on GPU LOCAL_RANK (`--device gpu`,
NCCL) or on the CPU (`--device cpu`, gloo), and gets the machine's cores divided by the
number of ranks on this node as its threads (`--threads` overrides). The iterator has
reader_name, so an iterator epoch is exactly one epoch of the rank's shard; the reader pads
every shard to the largest (pad_last_batch) so all ranks run the same number of steps, which
DDP needs (a rank with one step more would wait forever in its gradient all-reduce).

The model is torchvision's ResNet-50 (no pretrained weights) in bf16 autocast, channels-last,
wrapped in DistributedDataParallel. After each epoch rank 0 prints one JSON line with
images/s per rank and in total; at the end a "summary" line does the same over all steps
after the first `--warmup` ones (what bench/bench_ddp.sh compares). `--pipeline-only` runs
the same loop without the model: the data pipeline's own throughput per rank.

`--synthetic` trains on one batch of the pipeline's, reused for every step: the model's and
DDP's own images/s, the control that tells what the pipeline costs a training run.

`--record PREFIX` writes PREFIX.rankR.json: the labels each rank received, per epoch and
batch (tests/python/test_ddp.py checks the shards' contract with it).
"""

import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # a checkout without `pip install .`

from stoker import fn, pipeline_def, types  # noqa: E402
from stoker.plugin.torch import (ClassificationIterator, LastBatchPolicy,  # noqa: E402
                                 distributed_info)

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
POLICIES = {"fill": LastBatchPolicy.FILL, "partial": LastBatchPolicy.PARTIAL,
            "drop": LastBatchPolicy.DROP}


@pipeline_def
def train_pipeline(data_dir, size, shard_id, num_shards, gpu, shuffle):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=shuffle,
                                    shard_id=shard_id, num_shards=num_shards,
                                    pad_last_batch=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, device="mixed" if gpu else "cpu",
                                           output_type=types.RGB, random_area=[0.08, 1.0])
    images = fn.resize(images, resize_x=size, resize_y=size)
    # HWC, so that the [N, H, W, C] batch permuted to NCHW is a channels-last tensor
    # (what convolutions in bf16 run fastest on) without a copy
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC",
                                      mean=MEAN, std=STD,
                                      mirror=fn.random.coin_flip(probability=0.5))
    return images, labels


def default_threads():
    """This process's share of the cores: those it may run on, divided among the ranks of
    this node (torchrun sets LOCAL_WORLD_SIZE)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="ImageFolder root (DIR/class/*.jpg)")
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu",
                    help="gpu: pipelines and training on GPU LOCAL_RANK with NCCL; "
                         "cpu: CPU pipelines, gloo")
    ap.add_argument("--pipeline-device", choices=["gpu", "cpu"], default=None,
                    help="where the pipeline decodes and augments (default: --device); cpu with "
                         "--device gpu: CPU pipelines, batches copied to the GPU for training "
                         "(the control that keeps the pipeline off the GPU)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0,
                    help="stop after this many steps in all (0: run every epoch whole)")
    ap.add_argument("--warmup", type=int, default=5,
                    help="steps left out of the summary's rates")
    ap.add_argument("--batch-size", type=int, default=128, help="per rank")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=0,
                    help="pipeline threads per rank (0: cores / ranks on this node)")
    ap.add_argument("--arch", default="resnet50",
                    help="a torchvision.models name, or 'tiny' (a 3-layer CNN for CPU tests)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-shuffle", action="store_true")
    ap.add_argument("--last-batch", choices=sorted(POLICIES), default="fill",
                    help="last_batch_policy; training needs fill (see docs/distributed.md)")
    ap.add_argument("--pipeline-only", action="store_true",
                    help="measure the pipelines alone: no model, no optimizer")
    ap.add_argument("--synthetic", action="store_true",
                    help="train on one batch taken from the pipeline and reused for every step "
                         "(the pipeline then idles): the model's and DDP's own speed, the "
                         "control for a training run's images/s")
    ap.add_argument("--dist-timeout", type=float, default=1800,
                    help="seconds a collective may wait for the other ranks before failing")
    ap.add_argument("--record", default=None,
                    help="write PREFIX.rankR.json with the labels each batch brought")
    args = ap.parse_args(argv)
    if args.last_batch == "partial" and not args.pipeline_only:
        # PARTIAL can give a rank a short or even empty last batch while its peer's is full
        # (an empty batch's mean loss is NaN). FILL and DROP give every rank the same
        # number of full batches.
        ap.error("--last-batch partial is for --pipeline-only runs; training uses fill or drop")
    return args


def tiny_cnn(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes))


def make_model(arch, num_classes):
    if arch == "tiny":
        return tiny_cnn(num_classes)
    import torchvision
    return torchvision.models.get_model(arch, weights=None, num_classes=num_classes)


class Trainer:
    """One optimisation step of the DDP model per batch (bf16 autocast)."""

    def __init__(self, args, num_classes, device):
        model = make_model(args.arch, num_classes).to(device, memory_format=torch.channels_last)
        ids = [device.index] if device.type == "cuda" else None
        torch.backends.cudnn.benchmark = True  # one input shape: pick the fastest kernels
        self.model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        lr = args.lr * args.batch_size * dist.get_world_size() / 256  # the linear scaling rule
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9,
                                   weight_decay=5e-5)
        self.loss_fn = nn.CrossEntropyLoss()
        self.device = device

    def step(self, images, labels):
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16):
            loss = self.loss_fn(self.model(images), labels)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss


def setup(args):
    """Joins the process group (torchrun's environment); returns the rank's shard and
    device."""
    gpu = args.device == "gpu"
    if gpu and not torch.cuda.is_available():
        sys.exit("ddp_train: --device gpu but torch sees no GPU (use --device cpu)")
    if gpu:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend="nccl" if gpu else "gloo",
                            timeout=datetime.timedelta(seconds=args.dist_timeout))
    info = distributed_info()
    device = torch.device("cuda", info["device_id"]) if gpu else torch.device("cpu")
    return info, device


def pipeline_on_gpu(args):
    return (args.pipeline_device or args.device) == "gpu"


def build_loader(args, info, threads):
    # every rank draws the same permutation of each epoch (it depends on the epoch, not
    # on the seed), so the shards stay disjoint; the seed only varies the augmentations
    pipe = train_pipeline(args.data, args.size, info["shard_id"], info["num_shards"],
                          pipeline_on_gpu(args), not args.no_shuffle,
                          batch_size=args.batch_size, num_threads=threads,
                          device_id=info["device_id"] if pipeline_on_gpu(args) else None,
                          seed=args.seed + info["shard_id"])
    loader = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                    last_batch_policy=POLICIES[args.last_batch])
    return pipe, loader


def one_batch(loader):
    """A copy of one batch of the pipeline's (--synthetic: reused for every step)."""
    first = next(iter(loader))
    return [{k: v.clone() for k, v in first[0].items()}]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def report(record, world):
    """Gathers every rank's counters to rank 0, which prints them as one JSON line."""
    rows = [None] * world
    dist.all_gather_object(rows, record)
    if dist.get_rank() != 0:
        return
    images = sum(r["images"] for r in rows)
    seconds = max(r["seconds"] for r in rows)
    losses = [r["loss"] for r in rows if r.get("loss") is not None]
    out = dict(rows[0], images=images, seconds=round(seconds, 4), ranks=world,
               images_per_s_per_rank=[round(r["images"] / max(r["seconds"], 1e-9), 1)
                                      for r in rows],
               images_per_s_total=round(images / max(seconds, 1e-9), 1),
               data_wait_s_per_rank=[r.get("data_wait_s") for r in rows],
               steps_per_rank=[r["steps"] for r in rows])
    for k in ("rank", "steps", "loss", "data_wait_s"):
        out.pop(k, None)
    if losses:
        out["loss"] = round(sum(losses) / len(losses), 4)  # the ranks' last steps, averaged
    print(json.dumps(out), flush=True)


def main(argv=None):
    args = parse_args(argv)
    info, device = setup(args)
    world, rank = dist.get_world_size(), dist.get_rank()
    threads = args.threads or default_threads()
    if device.type == "cpu":
        torch.set_num_threads(threads)  # torch's own threads share the rank's cores
    pipe, loader = build_loader(args, info, threads)
    classes = sorted(d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d)))
    trainer = None if args.pipeline_only else Trainer(args, len(classes), device)
    if rank == 0:
        print(json.dumps({"event": "start", "ranks": world, "device": str(device),
                          "threads_per_rank": threads, "batch_size_per_rank": args.batch_size,
                          "epoch_size": pipe.epoch_size("Reader"), "batches_per_epoch": len(loader),
                          "mode": "pipeline" if args.pipeline_only else "train",
                          "arch": None if args.pipeline_only else args.arch}), flush=True)
    fixed = one_batch(loader) if args.synthetic else None
    recorded = []
    step = 0
    # the summary's clock: from the end of the warm-up to the last step, less the pauses
    # between epochs (the reports and barriers, more of them with more ranks)
    steady = {"images": 0, "steps": 0, "start": None, "paused": 0.0, "data_wait": 0.0}
    epoch_end = None
    for epoch in range(args.epochs):
        labels_seen, epoch_images, epoch_steps, loss = [], 0, 0, None
        sync(device)
        dist.barrier()
        start = time.perf_counter()
        if steady["start"] is not None and epoch_end is not None:
            steady["paused"] += start - epoch_end
        batches = iter([fixed] * len(loader) if fixed is not None else loader)
        while True:
            waited = time.perf_counter()
            batch = next(batches, None)
            if batch is None:
                break
            if step >= args.warmup:  # the host's wait for the pipeline's batch
                steady["data_wait"] += time.perf_counter() - waited
            images = batch[0]["data"].permute(0, 3, 1, 2)  # NHWC memory, NCHW shape
            labels = batch[0]["label"].squeeze(1).long()
            if args.record:
                labels_seen.append(labels.tolist())
            if trainer is not None:
                loss = trainer.step(images.to(device, non_blocking=True),
                                    labels.to(device, non_blocking=True))
            step += 1
            epoch_steps += 1
            epoch_images += images.shape[0]
            if step == args.warmup:
                sync(device)
                steady["start"] = time.perf_counter()
            elif step > args.warmup:
                steady["images"] += images.shape[0]
                steady["steps"] += 1
            if args.steps and step >= args.steps:
                break
        sync(device)
        epoch_end = time.perf_counter()
        seconds = epoch_end - start
        recorded.append(labels_seen)
        report({"event": "epoch", "epoch": epoch, "rank": rank, "images": epoch_images,
                "steps": epoch_steps, "seconds": seconds,
                "loss": None if loss is None else float(loss.detach())}, world)
        if args.steps and step >= args.steps:
            break
    if steady["start"] is not None:
        seconds = epoch_end - steady["start"] - steady["paused"]
        report({"event": "summary", "rank": rank, "images": steady["images"],
                "steps": steady["steps"], "seconds": seconds,
                "data_wait_s": round(steady["data_wait"], 4),
                "mode": "pipeline" if args.pipeline_only else "train"}, world)
    if args.record:
        with open(f"{args.record}.rank{rank}.json", "w") as f:
            json.dump({"rank": rank, "world": world, "batch_size": args.batch_size,
                       "batches_per_epoch": len(loader), "epochs": recorded}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
