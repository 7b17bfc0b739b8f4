#!/usr/bin/env bash
# The demo: makes an ImageNet-like JPEG set from the bundled photographs, runs the basic
# pipeline over it (decode of a random crop window, resize to 224, random mirror,
# normalise to float CHW) and the same with RandAugment (n=2, m=9), prints images/s and
# writes preview PNGs of both.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=bench/data/demo
OUT=demo-out
THREADS=$(nproc)
if [ ! -d "$DATA" ]; then
  .venv/bin/python scripts/make_dataset.py "$DATA" --count 512 --seed 1
fi
mkdir -p "$OUT"
echo "== stoker bench: basic pipeline, $THREADS threads"
build/stoker bench --data "$DATA" --pipeline basic --batch-size 32 --threads "$THREADS" --epochs 2
echo "== stoker bench: basic + RandAugment, $THREADS threads"
build/stoker bench --data "$DATA" --pipeline randaugment --batch-size 32 --threads "$THREADS" --epochs 1
echo "== stoker preview"
build/stoker preview --data "$DATA" --pipeline basic --count 16 --seed 7 --out "$OUT/preview.png"
build/stoker preview --data "$DATA" --pipeline randaugment --count 16 --seed 7 --out "$OUT/preview-randaugment.png"
