# Device memory samples (issue 19 §6; tests/e2e/progs/memsample.c): with CUMTRACE_MEMSAMPLE_MS=1
# the shim samples cuMemGetInfo, the default pool's reserved/used and the graph memory
# attributes at the first allocation, after each synchronization and at exit (the default pool
# and a pool of cudaMemPoolCreate); the summary, peak and frag reports reconcile the highest
# sample: 34 MiB in use = allocations 6 MiB + pool reserve 12 MiB + graph pool reserve 16 MiB +
# other 0 (the fake driver charges nothing else).
# With CUMTRACE_MEMSAMPLE_MS=0 the dump holds no sample and the reports say nothing of it.
. tests/e2e/lib.sh
MIB=1048576
traced ms env CUMTRACE_MEMSAMPLE_MS=1 "$PROGS/memsample" >"$T/traced.txt" || fail "traced run exited $?"
untraced "$PROGS/memsample" >"$T/plain.txt" || fail "untraced run exited $?"
cmp -s "$T/plain.txt" "$T/traced.txt" || fail "the traced program printed otherwise: $(diff "$T/plain.txt" "$T/traced.txt")"
echo "ok: same output traced"
expect_eq "cudaMemGetInfo after the graph (the program's own)" "$(sed -n 's/^inuse graph //p' "$T/plain.txt")" $((34 * MIB))
d=$(dump_of ms)
report "$T/sum.json" summary "$d"
report "$T/peak.json" peak "$d"
report "$T/frag.json" frag "$d"
k='j["summary"]["device_memory"]["0"]'
expect_eq "samples: first, two syncs, exit" "$(jget "$T/sum.json" "$k['samples']")" 4
expect_eq "highest sample reconciled" \
	"$(jget "$T/sum.json" "(lambda h: (h['why'], h['in_use'], h['allocations'], h['pool_reserve'], h['graph_pool_reserve'], h['other']))($k['highest'])")" \
	"('sync', $((34 * MIB)), $((6 * MIB)), $((12 * MIB)), $((16 * MIB)), 0)"
expect_eq "its pool and graph figures" \
	"$(jget "$T/sum.json" "(lambda h: (h['pools'], h['pool_reserved'], h['pool_used'], h['graph_reserved'], h['graph_used'], h['graph_live']))($k['highest'])")" \
	"(2, $((14 * MIB)), $((2 * MIB)), $((16 * MIB)), $((16 * MIB)), 0)"
expect_eq "last sample: at exit, the same" \
	"$(jget "$T/sum.json" "(lambda h: (h['why'], h['in_use'], h['other']))($k['last'])")" "('exit', $((34 * MIB)), 0)"
expect_eq "peak and frag carry the same" \
	"$(jget "$T/peak.json" 'j["peak"]["device_memory"]["0"]["highest"]["in_use"]') $(jget "$T/frag.json" 'j["frag"]["device_memory"]["0"]["highest"]["in_use"]')" \
	"$((34 * MIB)) $((34 * MIB))"
line="  device 0 in use 34.0 MiB (cudaMemGetInfo, highest sample at"
"$REPORT" summary "$d" | grep -q "^$line [0-9.]* ms) = allocations 6.0 MiB + pool reserve 12.0 MiB + graph pool reserve 16.0 MiB + context, driver and other 0 B$" ||
	fail "summary text: $("$REPORT" summary "$d" | grep "in use")"
"$REPORT" peak "$d" | grep -q "^$line" || fail "peak text"
"$REPORT" frag "$d" | grep -q "^$line" || fail "frag text"
echo "ok: summary, peak and frag text"
python3 "$ROOT/bin/ctdump.py" "$d" >"$T/ctdump.txt" || fail "ctdump exited $?"
grep -q " memsample ts=[0-9]* exit tid=[0-9]* dev=0 " "$T/ctdump.txt" || fail "ctdump"
echo "ok: ctdump decodes the samples"
# samples off: no record, no line, no JSON field
traced off env CUMTRACE_MEMSAMPLE_MS=0 "$PROGS/memsample" >/dev/null || fail "traced run (off) exited $?"
d=$(dump_of off)
report "$T/off.json" summary "$d"
expect_eq "no samples: no device_memory" "$(jget "$T/off.json" '"device_memory" in j["summary"]')" False
"$REPORT" summary "$d" | grep -q "in use" && fail "a line without samples"
echo "ok: nothing without samples"
