# Descriptors of the unwinder and of the shim itself (issue 14, item 3).
#  1. A program that never calls CUDA: its first open() returns what it
#     returns untraced (3), with tracing on and with CUMTRACE_DISABLE=1.
#  2. After CUDA calls with stacks (the unwinder working, the writer
#     running), the descriptors open below 64 are the untraced run's (0 1 2).
#  3. hostile_fds pipe, RUNS times (5 unless set): the program dup2's its own
#     pipe's read end over 3 and its file over 4, puts 4096 bytes in the pipe,
#     then threads allocate at 24 depths each (fresh stacks for the unwinder
#     to check). The pipe gives back its 4096 bytes, the file holds exactly
#     the program's lines, the output is the untraced one. It prints
#     "N of RUNS runs corrupted".
. tests/e2e/lib.sh
untraced "$PROGS/hostile_fds" firstfd >"$T/first.ref"
echo "untraced: $(cat "$T/first.ref")"
traced nc "$PROGS/hostile_fds" firstfd >"$T/first.out"
expect_eq "traced" "$(cat "$T/first.out")" "$(cat "$T/first.ref")"
CUMTRACE_DISABLE=1 traced nc "$PROGS/hostile_fds" firstfd >"$T/first.out"
expect_eq "disabled" "$(cat "$T/first.out")" "$(cat "$T/first.ref")"

untraced "$PROGS/hostile_fds" lowfds >"$T/low.ref"
echo "untraced: $(cat "$T/low.ref")"
traced low "$PROGS/hostile_fds" lowfds >"$T/low.out"
expect_eq "traced" "$(cat "$T/low.out")" "$(cat "$T/low.ref")"
[ -s "$(dump_of low)" ] || fail "lowfds: empty dump"

runs=${RUNS:-5}
untraced "$PROGS/hostile_fds" pipe "$T/ref.log" 500 >"$T/pipe.ref" || fail "untraced pipe: exit $?"
corrupted=0
i=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	rm -f "$T/run.log" "$T"/p.*.dump
	set +e
	traced p "$PROGS/hostile_fds" pipe "$T/run.log" 500 >"$T/pipe.out" 2>"$T/pipe.err"
	rc=$?
	set -e
	why=""
	[ $rc -eq 0 ] || why="exit $rc"
	cmp -s "$T/pipe.out" "$T/pipe.ref" || why="$why, output differs"
	cmp -s "$T/run.log" "$T/ref.log" ||
		why="$why, file: $(wc -c <"$T/run.log") bytes, want $(wc -c <"$T/ref.log")"
	[ ! -s "$T/pipe.err" ] || why="$why, stderr: $(cat "$T/pipe.err")"
	if [ -n "$why" ]; then
		corrupted=$((corrupted + 1))
		echo "run $i: corrupted: $why"
	fi
done
echo "pipe: $corrupted of $runs runs corrupted"
[ $corrupted -eq 0 ] || fail "the unwinder touched the program's descriptors"
report "$T/p.json" summary "$(dump_of p)"
expect_eq "pipe: allocations" "$(jget "$T/p.json" 'j["allocations"]')" \
	"$(sed -n 's/^expect allocations //p' "$T/pipe.ref")"
