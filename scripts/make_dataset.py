#!/usr/bin/env python3
"""Makes an ImageNet-like JPEG dataset (ImageFolder layout) from real photographs.

Each image is a random crop of one photograph at (nearly) native scale, with an
ImageNet-like size (mostly 500 px on the long side, 4:3 / 3:2 / square shapes), a little
sensor-like noise (Gaussian, sigma 5-9, plus luminance-dependent shot noise) so the
files compress like camera JPEGs, saved at quality 90 with 4:2:0 chroma subsampling.
Classes are the source photographs. Prints the mean file size and Pillow's bare decode
time so figures can be compared with ImageNet's (~110 KB mean).

usage: make_dataset.py OUT_DIR [--count N] [--seed S] [--photos DIR]
"""
import argparse
import io
import os
import sys
import time

import numpy as np
from PIL import Image

SHAPES = [(500, 375), (500, 333), (375, 500), (500, 500), (333, 500), (400, 300), (500, 400)]


def load_photos(folder):
    photos = {}
    for name in sorted(os.listdir(folder)):
        if name.lower().endswith((".png", ".jpg", ".jpeg")):
            img = Image.open(os.path.join(folder, name)).convert("RGB")
            photos[os.path.splitext(name)[0]] = np.asarray(img)
    if not photos:
        sys.exit(f"make_dataset: no photographs in {folder}")
    return photos


def make_image(photo, rng):
    h, w = photo.shape[:2]
    tw, th = SHAPES[rng.integers(len(SHAPES))]
    # Native scale where the photo is large enough; otherwise scale the photo up just
    # enough (small photos such as chelsea.png are 451x300).
    scale = max(tw / w, th / h, 1.0) * rng.uniform(1.0, 1.15)
    if scale > 1.0:
        img = Image.fromarray(photo).resize((int(w * scale + 1), int(h * scale + 1)), Image.BICUBIC)
        photo = np.asarray(img)
        h, w = photo.shape[:2]
    y = rng.integers(0, h - th + 1)
    x = rng.integers(0, w - tw + 1)
    crop = photo[y:y + th, x:x + tw].astype(np.float32)
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    sigma = rng.uniform(5.0, 9.0)
    noise = rng.normal(0.0, sigma, crop.shape) + rng.normal(0.0, 1.0, crop.shape) * np.sqrt(crop / 64.0)
    return np.clip(crop + noise, 0, 255).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--photos", default=os.path.join(here, "..", "data", "photos"))
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    photos = load_photos(args.photos)
    names = list(photos)
    sizes = []
    for i in range(args.count):
        cls = names[i % len(names)]
        folder = os.path.join(args.out, cls)
        os.makedirs(folder, exist_ok=True)
        buf = io.BytesIO()
        Image.fromarray(make_image(photos[cls], rng)).save(buf, "JPEG", quality=90, subsampling=2)
        with open(os.path.join(folder, f"{cls}_{i:06d}.jpg"), "wb") as f:
            f.write(buf.getvalue())
        sizes.append(len(buf.getvalue()))
    # Bare decode time with Pillow (libjpeg-turbo underneath), one core.
    files = [os.path.join(dp, f) for dp, _, fs in os.walk(args.out) for f in fs if f.endswith(".jpg")]
    sample = files[: min(len(files), 200)]
    blobs = [open(f, "rb").read() for f in sample]
    t0 = time.perf_counter()
    for b in blobs:
        Image.open(io.BytesIO(b)).convert("RGB").load()
    ms = 1e3 * (time.perf_counter() - t0) / len(blobs)
    print(f"make_dataset: {args.count} JPEGs in {len(names)} classes at {args.out}; "
          f"mean file size {np.mean(sizes) / 1e3:.1f} KB; Pillow full decode {ms:.2f} ms/image (1 core)")


if __name__ == "__main__":
    main()
