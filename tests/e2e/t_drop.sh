# Drop mode under a tiny buffer: every event is either in the dump or counted.
. tests/e2e/lib.sh
CUMTRACE_DROP=1 CUMTRACE_BUFFER_MB=1 CUMTRACE_STACK_DEPTH=0 traced drop "$PROGS/threads" 4 50000 >/dev/null
dump=$(dump_of drop)
report "$T/s.json" summary "$dump"
seen=$(jget "$T/s.json" 'sum(a["calls"] for a in j["summary"]["apis"].values())')
dropped=$(jget "$T/s.json" 'j["dumps"][0]["dropped_events"]')
expect_eq seen_plus_dropped "$((seen + dropped))" $((4 * (2 * 50000 + 1)))
echo "seen $seen dropped $dropped"
