# The exporters' golden files (tests/golden/export-*, the expected outputs of
# the golden cases tests/golden/cases/export-*, from a synthetic dump) pass the format checkers
# and hold what that dump says; and each checker rejects a broken file.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
G=$ROOT/tests/golden
E=$ROOT/tests/e2e
python3 "$E/check_perfetto.py" "$G/export-perfetto.json" "$T/p.sum" || fail "perfetto golden rejected"
python3 "$E/check_perfetto.py" "$G/export-perfetto-1ms.json" "$T/p1.sum" || fail "perfetto 1 ms golden rejected"
expect_eq golden_counters "$(jget "$T/p.sum" 'sorted((k, v["max"], v["last"]) for k, v in j["counters"].items())')" \
	"[('4242/device 0 live bytes', 14680064, 16384), ('4242/device 1 live bytes', 1572864, 0), ('4242/host_pinned 0 live bytes', 65536, 65536)]"
expect_eq golden_counter_cats "$(jget "$T/p.sum" 'sorted(set(v["cat"] for v in j["counters"].values()))')" "['memory']"
expect_eq golden_1ms_counters "$(jget "$T/p1.sum" 'sorted((k, v["max"], v["last"]) for k, v in j["counters"].items())')" \
	"$(jget "$T/p.sum" 'sorted((k, v["max"], v["last"]) for k, v in j["counters"].items())')"
expect_eq golden_slice_ends "$(jget "$T/p.sum" 'sorted(j["slice_ends"].items())')" \
	"[('address allocated again (free not seen)', 1), ('freed by cudaFree', 2), ('live at cudaDeviceReset', 2), ('live at exit', 2)]"
expect_eq golden_nvtx "$(jget "$T/p.sum" '([(n["tid"], n["name"]) for n in j["nested"]], [(r["name"], r["b_tid"], r["e_tid"]) for r in j["ranges"]])')" \
	"([(1, 'epoch'), (2, 'tail')], [('load \"data\"', 2, 1)])"
expect_eq golden_unmatched "$(jget "$T/p.sum" '(j["otherData"]["unmatched_range_pops"], j["otherData"]["unmatched_range_ends"])')" "(1, 1)"
expect_eq golden_oom "$(jget "$T/p.sum" '[(o["name"], o["args"]["site"]) for o in j["ooms"]]')" "[('OOM cudaMalloc 1.0 GiB', 'prog+0x3000')]"
for f in leaks peak allocs; do
	python3 "$E/check_flame.py" folded "$G/export-$f.folded" "$T/$f.sum" || fail "$f golden rejected"
done
expect_eq golden_flame_totals "$(jget "$T/leaks.sum" 'j["total"]'),$(jget "$T/peak.sum" 'j["total"]'),$(jget "$T/allocs.sum" 'j["total"]')" \
	"$(((16 << 10) + (1 << 20) + (512 << 10) + (64 << 10))),$(((8 + 4 + 2) << 20)),$(((8 + 4 + 2 + 1) * 1048576 + (512 << 10) + (16 << 10) + (64 << 10)))"
python3 "$E/check_flame.py" speedscope "$G/export-allocs.speedscope.json" "$T/ss.sum" || fail "speedscope golden rejected"
expect_eq golden_speedscope_is_folded "$(jget "$T/ss.sum" 'j["profiles"][0]["stacks"] == json.load(open("'"$T/allocs.sum"'"))["profiles"][0]["stacks"]')" True
python3 -c 'import sys
raw = bytearray()
for line in open(sys.argv[1]):
    raw += bytes.fromhex(line[8:56])
open(sys.argv[2], "wb").write(raw)' "$G/export-memviz.pickle.hex" "$T/golden.pickle"
python3 "$E/check_memviz.py" "$T/golden.pickle" "$T/m.sum" || fail "memviz golden rejected"
expect_eq golden_segments "$(jget "$T/m.sum" '(j["segments_by_device"], j["block_frames"])')" \
	"({'0': [1, 16384]}, ['prog+0x2000;libc.so.6+0x271ca'])"
# NVTX ranges and marks as torch's external annotations: a START and an END each (an instant both at
# once), the pop and end without a range left out, "tail" ended with the dump; the device of the
# thread's latest event (tid 2 was on device 1 at 4.6 ms, on device 0 at the end)
expect_eq golden_annotations "$(jget "$T/m.sum" '[(n, s, d, t - 1700000000000000) for n, s, d, t in j["annotations"]]')" \
	"[('epoch', 'START', 0, 500), ('checkpoint', 'START', 0, 1500), ('checkpoint', 'END', 0, 1500), ('load \"data\"', 'START', 0, 1600), ('load \"data\"', 'END', 0, 3100), ('epoch', 'END', 0, 4500), ('tail', 'START', 1, 4600), ('tail', 'END', 0, 6000)]"
expect_eq golden_actions "$(jget "$T/m.sum" 'j["actions"]')" \
	"[{'alloc': 4, 'free_completed': 3, 'free_requested': 3, 'oom': 1, 'segment_alloc': 4, 'segment_free': 3}, {'alloc': 2, 'free_completed': 2, 'free_requested': 2, 'segment_alloc': 2, 'segment_free': 2}]"

