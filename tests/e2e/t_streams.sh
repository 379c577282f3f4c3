# Streams: per stream live bytes and peak, synchronization counts and the
# time they took (the sum of their recorded durations), cross-stream frees and
# frees still pending in stream order at the end, exactly.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
traced st "$PROGS/streams" >"$T/out.txt" || fail "traced run failed"
dump=$(dump_of st)
report "$T/s.json" streams "$dump"
S1=$(awk '$1 == "S1" { print $2 }' "$T/out.txt")
S2=$(awk '$1 == "S2" { print $2 }' "$T/out.txt")
tid1=$(awk '$1 == "tid1" { print $2 }' "$T/out.txt")
tid2=$(awk '$1 == "tid2" { print $2 }' "$T/out.txt")
MiB=1048576
# One line per stream: "handle tid creates destroys syncs allocs allocated live peak frees cross_in pending pending_bytes".
rows=$(jget "$T/s.json" '"; ".join(" ".join(str(x) for x in (hex(s["stream"]), s["tid"], s["creates"], s["destroys"], s["syncs"], s["allocations"], s["allocated_bytes"], s["live_bytes"], s["peak_bytes"], s["async_frees"], s["cross_stream_frees"], s["pending_frees"], s["pending_free_bytes"])) for s in j["streams"]["streams"])')
soft expect_eq streams "$rows" \
	"0x2 $tid1 0 0 0 1 524288 0 524288 0 0 0 0; 0x2 $tid2 0 0 0 0 0 0 0 1 1 1 524288; $S1 0 1 0 0 2 $((5 * MiB)) 0 $((4 * MiB)) 2 1 2 $((12 * MiB)); $S2 0 1 1 2 2 $((10 * MiB)) 0 $((8 * MiB)) 2 1 0 0"
soft expect_eq cross "$(jget "$T/s.json" '(j["streams"]["cross_stream_frees"]["count"], j["streams"]["cross_stream_frees"]["bytes"])')" \
	"(3, $((19 * MiB / 2)))"
soft expect_eq pending "$(jget "$T/s.json" '(j["streams"]["pending_frees"]["count"], j["streams"]["pending_frees"]["bytes"])')" \
	"(3, $((25 * MiB / 2)))"
soft expect_eq pending_sites \
	"$(jget "$T/s.json" '[(s["bytes"], s["api"], s["stack"][0]["function"]) for s in j["streams"]["pending_frees"]["sites"]]')" \
	"[($((8 * MiB)), 'cudaMallocAsync', 'alloc_on'), ($((4 * MiB)), 'cudaMallocAsync', 'alloc_on'), (524288, 'cudaMallocAsync_ptsz', 'main')]"
# Synchronization time is the sum of the recorded durations of S2's two syncs.
want_ns=$(PYTHONPATH="$ROOT/bin" python3 - "$dump" <<'PY'
import struct, sys
import ctdump
total = 0
for _, rtype, _, body in ctdump.records(open(sys.argv[1], "rb").read()):
    if rtype == 2:
        ts, dur = struct.unpack_from("<2Q", body)
        if body[66] == 5:  # struct ct_rec_event's op (after 48 + 16 + 2 bytes): CT_OP_STREAM_SYNC
            total += dur
print(total)
PY
)
[ "$want_ns" -gt 0 ] || fail "no stream synchronization in the dump"
soft expect_eq sync_time "$(jget "$T/s.json" "[s['sync_time_ns'] for s in j['streams']['streams'] if hex(s['stream']) == '$S2'][0]")" "$want_ns"
soft expect_eq device_syncs "$(jget "$T/s.json" 'j["streams"]["device_syncs"]')" "[]"
"$REPORT" streams "$dump" >"$T/s.txt" || fail "text report"
soft grep -q "^  4 streams: 2 created, 1 destroyed; 2 stream synchronizations (" "$T/s.txt"
soft grep -q "^frees pending at the end: 3 (12.5 MiB): " "$T/s.txt"
"$REPORT" streams --format csv "$dump" >"$T/s.csv" || fail "csv report"
soft expect_eq csv_rows "$(tail -n +2 "$T/s.csv" | wc -l)" 4
finish
