# Every input the fuzzer ever found (tests/fuzz/regress/) and every seed
# (tests/fuzz/corpus/), through the gcc-built analyzer: each command, JSON
# (the exporters in their own format).
# Exit 0 (or 0 with one truncation warning) or 2 with exactly one line on
# stderr; never a signal, never 1 without --fail-on-leak.
. tests/e2e/lib.sh
n=0
for f in tests/fuzz/regress/* tests/fuzz/corpus/*; do
	[ -f "$f" ] || continue
	case $f in *.md) continue ;; esac
	for cmd in summary leaks peak timeline perfetto flamegraph memviz html; do
		case $cmd in perfetto | flamegraph | memviz | html) fmt= ;; *) fmt="--format json" ;; esac
		set +e
		# shellcheck disable=SC2086
		"$REPORT" "$cmd" $fmt -o /dev/null "$f" 2>"$T/err.txt"
		rc=$?
		set -e
		n=$((n + 1))
		lines=$(wc -l <"$T/err.txt" | tr -d ' ')
		case $rc in
		0) [ "$lines" -le 1 ] || fail "$cmd $f: exit 0 with $lines lines on stderr: $(cat "$T/err.txt")" ;;
		2) [ "$lines" -eq 1 ] || fail "$cmd $f: exit 2 with $lines lines on stderr (want 1): $(cat "$T/err.txt")" ;;
		*) fail "$cmd $f: exit $rc (want 0 or 2): $(head -c 2000 "$T/err.txt")" ;;
		esac
	done
done
[ "$n" -gt 0 ] || fail "no regression inputs found"
echo "ok: $n runs"
