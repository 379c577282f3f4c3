#!/usr/bin/env bash
# One device call, several GPU checks: each STEP runs in its own process under its own time
# limit, its output in $OUT/STEP.txt, and a line "STEP rc N, S s" goes to $OUT/batch.txt.
# A step that fails or times out does not stop the others.
#
#   bash tests/gpu/batch.sh KIT STEP[:SECONDS] ...
#
# BATCH_DRY=1: print each step's name, time limit and command instead of running it.
#
# Steps:
#   framework-uncached  framework_check.py in the cudaMallocAsync and no-caching modes
#                       (peak allocated against max_memory_allocated(), the leak verdicts)
#   overhead-4096       fw_overhead.py --model mlp4096, the four modes, 3 repetitions
#   overhead-2048       fw_overhead.py --model mlp2048 (launch-bound), the four modes, 3 repetitions
#                       (overhead-4096@async,nocache: those modes only; OVH_STEPS, OVH_CHUNKS:
#                       steps per chunk, default 100, and chunks per process, default 5;
#                       OVH_CHUNK_S: seconds per chunk instead of steps, OVH_WARM_S: seconds of
#                       untimed steps after the warm-up, OVH_REPS: processes per configuration, 3;
#                       OVH_CPUS: pin every process to these CPUs (taskset list); OVH_HISTORY=0:
#                       no torch history runs)
#   overhead-ab         fw_overhead_ab.py: untraced, traced with the framework layer on and off,
#                       and torch's _record_memory_history alive at once, taking turns chunk by
#                       chunk (AB_ROUNDS, default 12, of AB_CHUNK_S seconds, default 1, each after
#                       AB_PREROLL_S untimed seconds, default 0.5; OVH_CPUS pins them); per-round
#                       ratios with 90% intervals; overhead-ab@MODES: those modes only
#   overhead-pair       fw_overhead_pair.py: traced and untraced in one process, blocks of 0.1 s
#                       taking turns (cumtrace_bench_pause), per configuration: layer off and on
#                       (PAIR_LAYERS), PAIR_S seconds each (default 30), with PAIR_VARIANTS=1 each
#                       KIT/variants/NAME.so too, and torch's history toggled the same way
#                       (not with PAIR_TORCH_HISTORY=0);
#                       PAIR_N processes per configuration (default 1), in rounds, with a
#                       last line per configuration over its processes; PAIR_MODEL: the
#                       training loop, mlp4096 (default) or mlp2048 (bound by launches);
#                       PAIR_ENVS="NAME:VAR=VALUE[,VAR=VALUE] ...": a configuration each, the
#                       kit's shim with those set (CUMTRACE_PYTHON=0 ...: what a part costs);
#                       overhead-pair@MODES: those modes (default async); @fake: the fake
#                       runtime's 18-place loop on the CPU alone (PAIR_PAGES)
#   behaviour           tests/gpu/behaviour.sh (the shim never changes the program)
#   ipc                 tests/gpu/ipc_check.sh (CUDA IPC between a parent and its child)
#   arrays              tests/gpu/array_check.sh (CUDA arrays against compute-sanitizer and cudaMemGetInfo)
#   cost[@MODE]         fw_cost.py (ns per tensor, untraced and traced processes side by side) in
#                       the allocator mode MODE (default, expandable, async, nocache: fw_overhead.py's
#                       MODES), with two more configurations: Python frames off (nopy) and Python
#                       frames and native stacks off (bare)
#   selftime[@MODES]    fw_selftime.py: the shim's own time per call and per step (CUMTRACE_SELFTIME=1)
#                       in the training loop, layer on and off, per allocator mode (OVH_CPUS pins)
#   hostbench           host_bench.py: the shim's cost per call on this machine's CPU alone (the
#                       18-place Python loop on the kit's fake CUDA runtime, no GPU), for the kit's
#                       shim and each KIT/variants/NAME.so, taking turns (HOST_REPS, default 4)
#   selftime-variants[@MODES]  selftime_variants.sh: fw_selftime.py for the kit's shim and each
#                       KIT/variants/NAME.so (other builds of the shim), in turn and then in reverse
#                       order (default mode async; SELF_STEPS, default 200)
#   analyzer-bench      tests/gpu/analyzer_bench.sh: cumtrace-report leaks against heaptrack_print
#                       on every CPU and on two (the kit packed with GPU_PACK_BENCH=1)
#   nccl                tests/gpu/nccl_ws1.py (torch.distributed, NCCL, world size 1: no unmatched free)
#   validate-ONLY       scripts/gpu-validate.sh with GPU_SUITE=validate GPU_ONLY=ONLY
#   graphs              tests/gpu/graph_check.sh (CUDA graph memory against the graph memory attributes,
#                       cudaMemGetInfo and compute-sanitizer; torch with a captured CUDAGraph; issue 19 §2, §6)
set -u
KIT=$(cd "$1" && pwd)
shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -z "${BATCH_DRY:-}" ]; then
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/env.txt" 2>&1
	# where the GPU sits against the CPUs (NUMA), for pinning the timed runs (OVH_CPUS)
	{ nvidia-smi topo -m; lscpu | grep -i 'numa\|^CPU(s)\|model name'; } >"$OUT/topo.txt" 2>&1
	# the shim's clock: the CPU's counter when /proc/cpuinfo lists both flags (preload/core/clock.c)
	{
		echo "tsc flags: $(grep -o -w 'constant_tsc\|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' ')"
		echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	} >>"$OUT/topo.txt" 2>&1
