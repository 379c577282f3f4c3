# CUDA graph memory (issue 19 §2; tests/e2e/progs/graphs.c lists each graph): captured
# cudaMallocAsync / cudaFreeAsync become graph nodes, memory of kind graph exists from the
# launch that commits it (alloc+free inside a graph, freed outside by cudaFree and by
# cudaFreeAsync, never freed, auto-free-on-launch relaunches, the runtime's and the driver's
# explicit nodes), the peak is placed at a launch, not at the capture, and the graph pool
# cumtrace keeps agrees with cudaDeviceGetGraphMemAttribute before and after the trim.
. tests/e2e/lib.sh
MIB=1048576
untraced "$PROGS/graphs" >"$T/plain.txt" || fail "untraced run exited $?"
traced gr "$PROGS/graphs" >"$T/traced.txt" || fail "traced run exited $?"
cmp -s "$T/plain.txt" "$T/traced.txt" || fail "the traced program printed otherwise: $(diff "$T/plain.txt" "$T/traced.txt")"
echo "ok: same output traced"
d=$(dump_of gr)
report "$T/leaks.json" leaks "$d"
report "$T/sum.json" summary "$d"
report "$T/peak.json" peak "$d"
expect_eq "leaks" "$(jget "$T/leaks.json" '(j["leaks"]["count"], j["leaks"]["bytes"])')" "(1, $((3 * MIB)))"
expect_eq "leak sites" \
	"$(jget "$T/leaks.json" '[(s["kind"], s["api"], s["count"], s["bytes"]) for s in j["leaks"]["sites"]]')" \
	"[('graph', 'cuGraphAddMemAllocNode', 1, $((3 * MIB)))]"
# A 2 x 64 MiB, B 2 MiB, C 512 KiB, D 3 MiB, E 3 x 4 MiB, G 1 MiB; the peak of graph memory
# is A's 64 MiB
k='j["summary"]["kinds"]["graph"]'
expect_eq "kind graph" \
	"$(jget "$T/sum.json" "($k['allocations'], $k['frees'], $k['bytes_allocated'], $k['peak_bytes'], $k['live_bytes_at_end'])")" \
	"(9, 8, 153616384, $((64 * MIB)), $((3 * MIB)))"
expect_eq "kind device" \
	"$(jget "$T/sum.json" '(lambda k: (k["allocations"], k["frees"], k["bytes_allocated"], k["live_bytes_at_end"]))(j["summary"]["kinds"]["device"])')" \
	"(2, 2, $((40 * MIB)), 0)"
expect_eq "calls" \
	"$(jget "$T/sum.json" 'sorted((a, v["calls"], v["failures"]) for a, v in j["summary"]["apis"].items() if "raph" in a or "apture" in a or "Async" in a)')" \
	"[('cuGraphAddMemAllocNode', 1, 0), ('cuGraphDestroy', 1, 0), ('cuGraphExecDestroy', 1, 0), ('cuGraphInstantiateWithFlags', 1, 0), ('cuGraphLaunch', 1, 0), ('cudaDeviceGraphMemTrim', 1, 0), ('cudaFreeAsync', 2, 0), ('cudaGraphAddMemAllocNode', 1, 0), ('cudaGraphAddMemFreeNode', 1, 0), ('cudaGraphDestroy', 5, 0), ('cudaGraphExecDestroy', 5, 0), ('cudaGraphInstantiate', 2, 0), ('cudaGraphInstantiateWithFlags', 2, 0), ('cudaGraphInstantiateWithParams', 1, 0), ('cudaGraphLaunch', 8, 0), ('cudaMallocAsync', 4, 0), ('cudaStreamBeginCapture', 4, 0), ('cudaStreamEndCapture', 4, 0)]"
# the peak: X (8 MiB) and A's 64 MiB at A's launch; Y (32 MiB), live at the capture, is not in it
expect_eq "peak bytes" "$(jget "$T/peak.json" 'j["peak"]["bytes"]')" $((72 * MIB))
expect_eq "peak sites" \
	"$(jget "$T/peak.json" 'sorted((s["kind"], s["api"], s["bytes"]) for s in j["peak"]["sites"])')" \
	"[('device', 'cudaMalloc', $((8 * MIB))), ('graph', 'cudaMallocAsync', $((64 * MIB)))]"
# the graph pool agrees with the attributes the program read at its end (after the trim)
attr() { awk -v t="$1" -v k="$2" '$1 == "graphattr" && $2 == t { for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$T/plain.txt"; }
expect_eq "graph pool (live, reserved, high) = attributes at the end" \
	"$(jget "$T/sum.json" '(lambda g: (g["live"], g["reserved"], g["reserved_high"]))(j["summary"]["graph_pools"]["0"])')" \
	"($((3 * MIB)), $(attr end reserved), $(attr end reserved_high))"
expect_eq "attributes before the trim" "$(attr before-trim reserved) $(attr before-trim used)" "$((64 * MIB)) $((64 * MIB))"
expect_eq "device memory after the trim (cudaMemGetInfo): X + the pool's 3 MiB" "$(sed -n 's/^memdelta after-trim //p' "$T/plain.txt")" $((11 * MIB))
"$REPORT" leaks "$d" | grep -q "^#1   3.0 MiB in 1 allocation (graph, cuGraphAddMemAllocNode, live at exit): leaked" ||
	fail "leaks text"
echo "ok: leaks text"
"$REPORT" summary "$d" | grep -q "^  graph pool of device 0: 3.0 MiB reserved at the end (high 64.0 MiB), 3.0 MiB of it in live graph allocations$" ||
	fail "summary text: $("$REPORT" summary "$d" | grep "graph pool")"
echo "ok: summary text"
