# CUDA arrays (issue 19, 3): cudaMallocArray, cudaMalloc3DArray, cudaMallocMipmappedArray,
# cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate and their frees, traced as
# kind "array" with the bytes their extent and element size make (tests/e2e/progs/arrays.c
# lists each array and its bytes): the program prints the same traced; three arrays leaked,
# 41,216 bytes; the peak counts arrays as device memory.
. tests/e2e/lib.sh
untraced "$PROGS/arrays" >"$T/plain.txt" || fail "untraced run exited $?"
traced arr "$PROGS/arrays" >"$T/traced.txt" || fail "traced run exited $?"
cmp -s "$T/plain.txt" "$T/traced.txt" || fail "the traced program printed otherwise: $(diff "$T/plain.txt" "$T/traced.txt")"
echo "ok: same output traced"
d=$(dump_of arr)
report "$T/leaks.json" leaks "$d"
report "$T/sum.json" summary "$d"
report "$T/peak.json" peak "$d"
expect_eq "leaks" "$(jget "$T/leaks.json" '(j["leaks"]["count"], j["leaks"]["bytes"])')" "(3, 41216)"
expect_eq "leak sites" \
	"$(jget "$T/leaks.json" 'sorted((s["kind"], s["api"], s["count"], s["bytes"]) for s in j["leaks"]["sites"])')" \
	"[('array', 'cuArray3DCreate_v2', 1, 3072), ('array', 'cudaMalloc3DArray', 1, 16384), ('array', 'cudaMallocMipmappedArray', 1, 21760)]"
# R1..R4 and D1..D3 all live at once: 524,288 + 16,384 + 21,760 + 4,000 + 8,000 + 3,072 + 2,560
k='j["summary"]["kinds"]["array"]'
expect_eq "kind array" \
	"$(jget "$T/sum.json" "($k['allocations'], $k['frees'], $k['bytes_allocated'], $k['peak_bytes'], $k['live_bytes_at_end'])")" \
	"(7, 4, 580064, 580064, 41216)"
expect_eq "peak (device bytes)" "$(jget "$T/peak.json" 'j["peak"]["bytes"]')" 580064
expect_eq "calls" \
	"$(jget "$T/sum.json" 'sorted((a, v["calls"], v["failures"]) for a, v in j["summary"]["apis"].items() if "rray" in a)')" \
	"[('cuArray3DCreate_v2', 1, 0), ('cuArrayCreate_v2', 1, 0), ('cuArrayDestroy', 1, 0), ('cuMipmappedArrayCreate', 1, 0), ('cuMipmappedArrayDestroy', 1, 0), ('cudaFreeArray', 3, 1), ('cudaMalloc3DArray', 1, 0), ('cudaMallocArray', 2, 0), ('cudaMallocMipmappedArray', 1, 0)]"
"$REPORT" leaks "$d" | grep -q "^#1   21.2 KiB in 1 allocation (array, cudaMallocMipmappedArray, live at exit): leaked" ||
	fail "leaks text"
echo "ok: leaks text"
