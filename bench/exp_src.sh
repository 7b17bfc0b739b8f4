#!/usr/bin/env bash
# Next hypothesis for basic@gpu's 11-15% gap to bare nvJPEG (bench/RESULTS.md, 2026-11-25
# third session; written then, NOT YET RUN): the pipeline's bitstreams sit packed in the
# large registered blocks of its host pool, which rotate from batch to batch, where bare
# reads each file from its own fixed pinned copy. Bare with the files packed into 1 or 4
# blocks (registered as the pool's are, or cudaHostAlloc'd), against basic@gpu with its
# pool registered (default) or cudaHostAlloc'd (STK_PIN_HOST=alloc), interleaved.
#   STK_EXEC='R=6 bash bench/exp_src.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60 --threads 15 --pipeline basic"
python3 bench/interleave.py --rounds "${R:-6}" \
  bare_pinned="$B --bare-pinned" bare_registered="$B --bare-registered" \
  reg_blocks1="$B --bare-registered --bare-src-blocks 1" reg_blocks4="$B --bare-registered --bare-src-blocks 4" \
  pinned_blocks4="$B --bare-pinned --bare-src-blocks 4" \
  basic="$S" basic_pin_alloc="env STK_PIN_HOST=alloc $S"
