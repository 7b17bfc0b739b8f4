#!/usr/bin/env bash
# Runs every fuzz target at once, one process each, for SECONDS (a machine with spare cores,
# e.g. the GPU machine beside a GPU job), from the committed corpora and dictionaries.
# Prints one line per target: seconds, executions, crashes; crash inputs go to
# $OUT/fuzz-crashes/TARGET/ (or ./fuzz-crashes). Binaries from `make fuzz` (build-fuzz/fuzz)
# or BINDIR.
#
# usage: scripts/fuzz_parallel.sh SECONDS [BINDIR]
set -u
cd "$(dirname "$0")/.."
secs=$1
bindir=${2:-build-fuzz/fuzz}
out=${OUT:-.}/fuzz-crashes
mkdir -p "$out" /tmp/fuzz-work
pids=()
for bin in "$bindir"/fuzz_*; do
  t=$(basename "$bin")
  mkdir -p "$out/$t" "/tmp/fuzz-work/$t"
  dict=()
  [ -f tests/fuzz/dict/$t.dict ] && dict=(-dict=tests/fuzz/dict/$t.dict)
  "$bin" "${dict[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/$t/" "/tmp/fuzz-work/$t" "tests/fuzz/corpus/$t" \
    >"/tmp/fuzz-work/$t.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for bin in "$bindir"/fuzz_*; do
  t=$(basename "$bin")
  execs=$(grep -a "stat::number_of_executed_units" "/tmp/fuzz-work/$t.log" | awk '{print $2}')
  [ -z "$execs" ] && execs=$(grep -a -o "^#[0-9]*" "/tmp/fuzz-work/$t.log" | tail -1 | tr -d '#')
  secs_run=$(grep -a "stat::total_time\|Done [0-9]* runs in" "/tmp/fuzz-work/$t.log" | grep -o "[0-9]* second" | head -1)
  printf '%-16s executions=%s %s crashes=[%s]\n' "$t" "${execs:-?}" "${secs_run:-}" \
    "$(ls "$out/$t" 2>/dev/null | tr '\n' ' ')"
  [ -n "$(ls "$out/$t" 2>/dev/null)" ] && tail -40 "/tmp/fuzz-work/$t.log" | grep -a -A12 "ERROR\|==ERROR\|SUMMARY" | head -30
done
