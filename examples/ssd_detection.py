#!/usr/bin/env python3
"""SSD-style detection input pipeline: COCO reader, random_bbox_crop, flip with bb_flip,
resize and normalise, box_encoder against SSD default boxes.

    python examples/ssd_detection.py [--data IMAGES --annotations instances.json]
                                     [--device cpu|gpu] [--batch-size 8] [--iters 3]

Without --data a small COCO-style set is written from the bundled photographs (random
boxes with polygon masks) into a temporary directory. --device gpu runs the resize and
normalisation on the GPU (the box operators run on the CPU, as in DALI where only
bb_flip and box_encoder have GPU versions). See docs/detection.md.
"""

import argparse
import itertools
import json
import math
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # a checkout without `pip install .`

from stoker import fn, pipeline_def, types  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def default_boxes(size=300, fmaps=(19, 10, 5, 3, 1), scales=(45, 99, 153, 207, 261, 315),
                  ratios=((2,), (2, 3), (2, 3), (2,), (2,))):
    """SSD default boxes (ltrb, relative), a smaller SSD300 grid: per feature-map cell a
    small and a large square and the rectangles of the aspect ratios."""
    out = []
    for k, f in enumerate(fmaps):
        s, s2 = scales[k] / size, math.sqrt(scales[k] * scales[k + 1]) / size
        shapes = [(s, s), (s2, s2)]
        for r in ratios[k]:
            w, h = s * math.sqrt(r), s / math.sqrt(r)
            shapes += [(w, h), (h, w)]
        for i, j in itertools.product(range(f), repeat=2):
            cx, cy = (j + 0.5) / f, (i + 0.5) / f
            for w, h in shapes:
                out.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
    return np.clip(np.array(out, np.float32), 0, 1)


def make_dataset(out, seed=1):
    """A COCO-style set from the bundled photographs: 2-4 random boxes per image, each with
    a rectangular polygon, categories 1..5."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    photos = os.path.join(ROOT, "data", "photos")
    images, anns = [], []
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    for i, name in enumerate(sorted(os.listdir(photos))):
        if not name.endswith((".png", ".jpg")):
            continue
        im = Image.open(os.path.join(photos, name)).convert("RGB")
        im.thumbnail((320, 320))
        fname = f"{i:03d}.jpg"
        im.save(os.path.join(out, "images", fname), quality=90)
        w, h = im.size
        images.append({"id": i + 1, "file_name": fname, "width": w, "height": h})
        for _ in range(int(rng.integers(2, 5))):
            bw, bh = rng.uniform(0.1, 0.5) * w, rng.uniform(0.1, 0.5) * h
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "iscrowd": 0,
                         "category_id": int(rng.integers(1, 6)), "bbox": [x, y, bw, bh],
                         "area": bw * bh,
                         "segmentation": [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]})
    cats = [{"id": c, "name": f"class{c}"} for c in range(1, 6)]
    path = os.path.join(out, "instances.json")
    with open(path, "w") as f:
        json.dump({"images": images, "annotations": anns, "categories": cats}, f)
    return os.path.join(out, "images"), path


def crop_window(image, anchor, shape):
    """Crops an HWC image to a relative window (DALI pipelines write fn.slice here)."""
    h, w = image.shape[:2]
    x0, y0 = int(round(anchor[0] * w)), int(round(anchor[1] * h))
    x1 = max(x0 + 1, int(round((anchor[0] + shape[0]) * w)))
    y1 = max(y0 + 1, int(round((anchor[1] + shape[1]) * h)))
    return np.ascontiguousarray(image[y0:min(y1, h), x0:min(x1, w)])


@pipeline_def
def ssd_pipeline(images_dir, annotations, anchors, size, device):
    jpegs, boxes, labels = fn.readers.coco(file_root=images_dir, annotations_file=annotations,
                                           ltrb=True, ratio=True, skip_empty=True,
                                           random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    anchor, shape, boxes, labels = fn.random_bbox_crop(
        boxes, labels, bbox_layout="xyXY", thresholds=[0.1, 0.3, 0.5, 0.7, 0.9],
        scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], num_attempts=50, allow_no_crop=True)
    images = fn.python_function(images, anchor, shape, function=crop_window)
    flip = fn.random.coin_flip(probability=0.5)
    boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
    if device == "gpu":
        images = images.gpu()
    images = fn.resize(images, resize_x=size, resize_y=size)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                      mean=MEAN, std=STD, mirror=flip)
    boxes, labels = fn.box_encoder(boxes, labels, anchors=anchors.ravel().tolist(),
                                   criteria=0.5, offset=True, scale=1.0,
                                   stds=[0.1, 0.1, 0.2, 0.2])
    return images, boxes, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="the image directory (file_root)")
    ap.add_argument("--annotations", help="the COCO instances JSON")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--size", type=int, default=300)
    args = ap.parse_args()

    if args.data and args.annotations:
        images_dir, annotations = args.data, args.annotations
    else:
        images_dir, annotations = make_dataset(tempfile.mkdtemp(prefix="stoker-coco-"))
    anchors = default_boxes(args.size)
    pipe = ssd_pipeline(images_dir, annotations, anchors, args.size, args.device,
                        batch_size=args.batch_size, num_threads=min(4, os.cpu_count() or 1),
                        seed=1, device_id=0 if args.device == "gpu" else None)
    pipe.build()
    for it in range(args.iters):
        images, boxes, labels = pipe.run()
        if args.device == "gpu":
            images = images.as_cpu()
        imgs = np.array(images.as_tensor()) if hasattr(images, "as_tensor") else None
        matched = [int((np.array(l) > 0).sum()) for l in labels]
        print(f"batch {it}: images {None if imgs is None else imgs.shape}, "
              f"{len(anchors)} anchors per image, matched anchors per image {matched}",
              flush=True)
    enc = np.array(boxes[0])
    assert enc.shape == (len(anchors), 4) and np.isfinite(enc).all()


if __name__ == "__main__":
    main()
