# cumtrace_bench_pause (include/cumtrace/cumtrace.h): while paused, every thread's calls are
# forwarded untraced with their own results; the dump records the pauses and every report
# warns that it is incomplete. A pause asked twice is one pause.
. tests/e2e/lib.sh
traced bp "$PROGS/bench_pause" >"$T/out.txt" 2>"$T/err.txt" || fail "bench_pause exited $?"
expect_eq results "$(grep '^rc' "$T/out.txt" | tr '\n' ' ')" \
	"rc pause 0 rc resume 0 rc again 0 0 0 rc resumed 0 "
dump=$(dump_of bp)
report "$T/l.json" leaks "$dump"
# Recorded: the 1 MiB and 4 MiB allocations and the 4 MiB free; not the 2 MiB block, the
# worker's 8 MiB, or the frees made while paused.
expect_eq allocations "$(jget "$T/l.json" 'j["allocations"]')" 2
expect_eq frees "$(jget "$T/l.json" 'j["frees"]')" 1
expect_eq pauses "$(jget "$T/l.json" 'j["dumps"][0]["pauses"]')" 2
expect_eq paused_ns_positive "$(jget "$T/l.json" 'j["dumps"][0]["paused_ns"] > 0')" True
expect_eq marks "$(jget "$T/l.json" 'j["dumps"][0]["marks"]')" 0
# Events: those three CUDA calls and the CuPy block given out and back after the resume.
expect_eq events "$(python3 tests/e2e/ctrec.py count 2 "$dump")" 5
# The block freed while paused reads as live at exit: why every report warns.
expect_eq leak_bytes "$(jget "$T/l.json" 'j["leaks"]["bytes"]')" 1048576
for cmd in summary leaks peak; do
	"$REPORT" $cmd "$dump" >"$T/$cmd.txt" || fail "$cmd exited $?"
	grep -q "WARNING: tracing was paused 2 times for [0-9.]* s in all (cumtrace_bench_pause.*THE DATA IS INCOMPLETE" \
		"$T/$cmd.txt" || fail "$cmd lacks the pause warning: $(cat "$T/$cmd.txt")"
done
echo "ok: summary, leaks and peak warn"
"$REPORT" html "$dump" -o "$T/r.html" || fail "html exited $?"
grep -q "tracing was paused 2 times" "$T/r.html" || fail "the HTML report lacks the pause warning"
echo "ok: html warns"
# The CI outputs say so too, and stay valid for their consumers (tests/ci_formats.py): JUnit as a
# property of the dump's suite, SARIF as a warning notification of the run.
"$REPORT" leaks --format junit -o "$T/l.xml" "$dump" || fail "junit exited $?"
python3 tests/ci_formats.py junit "$T/l.xml" >/dev/null || fail "junit check: $(python3 tests/ci_formats.py junit "$T/l.xml")"
grep -q '<property name="incomplete" value="tracing was paused 2 times for [0-9.]* s in all' "$T/l.xml" ||
	fail "the JUnit suite lacks the pause property"
"$REPORT" leaks --format sarif -o "$T/l.sarif" "$dump" || fail "sarif exited $?"
python3 tests/ci_formats.py sarif "$T/l.sarif" >/dev/null || fail "sarif check: $(python3 tests/ci_formats.py sarif "$T/l.sarif")"
expect_eq sarif_notification "$(jget "$T/l.sarif" '[(n["level"], "tracing was paused 2 times" in n["message"]["text"]) for n in j["runs"][0]["invocations"][0]["toolExecutionNotifications"]]')" \
	"[('warning', True)]"
# A dump without pauses says nothing of them, and its JSON has no pause keys.
traced basic "$PROGS/basic" >/dev/null 2>&1
"$REPORT" summary "$(dump_of basic)" | grep -q "paused" && fail "a dump without pauses mentions them"
report "$T/b.json" summary "$(dump_of basic)"
expect_eq no_pause_keys "$(jget "$T/b.json" '"pauses" in j["dumps"][0]')" False
# A fork child starts unpaused: its dump has its 16 MiB pair and no pause; the parent's has its
# one pause around the fork. Not under ThreadSanitizer, which
# cannot run the writer thread a traced fork child starts (lib.sh, no_fork_under_tsan).
if ! tsan_build; then
	traced bpf "$PROGS/bench_pause" fork >"$T/fork.txt" 2>&1 || fail "bench_pause fork exited $?"
	expect_eq fork_results "$(grep '^rc' "$T/fork.txt" | tr '\n' ' ')" "rc pause 0 rc resume 0 "
	for f in "$T"/bpf.*.dump; do
		report "$T/f.json" summary "$f"
		case $(jget "$T/f.json" 'j["dumps"][0]["forked"]') in
		True) expect_eq fork_child "$(jget "$T/f.json" '(j["allocations"], j["frees"], "pauses" in j["dumps"][0])')" \
			"(1, 1, False)" ;;
		*) expect_eq fork_parent "$(jget "$T/f.json" '(j["allocations"], j["frees"], j["dumps"][0]["pauses"])')" \
			"(1, 1, 1)" ;;
		esac
	done
	expect_eq fork_dumps "$(ls "$T"/bpf.*.dump | wc -l)" 2
fi
# Off (CUMTRACE_DISABLE=1) the call changes nothing and says so: -1.
CUMTRACE_DISABLE=1 traced off "$PROGS/bench_pause" >"$T/off.txt" 2>/dev/null || fail "disabled run exited $?"
expect_eq disabled "$(grep '^rc' "$T/off.txt" | tr '\n' ' ')" \
	"rc pause -1 rc resume -1 rc again -1 -1 -1 rc resumed -1 "
# Untraced the program finds no such function.
expect_eq untraced "$(untraced "$PROGS/bench_pause")" untraced
