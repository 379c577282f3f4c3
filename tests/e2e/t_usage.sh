# Bad usage of cumtrace-report (issue 17, "The command line"): one line on
# stderr naming the mistake, exit 2, nothing on stdout; and a dump whose name
# is also a command word is still read as a dump.
. tests/e2e/lib.sh
cd "$T"
traced ok "$PROGS/basic" >/dev/null
dump=$(dump_of ok)
# bad EXPECTED-LINE ARGS...: cumtrace-report ARGS exits 2 with exactly that stderr line
bad() {
	want=$1
	shift
	set +e
	"$REPORT" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	expect_eq "$* : exit" "$rc" 2
	expect_eq "$* : stderr" "$(cat "$T/err")" "$want"
	[ ! -s "$T/out" ] || fail "$*: wrote to stdout: $(head -c 200 "$T/out")"
}
bad "cumtrace-report: unknown command 'leakz' (try --help)" leakz "$dump"
bad "cumtrace-report: two commands: 'leaks' and 'peak' (one command, then dumps) (try --help)" leaks peak "$dump"
bad "cumtrace-report: command 'peak' after a dump: the command goes first (try --help)" "$dump" peak
bad "cumtrace-report: --native and --python-only: choose one (try --help)" leaks --native --python-only "$dump"
bad "cumtrace-report: unknown option '--bogus' (try --help)" leaks --bogus "$dump"
bad "cumtrace-report: nofile.dump: cannot open: No such file or directory" leaks nofile.dump
# the same dump twice, under another name too: refused (it would be counted twice)
ln -s "$dump" "$T/same.dump"
bad "cumtrace-report: $T/same.dump is given twice (also as $dump): each dump once (try --help)" leaks "$dump" "$T/same.dump"
bad "cumtrace-report: diff needs exactly 2 dump files (try --help)" diff "$dump"
"$REPORT" diff "$dump" "$dump" >/dev/null || fail "diff of a dump with itself refused"
# the same option twice is no conflict
"$REPORT" leaks --native --native "$dump" >/dev/null || fail "--native twice"
# a dump called "peak" (a file of that name) is a dump
cp "$dump" "$T/peak"
"$REPORT" leaks peak >"$T/out" || fail "a dump named peak was not read"
grep -q "leak" "$T/out" || fail "a dump named peak: $(cat "$T/out")"
echo "ok: unknown command, two commands, command after a dump, conflicting options, a dump twice: one line, exit 2"

# Options that only some commands take (commands.def: OPTIONS) are refused by the
# others, one line naming the commands that take it; --help lists each command's.
bad "cumtrace-report: leaks does not take --of (it is for flamegraph) (try --help)" leaks --of peak "$dump"
bad "cumtrace-report: summary does not take --window (it is for windows) (try --help)" summary --window 'x*' "$dump"
bad "cumtrace-report: summary does not take --top (it is for leaks, peak, oom, streams, diff, html, windows) (try --help)" \
	--top 3 "$dump"
bad "cumtrace-report: timeline does not take --full-stacks (it is for leaks, peak, oom, streams, diff, windows) (try --help)" \
	timeline --full-stacks "$dump"
# a JSON document holds the summary, leaks, peak and timeline sections: it takes their options
"$REPORT" summary --format json --top 3 --buckets 5 --per-dump "$dump" >/dev/null || fail "summary --format json --top"
# every command takes the options --help lists under it, and refuses every other one of them
"$REPORT" --help >"$T/help"
some=$(sed -n '/^commands:/,/^$/p' "$T/help" | grep -o -- '--[a-z-]*' | sort -u)
value() { case $1 in --of) echo peak ;; --window) echo 'x*' ;; --buckets | --top | --counter-us | --max-slices | --max-entries) echo 5 ;; esac; }
sed -n '/^commands:/,/^$/p' "$T/help" | awk '/^  [a-z]/ { c = $1; next } /^ +\[/ { gsub(/[][]/, ""); o[c] = $0 } END { for (c in o) print c, o[c] }' >"$T/takes"
expect_eq "commands listing options" "$(wc -l <"$T/takes")" 14
dumps() { if [ "$1" = diff ]; then echo "$dump $dump"; else echo "$dump"; fi; }
while read -r cmd opts; do
	args=""
	for op in $opts; do
		case $op in --native) continue ;; esac # --native and --python-only: choose one
		args="$args $op $(value "$op")"
	done
	# shellcheck disable=SC2046,SC2086
	"$REPORT" "$cmd" $args -o "$T/all.out" $(dumps "$cmd") 2>"$T/err" || fail "$cmd$args: $(cat "$T/err")"
	for op in $some; do
		case " $opts " in *" $op "*) continue ;; esac
		set +e
		# shellcheck disable=SC2046
		"$REPORT" "$cmd" "$op" $(value "$op") $(dumps "$cmd") >/dev/null 2>"$T/err"
		rc=$?
		set -e
		[ $rc = 2 ] && grep -q "^cumtrace-report: $cmd does not take $op (it is for " "$T/err" ||
			fail "$cmd $op: exit $rc, $(cat "$T/err")"
	done
done <"$T/takes"
echo "ok: each command takes the options --help lists for it and refuses the others (exit 2, one line)"

# Binary output (memviz's pickle) is never written to a terminal: one line, exit 2;
# to a file (-o) or a pipe it is written.
command -v python3 >/dev/null || { echo "python3 not found: no terminal check"; exit 0; }
# on_tty ARGS...: cumtrace-report ARGS with its standard output a terminal (a pty), stderr
# to $T/err; prints its exit status and the bytes it wrote to the terminal
on_tty() {
	python3 - "$REPORT" "$T/err" "$@" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    os.execv(sys.argv[1], [sys.argv[1]] + sys.argv[3:])
n = 0
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    n += len(d)
_, st = os.waitpid(pid, 0)
print(os.WEXITSTATUS(st), n)
PY
}
expect_eq "memviz to a terminal" "$(on_tty memviz "$dump")" "2 0"
expect_eq "memviz to a terminal: stderr" "$(cat "$T/err")" \
	"cumtrace-report: memviz: pickle output is binary: not written to a terminal (-o FILE, or redirect it) (try --help)"
expect_eq "memviz -o FILE from a terminal" "$(on_tty memviz -o "$T/m.pickle" "$dump")" "0 0"
[ -s "$T/m.pickle" ] || fail "memviz -o FILE wrote nothing"
"$REPORT" memviz "$dump" | cat >"$T/p.pickle"
cmp -s "$T/m.pickle" "$T/p.pickle" || fail "memviz to a pipe differs from -o FILE"
# text to a terminal is written
[ "$(on_tty leaks "$dump" | cut -d' ' -f1)" = 0 ] || fail "leaks to a terminal: $(cat "$T/err")"
echo "ok: a pickle is not written to a terminal (exit 2), with -o or to a pipe it is"
