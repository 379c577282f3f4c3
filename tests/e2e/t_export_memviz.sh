# The memviz exporter on traced programs: a torch memory snapshot pickle that
# passes tests/e2e/check_memviz.py (what torch's _memory_viz.py and
# MemoryViz.js read), with the device allocations live at the end as
# segments and every allocation and free in the trace.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
CHECK=$ROOT/tests/e2e/check_memviz.py
traced basic "$PROGS/basic" >/dev/null
traced demo "$PROGS/demo_train" >/dev/null
NVTX_INJECTION64_PATH=$SHIM traced nv "$PROGS/nvtx_ranges" >/dev/null
basic=$(dump_of basic)
demo=$(dump_of demo)

"$REPORT" memviz -o "$T/basic.pickle" "$basic" || fail "memviz exited $?"
python3 "$CHECK" "$T/basic.pickle" "$T/basic.sum" || fail "check_memviz.py rejected basic"
report "$T/basic.json" leaks --top 0 "$basic"
# segments: the device leaks (kind device), per device
expect_eq segments_by_device "$(jget "$T/basic.sum" 'sorted((int(d), v[0], v[1]) for d, v in j["segments_by_device"].items())')" \
	"$(jget "$T/basic.json" 'sorted((d, sum(s["count"] for s in j["leaks"]["sites"] if s["kind"] == "device" and s["device"] == d), sum(s["bytes"] for s in j["leaks"]["sites"] if s["kind"] == "device" and s["device"] == d)) for d in set(s["device"] for s in j["leaks"]["sites"] if s["kind"] == "device"))')"
# the trace: each device allocation is segment_alloc + alloc, each free three entries
expect_eq actions "$(jget "$T/basic.sum" 'j["actions"]')" \
	"[{'alloc': 17, 'free_completed': 13, 'free_requested': 13, 'oom': 1, 'segment_alloc': 17, 'segment_free': 13}, {'alloc': 1, 'segment_alloc': 1}]"
expect_eq oom "$(jget "$T/basic.sum" 'j["ooms"]')" "[[68719476736], []]"
# the viewer's timelines end with the live bytes and peak at the device peak
expect_eq views "$(jget "$T/basic.sum" '[tuple(j["views"][d]["blocks"]) for d in ("0", "1")]')" \
	"[(6301696, 5253120), (5242880, 5242880)]"
expect_eq leak_frames "$(jget "$T/basic.sum" 'sorted(set(f.split(";")[0] for f in j["block_frames"]))')" "['leak_device', 'main']"

"$REPORT" memviz -o "$T/demo.pickle" "$demo" || fail "memviz demo exited $?"
python3 "$CHECK" "$T/demo.pickle" "$T/demo.sum" || fail "check_memviz.py rejected demo"
report "$T/demo.json" summary "$demo"
expect_eq demo_peak "$(jget "$T/demo.sum" 'j["views"]["0"]["blocks"][0]')" \
	"$(jget "$T/demo.json" 'j["summary"]["kinds"]["device"]["devices"]["0"]["peak_bytes"]')"
expect_eq demo_segments "$(jget "$T/demo.sum" '(j["segments"], j["segment_bytes"])')" "(4, 8388608)"
expect_eq demo_allocs "$(jget "$T/demo.sum" 'j["actions"][0]["alloc"]')" \
	"$(jget "$T/demo.json" 'j["summary"]["kinds"]["device"]["allocations"]')"

# demo's 40 marks "step N": a START and an END each, at one time, in order
expect_eq demo_annotations "$(jget "$T/demo.sum" '[(n, s) for n, s, d, t in j["annotations"]] == [("step %d" % i, s) for i in range(40) for s in ("START", "END")] and all(a[3] == b[3] for a, b in zip(j["annotations"][::2], j["annotations"][1::2]))')" True

# NVTX push/pop, start/end and marks, on the trace entries' clock: the range around the
# cudaMalloc starts before its alloc entry, the mark after it; the cudaFree is inside ex-range
"$REPORT" memviz -o "$T/nv.pickle" "$(dump_of nv)" || fail "memviz nv exited $?"
python3 "$CHECK" "$T/nv.pickle" "$T/nv.sum" || fail "check_memviz.py rejected nv"
expect_eq nvtx_annotations "$(jget "$T/nv.sum" '[(n, s, d) for n, s, d, t in j["annotations"]]')" \
	"[('outer', 'START', 0), ('inner', 'START', 0), ('allocated', 'START', 0), ('allocated', 'END', 0), ('inner', 'END', 0), ('ex-range', 'START', 0), ('ex-range', 'END', 0), ('outer', 'END', 0), ('worker', 'START', 0), ('worker-mark', 'START', 0), ('worker-mark', 'END', 0), ('worker', 'END', 0)]"
