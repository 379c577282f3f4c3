# Capture path 5, cudaGetDriverEntryPoint, ...ByVersion and their _ptsz
# exports with cudaEnableDefault / LegacyStream / PerThreadDefaultStream:
# the functions handed out are traced as the variant asked for.
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
untraced "$PROGS/paths_entry" >"$T/plain.txt"
traced entry "$PROGS/paths_entry" >"$T/traced.txt"
soft diff -u "$T/plain.txt" "$T/traced.txt"
soft expect_eq failing_calls "$(grep -c 'call .* rc=[1-9]' "$T/traced.txt")" 0
analyze r "$(dump_of entry)"
E=$T/r.events
check_facts r \
	"apis=cuMemAllocAsync:7/0 cuMemAllocAsync_ptsz:6/0 cuMemAlloc_v2:4/0 cuMemFreeAsync:7/0 cuMemFreeAsync_ptsz:6/0 cuMemFree_v2:4/0 cuStreamCreate:1/0 cuStreamDestroy_v2:1/0 cuStreamSynchronize:4/0 cuStreamSynchronize_ptsz:4/0" \
	allocations=17 frees=17 failed_calls=0 unmatched_frees=0 leaks.count=0
soft expect_eq runtime_layer_events "$(awk '$2 != 2' "$E" | wc -l)" 0
# Per lookup function, flags Default, Legacy, PerThread (L legacy, P _ptsz):
#   EntryPoint L L P, _ptsz P L P, ByVersion L L P, ByVersion_ptsz P L P;
# then one legacy allocation on a created stream.
variants() { sed 's/^cuMem\(Alloc\|Free\)Async_ptsz:0x2$/P/; s/^cuMem\(Alloc\|Free\)Async:0x0$/L/; s/^cuMem\(Alloc\|Free\)Async:0x[0-9a-f]*$/S/'; }
soft expect_eq async_alloc_variants \
	"$(awk '$1 ~ /^cuMemAllocAsync/ { print $1 ":" $3 }' "$E" | variants | tr '\n' ' ')" \
	"L L P P L P L L P P L P S "
soft expect_eq async_free_variants \
	"$(awk '$1 ~ /^cuMemFreeAsync/ { print $1 ":" $3 }' "$E" | variants | tr '\n' ' ')" \
	"L L P P L P L L P P L P S "
# Loop: EntryPoint, _ptsz, ByVersion, ByVersion_ptsz with Default; then the
# probe: PerThread, ByVersion_ptsz Default, ByVersion Legacy, _ptsz Legacy.
soft expect_eq sync_sequence "$(awk '$1 ~ /Synchronize/ { printf "%s:%s ", $1, $3 }' "$E")" \
	"cuStreamSynchronize:0x0 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize:0x0 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize_ptsz:0x2 cuStreamSynchronize:0x0 cuStreamSynchronize:0x0 "
finish
