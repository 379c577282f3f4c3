#!/usr/bin/env bash
# CUDA graph memory on the GPU (issue 19 §2 and §6): tests/gpu/leak_graph.cu untraced, traced
# and under compute-sanitizer --leak-check full, then tests/gpu/graph_torch.py (torch with a
# captured torch.cuda.CUDAGraph, default allocator and backend:cudaMallocAsync) traced.
# Checks: the same output traced; cumtrace's leaks and graph allocations == the program's
# GROUND_TRUTH; the peak (72 MiB, at a launch); cumtrace's graph pool (reserved at the end, its
# high mark) == cudaDeviceGetGraphMemAttribute's; INFO lines give every step's attributes and
# cudaMemGetInfo deltas, compute-sanitizer's leak summary, and say where compute-sanitizer and
# the device's counters disagree and which one cumtrace follows.
#   bash tests/gpu/graph_check.sh KIT OUTDIR
# Prints PASS/FAIL/INFO lines; exits 1 on any FAIL.
CHECK_NAME=graphs
. "$(dirname "$0")/check_lib.sh"
gcc -O1 -g -x c -I"$CUDA/include" -o "$OUT/leak_graph" "$SRC/leak_graph.cu" -L"$LIBDIR" -L"$LIBDIR/stubs" \
	-Wl,-rpath,"$LIBDIR" -lcudart -lcuda >"$OUT/build.log" 2>&1 || {
	check build 0 "$(tail -n 3 "$OUT/build.log" | tr '\n' ' ')"
	exit 1
}
(cd "$OUT" && timeout 120 ./leak_graph >plain.out 2>plain.err)
rc_p=$?
rm -f "$OUT"/gr.*.dump "$OUT"/torch-*.dump
(cd "$OUT" && CUMTRACE_OUTPUT="$OUT/gr.%p.dump" CUMTRACE_QUIET=1 LD_PRELOAD="$KIT/libcumtrace.so" \
	timeout 120 ./leak_graph >traced.out 2>traced.err)
rc_t=$?
SAN=$(command -v compute-sanitizer || echo "$CUDA/bin/compute-sanitizer")
(cd "$OUT" && timeout 300 "$SAN" --leak-check full ./leak_graph >san.out 2>&1)
cat "$OUT/plain.out"
check "runs" "$([ $rc_p -eq 0 ] && [ $rc_t -eq 0 ] && echo 1)" "untraced $rc_p, traced $rc_t ($(tail -n 1 "$OUT/traced.err"))"
sed 's/ memdelta=.*//' "$OUT/plain.out" >"$OUT/plain.key"
sed 's/ memdelta=.*//' "$OUT/traced.out" >"$OUT/traced.key"
check "same lines traced (the memdelta aside)" "$(cmp -s "$OUT/plain.key" "$OUT/traced.key" && echo 1)" \
	"$(diff "$OUT/plain.key" "$OUT/traced.key" | head -n 4 | tr '\n' ' ')"
d=$(ls "$OUT"/gr.*.dump 2>/dev/null | head -n 1)
[ -n "$d" ] || { check dump 0 "no dump"; exit 1; }
"$KIT/cumtrace-report" leaks --format json -o "$OUT/leaks.json" "$d"
"$KIT/cumtrace-report" summary --format json -o "$OUT/summary.json" "$d"
"$KIT/cumtrace-report" peak --format json -o "$OUT/peak.json" "$d"
"$KIT/cumtrace-report" summary "$d" >"$OUT/summary.txt" 2>&1
"$KIT/cumtrace-report" peak "$d" >"$OUT/peak.txt" 2>&1
"$KIT/cumtrace-report" leaks "$d" >"$OUT/leaks.txt" 2>&1
python3 - "$OUT/plain.out" "$OUT/leaks.json" "$OUT/summary.json" "$OUT/peak.json" "$OUT/san.out" <<'PY'
import json, re, sys
plain = open(sys.argv[1]).read()
lj = json.load(open(sys.argv[2]))["leaks"]
sj = json.load(open(sys.argv[3]))["summary"]
pj = json.load(open(sys.argv[4]))["peak"]
san = open(sys.argv[5]).read()
fails = 0
def check(what, ok, detail):
    global fails
    print("%s graphs: %s: %s" % ("PASS" if ok else "FAIL", what, detail))
    fails += not ok
m = re.search(r"GROUND_TRUTH (.*)", plain)
if not m:
    print("FAIL graphs: the program printed no GROUND_TRUTH")
    sys.exit(1)
