# Every runtime allocation path: exact counts, bytes, failures, leaks, peak.
. tests/e2e/lib.sh
traced basic "$PROGS/basic" >"$T/expect.txt" 2>"$T/basic.err"
dump=$(dump_of basic)
report "$T/leaks.json" leaks "$dump"
report "$T/peak.json" peak "$dump"
want() { awk -v k="$1" '$1 == "expect" && $2 == k { print $3 }' "$T/expect.txt"; }
expect_eq allocations "$(jget "$T/leaks.json" 'j["allocations"]')" "$(want allocations)"
expect_eq frees "$(jget "$T/leaks.json" 'j["frees"]')" "$(want frees)"
expect_eq failed_calls "$(jget "$T/leaks.json" 'j["failed_calls"]')" "$(want failed_calls)"
expect_eq leaks.count "$(jget "$T/leaks.json" 'j["leaks"]["count"]')" "$(want leak_count)"
expect_eq leaks.bytes "$(jget "$T/leaks.json" 'j["leaks"]["bytes"]')" "$(want leak_bytes)"
expect_eq device_leak_bytes \
	"$(jget "$T/leaks.json" 'sum(s["bytes"] for s in j["leaks"]["sites"] if s["kind"]=="device")')" \
	"$(want device_leak_bytes)"
expect_eq peak.bytes "$(jget "$T/peak.json" 'j["peak"]["bytes"]')" "$(want peak_bytes)"
# Largest site first; site A holds two 1 MiB blocks from one stack.
expect_eq first_site_bytes "$(jget "$T/leaks.json" 'j["leaks"]["sites"][0]["bytes"]')" 5242880
expect_eq first_site_device "$(jget "$T/leaks.json" 'j["leaks"]["sites"][0]["device"]')" 1
expect_eq two_block_site \
	"$(jget "$T/leaks.json" 'sorted((s["count"], s["bytes"]) for s in j["leaks"]["sites"] if s["kind"]=="device")[-1]')" \
	"(2, 2097152)"
expect_eq kinds \
	"$(jget "$T/leaks.json" 'sorted(set(s["kind"] for s in j["leaks"]["sites"]))')" \
	"['device', 'host_pinned', 'managed']"
# The failed 64 GiB request is in the summary as a failure of cudaMalloc.
expect_eq cudaMalloc.failures "$(jget "$T/leaks.json" 'j["summary"]["apis"]["cudaMalloc"]["failures"]')" 1
expect_eq clean_exit "$(jget "$T/leaks.json" 'j["dumps"][0]["clean_exit"]')" True

# Text stacks stop at main: the C library's start-up is not shown (--full-stacks shows it).
"$REPORT" leaks "$dump" >"$T/leaks.txt"
"$REPORT" leaks --full-stacks "$dump" >"$T/leaks-full.txt"
grep -q "^      at main (" "$T/leaks.txt" || fail "no main frame in the text stacks"
! grep -q "__libc_start\|^      at _start" "$T/leaks.txt" || fail "start-up frames in the text stacks"
grep -q "__libc_start_call_main\|__libc_start_main" "$T/leaks-full.txt" || fail "--full-stacks: no start-up frame"
echo "ok: text stacks stop at main; --full-stacks shows the start-up"

# --fail-on growth on a program without steps: said on stderr, not passed silently.
rc=0
"$REPORT" leaks --fail-on growth "$dump" >/dev/null 2>"$T/growth.err" || rc=$?
expect_eq "fail-on growth, no steps: exit" "$rc" 0
expect_eq "fail-on growth, no steps: stderr" "$(cat "$T/growth.err")" \
	"cumtrace-report: $dump: growth not judged: no step boundaries (mark steps: cumtrace.step(), NVTX ranges, --steps)"
# CUMTRACE_SELFTIME=1: one line at exit counting every call that took stacks (those events carry one).
traced self env CUMTRACE_SELFTIME=1 "$PROGS/basic" >/dev/null 2>"$T/self.err" || fail "selftime run exited $?"
n=$(sed -n 's/^cumtrace: self time: \([0-9]*\) calls with stacks, per call [0-9]* ns in the shim .*/\1/p' "$T/self.err")
expect_eq "selftime calls = events with a stack" "$n" \
	"$(python3 "$ROOT/bin/ctdump.py" "$(dump_of self)" | grep -c ' event .* stack=[1-9]')"
# its parts: every stack the cache knew was a cache hit; a C program has no Python walk
known=$(sed -n 's/.* \([0-9]*\) known to the stack cache; Python thread state [^;]*; clock reads [^;]*; parts: .*/\1/p' "$T/self.err")
hits=$(sed -n 's/.*; parts: \([0-9]*\) cache hits (lookup [0-9]* ns, checks [0-9]* ns), .*/\1/p' "$T/self.err")
walks=$(sed -n 's/.*, \([0-9]*\) Python walks (thread state .*/\1/p' "$T/self.err")
[ -n "$known" ] && [ -n "$hits" ] && [ "$hits" -ge "$known" ] && [ "$hits" -le "$n" ] ||
	fail "selftime parts: known '$known', hits '$hits', calls '$n': $(cat "$T/self.err")"
expect_eq "selftime Python walks in a C program" "$walks" 0
# steady calls: those whose stack id the cache knew (no Python stack to look up in a C program)
expect_eq "selftime steady calls in a C program" \
	"$(sed -n 's/.*; steady (stacks known, nothing new written): \([0-9]*\) calls, per call [0-9]* ns (native stack [0-9]*, Python frames [0-9]*, record [0-9]*)$/\1/p' "$T/self.err")" "$known"
# and apart: none with Python frames, all of them without
expect_eq "selftime steady calls with and without Python frames in a C program" \
	"$(self_apart "$T/self.err")" "0 $known"
grep -q "self time" "$T/basic.err" && fail "self time printed without CUMTRACE_SELFTIME"
echo "ok: CUMTRACE_SELFTIME"
# CUMTRACE_QUIET=1: no warning on stderr (a bad value, an output that cannot be made); 0: both said.
for q in 1 0; do
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_QUIET=$q CUMTRACE_STACK_DEPTH=abc \
		CUMTRACE_OUTPUT="$T/none/q.%p.dump" "$PROGS/basic" >/dev/null 2>"$T/quiet$q.err" ||
		fail "quiet=$q run exited $?"
done
expect_eq "CUMTRACE_QUIET=1: stderr" "$(cat "$T/quiet1.err")" ""
expect_eq "CUMTRACE_QUIET=0: warnings" "$(grep -c '^cumtrace: ' "$T/quiet0.err")" 2
