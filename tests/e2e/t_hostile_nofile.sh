# A descriptor limit lowered before the first CUDA call (issue 14, item 4).
# hostile_limits sets RLIMIT_NOFILE to N, makes 100 cudaMalloc/cudaFree
# pairs and opens a file of its own; its output says what each returned.
#  - N = 4, 5, 6: too few for the shim's descriptors at the top of the
#    table. The output is the untraced one; traced, one warning says so and
#    tracing stops (no dump); with CUMTRACE_DISABLE=1, no warning at all.
#  - N = 256: the output is the untraced one, no warning, a dump with every
#    allocation.
. tests/e2e/lib.sh
for n in 4 5 6; do
	untraced "$PROGS/hostile_limits" nofile $n 100 >"$T/ref.txt"
	echo "untraced, limit $n: $(tr '\n' ' ' <"$T/ref.txt")"
	traced "n$n" "$PROGS/hostile_limits" nofile $n 100 >"$T/out.txt" 2>"$T/err.txt" ||
		fail "limit $n: exit $?"
	expect_eq "limit $n: traced output" "$(cat "$T/out.txt")" "$(cat "$T/ref.txt")"
	expect_eq "limit $n: warnings" "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
	grep -q "^cumtrace: .*descriptor" "$T/err.txt" || fail "limit $n: warning: $(cat "$T/err.txt")"
	echo "ok: $(cat "$T/err.txt")"
	set -- "$T/n$n".*.dump
	[ ! -e "$1" ] || fail "limit $n: a dump was left: $*"
	CUMTRACE_DISABLE=1 traced "d$n" "$PROGS/hostile_limits" nofile $n 100 >"$T/out.txt" 2>"$T/err.txt" ||
		fail "limit $n, disabled: exit $?"
	expect_eq "limit $n: disabled output" "$(cat "$T/out.txt")" "$(cat "$T/ref.txt")"
	[ ! -s "$T/err.txt" ] || fail "limit $n, disabled: stderr: $(cat "$T/err.txt")"
done
untraced "$PROGS/hostile_limits" nofile 256 100 >"$T/ref.txt"
traced big "$PROGS/hostile_limits" nofile 256 100 >"$T/out.txt" 2>"$T/err.txt" || fail "limit 256: exit $?"
expect_eq "limit 256: traced output" "$(cat "$T/out.txt")" "$(cat "$T/ref.txt")"
[ ! -s "$T/err.txt" ] || fail "limit 256: stderr: $(cat "$T/err.txt")"
report "$T/big.json" summary "$(dump_of big)"
expect_eq "limit 256: allocations" "$(jget "$T/big.json" 'j["allocations"]')" 100
