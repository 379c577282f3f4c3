# Capture path 4, cuGetProcAddress_v2 and the legacy cuGetProcAddress (from
# dlsym on a libcuda handle): the variant the version and flags select is
# traced under its own name (per-thread: _ptsz, stream 0 recorded as 0x2),
# cuGetProcAddress hands out a working lookup whose functions are traced too,
# untraced and unknown names behave exactly as without the shim.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
untraced "$PROGS/paths_gpa" >"$T/plain.txt"
traced gpa "$PROGS/paths_gpa" >"$T/traced.txt"
# Every return code, symbolStatus, pfn state, and what the variant called did.
soft diff -u "$T/plain.txt" "$T/traced.txt"
soft expect_eq failing_calls "$(grep -c 'call .* rc=[1-9]' "$T/traced.txt")" 1
analyze r "$(dump_of gpa)"
E=$T/r.events
check_facts r \
	"apis=cuMemAllocAsync:4/0 cuMemAllocAsync_ptsz:2/0 cuMemAlloc_v2:8/0 cuMemFreeAsync:4/0 cuMemFreeAsync_ptsz:2/0 cuMemFree_v2:9/1 cuStreamCreate:2/0 cuStreamDestroy_v2:2/0 cuStreamSynchronize:4/0 cuStreamSynchronize_ptsz:4/0" \
	allocations=14 frees=14 failed_calls=1 unmatched_frees=0 leaks.count=0
soft expect_eq runtime_layer_events "$(awk '$2 != 2' "$E" | wc -l)" 0
# The allocation of each call, in order, per form (v2, then legacy).
form_allocs="cuMemAlloc_v2:1048576 cuMemAlloc_v2:2097152 cuMemAllocAsync_ptsz:3145728 cuMemAllocAsync:4194304 cuMemAllocAsync:8388608 cuMemAlloc_v2:524288 cuMemAlloc_v2:262144"
soft expect_eq alloc_sequence "$(awk '$1 ~ /Alloc/ { printf "%s:%s ", $1, $5 }' "$E")" \
	"$form_allocs $form_allocs "
form_syncs="cuStreamSynchronize:0x0 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize:0x0"
soft expect_eq sync_sequence "$(awk '$1 ~ /Synchronize/ { printf "%s:%s ", $1, $3 }' "$E")" \
	"$form_syncs $form_syncs "
soft expect_eq ptsz_streams "$(awk '$1 ~ /_ptsz$/ { printf "%s ", $3 }' "$E")" \
	"0x2 0x2 0x2 0x2 0x2 0x2 0x2 0x2 "
soft expect_eq legacy_async_null_streams "$(awk '$1 ~ /^cuMem(Alloc|Free)Async$/ && $3 == "0x0"' "$E" | wc -l)" 4

# Only cuGetProcAddress_v2 taken from dlsym, cuGetProcAddress fetched through it.
untraced "$PROGS/paths_gpa" v2only >"$T/plain2.txt"
traced v2only "$PROGS/paths_gpa" v2only >"$T/traced2.txt"
soft diff -u "$T/plain2.txt" "$T/traced2.txt"
analyze r2 "$(dump_of v2only)"
check_facts r2 "apis=cuMemAlloc_v2:2/0 cuMemFree_v2:2/0" allocations=2 frees=2 leaks.count=0
finish
