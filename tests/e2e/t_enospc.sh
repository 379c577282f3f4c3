# A disk that fills up mid-run: one warning, the program's output and exit
# code unchanged. The small disk is a 16 KiB tmpfs in a private mount
# namespace (needs root or user namespaces; skipped with exit 77 otherwise).
# The run's dump is 90-140 KB compressed; with 64 KiB, one local run under
# load (2026-12-05) packed it small enough never to fill the disk.
. tests/e2e/lib.sh
mkdir -p "$T/small"
if ! unshare -m sh -c "mount -t tmpfs -o size=16k tmpfs '$T/small'" 2>/dev/null; then
	echo "skip: cannot mount a tmpfs here"
	exit 77
fi
untraced "$PROGS/threads" 2 20000 >"$T/plain.txt"
set +e
unshare -m sh -c "mount -t tmpfs -o size=16k tmpfs '$T/small' &&
	LD_LIBRARY_PATH='$FAKE' LD_PRELOAD='$PRELOAD' CUMTRACE_OUTPUT='$T/small/full.%p.dump' \
	'$PROGS/threads' 2 20000 >'$T/traced.txt' 2>'$T/err.txt'"
rc=$?
set -e
expect_eq exit_code "$rc" 0
diff "$T/plain.txt" "$T/traced.txt" || fail "output differs"
expect_eq warnings "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
grep -q "No space left on device" "$T/err.txt" || fail "warning: $(cat "$T/err.txt")"
echo "ok: $(cat "$T/err.txt")"
