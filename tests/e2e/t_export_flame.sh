# The flamegraph exporter on traced programs: folded stacks and speedscope
# files that pass tests/e2e/check_flame.py, whose values add up to the
# reports' totals exactly, and that say the same thing as each other.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
CHECK=$ROOT/tests/e2e/check_flame.py
traced basic "$PROGS/basic" >/dev/null
traced demo "$PROGS/demo_train" >/dev/null
basic=$(dump_of basic)
demo=$(dump_of demo)

for d in basic demo; do
	eval dump=\$$d
	report "$T/$d.json" leaks "$dump"
	for of in leaks peak allocs; do
		case $of in
		leaks) want=$(jget "$T/$d.json" 'j["leaks"]["bytes"]') ;;
		peak) want=$(jget "$T/$d.json" 'j["peak"]["bytes"]') ;;
		allocs) want=$(jget "$T/$d.json" 'sum(k["bytes_allocated"] for k in j["summary"]["kinds"].values())') ;;
		esac
		"$REPORT" flamegraph --of "$of" "$dump" >"$T/$d.$of.folded" || fail "flamegraph --of $of exited $?"
		"$REPORT" flamegraph --of "$of" --format speedscope -o "$T/$d.$of.ss.json" "$dump" ||
			fail "flamegraph --format speedscope exited $?"
		python3 "$CHECK" folded "$T/$d.$of.folded" "$T/$d.$of.f.sum" || fail "folded $d $of rejected"
		python3 "$CHECK" speedscope "$T/$d.$of.ss.json" "$T/$d.$of.s.sum" || fail "speedscope $d $of rejected"
		expect_eq "$d --of $of folded total" "$(jget "$T/$d.$of.f.sum" 'j["total"]')" "$want"
		expect_eq "$d --of $of speedscope total" "$(jget "$T/$d.$of.s.sum" 'j["total"]')" "$want"
		# (function by function: speedscope's native frames are one per line, folded's one per function)
		expect_eq "$d --of $of same stacks" \
			"$(jget "$T/$d.$of.s.sum" 'j["profiles"][0]["by_function"] == json.load(open("'"$T/$d.$of.f.sum"'"))["profiles"][0]["by_function"]')" True
	done
done
# basic: the leak sites, by function, with the call's leaf frame
expect_eq basic_leak_leaves \
	"$(jget "$T/basic.leaks.f.sum" 'sorted((s.split(";")[-2], s.split(";")[-1], v) for s, v in j["profiles"][0]["stacks"].items())')" \
	"[('leak_device', '[cudaMalloc device dev 0]', 5242880), ('leak_device', '[cudaMalloc device dev 1]', 5242880), ('leak_pinned', '[cudaMallocHost host_pinned dev 0]', 65536), ('main', '[cudaHostAlloc host_pinned dev 0]', 131072), ('main', '[cudaMallocManaged managed dev 0]', 262144), ('main', '[cudaMallocPitch device dev 0]', 10240)]"
# demo at its peak: weights, optimizer state, one step's activations, leaked metrics
expect_eq demo_peak_leaves \
	"$(jget "$T/demo.peak.f.sum" 'sorted((s.split(";")[-2], v) for s, v in j["profiles"][0]["stacks"].items())')" \
	"[('alloc_activations', 58720256), ('alloc_weights', 134217728), ('save_metrics', 8388608), ('train_step', 67108864)]"
# speedscope: the samples in time order (each leak's first allocation), native frames with their lines
expect_eq basic_speedscope_time_order "$(jget "$T/basic.leaks.s.sum" '[tuple(x) for x in j["profiles"][0]["order"]]')" \
	"[('leak_device', 2097152), ('leak_device', 3145728), ('leak_pinned', 65536), ('main', 131072), ('main', 262144), ('main', 10240), ('leak_device', 5242880)]"
