# A dry run of the GPU kit's cost scripts on the fake CUDA runtime
# (tests/e2e/gpu_scripts_check.py): fw_selftime.py must print every line the
# next GPU session reads (the shim's steady calls, the memo), fw_overhead_ab.py
# and fw_overhead_pair.py their steps/s verdicts and the CPU-time lines. A script's bug found here does not
# cost device time.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
case ${SANITIZE:-} in
*address* | *thread*) echo "the scripts preload the kit's shim alone (no sanitizer runtime)"; exit 77 ;;
esac
# run_to FILE CMD...: CMD's output (both streams) in FILE, shown; its exit status in rc.
run_to() {
	out=$1
	shift
	set +e
	"$@" >"$out" 2>&1
	rc=$?
	set -e
	cat "$out"
}
kit=$T/kit
mkdir -p "$kit/lib"
ln -s "$SHIM" "$kit/libcumtrace.so"
ln -s "$FAKE/libcudart.so.13" "$FAKE/libcuda.so.1" "$kit/lib/"
for what in selftime ab pair; do
	python3 "$ROOT/tests/e2e/gpu_scripts_check.py" "$what" "$kit" "$T/$what" >"$T/$what.txt" 2>&1 ||
		{ cat "$T/$what.txt"; fail "$what: the dry run failed"; }
	tail -1 "$T/$what.txt"
done
# The batch's step names reach their scripts (BATCH_DRY=1 prints what would run). Until
# 2026-12-05 "selftime-variants@async" was taken by the "selftime*" branch above it: the
# variants would not have run.
OUT=$T/batch BATCH_DRY=1 bash "$ROOT/tests/gpu/batch.sh" "$kit" selftime-variants@async:400 \
	selftime@async,nocache:200 selftime overhead-ab@async:420 bogus hostbench:120 overhead-pair@async,default:300 \
	overhead-pair@fake:100 >"$T/batch.txt" 2>&1
cat "$T/batch.txt"
expect_eq "batch: selftime-variants@async" "$(sed -n 1p "$T/batch.txt")" \
	"selftime-variants_async 400: bash $ROOT/tests/gpu/selftime_variants.sh $kit async 200 "
expect_eq "batch: selftime@async,nocache" "$(sed -n 2p "$T/batch.txt")" \
	"selftime_async_nocache 200: python3 $ROOT/tests/gpu/fw_selftime.py --kit $kit --out /tmp/selftime --modes async,nocache --steps 300"
expect_eq "batch: selftime" "$(sed -n 3p "$T/batch.txt" | cut -d: -f1)" "selftime 300"
expect_eq "batch: overhead-ab@async" "$(sed -n 4p "$T/batch.txt" | sed 's/ --kit.*//')" \
	"overhead-ab_async 420: python3 $ROOT/tests/gpu/fw_overhead_ab.py"
expect_eq "batch: an unknown step" "$(sed -n 5p "$T/batch.txt")" "batch: unknown step 'bogus'"
expect_eq "batch: hostbench" "$(sed -n 6p "$T/batch.txt")" \
	"hostbench 120: python3 $ROOT/tests/gpu/host_bench.py --kit $kit --reps 4"
expect_eq "batch: overhead-pair@async,default" "$(sed -n 7p "$T/batch.txt")" \
	"overhead-pair_async_default 300: python3 $ROOT/tests/gpu/fw_overhead_pair.py --kit $kit --out /tmp/overhead-pair --modes async,default --history --model mlp4096 --layers off,on --seconds 30 --processes 1"
expect_eq "batch: overhead-pair@fake" "$(sed -n 8p "$T/batch.txt")" \
	"overhead-pair_fake 100: python3 $ROOT/tests/gpu/fw_overhead_pair.py --kit $kit --out /tmp/overhead-pair --workload fake --pages 0 --layers off,on --seconds 30 --processes 1"
# PAIR_ENVS: an --env each; PAIR_TORCH_HISTORY=0: torch's history left out.
OUT=$T/batch2 BATCH_DRY=1 PAIR_TORCH_HISTORY=0 PAIR_ENVS="nopy:CUMTRACE_PYTHON=0 nostack:CUMTRACE_STACK_DEPTH=0" \
	bash "$ROOT/tests/gpu/batch.sh" "$kit" overhead-pair@async:300 >"$T/batch2.txt" 2>&1
