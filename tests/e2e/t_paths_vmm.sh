# Capture path 7, virtual memory management from a libcuda handle (dlsym on
# the exports, and cuGetProcAddress_v2): reservations, physical allocations
# and mappings, one mapping with its handle and reservation leaked.
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
# kind: allocations, frees, bytes allocated, peak, live at end
kinds='[(k, v["allocations"], v["frees"], v["bytes_allocated"], v["peak_bytes"], v["live_bytes_at_end"]) for k, v in j["summary"]["kinds"].items() if k.startswith("vmm")]'
peak_sites='sorted((s["kind"], s["api"], s["count"], s["bytes"]) for s in j["peak"]["sites"])'
for mode in dlsym gpa; do
	untraced "$PROGS/paths_vmm" $mode >"$T/plain-$mode.txt"
	traced "vmm-$mode" "$PROGS/paths_vmm" $mode >"$T/traced-$mode.txt"
	soft diff -u "$T/plain-$mode.txt" "$T/traced-$mode.txt"
	analyze "$mode" "$(dump_of "vmm-$mode")" "kinds=$kinds" "peak_sites=$peak_sites"
	# Device bytes at the peak: 1 MiB cuMemAlloc + 4 + 2 MiB physical (mappings not counted again).
	check_facts "$mode" \
		"apis=cuMemAddressFree:2/1 cuMemAddressReserve:2/0 cuMemAlloc_v2:1/0 cuMemCreate:3/0 cuMemFree_v2:1/0 cuMemMap:3/0 cuMemRelease:2/0 cuMemUnmap:2/0" \
		allocations=9 frees=6 failed_calls=1 unmatched_frees=0 double_allocations=0 \
		"kinds=[('vmm_physical', 3, 2, 8388608, 6291456, 4194304), ('vmm_reserved', 2, 1, 10485760, 8388608, 8388608), ('vmm_mapped', 3, 2, 8388608, 6291456, 4194304)]" \
		leaks.count=3 leaks.bytes=16777216 \
		"leak_sites=[('cuMemAddressReserve', 'vmm_reserved', 1, 8388608), ('cuMemCreate', 'vmm_physical', 1, 4194304), ('cuMemMap', 'vmm_mapped', 1, 4194304)]" \
		peak.bytes=7340032 \
		"peak_sites=[('device', 'cuMemAlloc_v2', 1, 1048576), ('vmm_physical', 'cuMemCreate', 1, 2097152), ('vmm_physical', 'cuMemCreate', 1, 4194304)]"
	soft expect_eq "$mode: driver_layer_events" "$(awk '$2 == 2' "$T/$mode.events" | wc -l)" 16
done
finish
