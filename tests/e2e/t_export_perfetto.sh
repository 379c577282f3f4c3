# The perfetto exporter on traced programs: a Chrome JSON trace that passes
# tests/e2e/check_perfetto.py (Perfetto's JSON importer rules), whose
# counters, slices, NVTX ranges, marks and OOMs equal what the other reports
# and the programs say.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
CHECK=$ROOT/tests/e2e/check_perfetto.py
traced basic "$PROGS/basic" >/dev/null
traced demo "$PROGS/demo_train" >/dev/null
NVTX_INJECTION64_PATH=$SHIM traced nv "$PROGS/nvtx_ranges" >"$T/nv.txt"
basic=$(dump_of basic)
demo=$(dump_of demo)
nv=$(dump_of nv)

# check TRACE SUMMARY: the checker accepts the trace
check() { python3 "$CHECK" "$1" "$2" || fail "check_perfetto.py rejected $1"; }

# Every change (--counter-us 0): the counters' maximum and last value are the
# summary's peak and live bytes at the end, per (kind, device).
for d in basic demo; do
	eval dump=\$$d
	"$REPORT" perfetto --counter-us 0 -o "$T/$d.json" "$dump" || fail "perfetto $d exited $?"
	check "$T/$d.json" "$T/$d.sum"
	report "$T/$d.r.json" summary "$dump"
	pid=$(jget "$T/$d.r.json" 'j["dumps"][0]["pid"]')
	expect_eq "$d counters (max, last)" \
		"$(jget "$T/$d.sum" 'sorted((k.split("/",1)[1], v["max"], v["last"]) for k, v in j["counters"].items())')" \
		"$(jget "$T/$d.r.json" 'sorted(("%s %s live bytes" % (k, dev), s["peak_bytes"], s["live_bytes_at_end"]) for k, kv in j["summary"]["kinds"].items() for dev, s in kv["devices"].items())')"
	expect_eq "$d counter pid" "$(jget "$T/$d.sum" 'sorted(set(k.split("/")[0] for k in j["counters"]))')" "['$pid']"
	# one slice per allocation, of its size
	expect_eq "$d slices" "$(jget "$T/$d.sum" 'sum(v["count"] for v in j["slices"].values())')" \
		"$(jget "$T/$d.r.json" 'j["allocations"]')"
	expect_eq "$d slice bytes per kind" \
		"$(jget "$T/$d.sum" 'sorted((k, v["bytes"]) for k, v in j["slices"].items())')" \
		"$(jget "$T/$d.r.json" 'sorted((k, v["bytes_allocated"]) for k, v in j["summary"]["kinds"].items() if v["allocations"])')"
	expect_eq "$d slices left live" \
		"$(jget "$T/$d.sum" 'sum(n for e, n in j["slice_ends"].items() if e.startswith("live at"))')" \
		"$(jget "$T/$d.r.json" 'j["leaks"]["count"]')"
	expect_eq "$d process name" "$(jget "$T/$d.sum" 'list(j["processes"])')" "['$pid']"
done
# basic: the failed 64 GiB cudaMalloc is an OOM instant with its site
expect_eq oom "$(jget "$T/basic.sum" '[(o["name"], o["args"]["size"], o["args"]["result"], o["s"]) for o in j["ooms"]]')" \
	"[('OOM cudaMalloc 64.0 GiB', 68719476736, 2, 'p')]"