expect_eq "batch: overhead-pair with PAIR_ENVS, without torch's history" "$(cat "$T/batch2.txt")" \
	"overhead-pair_async 300: python3 $ROOT/tests/gpu/fw_overhead_pair.py --kit $kit --out /tmp/overhead-pair --modes async --model mlp4096 --env nopy:CUMTRACE_PYTHON=0 --env nostack:CUMTRACE_STACK_DEPTH=0 --layers off,on --seconds 30 --processes 1"
# More than 8 files under $OUT (the device tool brings back no more): the steps' files go into one
# archive, the batch's own three stay beside it; a second such batch takes the next number.
mkdir -p "$T/many/sub"
for i in 1 2 3 4 5 6; do echo "$i" >"$T/many/s$i.txt"; done
echo x >"$T/many/sub/deep.txt"
OUT=$T/many bash "$ROOT/tests/gpu/batch.sh" "$kit" bogus >"$T/many.out" 2>&1
expect_eq "batch: past 8 files, what stays" "$(cd "$T/many" && find . -type f | sort | tr '\n' ' ')" \
	"./batch.txt ./env.txt ./steps-1.tar.gz ./topo.txt "
expect_eq "batch: past 8 files, the archive" "$(tar tzf "$T/many/steps-1.tar.gz" | tr '\n' ' ')" \
	"s1.txt s2.txt s3.txt s4.txt s5.txt s6.txt sub/deep.txt "
expect_eq "batch: past 8 files, said" "$(tail -n 1 "$T/many/batch.txt")" \
	"batch: more than 8 files under $T/many: the steps' files are in steps-1.tar.gz"
for i in 1 2 3 4 5; do echo "$i" >"$T/many/t$i.txt"; done
OUT=$T/many bash "$ROOT/tests/gpu/batch.sh" "$kit" bogus >>"$T/many.out" 2>&1
expect_eq "batch: past 8 files again, what stays" "$(cd "$T/many" && find . -type f | sort | tr '\n' ' ')" \
	"./batch.txt ./env.txt ./steps-1.tar.gz ./steps-2.tar.gz ./topo.txt "
expect_eq "batch: past 8 files again, the archives" \
	"$(tar tzf "$T/many/steps-1.tar.gz" | wc -l) $(tar tzf "$T/many/steps-2.tar.gz" | tr '\n' ' ')" \
	"7 t1.txt t2.txt t3.txt t4.txt t5.txt "
# scripts/gpu-variants.sh: bad usage is one line and exit 2, before anything is built.
for args in "" "kit=HEAD" "a/b=HEAD" "=HEAD" "name"; do
	set +e
	# shellcheck disable=SC2086
	bash "$ROOT/scripts/gpu-variants.sh" $args >"$T/variants.out" 2>"$T/variants.err"
	rc=$?
	set -e
	expect_eq "gpu-variants.sh '$args': exit status" "$rc" 2
	expect_eq "gpu-variants.sh '$args': lines on stderr" "$(wc -l <"$T/variants.err")" 1
done
# host_bench.py runs here as it would there (the fake runtime is what it measures on): the kit's
# shim and a variant (the same shim again), every figure on its lines.
ln -s "$FAKE" "$kit/fake"
mkdir -p "$kit/variants"
ln -s "$SHIM" "$kit/variants/again.so"
python3 "$ROOT/tests/gpu/host_bench.py" --kit "$kit" --pages 0,64 --reps 1 --steps 10 >"$T/host.txt" 2>&1 ||
	{ cat "$T/host.txt"; fail "host_bench.py exited $?"; }
cat "$T/host.txt"
for b in kit again; do
	expect_eq "host_bench: $b's rows (untimed at 0 pages, timed at both)" \
		"$(grep -cE "^  $b +(-?[0-9]+|-) +\| +[0-9]+ \([0-9]+, [0-9]+, [0-9]+\)( +[0-9]+){4} \| +[0-9]+ \| +-?[0-9]+$" "$T/host.txt")" 2
	expect_eq "host_bench: $b's untimed figure at 0 pages" \
		"$(grep -cE "^  $b +-?[0-9]+ +\|" "$T/host.txt")" 1
done
# fw_overhead_pair.py's fake workload (the 18-place loop, no torch) for the kit's shim and the
# variant: one line each, no verdict (the goals are the training loop's).
run_to "$T/pair.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --kit "$kit" --out "$T/pairfake" --workload fake --variants \
	--layers off --seconds 1 --warmup-seconds 0.2 --block-seconds 0.02
