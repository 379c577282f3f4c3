# Capture path 8, stream-ordered allocation: frees on another stream than the
# allocation, a created pool, _ptsz exports; each event carries the stream it
# was made on (0 from a _ptsz export = 0x2), nothing leaks.
. tests/e2e/lib.sh
# Checks that keep going: each failed check is reported, the test fails at the end.
nbad=0
soft() { ("$@") || nbad=$((nbad + 1)); }
finish() {
	[ "$nbad" -eq 0 ] || fail "$nbad check(s) failed"
	echo "all checks passed"
}
# analyze NAME DUMP [KEY=EXPR]...: the leaks report of DUMP in $T/NAME.json;
# then, in one Python run (interpreter start-up can be slow), $T/NAME.events,
# one line per event in dump order: "api layer stream result size ptr aux",
# and $T/NAME.facts, "KEY<TAB>VALUE" for the standard keys below and for each
# EXPR, evaluated over the report j.
analyze() {
	an_name=$1 an_dump=$2
	shift 2
	report "$T/$an_name.json" leaks "$an_dump"
	python3 - "$ROOT/include/cumtrace/format.h" "$an_dump" "$T/$an_name" "$@" <<'PY' || fail "analyze $an_dump"
import json, re, struct, sys
header, dump, out = sys.argv[1:4]
api_list = open(header).read().split("#define CT_API_LIST(X)")[1].split("enum ct_api")[0]
names = re.findall(r"X\((\w+), \w+\)", api_list)
data = open(dump, "rb").read()
event = struct.Struct("<6Q2IiIHBBhBB")  # struct ct_rec_event after its record header
with open(out + ".events", "w") as f:
    off = struct.unpack_from("<H", data, 10)[0]
    while off + 8 <= len(data):
        rtype, _, size = struct.unpack_from("<HHI", data, off)
        if size < 8 or size % 8:
            sys.exit("%s: bad record at offset %d" % (dump, off))
        if rtype == 2:
            e = event.unpack_from(data, off + 8)
            print(names[e[10]], e[14], "%#x" % e[4], e[8], e[3], "%#x" % e[2], "%#x" % e[5], file=f)
        off += size
j = json.load(open(out + ".json"))
facts = {
    "apis": " ".join("%s:%d/%d" % (k, v["calls"], v["failures"])
                     for k, v in sorted(j["summary"]["apis"].items())),
    "allocations": j["allocations"],
    "frees": j["frees"],
    "failed_calls": j["failed_calls"],
    "unmatched_frees": j["unmatched_frees"],
    "double_allocations": j["double_allocations"],
    "leaks.count": j["leaks"]["count"],
    "leaks.bytes": j["leaks"]["bytes"],
    "leak_sites": sorted((s["api"], s["kind"], s["count"], s["bytes"]) for s in j["leaks"]["sites"]),
    "peak.bytes": j["peak"]["bytes"],
    "clean_exit": j["dumps"][0]["clean_exit"],
}
for arg in sys.argv[4:]:
    key, expr = arg.split("=", 1)
    facts[key] = eval(expr)
with open(out + ".facts", "w") as f:
    for key, value in facts.items():
        print(key, value, sep="\t", file=f)
PY
}
# fact NAME KEY: a value analyze computed
fact() { awk -F '\t' -v k="$2" '$1 == k { print $2 }' "$T/$1.facts"; }
# check_facts NAME KEY=VALUE...: soft expect_eq of each
check_facts() {
	cf_name=$1
	shift
	for cf in "$@"; do
		soft expect_eq "$cf_name: ${cf%%=*}" "$(fact "$cf_name" "${cf%%=*}")" "${cf#*=}"
	done
}
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
