#!/usr/bin/env bash
# compute-sanitizer racecheck over gpu_tests' decode section, its ten passes side by side
# (one alone takes longer than a device call allows). Run by scripts/gpu-check.sh's exec
# step: STK_EXEC="bash bench/tools/racecheck_decode.sh [SECONDS]" ($BUILD, $DATA from it).
set -u
secs=${1:-300}
out=${OUT:-.}
for k in 0 1 2 3 4 5 6 7 8 9; do
  timeout "$secs" compute-sanitizer --tool racecheck --error-exitcode 9 --report-api-errors no \
    "$BUILD/gpu_tests" --small --no-bad-inputs --dataset "$DATA" --decode-pass "$k" decode \
    >"$out/racecheck-decode$k.log" 2>&1 &
done
wait
for k in 0 1 2 3 4 5 6 7 8 9; do
  echo "decode pass $k: $(grep -a "RACECHECK SUMMARY\|gpu_tests:" "$out/racecheck-decode$k.log" | tr '\n' ' ')"
done