expect_eq "pair fake: exit status" "$rc" 0
for b in kit again; do
	expect_eq "pair fake: $b's line" "$(grep -cE "^fake $b off +[0-9]+ pairs of [0-9]+-step blocks, untraced [0-9.]+ steps/s: traced/untraced [0-9.]+ \[[0-9.]+, [0-9.]+\], less the spill-over [0-9.]+ \[[0-9.]+, [0-9.]+\] \| added" "$T/pair.txt")" 1
	# the steady blocks' diagnostic: one traced block after a traced one for every two pairs
	# or so, the first and last pairs aside
	npairs=$(sed -n "s/^fake $b off *\([0-9]*\) pairs .*/\1/p" "$T/pair.txt")
	nsteady=$(sed -n "s/^fake $b off *steps per CPU second.*, steady blocks [0-9.]* \[[0-9.]*, [0-9.]*\] (\([0-9]*\))$/\1/p" "$T/pair.txt")
	expect_eq "pair fake: $b's steady blocks, about half the pairs" \
		"$([ -n "$nsteady" ] && [ $((2 * nsteady)) -ge $((npairs - 3)) ] && [ $((2 * nsteady)) -le "$npairs" ] && echo yes)" yes
done
# Two processes of each configuration, in rounds that start one configuration later: a line per
# process (#1, #2), the second round starting with the variant, and one line per configuration
# over its processes, whose figures are those of its two lines.
run_to "$T/pairn.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --kit "$kit" --out "$T/pairn" --workload fake --variants \
	--layers off --seconds 0.5 --warmup-seconds 0.1 --block-seconds 0.02 --processes 2
expect_eq "pair fake x2: exit status" "$rc" 0
expect_eq "pair fake x2: the processes' order" \
	"$(sed -n 's/^\(fake [a-z]* off #[12]\) *[0-9]* pairs .*/\1/p' "$T/pairn.txt" | tr '\n' ,)" \
	"fake kit off #1,fake again off #1,fake again off #2,fake kit off #2,"
for b in kit again; do
	each=$(sed -n "s/^fake $b off #[12] .*traced\/untraced \([0-9.]*\) \[.*less the spill-over \([0-9.]*\) \[.*/\1\/\2/p" "$T/pairn.txt" | tr '\n' ' ')
	expect_eq "pair fake x2: $b's line over its processes" \
		"$(grep -cE "^fake $b off +over 2 processes \(50% interval\): traced/untraced [0-9.]+ \[[0-9.]+, [0-9.]+\], less the spill-over [0-9.]+ \[[0-9.]+, [0-9.]+\] \| each process: $each\| added per step" "$T/pairn.txt")" 1
done
# --pool: the recorded RAW lines pooled again, with no run: the two kit processes above give the
# figures of the run's own line over them (same each-process list, same medians and interval).
run_to "$T/pool.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --pool ':fake/kit/off/' "$T/pairn.txt"
expect_eq "pool: exit status (fake: no verdict)" "$rc" 0
expect_eq "pool: the run's line over its processes, again" \
	"$(sed -n 's/^pooled *\(over 2 processes.*\)/\1/p' "$T/pool.txt")" \
	"$(sed -n 's/^fake kit off *\(over 2 processes.*\)/\1/p' "$T/pairn.txt")"
expect_eq "pool: a line per process, named by file and line" \
	"$(grep -cE '^pairn\.txt:[0-9]+ fake/kit/off/#[12] +[0-9]+ pairs of' "$T/pool.txt")" 2
# Run 39's eight cudaMallocAsync layer-off processes of one shim build (docs/gpu-results.md):
# recorded 0.9882 [0.9860, 0.9959], 93% interval, undecided at the goal 0.99.
R39=$ROOT/docs/gpu-runs/2026-12-05-run39
run_to "$T/pool39.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --pool '(c1|c2|c4).*:async/(kit|r[2-5])/off|c3.*:async/new/off' \
	"$R39"-c*-overhead-pair-async*.txt
expect_eq "pool: run 39's cudaMallocAsync layer off, exit status (undecided)" "$rc" 1
expect_eq "pool: run 39's cudaMallocAsync layer off, figure" \
	"$(sed -n 's/^pooled *over \(8 processes (93% interval): traced\/untraced [0-9.]* \[[0-9.]*, [0-9.]*\]\).*INCONCLUSIVE (goal 0.99).*/\1/p' "$T/pool39.txt")" \
	"8 processes (93% interval): traced/untraced 0.9882 [0.9860, 0.9959]"
