#!/usr/bin/env bash
# CUDA IPC between two processes on one GPU, traced (issues 19 and 20): tests/gpu/ipc_pair.cu
# forks before CUDA starts; the parent exports an 8 MiB buffer, the child opens, writes and
# closes it; the parent leaves 1 MiB allocated. Checks, against the program's own lines:
#   - the parent's leaks: 1 leak of 1,048,576 bytes (the child changes nothing there);
#   - the parent's dump: the buffer exported once (8,388,608 bytes), nothing imported;
#   - the child's dump: no allocation and no leak of its own, no unmatched free; the opened
#     buffer is kind imported: 1 import of 8,388,608 bytes (cuMemGetAddressRange_v2), released
#     by its cudaIpcCloseMemHandle, nothing imported live at exit (issue 19, 4).
#   bash tests/gpu/ipc_check.sh KIT OUTDIR
# CUDA_HOME (default /usr/local/cuda) gives the headers and libraries. Prints PASS/FAIL/INFO
# lines; exits 1 on any FAIL.
CHECK_NAME=ipc
. "$(dirname "$0")/check_lib.sh"
gcc -O1 -g -x c -I"$CUDA/include" -o "$OUT/ipc_pair" "$SRC/ipc_pair.cu" -L"$LIBDIR" -Wl,-rpath,"$LIBDIR" \
	-lcudart >"$OUT/build.log" 2>&1 || {
	check build 0 "$(tail -n 3 "$OUT/build.log" | tr '\n' ' ')"
	exit 1
}
rm -f "$OUT"/ipc.*.dump
(cd "$OUT" && CUMTRACE_OUTPUT="$OUT/ipc.%p.dump" CUMTRACE_QUIET=1 LD_PRELOAD="$KIT/libcumtrace.so" \
	timeout 120 ./ipc_pair >ipc.out 2>ipc.err)
rc=$?
cat "$OUT/ipc.out"
check "the program ran" "$([ $rc -eq 0 ] && echo 1)" "exit $rc $(tail -n 2 "$OUT/ipc.err" | tr '\n' ' ')"
ppid=$(sed -n 's/^IPC parent pid=\([0-9]*\).*/\1/p' "$OUT/ipc.out")
cpid=$(sed -n 's/^IPC child pid=\([0-9]*\).*/\1/p' "$OUT/ipc.out")
for who in parent child; do
	pid=$ppid
	[ $who = child ] && pid=$cpid
	d=$OUT/ipc.$pid.dump
	if [ -z "$pid" ] || [ ! -f "$d" ]; then
		check "$who dump" 0 "no dump for pid '${pid}'"
		continue
	fi
	"$KIT/cumtrace-report" leaks --format json "$d" >"$OUT/$who.leaks.json" 2>"$OUT/$who.leaks.err"
	"$KIT/cumtrace-report" summary --format json "$d" >"$OUT/$who.summary.json" 2>"$OUT/$who.summary.err"
	"$KIT/cumtrace-report" summary "$d" >"$OUT/$who.summary.txt" 2>&1
	python3 - "$who" "$OUT/$who.leaks.json" "$OUT/$who.summary.json" <<'PY'
import json, sys
who, lj, sj = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
leaks = [s for s in lj["leaks"]["sites"] if s["class"] != "cache"]
n, b = sum(s["count"] for s in leaks), sum(s["bytes"] for s in leaks)
kinds = sj["summary"].get("kinds", sj["summary"].get("by_kind", {}))
print("INFO ipc: %s: leaks %d / %d bytes; summary kinds %s; apis %s" % (
    who, n, b, json.dumps(kinds)[:400], sorted(sj["summary"].get("apis", {}))))
if who == "parent":
    ok = n == 1 and b == 1048576
    print("%s ipc: parent: 1 leak of 1048576 bytes: %d / %d" % ("PASS" if ok else "FAIL", n, b))
    imp = (sj.get("dumps") or [{}])[0].get("imported") or {}
    e = (imp.get("exports"), imp.get("exported_bytes"), imp.get("imports"))
    ok2 = e == (1, 8388608, 0)
    print("%s ipc: parent: exported 1 buffer of 8388608 bytes, imported nothing: %s" % ("PASS" if ok2 else "FAIL", e))
    ok = ok and ok2
else:
    ok = n == 0
    print("%s ipc: child: no leak of its own: %d / %d" % ("PASS" if ok else "FAIL", n, b))
    d0 = (sj.get("dumps") or [{}])[0]
    imp = d0.get("imported") or {}
    got = (imp.get("imports"), imp.get("bytes"), imp.get("releases"), imp.get("live_at_exit"))
    ok2 = got == (1, 8388608, 1, 0)
    print("%s ipc: child: imported (imports, bytes, releases, live at exit) == (1, 8388608, 1, 0): %s"
          % ("PASS" if ok2 else "FAIL", got))
    k = sj["summary"].get("kinds", {})
    dev = k.get("device", {}).get("allocations", 0)
    imk = k.get("imported", {}).get("allocations", 0)
    ok3 = dev == 0 and imk == 1 and d0.get("unmatched_frees") == 0
    print("%s ipc: child: kind imported 1, device allocations 0, unmatched frees 0: %d, %d, %s"
          % ("PASS" if ok3 else "FAIL", imk, dev, d0.get("unmatched_frees")))
    ok = ok and ok2 and ok3
sys.exit(0 if ok else 1)
PY
	[ $? -eq 0 ] || fails=$((fails + 1))
done
echo "ipc: $fails failed"
[ $fails -eq 0 ]
