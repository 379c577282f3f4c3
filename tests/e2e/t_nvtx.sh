# NVTX v3 (header-only) ranges and marks arrive through NVTX_INJECTION64_PATH
# as marks: names, kinds, order and threads in --format json. Named domains and
# registered strings (issue 19, 5: NCCL's ranges) give "DOMAIN/NAME" marks.
. tests/e2e/lib.sh
NVTX_INJECTION64_PATH=$SHIM traced nv "$PROGS/nvtx_ranges" >"$T/out.txt"
main_tid=$(awk '$1 == "main_tid" { print $2 }' "$T/out.txt")
worker_tid=$(awk '$1 == "worker_tid" { print $2 }' "$T/out.txt")
dump=$(dump_of nv)
report "$T/s.json" summary "$dump"
expect_eq marks_count "$(jget "$T/s.json" 'j["dumps"][0]["marks"]')" 10
expect_eq main_marks \
	"$(jget "$T/s.json" '[(m["kind"], m["name"]) for m in j["marks"] if m["tid"] == '"$main_tid"']')" \
	"[('push', 'outer'), ('push', 'inner'), ('instant', 'allocated'), ('pop', ''), ('start', 'ex-range'), ('end', ''), ('pop', '')]"
expect_eq worker_marks \
	"$(jget "$T/s.json" '[(m["kind"], m["name"]) for m in j["marks"] if m["tid"] == '"$worker_tid"']')" \
	"[('push', 'worker'), ('instant', 'worker-mark'), ('pop', '')]"
expect_eq time_order "$(jget "$T/s.json" '[m["ts_ns"] for m in j["marks"]] == sorted(m["ts_ns"] for m in j["marks"])')" True
expect_eq range_ids "$(jget "$T/s.json" '[m["range_id"] for m in j["marks"] if m["kind"] in ("start", "end")]')" "[1, 1]"
expect_eq allocations "$(jget "$T/s.json" 'j["allocations"]')" 1
"$REPORT" summary "$dump" | grep -q "marks: 10 (4 ranges, 2 instants)" || fail "summary lacks the marks line"
echo "ok: summary marks line"
# Without the injection variable NVTX stays a no-op: no marks.
traced nv0 "$PROGS/nvtx_ranges" >/dev/null
report "$T/s0.json" summary "$(dump_of nv0)"
expect_eq no_injection_marks "$(jget "$T/s0.json" 'j["dumps"][0]["marks"]')" 0
# The wrapper sets NVTX_INJECTION64_PATH itself.
(cd "$T" && env -u NVTX_INJECTION64_PATH LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT \
	sh "$ROOT/bin/cumtrace" run -o "$T/w.dump" --no-summary -- "$PROGS/nvtx_ranges" >/dev/null 2>&1)
report "$T/w.json" summary "$T/w.dump"
expect_eq wrapper_marks "$(jget "$T/w.json" 'j["dumps"][0]["marks"]')" 10
# Domains and registered strings (issue 19, 5): a registered message names its mark, a named
# domain prefixes it; wide messages and names are narrowed to ASCII ('?' for the rest).
NVTX_INJECTION64_PATH=$SHIM traced nvd "$PROGS/nvtx_ranges" domains >"$T/outd.txt"
report "$T/d.json" summary "$(dump_of nvd)"
expect_eq domain_marks "$(jget "$T/d.json" '[(m["kind"], m["name"]) for m in j["marks"]]')" \
	"[('push', 'NCCL/AllReduce'), ('pop', ''), ('instant', 'NCCL/ascii-in-domain'), ('instant', 'plain-registered'), ('instant', 'wide-?'), ('start', 'WDOM/wstr'), ('end', ''), ('instant', 'NCCL/AllReduce')]"
expect_eq domain_range_ids "$(jget "$T/d.json" '[m["range_id"] for m in j["marks"] if m["kind"] in ("start", "end")]')" "[1, 1]"
