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
