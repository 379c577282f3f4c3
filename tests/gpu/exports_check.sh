#!/bin/sh
# The exporters on a real PyTorch job, on the GPU machine (torch installed):
#
#   sh tests/gpu/exports_check.sh [BUILD_DIR] [OUT_DIR]
#
# 1. traces tests/gpu/train.py (caching allocator, 20 steps) under cumtrace;
# 2. writes every export: memviz pickle, perfetto trace, folded and speedscope
#    flame graphs (leaks, peak, allocs), and checks them with the checkers of
#    tests/e2e (check_memviz.py, check_perfetto.py, check_flame.py);
# 3. runs torch's own tool on the memviz pickle: python -m torch.cuda._memory_viz
#    trace_plot, segment_plot, stats and trace (the HTML files are kept in
#    OUT_DIR: open them in a browser to see pytorch.org/memory_viz's views);
# 4. compares the keys of our pickle with those of torch's own snapshot
#    (torch.cuda.memory._snapshot() of a small job) and prints the difference.
# Exits non-zero at the first failure; prints "exports_check: all passed".
set -eu
BUILD=${1:-build}
OUT=${2:-exports-check}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHIM=$ROOT/$BUILD/libcumtrace.so
REPORT=$ROOT/$BUILD/cumtrace-report
E=$ROOT/tests/e2e
mkdir -p "$OUT"
rm -f "$OUT"/train.*.dump
python3 -c 'import torch; assert torch.cuda.is_available()' || { echo "exports_check: torch with CUDA is needed"; exit 2; }

echo "exports_check: tracing train.py"
LD_PRELOAD=$SHIM NVTX_INJECTION64_PATH=$SHIM CUMTRACE_OUTPUT="$OUT/train.%p.dump" CUMTRACE_QUIET=1 \
	python3 "$ROOT/tests/gpu/train.py" --mode default --steps 20 --warmup 2 >"$OUT/train.out"
dump=$(ls "$OUT"/train.*.dump | head -n 1)

"$REPORT" memviz -o "$OUT/cumtrace.pickle" "$dump"
python3 "$E/check_memviz.py" "$OUT/cumtrace.pickle" "$OUT/memviz.sum"
"$REPORT" perfetto -o "$OUT/trace.json" "$dump"
python3 "$E/check_perfetto.py" "$OUT/trace.json" "$OUT/perfetto.sum"
for of in leaks peak allocs; do
	"$REPORT" flamegraph --of $of -o "$OUT/$of.folded" "$dump"
	"$REPORT" flamegraph --of $of --format speedscope -o "$OUT/$of.speedscope.json" "$dump"
	python3 "$E/check_flame.py" folded "$OUT/$of.folded" "$OUT/$of.folded.sum"
	python3 "$E/check_flame.py" speedscope "$OUT/$of.speedscope.json" "$OUT/$of.speedscope.sum"
done
echo "exports_check: the checkers accept every export"

echo "exports_check: torch's _memory_viz on cumtrace.pickle"
python3 -m torch.cuda._memory_viz trace_plot "$OUT/cumtrace.pickle" -o "$OUT/trace_plot.html"
python3 -m torch.cuda._memory_viz segment_plot "$OUT/cumtrace.pickle" -o "$OUT/segment_plot.html"
python3 -m torch.cuda._memory_viz stats "$OUT/cumtrace.pickle" >"$OUT/stats.txt"
python3 -m torch.cuda._memory_viz trace "$OUT/cumtrace.pickle" >"$OUT/trace.txt"
tail -n 4 "$OUT/stats.txt"

echo "exports_check: keys of torch's own snapshot and ours"
python3 - "$OUT/cumtrace.pickle" "$OUT/torch.pickle" <<'PY'
import pickle, sys, torch
torch.cuda.memory._record_memory_history(max_entries=100000)
x = [torch.empty(n, device="cuda") for n in (1 << 10, 1 << 20, 1 << 22)]
del x[1]
try:
    torch.empty(1 << 50, device="cuda")  # an OOM entry
except torch.cuda.OutOfMemoryError:
    pass
snap = torch.cuda.memory._snapshot()
pickle.dump(snap, open(sys.argv[2], "wb"))
ours = pickle.load(open(sys.argv[1], "rb"))

def keys(snapshot):
    k = {"top": set(snapshot)}
    k["segment"] = set().union(*(set(s) for s in snapshot["segments"])) if snapshot["segments"] else set()
    k["block"] = set().union(*(set(b) for s in snapshot["segments"] for b in s["blocks"])) if snapshot["segments"] else set()
    for t in snapshot["device_traces"]:
        for e in t:
            k.setdefault("entry " + e["action"], set()).update(e)
    return k

theirs, mine = keys(snap), keys(ours)
missing = 0
for what in sorted(set(theirs) | set(mine)):
    t, m = theirs.get(what, set()), mine.get(what, set())
    print("%-24s torch only: %-40s cumtrace only: %s" % (what, sorted(t - m), sorted(m - t)))
    if what in mine and t - m - {"user_metadata", "forward_frames", "compile_context", "category"}:
        missing += 1
print("exports_check: %s" % ("keys: none of torch's is missing" if not missing else "keys: %d kinds lack some of torch's keys" % missing))
sys.exit(1 if missing else 0)
PY
echo "exports_check: all passed"