expect_eq nvtx_clock "$(jget "$T/nv.sum" '(lambda a, e: (a["inner", "START"] <= e["alloc"] <= a["allocated", "START"], a["ex-range", "START"] <= e["free_completed"] <= a["ex-range", "END"]))({(n, s): t for n, s, d, t in j["annotations"]}, dict(j["trace_times"][0]))')" "(True, True)"

# --max-entries: the latest entries, the overflow said in allocator_settings
"$REPORT" memviz --max-entries 101 -o "$T/demo101.pickle" "$demo" || fail "--max-entries exited $?"
python3 "$CHECK" "$T/demo101.pickle" "$T/demo101.sum" || fail "check_memviz.py rejected demo101"
expect_eq kept "$(jget "$T/demo101.sum" 'sum(j["actions"][0].values())')" 101
expect_eq overflowed "$(jget "$T/demo101.sum" '(j["allocator_settings"]["trace_alloc_max_entries"], j["allocator_settings"]["trace_alloc_overflowed"])')" "(101, True)"
expect_eq annotations_kept "$(jget "$T/demo101.sum" '(len(j["annotations"]), j["annotations"][-1][0], j["allocator_settings"]["external_annotations_overflowed"])')" "(80, 'step 39', False)"
# ... and annotations the same way: 31 kept, the first an END whose START is gone
"$REPORT" memviz --max-entries 31 -o "$T/demo31.pickle" "$demo" || fail "--max-entries 31 exited $?"
python3 "$CHECK" "$T/demo31.pickle" "$T/demo31.sum" || fail "check_memviz.py rejected demo31"
expect_eq annotations_ring "$(jget "$T/demo31.sum" '(len(j["annotations"]), j["annotations"][0][:2], j["allocator_settings"]["external_annotations_overflowed"])')" "(31, ['step 24', 'END'], True)"
expect_eq same_segments "$(jget "$T/demo101.sum" 'j["segment_bytes"]')" 8388608

# Python frames only, when the stack has them
if python3 -c 'import ctypes' 2>/dev/null; then
	script=$ROOT/tests/e2e/py_leaky.py
	line=$(grep -n 'LEAK-LINE' "$script" | cut -d: -f1)
	traced py python3 "$script" "$FAKE"
	"$REPORT" memviz -o "$T/py.pickle" "$(dump_of py)" || fail "memviz python exited $?"
	python3 "$CHECK" "$T/py.pickle" "$T/py.sum" || fail "check_memviz.py rejected py"
	expect_eq python_frames "$(python3 -c 'import pickle,sys; d=pickle.load(open(sys.argv[1],"rb")); print([(f["filename"], f["line"], f["name"]) for f in d["segments"][0]["blocks"][0]["frames"]][0])' "$T/py.pickle")" \
		"('$script', $line, 'leaky')"
	expect_eq python_only "$(jget "$T/py.sum" 'j["block_frames"]')" "['leaky;Holder.grab;main;<module>']"
fi

"$REPORT" memviz "$basic" "$demo" 2>"$T/err" && fail "two dumps accepted"
grep -q "memviz needs exactly 1 dump file " "$T/err" || fail "unexpected error: $(cat "$T/err")"
echo "ok: one dump only"
# The command the GPU check runs (docs/report.md): torch's own tool, where torch is installed.
if python3 -c 'import torch' 2>/dev/null; then
	python3 -m torch.cuda._memory_viz trace_plot "$T/basic.pickle" -o "$T/trace.html" || fail "torch trace_plot failed"
	python3 -m torch.cuda._memory_viz segment_plot "$T/basic.pickle" -o "$T/segments.html" || fail "torch segment_plot failed"
	python3 -m torch.cuda._memory_viz stats "$T/basic.pickle" >/dev/null || fail "torch stats failed"
	echo "ok: torch's _memory_viz reads it"
fi
