# Capture path 4, cuGetProcAddress_v2 and the legacy cuGetProcAddress (from
# dlsym on a libcuda handle): the variant the version and flags select is
# traced under its own name (per-thread: _ptsz, stream 0 recorded as 0x2),
# cuGetProcAddress hands out a working lookup whose functions are traced too,
# untraced and unknown names behave exactly as without the shim.
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
