# Capture path 6, a statically linked runtime's view: no libcudart in the
# process, libcuda dlopen'ed, only cuGetProcAddress_v2 from dlsym, every
# driver function through it. Exact driver-layer counts, leaks and peak.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
if readelf -d "$PROGS/paths_static" | grep -q 'NEEDED.*libcudart'; then
	fail "paths_static links libcudart"
fi
untraced "$PROGS/paths_static" >"$T/plain.txt"
traced static "$PROGS/paths_static" >"$T/traced.txt" || fail "paths_static exited $?"
soft diff -u "$T/plain.txt" "$T/traced.txt"
analyze r "$(dump_of static)"
E=$T/r.events
check_facts r "apis=cuMemAllocHost_v2:3/0 cuMemAlloc_v2:6/0 cuMemFreeHost:2/0 cuMemFree_v2:4/0" \
	allocations=9 frees=6 failed_calls=0 unmatched_frees=0 leaks.count=3 leaks.bytes=11538432 \
	"leak_sites=[('cuMemAllocHost_v2', 'host_pinned', 1, 4096), ('cuMemAlloc_v2', 'device', 2, 11534336)]" \
	peak.bytes=22020096 clean_exit=True
soft expect_eq driver_layer_events "$(awk '$2 == 2' "$E" | wc -l)" 15
soft expect_eq other_layer_events "$(awk '$2 != 2' "$E" | wc -l)" 0
soft expect_eq cuMemAlloc_MiB "$(awk '$1 == "cuMemAlloc_v2" { printf "%d ", $5 / 1048576 }' "$E")" "1 2 3 4 5 6 "
finish
