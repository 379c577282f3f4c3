# The two layers in the reports (analyzer/model/framework.c, analyses/layers.c): a
# training loop on the stand-in for PyTorch's caching allocator (tests/fake/c10_cuda.cc,
# torch's block rules and memory_stats()), driven from Python (tests/e2e/torch_fake.py
# layout), with the stand-in torch package's optimizer steps (tests/e2e/pyfw) and no
# marks. What it keeps per step is freed only by the interpreter's teardown.
#   - tensors kept per step: leaked at the program's exit (torch_block, at the script's
#     line) and growing step after step (optimizer steps), while the CUDA layer's
#     segments read "cache"; the gate fails on them; blocks made once before the loop
#     (a model's weights) are held at exit, not leaked;
#   - the same loop keeping nothing: no leaked site, the gate passes;
#   - the loop without an optimizer: steps inferred from the allocations, the same verdicts;
#   - peak allocated and peak reserved = the allocator's own peaks, to the byte (blocks
#     handed out whole included), in the default and expandable modes; allocated at exit;
#   - the peak report: by owner, tensors + cached free = PyTorch's segments;
#   - cudaMallocAsync backend (no trace events): the CUDA layer's allocations of PyTorch
#     are tensors, leaked at the same line, not cache;
#   - OOM: PyTorch's out-of-memory with the tensors live then;
#   - Perfetto: PyTorch's allocated and reserved bytes as counter tracks.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
C10=$ROOT/$BUILD/tests/torch/libc10_cuda.so
[ -f "$C10" ] || fail "no stand-in libc10_cuda.so: build $C10 (make tests)"
DRIVER=$ROOT/tests/e2e/torch_fake.py
site=$T/site
mkdir -p "$site/torch/lib"
cp "$C10" "$site/torch/lib/"
printf "__version__ = '2.11.0+cu130'\n" >"$site/torch/version.py"
STEPS=12
KEEP_LINE=$(grep -n "# KEEP-LINE" "$DRIVER" | cut -d: -f1)

# run NAME SCENARIO [VAR=VALUE...] (an optimizer step ends each step unless TORCH_FAKE_OPTIM=0)
run() {
	rn=$1 rsc=$2
	shift 2
	traced "$rn" env PYTHONPATH="$ROOT/tests/e2e/pyfw" TORCH_FAKE_OPTIM=1 TORCH_FAKE_STEPS=$STEPS "$@" \
		python3 "$DRIVER" "$FAKE" "$site" "$rsc" "$T/$rn.json" 2>"$T/$rn.err" ||
		{ cat "$T/$rn.err"; fail "$rn: the driver failed"; }
}

# leaked_at NAME: "kind class count bytes" of every leak site not "cache" whose stack has the KEEP line
leaked_at() {
	report "$T/$1.leaks.json" leaks "$(dump_of "$1")"
	python3 - "$T/$1.leaks.json" "$DRIVER" "$KEEP_LINE" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["leaks"]
for s in j["sites"]:
    if s["class"] != "cache" and any(f.get("file") == sys.argv[2] and f.get("line") == int(sys.argv[3]) for f in s["stack"]):
        print(s["kind"], s["class"], s["count"], s["bytes"])
PY
}

# figures NAME: the framework layer's figures of device 0 against the stand-in's memory_stats()
figures() {
	report "$T/$1.sum.json" summary "$(dump_of "$1")"
	python3 - "$T/$1.sum.json" "$T/$1.json" <<'PY' || fail "$1: framework figures"
import json, sys
d = json.load(open(sys.argv[1]))["summary"]["framework"]["devices"][0]
allocated, peak_allocated, reserved, peak_reserved = json.load(open(sys.argv[2]))["stats"]["0"]
got = (d["peak_allocated_bytes"], d["peak_reserved_bytes"], d["exit_bytes"], d["sizes_estimated"], d["exit_marked"],
       d["exit_blocks"] - d["leaked_blocks"])
want = (peak_allocated, peak_reserved, allocated, 0, True, 3)
print("ok" if got == want else "FAIL", "peak allocated, peak reserved, held at exit, estimated, exit marked,",
      "held and not leaked (the weights):", got, "want", want)
sys.exit(got != want)
PY
}

