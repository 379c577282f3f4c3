# Capture path 1, exported symbols: the program calls the runtime directly.
# One event per runtime call; the driver calls the runtime makes inside
# (cudaMalloc -> cuMemAlloc_v2, ...) are never counted.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
untraced "$PROGS/paths_export" >"$T/plain.txt"
traced export "$PROGS/paths_export" >"$T/traced.txt"
soft diff -u "$T/plain.txt" "$T/traced.txt"
analyze r "$(dump_of export)" 'leak_function=j["leaks"]["sites"][0]["stack"][0]["function"]'
E=$T/r.events
# Peak device bytes: the 3 leaked 64 KiB blocks and the 1 MiB stream-ordered one.
check_facts r \
	"apis=cudaFree:7/0 cudaFreeAsync:1/0 cudaFreeHost:1/0 cudaHostRegister:1/0 cudaHostUnregister:1/0 cudaMalloc:9/1 cudaMallocAsync:1/0 cudaMallocHost:1/0 cudaMallocManaged:1/0 cudaMallocPitch:1/0 cudaStreamCreate:1/0 cudaStreamDestroy:1/0 cudaStreamSynchronize:1/0" \
	allocations=13 frees=10 failed_calls=1 unmatched_frees=0 double_allocations=0 \
	leaks.count=3 leaks.bytes=196608 "leak_sites=[('cudaMalloc', 'device', 3, 196608)]" \
	leak_function=alloc64k peak.bytes=1245184 clean_exit=True
soft expect_eq cuMemAlloc_v2_events "$(awk '$1 == "cuMemAlloc_v2"' "$E" | wc -l)" 0
soft expect_eq driver_layer_events "$(awk '$2 != 1' "$E" | wc -l)" 0
soft expect_eq runtime_layer_events "$(awk '$2 == 1' "$E" | wc -l)" 27
soft expect_eq cudaMalloc_sizes "$(awk '$1 == "cudaMalloc" { printf "%s ", $5 }' "$E")" \
	"65536 65536 65536 65536 65536 65536 65536 65536 68719476736 "
finish
