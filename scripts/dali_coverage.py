#!/usr/bin/env python3
"""How much of DALI's operator list stoker has: lists DALI's `nvidia.dali.fn` operators
(through a Python that has DALI, e.g. a separate venv with nvidia-dali-cuda130), leaves out
DALI's hidden operators and its legacy names (`*_reader`, `image_decoder*`, `uniform`, ...,
kept by DALI for old code), and prints the share stoker's registry has and what is missing.

usage: scripts/dali_coverage.py [--dali-python /path/to/venv/bin/python]
"""
import argparse
import subprocess
import sys

LIST_DALI = r"""
import types, nvidia.dali.fn as fn
seen = set()
def walk(mod, prefix):
    for n in dir(mod):
        if n.startswith('_'):
            continue
        o = getattr(mod, n)
        if isinstance(o, types.ModuleType):
            if o.__name__.startswith('nvidia.dali.fn'):
                walk(o, prefix + n + '.')
        elif callable(o):
            seen.add(prefix + n)
walk(fn, '')
print('\n'.join(sorted(seen)))
"""
LEGACY = {"audio_decoder", "caffe2_reader", "caffe_reader", "coco_reader", "coin_flip", "file_reader",
          "image_decoder", "image_decoder_crop", "image_decoder_random_crop", "image_decoder_slice",
          "mxnet_reader", "nemo_asr_reader", "normal_distribution", "numpy_reader", "sequence_reader",
          "tfrecord_reader", "transform_translation", "uniform", "video_reader", "video_reader_resize"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dali-python", default="/work/dali-venv/bin/python")
    args = ap.parse_args()
    out = subprocess.run([args.dali_python, "-c", LIST_DALI], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cannot list DALI's operators with {args.dali_python}: {out.stderr.strip()[-300:]}")
    dali = [n for n in out.stdout.split() if "hidden" not in n and n not in LEGACY]
    from stoker import _schema
    ours = set(_schema.registry())
    missing = [n for n in dali if n not in ours]
    have = len(dali) - len(missing)
    print(f"DALI operators (hidden and legacy names left out): {len(dali)}; stoker has {have} "
          f"({100.0 * have / len(dali):.1f}%)")
    print("missing: " + (", ".join(missing) if missing else "none"))


if __name__ == "__main__":
    main()
