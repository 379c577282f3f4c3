# Separate debug files: a stripped program whose DWARF lies in DIR/.build-id/xx/yyyy.debug is
# symbolized with file and line when CUMTRACE_REPORT_DEBUGINFO_PATH names DIR, and with its
# symbol table alone when the variable is "-" (what the other tests set: a system's debug
# packages left out, tests/e2e/lib.sh) or names no such file.
. tests/e2e/lib.sh
for tool in objcopy strip readelf; do
	command -v $tool >/dev/null || { echo "$tool not found"; exit 77; }
done
cp "$PROGS/basic" "$T/basic"
id=$(readelf -n "$T/basic" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ -n "$id" ] || { echo "no build id in $PROGS/basic"; exit 77; }
dir=$T/debug/.build-id/$(echo "$id" | cut -c1-2)
mkdir -p "$dir"
objcopy --only-keep-debug "$T/basic" "$dir/$(echo "$id" | cut -c3-).debug" || fail "objcopy"
strip -g "$T/basic" || fail "strip"
traced basic "$T/basic" >/dev/null
dump=$(dump_of basic)
line=$(grep -n 'CHECK(cudaMalloc(&p, n));' tests/e2e/progs/basic.c | head -n 1 | cut -d: -f1)
top='f = j["leaks"]["sites"][0]["stack"][0]; print((f["function"], f["line"], (f["file"] or "").endswith("progs/basic.c")))'
CUMTRACE_REPORT_DEBUGINFO_PATH="$T/debug" "$REPORT" leaks --format json -o "$T/with.json" "$dump" ||
	fail "leaks with the debug directory exited $?"
expect_eq with_debug_dir "$(python3 -c "import json; j = json.load(open('$T/with.json')); $top")" \
	"('leak_device', $line, True)"
for v in - "$T/nothing"; do
	CUMTRACE_REPORT_DEBUGINFO_PATH=$v "$REPORT" leaks --format json -o "$T/without.json" "$dump" ||
		fail "leaks with '$v' exited $?"
	expect_eq "without ($v)" "$(python3 -c "import json; j = json.load(open('$T/without.json')); $top")" \
		"('leak_device', 0, False)"
done
echo "ok: separate debug files follow CUMTRACE_REPORT_DEBUGINFO_PATH"
