#!/usr/bin/env bash
# The report of many ranks on a real GPU: a torchrun job of two ranks
# (tests/gpu/ranks_train.py; both on GPU 0 when there is one, gloo between them)
# traced with the kit's shim, then summary, leaks and peak merged over the two
# dumps, and one table:
#   check | expected | got | match
#
# Run on the GPU machine from the repository root with gpu-kit/ beside it
# (scripts/gpu-pack.sh makes it):
#
#     bash scripts/gpu-ranks.sh OUTDIR
#
# OUTDIR (default $OUT, else ./gpu-out) gets ranks-table.txt (the table),
# ranks-summary.txt, ranks-leaks.txt, ranks-peak.txt (the merged text reports),
# ranks.json (the merged leaks document) and ranks-logs.tar.gz (dumps, logs).
# Settings: PYTHON (default python3), NPROC (ranks, default 2), LEAK_MIB (default 8).
# Exit 0 when every check matched, 1 otherwise, 77 when torch is not installed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
KIT=$ROOT/gpu-kit
RES=${1:-${OUT:-$ROOT/gpu-out}}
mkdir -p "$RES"
W=$(mktemp -d /tmp/gpu-ranks.XXXXXX)
SRC=$KIT/src
[ -f "$SRC/ranks_train.py" ] || SRC=$ROOT/tests/gpu
PY=${PYTHON:-python3}
NPROC=${NPROC:-2}
LEAK_MIB=${LEAK_MIB:-8}
# Only the kit's libraries on the path (as in gpu-leak-classes.sh); KITENV prefixes a command.
KITLIB=$KIT/lib
KITENV=(env "LD_LIBRARY_PATH=$KITLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
REPORT=("${KITENV[@]}" timeout 120 "$KIT/cumtrace-report")
# Never let a traced program use NVLink multicast (see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

if [ ! -f "$KIT/libcumtrace.so" ] || [ ! -x "$KIT/cumtrace-report" ]; then
	echo "gpu-kit/ lacks libcumtrace.so or cumtrace-report: run scripts/gpu-pack.sh"
	exit 1
fi
"$PY" -c "import torch, torch.distributed.run" 2>/dev/null || { echo "torch is not installed: nothing to check"; exit 77; }

# The job: the launcher and its workers all under the shim (the launcher never
# calls CUDA, so it leaves no dump); every worker writes $W/rank.<pid>.dump.
echo "gpu-ranks: torchrun --nproc_per_node $NPROC, $LEAK_MIB MiB planted per rank"
"${KITENV[@]}" LD_PRELOAD="$KIT/libcumtrace.so" CUMTRACE_OUTPUT="$W/rank.%p.dump" CUMTRACE_QUIET=1 \
	timeout 300 "$PY" -m torch.distributed.run --standalone --nproc_per_node "$NPROC" --max-restarts 0 \
	"$SRC/ranks_train.py" --leak-mib "$LEAK_MIB" >"$W/job.out" 2>"$W/job.err"
echo "$?" >"$W/job.rc"
dumps=("$W"/rank.*.dump)
[ -f "${dumps[0]}" ] || dumps=()
echo "gpu-ranks: job exit $(cat "$W/job.rc"), ${#dumps[@]} dumps"
if [ ${#dumps[@]} -gt 0 ]; then
	"${REPORT[@]}" summary --format json -o "$W/all.json" "${dumps[@]}" 2>"$W/all.err"
	# the workers' dumps: those with a rank from the launcher
	mapfile -t ranked < <("$PY" -c 'import json, sys
for r in json.load(open(sys.argv[1]))["ranks"] if len(sys.argv) > 1 else []:
    if r["rank_source"] == "RANK":
        print(r["path"])' "$W/all.json" 2>/dev/null)
	[ ${#ranked[@]} -gt 0 ] || ranked=("${dumps[@]}")
	"${REPORT[@]}" summary -o "$RES/ranks-summary.txt" "${ranked[@]}" 2>>"$W/report.err"
	"${REPORT[@]}" leaks -o "$RES/ranks-leaks.txt" "${ranked[@]}" 2>>"$W/report.err"
	"${REPORT[@]}" peak -o "$RES/ranks-peak.txt" "${ranked[@]}" 2>>"$W/report.err"
	"${REPORT[@]}" leaks --format json --top 0 -o "$RES/ranks.json" "${ranked[@]}" 2>>"$W/report.err"
fi

"$PY" - "$RES/ranks.json" "$W/job.out" "$RES/ranks-leaks.txt" "$NPROC" "$LEAK_MIB" >"$RES/ranks-table.txt" <<'PY'
import json, re, sys
path, out, text, nproc, leak_mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
MiB = 1 << 20
rows, bad = [], 0
def row(check, expected, got):
    global bad
    ok = expected == got
    bad += not ok
    rows.append((check, str(expected), str(got), "yes" if ok else "NO"))
truth = {}
for line in open(out, errors="replace"):
    if line.startswith("GROUND_TRUTH "):
        t = json.loads(line.split(" ", 1)[1])
        truth[t["rank"]] = t
try:
    j = json.load(open(path))
except (OSError, ValueError) as e:
    j = None
    row("report", "a JSON document", "none: %s" % e)
if j:
    ranks = j.get("ranks", [])
    row("ranks", list(range(nproc)), [r["rank"] for r in ranks])
    row("rank source", ["RANK"] * nproc, [r["rank_source"] for r in ranks])
    row("world size", [nproc] * nproc, [r["world_size"] for r in ranks])
    row("pids as the workers said", [truth.get(i, {}).get("pid") for i in range(nproc)], [r["pid"] for r in ranks])
    row("complete dumps", [True] * nproc, [r["complete"] for r in ranks])
    peaks = [r["peak_bytes"] for r in ranks]
    row("peaks rise with the rank (scratch (RANK + 1) x 16 MiB)", True, all(a < b for a, b in zip(peaks, peaks[1:])))
    merged = j["leaks"].get("merged", {}).get("sites", [])
    def shares(s):
        return [(p["rank"], p["count"], p["bytes"]) for p in s["per_rank"]]
    def planted(fn, want):
        """The merged sites of Python function fn; without Python frames, those of the planted sizes."""
        v = [s for s in merged if any(f.get("function") == fn for f in s["stack"])]
        if v:
            return v, ""
        return [s for s in merged if shares(s) == want], " (by size: no Python frame)"
    want_shared = [(i, 1, leak_mib * MiB) for i in range(nproc)]
    want_extra = [(1, 1, 2 * leak_mib * MiB)] if nproc > 1 else []
    for fn, want in (("plant_shared", want_shared), ("plant_extra", want_extra)):
        v, how = planted(fn, want)
        row(fn + ": one merged site" + how, 1 if want else 0, len(v))
        if v:
            row(fn + " per rank", want, shares(v[0]))
            # torch's allocator made the CUDA call: its class is cache (README, leak classes),
            # as for every tensor a program keeps; growth or the site's Python frame name it
            row(fn + " class", "cache", v[0]["class"])
try:
    t = open(text).read()
    want = "ranks 0-%d: %d x %.1f MiB" % (nproc - 1, nproc, leak_mib)
    row("text: one merged report", 1, len(re.findall(r"^cumtrace leaks", t, re.M)))
    row("text: the shared site's shares", True, ("      " + want + "\n") in t)
except OSError as e:
    row("text report", "present", "missing: %s" % e)
w = [max(len(r[i]) for r in rows + [("check", "expected", "got", "match")]) for i in range(4)]
for r in [("check", "expected", "got", "match")] + rows:
    print(" | ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
if j:
    print()
    print("%5s %8s %12s %12s %10s %8s" % ("rank", "pid", "peak MiB", "leaked MiB", "events", "complete"))
    for r in j["ranks"]:
        print("%5d %8d %12.1f %12.1f %10d %8s" % (r["rank"], r["pid"], r["peak_bytes"] / MiB,
                                                 r["leak_bytes"] / MiB, r["events"], r["complete"]))
print("\n%d of %d checks matched" % (len(rows) - bad, len(rows)))
sys.exit(1 if bad else 0)
PY
rc=$?
cat "$RES/ranks-table.txt"
tar -czf "$RES/ranks-logs.tar.gz" -C "$W" . 2>/dev/null
rm -rf "$W"
exit $rc
