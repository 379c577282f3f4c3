# The fake CUDA libraries themselves (tests/fake/README.md): fake_selftest's checks with the
# default knobs, with three devices of 256 MiB, and with none; CUMTRACE_FAKE_SPIN_NS makes each
# cudaMalloc take at least that long (a lower bound its loop guarantees, not a timing claim).
. tests/e2e/lib.sh
selftest() { # NAME ENV...: run fake_selftest untraced with ENV, expect its "passed" line
	name=$1
	shift
	( [ $# -eq 0 ] || export "$@"; untraced "$PROGS/fake_selftest" ) >"$T/$name.txt" 2>&1 ||
		fail "fake_selftest ($name) exited $?: $(tail -5 "$T/$name.txt")"
	grep -qE '^fake_selftest: [0-9]+ checks passed$' "$T/$name.txt" || fail "fake_selftest ($name): $(cat "$T/$name.txt")"
	echo "ok: $name: $(cat "$T/$name.txt")"
}
selftest default
selftest three CUMTRACE_FAKE_DEVICES=3 CUMTRACE_FAKE_CAPACITY=256M
selftest none CUMTRACE_FAKE_DEVICES=0
CUMTRACE_FAKE_SPIN_NS=100000 untraced "$PROGS/bench_alloc" 200 0 1 >"$T/spin.txt" || fail "bench_alloc exited $?"
wall=$(sed -n 's/^bench_alloc wall=\([0-9]*\).*/\1/p' "$T/spin.txt")
[ -n "$wall" ] && [ "$wall" -ge 100000 ] || fail "CUMTRACE_FAKE_SPIN_NS=100000: $(cat "$T/spin.txt")"
echo "ok: spin: $wall ns a pair"
