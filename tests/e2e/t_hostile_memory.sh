# Issue 14, item 9: the analyzer's memory and time on dumps shaped to hurt it.
# A memory budget (--max-memory, CUMTRACE_REPORT_MAX_MEMORY) ends a run that
# would need more with one line and exit 2, never the OOM killer; reports by
# device show the 64 highest peaks, so 65536 device numbers cost no more
# than 64 (peak and html once took 89 s and 104 s, quadratic in devices).
. tests/e2e/lib.sh
GENDUMP=$ROOT/$BUILD/gendump
code() { set +e; "$@" >"$T/out.txt" 2>"$T/err.txt"; echo $?; set -e; }
lines() { wc -l <"$T/err.txt" | tr -d ' '; }

# 500000 live blocks of one stack: about 75 MiB of analysis
"$GENDUMP" -n 500000 -l 500000 -t 4 -s 1 "$T/live.ct" >/dev/null
for cmd in summary html; do
	expect_eq "budget: $cmd" "$(code "$REPORT" $cmd --max-memory 40M "$T/live.ct")" 2
	expect_eq "budget: $cmd: one line" "$(lines)" 1
	grep -q "^cumtrace-report: memory budget exceeded: .* the limit is 40.0 MiB" "$T/err.txt" ||
		fail "budget: $cmd: $(cat "$T/err.txt")"
done
expect_eq "budget: env" "$(CUMTRACE_REPORT_MAX_MEMORY=40M code "$REPORT" leaks "$T/live.ct")" 2
grep -q "memory budget exceeded" "$T/err.txt" || fail "budget: env: $(cat "$T/err.txt")"
expect_eq "budget: the option wins over env" \
	"$(CUMTRACE_REPORT_MAX_MEMORY=40M code "$REPORT" summary --max-memory 0 "$T/live.ct")" 0
expect_eq "budget: enough" "$(code "$REPORT" summary --max-memory 2G "$T/live.ct")" 0
expect_eq "budget: bad size" "$(code "$REPORT" summary --max-memory 12X "$T/live.ct")" 2
expect_eq "budget: bad env" "$(CUMTRACE_REPORT_MAX_MEMORY=lots code "$REPORT" summary "$T/live.ct")" 2
# the gate fails closed: a run stopped by the budget never exits 0
expect_eq "budget: gate" "$(code "$REPORT" leaks --max-memory 40M --max-leak-bytes 1T "$T/live.ct")" 2
# an -o report stopped by the budget leaves no file, not even a temporary one
expect_eq "budget: -o" "$(code "$REPORT" html --max-memory 40M -o "$T/r/out.html" "$T/live.ct")" 2
mkdir "$T/r"
expect_eq "budget: -o, directory" "$(code "$REPORT" html --max-memory 40M -o "$T/r/out.html" "$T/live.ct")" 2
expect_eq "budget: -o leaves nothing" "$(ls -A "$T/r")" ""
"$REPORT" --help | grep -q -- "--max-memory SIZE" || fail "--help does not list --max-memory"
echo "ok: --help lists --max-memory"

# every device number: each report by device shows the 64 highest peaks
"$GENDUMP" -n 100000 -l 50000 -t 4 -s 50 -D 65536 "$T/dev.ct" >/dev/null
for cmd in peak html frag; do
	start=$(date +%s)
	expect_eq "devices: $cmd" "$(code "$REPORT" $cmd -o "$T/dev.$cmd" "$T/dev.ct")" 0
	took=$(($(date +%s) - start))
	[ "$took" -le 60 ] || fail "devices: $cmd took $took s"
	size=$(wc -c <"$T/dev.$cmd")
	[ "$size" -le 4000000 ] || fail "devices: $cmd wrote $size bytes"
	echo "ok: devices: $cmd: $took s, $size bytes"
done
grep -q "^\.\.\. and [0-9]* more devices, not shown one by one (the 64 highest peaks are)$" "$T/dev.peak" ||
	fail "devices: peak: no 'more devices' line"
grep -q "more devices, not shown one by one" "$T/dev.html" || fail "devices: html: no 'more devices' line"
expect_eq "devices: peak sections" "$(grep -c '^device -\?[0-9]*: peak' "$T/dev.peak")" 64
report "$T/dev.json" peak "$T/dev.ct"
expect_eq "devices: json" "$(jget "$T/dev.json" 'len(j["peak"]["devices"]) == 64 and j["peak"]["devices_not_shown"] > 30000')" True
