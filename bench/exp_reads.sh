#!/usr/bin/env bash
# Do a reader's file reads slow nvJPEG's engines' call? Bare decoding beside 4 threads
# re-reading the dataset's files at a pipeline's pace (30k files/s together, the rate
# basic@gpu reads at) and flat out, against basic@gpu, interleaved (bench/interleave.py).
#   STK_EXEC='R=6 bash bench/exp_reads.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60 --threads 15 --pipeline"
python3 bench/interleave.py --rounds "${R:-6}" \
  bare="$B" bare_read4_30k="$B --bare-read-load 4 --bare-read-rate 30000" \
  bare_read15_30k="$B --bare-read-load 15 --bare-read-rate 30000" bare_read4_max="$B --bare-read-load 4" \
  basic_t15="$S basic"
