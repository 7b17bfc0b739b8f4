#!/usr/bin/env bash
# Does other CPU work slow nvJPEG's batched hardware call, which is CPU work on the calling
# thread (bench/RESULTS.md 2026-11-25)? And if so, which kind: a busy SMT sibling of the
# caller's CPU (they share one core's execution units and caches), busy cores elsewhere
# (a shared power budget lowers every core's clock), or memory traffic?
#
# Bare decoding (gpu_bench --only bare --bare-pinned, its caller pinned to one CPU C) runs
# in interleaved rounds against: nothing; a busy loop on C's SMT sibling; a busy loop on
# another core; busy loops on every CPU but C and its sibling; memory-streaming loops.
# Then basic@gpu as is, and with its threads placed from outside: the decode thread on C
# alone, every other thread off C and C's sibling.
#
# usage: bench/tools/cpu_contention.sh BUILD DATA [ROUNDS] [EPOCHS]  (run by gpu-check.sh's
#        exec step on the GPU machine: STK_EXEC='bash bench/tools/cpu_contention.sh $BUILD $DATA')
set -u
BUILD=$1 DATA=$2 ROUNDS=${3:-3} EPOCHS=${4:-40}
NCPU=$(nproc)
C=${STK_CONT_CPU:-2}
SIB=$(tr ',' '\n' </sys/devices/system/cpu/cpu$C/topology/thread_siblings_list | grep -vx "$C" | head -1)
SIB=${SIB:-none}
echo "== topology"
lscpu | grep -E 'Model name|^CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket|MHz|NUMA node' || true
for c in $(seq 0 $((NCPU - 1))); do
  printf 'cpu%s siblings %s\n' "$c" "$(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list)"
done
echo "caller CPU $C, its SMT sibling: $SIB"
ls /sys/devices/system/cpu/cpu$C/cpufreq 2>/dev/null | head -3 || echo "no cpufreq in sysfs"

# The CPUs that are neither C nor its sibling.
OTHERS=()
for c in $(seq 0 $((NCPU - 1))); do [ "$c" != "$C" ] && [ "$c" != "$SIB" ] && OTHERS+=("$c"); done
OTHER_LIST=$(IFS=,; echo "${OTHERS[*]}")

PIDS=()
spin_on() { for c in "$@"; do taskset -c "$c" bash -c 'while :; do :; done' & PIDS+=($!); done; }
mem_loops() {
  for i in $(seq "$1"); do
    python3 -c 'import numpy as np
a = np.ones(1 << 25); b = np.empty_like(a)
while True: np.copyto(b, a)' & PIDS+=($!)
  done
}
stop_load() { [ ${#PIDS[@]} -gt 0 ] && kill "${PIDS[@]}" 2>/dev/null; wait "${PIDS[@]}" 2>/dev/null; PIDS=(); }
trap stop_load EXIT

mhz() { grep MHz /proc/cpuinfo | awk -v c="$C" 'NR == c + 1 {printf "%s", $4}'; }
bare() {
  local label=$1
  shift
  "$@"
  sleep 0.5
  local m0; m0=$(mhz)
  local line
  line=$("$BUILD/gpu_bench" "$DATA" --batch 256 --epochs "$EPOCHS" --threads 15 --only bare --bare-pinned \
    --bare-pin-cpu "$C" | grep '^RESULT')
  local m1; m1=$(mhz)
  stop_load
  printf 'BARE %-16s %s  (cpu%s MHz %s -> %s)\n' "$label" "$(sed -E 's/.*= ([0-9]+) img\/s.*; ([0-9.]+) ms per call.*/\1 img\/s \2 ms\/call/' <<<"$line")" "$C" "$m0" "$m1"
}

# basic@gpu, its threads placed once they all exist: stk-decode on C, the rest elsewhere.
place() {
  local pid=$1
  for t in /proc/"$pid"/task/*; do
    local tid=${t##*/} name
    name=$(cat "$t/comm" 2>/dev/null) || continue
    if [ "$name" = stk-decode ]; then taskset -p -c "$C" "$tid" >/dev/null
    else taskset -p -c "$OTHER_LIST" "$tid" >/dev/null; fi
  done
}
pipe() {
  local label=$1 placed=$2 threads=$3
  "$BUILD/stoker" bench --data "$DATA" --pipeline basic --device gpu --batch-size 256 --threads "$threads" \
    --epochs $((EPOCHS * 2)) >/tmp/cont_pipe.log 2>/tmp/cont_pipe.err &
  local pid=$!
  if [ "$placed" = 1 ]; then
    for i in $(seq 40); do grep -q stk-decode /proc/$pid/task/*/comm 2>/dev/null && break; sleep 0.05; done
    sleep 0.2
    place "$pid"
  fi
  wait "$pid" || tail -c 300 /tmp/cont_pipe.err
  printf 'PIPE %-16s %s\n' "$label" "$(grep -E '^ +[0-9.]+ images/s' /tmp/cont_pipe.log | tail -1)"
}

for r in $(seq "$ROUNDS"); do
  echo "== round $r"
  bare alone true
  [ "$SIB" != none ] && bare sibling spin_on "$SIB"
  bare other_core spin_on "${OTHERS[0]}"
  bare all_others spin_on "${OTHERS[@]}"
  bare mem4 mem_loops 4
  bare alone true
  pipe basic_t15 0 15
  pipe basic_t15_placed 1 15
  pipe basic_t8_placed 1 8
done
