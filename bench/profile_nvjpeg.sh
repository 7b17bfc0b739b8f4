#!/usr/bin/env bash
# Where nvJPEG's batched hardware call spends its CPU time, bare and inside basic@gpu
# (bench/cpu_sampler.c, preloaded), and whether nvJPEG's memory padding or pre-allocation
# shortens the call (gpu_bench --bare-padding / --bare-prealloc, interleaved rounds).
# usage: bench/profile_nvjpeg.sh BUILD DATA OUTDIR [ROUNDS]   (on the GPU machine, through
#        scripts/gpu-check.sh exec: STK_EXEC='bash bench/profile_nvjpeg.sh $BUILD $DATA $OUT')
set -u
BUILD=$1 DATA=$2 OUTDIR=$3 ROUNDS=${4:-3}
SAMPLER=$BUILD/libstk_sampler.so
rate() { grep -E '^RESULT|^bare:|^ +[0-9.]+ images/s' | sed -E 's/.*= ([0-9]+ img\/s).*; ([0-9.]+ ms per call).*/\1 \2/'; }

sampled() { # LABEL CMD...: the command under the sampler; its report printed
  local label=$1
  shift
  rm -f /tmp/stkprof.*
  STK_SAMPLER_OUT=/tmp/stkprof STK_SAMPLER_DELAY=${STK_SAMPLER_DELAY:-2} LD_PRELOAD=$SAMPLER "$@" 2>/dev/null | rate
  for f in /tmp/stkprof.*.txt; do
    [ -f "$f" ] || continue
    cp "$f" "$OUTDIR/prof_$label.txt"
    echo "---- sampler report: $label"
    cat "$f"
  done
}

echo "== sampled runs"
sampled bare "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 80 --threads 15 --only bare --bare-pinned
sampled basic_t15 "$BUILD/stoker" bench --data "$DATA" --pipeline basic --device gpu --batch-size 256 --threads 15 --epochs 120
sampled basic_t15_nosplit env STK_SPLIT_DECODE=0 "$BUILD/stoker" bench --data "$DATA" --pipeline basic --device gpu \
  --batch-size 256 --threads 15 --epochs 120

echo "== nvJPEG memory padding and pre-allocation, bare from pinned memory, interleaved"
for r in $(seq "$ROUNDS"); do
  for v in "" "--bare-padding 64" "--bare-prealloc" "--bare-padding 64 --bare-prealloc"; do
    printf 'round %s %-36s ' "$r" "${v:-plain}"
    # shellcheck disable=SC2086
    "$BUILD/gpu_bench" "$DATA" --batch 256 --epochs 40 --threads 15 --only bare --bare-pinned $v 2>&1 | grep -E '^RESULT|^bare:' | rate
  done
done
