# Output paths that are not new files, and paths the wrapper must keep whole
# (issue 14, item 7). basic runs each time; its output and exit code are
# the untraced ones.
#  1. CUMTRACE_OUTPUT=/dev/null: a character device is written as it is: no
#     warning, and no /dev/null.1 is created.
#  2. CUMTRACE_OUTPUT=/dev/full: the first write fails: exactly one warning
#     (No space left on device), tracing stops, no /dev/full.1.
#  3. `cumtrace run -o` with a space and glob characters in the path: the
#     summary is the one of that dump (the path is neither split nor
#     expanded; a file that the glob would match lies beside it).
#  4. `cumtrace run -o /dev/null`: one line says there is no dump to sum up,
#     and the report is not run on the device.
. tests/e2e/lib.sh
# /dev/X.1 left by this test (it must create none) is removed again.
made=""
for d in null full; do
	[ -e /dev/$d.1 ] || made="$made /dev/$d.1"
done
trap 'for f in $made; do [ ! -f "$f" ] || rm -f "$f"; done; rm -rf "$T"' EXIT
untraced "$PROGS/basic" >"$T/plain.txt"

# device NAME: trace basic into /dev/NAME
device() {
	set +e
	untraced env LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT=/dev/$1 "$PROGS/basic" >"$T/out.txt" 2>"$T/err.txt"
	rc=$?
	set -e
	expect_eq "/dev/$1: exit code" $rc 0
	cmp -s "$T/plain.txt" "$T/out.txt" || fail "/dev/$1: output differs"
	[ -c /dev/$1 ] || fail "/dev/$1 is no longer a character device"
	case " $made " in
	*" /dev/$1.1 "*) [ ! -e /dev/$1.1 ] || fail "/dev/$1.1 was created" ;;
	esac
}
device null
[ ! -s "$T/err.txt" ] || fail "/dev/null: stderr: $(cat "$T/err.txt")"
echo "ok: /dev/null written as it is"
device full
expect_eq "/dev/full: warnings" "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
grep -q "^cumtrace: .*/dev/full.*No space left on device" "$T/err.txt" ||
	fail "/dev/full: warning: $(cat "$T/err.txt")"
echo "ok: $(cat "$T/err.txt")"

# wrap OUT: `cumtrace run -o OUT basic` from $T; stderr in $T/w.err
wrap() {
	(
		cd "$T"
		LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT \
			sh "$ROOT/bin/cumtrace" run -o "$1" -- "$PROGS/basic" >"$T/w.out" 2>"$T/w.err"
	) || fail "wrapper -o '$1': exit $?"
	cmp -s "$T/plain.txt" "$T/w.out" || fail "wrapper -o '$1': output differs"
}
mkdir "$T/sp ace"
: >"$T/sp ace/rXn 1.dump"
: >"$T/1.dump"
wrap "$T/sp ace/r*n [1].dump"
[ -f "$T/sp ace/r*n [1].dump" ] || fail "no dump at the -o path"
grep -qxF "cumtrace: 1 dump(s): $T/sp ace/r*n [1].dump" "$T/w.err" || fail "wrapper: $(cat "$T/w.err")"
grep -q "events: 49 (allocations 22, frees 14, failed calls 2)" "$T/w.err" || fail "no summary: $(cat "$T/w.err")"
! grep -q "cumtrace-report:" "$T/w.err" || fail "the report failed: $(cat "$T/w.err")"
echo "ok: the summary of '$T/sp ace/r*n [1].dump'"

wrap /dev/null
grep -qxF "cumtrace: /dev/null is not a regular file: no summary" "$T/w.err" || fail "wrapper: $(cat "$T/w.err")"
expect_eq "wrapper -o /dev/null: stderr lines besides where the dumps go" "$(grep -vc '^cumtrace: tracing ' "$T/w.err")" 1
