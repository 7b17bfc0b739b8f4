#!/usr/bin/env bash
# Issue 27, same-call A/B: paired randaugment@gpu runs (one process per GPU) alternating the
# build before the fix (build-old/) and after it (build-dev/), each pair under a watchdog,
# with the kernel driver's out-of-memory messages counted per arm; gpu_tests first.
# usage: bench/tools/issue27_ab.sh SECONDS
set -u
budget=${1:-120}
OUTDIR=${OUT:-./issue27-ab}
mkdir -p "$OUTDIR" /tmp/deps
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
export DATA=${DATA:-/tmp/stk-paired-data}
if [ ! -d "$DATA" ]; then
  for i in 0 1 2 3 4 5 6 7; do python3 scripts/make_dataset.py "$DATA/p$i" --count 250 --seed "$i" >/dev/null & done
  wait
fi
timeout 90 build-dev/gpu_tests --small --no-bad-inputs --lib build-dev/libstoker_cuda.so --dataset "$DATA" \
  >"$OUTDIR/gpu_tests.log" 2>&1
echo "gpu_tests exit $?: $(grep -ciE 'fail' "$OUTDIR/gpu_tests.log") lines mention a failure; $(tail -1 "$OUTDIR/gpu_tests.log")"
oom() { dmesg 2>/dev/null | grep -c NV_ERR_NO_MEMORY; }
declare -A runs hangs fails ooms
start=$(date +%s)
i=0
while [ $(( $(date +%s) - start )) -lt "$budget" ]; do
  arm=$([ $((i % 2)) = 0 ] && echo old || echo new)
  o0=$(oom)
  out=$(STK_BIN=build-$([ $arm = old ] && echo old || echo dev)/stoker EPOCHS=30 WATCHDOG=20 STACKS=0 \
        EXTRA_ARGS=$([ $arm = new ] && echo "--timeout 15") OUT="$OUTDIR/$arm" bash bench/tools/paired_runs.sh 1 randaugment)
  runs[$arm]=$(( ${runs[$arm]:-0} + 1 ))
  echo "$out" | grep -q HANG && hangs[$arm]=$(( ${hangs[$arm]:-0} + 1 ))
  echo "$out" | grep -E "^run" | grep -vq "exit 0 0" && ! echo "$out" | grep -q HANG && fails[$arm]=$(( ${fails[$arm]:-0} + 1 ))
  ooms[$arm]=$(( ${ooms[$arm]:-0} + $(oom) - o0 ))
  echo "$arm: $(echo "$out" | grep -E '^run' | head -1)"
  i=$((i + 1))
done
for arm in old new; do
  echo "== $arm: ${runs[$arm]:-0} paired runs, ${hangs[$arm]:-0} hung, ${fails[$arm]:-0} failed, ${ooms[$arm]:-0} NVRM out-of-memory messages"
done
