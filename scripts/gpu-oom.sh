#!/bin/bash
# The oom report on a real GPU: what the fake runtime cannot show (the real
# driver's cuMemGetInfo_v2 after a real out-of-memory, from the shim). Runs
# tests/gpu/oom.cu (shared cudart) untraced and traced, and a torch program
# that runs out of memory, then checks the oom reports. Needs gpu-kit
# (scripts/gpu-pack.sh). Prints one "PASS|FAIL name: detail" line per check.
cd "$(dirname "$0")/.." || exit 2
KIT=${KIT:-$PWD/gpu-kit}
W=$(mktemp -d /tmp/cumtrace-oom.XXXXXX)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_LIBDIR=$(dirname "$(dirname "$(readlink -f "$NVCC")")")/lib64
REPORT=(env "LD_LIBRARY_PATH=$KIT/lib" "$KIT/cumtrace-report")
bad=0
check() { # NAME CONDITION-EXIT-STATUS DETAIL
	if [ "$2" -eq 0 ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; bad=1; fi
}
# traced NAME CMD...: CMD under the shim, its dump in $W/NAME.<pid>.dump
traced() {
	n=$1
	shift
	timeout 300 env LD_PRELOAD="$KIT/libcumtrace.so" LD_LIBRARY_PATH="$KIT/lib:${LD_LIBRARY_PATH:-}" \
		CUMTRACE_OUTPUT="$W/$n.%p.dump" CUMTRACE_QUIET=1 "$@"
}

"$NVCC" -O2 -g -Xcompiler -rdynamic -cudart shared -Xlinker -rpath -Xlinker "$CUDA_LIBDIR" \
	-o "$W/oom" tests/gpu/oom.cu -lcuda || { echo "FAIL build: nvcc"; exit 1; }
timeout 120 "$W/oom" >"$W/plain.txt"
traced c "$W/oom" >"$W/traced.txt"
diff <(grep -v '^meminfo' "$W/plain.txt") <(grep -v '^meminfo' "$W/traced.txt") >/dev/null
check c.same_output $? "return codes, errno, last error and block count as untraced: $(grep -v '^meminfo' "$W/traced.txt" | tr '\n' ' ')"
dump=$(ls "$W"/c.*.dump | head -n 1)
"${REPORT[@]}" oom --format json -o "$W/c.json" "$dump"
python3 - "$W/c.json" "$W/traced.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
failed = 0
out = dict((w[1], (int(w[2].split("=")[1]), int(w[3].split("=")[1])))
           for w in (l.split() for l in open(sys.argv[2])) if w[0] == "meminfo")
blocks = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("blocks")][0]
f = j["oom"]["failures"]
def show(name, ok, detail):
    global failed
    failed |= not ok
    print(("PASS" if ok else "FAIL"), name + ":", detail)
show("c.failures", [x["api"] for x in f] == ["cudaMalloc", "cuMemAlloc_v2"] and all(x["size"] == 1 << 30 for x in f),
     [(x["api"], x["size"]) for x in f])
show("c.free_total_recorded", all(x["free_bytes"] is not None for x in f),
     [(x["free_bytes"], x["total_bytes"]) for x in f])
show("c.total_as_cudaMemGetInfo", [x["total_bytes"] for x in f] == [out["runtime"][1], out["driver"][1]],
     "report %s, program %s" % ([x["total_bytes"] for x in f], [out["runtime"][1], out["driver"][1]]))
show("c.free_near_cudaMemGetInfo", all(abs(x["free_bytes"] - out[k][0]) <= 64 << 20 for x, k in zip(f, ("runtime", "driver"))),
     "report %s, program %s (within 64 MiB: other processes may move it)" % ([x["free_bytes"] for x in f], [out[k][0] for k in ("runtime", "driver")]))
show("c.live_set", all(x["live_bytes"] == blocks << 30 and x["sites"] and x["sites"][0]["count"] == blocks
                       and x["sites"][0]["stack"][0]["function"].split("(")[0] == "grab" for x in f),
     [(x["live_bytes"], x["live_count"], x["sites"][0]["stack"][0]["function"] if x["sites"] else None) for x in f])
sys.exit(failed)
PY
[ $? -eq 0 ] || bad=1

# torch: tensors of 1 GiB until torch.cuda.OutOfMemoryError (the caching allocator
# frees its cache and retries, so cudaMalloc fails at least once).
cat >"$W/t.py" <<'PY'
import torch
keep = []
try:
    while True:
        keep.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
except torch.cuda.OutOfMemoryError:
    free, total = torch.cuda.mem_get_info()
    print("torch_oom tensors", len(keep), "total", total)
PY
traced t python3 "$W/t.py" >"$W/t.txt"
grep -q '^torch_oom' "$W/t.txt"
check torch.ran $? "$(cat "$W/t.txt")"
dump=$(ls "$W"/t.*.dump | head -n 1)
"${REPORT[@]}" oom --format json -o "$W/t.json" "$dump"
python3 - "$W/t.json" "$W/t.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
w = open(sys.argv[2]).read().split()
total = int(w[w.index("total") + 1])
f = j["oom"]["failures"]
ok = bool(f) and all(x["api"] == "cudaMalloc" and x["free_bytes"] is not None and x["total_bytes"] == total for x in f)
print("PASS" if ok else "FAIL", "torch.failures:", [(x["api"], x["size"], x["free_bytes"], x["total_bytes"], x["live_bytes"]) for x in f][:4], "torch total", total)
sys.exit(not ok)
PY
[ $? -eq 0 ] || bad=1
"${REPORT[@]}" oom --top 3 "$dump" | head -n 40
echo "results in $W"
exit $bad
