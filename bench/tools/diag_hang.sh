#!/usr/bin/env bash
# Runs a command; if it is still running after SECONDS, prints the native stacks of all
# its threads (gdb, where installed) and of its children, then lets it go on to its own
# end (a pytest --timeout prints the Python stacks).
# usage: bench/tools/diag_hang.sh SECONDS CMD...
set -u
limit=$1
shift
"$@" &
pid=$!
for _ in $(seq "$limit"); do
  kill -0 $pid 2>/dev/null || { wait $pid; exit $?; }
  sleep 1
done
echo "== diag_hang: still running after ${limit}s; native stacks:"
for p in $pid $(pgrep -P $pid) $(pgrep -f "python3 -m pytest" | grep -v $pid); do
  echo "-- pid $p: $(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | cut -c1-200)"
  if command -v gdb >/dev/null; then
    timeout 60 gdb -p "$p" -batch -ex "thread apply all bt 14" 2>&1 | grep -E "^Thread|^#" | head -150
  else
    for t in /proc/$p/task/*; do echo "   task $(basename $t): $(cat $t/comm) wchan=$(cat $t/wchan 2>/dev/null)"; done
  fi
done
wait $pid
