#!/usr/bin/env python3
"""Video classification input with stoker: clips of 8 frames (every 2nd frame) read by
readers.video_resize from a class-folder tree, decoded on the CPU with FFmpeg and scaled
to 112 x 112 as they are decoded, mirrored at random and normalised to float
[F, H, W, C] (FHWC; a 3-D CNN in PyTorch wants x.permute(0, 4, 1, 2, 3)).

    python examples/video_classification.py [ROOT] [--batch-size 4] [--bench 10]

Without ROOT a small tree of synthetic clips (two classes: moving bars left or right,
H.264 in MP4, made with the ffmpeg CLI) is written to a temporary directory first. With
--bench N it times N batches and, when torchvision is installed, the same clips decoded
with torchvision.io.read_video for comparison.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # a checkout without `pip install .`

import stoker  # noqa: E402
from stoker import fn, types  # noqa: E402

SEQ, STRIDE, SIZE = 8, 2, 112


def make_dataset(root, per_class=4, frames=48, h=144, w=192):
    if not shutil.which("ffmpeg"):
        sys.exit("ffmpeg is needed to make the sample clips (apt-get install ffmpeg)")
    x = np.arange(w)
    for label, direction in (("left", -1), ("right", 1)):
        os.makedirs(os.path.join(root, label), exist_ok=True)
        for k in range(per_class):
            video = np.empty((frames, h, w, 3), np.uint8)
            for i in range(frames):
                bars = ((x + direction * 3 * i + 11 * k) // 16) % 2 * 200
                video[i] = bars[None, :, None]
                video[i, ..., 2] = 50 + 10 * k
            path = os.path.join(root, label, f"clip{k}.mp4")
            subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo",
                            "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", "25", "-i", "-",
                            "-c:v", "libx264", "-pix_fmt", "yuv420p", path],
                           input=video.tobytes(), check=True)
    return root


def build(root, batch_size, threads):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=threads, seed=1)
    def pipe():
        video, label = fn.readers.video_resize(file_root=root, sequence_length=SEQ,
                                               stride=STRIDE, step=SEQ * STRIDE,
                                               resize_x=SIZE, resize_y=SIZE, dtype=types.FLOAT,
                                               random_shuffle=True, name="Reader")
        video = fn.flip(video, horizontal=fn.random.coin_flip(probability=0.5))
        return (video - 114.8) / 57.4, label
    return pipe()


def torchvision_decode(paths):
    try:
        import torchvision.io
    except ImportError:
        return None
    start = time.perf_counter()
    for p in paths:
        torchvision.io.read_video(p, pts_unit="sec", output_format="TCHW")
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", type=int, default=0, help="time this many batches")
    args = ap.parse_args()
    tmp = None
    root = args.root
    if root is None:
        tmp = tempfile.TemporaryDirectory()
        root = make_dataset(tmp.name)
    p = build(root, args.batch_size, args.threads)
    video, label = p.run()
    first = np.asarray(video.at(0))
    print(f"batch of {len(video)}: clips {first.shape} ({video.layout()}), labels "
          f"{[int(np.asarray(label.at(i))[0]) for i in range(len(label))]}")
    if args.bench:
        start = time.perf_counter()
        for _ in range(args.bench):
            p.run()
        dt = time.perf_counter() - start
        print(f"stoker: {args.bench * args.batch_size / dt:.1f} clips/s of {SEQ} frames "
              f"({args.threads} threads)")
        paths = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
        tv = torchvision_decode(paths)
        if tv is None:
            print("torchvision not installed: no comparison")
        else:
            print(f"torchvision.io.read_video: {len(paths) / tv:.1f} whole files/s (1 thread)")


if __name__ == "__main__":
    main()
