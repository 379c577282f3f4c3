# The per-thread stack cache (preload/core/stackcache.c, x86-64): every allocation
# of tests/e2e/progs/stackcache.c — one allocating function reached from
# different parents at the same stack pointer, recursion at changing depths,
# callers padded with alloca down to one stack pointer, signal handlers on the
# thread's stack and on a sigaltstack, coroutines on a heap stack and on one
# inside the main thread's stack, two threads — carries exactly the frames the
# program found along its own frame pointers, with the cache on (the default)
# and off (CUMTRACE_STACK_CACHE=0); and both runs record the same stacks,
# frames past the program's (libc, the signal trampoline) included.
. tests/e2e/lib.sh
case $(uname -m) in
x86_64) ;;
*) echo "the stack cache is x86-64 only" && exit 77 ;;
esac
# The program allocates from signal handlers on purpose (the cache must not be fooled by
# a handler's frames); the fake runtime behind it uses malloc, which TSan reports there.
export TSAN_OPTIONS="$TSAN_OPTIONS:report_signal_unsafe=0"
check() { python3 "$ROOT/tests/e2e/stack_check.py" "$@"; }
setting() { tr '\0' '\n' <"$1" | sed -n "s/^setting.$2=//p"; }

traced on "$PROGS/stackcache" 24 >"$T/on.out"
traced off env CUMTRACE_STACK_CACHE=0 "$PROGS/stackcache" 24 >"$T/off.out"
on=$(dump_of on)
off=$(dump_of off)
expect_eq on_setting "$(setting "$on" stack_cache)" on
expect_eq off_setting "$(setting "$off" stack_cache)" off
check expect "$on" "$T/on.out" || fail "cache on: a stack differs from the program's own walk"
check expect "$off" "$T/off.out" || fail "cache off: a stack differs from the program's own walk"
# Sizes depend on how the two threads interleave: compare the stacks alone.
check frames "$on" | cut -d' ' -f2- | sort >"$T/on.frames"
check frames "$off" | cut -d' ' -f2- | sort >"$T/off.frames"
[ -s "$T/on.frames" ] || fail "no stacks"
cmp -s "$T/on.frames" "$T/off.frames" || {
	diff "$T/off.frames" "$T/on.frames" | head -n 20
	fail "the cache changed some stacks"
}
echo "ok: $(wc -l <"$T/on.frames") stacks the same with the cache on and off"
