#!/usr/bin/env bash
# Follow-up to exp_threads.sh (basic@gpu nearer bare with 4 CPU threads than with 15):
# is it the CPU stage's worker count, or the nvJPEG hybrid threads (half the CPUs, at most
# the thread count: 8 slots at 15 threads, 4 at 4) that the automatic split plays and
# explores? STK_NVJPEG_THREADS fixes the latter; hw_decoder_load 1.0 never splits.
#   STK_EXEC='R=6 bash bench/exp_threads2.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60"
HW10=bench/pipelines/basic_gpu_hw10.txt
python3 bench/interleave.py --rounds "${R:-6}" \
  bare="$B" basic_t15="$S --pipeline basic --threads 15" \
  basic_t15_nvj4="env STK_NVJPEG_THREADS=4 $S --pipeline basic --threads 15" \
  basic_t4="$S --pipeline basic --threads 4" \
  hw10_t15="$S --pipeline $HW10 --threads 15" hw10_t4="$S --pipeline $HW10 --threads 4"
