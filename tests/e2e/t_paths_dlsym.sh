# Capture path 2, dlsym: names looked up on RTLD_LOCAL handles of libcudart
# and libcuda are traced; RTLD_DEFAULT and RTLD_NEXT lookups still hand out
# working (traced) functions once the runtime is global.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
untraced "$PROGS/paths_dlsym" >"$T/plain.txt"
traced dlsym "$PROGS/paths_dlsym" >"$T/traced.txt"
soft diff -u "$T/plain.txt" "$T/traced.txt"
soft expect_eq calls_ok "$(grep -c 'rc=0$' "$T/traced.txt")" 26
analyze r "$(dump_of dlsym)"
E=$T/r.events
check_facts r \
	"apis=cuMemAlloc_v2:4/0 cuMemFree_v2:3/0 cudaFree:6/0 cudaFreeHost:1/0 cudaMalloc:7/0 cudaMallocHost:1/0" \
	allocations=12 frees=10 failed_calls=0 unmatched_frees=0 leaks.count=2 leaks.bytes=393216 \
	"leak_sites=[('cuMemAlloc_v2', 'device', 1, 262144), ('cudaMalloc', 'device', 1, 131072)]"
# Driver events come from the driver handle only, none from inside the runtime.
soft expect_eq driver_events "$(awk '$2 == 2 { printf "%s:%s ", $1, $5 }' "$E")" \
	"cuMemAlloc_v2:262144 cuMemAlloc_v2:262144 cuMemAlloc_v2:262144 cuMemAlloc_v2:262144 cuMemFree_v2:0 cuMemFree_v2:0 cuMemFree_v2:0 "
# Handle: 5 + 4; RTLD_DEFAULT: 1 + 1; RTLD_NEXT: 1 + 1; RTLD_DEFAULT, new names: 1 + 1.
soft expect_eq runtime_events "$(awk '$2 == 1 { printf "%s:%s ", $1, $5 }' "$E")" \
	"cudaMalloc:131072 cudaMalloc:131072 cudaMalloc:131072 cudaMalloc:131072 cudaMalloc:131072 cudaFree:0 cudaFree:0 cudaFree:0 cudaFree:0 cudaMalloc:4096 cudaFree:0 cudaMalloc:8192 cudaFree:0 cudaMallocHost:4096 cudaFreeHost:0 "
finish
