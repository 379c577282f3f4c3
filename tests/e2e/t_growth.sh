# Growth leaks: a loop that keeps 1 MiB per iteration in a list (freed before
# exit, so no leak at exit) is found across cumtrace_mark instants, NVTX
# push/pop ranges and NVTX start/end ranges; the steady cache of the same
# loop (libtorch_cuda.so stand-in) and a buffer freed in each iteration are
# not. Then a Python training loop through ctypes.
. tests/e2e/lib.sh
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
keep_line=$(grep -n 'CHECK(cudaMalloc(&kept\[i\], 1 \* MiB));' tests/e2e/progs/growth.c | cut -d: -f1)
sites='[(s["grew_steps"], s["window_steps"], s["growth_bytes"], s["live_bytes_before"], s["live_bytes_last"], s["stack"][0]["function"], s["stack"][0]["line"]) for s in j["leaks"]["growth"]["sites"]]'
for mode in mark nvtx startend; do
	NVTX_INJECTION64_PATH=$SHIM traced "g$mode" "$PROGS/growth" "$mode"
	report "$T/$mode.json" leaks "$(dump_of "g$mode")"
	case $mode in
	mark) want_series="[('step', 'instant', -1, 13, 12)]" before=4194304 ;;
	nvtx) want_series="[('iteration', 'range', 1, 12, 11)]" before=4194304 ;;
	startend) want_series="[('iteration', 'start/end', -1, 12, 11)]" before=4194304 ;;
	esac
	expect_eq "${mode}_series" \
		"$(jget "$T/$mode.json" '[(s["name"], s["kind"], s["depth"], s["boundaries"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" \
		"$want_series"
	# one site: 8 of the last 8 steps, +8 MiB, 4 -> 12 MiB; the cache and the temporary are not there
	expect_eq "${mode}_sites" "$(jget "$T/$mode.json" "$sites")" \
		"[(8, 8, 8388608, $before, 12582912, 'keep', $keep_line)]"
	expect_eq "${mode}_no_exit_leak_of_the_list" \
		"$(jget "$T/$mode.json" '[(s["class"], s["bytes"]) for s in j["leaks"]["sites"]]')" "[('cache', 8388608)]"
	# growth fails the gate only when asked for
	expect_eq "${mode}_gate_default" "$(code "$REPORT" leaks --fail-on-leak "$(dump_of "g$mode")")" 0
	expect_eq "${mode}_gate_growth" "$(code "$REPORT" leaks --fail-on=growth "$(dump_of "g$mode")")" 1
	expect_eq "${mode}_reason" "$(cat "$T/err.txt")" \
		"cumtrace-report: gate failed: 1 leak site fails (growth: 1 site, +8.0 MiB), not suppressed"
done
# The gate finds growth with any command (the analysis is added for it).
expect_eq gate_growth_summary "$(code "$REPORT" summary --fail-on=growth "$(dump_of gmark)")" 1
# --growth K/N: a window of 12 steps, all of them growing
report "$T/w12.json" leaks --growth 12/12 "$(dump_of gmark)"
expect_eq window12 "$(jget "$T/w12.json" '[(s["grew_steps"], s["growth_bytes"]) for s in j["leaks"]["growth"]["sites"]]')" \
	"[(12, 12582912)]"
# --steps epoch: one boundary, no step, nothing reported
report "$T/epoch.json" leaks --steps epoch "$(dump_of gnvtx)"
expect_eq epoch_series "$(jget "$T/epoch.json" '[(s["name"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" "[('epoch', 0)]"
expect_eq epoch_sites "$(jget "$T/epoch.json" 'j["leaks"]["growth"]["sites_total"]')" 0
"$REPORT" leaks "$(dump_of gmark)" >"$T/mark.txt"
grep -q '^growth across "step" (instants, 12 steps; growing: live bytes rose in at least 6 of the last 8 steps): 1 site, +8.0 MiB$' "$T/mark.txt" ||
	fail "growth headline: $(grep growth "$T/mark.txt")"
grep -q '^#1   +8.0 MiB over the last 8 steps, rose in 8 (4.0 MiB -> 12.0 MiB live) (device, cudaMalloc)$' "$T/mark.txt" ||
	fail "growth site line"
echo "ok: text"
for bad in 0/8 7/6 1/33 x 3/ /4; do
	expect_eq "growth_option_$bad" "$(code "$REPORT" leaks --growth "$bad" "$(dump_of gmark)")" 2
done

# Python: the list that grows is found at its line, the steady cache is not.
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
script=$ROOT/tests/e2e/py_growth.py
line=$(grep -n 'GROWTH-LINE' "$script" | cut -d: -f1)
traced py python3 "$script" "$FAKE" "$ROOT/$BUILD/tests/libs"
report "$T/py.json" leaks "$(dump_of py)"
expect_eq py_series "$(jget "$T/py.json" '[(s["name"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" "[('iteration', 10)]"
expect_eq py_growth "$(jget "$T/py.json" '[(s["grew_steps"], s["growth_bytes"], s["class"]) for s in j["leaks"]["growth"]["sites"]]')" \
	"[(8, 8388608, 'growth')]"
expect_eq py_frame \
	"$(jget "$T/py.json" '[(f["file"], f["function"], f["line"]) for f in j["leaks"]["growth"]["sites"][0]["stack"] if f.get("python")][0]')" \
	"('$script', 'train_step', $line)"
# Marks named with the iteration's number ("step 0" .. "step 10", "epoch 3/10") are one series
# ("step #"), for growth and for the peak's phases; --steps takes the series name or a glob.
traced pynum env PY_GROWTH_MARK="step %d" python3 "$script" "$FAKE" "$ROOT/$BUILD/tests/libs"
report "$T/pynum.json" leaks "$(dump_of pynum)"
expect_eq pynum_series "$(jget "$T/pynum.json" '[(s["name"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" "[('step #', 10)]"
expect_eq pynum_growth "$(jget "$T/pynum.json" '[(s["grew_steps"], s["growth_bytes"]) for s in j["leaks"]["growth"]["sites"]]')" \
	"[(8, 8388608)]"
report "$T/pynum-glob.json" leaks --steps 'step*' "$(dump_of pynum)"
expect_eq pynum_glob "$(jget "$T/pynum-glob.json" '[(s["name"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" "[('step #', 10)]"
report "$T/pynum-peak.json" peak "$(dump_of pynum)"
expect_eq pynum_phases "$(jget "$T/pynum-peak.json" '[(p["name"], p["count"]) for p in j["peak"]["phases"] if p["kind"] == "mark"]')" "[('step #', 11)]"
traced pyfrac env PY_GROWTH_MARK="epoch %d/10" python3 "$script" "$FAKE" "$ROOT/$BUILD/tests/libs"
report "$T/pyfrac.json" leaks "$(dump_of pyfrac)"
expect_eq pyfrac_series "$(jget "$T/pyfrac.json" '[(s["name"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" "[('epoch #', 10)]"

# at exit the list is a plain leak of the user's code, the cache is PyTorch's
expect_eq py_exit "$(jget "$T/py.json" '[(s["class"], s["allocator"], s["count"]) for s in j["leaks"]["sites"]]')" \
	"[('leaked', None, 10), ('cache', 'pytorch', 1)]"
