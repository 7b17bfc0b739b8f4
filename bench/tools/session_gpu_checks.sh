#!/usr/bin/env bash
# One device call's worth of GPU checks after a session's merges, all at once on one GPU
# (they are correctness checks, not timings). Run by scripts/gpu-check.sh's exec step:
#   STK_EXEC="bash bench/tools/session_gpu_checks.sh" ($BUILD, $DATA, $EXTRA come from it)
#   A. compute-sanitizer racecheck over gpu_tests' ten decode passes (issue 19), RACE_S s;
#   B. two GPU pipelines in one process on one GPU, looped for DUAL_S s (issue 27);
#   C. gpu_tests (every section), then the Python GPU tests named by PYTESTS (default: the
#      registry parity of every GPU operator, the GPU PNG tests, PNG against DALI's maths);
#   D. examples/segmentation.py and ssd_detection.py with --device gpu; whether DALI is there.
# The device tool returns at most 8 files: logs stay in /tmp/stk-checks; $OUT gets
# summary.txt and the logs of whatever failed.
set -u
L=/tmp/stk-checks
mkdir -p "$L"
OUTDIR=${OUT:-.}
RACE_S=${RACE_S:-280}
DUAL_S=${DUAL_S:-300}
PYTESTS=${PYTESTS:-tests/python/test_gpu_registry_parity.py tests/python/test_gpu_png.py tests/python/test_png_dali.py tests/python/test_gpu_inflate.py tests/python/test_gpu_dump_image.py}
S=$OUTDIR/summary.txt

OUT=$L bash bench/tools/racecheck_decode.sh "$RACE_S" >"$L/race.txt" 2>&1 &
race_pid=$!

(
  start=$(date +%s) runs=0 bad=0
  while [ $(($(date +%s) - start)) -lt "$DUAL_S" ]; do
    preset=$(echo randaugment basic decode | cut -d' ' -f$((runs % 3 + 1)))
    if ! timeout 60 "$BUILD/multi_pipeline" --pipelines 2 --data "$DATA" --pipeline "$preset" \
      --device gpu --batch-size 256 --threads 15 --epochs 4 --timeout 20 >"$L/dual-last.txt" 2>&1; then
      bad=$((bad + 1))
      cp "$L/dual-last.txt" "$L/dual-failed-$runs.txt"
      echo "dual run $runs ($preset) failed: $(head -c 400 "$L/dual-last.txt")"
    fi
    runs=$((runs + 1))
    # the first three all failed: the setup is wrong, not a hang to hunt
    [ "$bad" -ge 3 ] && [ "$bad" = "$runs" ] && { echo "stopping: the first runs all failed"; break; }
  done
  echo "two pipelines in one process: $runs runs, $bad failed or hung"
) >"$L/dual.txt" 2>&1 &
dual_pid=$!

timeout 150 "$BUILD/gpu_tests" --dataset "$DATA" --extra "$EXTRA" >"$L/gpu_tests.log" 2>&1
echo "gpu_tests: exit $? ($(grep -ac FAIL "$L/gpu_tests.log") lines with FAIL)" >>"$S"
tail -5 "$L/gpu_tests.log" >>"$S"
XDIST=()
python3 -c 'import xdist' 2>/dev/null && XDIST=(-n 8)
# shellcheck disable=SC2086
PYTHONPATH=$PWD/python STK_BUILD_DIR=$BUILD timeout 240 python3 -m pytest -q -p no:cacheprovider \
  "${XDIST[@]}" $PYTESTS >"$L/pytest.log" 2>&1
echo "pytest ($PYTESTS): exit $?" >>"$S"
tail -4 "$L/pytest.log" >>"$S"
grep -a "^FAILED\|^ERROR" "$L/pytest.log" | head -30 >>"$S"

# D. the examples that take --device gpu (issue 23's segmentation and detection pipelines)
for ex in segmentation ssd_detection; do
  PYTHONPATH=$PWD/python STK_BUILD_DIR=$BUILD timeout 60 python3 "examples/$ex.py" --device gpu \
    >"$L/example-$ex.log" 2>&1
  echo "example $ex --device gpu: exit $? ($(tail -1 "$L/example-$ex.log" | head -c 200))" >>"$S"
done
python3 -c 'import nvidia.dali as d; print("DALI", d.__version__)' >>"$S" 2>/dev/null ||
  echo "DALI: not installed on this machine" >>"$S"

wait "$dual_pid"
cat "$L/dual.txt" >>"$S"
wait "$race_pid"
cat "$L/race.txt" >>"$S"
cat "$S"
# the logs of what failed (at most 6 more files)
{
  grep -q "exit 0" <(grep "^gpu_tests" "$S") || echo "$L/gpu_tests.log"
  grep -q "exit 0" <(grep "^pytest" "$S") || echo "$L/pytest.log"
  grep "^example .*exit [1-9]" "$S" | sed -E 's/^example ([a-z_]+) .*/\/tmp\/stk-checks\/example-\1.log/' 
  ls "$L"/dual-failed-*.txt 2>/dev/null | head -2
  grep -L "RACECHECK SUMMARY: 0 hazards" "$L"/racecheck-decode*.log 2>/dev/null | head -2
} | head -6 | while read -r f; do cp "$f" "$OUTDIR/"; done
