#!/usr/bin/env python3
"""Segmentation input pipeline: images and their pixelwise masks from a COCO set,
transformed identically (random resized crop, flip, rotation, AutoAugment) by sharing the
random argument nodes and seeds, with nearest-neighbour sampling for the masks.

    python examples/segmentation.py [--data IMAGES --annotations instances.json]
                                    [--device cpu|gpu] [--batch-size 8] [--iters 3]

Without --data a small COCO-style set is written from the bundled photographs (see
ssd_detection.py). --device gpu moves images and masks to the GPU before the geometric
operators. Each batch is checked: every mask holds only labels of its image's objects.
See docs/detection.md, "Keeping images, masks and boxes in step".
"""

import argparse
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # a checkout without `pip install .`
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ssd_detection import make_dataset  # noqa: E402
from stoker import fn, pipeline_def, types  # noqa: E402
from stoker.auto_aug import auto_augment  # noqa: E402

SEED = 1234  # one seed for both random_resized_crop calls: the same window


@pipeline_def(enable_conditionals=True)
def segmentation_pipeline(images_dir, annotations, size, device):
    jpegs, _, labels, masks = fn.readers.coco(file_root=images_dir, annotations_file=annotations,
                                              pixelwise_masks=True, random_shuffle=True,
                                              name="Reader")
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    masks = fn.cast(masks, dtype=types.UINT8)  # labels < 256 here
    if device == "gpu":
        images, masks = images.gpu(), masks.gpu()
    images = fn.random_resized_crop(images, size=[size, size], seed=SEED)
    masks = fn.random_resized_crop(masks, size=[size, size], seed=SEED,
                                   interp_type=types.INTERP_NN)
    flip = fn.random.coin_flip(probability=0.5)
    angle = fn.random.uniform(range=[-15.0, 15.0])
    images = fn.rotate(fn.flip(images, horizontal=flip), angle=angle, keep_size=True, fill_value=0)
    masks = fn.rotate(fn.flip(masks, horizontal=flip), angle=angle, keep_size=True, fill_value=0,
                      interp_type=types.INTERP_NN)
    images, masks = auto_augment.auto_augment(images, masks=masks)
    return images, masks, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="the image directory (file_root)")
    ap.add_argument("--annotations", help="the COCO instances JSON")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args()

    if args.data and args.annotations:
        images_dir, annotations = args.data, args.annotations
    else:
        images_dir, annotations = make_dataset(tempfile.mkdtemp(prefix="stoker-coco-"))
    pipe = segmentation_pipeline(images_dir, annotations, args.size, args.device,
                                 batch_size=args.batch_size,
                                 num_threads=min(4, os.cpu_count() or 1), seed=1,
                                 device_id=0 if args.device == "gpu" else None)
    pipe.build()
    for it in range(args.iters):
        images, masks, labels = pipe.run()
        if args.device == "gpu":
            images, masks = images.as_cpu(), masks.as_cpu()
        for k in range(len(masks)):
            m, lab = np.array(masks[k]), set(np.array(labels[k]).tolist()) | {0}
            assert np.array(images[k]).shape[:2] == m.shape[:2] == (args.size, args.size)
            assert set(np.unique(m).tolist()) <= lab, "a mask gained a label: not nearest?"
        cover = [float((np.array(m) > 0).mean()) for m in masks]
        print(f"batch {it}: {len(masks)} images {args.size}x{args.size}, mask coverage "
              + " ".join(f"{c:.2f}" for c in cover), flush=True)


if __name__ == "__main__":
    main()