# Default mode, 4 MiB kept per step.
run keep layout
figures keep
leaked_bytes() {
	jget "$T/$1.sum.json" 'j["summary"]["framework"]["devices"][0]["leaked_bytes"] if j["summary"]["framework"]["devices"][0]["leaked_bytes"] >= '$STEPS' * 4 << 20 else -1'
}
expect_eq "keep: leaked at the KEEP line" "$(leaked_at keep)" "torch_block leaked $STEPS $(leaked_bytes keep)"
expect_eq "keep: the CUDA layer's segments" \
	"$(jget "$T/keep.leaks.json" 'sorted(set((s["kind"], s["class"]) for s in j["leaks"]["sites"] if s["kind"] != "torch_block"))')" \
	"[('device', 'cache')]"
expect_eq "keep: growth without marks" \
	"$(jget "$T/keep.leaks.json" '([(s["kind"], s["grew_steps"]) for s in j["leaks"]["growth"]["sites"]], j["leaks"]["growth"]["series"][0]["kind"])')" \
	"([('torch_block', 8)], 'optimizer')"
"$REPORT" leaks "$(dump_of keep)" >"$T/keep.txt"
head -n 1 "$T/keep.txt" | grep -q "^cumtrace leaks: $STEPS framework blocks, .* kept from step to step, still allocated at the program's exit; CUDA layer: " ||
	fail "keep: the first line: $(head -n 1 "$T/keep.txt")"
echo "ok: leaks text first line"
# The stacks in the user's words: the stand-in's and ctypes' frames folded to one line
# before the script's, every frame with --full-stacks.
grep -q "^      \.\.\. [0-9]* frames in libc10_cuda.so, .* (--full-stacks shows them)$" "$T/keep.txt" ||
	fail "keep: no folded line: $(sed -n 5,12p "$T/keep.txt")"
"$REPORT" leaks --full-stacks "$(dump_of keep)" >"$T/keep-full.txt"
grep -q "^      at .*(tests/fake/c10_cuda.cc:[0-9]*)  in libc10_cuda.so" "$T/keep-full.txt" ||
	fail "keep: --full-stacks shows no stand-in frame"
! grep -q "^      at .* in libc10_cuda.so" "$T/keep.txt" || fail "keep: a stand-in frame not folded"
echo "ok: stacks folded, --full-stacks unfolds"
rc=0
"$REPORT" leaks --fail-on-leak "$(dump_of keep)" >/dev/null 2>&1 || rc=$?
expect_eq "keep: gate" "$rc" 1

# The headline (cumtrace run's last lines): the tensor leak, the peak's step, the growth.
expect_eq "keep: headline" "$("$REPORT" headline "$(dump_of keep)" | sed 's/at [0-9.]* ms/at T ms/')" \
"leaks: 48.5 MiB leaked in 1 site (held by allocator caches: 102.0 MiB); largest 48.5 MiB at torch_fake.py:$(jget "$T/keep.json" 'j["alloc_line"]') in alloc
peak: 102.0 MiB at T ms, in step 10 of 12 (optimizer steps); top site 40.0 MiB at torch_fake.py:$(jget "$T/keep.json" 'j["alloc_line"]') in alloc
growth: 1 site grew over 11 steps (SGD); largest +32.0 MiB at torch_fake.py:$(jget "$T/keep.json" 'j["alloc_line"]') in alloc"

# No optimizer, no marks (an inference or custom loop): steps inferred from the allocations.
run inferred layout TORCH_FAKE_OPTIM=0
expect_eq "inferred: leaked at the KEEP line" "$(leaked_at inferred)" "torch_block leaked $STEPS $(leaked_bytes keep)"
expect_eq "inferred: growth without marks or optimizer" \
	"$(jget "$T/inferred.leaks.json" '([(s["kind"], s["grew_steps"]) for s in j["leaks"]["growth"]["sites"]], [(s["name"], s["kind"], s["boundaries"]) for s in j["leaks"]["growth"]["series"]])')" \
	"([('torch_block', 8)], [('inferred', 'inferred', $STEPS)])"
