# Baselines: cumtrace-report diff BASE NEW (new, gone, changed leak sites by
# an identity made of symbolized frames, never addresses or stack ids) and
# leaks --baseline BASE, where only sites not in BASE fail the gate.
. tests/e2e/lib.sh
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
traced a "$PROGS/leak_classes" >/dev/null
traced b "$PROGS/leak_classes" >/dev/null
traced x "$PROGS/leak_classes" extra >/dev/null
A=$(dump_of a) B=$(dump_of b) X=$(dump_of x)
# Two runs of the same program: nothing new, gone or changed, although the
# stacks' addresses differ when the loader randomizes them.
report "$T/ab.json" diff "$A" "$B"
expect_eq same_program "$(jget "$T/ab.json" '(j["diff"]["new_total"], j["diff"]["gone_total"], j["diff"]["changed_total"], j["diff"]["unchanged"])')" \
	"(0, 0, 0, 5)"
if [ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null || echo 0)" != 0 ]; then
	report "$T/la.json" leaks "$A"
	report "$T/lb.json" leaks "$B"
	ips() { jget "$1" 'sorted(s["stack"][0]["ip"] for s in j["leaks"]["sites"])'; }
	[ "$(ips "$T/la.json")" != "$(ips "$T/lb.json")" ] || fail "the two runs have the same addresses: the test proves nothing"
	echo "ok: the runs' addresses differ"
fi
# "extra": the user leak grows from 3 to 5 MiB, a new site leaks 512 KiB.
report "$T/ax.json" diff "$A" "$X"
site='[(s["class"], s["base"] and s["base"]["bytes"], s["new"] and s["new"]["bytes"], s["delta_bytes"], s["stack"][0]["function"]) for s in j["diff"][k]]'
expect_eq new "$(jget "$T/ax.json" "$(echo "$site" | sed 's/\[k\]/["new"]/')")" \
	"[('leaked', None, 524288, 524288, 'extra_leak')]"
expect_eq gone "$(jget "$T/ax.json" 'j["diff"]["gone"]')" "[]"
expect_eq changed "$(jget "$T/ax.json" "$(echo "$site" | sed 's/\[k\]/["changed"]/')")" \
	"[('leaked', 3145728, 5242880, 2097152, 'user_leak')]"
expect_eq unchanged "$(jget "$T/ax.json" 'j["diff"]["unchanged"]')" 4
# and the other way round: the extra site is gone
report "$T/xa.json" diff "$X" "$A"
expect_eq gone_reverse "$(jget "$T/xa.json" '[(s["base"]["bytes"], s["new"]) for s in j["diff"]["gone"]]')" "[(524288, None)]"
"$REPORT" diff "$A" "$X" >"$T/ax.txt"
grep -q '^  new: 1 site, 512.0 KiB; gone: 0 sites; changed: 1 site; unchanged: 4 sites$' "$T/ax.txt" ||
	fail "diff summary: $(sed -n 2p "$T/ax.txt")"
grep -q '^new #1   512.0 KiB in 1 allocation (device, cudaMalloc): leaked$' "$T/ax.txt" || fail "no new line"
grep -q '^changed #1   3.0 MiB in 1 -> 5.0 MiB in 1 allocation (+2.0 MiB) (device, cudaMalloc): leaked$' "$T/ax.txt" ||
	fail "no changed line"
echo "ok: text diff"
# The gate on diff: the first dump is the baseline.
expect_eq diff_gate_new "$(code "$REPORT" diff --fail-on-leak "$A" "$X")" 1
expect_eq diff_gate_reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: 1 leak site fails (leaked: 1 site, 512.0 KiB), not suppressed and not in the baseline"
expect_eq diff_gate_same "$(code "$REPORT" diff --fail-on-leak "$A" "$B")" 0
expect_eq diff_gate_gone_only "$(code "$REPORT" diff --fail-on-leak "$X" "$A")" 0
# leaks --baseline
expect_eq baseline_new_site "$(code "$REPORT" leaks --fail-on-leak --baseline "$A" "$X")" 1
expect_eq baseline_reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: 1 leak site fails (leaked: 1 site, 512.0 KiB), not suppressed and not in the baseline"
expect_eq baseline_same "$(code "$REPORT" leaks --fail-on-leak --baseline "$A" "$B")" 0
expect_eq no_baseline "$(code "$REPORT" leaks --fail-on-leak "$B")" 1
expect_eq baseline_all_classes "$(code "$REPORT" leaks --fail-on=all --baseline="$A" "$B")" 0
report "$T/bl.json" leaks --baseline "$A" "$X"
expect_eq in_baseline "$(jget "$T/bl.json" '[(s["bytes"], s["in_baseline"], s["fails_gate"]) for s in j["leaks"]["sites"]]')" \
	"[(6291456, True, False), (5242880, True, False), (4194304, True, False), (2097152, True, False), (1048576, True, False), (524288, False, True)]"
# Usage: diff takes exactly two dumps and no --baseline; a bad baseline is an error.
expect_eq diff_one "$(code "$REPORT" diff "$A")" 2
expect_eq diff_three "$(code "$REPORT" diff "$A" "$B" "$X")" 2
expect_eq diff_message "$(cat "$T/err.txt")" "cumtrace-report: diff needs exactly 2 dump files (try --help)"
expect_eq diff_baseline "$(code "$REPORT" diff --baseline "$A" "$A" "$B")" 2
expect_eq diff_csv "$(code "$REPORT" diff --format csv "$A" "$B")" 2
printf 'NOTADUMP________' >"$T/bad.dump"
expect_eq bad_baseline "$(code "$REPORT" leaks --baseline "$T/bad.dump" "$A")" 2
expect_eq bad_baseline_line "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