gt = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1)))
steps = {m.group(1): dict((k, int(v)) for k, v in re.findall(r"(\w+)=(-?\d+)", m.group(2)))
         for m in re.finditer(r"^GRAPH (\S+) (.*)$", plain, re.M)}
for name, v in steps.items():
    print("INFO graphs: step %-14s attributes used %d (high %d), reserved %d (high %d); cudaMemGetInfo used +%d"
          % (name, v["used"], v["used_high"], v["reserved"], v["reserved_high"], v["memdelta"]))
gl = [s for s in lj["sites"] if s["kind"] == "graph"]
check("cumtrace's leaks == ground truth (one graph allocation)",
      (lj["count"], lj["bytes"], sum(s["count"] for s in gl)) == (gt["leaked_count"], gt["leaked_bytes"], gt["leaked_count"]),
      "(%d, %d, graph %d) vs (%d, %d)" % (lj["count"], lj["bytes"], sum(s["count"] for s in gl), gt["leaked_count"], gt["leaked_bytes"]))
k = sj["kinds"].get("graph", {})
got = (k.get("allocations"), k.get("frees"), k.get("bytes_allocated"))
check("graph allocations, frees, bytes == ground truth", got == (gt["graph_allocs"], gt["graph_frees"], gt["graph_bytes"]),
      "%s vs %s" % (got, (gt["graph_allocs"], gt["graph_frees"], gt["graph_bytes"])))
check("peak == X + IN at IN's launch (not at its capture)", pj["bytes"] == gt["peak_bytes"],
      "%d vs %d" % (pj["bytes"], gt["peak_bytes"]))
pool = sj.get("graph_pools", {}).get("0", {})
end = steps.get("end", {})
# the device keeps graph memory in chunks larger than the allocations (run 25: 32 MiB stayed
# reserved after the trim around the one 16 MiB leak): cumtrace reports the device's own
# counters from its samples beside its model of the pool, and the counters are compared
dc = pool.get("device_counters", {})
check("graph pool reserved at the end (device counters, last sample) == ReservedMemCurrent",
      dc.get("reserved") == end.get("reserved"), "%s vs %s" % (dc.get("reserved"), end.get("reserved")))
check("graph pool high (device counters) == ReservedMemHigh", dc.get("reserved_high") == end.get("reserved_high"),
      "%s vs %s" % (dc.get("reserved_high"), end.get("reserved_high")))
print("INFO graphs: cumtrace's model of the pool: reserved at the end %s (what live graph allocations and "
      "untrimmed frees hold, without the device's chunking), high %s" % (pool.get("reserved"), pool.get("reserved_high")))
for name in ("IN", "OUT-freed", "destroyed"):
    v = steps.get(name, {})
    print("INFO graphs: at %s the device counts %d used and %d reserved for graphs; cumtrace's model: the pool "
          "keeps what launches committed until the trim (used == reserved in the fake driver)" % (name, v.get("used", -1), v.get("reserved", -1)))
s = re.search(r"LEAK SUMMARY: ([\d,]+) bytes leaked in ([\d,]+) allocation", san)
if s:
    sb, sc = int(s.group(1).replace(",", "")), int(s.group(2).replace(",", ""))
    agree = (sc, sb) == (gt["leaked_count"], gt["leaked_bytes"])
    print("INFO graphs: compute-sanitizer: %d bytes in %d allocations (%s the ground truth); cumtrace: %d bytes in %d"
          % (sb, sc, "agrees with" if agree else "DISAGREES with", lj["bytes"], lj["count"]))
    for line in re.findall(r"^.*Leaked.*$", san, re.M)[:8]:
        print("INFO graphs: compute-sanitizer says: %s" % line.strip())
else:
    print("INFO graphs: compute-sanitizer printed no leak summary (it does not count graph memory as leaked?): %s"
          % san.strip()[-300:].replace("\n", " | "))
tr = steps.get("trimmed", {})
print("INFO graphs: cumtrace follows the device's counters (cudaDeviceGetGraphMemAttribute, cudaMemGetInfo): a graph "
      "allocation never freed is a leak; memory a free node released stays in the graph pool (reserved %d before the "
      "trim, %d after) and is shown as the graph pool, not as a leak" % (steps.get("destroyed", {}).get("reserved", -1),
                                                                         tr.get("reserved", -1)))
sys.exit(1 if fails else 0)
PY
[ $? -eq 0 ] || fails=$((fails + 1))

