# Address-space limits (issue 14, item 6): under `ulimit -v`, hostile_limits
# makes one CUDA call (which the fake runtime fails: its arenas need more
# address space), mallocs and touches a block of its own, then makes 100
# cudaMalloc/cudaFree pairs; its output says what each returned.
#  - ulimit -v 80000, a 64 MiB malloc: the output is the untraced one (the
#    malloc succeeds), no warning, and the dump holds all 101 events.
#  - ulimit -v 8000, a 1 MiB malloc: the output is the untraced one, and
#    either the dump holds all 101 events and nothing was printed, or there
#    is no dump and exactly one warning says why.
. tests/e2e/lib.sh
case ${SANITIZE:-} in
*address* | *thread*)
	echo "AddressSanitizer and ThreadSanitizer map terabytes of shadow memory: no program of theirs runs under ulimit -v"
	exit 77
	;;
esac
# limited NAME KB MB: run untraced and traced under ulimit -v KB
limited() {
	(
		ulimit -v "$2"
		untraced "$PROGS/hostile_limits" vm "$3" 100 >"$T/$1.ref"
		traced "$1" "$PROGS/hostile_limits" vm "$3" 100 >"$T/$1.out" 2>"$T/$1.err"
	) || fail "$1: exit $?"
	echo "untraced: $(tr '\n' ' ' <"$T/$1.ref")"
	expect_eq "$1: traced output" "$(cat "$T/$1.out")" "$(cat "$T/$1.ref")"
}
limited big 80000 64
grep -q "malloc 64 MiB: ok" "$T/big.ref" || fail "the untraced malloc failed: $(cat "$T/big.ref")"
[ ! -s "$T/big.err" ] || fail "big: stderr: $(cat "$T/big.err")"
report "$T/big.json" summary "$(dump_of big)"
expect_eq "big: events" "$(jget "$T/big.json" 'j["dumps"][0]["events"]')" 101

limited small 8000 1
set -- "$T"/small.*.dump
if [ -e "$1" ]; then
	[ ! -s "$T/small.err" ] || fail "small: traced, yet stderr: $(cat "$T/small.err")"
	report "$T/small.json" summary "$1"
	expect_eq "small: events" "$(jget "$T/small.json" 'j["dumps"][0]["events"]')" 101
else
	expect_eq "small: no dump, warnings" "$(wc -l <"$T/small.err" | tr -d ' ')" 1
	grep -q "^cumtrace: " "$T/small.err" || fail "small: warning: $(cat "$T/small.err")"
	echo "ok: no dump: $(cat "$T/small.err")"
fi
