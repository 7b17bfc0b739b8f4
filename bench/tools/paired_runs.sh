#!/usr/bin/env bash
# Hunts for hangs the way a DDP user runs stoker: one `stoker bench` process per GPU, all
# at once, in a loop, each pair under a watchdog. A pair still running after WATCHDOG
# seconds is a hang: every thread's state, CPU time and kernel wait channel, then
# cuda-gdb's stacks of every thread and the kernels resident on the device, go to
# $OUT/hang-N-gpuK.txt before the processes are killed. (Issue 27.)
#
# usage: bench/tools/paired_runs.sh SECONDS PRESET [PRESET...]
#   Runs pairs for SECONDS in all, cycling through the presets (e.g. randaugment basic).
# environment: STK_BIN (the stoker CLI; build/stoker), DATA (dataset folder, made with
#   scripts/make_dataset.py when missing: DATA_COUNT images), EPOCHS (per run, 4),
#   THREADS (15), BATCH (256), WATCHDOG (seconds, 30), GPUS (how many processes, 2),
#   EXTRA_ARGS (more `stoker bench` arguments), STACKS (0: no cuda-gdb).
set -u
budget=$1
shift
presets=("$@")
OUTDIR=${OUT:-./paired-out}
mkdir -p "$OUTDIR"
BIN=${STK_BIN:-build/stoker}
DATA=${DATA:-/tmp/stk-paired-data}
EPOCHS=${EPOCHS:-4}
THREADS=${THREADS:-15}
BATCH=${BATCH:-256}
WATCHDOG=${WATCHDOG:-30}
GPUS=${GPUS:-2}
STACKS=${STACKS:-1}
GDB=$(command -v cuda-gdb || echo /usr/local/cuda/bin/cuda-gdb)

if [ ! -d "$DATA" ]; then
  n=${DATA_COUNT:-2000}
  for i in 0 1 2 3 4 5 6 7; do
    python3 scripts/make_dataset.py "$DATA/p$i" --count $((n / 8)) --seed "$i" >/dev/null &
  done
  wait
fi

# dump PID FILE: thread states and stacks of a process that seems stuck
dump() {
  local pid=$1 f=$2
  {
    echo "== pid $pid: $(tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null)"
    for t in /proc/$pid/task/*; do
      local st
      st=$(cut -d')' -f2- "$t/stat" 2>/dev/null)
      # fields after ')': state(1) ... utime(12) stime(13)
      echo "task $(basename "$t") $(cat "$t/comm" 2>/dev/null) state=$(echo "$st" | awk '{print $1}') \
cpu_ticks=$(echo "$st" | awk '{print $12 + $13}') wchan=$(cat "$t/wchan" 2>/dev/null)"
    done
    if [ "$STACKS" = 1 ] && [ -x "$GDB" ]; then
      timeout 120 "$GDB" -p "$pid" -batch -ex "info cuda kernels" -ex "thread apply all bt 40" 2>&1 |
        grep -E "^Thread|^#|Kernel|kernel|^ *[*0-9]" | head -600
    fi
  } >"$f" 2>&1
}

start=$(date +%s)
runs=0
hangs=0
fails=0
declare -A per_runs per_hangs per_fails
# Before the loop: the binary must start at all (a missing shared library would otherwise
# be counted as thousands of clean, hang-free runs).
if ! "$BIN" version >/dev/null 2>"$OUTDIR/preflight.err"; then
  echo "== paired runs: $BIN does not start:"; cat "$OUTDIR/preflight.err"; exit 2
fi
while [ $(( $(date +%s) - start )) -lt "$budget" ]; do
  preset=${presets[$((runs % ${#presets[@]}))]}
  pids=()
  for k in $(seq 0 $((GPUS - 1))); do
    CUDA_VISIBLE_DEVICES=$k "$BIN" bench --data "$DATA" --pipeline "$preset" --device gpu --batch-size "$BATCH" \
      --threads "$THREADS" --epochs "$EPOCHS" --json ${EXTRA_ARGS:-} >"$OUTDIR/last-$k.json" 2>"$OUTDIR/last-$k.err" &
    pids+=($!)
  done
  t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt "$WATCHDOG" ]; do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.2
  done
  runs=$((runs + 1))
  per_runs[$preset]=$(( ${per_runs[$preset]:-0} + 1 ))
  hung=0
  for i in "${!pids[@]}"; do
    p=${pids[$i]}
    if kill -0 "$p" 2>/dev/null; then
      hung=1
      dump "$p" "$OUTDIR/hang-$hangs-gpu$i.txt"
    fi
  done
  if [ $hung = 1 ]; then
    echo "run $runs ($preset): HANG after ${WATCHDOG}s, stacks in hang-$hangs-gpu*.txt"
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    hangs=$((hangs + 1))
    per_hangs[$preset]=$(( ${per_hangs[$preset]:-0} + 1 ))
  fi
  rcs=""
  for p in "${pids[@]}"; do wait "$p"; rcs="$rcs $?"; done
  if [ $hung = 0 ] && [ "$(echo $rcs | tr -d ' 0')" != "" ]; then
    fails=$((fails + 1))
    per_fails[$preset]=$(( ${per_fails[$preset]:-0} + 1 ))
    echo "run $runs ($preset): FAILED, exit$rcs"
    for k in $(seq 0 $((GPUS - 1))); do
      [ -s "$OUTDIR/last-$k.err" ] && grep -v '^$' "$OUTDIR/last-$k.err" | head -3 | sed "s/^/  gpu$k: /"
    done
    # three failures in a row: something is wrong with the setup, not a hang to hunt
    [ "$fails" -ge 3 ] && [ "$fails" = "$runs" ] && { echo "== stopping: the first runs all failed"; break; }
  elif [ $hung = 0 ]; then
    rates=$(for k in $(seq 0 $((GPUS - 1))); do
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d.get("images_per_s", d.get("throughput", 0))))' \
        "$OUTDIR/last-$k.json" 2>/dev/null || echo "?"; done | tr '\n' ' ')
    echo "run $runs ($preset): exit$rcs, images/s: $rates"
    for k in $(seq 0 $((GPUS - 1))); do
      [ -s "$OUTDIR/last-$k.err" ] && grep -v '^$' "$OUTDIR/last-$k.err" | head -3 | sed "s/^/  gpu$k: /"
    done
  fi
done
echo "== paired runs: $runs runs, $hangs hangs, $fails failed in $(( $(date +%s) - start )) s"
for p in "${!per_runs[@]}"; do echo "   $p: ${per_runs[$p]} runs, ${per_hangs[$p]:-0} hangs, ${per_fails[$p]:-0} failed"; done
[ "$hangs" = 0 ] && [ "$fails" = 0 ]
