#!/usr/bin/env python3
"""Where the hand-off to a training loop costs time (issue 24, item 1): the same pipeline
(the `basic` preset's graph, written out once below) run three ways, interleaved in
rounds (bench/interleave.py), each reporting images/s over its epochs after the first
batch:

  cli       build/stoker bench on the pipeline's text (no Python at all)
  run_loop  Python: Pipeline.run() in a loop (the extension, no iterator)
  run_loop_release  the same, each batch released before the next run() (as the CLI does)
  run_loop_torch  the same with torch imported and its CUDA context made first (is it
            torch's presence, rather than the iterator, that costs?)
  iterator  Python: the framework iterator (torch's ClassificationIterator, or NumPy's
            without torch) over the same pipeline, every batch's tensors converted

The iterator mode also prints where its time went: inside Pipeline.run (waiting for the
pipeline), inside the conversion to framework tensors (DLPack), and the rest (the
iterator's Python bookkeeping).

usage: bench/bench_handoff.py [--device gpu|cpu] [--data DIR] [--batch N] [--threads N]
                              [--epochs N] [--rounds N] [--framework torch|numpy]
       bench/bench_handoff.py --one MODE ...   (one measurement, a JSON line; used by the
                                                rounds)
On the GPU machine: STK_EXEC='python3 bench/bench_handoff.py --data $DATA' \
scripts/gpu-check.sh exec
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NORMALIZE = "mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375]"
GRAPH = {
    "gpu": ('jpegs, labels = readers.file(file_root="${DATA}", random_shuffle=true, name="Reader")\n'
            'images = decoders.image(jpegs, output_type="RGB", device="mixed")\n'
            'crops = random_resized_crop(images, size=[224, 224], device="gpu")\n'
            "mirror = random.coin_flip(probability=0.5)\n"
            f"out = crop_mirror_normalize(crops, mirror=mirror, {NORMALIZE}, "
            'dtype="float16", output_layout="CHW", device="gpu")\n'
            "return out, labels\n"),
    "cpu": ('jpegs, labels = readers.file(file_root="${DATA}", random_shuffle=true, name="Reader")\n'
            'crops = decoders.image_random_crop(jpegs, output_type="RGB", size=[224, 224])\n'
            "images = resize(crops, size=[224, 224])\n"
            "mirror = random.coin_flip(probability=0.5)\n"
            f"out = crop_mirror_normalize(images, mirror=mirror, {NORMALIZE}, "
            'dtype="float32", output_layout="CHW")\n'
            "return out, labels\n"),
}


def pipeline_text(a):
    settings = (f"batch_size = {a.batch}\nnum_threads = {a.threads}\n"
                f"device_id = {0 if a.device == 'gpu' else -1}\nseed = 7\n")
    return settings + GRAPH[a.device]


def one(a):
    """One measurement in this process: a JSON line with images_per_s (and, for the
    iterator, where the time went)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    if a.one == "run_loop_torch":
        import torch
        if a.device == "gpu":
            torch.cuda.init()
            torch.zeros(1, device="cuda")
    import stoker
    text = pipeline_text(a).replace("${DATA}", a.data)
    pipe = stoker.Pipeline.deserialize(text)
    run_s = [0.0]
    real_run = pipe.run

    def timed_run():
        t = time.perf_counter()
        try:
            return real_run()
        finally:
            run_s[0] += time.perf_counter() - t

    pipe.run = timed_run
    epoch = pipe.epoch_size("Reader")
    images, conv_s = 0, [0.0]
    if a.one in ("run_loop", "run_loop_torch", "run_loop_release"):
        pipe.run()  # the first batch: start-up, not timed
        t0 = time.perf_counter()
        run_s[0] = 0.0
        done = 0
        while done < a.epochs * epoch - a.batch:
            out = pipe.run()
            done += len(out[0])
            if a.one == "run_loop_release" and done < a.epochs * epoch - a.batch:
                del out  # the batch goes back before the next run(), as the CLI's does
        # GPU work is queued, not finished, when run() returns: as the CLI does, the clock
        # stops once the last batch has reached the host (the device is done with it)
        out[0].as_cpu()
        images, elapsed = done, time.perf_counter() - t0
    else:
        if a.framework == "torch":
            from stoker.plugin import torch as plugin
        else:
            from stoker.plugin import numpy as plugin
        it = plugin.ClassificationIterator(pipe, reader_name="Reader",
                                           last_batch_policy=plugin.LastBatchPolicy.PARTIAL)
        real_convert = it._convert

        def timed_convert(tl, p):
            t = time.perf_counter()
            try:
                return real_convert(tl, p)
            finally:
                conv_s[0] += time.perf_counter() - t

        it._convert = timed_convert
        t0, last = None, None
        for e in range(a.epochs):
            for batch in it:
                if t0 is None:  # the first batch: start-up, not timed
                    t0, run_s[0], conv_s[0] = time.perf_counter(), 0.0, 0.0
                    continue
                images += int(batch[0]["label"].shape[0])
                last = batch[0]["data"]
                if a.one == "consumer":  # a training step's first touch of the batch
                    checksum = last.float().sum()
            it.reset()
        if a.one == "consumer":
            checksum.item()
        # the batch is on the framework's stream: the clock stops when the device is done
        if a.framework == "torch" and a.device == "gpu":
            import torch
            torch.cuda.synchronize()
        elif last is not None and hasattr(last, "block_until_ready"):
            last.block_until_ready()
        elapsed = time.perf_counter() - t0
    rec = {"mode": a.one, "images": images, "seconds": round(elapsed, 3),
           "images_per_s": round(images / elapsed, 1),
           "in_run": round(run_s[0] / elapsed, 3)}
    if a.one in ("iterator", "consumer"):
        rec["in_convert"] = round(conv_s[0] / elapsed, 3)
        rec["rest"] = round(1 - rec["in_run"] - rec["in_convert"], 3)
    print(json.dumps(rec))