fi
git -C "$ROOT" log -1 --format='%H %s' >>"$OUT/env.txt" 2>/dev/null
cat "$KIT/MANIFEST.txt" >>"$OUT/env.txt" 2>/dev/null

step() { # NAME SECONDS CMD...
	local name=$1 secs=$2 t0 rc
	shift 2
	if [ -n "${BATCH_DRY:-}" ]; then # what would run (tests/e2e/t_gpu_scripts.sh)
		echo "$name $secs: $*" | tee -a "$OUT/batch.txt"
		return
	fi
	t0=$(date +%s)
	timeout -s KILL "$secs" "$@" >"$OUT/$name.txt" 2>&1
	rc=$?
	echo "$name rc $rc, $(($(date +%s) - t0)) s" | tee -a "$OUT/batch.txt"
}

for arg in "$@"; do
	name=${arg%%:*}
	secs=${arg#*:}
	[ "$secs" = "$arg" ] && secs=300
	case $name in
	framework-uncached)
		step "$name" "$secs" python3 "$ROOT/tests/gpu/framework_check.py" --kit "$KIT" --out /tmp/fwu \
			--only train-async,clean-async,train-nocache,clean-nocache ;;
	overhead-4096* | overhead-2048*)
		# overhead-4096@async,nocache: those modes only
		modes=default,expandable,async,nocache
		case $name in *@*) modes=${name#*@} ;; esac
		model=${name#overhead-}
		step "$(echo "$name" | tr "@," "__")" "$secs" python3 "$ROOT/tests/gpu/fw_overhead.py" --kit "$KIT" --out /tmp/"$name" \
			--model "mlp${model%%@*}" --modes "$modes" --reps "${OVH_REPS:-3}" --steps "${OVH_STEPS:-100}" --chunks "${OVH_CHUNKS:-5}" --pairs 0 \
			--chunk-seconds "${OVH_CHUNK_S:-0}" --warmup-seconds "${OVH_WARM_S:-0}" \
			${OVH_CPUS:+--cpus "$OVH_CPUS"} $([ "${OVH_HISTORY:-1}" = 0 ] && echo --no-history) ;;
	overhead-ab*)
		modes=default,expandable,async,nocache
		case $name in *@*) modes=${name#*@} ;; esac
		step "$(echo "$name" | tr "@," "__")" "$secs" python3 "$ROOT/tests/gpu/fw_overhead_ab.py" --kit "$KIT" \
			--out /tmp/overhead-ab --modes "$modes" --rounds "${AB_ROUNDS:-12}" \
			--chunk-seconds "${AB_CHUNK_S:-1}" --preroll-seconds "${AB_PREROLL_S:-0.5}" \
			${OVH_CPUS:+--cpus "$OVH_CPUS"} ;;
	overhead-pair*)
		# overhead-pair@async,default: those modes (default async); @fake: the fake runtime's
		# 18-place loop on the CPU alone (PAIR_PAGES pages touched between calls, default 0)
		modes=async
		case $name in *@*) modes=${name#*@} ;; esac
		work=(--modes "$modes")
		[ "${PAIR_TORCH_HISTORY:-1}" = 0 ] || work+=(--history)
		work+=(--model "${PAIR_MODEL:-mlp4096}")
		[ "$modes" = fake ] && work=(--workload fake --pages "${PAIR_PAGES:-0}")
		for e in ${PAIR_ENVS:-}; do work+=(--env "$e"); done
		step "$(echo "$name" | tr "@," "__")" "$secs" python3 "$ROOT/tests/gpu/fw_overhead_pair.py" --kit "$KIT" \
			--out /tmp/overhead-pair "${work[@]}" --layers "${PAIR_LAYERS:-off,on}" \
			--seconds "${PAIR_S:-30}" --processes "${PAIR_N:-1}" $([ "${PAIR_VARIANTS:-0}" = 1 ] && echo --variants) \
			${OVH_CPUS:+--cpus "$OVH_CPUS"} ;;
	cost*)
		mode=default
		case $name in *@*) mode=${name#*@} ;; esac
		case $mode in
		default) menv=() ;;
		expandable) menv=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
		async) menv=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) ;;
		nocache) menv=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
		*) echo "batch: unknown mode $mode" | tee -a "$OUT/batch.txt"; continue ;;
		esac
		step "cost_$mode" "$secs" env "${menv[@]}" python3 "$ROOT/tests/gpu/fw_cost.py" --kit "$KIT" \
			--out "/tmp/cost-$mode" --cpus 1,2,3,4,5,6,7 --config nopy=CUMTRACE_PYTHON=0 \
			--config bare=CUMTRACE_PYTHON=0,CUMTRACE_STACK_DEPTH=0 ;;
	hostbench)
		step "$name" "$secs" python3 "$ROOT/tests/gpu/host_bench.py" --kit "$KIT" \
			--reps "${HOST_REPS:-4}" ${OVH_CPUS:+--cpus "$OVH_CPUS"} ;;
	selftime-variants | selftime-variants@*) # before selftime*, which would take it
		modes=async
		case $name in *@*) modes=${name#*@} ;; esac
		step "$(echo "$name" | tr "@," "__")" "$secs" bash "$ROOT/tests/gpu/selftime_variants.sh" "$KIT" \
			"$modes" "${SELF_STEPS:-200}" "${OVH_CPUS:-}" ;;
	selftime | selftime@*)
		modes=default,expandable,async,nocache
		case $name in *@*) modes=${name#*@} ;; esac
		step "$(echo "$name" | tr "@," "__")" "$secs" python3 "$ROOT/tests/gpu/fw_selftime.py" --kit "$KIT" \
			--out /tmp/selftime --modes "$modes" --steps "${SELF_STEPS:-300}" ;;
	analyzer-bench)
		step "$name" "$secs" bash "$ROOT/tests/gpu/analyzer_bench.sh" "$KIT" "${BENCH_REPS:-9}" ;;
	behaviour)
		step "$name" "$secs" bash "$ROOT/tests/gpu/behaviour.sh" "$KIT" "$KIT/src/e2e" /tmp/beh ;;
	ipc)
		step "$name" "$secs" bash "$ROOT/tests/gpu/ipc_check.sh" "$KIT" /tmp/ipc ;;
	arrays)
		step "$name" "$secs" bash "$ROOT/tests/gpu/array_check.sh" "$KIT" /tmp/arrays
		# compute-sanitizer's own words, to explain its total against the device's charge
		cp /tmp/arrays/san.out "$OUT/arrays-sanitizer.txt" 2>/dev/null ;;
	validate-*)
		step "$name" "$secs" env GPU_SUITE=validate GPU_ONLY="${name#validate-}" OUT="$OUT/$name" \
			bash "$ROOT/scripts/gpu-validate.sh" ;;
	# ---- CUDA graphs (issue 19 §2, §6) ----
	graphs)
		step "$name" "$secs" bash "$ROOT/tests/gpu/graph_check.sh" "$KIT" /tmp/graphs
		# compute-sanitizer's own words on the graph program, and the reports
		cp /tmp/graphs/san.out "$OUT/graphs-sanitizer.txt" 2>/dev/null
		tar -C /tmp -czf "$OUT/graphs.tar.gz" --exclude='*.dump' graphs 2>/dev/null ;;
	# ---- imported and shared memory, NCCL (issue 19 §4, §5) ----
	nccl)
		step "$name" "$secs" python3 "$ROOT/tests/gpu/nccl_ws1.py" --kit "$KIT" --out /tmp/nccl
		for f in /tmp/nccl/*.err; do [ -f "$f" ] && cp "$f" "$OUT/nccl-${f##*/}"; done ;;
	*)
		echo "batch: unknown step '$name'" | tee -a "$OUT/batch.txt" ;;
	esac
done

# The device tool brings back at most 8 files from $OUT (run 41 lost six past that): with more,
# the steps' files go into one archive, steps-N.tar.gz (N: the first number not taken, for
# batches run one after another in one call), and batch.txt, env.txt and topo.txt stay beside it.
if [ -z "${BATCH_DRY:-}" ] && [ "$(find "$OUT" -type f | wc -l)" -gt 8 ]; then
	n=1
	while [ -e "$OUT/steps-$n.tar.gz" ]; do n=$((n + 1)); done
	list=/tmp/batch-steps.$$
	if (
		cd "$OUT" || exit 1
		find . -type f ! -name batch.txt ! -name env.txt ! -name topo.txt ! -name 'steps-*.tar.gz' \
			-printf '%P\n' | sort >"$list"
		tar czf "steps-$n.tar.gz" -T "$list" && xargs -d '\n' rm -f <"$list" &&
			find . -mindepth 1 -type d -empty -delete
	); then
		echo "batch: more than 8 files under $OUT: the steps' files are in steps-$n.tar.gz" | tee -a "$OUT/batch.txt"
	else
		echo "batch: more than 8 files under $OUT, and they could not be archived: some will not come back" |
			tee -a "$OUT/batch.txt"
	fi
	rm -f "$list"
fi
