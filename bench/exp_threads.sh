#!/usr/bin/env bash
# basic@gpu's rate against bare nvJPEG as the CPU stage's thread count changes, and bare
# nvJPEG with busy loops on the other CPUs: is the engines' call slower in the pipeline
# because other busy threads slow the calling thread's CPU? Interleaved rounds
# (bench/interleave.py). Run through gpu-check's exec step:
#   STK_EXEC='R=6 bash bench/exp_threads.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60 --pipeline basic --threads"
# (the commands run under /bin/sh: the loops' pids are kept, their output goes nowhere)
SPIN='pids=; for c in $(seq 14); do (while :; do :; done) >/dev/null 2>&1 & pids="$pids $!"; done; sleep 0.3'
STOP='kill $pids'
python3 bench/interleave.py --rounds "${R:-6}" \
  bare="$B" bare_14busy="$SPIN; $B; $STOP" \
  basic_t15="$S 15" basic_t8="$S 8" basic_t4="$S 4" basic_t2="$S 2"
