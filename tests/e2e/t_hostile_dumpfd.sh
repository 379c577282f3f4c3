# The dump's descriptor in a program that takes descriptors back (issue 14,
# item 2). After its first CUDA call hostile_fds either closes every
# descriptor >= 3 and opens three files of its own (closeall), or opens
# three files and dup2's them over descriptors 3..15 (dup2); then it keeps
# allocating and writing 64-byte lines to its files. closeexit and
# closeabort allocate first, then close and open as closeall and leave at
# once through exit or abort, so that the exit or abort path writes what
# the rings hold. RUNS times each (5 unless set), every run must:
#  - exit as the untraced run does, with its output, its three files
#    byte-identical to the untraced run's (the shim wrote nothing into them,
#    closed none);
#  - leave a dump holding every allocation (the shim notices that its
#    descriptor is gone and opens the dump again by path);
#  - print exactly one warning naming the dump, none in dup2.
# It prints "MODE: N of RUNS runs corrupted, M of RUNS dumps incomplete, ...".
. tests/e2e/lib.sh
runs=${RUNS:-5}
# The shell's own line about a child killed by SIGABRT is not the program's.
no_abort_note() { grep -v '^Aborted' || true; }
pairs=2000
modes="closeall dup2 closeexit closeabort"
mkdir "$T/ref"
for mode in $modes; do
	set +e
	untraced "$PROGS/hostile_fds" "$mode" "$T/ref/$mode" $pairs >"$T/ref/$mode.out" 2>"$T/ref/$mode.sh"
	echo $? >"$T/ref/$mode.rc"
	set -e
	no_abort_note <"$T/ref/$mode.sh" >"$T/ref/$mode.err"
	[ ! -s "$T/ref/$mode.err" ] || fail "untraced $mode: $(cat "$T/ref/$mode.err")"
done
want=$(sed -n 's/^expect allocations //p' "$T/ref/closeall.out")

bad=0
for mode in $modes; do
	corrupted=0
	incomplete=0
	misworded=0
	i=0
	while [ $i -lt "$runs" ]; do
		i=$((i + 1))
		rm -f "$T"/run.* "$T"/h.*.dump
		set +e
		traced h "$PROGS/hostile_fds" "$mode" "$T/run" $pairs >"$T/run.out" 2>"$T/run.sh"
		rc=$?
		set -e
		no_abort_note <"$T/run.sh" >"$T/run.err"
		why=""
		[ $rc -eq "$(cat "$T/ref/$mode.rc")" ] || why="exit $rc"
		cmp -s "$T/run.out" "$T/ref/$mode.out" || why="$why, output differs"
		for k in 0 1 2; do
			cmp -s "$T/run.$k" "$T/ref/$mode.$k" ||
				why="$why, file $k: $(wc -c <"$T/run.$k" 2>/dev/null || echo no) bytes, want $(wc -c <"$T/ref/$mode.$k")"
		done
		if [ -n "$why" ]; then
			corrupted=$((corrupted + 1))
			echo "run $i: corrupted: $why; stderr: $(cat "$T/run.err")"
		fi
		got=none
		set -- "$T"/h.*.dump
		if [ $# -eq 1 ] && [ -f "$1" ] &&
			"$REPORT" summary --format json -o "$T/run.json" "$1" 2>/dev/null; then
			got=$(jget "$T/run.json" 'j["allocations"]')
		fi
		if [ "$got" != "$want" ]; then
			incomplete=$((incomplete + 1))
			echo "run $i: dump holds $got allocations of $want"
		fi
		warnings=$(grep -c '^cumtrace: ' "$T/run.err" || true)
		lines=$(wc -l <"$T/run.err" | tr -d ' ')
		if [ "$mode" = dup2 ]; then
			[ "$lines" = 0 ] || misworded=$((misworded + 1))
		else
			[ "$warnings" = 1 ] && [ "$lines" = 1 ] && grep -q "$T/h\." "$T/run.err" ||
				misworded=$((misworded + 1))
		fi
	done
	echo "$mode: $corrupted of $runs runs corrupted, $incomplete of $runs dumps incomplete," \
		"$misworded of $runs with the wrong warnings (last: $(cat "$T/run.err"))"
	[ $corrupted -eq 0 ] && [ $incomplete -eq 0 ] && [ $misworded -eq 0 ] || bad=1
done
[ $bad -eq 0 ] || fail "the shim changed the program's files, lost events or warned wrongly"
echo "ok: $runs runs of each mode: the program's files intact, every allocation in the dump"

# The window the modes above meet only by chance: the program closes the dump's
# descriptor after the shim checked it and before it writes (libclosewrite.so
# closes it just before the shim's second write to the dump). The write fails
# with EBADF, having written nothing: the shim opens the dump again by path and
# writes the same bytes there, with the one warning, and loses nothing.
for at in 2 3; do
	rm -f "$T"/run.* "$T"/h.*.dump
	set +e
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD="$PRELOAD:$ROOT/$BUILD/tests/libs/libclosewrite.so" CLOSEWRITE_AT=$at \
		CUMTRACE_OUTPUT="$T/h.%p.dump" "$PROGS/hostile_fds" dup2 "$T/run" $pairs >"$T/run.out" 2>"$T/run.err"
	rc=$?
	set -e
	[ $rc -eq "$(cat "$T/ref/dup2.rc")" ] || fail "closewrite $at: exit $rc: $(cat "$T/run.err")"
	set -- "$T"/h.*.dump
	[ $# -eq 1 ] && [ -f "$1" ] || fail "closewrite $at: dumps: $*"
	report "$T/cw.json" summary "$1"
	expect_eq "closewrite $at: allocations in the dump" "$(jget "$T/cw.json" 'j["allocations"]')" "$want"
	expect_eq "closewrite $at: warnings" \
		"$(grep -c "^cumtrace: descriptor [0-9]* no longer names $T/h\.[0-9]*\.dump (the program closed or replaced it); opened it again" "$T/run.err") $(wc -l <"$T/run.err" | tr -d ' ')" "1 1"
done
