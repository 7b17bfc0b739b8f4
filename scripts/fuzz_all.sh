#!/usr/bin/env bash
# Runs fuzz targets one after another (scripts/fuzz.sh), each for its number of seconds,
# and appends one line per run to build-fuzz/logs/summary.txt: target, seconds actually
# run, executions, crash files. A crash ends that target's run; the next one starts.
#
# usage: scripts/fuzz_all.sh TARGET:SECONDS [TARGET:SECONDS ...]
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p build-fuzz/logs
for spec in "$@"; do
  t=${spec%%:*} secs=${spec##*:}
  start=$(date +%s)
  scripts/fuzz.sh "$t" "$secs" >/dev/null 2>&1
  end=$(date +%s)
  execs=$(grep -a "stat::number_of_executed_units" build-fuzz/logs/$t.log | awk '{print $2}')
  if [ -z "$execs" ]; then # a crash: libFuzzer prints no final stats, the last status line has the count
    execs=$(grep -a -o "^#[0-9]*" build-fuzz/logs/$t.log | tail -1 | tr -d '#')
  fi
  crashes=$(ls build-fuzz/crashes/$t 2>/dev/null | tr '\n' ' ')
  printf '%s %s start=%s seconds=%d executions=%s crashes=[%s]\n' "$(date -u +%FT%TZ)" "$t" \
    "$(date -u -d @$start +%TZ)" $((end - start)) "${execs:-?}" "$crashes" >> build-fuzz/logs/summary.txt
done
