#!/usr/bin/env bash
# The stand-ins of exp_loads.sh / exp_reads.sh all at once beside bare decoding (each alone
# did not slow it): header classification on 4 threads at 30k images/s, stream-ordered
# allocations and synchronisations, 4 readers at 30k files/s; against basic@gpu.
#   STK_EXEC='R=6 bash bench/exp_all_loads.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60 --threads 15 --pipeline"
python3 bench/interleave.py --rounds "${R:-6}" \
  bare="$B" bare_all="$B --bare-classify-load 4 --bare-driver-load --bare-read-load 4 --bare-read-rate 30000" \
  basic_t15="$S basic"
