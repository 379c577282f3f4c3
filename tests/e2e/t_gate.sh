# The CI gate: exit codes of every gate option (0, the error exit code, 2),
# with every command; one line on stderr saying why when it fails.
. tests/e2e/lib.sh
traced gate "$PROGS/basic" >/dev/null
dump=$(dump_of gate)
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
lines() { wc -l <"$T/err.txt" | tr -d ' '; }
expect_eq no_gate "$(code "$REPORT" leaks "$dump")" 0
expect_eq fail_on_leak "$(code "$REPORT" leaks --fail-on-leak "$dump")" 1
expect_eq reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: 7 leak sites fail (leaked: 7 sites, 10.4 MiB), not suppressed"
expect_eq error_exitcode "$(code "$REPORT" leaks --fail-on-leak --error-exitcode 7 "$dump")" 7
expect_eq error_exitcode_eq "$(code "$REPORT" leaks --fail-on-leak --error-exitcode=255 "$dump")" 255
for bad in 0 2 77 99 256 -1 x 3x ''; do
	expect_eq "error_exitcode_$bad" "$(code "$REPORT" leaks --fail-on-leak --error-exitcode "$bad" "$dump")" 2
	expect_eq "error_exitcode_${bad}_one_line" "$(lines)" 1
done
# Any command carries the gate.
for cmd in summary leaks peak timeline; do
	expect_eq "gate_$cmd" "$(code "$REPORT" $cmd --fail-on-leak --error-exitcode 5 "$dump")" 5
	expect_eq "gate_${cmd}_one_line" "$(lines)" 1
done
# --fail-on: the classes; basic's leaks are all "leaked"
expect_eq fail_on_cache "$(code "$REPORT" leaks --fail-on cache "$dump")" 0
expect_eq fail_on_cache_quiet "$(lines)" 0
expect_eq fail_on_leaked "$(code "$REPORT" leaks --fail-on=leaked "$dump")" 1
expect_eq fail_on_all "$(code "$REPORT" leaks --fail-on=all "$dump")" 1
expect_eq fail_on_bogus "$(code "$REPORT" leaks --fail-on=leaked,bogus "$dump")" 2
expect_eq fail_on_bogus_message "$(cat "$T/err.txt")" \
	"cumtrace-report: --fail-on: unknown class 'bogus' (leaked, cache, teardown, growth, all) (try --help)"
# --max-leak-bytes: the bytes of the failing sites, N itself passes
report "$T/l.json" leaks "$dump"
total=$(jget "$T/l.json" 'j["leaks"]["bytes"]')
expect_eq total "$total" 10954752
expect_eq max_leak_equal "$(code "$REPORT" leaks --max-leak-bytes "$total" "$dump")" 0
expect_eq max_leak_below "$(code "$REPORT" leaks --max-leak-bytes $((total - 1)) "$dump")" 1
expect_eq max_leak_reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: 10954752 bytes in failing leak sites exceed --max-leak-bytes 10954751"
expect_eq max_leak_10M "$(code "$REPORT" leaks --max-leak-bytes 10M "$dump")" 1
expect_eq max_leak_11MiB "$(code "$REPORT" leaks --max-leak-bytes=11MiB "$dump")" 0
expect_eq max_leak_cache_only "$(code "$REPORT" leaks --fail-on cache --max-leak-bytes 0 "$dump")" 0
for bad in 12X -5 '' 1.5M 99999999999999999999 16777216T; do
	expect_eq "max_leak_bad_$bad" "$(code "$REPORT" leaks --max-leak-bytes "$bad" "$dump")" 2
done
# --max-peak-bytes: each dump's peak device memory
peak=$(jget "$T/l.json" 'j["dumps"][0]["peak_bytes"]')
expect_eq max_peak_equal "$(code "$REPORT" peak --max-peak-bytes "$peak" "$dump")" 0
expect_eq max_peak_below "$(code "$REPORT" summary --max-peak-bytes $((peak - 1)) --error-exitcode 3 "$dump")" 3
expect_eq max_peak_reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: peak device memory $peak bytes ($(jget "$T/l.json" 'j["dumps"][0]["peak_bytes"]' | awk '{printf "%.1f MiB", $1 / 1048576}')) of pid $(jget "$T/l.json" 'j["dumps"][0]["pid"]') exceeds --max-peak-bytes $((peak - 1))"
# Several reasons: one line.
expect_eq all_reasons "$(code "$REPORT" leaks --fail-on-leak --max-leak-bytes 1 --max-peak-bytes 1 "$dump")" 1
expect_eq all_reasons_one_line "$(lines)" 1
expect_eq all_reasons_parts "$(tr ';' '\n' <"$T/err.txt" | wc -l | tr -d ' ')" 3
traced clean "$PROGS/clean"
expect_eq clean_fail_on_leak "$(code "$REPORT" leaks --fail-on-leak --fail-on=all --max-leak-bytes 0 "$(dump_of clean)")" 0
# Usage errors and unreadable dumps are 2 whatever the gate says.
expect_eq bad_option "$(code "$REPORT" leaks --bogus "$dump")" 2
expect_eq one_line_error "$(lines)" 1
expect_eq missing_file "$(code "$REPORT" leaks --fail-on-leak --error-exitcode 9 "$T/missing.dump")" 2
expect_eq one_line_error "$(lines)" 1
printf 'NOTADUMP________' >"$T/bad.dump"
expect_eq bad_magic "$(code "$REPORT" leaks "$T/bad.dump")" 2
grep -q "offset 0" "$T/err.txt" || fail "bad magic error lacks the offset: $(cat "$T/err.txt")"
expect_eq directory "$(code "$REPORT" leaks "$T")" 2
expect_eq no_dump "$(code "$REPORT" leaks)" 2
expect_eq help "$(code "$REPORT" --help)" 0
