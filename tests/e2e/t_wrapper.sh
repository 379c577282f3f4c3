# The cumtrace wrapper: runs the command traced and prints the summary.
. tests/e2e/lib.sh
cd "$T"
set +e
LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT \
	sh "$ROOT/bin/cumtrace" run -o "$T/w.dump" -- "$PROGS/basic" >"$T/out.txt" 2>&1
rc=$?
set -e
expect_eq exit_code "$rc" 0
[ -f "$T/w.dump" ] || fail "no dump at -o path"
grep -q "expect allocations 22" "$T/out.txt" || fail "program output missing"
grep -q "cumtrace" "$T/out.txt" || fail "no summary printed: $(cat "$T/out.txt")"
# The program's exit code comes back through the wrapper.
set +e
LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT \
	sh "$ROOT/bin/cumtrace" run -- sh -c 'exit 5' >/dev/null 2>&1
expect_eq passthrough_exit "$?" 5
sh "$ROOT/bin/cumtrace" bogus >/dev/null 2>&1
expect_eq usage_exit "$?" 2
set -e

# The wrapper is the gate (issue 18): build/cumtrace, made by `make`, finds the
# build's shim and report by itself.
W=$ROOT/$BUILD/cumtrace
[ -x "$W" ] || fail "make did not build $W"
wrap() { # CUMTRACE ARGS...: exit status in $wrc, stderr in $T/w.err
	set +e
	LD_LIBRARY_PATH=$FAKE "$W" "$@" >"$T/w.out" 2>"$T/w.err"
	wrc=$?
	set -e
}
wrap --version
grep -qx "cumtrace [0-9][0-9.]*" "$T/w.out" || fail "--version: $(cat "$T/w.out" "$T/w.err")"
wrap run -- "$PROGS/basic"
expect_eq "build/cumtrace run: exit" "$wrc" 0
grep -q "^cumtrace: tracing $PROGS/basic; dumps: $T/cumtrace.%p.dump" "$T/w.err" || fail "where the dumps go: $(head -n 1 "$T/w.err")"
grep -q "^cumtrace: next: cumtrace-report leaks '$T/cumtrace\.[0-9]*\.dump'" "$T/w.err" || fail "no next command: $(tail -n 1 "$T/w.err")"
# the culprits, one line each, before the next command (cumtrace-report headline)
expect_eq "headline" "$(grep -A4 '^cumtrace: leaks: ' "$T/w.err" | sed 's/at [0-9.]* ms/at T ms/; s/cumtrace\.[0-9]*\.dump/cumtrace.PID.dump/')" \
"cumtrace: leaks: 10.4 MiB leaked in 7 sites (held by allocator caches: none); largest 5.0 MiB at basic.c:14 in leak_device
cumtrace: peak: 10.0 MiB at T ms; top site 5.0 MiB at basic.c:14 in leak_device
cumtrace: growth: not judged: no step boundaries, or fewer steps than --growth needs (mark steps: cumtrace.step(), NVTX ranges, --steps)
cumtrace: 1 allocation failed out of memory: cumtrace-report oom '$T/cumtrace.PID.dump'
cumtrace: next: cumtrace-report leaks '$T/cumtrace.PID.dump'   (also: peak, timeline, oom; html -o report.html)"
rm -f "$T"/cumtrace.*.dump
# basic leaks 10954752 bytes in 7 sites: the gate fails with 1, or --error-exitcode's 23
wrap run --fail-on-leak --no-summary -- "$PROGS/basic"
expect_eq "gate: leaks fail" "$wrc" 1
grep -q "gate failed: 7 leak sites fail" "$T/w.err" || fail "gate line: $(cat "$T/w.err")"
wrap run -q --fail-on-leak --error-exitcode 23 --no-summary -- "$PROGS/basic"
expect_eq "gate: --error-exitcode" "$wrc" 23
! grep -q "^cumtrace: tracing\|^cumtrace: next" "$T/w.err" || fail "-q: $(cat "$T/w.err")"
wrap run --max-leak-bytes 11M --no-summary -- "$PROGS/basic"
expect_eq "gate: under --max-leak-bytes" "$wrc" 0
wrap run --max-peak-bytes 1M --no-summary -- "$PROGS/basic"
expect_eq "gate: --max-peak-bytes" "$wrc" 1
# the command's failure wins over the gate's
wrap run --fail-on-leak --no-summary -- sh -c "\"$PROGS/basic\" >/dev/null; exit 5"
expect_eq "the command's status first" "$wrc" 5
rm -f "$T"/cumtrace.*.dump
# honest errors: no such command (127), unknown command or option (2, one line),
# a folder that cannot take the dumps (said before the run; the gate fails closed)
wrap run -- "$T/no such program"
expect_eq "command not found: exit" "$wrc" 127
expect_eq "command not found: message" "$(cat "$T/w.err")" "cumtrace: $T/no such program: command not found"
wrap leakz
expect_eq "unknown command: exit" "$wrc" 2
grep -q "^cumtrace: unknown command 'leakz'" "$T/w.err" || fail "unknown command: $(cat "$T/w.err")"
expect_eq "unknown command: lines" "$(wc -l <"$T/w.err" | tr -d ' ')" 1
wrap run --max-leak-bytes -- "$PROGS/basic"
expect_eq "option without a value: exit" "$wrc" 2
wrap run --fail-on-leak -o "$T/none/x.%p.dump" -- "$PROGS/basic"
expect_eq "unwritable folder, gate: exit" "$wrc" 2
grep -q "^cumtrace: cannot write dumps into $T/none" "$T/w.err" || fail "unwritable: $(cat "$T/w.err")"
grep -q "^cumtrace: no dump written: $T/none is not a writable folder" "$T/w.err" || fail "unwritable: $(cat "$T/w.err")"
wrap run -- true
grep -q "no process of the command called CUDA" "$T/w.err" || fail "no CUDA: $(cat "$T/w.err")"
# the other options, each with its exit status
wrap --help
expect_eq "--help: exit" "$wrc" 0
for o in --fail-on-leak --fail-on --max-leak-bytes --max-peak-bytes --suppressions --baseline --error-exitcode --growth --steps --leaks --no-summary; do
	grep -q -- "$o" "$T/w.out" || fail "--help lacks $o"
