# Timestamps: the shim may read the CPU's counter and convert (preload/core/clock.c);
# every event's ts_ns must still be the program's CLOCK_MONOTONIC at the call:
# between the clock the program read just before and just after it. Exact with
# CUMTRACE_CLOCK=monotonic; with the counter, within 20 us (the conversion goes
# through calibration points read together with CLOCK_MONOTONIC: its error is
# the width of that read, well under a microsecond, where a wrong rate or
# offset would be off by milliseconds over these 30 ms gaps).
. tests/e2e/lib.sh

# check NAME TOLERANCE_NS: every alloc/free of the clock_bracket run NAME
check() {
	dump=$(dump_of "$1")
	python3 - "$ROOT" "$dump" "$T/$1.out" "$2" <<'PY' || fail "$1: timestamps outside the calls"
import struct, sys
root, dump, out, tol = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, root + "/bin")
import ctdump
calls = {}
for line in open(out):
    _, tid, ptr, op, a, b = line.split()
    calls.setdefault((int(tid), int(ptr, 16), op), []).append((int(a), int(b)))
seen = 0
for _, rtype, _, body in ctdump.records(open(dump, "rb").read()):
    if rtype != 2:
        continue
    ts, dur, ptr = struct.unpack_from("<3Q", body)
    tid = struct.unpack_from("<I", body, 48)[0]
    op = {1: "alloc", 2: "free"}[body[66]]
    a, b = calls[(tid, ptr, op)].pop(0)
    if not (a - tol <= ts <= b + tol) or dur > b - a + tol:
        sys.exit("%s at %#x on %d: ts %d dur %d, call between %d and %d" % (op, ptr, tid, ts, dur, a, b))
    seen += 1
left = sum(len(v) for v in calls.values())
if left or seen == 0:
    sys.exit("%d calls without an event (%d events)" % (left, seen))
print("ok: %d events inside their calls" % seen)
PY
}

traced mono env CUMTRACE_CLOCK=monotonic "$PROGS/clock_bracket" 3 6 >"$T/mono.out"
expect_eq mono_clock "$(tr '\0' '\n' <"$(dump_of mono)" | sed -n 's/^setting.clock=//p')" monotonic
check mono 0

traced auto "$PROGS/clock_bracket" 3 6 >"$T/auto.out"
# The counter is used where it is trusted: x86-64 with constant_tsc and either nonstop_tsc or the
# kernel's clocksource tsc, aarch64.
want=monotonic
case $(uname -m) in
x86_64)
	flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
	source=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
	case $flags in
	*" constant_tsc "*)
		case $flags in *" nonstop_tsc "*) want=tsc ;; esac
		[ "$source" = tsc ] && want=tsc
		;;
	esac
	;;
aarch64) want=tsc ;;
esac
expect_eq auto_clock "$(tr '\0' '\n' <"$(dump_of auto)" | sed -n 's/^setting.clock=//p')" "$want"
check auto 20000

# CUMTRACE_CLOCK=tsc: the counter wherever it moves (x86-64, aarch64), converted as well.
case $(uname -m) in
x86_64 | aarch64)
	traced forced env CUMTRACE_CLOCK=tsc "$PROGS/clock_bracket" 3 6 >"$T/forced.out"
	expect_eq forced_clock "$(tr '\0' '\n' <"$(dump_of forced)" | sed -n 's/^setting.clock=//p')" tsc
	check forced 20000
	;;
esac

# An unknown value: one warning, the automatic choice.
traced bad env CUMTRACE_QUIET=0 CUMTRACE_CLOCK=sundial "$PROGS/clock_bracket" 1 1 >"$T/bad.out" 2>"$T/bad.err"
expect_eq bad_warning "$(grep -c 'ignoring CUMTRACE_CLOCK=sundial' "$T/bad.err")" 1
expect_eq bad_clock "$(tr '\0' '\n' <"$(dump_of bad)" | sed -n 's/^setting.clock=//p')" "$want"
check bad 20000