def compare(a):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(pipeline_text(a))
        text_file = f.name
    me = [sys.executable, os.path.abspath(__file__), "--device", a.device, "--data", a.data,
          "--batch", str(a.batch), "--threads", str(a.threads), "--epochs", str(a.epochs),
          "--framework", a.framework]
    q = " ".join
    cmds = [f"cli={os.path.join(a.build, 'stoker')} bench --data {a.data} --pipeline {text_file} "
            f"--device {a.device} --epochs {a.epochs} --json",
            *([f"cli_prefetch3={os.path.join(a.build, 'stoker')} bench --data {a.data} "
               f"--pipeline {text_file} --device {a.device} --epochs {a.epochs} --json "
               "--prefetch 3"] if a.probe else []),
            f"run_loop={q(me)} --one run_loop",
            f"run_loop_release={q(me)} --one run_loop_release",
            *([f"run_loop_torch={q(me)} --one run_loop_torch"] if a.framework == "torch" else []),
            f"iterator={q(me)} --one iterator",
            *([f"consumer={q(me)} --one consumer"] if a.framework == "torch" else [])]
    rc = subprocess.call([sys.executable, os.path.join(ROOT, "bench", "interleave.py"),
                          "--rounds", str(a.rounds), "--show", '"in_[a-z]+": [0-9.]+|"rest": [-0-9.]+',
                          *cmds])
    os.unlink(text_file)
    sys.exit(rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--data", default=os.path.join(ROOT, "bench", "data", "imagenet-like"))
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=15)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--framework", choices=["torch", "numpy"], default=None)
    ap.add_argument("--build", default=os.environ.get("BUILD", os.path.join(ROOT, "build")))
    ap.add_argument("--probe", action="store_true",
                    help="also the CLI with prefetch_queue_depth 3 (is the CLI short of batches "
                         "in flight?)")
    ap.add_argument("--one", choices=["run_loop", "run_loop_torch", "run_loop_release", "iterator", "consumer"], default=None)
    a = ap.parse_args()
    if a.framework is None:
        try:
            import torch  # noqa: F401
            a.framework = "torch"
        except ImportError:
            a.framework = "numpy"
    if a.one:
        one(a)
    else:
        compare(a)


if __name__ == "__main__":
    main()