# --env NAME:VAR=VALUE,...: a configuration of the kit's shim with those set in its traced process,
# taken in the rounds with the kit's, a line saying what it is, its own label and RAW line.
# CUMTRACE_DISABLE=1 shows the variables reach that process: it records nothing, so
# cumtrace_bench_pause refuses and its configuration is a FAIL line (and the exit status 1).
run_to "$T/pairenv.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --kit "$kit" --out "$T/pairenv" --workload fake \
	--layers off --seconds 0.5 --warmup-seconds 0.1 --block-seconds 0.02 --env nostack:CUMTRACE_STACK_DEPTH=0 \
	--env disabled:CUMTRACE_DISABLE=1,CUMTRACE_QUIET=1
expect_eq "pair env: exit status (one configuration records nothing)" "$rc" 1
expect_eq "pair env: what each configuration is" "$(grep '^configuration ' "$T/pairenv.txt" | tr '\n' '|')" \
	"configuration nostack: the kit's shim with CUMTRACE_STACK_DEPTH=0 in its traced process|configuration disabled: the kit's shim with CUMTRACE_DISABLE=1 CUMTRACE_QUIET=1 in its traced process|"
for b in kit nostack; do
	expect_eq "pair env: $b's line and RAW line" \
		"$(grep -cE "^fake $b off +[0-9]+ pairs of [0-9]+-step blocks|^RAW fake/$b/off \{" "$T/pairenv.txt")" 2
done
expect_eq "pair env: the variables reached the traced process" \
	"$(grep -c '^FAIL fake disabled off: cumtrace_bench_pause returned an error: this process does not record$' "$T/pairenv.txt")" 1
# Runs 39, 41 and 42 together (the same binary): the 25 processes the README's cost table gives,
# 0.9875 [0.9825, 0.9948], 96% interval, undecided.
R41=$ROOT/docs/gpu-runs/2026-12-05-run41
R42=$ROOT/docs/gpu-runs/2026-12-05-run42
run_to "$T/pool42.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" \
	--pool 'run39-(c1|c2|c4).*:async/(kit|r[2-5])/off|run39-c3.*:async/new/off|run41.*:async/kit/off|run42.*:async/kit/off' \
	"$R39"-c*-overhead-pair-async*.txt "$R41"-c1-overhead-pair-async.txt "$R42"-c*-overhead-pair-async*.txt
expect_eq "pool: runs 39, 41 and 42's cudaMallocAsync layer off, figure" \
	"$(sed -n 's/^pooled *over \(25 processes (96% interval): traced\/untraced [0-9.]* \[[0-9.]*, [0-9.]*\]\).*INCONCLUSIVE (goal 0.99).*/\1/p' "$T/pool42.txt")" \
	"25 processes (96% interval): traced/untraced 0.9875 [0.9825, 0.9948]"
# and run 42's nine processes without stacks, the README's 0.9988
run_to "$T/pool42n.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --pool 'run42.*:async/nostack/off' \
	"$R42"-c*-overhead-pair-async*.txt
expect_eq "pool: run 42's cudaMallocAsync without stacks, figure" \
	"$(sed -n 's/^pooled *over \(9 processes (96% interval): traced\/untraced [0-9.]* \[[0-9.]*, [0-9.]*\]\).*/\1/p' "$T/pool42n.txt")" \
	"9 processes (96% interval): traced/untraced 0.9988 [0.9887, 1.0011]"
# Run 43: stop 30's shim and the build before its prefetch change, four processes each
# (docs/gpu-results.md's table: 0.9830 and 0.9861, 88% intervals)
R43=$ROOT/docs/gpu-runs/2026-12-05-run43-c2-overhead-pair-async.txt
for b in "kit 0.9830 [0.9788, 0.9971]" "before 0.9861 [0.9663, 0.9882]"; do
	run_to "$T/pool43.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --pool "run43.*:async/${b%% *}/off" "$R43"
	expect_eq "pool: run 43's cudaMallocAsync layer off, ${b%% *}" \
		"$(sed -n 's/^pooled *over \(4 processes (88% interval): traced\/untraced [0-9.]* \[[0-9.]*, [0-9.]*\]\).*FAIL (goal 0.99).*/\1/p' "$T/pool43.txt")" \
		"4 processes (88% interval): traced/untraced ${b#* }"
done
# Run 45: stop 33's shim on the H200, cudaMallocAsync and no-caching modes with the layer off
# (docs/gpu-results.md's table: 0.9854 over eight, missed; 0.9896 over six, undecided)
R45=$ROOT/docs/gpu-runs/2026-12-06-run45-c1-overhead-pair
for c in "async|8 processes (93% interval): traced/untraced 0.9854 [0.9834, 0.9901]|FAIL" \
	"nocache|6 processes (97% interval): traced/untraced 0.9896 [0.9884, 0.9941]|INCONCLUSIVE"; do
	m=${c%%|*}
	want=${c#*|}
	run_to "$T/pool45.txt" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --pool "run45.*:$m/kit/off" "$R45-$m.txt"
	expect_eq "pool: run 45's $m layer off" \
		"$(sed -n 's/^pooled *over \([0-9]* processes ([0-9]*% interval): traced\/untraced [0-9.]* \[[0-9.]*, [0-9.]*\]\).*\(FAIL\|INCONCLUSIVE\) (goal 0.99).*/\1|\2/p' "$T/pool45.txt")" \
		"$want"
done
# Bad usage: one line, exit 2 (--processes 0; an unknown mode; --env's; and --pool's: nothing matched,
# keys mixed, a RAW line it did not write (keyed right but its rows not a list: stop 28's review
# found that one ended in a traceback), no such file, files without --pool).
printf 'RAW async/kit/off {"rows": 3}\n' >"$T/badraw.txt"
printf 'RAW async/kit/off {"rows": 3, "steps_per_block": 5}\n' >"$T/badrows.txt"
for c in "--processes 0|--kit $kit --out $T/pairbad --processes 0|fw_overhead_pair: --processes must be 1 or more, not 0" \
	"unknown mode|--kit $kit --out $T/pairbad --modes bogus|fw_overhead_pair: unknown mode or layer: bogus" \
	"env, no name|--kit $kit --out $T/pairbad --env CUMTRACE_PYTHON=0|fw_overhead_pair: --env 'CUMTRACE_PYTHON=0': give NAME:VAR=VALUE[,VAR=VALUE...], NAME a lower-case word" \
	"env, taken|--kit $kit --out $T/pairbad --env kit:CUMTRACE_PYTHON=0|fw_overhead_pair: --env 'kit:CUMTRACE_PYTHON=0': the configuration kit is already taken" \
	"env, a key's name|--kit $kit --out $T/pairbad --env on:X=1|fw_overhead_pair: --env 'on:X=1': the configuration on is already taken" \
	"env, twice|--kit $kit --out $T/pairbad --env a:X=1 --env a:X=2|fw_overhead_pair: --env 'a:X=2': the configuration a is already taken" \
	"env, not a setting|--kit $kit --out $T/pairbad --env a:X=1,,Y=2|fw_overhead_pair: --env 'a:X=1,,Y=2': '' is not VAR=VALUE" \
	"pool, nomatch|--pool ^zzz $T/pairn.txt|fw_overhead_pair: --pool: no RAW line's FILE:LABEL matches '^zzz' in the 1 files" \
	"pool, mixed|--pool nocache/kit/o $R39-c2-overhead-pair-expandable-nocache.txt|fw_overhead_pair: --pool: the matched labels mix keys (off, on): pool one of off, on, history" \
	"pool, badraw|--pool async $T/badraw.txt|fw_overhead_pair: $T/badraw.txt:1: a RAW line this script did not write (async/kit/off)" \
	"pool, badrows|--pool async $T/badrows.txt|fw_overhead_pair: $T/badrows.txt:1: a RAW line this script did not write (async/kit/off)" \
	"pool, nofile|--pool x $T/absent.txt|fw_overhead_pair: $T/absent.txt: No such file or directory" \
	"pool, files without pool|--kit $kit --out $T/pairbad $T/pairn.txt|fw_overhead_pair: give --kit and --out (or --pool REGEX FILE...), and no files without --pool"; do
	name=${c%%|*}
	rest=${c#*|}
	set +e
	# shellcheck disable=SC2086
	python3 "$ROOT/tests/gpu/fw_overhead_pair.py" ${rest%%|*} >"$T/pairbad.out" 2>"$T/pairbad.err"
	rc=$?
	set -e
	expect_eq "pair: $name, exit status" "$rc" 2
	expect_eq "pair: $name, message" "$(cat "$T/pairbad.err")" "${rest#*|}"
done
