# An output path that cannot be created: one warning, same output and exit code.
. tests/e2e/lib.sh
untraced "$PROGS/basic" >"$T/plain.txt"
set +e
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT=/nonexistent-dir/x.%p.dump \
	"$PROGS/basic" >"$T/traced.txt" 2>"$T/err.txt"
rc=$?
set -e
expect_eq exit_code "$rc" 0
diff "$T/plain.txt" "$T/traced.txt" || fail "output differs"
expect_eq warnings "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
grep -q "cumtrace: cannot create /nonexistent-dir/x" "$T/err.txt" || fail "warning: $(cat "$T/err.txt")"
# An existing symlink at the output path is never followed.
ln -s "$T/target" "$T/link.dump"
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/link.dump" "$PROGS/basic" >/dev/null 2>"$T/err2.txt"
[ ! -e "$T/target" ] || fail "followed the symlink"
echo "ok: symlink not followed; $(cat "$T/err2.txt")"