# torch with a captured CUDAGraph, in both allocator modes
for mode in default async; do
	env_mode=()
	[ $mode = async ] && env_mode=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)
	(cd "$OUT" && env "${env_mode[@]}" CUMTRACE_OUTPUT="$OUT/torch-$mode.%p.dump" CUMTRACE_QUIET=1 \
		LD_PRELOAD="$KIT/libcumtrace.so" timeout 300 python3 "$SRC/graph_torch.py" >"torch-$mode.out" 2>"torch-$mode.err")
	rc=$?
	td=$(ls "$OUT"/torch-$mode.*.dump 2>/dev/null | head -n 1)
	check "torch $mode runs" "$([ $rc -eq 0 ] && [ -n "$td" ] && echo 1)" "rc $rc, dump ${td:-none} $(tail -n 1 "$OUT/torch-$mode.err")"
	[ -n "$td" ] || continue
	"$KIT/cumtrace-report" summary --format json -o "$OUT/torch-$mode.summary.json" "$td"
	"$KIT/cumtrace-report" peak --format json -o "$OUT/torch-$mode.peak.json" "$td"
	"$KIT/cumtrace-report" summary "$td" >"$OUT/torch-$mode.summary.txt" 2>&1
	"$KIT/cumtrace-report" peak "$td" >"$OUT/torch-$mode.peak.txt" 2>&1
	python3 - "$mode" "$OUT/torch-$mode.out" "$OUT/torch-$mode.summary.json" "$OUT/torch-$mode.peak.json" <<'PY'
import json, re, sys
mode, out = sys.argv[1], open(sys.argv[2]).read()
sj = json.load(open(sys.argv[3]))["summary"]
pj = json.load(open(sys.argv[4]))["peak"]
m = re.search(r"^TORCH (.*)$", out, re.M)
if not m:
    print("FAIL graphs: torch %s: no TORCH line" % mode)
    sys.exit(1)
t = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(-?\d+)", m.group(1)))
fails = 0
def check(what, ok, detail):
    global fails
    print("%s graphs: torch %s: %s: %s" % ("PASS" if ok else "FAIL", mode, what, detail))
    fails += not ok
print("INFO graphs: torch %s: %s" % (mode, " ".join("%s=%d" % kv for kv in sorted(t.items()))))
g = sj["kinds"].get("graph", {})
pool = sj.get("graph_pools", {}).get(str(t["device"]), {})
print("INFO graphs: torch %s: cumtrace graph allocations %s, bytes %s, pool %s; peak %d" % (
    mode, g.get("allocations", 0), g.get("bytes_allocated", 0), pool, pj["bytes"]))
dc = pool.get("device_counters", {"reserved": 0, "reserved_high": 0} if not pool else {})
check("graph pool high (device counters, last sample) == ReservedMemHigh", dc.get("reserved_high") == t["graph_reserved_high"],
      "%s vs %d" % (dc.get("reserved_high"), t["graph_reserved_high"]))
check("graph pool reserved at the end (device counters) == ReservedMemCurrent", dc.get("reserved") == t["graph_reserved"],
      "%s vs %d" % (dc.get("reserved"), t["graph_reserved"]))
dm = sj.get("device_memory", {}).get(str(t["device"]), {})
for which in ("highest", "last"):
    r = dm.get(which)
    if r:
        print("INFO graphs: torch %s: %s device memory sample (%s): in use %d = allocations %d + pool reserve %d + "
              "graph pool reserve %d + other %d; pools reserved %d (high %d), used %d (high %d); mem_get_info used %d"
              % (mode, which, r["why"], r["in_use"], r["allocations"], r["pool_reserve"], r["graph_pool_reserve"],
                 r["other"], r["pool_reserved"], r["pool_reserved_high"], r["pool_used"], r["pool_used_high"],
                 t["mem_used"]))
check("device memory samples were taken", bool(dm.get("samples")), "%s samples" % dm.get("samples", 0))
last = dm.get("last")
if mode == "async" and last:
    # torch's memory_reserved() with this backend is the default pool's ReservedMemCurrent
    check("pools' reserved high (last sample) == torch's max_memory_reserved()",
          last["pool_reserved_high"] == t["max_reserved"], "%d vs %d" % (last["pool_reserved_high"], t["max_reserved"]))
sys.exit(1 if fails else 0)
PY
	[ $? -eq 0 ] || fails=$((fails + 1))
done
echo "graphs: $fails failed"
[ $fails -eq 0 ]
