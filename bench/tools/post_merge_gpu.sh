#!/usr/bin/env bash
# GPU checks of newly merged work, run by scripts/gpu-check.sh's `exec` step
# (STK_EXEC="bash bench/tools/post_merge_gpu.sh"; $BUILD and $DATA come from it):
#   1. gpu_tests' png section (the GPU PNG decoder against libspng on generated PNGs);
#   2. bench/bench_png_gpu.py (masks and RGB PNGs: stoker mixed vs CPU, torchvision, DALI);
#   3. issue 27: two GPU pipelines in one process on one GPU, looped for DUAL_S seconds.
set -u
OUTDIR=${OUT:-.}
echo "== gpu_tests png"
timeout 120 "$BUILD/gpu_tests" --dataset "$DATA" png 2>&1 | tail -12
echo "== bench_png_gpu"
PYTHONPATH=$PWD/python STK_BUILD_DIR=$BUILD timeout "${PNG_S:-170}" python3 bench/bench_png_gpu.py --count 1024 \
  --batch 256 --threads 16 --epochs 3 --json "$OUTDIR/png.json" 2>&1 | grep -a "RESULT\|Error\|error" | head -20
echo "== two pipelines in one process (issue 27)"
start=$(date +%s) runs=0 bad=0
while [ $(( $(date +%s) - start )) -lt "${DUAL_S:-90}" ]; do
  preset=$(echo randaugment basic decode | cut -d' ' -f$((runs % 3 + 1)))
  if ! timeout 60 "$BUILD/multi_pipeline" --pipelines 2 --data "$DATA" --pipeline "$preset" --device gpu \
    --batch-size 256 --threads 15 --epochs 4 --timeout 20 >"$OUTDIR/dual.txt" 2>&1; then
    bad=$((bad + 1))
    echo "dual run $runs ($preset) failed: $(head -c 400 "$OUTDIR/dual.txt")"
  fi
  runs=$((runs + 1))
done
echo "two pipelines in one process: $runs runs, $bad failed or hung"
