#!/usr/bin/env bash
# The nvJPEG memory arguments in the pipeline: bare decoding (plain, and with nvJPEG's
# padding and pre-allocation) against basic@gpu with the defaults (padding 16 / 8 MiB),
# padding off, and pre-allocation for 500x500, interleaved (bench/interleave.py); the GPU
# tests first, as the decoder changed. Run through gpu-check's exec step:
#   STK_EXEC='R=5 bash bench/exp_nvjpeg_memory.sh' scripts/gpu-check.sh exec
set -u
echo "== gpu_tests"; timeout 200 $BUILD/gpu_tests --dataset $DATA --extra $EXTRA 2>&1 | tail -4
echo "== test_gpu_pipeline"; timeout 120 $BUILD/test_gpu_pipeline 2>&1 | tail -3
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --threads 15 --epochs 60 --pipeline"
python3 bench/interleave.py --rounds ${R:-5} \
  bare="$B" bare_pad_pre="$B --bare-padding 16 --bare-prealloc" \
  basic="$S basic" basic_nopad="$S bench/pipelines/basic_gpu_nopad.txt" basic_prealloc="$S bench/pipelines/basic_gpu_prealloc.txt"
