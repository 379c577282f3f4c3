# sigaction and signal, which the shim interposes to run the program's
# handlers through its own (preload/core/signal.c), behave for the program as the
# C library's do: handlers, flags and masks reported back, SA_SIGINFO
# arguments, SA_RESETHAND, SA_NODEFER nesting, SIG_IGN, errors
# (tests/e2e/progs/hostile_signal.c, mode api), untraced and traced alike.
# A handler's allocation has its stack when raise() interrupted the thread
# (8192 bytes), none, and the event says so, when sigqueue() did, inside the
# C library (12288). After a handler left by siglongjmp the thread is outside
# any handler again: its next allocation has its stack (4096).
. tests/e2e/lib.sh
. tests/e2e/sig_lib.sh
sig_unwrapped_under_tsan # (and what the program sees of sigaction is ThreadSanitizer's)
LD_LIBRARY_PATH=$NULLRT timeout -s KILL 20 "$PROGS/hostile_signal" api >"$T/untraced.out" ||
	fail "untraced: $(cat "$T/untraced.out")"
grep -q "^api: ok$" "$T/untraced.out" || fail "untraced: $(cat "$T/untraced.out")"
sig_run api 20 api
grep -q "^api: ok$" "$T/api.out" || fail "traced: $(cat "$T/api.out")"
sig_counts api
dump=$(dump_of api)
python3 - "$ROOT/bin" "$dump" <<'PY' || fail "stacks of the allocations differ from the expected"
import struct, sys
sys.path.insert(0, sys.argv[1])
import ctdump
want = {8192: True, 12288: False, 4096: True}  # size: has a stack (else marked CT_EVENT_F_SIGNAL)
seen = {}
for _, rtype, flags, body in ctdump.records(open(sys.argv[2], "rb").read()):
    if rtype == 2:
        f = struct.unpack_from("<6Q2IiIHBBhBB", body)
        if f[11] == 1:  # CT_OP_ALLOC
            seen[f[3]] = (f[7] != 0, bool(flags & 0x0002))
bad = 0
for size, stack in want.items():
    got = seen.get(size)
    ok = got == (stack, not stack)
    print(("ok: " if ok else "NOT OK: ") + f"allocation of {size} bytes: (stack, marked) = {got}, "
          f"expected {(stack, not stack)}")
    bad += not ok
sys.exit(1 if bad else 0)
PY