# Each checker fails on a broken file (so that it can fail).
rejects() { # what, checker args...
	what=$1
	shift
	if python3 "$@" >/dev/null 2>"$T/err"; then fail "checker accepted $what"; fi
	echo "ok: rejects $what: $(head -n 1 "$T/err")"
}
mutate() { # src dst python-expression-over-text
	python3 -c 'import sys; t=open(sys.argv[1]).read(); open(sys.argv[2],"w").write(eval(sys.argv[3]))' "$1" "$2" "$3"
}
mutate "$G/export-perfetto.json" "$T/m1.json" 't.replace("\"ph\":\"e\",\"pid\":4242,\"tid\":1,\"cat\":\"alloc.host_pinned\",\"id\":\"0:0\"", "\"ph\":\"e\",\"pid\":4242,\"tid\":1,\"cat\":\"alloc.host_pinned\",\"id\":\"0:9\"", 1)'
rejects "a b without its e" "$E/check_perfetto.py" "$T/m1.json"
mutate "$G/export-perfetto.json" "$T/m2.json" 't.replace("\"ts\":3000.000,\"ph\":\"C\"", "\"ts\":500.000,\"ph\":\"C\"", 1)'
rejects "counter ts going back" "$E/check_perfetto.py" "$T/m2.json"
mutate "$G/export-perfetto.json" "$T/m3.json" 't.replace("{\"ts\":4500.000,\"ph\":\"E\",\"pid\":4242,\"tid\":1}", "{\"ph\":\"E\",\"ts\":4500.000,\"pid\":4242,\"tid\":1,\"x\":[1]}", 1)'
rejects "ts not first and an array value" "$E/check_perfetto.py" "$T/m3.json"
mutate "$G/export-perfetto.json" "$T/m4.json" 't.replace("\"args\":{\"bytes\":65536}", "\"args\":{\"bytes\":65536,\"more\":1}", 1)'
rejects "a counter with two args" "$E/check_perfetto.py" "$T/m4.json"
mutate "$G/export-perfetto.json" "$T/m4b.json" 't.replace("\n\"otherData\":", "\n\"displayTimeUnit\":\"ns\",\n\"otherData\":", 1)'
rejects "displayTimeUnit (older Perfetto reads it as the unit of ts)" "$E/check_perfetto.py" "$T/m4b.json"
mutate "$G/export-perfetto.json" "$T/m4c.json" 't.replace("\"ph\":\"C\",\"pid\":4242,\"cat\":\"memory\",", "\"ph\":\"C\",\"pid\":4242,", 1)'
rejects "a counter without a category" "$E/check_perfetto.py" "$T/m4c.json"
mutate "$G/export-allocs.folded" "$T/m5.folded" 't.replace(" 524288\n", " -1\n", 1)'
rejects "a negative folded value" "$E/check_flame.py" folded "$T/m5.folded"
mutate "$G/export-allocs.speedscope.json" "$T/m6.json" 't.replace("\"unit\":\"bytes\"", "\"unit\":\"octets\"", 1)'
rejects "an unknown speedscope unit" "$E/check_flame.py" speedscope "$T/m6.json"
mutate "$G/export-allocs.speedscope.json" "$T/m7.json" 't.replace("\"endValue\":16334848", "\"endValue\":16334849", 1)'
rejects "weights not adding up to endValue" "$E/check_flame.py" speedscope "$T/m7.json"
mutate "$G/export-allocs.speedscope.json" "$T/m7b.json" 't.replace("\"line\":20", "\"line\":0", 1)'
rejects "a speedscope frame at line 0" "$E/check_flame.py" speedscope "$T/m7b.json"
mutate "$G/export-allocs.speedscope.json" "$T/m7c.json" 't.replace("\"name\":\"<module>\"", "\"title\":\"<module>\"", 1)'
rejects "a speedscope frame without a name (the schema)" "$E/check_flame.py" speedscope "$T/m7c.json"
python3 -c 'import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
del d["device_traces"][0][-1]  # the segment_free of 0x30000: undoing its free finds no segment
open(sys.argv[2], "wb").write(pickle.dumps(d, protocol=2))' "$T/golden.pickle" "$T/m8.pickle"
rejects "a block outside every segment" "$E/check_memviz.py" "$T/m8.pickle"
python3 -c 'import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
d["allocator_settings"]["streams"] = {0}  # a set: EMPTY_SET, ADDITEMS
open(sys.argv[2], "wb").write(pickle.dumps(d, protocol=4))' "$T/golden.pickle" "$T/m9.pickle"
rejects "opcodes MemoryViz.js does not read" "$E/check_memviz.py" "$T/m9.pickle"
python3 -c 'import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
del d["device_traces"][0][4]["device_free"]
open(sys.argv[2], "wb").write(pickle.dumps(d, protocol=2))' "$T/golden.pickle" "$T/m10.pickle"
rejects "an oom entry without device_free" "$E/check_memviz.py" "$T/m10.pickle"
for m in 'del a[0]' 'del a[-1]' 'a[1]["time_us"] = 1' 'a[2]["stage"] = "STOP"' 'a[0]["thread"] = 1' \
	'a.insert(0, dict(a[-1]))'; do
	python3 -c 'import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
a = d["external_annotations"]
exec(sys.argv[3])
open(sys.argv[2], "wb").write(pickle.dumps(d, protocol=2))' "$T/golden.pickle" "$T/m11.pickle" "$m"
	rejects "annotations: $m" "$E/check_memviz.py" "$T/m11.pickle"
done
