#!/usr/bin/env python3
"""Why sampling matters: a small classifier trained on a class-sorted folder, fed three
ways, with the loss curves side by side.

    python bench/bench_sampling_training.py [--epochs 4] [--per-class 240] [--out DIR]

The data set: 7 classes (one per bundled photograph), each image a random 32x32 crop of
its photograph with sensor-like noise, written class by class as PNG files (the layout of
an ImageFolder such as ImageNet) and as one tar shard per class (a WebDataset written
without mixing). A held-out set of the same kind measures accuracy.

The feeds, each for the same number of epochs and steps:
  stoker       readers.file(random_shuffle=True): a permutation of the whole data set
               per epoch (stoker's sampler);
  torch        torch.utils.data.DataLoader(shuffle=True) over the same files (Pillow);
  buffer-64    readers.webdataset(streaming=True, random_shuffle=True, initial_fill=64)
               over the class-by-class shards: a small shuffle buffer over a
               class-sorted stream, which is what stoker's readers did before every
               epoch became a permutation (batches of one or two classes).

Needs torch (not run in CI). Prints one table: per epoch, the mean training loss and the
held-out accuracy of each feed, and the mean number of classes per batch.
"""

import argparse
import io
import os
import sys
import tarfile
import tempfile
import time

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from stoker import fn, pipeline_def, types  # noqa: E402
from stoker.plugin.torch import ClassificationIterator, LastBatchPolicy  # noqa: E402

SIZE = 32


def crops(photo, count, rng):
    """`count` noisy 32x32 crops of `photo` (HWC uint8) at half scale."""
    small = np.asarray(Image.fromarray(photo).resize((photo.shape[1] // 4, photo.shape[0] // 4)))
    out = []
    for _ in range(count):
        y = rng.integers(0, small.shape[0] - SIZE)
        x = rng.integers(0, small.shape[1] - SIZE)
        c = small[y:y + SIZE, x:x + SIZE].astype(np.float32) + rng.normal(0, 6, (SIZE, SIZE, 3))
        out.append(np.clip(c, 0, 255).astype(np.uint8))
    return out


def png_bytes(a):
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def make_data(out, per_class, seed=0):
    """ImageFolder train/ and test/ folders and one tar shard per class (train)."""
    rng = np.random.default_rng(seed)
    photo_dir = os.path.join(ROOT, "data", "photos")
    names = sorted(f for f in os.listdir(photo_dir) if f.endswith((".png", ".jpg")))
    shards = []
    for label, name in enumerate(names):
        photo = np.asarray(Image.open(os.path.join(photo_dir, name)).convert("RGB"))
        for split, count in (("train", per_class), ("test", per_class // 4)):
            d = os.path.join(out, split, f"{label:02d}")
            os.makedirs(d, exist_ok=True)
            images = crops(photo, count, rng)
            for i, a in enumerate(images):
                with open(os.path.join(d, f"{i:04d}.png"), "wb") as f:
                    f.write(png_bytes(a))
            if split == "train":
                shards.append(os.path.join(out, f"class-{label:02d}.tar"))
                with tarfile.open(shards[-1], "w") as tar:
                    for i, a in enumerate(images):
                        for ext, data in (("png", png_bytes(a)), ("cls", str(label).encode())):
                            info = tarfile.TarInfo(f"{label:02d}_{i:04d}.{ext}")
                            info.size = len(data)
                            tar.addfile(info, io.BytesIO(data))
    return os.path.join(out, "train"), os.path.join(out, "test"), shards, len(names)


def normalise(images):
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                    mean=[127.5] * 3, std=[64.0] * 3)


@pipeline_def
def folder_pipe(root, shuffle):
    pngs, labels = fn.readers.file(file_root=root, random_shuffle=shuffle, name="Reader")
    return normalise(fn.decoders.image(pngs, output_type=types.RGB)), labels


@pipeline_def
def shard_pipe(shards, fill):
    png, cls = fn.readers.webdataset(paths=shards, ext=["png", "cls"], streaming=True,
                                     random_shuffle=True, initial_fill=fill, name="Reader")
    label = fn.cast(fn.python_function(cls, function=lambda b: np.array([int(bytes(b))], np.int32)),
                    dtype=types.INT32)
    return normalise(fn.decoders.image(png, output_type=types.RGB)), label


class FolderDataset(torch.utils.data.Dataset):
    def __init__(self, root):
        self.items = [(os.path.join(root, c, f), int(c)) for c in sorted(os.listdir(root))
                      for f in sorted(os.listdir(os.path.join(root, c)))]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        a = np.asarray(Image.open(path).convert("RGB"), np.float32)
        return torch.from_numpy(((a - 127.5) / 64.0).transpose(2, 0, 1).copy()), label


def model(classes):
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 8 * 8, classes))


def stoker_batches(it):
    for b in it:
        yield b[0]["data"], b[0]["label"].reshape(-1).long()


def train(name, batches_per_epoch, epochs, classes, test_loader):
    net = model(classes)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    rows = []
    for epoch in range(epochs):
        losses, mix = [], []
        for x, y in batches_per_epoch():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            mix.append(len(set(y.tolist())))
        correct = total = 0
        with torch.no_grad():
            for x, y in test_loader:
                correct += (net(x).argmax(1) == y).sum().item()
                total += len(y)
        rows.append((float(np.mean(losses)), correct / total, float(np.mean(mix))))
        print(f"  {name:10s} epoch {epoch}: loss {rows[-1][0]:.3f}  held-out accuracy "
              f"{rows[-1][1]:.3f}  classes per batch {rows[-1][2]:.1f}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--per-class", type=int, default=240)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="stk-sampling-")
    t0 = time.time()
    train_dir, test_dir, shards, classes = make_data(out, a.per_class)
    print(f"data: {classes} classes x {a.per_class} (class-sorted) in {out}, {time.time() - t0:.1f} s")
    test_loader = torch.utils.data.DataLoader(FolderDataset(test_dir), batch_size=256)
    bs = a.batch_size

    it = ClassificationIterator(folder_pipe(train_dir, True, batch_size=bs, num_threads=4, seed=1),
                                reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
                                auto_reset=True)
    loader = torch.utils.data.DataLoader(FolderDataset(train_dir), batch_size=bs, shuffle=True,
                                         generator=torch.Generator().manual_seed(1))
    buf = ClassificationIterator(shard_pipe(shards, 64, batch_size=bs, num_threads=4, seed=1),
                                 reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
                                 auto_reset=True)
    results = {
        "stoker": train("stoker", lambda: stoker_batches(it), a.epochs, classes, test_loader),
        "torch": train("torch", lambda: iter(loader), a.epochs, classes, test_loader),
        "buffer-64": train("buffer-64", lambda: stoker_batches(buf), a.epochs, classes, test_loader),
    }
    print("\n| epoch | " + " | ".join(f"{k} loss / acc / classes per batch" for k in results) + " |")
    print("|---|" + "---|" * len(results))
    for e in range(a.epochs):
        cells = [f"{r[e][0]:.3f} / {r[e][1]:.3f} / {r[e][2]:.1f}" for r in results.values()]
        print(f"| {e} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
