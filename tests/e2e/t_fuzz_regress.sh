# Every input the fuzzer ever found (tests/fuzz/regress/) and every seed
# (tests/fuzz/corpus/), through the gcc-built analyzer: the dump part of each
# (tests/fuzz/seed.sh dump: without the harness's selector) through each
# command, JSON (the exporters in their own format), whichever command the
# selector picked when the fuzzer found it.
# Exit 0 (or 0 with one truncation warning per dump) or 2 with exactly one line on
# stderr; never a signal, never 1 without --fail-on-leak.
. tests/e2e/lib.sh
# every command of the analyzer, from its --help
cmds=$("$REPORT" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\)  .*/\1/p')
[ "$(echo "$cmds" | wc -w)" -ge 11 ] || fail "commands from --help: '$cmds'"
# Under ThreadSanitizer the races are the reader's and its read-ahead thread's,
# the same whichever command reads: each input through summary (which reads
# every record) instead of every command; the plain pass runs every command (and
# the fuzz step every report under ASan+UBSan).
if tsan_build; then
	cmds="summary"
	echo "ThreadSanitizer: each input through summary only"
fi
n=0
for f in tests/fuzz/regress/* tests/fuzz/corpus/*; do
	[ -f "$f" ] || continue
	case $f in *.md) continue ;; esac
	sh tests/fuzz/seed.sh dump "$f" "$T/input.dump"
	for cmd in $cmds; do
		# diff compares two dumps: the input with itself
		dumps="$T/input.dump"
		[ "$cmd" = diff ] && dumps="$T/input.dump $T/input.dump"
		warns=$(echo $dumps | wc -w)
		set +e
		# JSON, or the exporter's own format when it writes no JSON
		# shellcheck disable=SC2086
		"$REPORT" "$cmd" --format json -o /dev/null $dumps 2>"$T/err.txt"
		rc=$?
		if [ $rc -eq 2 ] && grep -q ": no json output" "$T/err.txt"; then
			# shellcheck disable=SC2086
			"$REPORT" "$cmd" -o /dev/null $dumps 2>"$T/err.txt"
			rc=$?
		fi
		set -e
		n=$((n + 1))
		lines=$(wc -l <"$T/err.txt" | tr -d ' ')
		case $rc in
		0) [ "$lines" -le "$warns" ] || fail "$cmd $f: exit 0 with $lines lines on stderr: $(cat "$T/err.txt")" ;;
		2) [ "$lines" -eq 1 ] || fail "$cmd $f: exit 2 with $lines lines on stderr (want 1): $(cat "$T/err.txt")" ;;
		*) fail "$cmd $f: exit $rc (want 0 or 2): $(head -c 2000 "$T/err.txt")" ;;
		esac
	done
done
[ "$n" -gt 0 ] || fail "no regression inputs found"
echo "ok: $n runs ($(echo $cmds | wc -w) commands)"
