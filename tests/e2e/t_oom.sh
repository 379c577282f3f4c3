# Out-of-memory: the oom report lists each failed allocation with its request,
# the live set by site at that moment and the free/total memory the shim read
# right after the failure (CT_REC_MEMINFO); the program's return codes, errno
# and cudaGetLastError are those of an untraced run.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
export CUMTRACE_FAKE_CAPACITY=64M
untraced "$PROGS/oom" >"$T/plain.txt" || fail "untraced run failed"
traced oom "$PROGS/oom" >"$T/traced.txt" || fail "traced run failed"
soft diff -u -I '^tid' "$T/plain.txt" "$T/traced.txt"
# What the program saw (the fake's capacity bookkeeping, identical traced or not).
soft expect_eq runtime_line "$(grep '^runtime' "$T/traced.txt")" \
	"runtime rc=2 errno=EDOM last=2 free=8388608 total=67108864"
soft expect_eq driver_line "$(grep '^driver' "$T/traced.txt")" \
	"driver rc=2 errno=EDOM last=0 free=8388608 total=67108864"
soft expect_eq async_line "$(grep '^async' "$T/traced.txt")" \
	"async rc=2 errno=EDOM last=2 free=33554432 total=67108864"
tid0=$(awk '$1 == "tid0" { print $2 }' "$T/traced.txt")
tid1=$(awk '$1 == "tid1" { print $2 }' "$T/traced.txt")
dump=$(dump_of oom)
report "$T/oom.json" oom "$dump"
F='j["oom"]["failures"]'
soft expect_eq count "$(jget "$T/oom.json" 'j["oom"]["count"]')" 3
soft expect_eq bytes_requested "$(jget "$T/oom.json" 'j["oom"]["bytes_requested"]')" $((100 * 1048576))
soft expect_eq requests \
	"$(jget "$T/oom.json" "[(f['api'], f['size'], f['device'], f['stream'], f['tid']) for f in $F]")" \
	"[('cudaMalloc', 50331648, 0, 0, $tid0), ('cuMemAlloc_v2', 12582912, 0, 0, $tid0), ('cudaMallocAsync', 41943040, 1, 0, $tid1)]"
soft expect_eq free_total \
	"$(jget "$T/oom.json" "[(f['free_bytes'], f['total_bytes'], f['info_device']) for f in $F]")" \
	"[(8388608, 67108864, 0), (8388608, 67108864, 0), (33554432, 67108864, 1)]"
soft expect_eq live \
	"$(jget "$T/oom.json" "[(f['live_bytes'], f['live_count'], f['sites_total']) for f in $F]")" \
	"[(58720256, 4, 2), (58720256, 4, 2), (33554432, 1, 1)]"
# The live set by site, each named by its function: site A 3 x 16 MiB, site B 8 MiB; site C.
soft expect_eq sites \
	"$(jget "$T/oom.json" "[[(s['count'], s['bytes'], s['stack'][0]['function']) for s in f['sites']] for f in $F]")" \
	"[[(3, 50331648, 'site_a'), (1, 8388608, 'site_b')], [(3, 50331648, 'site_a'), (1, 8388608, 'site_b')], [(1, 33554432, 'on_device1')]]"
soft expect_eq request_stacks \
	"$(jget "$T/oom.json" "[f['stack'][0]['function'] for f in $F]")" \
	"['fail_runtime', 'fail_driver', 'on_device1']"
# The query is not an event: the only failures are the three allocations.
soft expect_eq failed_calls "$(jget "$T/oom.json" 'j["failed_calls"]')" 3
soft expect_eq meminfo_records "$(python3 bin/ctdump.py --stats "$dump" | awk '$1 == "meminfo" { print $2 }')" 3
# Text and CSV.
"$REPORT" oom "$dump" >"$T/oom.txt" || fail "text report"
soft grep -q "^cumtrace oom: 3 allocations failed with out-of-memory (100.0 MiB requested) in pid" "$T/oom.txt"
soft grep -q "^  device 0 right after: 8.0 MiB free of 64.0 MiB (8388608 of 67108864 bytes)$" "$T/oom.txt"
"$REPORT" oom --format csv "$dump" >"$T/oom.csv" || fail "csv report"
soft expect_eq csv_rows "$(tail -n +2 "$T/oom.csv" | cut -d, -f3,5,6,9,10,11 | tr '\n' ' ')" \
	"cudaMalloc,50331648,0,8388608,67108864,58720256 cuMemAlloc_v2,12582912,0,8388608,67108864,58720256 cudaMallocAsync,41943040,1,33554432,67108864,33554432 "
finish