expect_eq oom_site "$(jget "$T/basic.sum" 'j["ooms"][0]["args"]["site"].startswith("main (")')" True
# demo: 40 marks "step N", in order, on the main thread
expect_eq marks "$(jget "$T/demo.sum" '[m["name"] for m in j["instants"]] == ["step %d" % i for i in range(40)]')" True
# demo's activations overlap: slices share lanes, never more than were live at once
expect_eq demo_lanes "$(jget "$T/demo.sum" 'j["slices"]["device"]["tracks"]')" 10

# NVTX: push/pop nest per thread, start/end is an async range, marks are instants
"$REPORT" perfetto "$nv" -o "$T/nv.json" || fail "perfetto nv exited $?"
check "$T/nv.json" "$T/nv.sum"
main_tid=$(awk '$1 == "main_tid" { print $2 }' "$T/nv.txt")
worker_tid=$(awk '$1 == "worker_tid" { print $2 }' "$T/nv.txt")
expect_eq nested "$(jget "$T/nv.sum" '[(n["tid"], n["name"], n["depth"]) for n in j["nested"]]')" \
	"[($main_tid, 'outer', 1), ($main_tid, 'inner', 2), ($worker_tid, 'worker', 1)]"
expect_eq ranges "$(jget "$T/nv.sum" '[(r["name"], r["cat"], r["args"]["range_id"], r["start"] <= r["end"]) for r in j["ranges"]]')" \
	"[('ex-range', 'nvtx', 1, True)]"
expect_eq instants "$(jget "$T/nv.sum" '[(m["tid"], m["name"]) for m in j["instants"]]')" \
	"[($main_tid, 'allocated'), ($worker_tid, 'worker-mark')]"
expect_eq thread_names "$(jget "$T/nv.sum" 'sorted(j["threads"].values())')" "['main', 'thread $worker_tid']"

# Default interval (1 ms): fewer samples, the same maximum and last value.
"$REPORT" perfetto "$demo" >"$T/demo1.json" || fail "perfetto to stdout exited $?"
check "$T/demo1.json" "$T/demo1.sum"
expect_eq coalesced_max_last \
	"$(jget "$T/demo1.sum" 'sorted((k, v["max"], v["last"]) for k, v in j["counters"].items())')" \
	"$(jget "$T/demo.sum" 'sorted((k, v["max"], v["last"]) for k, v in j["counters"].items())')"
expect_eq fewer_samples \
	"$(jget "$T/demo1.sum" 'sum(v["samples"] for v in j["counters"].values())')" \
	"$(jget "$T/demo1.sum" 'j["otherData"]["counter_samples"]')"
s0=$(jget "$T/demo.sum" 'sum(v["samples"] for v in j["counters"].values())')
s1=$(jget "$T/demo1.sum" 'sum(v["samples"] for v in j["counters"].values())')
[ "$s1" -lt "$s0" ] || fail "1 ms intervals gave $s1 samples, every change $s0"
echo "ok: $s0 samples for every change, $s1 at 1 ms"

# --max-slices: the largest kept, the rest counted
"$REPORT" perfetto --max-slices 5 "$demo" -o "$T/demo5.json" || fail "--max-slices exited $?"
check "$T/demo5.json" "$T/demo5.sum"
expect_eq kept "$(jget "$T/demo5.sum" 'sum(v["count"] for v in j["slices"].values())')" 5
expect_eq dropped "$(jget "$T/demo5.sum" '(j["otherData"]["slices_total"], j["otherData"]["slices_dropped"])')" \
	"($(jget "$T/demo.r.json" 'j["allocations"]'), $(($(jget "$T/demo.r.json" 'j["allocations"]') - 5)))"
expect_eq kept_bytes "$(jget "$T/demo5.sum" 'j["slices"]["device"]["bytes"]')" $((128 * 1048576 + 64 * 1048576 + 3 * 20 * 1048576))

# Two dumps in one trace: two processes, each with its own tracks.
"$REPORT" perfetto "$basic" "$demo" -o "$T/two.json" || fail "two dumps exited $?"
check "$T/two.json" "$T/two.sum"
expect_eq two_processes "$(jget "$T/two.sum" 'len(j["processes"])')" 2
expect_eq two_counters "$(jget "$T/two.sum" 'len(set(k.split("/")[0] for k in j["counters"]))')" 2

# Usage errors
"$REPORT" perfetto --format text "$demo" 2>"$T/err" && fail "--format text accepted"
grep -q "perfetto: no text output" "$T/err" || fail "unexpected error: $(cat "$T/err")"
"$REPORT" perfetto --counter-us -1 "$demo" 2>/dev/null && fail "--counter-us -1 accepted"
"$REPORT" perfetto --max-slices 0 "$demo" 2>/dev/null && fail "--max-slices 0 accepted"
echo "ok: usage errors"
