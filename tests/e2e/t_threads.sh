# 8 threads at once: nothing lost, exact totals.
. tests/e2e/lib.sh
traced threads "$PROGS/threads" 8 20000 >"$T/expect.txt"
dump=$(dump_of threads)
report "$T/leaks.json" leaks "$dump"
want() { awk -v k="$1" '$1 == "expect" && $2 == k { print $3 }' "$T/expect.txt"; }
expect_eq allocations "$(jget "$T/leaks.json" 'j["allocations"]')" "$(want allocations)"
expect_eq frees "$(jget "$T/leaks.json" 'j["frees"]')" "$(want frees)"
expect_eq leaks.count "$(jget "$T/leaks.json" 'j["leaks"]["count"]')" "$(want leak_count)"
expect_eq leaks.bytes "$(jget "$T/leaks.json" 'j["leaks"]["bytes"]')" "$(want leak_bytes)"
expect_eq dropped "$(jget "$T/leaks.json" 'j["dumps"][0]["dropped_events"]')" 0
# All eight leaks come from one line of worker(): one site.
expect_eq sites "$(jget "$T/leaks.json" 'len(j["leaks"]["sites"])')" 1
