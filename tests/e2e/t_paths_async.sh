# Capture path 8, stream-ordered allocation: frees on another stream than the
# allocation, a created pool, _ptsz exports; each event carries the stream it
# was made on (0 from a _ptsz export = 0x2), nothing leaks.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
untraced "$PROGS/paths_async" >"$T/plain.txt"
traced async "$PROGS/paths_async" >"$T/traced.txt"
# Return codes, and what the _ptsz calls did (the handles line differs).
soft diff -u -I '^handles' "$T/plain.txt" "$T/traced.txt"
set -- $(sed -n 's/^handles A=\(0x[0-9a-f]*\) B=\(0x[0-9a-f]*\) pool=\(0x[0-9a-f]*\)$/\1 \2 \3/p' "$T/traced.txt")
[ $# -eq 3 ] || fail "no handles line in the output"
A=$1 B=$2 POOL=$3
analyze r "$(dump_of async)" \
	'device=[j["summary"]["kinds"]["device"][k] for k in ("allocations", "frees", "bytes_allocated", "live_bytes_at_end")]'
E=$T/r.events
check_facts r \
	"apis=cudaDeviceSynchronize:1/0 cudaFreeAsync:6/0 cudaFreeAsync_ptsz:1/0 cudaMallocAsync:3/0 cudaMallocAsync_ptsz:1/0 cudaMallocFromPoolAsync:2/0 cudaMallocFromPoolAsync_ptsz:1/0 cudaMemPoolCreate:1/0 cudaMemPoolDestroy:1/0 cudaMemPoolTrimTo:1/0 cudaStreamCreate:1/0 cudaStreamCreateWithFlags:1/0 cudaStreamDestroy:2/0 cudaStreamSynchronize:3/0 cudaStreamSynchronize_ptsz:2/0" \
	allocations=7 frees=7 failed_calls=0 unmatched_frees=0 double_allocations=0 \
	leaks.count=0 leaks.bytes=0 "device=[7, 7, 13238272, 0]" peak.bytes=8388608
soft expect_eq driver_layer_events "$(awk '$2 != 1' "$E" | wc -l)" 0
named() { sed "s/:$A\$/:A/; s/:$B\$/:B/"; }
soft expect_eq alloc_streams "$(awk '$1 ~ /^cudaMalloc/ { print $1 ":" $3 }' "$E" | named | tr '\n' ' ')" \
	"cudaMallocAsync:A cudaMallocAsync:B cudaMallocAsync_ptsz:0x2 cudaMallocFromPoolAsync:A cudaMallocFromPoolAsync:B cudaMallocFromPoolAsync_ptsz:0x2 cudaMallocAsync:B "
soft expect_eq free_streams "$(awk '$1 ~ /^cudaFree/ { print $1 ":" $3 }' "$E" | named | tr '\n' ' ')" \
	"cudaFreeAsync:B cudaFreeAsync:A cudaFreeAsync:A cudaFreeAsync:B cudaFreeAsync_ptsz:0x2 cudaFreeAsync:0x0 cudaFreeAsync:B "
# Each free ends the block of the allocation it pairs with (p1, p2, p3, q1, q2, q3, p4).
soft expect_eq free_pairs "$(awk '$1 ~ /^cudaMalloc/ { last[$6] = n++ } $1 ~ /^cudaFree/ { s = s last[$6] " " }
	END { print s }' "$E")" "0 1 2 3 4 5 6 "
soft expect_eq pool_events \
	"$(awk -v p="$POOL" '($1 ~ /^cudaMemPool/ && $6 == p) || ($1 ~ /^cudaMallocFromPool/ && $7 == p) { print $1 }' "$E" | tr '\n' ' ')" \
	"cudaMemPoolCreate cudaMallocFromPoolAsync cudaMallocFromPoolAsync cudaMallocFromPoolAsync_ptsz cudaMemPoolTrimTo cudaMemPoolDestroy "
soft expect_eq sync_streams "$(awk '$1 ~ /^cudaStreamSynchronize/ { print $1 ":" $3 }' "$E" | named | tr '\n' ' ')" \
	"cudaStreamSynchronize:A cudaStreamSynchronize:B cudaStreamSynchronize_ptsz:0x2 cudaStreamSynchronize_ptsz:0x2 cudaStreamSynchronize:0x0 "
finish
