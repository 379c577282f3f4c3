# Imported and shared memory, multicast (issue 19, 4): tests/e2e/progs/imports.c runs every
# path once (IPC open/close, pool pointer export/import, shareable handle export/import/map/
# release, cuMemRetainAllocationHandle with its releases as NCCL's ncclCuMemFree makes them,
# multicast create/add device/bind/unbind/release): the program prints the same traced; no
# free is unmatched; imported memory is kind "imported", listed with its own figures and never
# a leak or part of the peak; the one real leak (1 MiB) is the only leak.
. tests/e2e/lib.sh
MiB=1048576
untraced "$PROGS/imports" >"$T/plain.txt" || fail "untraced run exited $?"
traced imp "$PROGS/imports" >"$T/traced.txt" || fail "traced run exited $?"
cmp -s "$T/plain.txt" "$T/traced.txt" || fail "the traced program printed otherwise: $(diff "$T/plain.txt" "$T/traced.txt")"
echo "ok: same output traced"
d=$(dump_of imp)
report "$T/leaks.json" leaks "$d"
report "$T/sum.json" summary "$d"
report "$T/peak.json" peak "$d"
expect_eq "unmatched frees, allocations over a live block" \
	"$(jget "$T/sum.json" '(j["dumps"][0]["unmatched_frees"], j["dumps"][0]["double_allocations"])')" "(0, 0)"
expect_eq "leaks" "$(jget "$T/leaks.json" '(j["leaks"]["count"], j["leaks"]["bytes"])')" "(1, $MiB)"
expect_eq "leak sites" \
	"$(jget "$T/leaks.json" '[(s["kind"], s["api"], s["count"], s["bytes"]) for s in j["leaks"]["sites"]]')" \
	"[('device', 'cudaMalloc', 1, $MiB)]"
# L 1 MiB + B 8 MiB live together; the imported 16 MiB (I1, I2) never counts
expect_eq "peak (device bytes)" "$(jget "$T/peak.json" 'j["peak"]["bytes"]')" $((9 * MiB))
imp='j["dumps"][0]["imported"]'
expect_eq "imported" \
	"$(jget "$T/sum.json" "[$imp[k] for k in ('imports', 'maps', 'bytes', 'releases', 'live_at_exit', 'live_bytes_at_exit')]")" \
	"[4, 1, $((19 * MiB)), 4, 1, $((8 * MiB))]"
expect_eq "shared" \
	"$(jget "$T/sum.json" "[$imp[k] for k in ('exports', 'exported_bytes', 'retains', 'retain_releases', 'self_imports')]")" \
	"[3, $((11 * MiB)), 2, 2, 0]"
expect_eq "multicast" "$(jget "$T/sum.json" "$imp['multicast']")" \
	"{'created': 2, 'bytes': $((4 * MiB)), 'released': 1, 'live_at_exit': 1, 'devices_added': 2, 'binds': 2, 'bind_bytes': $((4 * MiB)), 'unbinds': 2}"
expect_eq "the same in the leaks report" "$(jget "$T/leaks.json" "$imp['imports'], $imp['live_at_exit']")" "(4, 1)"
# kind: allocations, frees, bytes allocated, live at end
k='j["summary"]["kinds"]'
expect_eq "kinds imported, multicast" \
	"$(jget "$T/sum.json" "[(n, $k[n]['allocations'], $k[n]['frees'], $k[n]['bytes_allocated'], $k[n]['live_bytes_at_end']) for n in ('imported', 'multicast')]")" \
	"[('imported', 5, 4, $((19 * MiB)), $((8 * MiB))), ('multicast', 2, 1, $((4 * MiB)), $((2 * MiB)))]"
expect_eq "calls (failures)" \
	"$(jget "$T/sum.json" 'sorted((a, v["calls"], v["failures"]) for a, v in j["summary"]["apis"].items() if "Ipc" in a or "Multicast" in a or "Shareable" in a or "Retain" in a or "Pointer" in a or a == "cuMemRelease")')" \
	"[('cuMemExportToShareableHandle', 1, 0), ('cuMemImportFromShareableHandle', 1, 0), ('cuMemRelease', 7, 0), ('cuMemRetainAllocationHandle', 2, 0), ('cuMulticastAddDevice', 2, 0), ('cuMulticastBindAddr', 1, 0), ('cuMulticastBindMem', 1, 0), ('cuMulticastCreate', 2, 0), ('cuMulticastUnbind', 2, 0), ('cudaIpcCloseMemHandle', 2, 1), ('cudaIpcGetMemHandle', 1, 0), ('cudaIpcOpenMemHandle', 2, 0), ('cudaMemPoolExportPointer', 1, 0), ('cudaMemPoolImportPointer', 1, 0)]"
"$REPORT" summary "$d" >"$T/sum.txt"
grep -q "^  imported (another process's memory, not this one's allocations): 4 imports, 1 mapping, 19.0 MiB mapped in; 4 released; live at exit 1 (8.0 MiB)$" "$T/sum.txt" ||
	fail "summary text: $(grep imported "$T/sum.txt")"
grep -q "inconsistencies" "$T/sum.txt" && fail "summary text: $(grep inconsistencies "$T/sum.txt")"
"$REPORT" leaks "$d" | grep -q "^  shared: 3 exports (11.0 MiB), 2 handle retains (2 released)$" || fail "leaks text"
echo "ok: summary and leaks text"
# The old analyzer's view (no retain model): two releases of H3 after two retains would be
# unmatched; here the retains are matched by count. ctdump decodes the new APIs by name.
python3 "$ROOT/bin/ctdump.py" "$d" >"$T/dump.txt" || fail "ctdump exited $?"
grep -q "api=cuMemRetainAllocationHandle\|cuMemRetainAllocationHandle" "$T/dump.txt" || echo "note: ctdump prints api numbers"
echo "ok: ctdump"
