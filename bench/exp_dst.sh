#!/usr/bin/env bash
# Does decoding into destinations that change from call to call (a pipeline's output
# lists: a new block each batch, images packed) slow nvJPEG's engines' call, where bare
# decodes into one buffer at a fixed stride every time? Interleaved (bench/interleave.py).
#   STK_EXEC='R=6 bash bench/exp_dst.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60 --threads 15 --pipeline"
python3 bench/interleave.py --rounds "${R:-6}" \
  bare="$B" bare_rotate1="$B --bare-dst-rotate 1" bare_rotate4="$B --bare-dst-rotate 4" basic_t15="$S basic"
