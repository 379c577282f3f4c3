#!/usr/bin/env bash
# CUDA arrays on the GPU (issue 19, 3): tests/gpu/leak_array.cu untraced, traced and under
# compute-sanitizer --leak-check full. Checks: the same output traced; cumtrace's leaks == the
# program's GROUND_TRUTH (3 arrays); compute-sanitizer's leak summary against both; each
# array's bytes beside the device's own charge (cudaMemGetInfo deltas, printed as INFO).
#   bash tests/gpu/array_check.sh KIT OUTDIR
# Prints PASS/FAIL/INFO lines; exits 1 on any FAIL.
CHECK_NAME=arrays
. "$(dirname "$0")/check_lib.sh"
gcc -O1 -g -x c -I"$CUDA/include" -o "$OUT/leak_array" "$SRC/leak_array.cu" -L"$LIBDIR" -L"$LIBDIR/stubs" \
	-Wl,-rpath,"$LIBDIR" -lcudart -lcuda >"$OUT/build.log" 2>&1 || {
	check build 0 "$(tail -n 3 "$OUT/build.log" | tr '\n' ' ')"
	exit 1
}
(cd "$OUT" && timeout 120 ./leak_array >plain.out 2>plain.err)
rc_p=$?
rm -f "$OUT"/arr.*.dump
(cd "$OUT" && CUMTRACE_OUTPUT="$OUT/arr.%p.dump" CUMTRACE_QUIET=1 LD_PRELOAD="$KIT/libcumtrace.so" \
	timeout 120 ./leak_array >traced.out 2>traced.err)
rc_t=$?
SAN=$(command -v compute-sanitizer || echo "$CUDA/bin/compute-sanitizer")
(cd "$OUT" && timeout 300 "$SAN" --leak-check full ./leak_array >san.out 2>&1)
cat "$OUT/plain.out"
check "runs" "$([ $rc_p -eq 0 ] && [ $rc_t -eq 0 ] && echo 1)" "untraced $rc_p, traced $rc_t"
grep '^ARRAY\|^GROUND' "$OUT/plain.out" | sed 's/ delta=.*//' >"$OUT/plain.key"
grep '^ARRAY\|^GROUND' "$OUT/traced.out" | sed 's/ delta=.*//' >"$OUT/traced.key"
check "same lines traced (the deltas aside)" "$(cmp -s "$OUT/plain.key" "$OUT/traced.key" && echo 1)" ""
d=$(ls "$OUT"/arr.*.dump 2>/dev/null | head -n 1)
[ -n "$d" ] || { check dump 0 "no dump"; exit 1; }
"$KIT/cumtrace-report" leaks --format json -o "$OUT/leaks.json" "$d"
"$KIT/cumtrace-report" leaks "$d" >"$OUT/leaks.txt" 2>&1
python3 - "$OUT/plain.out" "$OUT/leaks.json" "$OUT/san.out" <<'PY'
import json, re, sys
plain, lj, san = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))["leaks"], open(sys.argv[3]).read()
gt = re.search(r"GROUND_TRUTH leaked_count=(\d+) leaked_bytes=(\d+)", plain)
exp = (int(gt.group(1)), int(gt.group(2)))
arr = [s for s in lj["sites"] if s["kind"] == "array"]
got = (sum(s["count"] for s in arr), sum(s["bytes"] for s in arr))
fails = 0
def check(what, ok, detail):
    global fails
    print("%s arrays: %s: %s" % ("PASS" if ok else "FAIL", what, detail))
    fails += not ok
check("cumtrace's array leaks == ground truth", got == exp, "%s vs %s" % (got, exp))
check("cumtrace's leaks are the arrays only", (lj["count"], lj["bytes"]) == exp, "%s" % ((lj["count"], lj["bytes"]),))
for m in re.finditer(r"ARRAY (\w+) bytes=(\d+) delta=(-?\d+)", plain):
    print("INFO arrays: %s: extent bytes %s, cudaMemGetInfo delta %s (%.4f)" % (
        m.group(1), m.group(2), m.group(3), int(m.group(3)) / int(m.group(2))))
s = re.search(r"LEAK SUMMARY: ([\d,]+) bytes leaked in ([\d,]+) allocation", san)
sizes = sorted(int(x.replace(",", "")) for x in re.findall(r"Leaked ([\d,]+) bytes from CUDA array", san))
# compute-sanitizer 2025.3 (H200 run 19) says "Leaked N bytes from CUDA array" with N the array's
# element count (width x height x depth, the element size left out) and one such line per mipmap
# level: the program prints what that rule gives for its leaked arrays (SANITIZER_VIEW)
view = re.search(r"SANITIZER_VIEW count=(\d+) elements=(\d+) sizes=([\d,]+)", plain)
if s:
    sb, sc = int(s.group(1).replace(",", "")), int(s.group(2).replace(",", ""))
    print("INFO arrays: compute-sanitizer: %d 'bytes' in %d allocations, sizes %s; cumtrace's leaked bytes %s" % (
        sb, sc, sizes, sorted(x["bytes"] for x in arr)))
    if view:
        want = sorted(int(x) for x in view.group(3).split(","))
        check("compute-sanitizer's array leaks == the leaked arrays' element counts, one per mipmap level",
              (sc, sb, sizes) == (int(view.group(1)), int(view.group(2)), want),
              "(%d, %d, %s) vs (%s, %s, %s)" % (sc, sb, sizes, view.group(1), view.group(2), want))
    else:
        check("the program prints SANITIZER_VIEW", False, "no line")
else:
    print("INFO arrays: compute-sanitizer printed no leak summary: %s" % san.strip()[-300:])
sys.exit(1 if fails else 0)
PY
[ $? -eq 0 ] || fails=$((fails + 1))
echo "arrays: $fails failed"
[ $fails -eq 0 ]
