#!/usr/bin/env bash
# Where nvJPEG's batched hardware call spends its CPU time, bare and inside basic@gpu
# (automatic split and hw_decoder_load 1.0), ROUNDS times: bench/tools/cpu_sampler.c preloaded,
# each report summarised (threads; the decoding thread by library and function) and the
# first of each kind kept in OUTDIR.
# usage: bench/profile_nvjpeg.sh BUILD DATA OUTDIR [ROUNDS]   (on the GPU machine, through
#        scripts/gpu-check.sh exec: STK_EXEC='bash bench/profile_nvjpeg.sh $BUILD $DATA $OUT')
set -u
BUILD=$1 DATA=$2 OUTDIR=$3 ROUNDS=${4:-3}
SAMPLER=$BUILD/libstk_sampler.so
rate() { grep -E '^RESULT|^bare:|^ +[0-9.]+ images/s' | sed -E 's/.*= ([0-9]+ img\/s).*; ([0-9.]+ ms per call).*/\1 \2/'; }

# compact: the threads, then the decoding thread's libraries and functions
compact() {
  awk '/^  by thread/ {t = 1; n = 0; print; next}
       t && n < 4 {print; n++; next}
       /^thread (gpu_bench|stk-decode|stk-gpu):/ {d = 1; print; next}
       /^thread / {d = 0}
       d && /by call chain/ {d = 0}
       d {print}' "$1" | head -60
}

sampled() { # LABEL CMD...: the command under the sampler; its report summarised
  local label=$1
  shift
  rm -f /tmp/stkprof.*
  STK_SAMPLER_OUT=/tmp/stkprof STK_SAMPLER_DELAY=${STK_SAMPLER_DELAY:-2} LD_PRELOAD=$SAMPLER "$@" 2>/dev/null | rate
  for f in /tmp/stkprof.*.txt; do
    [ -f "$f" ] || continue
    [ -f "$OUTDIR/prof_$label.txt" ] || cp "$f" "$OUTDIR/prof_$label.txt"
    echo "---- sampler report: $label"
    compact "$f"
  done
}

S="$BUILD/stoker bench --data $DATA --pipeline"
for r in $(seq "$ROUNDS"); do
  echo "== sampled runs, round $r"
  sampled bare "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 80 --threads 15 --only bare --bare-pinned
  sampled basic_t15 $S basic --device gpu --batch-size 256 --threads 15 --epochs 120
  sampled basic_hw10_t15 $S bench/pipelines/basic_gpu_hw10.txt --device gpu --batch-size 256 --threads 15 --epochs 120
done
