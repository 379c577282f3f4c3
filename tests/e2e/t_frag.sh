# Fragmentation: the frag report's holes between live device allocations,
# pool used/reserved and VMM reserved/mapped/physical, exactly, at the end and
# at the device's peak; samples over time within their bounds.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
traced frag "$PROGS/frag" >"$T/out.txt" || fail "traced run failed"
dump=$(dump_of frag)
"$REPORT" frag --buckets 10 --format json -o "$T/frag.json" "$dump" || fail "frag report"
MiB=1048576
# The holes the program made, from its own pointers: the fake carves first-fit,
# so A0..A7 are one run and freeing A1, A3, A4 leaves holes of 1 and 2 MiB.
expect_eq layout "$(python3 - "$T/out.txt" <<'PY'
import sys
p = {}
for line in open(sys.argv[1]):
    w = line.split()
    if w[0] == "ptr":
        p[int(w[1][1:])] = int(w[2], 16)
live = sorted(p[i] for i in (0, 2, 5, 6, 7))
M = 1 << 20
gaps = [b - (a + M) for a, b in zip(live, live[1:]) if b > a + M]
print(live[-1] + M - live[0], sum(gaps), len(gaps), max(gaps))
PY
)" "$((8 * MiB)) $((3 * MiB)) 2 $((2 * MiB))"
D='j["frag"]["devices"][0]'
state() { # NAME: the state as "blocks bytes span free holes largest pool_used pool_reserved vmm_reserved vmm_mapped vmm_physical device_bytes"
	jget "$T/frag.json" "' '.join(str($D['$1'][k]) for k in ('blocks', 'bytes', 'span_bytes', 'free_bytes', 'holes', 'largest_hole_bytes', 'pool_used_bytes', 'pool_reserved_bytes', 'vmm_reserved_bytes', 'vmm_mapped_bytes', 'vmm_physical_bytes', 'device_bytes'))"
}
soft expect_eq devices "$(jget "$T/frag.json" '[d["device"] for d in j["frag"]["devices"]]')" "[0]"
# End: 5 blocks of 1 MiB in 8 MiB with 3 MiB in 2 holes (the largest 2 MiB); the pool
# holds P2 (1 MiB used, 1 MiB reserved after the trim); 8 MiB reserved, 2 mapped, 4 physical.
soft expect_eq at_end "$(state at_end)" \
	"5 $((5 * MiB)) $((8 * MiB)) $((3 * MiB)) 2 $((2 * MiB)) $MiB $MiB $((8 * MiB)) $((2 * MiB)) $((4 * MiB)) $((10 * MiB))"
# Peak (10 MiB) at the second cuMemCreate: nothing mapped yet.
soft expect_eq at_peak "$(state at_peak)" \
	"5 $((5 * MiB)) $((8 * MiB)) $((3 * MiB)) 2 $((2 * MiB)) $MiB $MiB $((8 * MiB)) 0 $((4 * MiB)) $((10 * MiB))"
report "$T/peak.json" peak "$dump"
soft expect_eq peak_time "$(jget "$T/frag.json" "$D['peak_time_ns']")" "$(jget "$T/peak.json" 'j["peak"]["devices"][0]["time_ns"]')"
# The pool estimate agrees with the fake's own counters after the trim.
set -- $(awk '$1 == "pool" { print $3, $5 }' "$T/out.txt")
soft expect_eq fake_pool "$1 $2" "$MiB $MiB"
soft expect_eq pools \
	"$(jget "$T/frag.json" '[(p["pool"] != 0, p["allocations"], p["used_bytes"], p["reserved_bytes"], p["peak_used_bytes"], p["trims"], p["created"]) for p in j["frag"]["pools"]]')" \
	"[(True, 2, $MiB, $MiB, $((3 * MiB)), 1, True)]"
# Over time: between K/2 and K samples (K = --buckets 10), sample_ns apart, a power
# of two; the first is the empty state at the start.
soft expect_eq samples "$(jget "$T/frag.json" "5 <= len($D['samples']) <= 10 and all(s['time_ns'] == i * $D['sample_ns'] for i, s in enumerate($D['samples'])) and $D['sample_ns'] & ($D['sample_ns'] - 1) == 0 and $D['samples'][0]['state']['bytes'] == 0")" True
"$REPORT" frag --buckets 10 "$dump" >"$T/frag.txt" || fail "text report"
soft grep -q "^  address space (allocations outside pools): 5 blocks, 5.0 MiB in a span of 8.0 MiB; 3.0 MiB free inside in 2 holes, the largest 2.0 MiB (fragmentation 33%)$" "$T/frag.txt"
"$REPORT" frag --buckets 10 --format csv "$dump" >"$T/frag.csv" || fail "csv report"
soft expect_eq csv_end "$(awk -F, '$3 == "end" { print $5, $7, $8, $9, $10 }' "$T/frag.csv")" \
	"5 $((8 * MiB)) $((3 * MiB)) 2 $((2 * MiB))"
finish