src=tests/e2e/progs/basic.c
expect_eq basic_speedscope_lines "$(jget "$T/basic.leaks.ss.json" 'sorted((f["name"], f["file"].endswith("basic.c"), f["line"]) for f in j["shared"]["frames"] if f["name"] in ("leak_device", "leak_pinned"))')" \
	"[('leak_device', True, $(grep -n 'CHECK(cudaMalloc(&p, n));' $src | cut -d: -f1)), ('leak_pinned', True, $(grep -n 'CHECK(cudaMallocHost(&p, n));' $src | cut -d: -f1))]"
expect_eq basic_speedscope_main_lines "$(jget "$T/basic.leaks.ss.json" 'sorted(f["line"] for f in j["shared"]["frames"] if f["name"] == "main")')" \
	"$(grep -n -e 'leak_device(1 \* MiB); /\* site A' -e 'leak_device(3 \* MiB);' -e 'leak_pinned(64 \* 1024);' -e 'cudaHostAlloc(&p, 128' -e 'cudaMallocManaged(&p, 256' -e 'cudaMallocPitch(&p, &pitch' -e 'leak_device(5 \* MiB);' $src | cut -d: -f1 | tr '\n' ',' | sed 's/,$//; s/,/, /g; s/^/[/; s/$/]/')"
# peak and allocs: by each site's first allocation
expect_eq demo_speedscope_allocs_order "$(jget "$T/demo.allocs.s.sum" '[x[0] for x in j["profiles"][0]["order"]]')" \
	"['alloc_weights', 'main', 'alloc_activations', 'train_step', 'save_metrics']"
# root first: every stack starts at _start
expect_eq roots "$(jget "$T/demo.allocs.f.sum" 'sorted(set(s.split(";")[0] for s in j["profiles"][0]["stacks"]))')" "['_start']"

# Two dumps: one root frame per process, the totals add up.
"$REPORT" flamegraph "$basic" "$demo" >"$T/two.folded" || fail "two dumps exited $?"
python3 "$CHECK" folded "$T/two.folded" "$T/two.sum" || fail "two dumps rejected"
expect_eq two_total "$(jget "$T/two.sum" 'j["total"]')" \
	$(($(jget "$T/basic.json" 'j["leaks"]["bytes"]') + $(jget "$T/demo.json" 'j["leaks"]["bytes"]')))
expect_eq two_roots "$(jget "$T/two.sum" 'len(set(s.split(";")[0] for s in j["profiles"][0]["stacks"]))')" 2
"$REPORT" flamegraph --format speedscope "$basic" "$demo" >"$T/two.ss.json" || fail "two dumps speedscope exited $?"
python3 "$CHECK" speedscope "$T/two.ss.json" "$T/two.s.sum" || fail "two dumps speedscope rejected"
expect_eq two_profiles "$(jget "$T/two.s.sum" '[p["total"] for p in j["profiles"]]')" \
	"[$(jget "$T/basic.json" 'j["leaks"]["bytes"]'), $(jget "$T/demo.json" 'j["leaks"]["bytes"]')]"

# Python frames: py-spy style "function (file:line)", outermost first.
if python3 -c 'import ctypes' 2>/dev/null; then
	script=$ROOT/tests/e2e/py_leaky.py
	line=$(grep -n 'LEAK-LINE' "$script" | cut -d: -f1)
	traced py python3 "$script" "$FAKE"
	"$REPORT" flamegraph --python-only "$(dump_of py)" >"$T/py.folded" || fail "python flamegraph exited $?"
	python3 "$CHECK" folded "$T/py.folded" "$T/py.sum" || fail "python folded rejected"
	expect_eq python_stack "$(jget "$T/py.sum" 'list(j["profiles"][0]["stacks"])')" \
		"['<module> ($script:$(grep -n '^main()' "$script" | cut -d: -f1));main ($script:$(grep -n 'Holder().grab()' "$script" | cut -d: -f1));Holder.grab ($script:$(grep -n 'GRAB-LINE' "$script" | cut -d: -f1));leaky ($script:$line);[cudaMalloc device]']"
fi

"$REPORT" flamegraph --of nothing "$demo" 2>"$T/err" && fail "--of nothing accepted"
grep -q "unknown value 'nothing'" "$T/err" || fail "unexpected error: $(cat "$T/err")"
echo "ok: --of nothing refused"
