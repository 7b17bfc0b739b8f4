#!/usr/bin/env bash
# compute-sanitizer over the GPU code, every check at once (one process per check: the
# machine's cores and the GPU are shared; each check is independent): racecheck and
# synccheck over each section of tests/gpu/gpu_tests, memcheck over one `stoker bench` of
# every GPU preset. One line per check (exit code and the tool's error summary); the
# full reports in $OUTDIR/san-*.log. Called by scripts/gpu-check.sh (step `sanitizers`).
#
# usage: scripts/gpu_sanitizers.sh BUILD_DIR DATA_DIR OUTDIR [SECONDS]
set -u
build=$1 data=$2 outdir=$3 limit=${4:-420}
san() { # NAME CMD...: one check in the background
  local name=$1
  shift
  timeout "$limit" compute-sanitizer --error-exitcode 9 --report-api-errors no "$@" \
    >"$outdir/san-$name.log" 2>&1 &
  names+=("$name")
  pids+=($!)
}
names=()
pids=()
for section in runtime resample cmn cast decode; do
  for tool in racecheck synccheck; do
    if [ "$section-$tool" = decode-racecheck ]; then
      # racecheck over nvJPEG's kernels is slow: the decode section's ten passes side by side
      for k in 0 1 2 3 4 5 6 7 8 9; do
        san "$tool-$section$k" --tool "$tool" "$build/gpu_tests" --small --no-bad-inputs --dataset "$data" \
          --decode-pass "$k" "$section"
      done
      continue
    fi
    san "$tool-$section" --tool "$tool" "$build/gpu_tests" --small --no-bad-inputs --dataset "$data" "$section"
  done
done
for preset in decode basic-full basic randaugment autoaugment trivialaugment; do
  san "memcheck-$preset" --tool memcheck --leak-check full "$build/stoker" bench --data "$data" \
    --pipeline "$preset" --device gpu --batch-size 64 --threads 4 --iters 3
done
bad=0
for k in "${!pids[@]}"; do
  wait "${pids[$k]}"
  rc=$?
  [ $rc != 0 ] && bad=$((bad + 1))
  summary=$(grep -a "ERROR SUMMARY\|RACECHECK SUMMARY\|LEAK SUMMARY" "$outdir/san-${names[$k]}.log" | tail -2 | tr '\n' ' ')
  printf '%-26s exit %-3s %s\n' "${names[$k]}" "$rc" "${summary:-(no summary: see the log)}"
done
echo "sanitizer checks: ${#pids[@]}, failed or timed out: $bad"
exit $((bad > 0))
