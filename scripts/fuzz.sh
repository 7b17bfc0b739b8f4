#!/usr/bin/env bash
# Runs one fuzz target (built by `make fuzz`) for SECONDS, niced, from its committed corpus
# plus what earlier runs found (build-fuzz/corpus/TARGET), with its dictionary when one
# exists. Crashes go to build-fuzz/crashes/TARGET/; the log's last lines give the
# execution count. Copy a crash into tests/fuzz/corpus/TARGET/ (named after the bug) once
# it is fixed, so CTest replays it from then on.
#
# usage: scripts/fuzz.sh TARGET SECONDS [extra libFuzzer flags]
set -euo pipefail
cd "$(dirname "$0")/.."
t=$1 secs=$2
shift 2
bin=build-fuzz/fuzz/$t
[ -x "$bin" ] || { echo "no $bin: run make fuzz first" >&2; exit 2; }
mkdir -p build-fuzz/corpus/$t build-fuzz/crashes/$t build-fuzz/logs
dict=()
[ -f tests/fuzz/dict/$t.dict ] && dict=(-dict=tests/fuzz/dict/$t.dict)
exec nice -n 19 "$bin" "${dict[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/$t/ "$@" \
  build-fuzz/corpus/$t tests/fuzz/corpus/$t 2>&1 | tee build-fuzz/logs/$t.log | grep -v "^#[0-9]*.*\(NEW\|REDUCE\|pulse\)"
