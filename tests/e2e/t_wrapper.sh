# The cumtrace wrapper: runs the command traced and prints the summary.
. tests/e2e/lib.sh
cd "$T"
set +e
LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT \
	sh "$ROOT/bin/cumtrace" run -o "$T/w.dump" -- "$PROGS/basic" >"$T/out.txt" 2>&1
rc=$?
set -e
expect_eq exit_code "$rc" 0
[ -f "$T/w.dump" ] || fail "no dump at -o path"
grep -q "expect allocations 22" "$T/out.txt" || fail "program output missing"
grep -q "cumtrace" "$T/out.txt" || fail "no summary printed: $(cat "$T/out.txt")"
# The program's exit code comes back through the wrapper.
set +e
LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT \
	sh "$ROOT/bin/cumtrace" run -- sh -c 'exit 5' >/dev/null 2>&1
expect_eq passthrough_exit "$?" 5
sh "$ROOT/bin/cumtrace" bogus >/dev/null 2>&1
expect_eq usage_exit "$?" 2
set -e
