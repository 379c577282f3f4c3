# Issue 14, item 8: sizes that add up past 2^64 - 1. Eight live blocks of 2^63
# bytes once summed to "0 B" and passed --max-leak-bytes 1. Every total of
# bytes saturates at 2^64 - 1, shown as ">= 16 EiB" in text and HTML, kept
# as 18446744073709551615 in JSON and CSV with "saturated": true at the top
# of the JSON document; the gate fails closed on a saturated total.
. tests/e2e/lib.sh
GENDUMP=$ROOT/$BUILD/gendump
SAT=18446744073709551615
# one: every block from one stack (per-site sums); many: one stack each (totals over sites)
"$GENDUMP" -n 16 -l 8 -t 1 -s 1 -b 0x8000000000000000 "$T/one.ct" >/dev/null
"$GENDUMP" -n 16 -l 8 -t 1 -u -b 0x8000000000000000 "$T/many.ct" >/dev/null
# async: stream-ordered (streams, pools in frag)
"$GENDUMP" -n 16 -l 8 -t 1 -s 1 -A -b 0x8000000000000000 "$T/async.ct" >/dev/null
code() { set +e; "$@" >"$T/out.txt" 2>"$T/err.txt"; echo $?; set -e; }
has() { # WHAT FILE TEXT
	grep -qF -- "$3" "$2" || { sed 's/^/    | /' "$2" | head -n 40; fail "$1: no '$3'"; }
	echo "ok: $1"
}

# The gate: any limit fails, the largest one included.
for d in one many; do
	expect_eq "$d: --max-leak-bytes 1" "$(code "$REPORT" leaks --max-leak-bytes 1 "$T/$d.ct")" 1
	expect_eq "$d: --max-leak-bytes 2^64-1" "$(code "$REPORT" leaks --max-leak-bytes $SAT "$T/$d.ct")" 1
	has "$d: gate reason" "$T/err.txt" "(saturated)"
	expect_eq "$d: --max-peak-bytes 2^64-1" "$(code "$REPORT" peak --max-peak-bytes $SAT "$T/$d.ct")" 1
	expect_eq "$d: ranks --max-leak-bytes" \
		"$(cp "$T/$d.ct" "$T/$d.2.ct" && code "$REPORT" leaks --max-leak-bytes $SAT "$T/$d.ct" "$T/$d.2.ct")" 1
done

# Text and HTML show the saturation; no total wraps to a small number.
for d in one many; do
	for cmd in summary leaks peak timeline frag; do
		expect_eq "$d: $cmd" "$(code "$REPORT" $cmd "$T/$d.ct")" 0
		has "$d: $cmd shows '>= 16 EiB'" "$T/out.txt" ">= 16 EiB"
	done
	expect_eq "$d: ranks leaks" "$(code "$REPORT" leaks "$T/$d.ct" "$T/$d.2.ct")" 0
	has "$d: ranks leaks" "$T/out.txt" "leaks: 16 allocations, >= 16 EiB"
	expect_eq "$d: html" "$(code "$REPORT" html "$T/$d.ct")" 0
	has "$d: html" "$T/out.txt" "= 16 EiB"
done
has "one: leak site" "$T/out.txt" "= 16 EiB"
for cmd in streams frag; do
	expect_eq "async: $cmd" "$(code "$REPORT" $cmd "$T/async.ct")" 0
	has "async: $cmd shows '>= 16 EiB'" "$T/out.txt" ">= 16 EiB"
done
"$REPORT" leaks "$T/one.ct" >"$T/out.txt"
has "one: the site's total" "$T/out.txt" "#1   >= 16 EiB in 8 allocations"
expect_eq "diff" "$(code "$REPORT" diff "$T/many.ct" "$T/one.ct")" 0
has "diff" "$T/out.txt" ">= 16 EiB"

# JSON: the saturated value and the flag.
for d in one many; do
	report "$T/l.json" leaks "$T/$d.ct"
	expect_eq "$d: leaks bytes" "$(jget "$T/l.json" 'j["leaks"]["bytes"]')" $SAT
	expect_eq "$d: saturated" "$(jget "$T/l.json" 'j["saturated"]')" True
	report "$T/s.json" summary "$T/$d.ct"
	expect_eq "$d: peak bytes" "$(jget "$T/s.json" 'j["dumps"][0]["peak_bytes"]')" $SAT
	expect_eq "$d: leak bytes" "$(jget "$T/s.json" 'j["dumps"][0]["leak_bytes"]')" $SAT
	report "$T/r.json" leaks "$T/$d.ct" "$T/$d.2.ct"
	expect_eq "$d: ranks leak bytes" "$(jget "$T/r.json" 'j["leaks"]["bytes"]')" $SAT
done
"$REPORT" flamegraph --format speedscope -o "$T/f.json" "$T/one.ct"
expect_eq "flamegraph total" "$(jget "$T/f.json" 'max(p["endValue"] for p in j["profiles"])')" $SAT
# A clean dump says nothing about saturation.
"$GENDUMP" -n 16 -l 8 -t 1 "$T/small.ct" >/dev/null
report "$T/c.json" leaks "$T/small.ct"
expect_eq "no saturation: no key" "$(jget "$T/c.json" '"saturated" in j')" False