"$REPORT" summary "$(dump_of inferred)" | grep -q "^  steps: $STEPS inferred from the allocations" || fail "inferred: summary"
echo "ok: inferred: summary line"
report "$T/inferred.sum.json" summary "$(dump_of inferred)"
expect_eq "inferred: the dump's steps in JSON" \
	"$(jget "$T/inferred.sum.json" '(lambda s: (s["inferred"], s["explicit"], s["optimizer"]))(j["dumps"][0]["steps"])')" \
	"($STEPS, 0, 0)"

# The peak: by owner, the framework layer, then the CUDA layer.
report "$T/keep.peak.json" peak "$(dump_of keep)"
python3 - "$T/keep.peak.json" "$T/keep.json" <<'PY' || fail "keep: peak owners"
import json, sys
p = json.load(open(sys.argv[1]))["peak"]
stats = json.load(open(sys.argv[2]))["stats"]["0"]
o, fw = p["owners"], p["framework"][0]
ok = (o["pytorch"] == p["bytes"] and o["pytorch_tensors"] + o["pytorch_cached_free"] == o["pytorch"]
      and fw["peak_allocated_bytes"] == stats[1] and fw["peak_reserved_bytes"] == stats[3]
      and sum(s["bytes"] for s in fw["sites"]) == stats[1])
print("ok" if ok else "FAIL", "peak owners", o, "framework", {k: v for k, v in fw.items() if k != "sites"})
sys.exit(not ok)
PY
"$REPORT" peak "$(dump_of keep)" >"$T/keep.peak.txt"
grep -q "^  by owner at the peak: PyTorch .* (tensors .* + cached free .*)$" "$T/keep.peak.txt" ||
	fail "peak text: $(head -n 3 "$T/keep.peak.txt")"
grep -q "^PyTorch, device 0: peak allocated .* peak reserved " "$T/keep.peak.txt" || fail "peak text: no framework line"
echo "ok: peak text"

# Perfetto: PyTorch's allocated and reserved bytes as counter tracks whose maxima are its peaks
# (every change: --counter-us 0), and Perfetto's importer rules hold (check_perfetto.py).
"$REPORT" perfetto --counter-us 0 -o "$T/keep.pf.json" "$(dump_of keep)" || fail "perfetto exited $?"
python3 "$ROOT/tests/e2e/check_perfetto.py" "$T/keep.pf.json" "$T/keep.pf.sum" || fail "check_perfetto.py rejected the trace"
expect_eq "keep: perfetto framework counters" \
	"$(python3 -c 'import json, sys
j = json.load(open(sys.argv[1])); mx = {}
for e in j["traceEvents"]:
    if e.get("ph") == "C" and e["name"].startswith("PyTorch"):
        mx[e["name"]] = max(mx.get(e["name"], 0), e["args"]["bytes"])
print(sorted(mx.items()))' "$T/keep.pf.json")" \
	"$(jget "$T/keep.json" '[("PyTorch allocated 0", j["stats"]["0"][1]), ("PyTorch reserved 0", j["stats"]["0"][3])]')"
expect_eq "keep: perfetto framework counters' category" \
	"$(jget "$T/keep.pf.sum" 'sorted(set(v["cat"] for k, v in j["counters"].items() if "/PyTorch " in k))')" "['memory.pytorch']"
# ... and each tensor's block as an allocation slice (category alloc.torch_block): one per
# block handed out, those held at the exit point ending "live at exit".
report "$T/keep.sum.json" summary "$(dump_of keep)"
expect_eq "keep: perfetto torch_block slices (all, live at exit, bytes live at exit)" \
	"$(python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
