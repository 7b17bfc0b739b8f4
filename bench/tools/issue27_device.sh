#!/usr/bin/env bash
# Issue 27's checks in one device call (nvidia-h100-x2 / h200-x2), from binaries built on
# the development machine and carried: build-dev/ (the fix: stoker, libstoker_cuda.so,
# multi_pipeline, gpu_tests), build-old/ (stoker and libstoker_cuda.so before it) and .deps/
# (libjpeg-turbo, libspng as Debian packages).
#   1. gpu_tests on the data set (decoder parity with the CPU);
#   2. throughput, randaugment@gpu: the fix alone on GPU 0 against the old build alone,
#      then both GPUs at once, interleaved rounds;
#   3. paired runs of every GPU preset under a watchdog (bench/tools/paired_runs.sh);
#   4. two pipelines in one process on one GPU (build-dev/multi_pipeline), looped.
# usage: bench/tools/issue27_device.sh [PAIRED_SECONDS] [DUAL_SECONDS] [ROUNDS]
set -u
PAIRED_S=${1:-150}
DUAL_S=${2:-60}
ROUNDS=${3:-3}
OUTDIR=${OUT:-./issue27-out}
mkdir -p "$OUTDIR" /tmp/deps
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
export DATA=${DATA:-/tmp/stk-paired-data}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
oom_before=$(dmesg 2>/dev/null | grep -c "NV_ERR_NO_MEMORY")
if [ ! -d "$DATA" ]; then
  for i in 0 1 2 3 4 5 6 7; do python3 scripts/make_dataset.py "$DATA/p$i" --count 250 --seed "$i" >/dev/null & done
  wait
fi

echo "== 1. gpu_tests"
timeout 150 build-dev/gpu_tests --small --no-bad-inputs --lib build-dev/libstoker_cuda.so --dataset "$DATA" \
  >"$OUTDIR/gpu_tests.log" 2>&1
echo "gpu_tests exit $?: $(tail -2 "$OUTDIR/gpu_tests.log" | tr '\n' ' ')"

rate() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["images_per_s"]))' "$1" 2>/dev/null || echo "?"; }
bench() { # BIN GPU OUTFILE
  CUDA_VISIBLE_DEVICES=$2 timeout 60 "$1" bench --data "$DATA" --pipeline randaugment --device gpu --batch-size 256 \
    --threads 15 --epochs 12 --json >"$3" 2>"$3.err"
}
echo "== 2. throughput (randaugment@gpu, 2000 images x 12 epochs, 15 threads)"
for r in $(seq "$ROUNDS"); do
  bench build-old/stoker 0 "$OUTDIR/old.json"; old=$(rate "$OUTDIR/old.json")
  bench build-dev/stoker 0 "$OUTDIR/new.json"; new=$(rate "$OUTDIR/new.json")
  bench build-dev/stoker 0 "$OUTDIR/p0.json" & a=$!
  bench build-dev/stoker 1 "$OUTDIR/p1.json" & b=$!
  wait $a $b
  echo "round $r: alone old $old, alone new $new; both at once: gpu0 $(rate "$OUTDIR/p0.json") gpu1 $(rate "$OUTDIR/p1.json")"
done

echo "== 3. paired runs of every GPU preset"
STK_BIN=build-dev/stoker EPOCHS=20 WATCHDOG=40 EXTRA_ARGS="--timeout 20" \
  bash bench/tools/paired_runs.sh "$PAIRED_S" decode basic basic-full randaugment autoaugment trivialaugment |
  grep -v "exit 0 0, images" | tail -30

echo "== 4. two pipelines in one process, one GPU"
start=$(date +%s); runs=0; bad=0
while [ $(( $(date +%s) - start )) -lt "$DUAL_S" ]; do
  preset=$(echo randaugment basic decode | cut -d' ' -f$((runs % 3 + 1)))
  CUDA_VISIBLE_DEVICES=0 timeout 60 build-dev/multi_pipeline --pipelines 2 --data "$DATA" --pipeline "$preset" \
    --device gpu --batch-size 256 --threads 15 --epochs 10 --timeout 20 >"$OUTDIR/dual.txt" 2>&1
  rc=$?
  runs=$((runs + 1))
  if [ $rc != 0 ]; then bad=$((bad + 1)); echo "dual run $runs ($preset): exit $rc: $(head -c 600 "$OUTDIR/dual.txt")"; fi
  [ $runs = 1 ] && echo "dual run 1 ($preset): $(tr '\n' ' ' <"$OUTDIR/dual.txt")"
done
echo "two pipelines in one process: $runs runs, $bad failed or hung"
echo "NVRM out-of-memory messages during this call: $(( $(dmesg 2>/dev/null | grep -c NV_ERR_NO_MEMORY) - oom_before ))"
dmesg 2>/dev/null | grep -c "Xid" | sed 's/^/Xid lines in dmesg: /'