done
wrap run --leaks -- "$PROGS/basic"
expect_eq "--leaks: exit" "$wrc" 0
grep -q "at main (tests/e2e/progs/basic.c:" "$T/w.err" || fail "--leaks: no leaks report: $(head -n 3 "$T/w.err")"
wrap run --fail-on leaked --no-summary -- "$PROGS/basic"
expect_eq "--fail-on leaked: exit" "$wrc" 1
wrap run --fail-on cache --no-summary -- "$PROGS/basic"
expect_eq "--fail-on cache (basic leaks no cache): exit" "$wrc" 0
printf 'leak:main\n' >"$T/all.supp"
printf 'leak:nothing_called_this\n' >"$T/none.supp"
wrap run --fail-on-leak --suppressions "$T/all.supp" --no-summary -- "$PROGS/basic"
expect_eq "--suppressions matching every site: exit" "$wrc" 0
wrap run --fail-on-leak --suppressions "$T/none.supp" --no-summary -- "$PROGS/basic"
expect_eq "--suppressions matching none: exit" "$wrc" 1
rm -f "$T"/cumtrace.*.dump
wrap run -o "$T/base.dump" -- "$PROGS/basic"
wrap run --fail-on-leak --baseline "$T/base.dump" --no-summary -- "$PROGS/basic"
expect_eq "--baseline of the same program: exit" "$wrc" 0
wrap run --fail-on growth --growth 2/3 --steps 'step*' --no-summary -- "$PROGS/basic"
expect_eq "--fail-on growth --growth --steps without steps: exit" "$wrc" 0
grep -q "growth not judged: no step boundaries" "$T/w.err" || fail "growth not judged not said: $(cat "$T/w.err")"
wrap report summary "$T/base.dump"
expect_eq "report: exit" "$wrc" 0
grep -q "leaks: 8 allocations, 10.4 MiB (10954752 bytes) in 7 sites" "$T/w.out" || fail "report summary: $(cat "$T/w.out")"
echo "ok: build/cumtrace: --version, where, next, gate 1/23/0, command status first, 127, 2, --help, --leaks, --fail-on, --suppressions, --baseline, --growth/--steps, report"
