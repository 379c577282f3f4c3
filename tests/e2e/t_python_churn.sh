# The memo of Python stacks when code objects die and are made again at the
# same address (tests/e2e/py_churn.py: 40 rounds, each a function whose
# bytecode is the same every round and whose line is not), on every CPython
# 3.8+ found here: each kept block is at its own round's line. On 3.12+ the
# memo finds stacks by code pointers alone while no code object dies (a code
# watcher counts the deaths): the 100 steady calls at the end do, and the
# calls right after a death are checked against the code objects; with the
# Python bootstrap off (no watcher) none is found by code pointers alone.
. tests/e2e/lib.sh
. tests/e2e/py_lib.sh
py_interpreters >"$T/pys"
script=$ROOT/tests/e2e/py_churn.py
n=0
# run NAME PYTHON [VAR=VALUE...]: the script traced; its lines in $T/NAME.lines, the shim's
# in $T/NAME.err; each kept block at its round's line
run() {
	name=$1 p=$2
	shift 2
	CUMTRACE_SELFTIME=1 traced "$name" env "$@" "$p" "$script" "$FAKE" 40 100 >"$T/$name.lines" 2>"$T/$name.err" ||
		fail "$name: py_churn.py exited $?: $(cat "$T/$name.err")"
	py_sites_at_lines "$name" 100
}
# quick NAME: the memo's hits by code pointers alone in run NAME
quick() { sed -n 's/.*, \([0-9]*\) found by code pointers alone, .*/\1/p' "$T/$1.err"; }
# how NAME: how run NAME found the Python thread state
how() { sed -n 's/.*; Python thread state \([^;]*\); clock reads .*/\1/p' "$T/$1.err"; }
while read -r ver p; do
	m=${ver#3.}
	[ "$m" -ge 8 ] || continue
	n=$((n + 1))
	echo "== python $ver ($p)"
	run "v$n" "$p"
	tail -n 1 "$T/v$n.lines"
	case $m:$(how "v$n") in
	8:"read in place" | 9:"read in place" | 10:"read in place" | 11:"read in place") ;;
	1[23]:"read in place (checked with the GIL)") ;;
	1[23]:"read in place, the current one through __tls_get_addr once a thread (checked with the GIL)") ;;
	*) fail "$ver: Python thread state '$(how "v$n")', expected read in place" ;;
	esac
	if [ "$m" -ge 12 ]; then
		[ "$(sed -n 's/^reused //p' "$T/v$n.lines")" -gt 0 ] ||
			fail "$ver: no code object took a freed one's address: the run proves nothing"
		[ "$(quick "v$n")" -ge 99 ] || fail "$ver: $(quick "v$n") memo hits by code pointers alone, expected >= 99: $(cat "$T/v$n.err")"
		run "v$n-noboot" "$p" CUMTRACE_PYTHON_BOOT=0
		expect_eq "$ver, no bootstrap: memo hits by code pointers alone" "$(quick "v$n-noboot")" 0
	else
		expect_eq "$ver: memo hits by code pointers alone" "$(quick "v$n")" 0
	fi
done <"$T/pys"
[ "$n" -gt 0 ] || { echo "no CPython 3.8+ found"; exit 77; }
