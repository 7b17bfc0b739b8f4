#!/bin/sh
# bench/tools/cpu_sampler.c against a program whose answer is known (sampler_target.c): the
# report must exist, name both threads and both static functions (from the executable's
# own symbol table), attribute each function to its thread, and find the threads' CPU
# times (about 900 and 300 ms) in a ratio near 3 : 1.
# A third thread burns CPU in a library the program then unloads: the report must still
# name the library's function (from the mappings recorded while sampling).
# usage: cpu_sampler_test.sh SAMPLER_TARGET LIBSTK_SAMPLER OUTDIR LIBSAMPLER_BURN
set -eu
target=$1 sampler=$2 out=$3/cpu_sampler_test burn=$4
rm -f "$out".*.txt
STK_SAMPLER_OUT=$out STK_SAMPLER_DELAY=0 LD_PRELOAD=$sampler "$target" "$burn"
report=$(ls "$out".*.txt 2>/dev/null | head -1)
[ -n "$report" ] || { echo "FAIL: no report at $out.PID.txt"; exit 1; }
fail() { echo "FAIL: $1"; cat "$report"; exit 1; }
count() { # samples of a thread, from the "by thread" table
  awk -v t="$1" '/^  by thread/ {on = 1; next} on && $3 == t {print $2; exit} /^thread / {on = 0}' "$report"
}
three=$(count test-three)
one=$(count test-one)
[ -n "$three" ] && [ -n "$one" ] || fail "threads test-three / test-one not in the report"
[ "$one" -ge 10 ] || fail "too few samples ($one) for test-one"
# the counts are timer expiries, one per millisecond of the thread's CPU time: 900 and 300
awk -v a="$three" 'BEGIN { exit !(a > 700 && a < 1100) }' || fail "test-three: $three ms of CPU, not about 900"
awk -v a="$three" -v b="$one" 'BEGIN { r = a / b; exit !(r > 2.5 && r < 3.6) }' ||
  fail "ratio $three / $one is not near 3"
# each thread's own section names its function, from the executable's symbol table
awk '/^thread test-three:/ {on = 1} /^thread test-one:/ {on = 0} on' "$report" | grep -q 'sampler_target:burn_three' ||
  fail "burn_three not named in test-three's section"
awk '/^thread test-one:/ {on = 1} /^thread test-three:/ {on = 0} on' "$report" | grep -q 'sampler_target:burn_one' ||
  fail "burn_one not named in test-one's section"
# the call chains go past the innermost frame (return addresses from the unwinder)
grep -q 'burn_three[^ ]* < sampler_target:worker_three' "$report" || fail "no call chain burn_three < worker_three"
# the unloaded library, named after it was gone
awk '/^thread test-library:/ {on = 1; next} /^thread / {on = 0} on' "$report" |
  grep -q 'libsampler_burn.so:burn_in_library' || fail "burn_in_library not named after its library was unloaded"
echo "cpu_sampler: ok ($three and $one samples)"
