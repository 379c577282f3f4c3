# CUMTRACE_HUGE_PAGES: a thread's ring (2 MiB at the default budget) asks for transparent huge
# pages, for the first 4 threads; with CUMTRACE_HUGE_PAGES=0, or untraced, no 2 MiB mapping does. The program's results
# are the same either way.
. tests/e2e/lib.sh
[ -e /sys/kernel/mm/transparent_hugepage/enabled ] || { echo "this kernel has no transparent huge pages"; exit 77; }
untraced "$PROGS/hugering" >"$T/untraced.txt" || fail "untraced run failed"
expect_eq untraced "$(cat "$T/untraced.txt")" "advised 2 MiB mappings: 0"
traced on "$PROGS/hugering" >"$T/on.txt" || fail "traced run failed"
expect_eq huge_pages_on "$(cat "$T/on.txt")" "advised 2 MiB mappings: 1"
CUMTRACE_HUGE_PAGES=0 traced off "$PROGS/hugering" >"$T/off.txt" || fail "traced run (off) failed"
expect_eq huge_pages_off "$(cat "$T/off.txt")" "advised 2 MiB mappings: 0"
# the first 4 threads' rings only (session.c, CT_HUGE_RINGS): main's and 3 of 6 more threads',
# each alive with its ring when they are counted
traced threads "$PROGS/hugering" 6 >"$T/threads.txt" || fail "traced run (threads) failed"
expect_eq huge_pages_threads "$(cat "$T/threads.txt")" "advised 2 MiB mappings: 4"
# a smaller ring (1 MiB of budget: 64 KiB rings) asks for none
CUMTRACE_BUFFER_MB=1 traced small "$PROGS/hugering" >"$T/small.txt" || fail "traced run (small) failed"
expect_eq small_ring "$(cat "$T/small.txt")" "advised 2 MiB mappings: 0"
# every event is in the dump either way
for n in on off small; do
	report "$T/$n.json" summary "$(dump_of $n)"
	expect_eq "calls_$n" "$(jget "$T/$n.json" 'sum(a["calls"] for a in j["summary"]["apis"].values())')" 200
done
report "$T/threads.json" summary "$(dump_of threads)"
expect_eq calls_threads "$(jget "$T/threads.json" 'sum(a["calls"] for a in j["summary"]["apis"].values())')" 212
