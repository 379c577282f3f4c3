#!/usr/bin/env bash
# Leak classes and growth leaks on a real GPU: PyTorch (caching allocator and
# no caching, cumtrace_mark and NVTX steps, a planted list that grows), CuPy,
# JAX and NCCL traced with the kit's shim, then one table:
#   check | expected | got | match
# and, for every mismatch, the offending sites' innermost frames (to fix the
# rules in analyzer/model/classify.c). Libraries that are not installed give n/a.
#
# Run on the GPU machine from the repository root with gpu-kit/ beside it
# (scripts/gpu-pack.sh makes it):
#
#     bash scripts/gpu-leak-classes.sh
#
# Results: $OUT (or ./gpu-out) gets leak-classes.txt (the table) and
# leak-classes.tar.gz (dumps, reports, logs). Exit 0 when every check that ran
# matched, 1 otherwise.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
KIT=$ROOT/gpu-kit
RES=${OUT:-$ROOT/gpu-out}
W=$(mktemp -d /tmp/gpu-leak-classes.XXXXXX)
mkdir -p "$RES"
KITLIB=$KIT/lib
SRC=$KIT/src
[ -f "$SRC/leak_classes.py" ] || SRC=$ROOT/tests/gpu
PY=${PYTHON:-python3}

# run NAME ENV... -- ARGS: trace leak_classes.py ARGS, then write $W/NAME.json
run() {
	name=$1
	shift
	envs=()
	while [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	env "${envs[@]}" LD_PRELOAD="$KIT/libcumtrace.so" LD_LIBRARY_PATH="$KITLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		NVTX_INJECTION64_PATH="$KIT/libcumtrace.so" CUMTRACE_OUTPUT="$W/$name.%p.dump" \
		timeout 300 "$PY" "$SRC/leak_classes.py" "$@" >"$W/$name.out" 2>"$W/$name.err"
	echo "$?" >"$W/$name.rc"
	set -- "$W/$name".*.dump
	if [ -f "$1" ]; then
		LD_LIBRARY_PATH="$KITLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 "$KIT/cumtrace-report" leaks \
			--format json --top 0 -o "$W/$name.json" "$1" 2>>"$W/$name.err"
		LD_LIBRARY_PATH="$KITLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 "$KIT/cumtrace-report" leaks \
			--top 10 "$1" >"$W/$name.txt" 2>&1
	fi
}

have() { "$PY" -c "import $1" >/dev/null 2>&1; }

if have torch; then
	run torch-steady -- torch --steps 12
	run torch-nocache PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- torch --steps 12 --leak-bytes 1048576
	run torch-cached -- torch --steps 12 --leak-bytes 33554432
	run torch-nvtx PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- torch --steps 12 --leak-bytes 1048576 --nvtx
	run nccl -- nccl
fi
have cupy && run cupy -- cupy
have jax && run jax XLA_PYTHON_CLIENT_PREALLOCATE=false -- jax

"$PY" - "$W" >"$RES/leak-classes.txt" <<'EOF'
import json, os, sys
W = sys.argv[1]
rows, details = [], []

def load(name):
    p = os.path.join(W, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None

def frames(site, n=4):
    out = []
    for f in site["stack"][:n]:
        if f.get("python"):
            out.append("py %s (%s:%s)" % (f["function"], f["file"], f["line"]))
        else:
            out.append("%s in %s" % (f["function"] or "?", os.path.basename(f["module"] or "?")))
    return " <- ".join(out)

def check(name, what, expected, got, ok, offenders=()):
    rows.append((name + ": " + what, str(expected), str(got), "yes" if ok else "NO"))
    if not ok:
        for s in offenders[:5]:
            details.append("%s: %s %s %d bytes: %s" % (name, s.get("class"), s.get("allocator"),
                                                      s.get("bytes", s.get("growth_bytes", 0)), frames(s)))

def na(name):
    rows.append((name, "-", "n/a (not run or no dump)", "n/a"))

def sites(j):
    return j["leaks"]["sites"]

def growth(j):
    return (j["leaks"].get("growth") or {}).get("sites", [])

for name, allowed in (("torch-steady", {"pytorch", "cublas"}), ("cupy", {"cupy"}),
                      ("jax", {"jax", "cublas", "cudnn"}), ("nccl", {"pytorch", "cublas", "nccl"})):
    j = load(name)
    if j is None:
        na(name)
        continue
    leaked = [s for s in sites(j) if s["class"] == "leaked"]
    check(name, "leaked sites", 0, len(leaked), not leaked, leaked)
    other = [s for s in sites(j) if s["class"] == "cache" and s["allocator"] not in allowed]
    check(name, "cache sites of other allocators", 0, len(other), not other, other)
    want = {"torch-steady": "pytorch", "cupy": "cupy", "jax": "jax", "nccl": "nccl"}[name]
    n = sum(1 for s in sites(j) if s["allocator"] == want)
    check(name, "sites recognised as " + want, ">= 1", n, n >= 1)
    if name == "torch-steady":
        g = growth(j)
        check(name, "growth sites (steady loop)", 0, len(g), not g, g)

for name, per_step, series in (("torch-nocache", 1 << 20, "step"), ("torch-cached", 32 << 20, "step"),
                               ("torch-nvtx", 1 << 20, "iteration")):
    j = load(name)
    if j is None:
        na(name)
        continue
    gj = j["leaks"].get("growth") or {}
    got = [(s["name"], s["steps"]) for s in gj.get("series", [])]
    check(name, "step series", [(series, 12 if series == "step" else 11)], got,
          got == [(series, 12 if series == "step" else 11)])
    g = growth(j)
    top = g[0] if g else None
    check(name, "growth of the top site (8 steps)", ">= %d" % (8 * per_step),
          top and top["growth_bytes"], bool(top) and top["growth_bytes"] >= 8 * per_step, g)
    check(name, "its steps that grew", 8, top and top["grew_steps"], bool(top) and top["grew_steps"] == 8, g)
    check(name, "its allocator", "pytorch", top and top["allocator"], bool(top) and top["allocator"] == "pytorch", g)
    if name == "torch-nocache":
        check(name, "growth sites", 1, len(g), len(g) == 1, g)

w = max(len(r[0]) for r in rows)
print("%-*s | %-24s | %-28s | match" % (w, "check", "expected", "got"))
for r in rows:
    print("%-*s | %-24s | %-28s | %s" % (w, r[0], r[1][:24], r[2][:28], r[3]))
if details:
    print("\nmismatches, innermost frames first:")
    print("\n".join(details))
sys.exit(1 if any(r[3] == "NO" for r in rows) else 0)
EOF
rc=$?
cat "$RES/leak-classes.txt"
tar -C "$W" -czf "$RES/leak-classes.tar.gz" . 2>/dev/null
rm -rf "$W"
exit $rc
