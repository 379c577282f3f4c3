# Capture path 2, dlsym: names looked up on RTLD_LOCAL handles of libcudart
# and libcuda are traced; RTLD_DEFAULT and RTLD_NEXT lookups still hand out
# working (traced) functions once the runtime is global.
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
