#!/usr/bin/env bash
# Which part of a pipeline slows nvJPEG's engines' call (basic@gpu: 85% of bare in
# exp_threads2.sh, hw_decoder_load 1.0 too)? Bare decoding beside a stand-in for each part
# (gpu_bench --bare-classify-load / --bare-driver-load / --bare-read-load), and the decode
# preset (no kernels after decoding) beside basic, interleaved (bench/interleave.py).
#   STK_EXEC='R=5 bash bench/exp_loads.sh' scripts/gpu-check.sh exec
set -u
B="$BUILD/gpu_bench $DATA --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned"
S="$BUILD/stoker bench --data $DATA --device gpu --batch-size 256 --epochs 60 --threads 15 --pipeline"
python3 bench/interleave.py --rounds "${R:-5}" \
  bare="$B" bare_classify4="$B --bare-classify-load 4" bare_classify12="$B --bare-classify-load 12" \
  bare_driver="$B --bare-driver-load" bare_read4="$B --bare-read-load 4" \
  decode_t15="$S decode" basic_t15="$S basic"
