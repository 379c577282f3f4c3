# Capture path 3, Python ctypes: CDLL("libcudart.so.13") (RTLD_LOCAL, dlsym
# on the handle) from an interpreter that links no CUDA at all.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
command -v python3 >/dev/null || fail "python3 not found"
untraced python3 tests/e2e/paths_ctypes.py 10 >"$T/plain.txt"
traced ctypes python3 tests/e2e/paths_ctypes.py 10 >"$T/traced.txt"
soft diff -u "$T/plain.txt" "$T/traced.txt"
soft expect_eq script_says "$(tail -n 1 "$T/traced.txt")" "leaked 5 blocks, 1966080 bytes"
analyze r "$(dump_of ctypes)" 'script_args=j["dumps"][0]["argv"][-2:]' \
	'leaked_by_cudaMalloc=sum(s["bytes"] for s in j["leaks"]["sites"] if (s["api"], s["kind"]) == ("cudaMalloc", "device"))'
E=$T/r.events
# Leaked: blocks 2, 4, 6, 8 and 10 (x 64 KiB); all ten were live at once: 55 x 64 KiB.
check_facts r "apis=cudaFree:6/1 cudaMalloc:10/0" \
	allocations=10 frees=5 failed_calls=1 unmatched_frees=0 leaks.count=5 leaks.bytes=1966080 \
	leaked_by_cudaMalloc=1966080 peak.bytes=3604480 "script_args=['tests/e2e/paths_ctypes.py', '10']"
soft expect_eq driver_layer_events "$(awk '$2 != 1' "$E" | wc -l)" 0
soft expect_eq cudaMalloc_sizes "$(awk '$1 == "cudaMalloc" { printf "%d ", $5 / 65536 }' "$E")" \
	"1 2 3 4 5 6 7 8 9 10 "
finish
