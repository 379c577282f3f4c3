# Helpers shared by the signal-handler tests (tests/e2e/t_hostile_sig_*.sh,
# issue 14 item 5): source it after tests/e2e/lib.sh. The program,
# tests/e2e/progs/hostile_signal.c, runs on the null runtime.
NULLRT=$ROOT/$BUILD/tests/nullrt

# sig_unwrapped_under_tsan: ThreadSanitizer intercepts sigaction before the
# shim does and runs a program's handler itself, later, from its own code:
# not inside the shim's wrapper, so the shim cannot tell the handler's calls
# from nested ones (README, Limitations). A test that counts them ends here
# in that build (exit 77), after what it checked so far.
sig_unwrapped_under_tsan() {
	if tsan_build; then
		echo "ThreadSanitizer runs signal handlers itself, outside the shim's wrapper: calls made in them are not counted as such"
		exit 77
	fi
}

# sig_run NAME LIMIT ARGS...: hostile_signal ARGS traced into $T/NAME.*.dump,
# its output in $T/NAME.out; killed with SIGKILL after LIMIT seconds (its
# handler blocks SIGTERM). Fails unless it exits 0.
sig_run() {
	sr_name=$1 sr_limit=$2
	shift 2
	set +e
	LD_LIBRARY_PATH=$NULLRT LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/$sr_name.%p.dump" \
		timeout -s KILL "$sr_limit" "$PROGS/hostile_signal" "$@" >"$T/$sr_name.out" 2>"$T/$sr_name.err"
	sr_rc=$?
	set -e
	if [ "$sr_rc" = 137 ]; then
		fail "$sr_name: still running after $sr_limit s (hung), killed; $(tr '\n' ' ' <"$T/$sr_name.err")"
	fi
	[ "$sr_rc" = 0 ] || fail "$sr_name: exit status $sr_rc; $(tr '\n' ' ' <"$T/$sr_name.err")"
	echo "ok: $sr_name: exit 0; $(tr '\n' ' ' <"$T/$sr_name.out")"
}

# sig_counts NAME: from the summary of NAME's dump and its raw records, print
# "made M recorded R dropped_in_handlers D dropped_other O handler_calls H
# marked_no_stack N marked_with_stack S" into $T/NAME.counts and check that
# every call made was recorded or counted as dropped inside a signal handler
# (R + D = M, O = 0), and that no event marked CT_EVENT_F_SIGNAL (made in a
# handler that could not unwind) carries a stack (S = 0).
sig_counts() {
	sc_name=$1
	sc_dump=$(dump_of "$sc_name")
	report "$T/$sc_name.json" summary "$sc_dump"
	python3 - "$ROOT/bin" "$sc_dump" "$T/$sc_name" <<'PY' || fail "$sc_name: counts differ (above)"
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import ctdump
dump, base = sys.argv[2:4]
j = json.load(open(base + ".json"))
expect = {l.split()[1]: int(l.split()[2]) for l in open(base + ".out") if l.startswith("expect ")}
d = j["dumps"][0]
made = expect["calls"]
recorded = sum(a["calls"] for a in j["summary"]["apis"].values())
in_handlers = d["dropped_in_signal_handlers"]
other = d["dropped_events"] - in_handlers
signal_events = with_stack = 0
for _, rtype, flags, body in ctdump.records(open(dump, "rb").read()):
    if rtype == 2 and flags & 0x0002:  # CT_EVENT_F_SIGNAL
        signal_events += 1
        with_stack += struct.unpack_from("<6Q2I", body)[7] != 0
line = (f"made {made} recorded {recorded} dropped_in_handlers {in_handlers} dropped_other {other} "
        f"handler_calls {expect['handler_calls']} marked_no_stack {signal_events - with_stack} "
        f"marked_with_stack {with_stack}")
open(base + ".counts", "w").write(line + "\n")
print(line)
bad = []
if recorded + in_handlers != made:
    bad.append(f"recorded + dropped in handlers = {recorded + in_handlers}, made {made}")
if other:
    bad.append(f"{other} events dropped for another reason")
if with_stack:
    bad.append(f"{with_stack} events marked as made where no stack may be taken carry one")
for b in bad:
    print("NOT OK: " + b)
sys.exit(1 if bad else 0)
PY
	echo "ok: $sc_name: every call recorded or counted"
}
