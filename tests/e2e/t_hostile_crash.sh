# A crash right after N allocations: the program's own SIGSEGV handler (which
# _exit(3)s), abort() with a SIGABRT handler that returns, and a SIGSEGV with
# no handler. Handler output and exit status are the untraced ones, the dump
# loads, and it holds all N allocations: the dump is complete up to the crash.
# Every mode is checked before the test fails, so one run shows them all.
. tests/e2e/lib.sh
# Under AddressSanitizer and ThreadSanitizer, let the program's own signal
# handlers (and the default actions) have SIGSEGV and SIGABRT, as without them.
export ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:handle_abort=0:allow_user_segv_handler=1"
export TSAN_OPTIONS="$TSAN_OPTIONS:handle_segv=0:handle_abort=0:allow_user_segv_handler=1"
N=1000
bad=""
for mode in segv abort segvdfl; do
	set +e
	untraced "$PROGS/hostile_crash" "$mode" "$N" >"$T/plain.$mode.txt" 2>/dev/null
	want_rc=$?
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/crash-$mode.%p.dump" \
		"$PROGS/hostile_crash" "$mode" "$N" >"$T/traced.$mode.txt" 2>/dev/null
	rc=$?
	set -e
	expect_eq "$mode: exit status (untraced $want_rc)" "$rc" "$want_rc"
	diff "$T/plain.$mode.txt" "$T/traced.$mode.txt" || fail "$mode: the program's output differs"
	case $mode in
	segv) grep -qx "hostile_crash: caught SIGSEGV" "$T/traced.$mode.txt" || fail "$mode: no handler line" ;;
	abort) grep -qx "hostile_crash: caught SIGABRT" "$T/traced.$mode.txt" || fail "$mode: no handler line" ;;
	esac
	echo "ok: $mode: handler output and exit status $rc as untraced"
	name=crash-$mode
	dump=$(dump_of "$name")
	"$REPORT" summary --format json -o "$T/$mode.json" "$dump" 2>"$T/err.txt" ||
		fail "$mode: report failed: $(cat "$T/err.txt")"
	got=$(jget "$T/$mode.json" 'j["allocations"]')
	if [ "$got" = "$N" ]; then
		echo "ok: $mode: all $N allocations in the dump"
	else
		echo "NOT OK: $mode: $got of the $N allocations made before the crash are in the dump"
		bad="$bad $mode($got/$N)"
	fi
done
[ -z "$bad" ] || fail "dump incomplete up to the crash:$bad"
# The crash in the middle of a writer round: rounds every millisecond (CUMTRACE_FLUSH_MS=1), the
# default action, 30 times. The fatal handler waits for the round in progress instead of skipping
# the copy (before: about one crash in ten lost the events since the last round).
short=""
i=0
while [ $i -lt 30 ]; do
	i=$((i + 1))
	set +e
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_FLUSH_MS=1 CUMTRACE_OUTPUT="$T/round-$i.%p.dump" \
		"$PROGS/hostile_crash" segvdfl "$N" >/dev/null 2>&1
	set -e
	"$REPORT" summary --format json -o "$T/round.json" "$(dump_of "round-$i")" 2>/dev/null ||
		fail "round $i: report failed"
	got=$(jget "$T/round.json" 'j["allocations"]')
	[ "$got" = "$N" ] || short="$short $i($got)"
done
[ -z "$short" ] || fail "crashes during a round lost events: runs$short of 30"
echo "ok: 30 crashes with a round every millisecond: all $N allocations in each dump"