b = [e for e in j["traceEvents"] if e.get("ph") == "b" and e.get("cat") == "alloc.torch_block"]
live = [e for e in b if e["args"]["end"] == "live at exit"]
print((len(b), len(live), sum(e["args"]["size"] for e in live)))' "$T/keep.pf.json")" \
	"$(jget "$T/keep.sum.json" '(lambda d: (j["summary"]["framework"]["by_api"]["torch_alloc"], d["exit_blocks"], d["exit_bytes"]))(j["summary"]["framework"]["devices"][0])')"

# The same loop keeping nothing: no leaked site, a warm cache is "cache" and passes the gate.
run clean layout TORCH_FAKE_KEEP=0
figures clean
report "$T/clean.leaks.json" leaks "$(dump_of clean)"
expect_eq "clean: leak classes" \
	"$(jget "$T/clean.leaks.json" 'sorted(set((s["kind"], s["class"]) for s in j["leaks"]["sites"]))')" \
	"[('device', 'cache')]"
expect_eq "clean: growth" "$(jget "$T/clean.leaks.json" 'len(j["leaks"]["growth"]["sites"])')" 0
rc=0
"$REPORT" leaks --fail-on-leak "$(dump_of clean)" >/dev/null 2>&1 || rc=$?
expect_eq "clean: gate" "$rc" 0

# Expandable segments: the same figures and verdicts.
run expandable layout PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
figures expandable
expect_eq "expandable: leaked at the KEEP line" "$(leaked_at expandable)" \
	"torch_block leaked $STEPS $(leaked_bytes expandable)"
# memory counted once (issue 19): the CUDA layer's bytes not freed are the segments' (torch's reserved
# bytes), never the 64 GiB address reservation, which is an attribute of the allocation mapped into it
expect_eq "expandable: CUDA layer not freed == reserved" \
	"$(jget "$T/expandable.leaks.json" 'j["leaks"]["bytes"]')" \
	"$(jget "$T/expandable.json" 'j["stats"]["0"][2]')"
expect_eq "expandable: the reservation, an attribute" \
	"$(jget "$T/expandable.leaks.json" '(sum(s.get("address_space", {}).get("reserved_bytes", 0) for s in j["leaks"]["sites"]), [s["kind"] for s in j["leaks"]["sites"] if s["kind"].startswith("vmm_r")])')" \
	"(68719476736, [])"

# cudaMallocAsync: one CUDA call per tensor, no trace events; the same verdict at the same line.
run async layout PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
expect_eq "async: leaked at the KEEP line" "$(leaked_at async)" "device leaked $STEPS $((STEPS * 4 << 20))"
expect_eq "async: nothing else leaked (the weights are held, then freed by the teardown)" \
	"$(jget "$T/async.leaks.json" 'len([s for s in j["leaks"]["sites"] if s["class"] != "cache"])')" 1
# PyTorch's allocated bytes without its cache: the peak is the backend's own peak (memory_stats)
report "$T/async.peak.json" peak "$(dump_of async)"
expect_eq "async: peak allocated == the backend's peak allocated" \
	"$(jget "$T/async.peak.json" '[(x["setting"], x["device"], x["peak_allocated_bytes"]) for x in j["peak"]["pytorch_uncached"]]')" \
	"[('backend:cudaMallocAsync', 0, $(jget "$T/async.json" 'j["stats"]["0"][1]'))]"
"$REPORT" peak "$(dump_of async)" | grep -q "^  PyTorch without its caching allocator (backend:cudaMallocAsync: each tensor a CUDA allocation), device 0: peak allocated .* ($(jget "$T/async.json" 'j["stats"]["0"][1]') bytes) at " ||
	fail "async: peak text"
