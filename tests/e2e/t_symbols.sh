# Leak sites are symbolized: function, file and line of the planted leaks.
. tests/e2e/lib.sh
traced basic "$PROGS/basic" >/dev/null
dump=$(dump_of basic)
report "$T/leaks.json" leaks "$dump"
line=$(grep -n 'CHECK(cudaMalloc(&p, n));' tests/e2e/progs/basic.c | head -n 1 | cut -d: -f1)
expect_eq top_frame_function "$(jget "$T/leaks.json" 'j["leaks"]["sites"][0]["stack"][0]["function"]')" leak_device
expect_eq top_frame_line "$(jget "$T/leaks.json" 'j["leaks"]["sites"][0]["stack"][0]["line"]')" "$line"
expect_eq top_frame_file \
	"$(jget "$T/leaks.json" 'j["leaks"]["sites"][0]["stack"][0]["file"].endswith("progs/basic.c")')" True
expect_eq caller "$(jget "$T/leaks.json" 'j["leaks"]["sites"][0]["stack"][1]["function"]')" main
# No frame of the shim itself appears in any stack.
expect_eq shim_frames \
	"$(jget "$T/leaks.json" 'sum(1 for s in j["leaks"]["sites"] for f in s["stack"] if "libcumtrace" in (f["module"] or ""))')" 0
"$REPORT" leaks "$dump" >"$T/leaks.txt"
grep -q "leak_device (.*basic.c:$line)" "$T/leaks.txt" || fail "text report lacks leak_device basic.c:$line"
echo "ok: text report names leak_device at basic.c:$line"