echo "ok: async peak text"
# two dumps merged (ranks by position): the framework layer's peaks, a line per rank
"$REPORT" peak "$(dump_of keep)" "$(dump_of async)" >"$T/merged.peak.txt"
expect_eq "merged peak: the framework layer's lines" \
	"$(grep -A2 '^the framework layer, each rank' "$T/merged.peak.txt" | sed 's/ at [0-9.]* ms//g; s/ ([0-9]* bytes)//g')" \
	"the framework layer, each rank's peaks (the tensors live at each: --per-dump):
  rank 0: PyTorch, device 0: peak allocated $(jget "$T/keep.json" 'j["stats"]["0"][1]' | awk '{printf "%.1f MiB", $1 / 1048576}'), peak reserved $(jget "$T/keep.json" 'j["stats"]["0"][3]' | awk '{printf "%.1f MiB", $1 / 1048576}')
  rank 1: PyTorch without its caching allocator (backend:cudaMallocAsync: each tensor a CUDA allocation), device 0: peak allocated $(jget "$T/async.json" 'j["stats"]["0"][1]' | awk '{printf "%.1f MiB", $1 / 1048576}')"

# OOM: PyTorch's out-of-memory, with the tensors live then.
traced oom env TORCH_FAKE_STEPS=2 python3 "$DRIVER" "$FAKE" "$site" basic "$T/oom.json" 2>"$T/oom.err" ||
	fail "oom: the driver failed"
report "$T/oom.oom.json" oom "$(dump_of oom)"
expect_eq "oom: framework" \
	"$(jget "$T/oom.oom.json" '[(x["framework"], x["device"], x["size"] >= 1 << 40, len(x["sites"]) > 0) for x in j["oom"]["framework"]]')" \
	"[('pytorch', 0, True, True)]"
"$REPORT" oom "$(dump_of oom)" | grep -q "^PyTorch failure 1 at .*: asked 1.0 TiB" || fail "oom text"
echo "ok: oom text"

# memviz: PyTorch's own segments with the blocks inside them and torch's trace actions,
# read by the viewer's code (check_memviz.py); the blocks still allocated are the tensors
# held at the exit point.
for rn in keep expandable oom; do
	"$REPORT" memviz -o "$T/$rn.pickle" "$(dump_of "$rn")" || fail "$rn: memviz exited $?"
	python3 "$ROOT/tests/e2e/check_memviz.py" "$T/$rn.pickle" "$T/$rn.mv.json" || fail "$rn: check_memviz.py rejected it"
done
for rn in keep expandable; do
	report "$T/$rn.sum.json" summary "$(dump_of "$rn")"
	python3 - "$T/$rn.mv.json" "$T/$rn.json" "$T/$rn.sum.json" "$T/$rn.pickle" <<'PY' || fail "$rn: memviz blocks"
import json, pickle, sys
mv, stats = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["stats"]["0"]
api = json.load(open(sys.argv[3]))["summary"]["framework"]["by_api"]
snap = pickle.load(open(sys.argv[4], "rb"))
seg_action = "segment_map" if "torch_segment_map" in api else "segment_alloc"
got = (mv["allocated_bytes"], mv["segment_bytes"], mv["actions"][0].get(seg_action), mv["actions"][0]["alloc"],
       sorted({b["state"] for s in snap["segments"] for b in s["blocks"]}),
       all(sum(b["size"] for b in s["blocks"]) == s["total_size"] for s in snap["segments"]))
want = (stats[0], stats[2], api.get("torch_" + seg_action), api["torch_alloc"],
        ["active_allocated", "active_pending_free", "inactive"], True)
print("ok" if got == want else "FAIL", "allocated, reserved, segment and alloc actions, block states, blocks tile their segment:", got, "want", want)
sys.exit(got != want)
PY
done
python3 - "$T/oom.pickle" "$T/oom.oom.json" <<'PY' || fail "oom: memviz free bytes"
import json, pickle, sys
snap, o = pickle.load(open(sys.argv[1], "rb")), json.load(open(sys.argv[2]))["oom"]
got = sorted(e["device_free"] for t in snap["device_traces"] for e in t if e["action"] == "oom")
want = sorted([f["device_free_bytes"] for f in o["framework"]] + [f["free_bytes"] for f in o["failures"]])
print("ok" if got == want and all(got) else "FAIL", "oom: the free bytes of each failure:", got, "want", want)
sys.exit(got != want or not all(got))
PY
