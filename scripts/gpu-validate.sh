#!/usr/bin/env bash
# cumtrace on a real GPU: build the planted-leak programs, run them untraced, under the
# shim and under compute-sanitizer, run PyTorch, CuPy and JAX untraced and traced, and
# print one table: check | expected | cumtrace | match | note, then the timings.
#
# Run it on the GPU machine from the repository root, with gpu-kit/ (made here by
# scripts/gpu-pack.sh) beside it:
#
#     bash scripts/gpu-validate.sh
#
# Results go to $OUT when it is set (the device tool brings back at most 8 files, so
# there are four: gpu-table.txt, gpu-results.json, gpu-validate.log, and every raw log,
# dump and report JSON in gpu-logs.tar.gz), else to ./gpu-out. Each check runs in
# its own process under `timeout`; a failure is recorded and the run goes on. The
# checks stop starting once GPU_VALIDATE_BUDGET_S seconds (default 420) have passed, so
# the whole run ends within about 7.5 minutes.
#
# Settings: GPU_VALIDATE_BUDGET_S, GPU_ARCH (default sm_90, the H200), GPU_JOBS
# (parallel compute-sanitizer runs, default 4), GPU_BUILD_JOBS (parallel nvcc, default
# 8), GPU_ONLY (a regular expression: only steps whose tag matches run, e.g.
# '^(env|build\.leak_malloc|c\.leak_malloc)'), GPU_SUITE (which parts run, any of
# "validate features perf behaviour", default all four (behaviour = tests/gpu/behaviour.sh): validate = the planted-leak programs,
# compute-sanitizer, PyTorch/CuPy/JAX against their allocators' statistics; features =
# Python frames, leak classes, growth leaks, exports of torch runs, a 2-rank torchrun; perf = traced/untraced
# throughput of a cudaMallocAsync loop and of ResNet-50 training, beside
# compute-sanitizer and torch's own memory history), PERF_REPS (alternating
# untraced/traced pairs per perf figure, default 3).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
KIT=$ROOT/gpu-kit
SHIM=$KIT/libcumtrace.so
REPORT=$KIT/cumtrace-report
RES=${OUT:-$ROOT/gpu-out}
mkdir -p "$RES"
if [ -n "${OUT:-}" ]; then
	WORK=$(mktemp -d /tmp/gpu-validate.XXXXXX)
else
	WORK=$RES/work
	rm -rf "$WORK"
	mkdir -p "$WORK"
fi
RAW=$WORK/raw
BIN=$WORK/bin
mkdir -p "$RAW" "$BIN"
LOG=$RES/gpu-validate.log
: >"$LOG"

START=$(date +%s)
BUDGET=${GPU_VALIDATE_BUDGET_S:-420}
ARCH=${GPU_ARCH:-sm_90}
JOBS=${GPU_JOBS:-4}
BUILD_JOBS=${GPU_BUILD_JOBS:-8}
ONLY=${GPU_ONLY:-}
SUITE=" ${GPU_SUITE:-validate features perf behaviour} "
PERF_REPS=${PERF_REPS:-3}
LEAK_BYTES=1048588 # 262147 float32: a size nothing else in train.py allocates
# the features runs' list leak: larger than any block torch's cache holds, so that every
# step's leaked tensor needs new device memory (a cudaMalloc or a VMM mapping) in every
# allocator mode; a 1 MiB one is carved from cached segments and never reaches CUDA
FEAT_LEAK_BYTES=209715212

export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# Never let a traced program use NVLink multicast (see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

say() {
	printf '[%4ds] %s\n' "$(($(date +%s) - START))" "$*" | tee -a "$LOG"
}

remaining() {
	echo $((START + BUDGET - $(date +%s)))
}

# run_step TAG LIMIT CMD...: run CMD with stdout/stderr in $RAW/TAG.out/.err, at most
# LIMIT seconds (less when the budget is nearly spent); record rc and wall time in
# $RAW/TAG.step. Returns CMD's exit status (99 when skipped).
run_step() {
	local tag=$1 limit=$2 left t0 t1 rc secs status
	shift 2
	if [ -n "$ONLY" ] && ! [[ $tag =~ $ONLY ]]; then
		return 99
	fi
	left=$(remaining)
	if [ "$left" -lt 10 ]; then
		printf '%s\tskipped\t0\tskipped (time budget)\n' "$tag" >"$RAW/$tag.step"
		say "skip $tag (time budget spent)"
		return 99
	fi
	[ "$limit" -gt "$left" ] && limit=$left
	t0=$(date +%s.%N)
	timeout -k 5 "$limit" "$@" >"$RAW/$tag.out" 2>"$RAW/$tag.err" </dev/null
	rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	status=ran
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		status="timeout (${limit}s)"
	fi
	printf '%s\t%s\t%s\t%s\n' "$tag" "$rc" "$secs" "$status" >"$RAW/$tag.step"
	say "$(printf '%-44s rc=%-3s %7ss %s' "$tag" "$rc" "$secs" "$status")"
	return $rc
}

# traced TAG LIMIT CMD...: run_step under the shim; the dump is $RAW/TAG.<pid>.dump.
traced() {
	local tag=$1 limit=$2
	shift 2
	run_step "$tag" "$limit" env LD_PRELOAD="$SHIM" \
		LD_LIBRARY_PATH="$KITLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		CUMTRACE_OUTPUT="$RAW/$tag.%p.dump" "$@"
}

# The dump of a traced step: the one of the pid its GROUND_TRUTH names, else the largest.
pick_dump() {
	local tag=$1 pid
	pid=$(sed -n 's/^GROUND_TRUTH .*"pid": *\([0-9][0-9]*\).*/\1/p' "$RAW/$tag.out" 2>/dev/null | head -n 1)
	if [ -n "$pid" ] && [ -f "$RAW/$tag.$pid.dump" ]; then
		echo "$RAW/$tag.$pid.dump"
		return 0
	fi
	# shellcheck disable=SC2012 # names are ours: no odd characters
	ls -S "$RAW/$tag".*.dump* 2>/dev/null | head -n 1
}

# report TAG [nosym]: cumtrace-report leaks|summary|peak|timeline --format json on TAG's
# dump. The leaks report is symbolized unless nosym is given (large Python processes:
# symbolizing libtorch's stacks is timed once, at the end).
report() {
	local tag=$1 nosym=${2:-} dump cmd rc
	dump=$(pick_dump "$tag")
	if [ -z "$dump" ]; then
		say "no dump from $tag"
		return
	fi
	[ -x "$REPORT" ] || return
	for cmd in leaks summary peak timeline; do
		local opts=(--format json --top 0)
		if [ "$cmd" != leaks ] || [ -n "$nosym" ]; then
			opts+=(--no-symbols)
		fi
		run_step "$tag.report-$cmd" 90 "${KITENV[@]}" "$REPORT" "$cmd" "${opts[@]}" "$dump"
		rc=$?
		if [ $rc -eq 2 ] && grep -q -- '--top' "$RAW/$tag.report-$cmd.err"; then
			opts=(--format json)
			if [ "$cmd" != leaks ] || [ -n "$nosym" ]; then
				opts+=(--no-symbols)
			fi
			run_step "$tag.report-$cmd" 90 "${KITENV[@]}" "$REPORT" "$cmd" "${opts[@]}" "$dump"
		fi
	done
}

# sanitize TAG BINARY ARGS...: compute-sanitizer's leak check, log in $RAW/TAG.sanlog.
sanitize() {
	local tag=$1
	shift
	run_step "$tag" 150 "$SAN" --tool memcheck --leak-check full --report-api-errors no \
		--log-file "$RAW/$tag.sanlog" "$@"
}

# py_traced TAG LIMIT CMD...: a traced Python run, then its reports (no symbols). A run
# that hangs costs its whole limit: after two timeouts the remaining ones are skipped.
PY_TIMEOUTS=0
py_traced() {
	local tag=$1 rc
	if [ $PY_TIMEOUTS -ge 2 ]; then
		printf '%s\tskipped\t0\tskipped (two traced Python runs timed out)\n' "$tag" >"$RAW/$tag.step"
		say "skip $tag (two traced Python runs timed out)"
		return 99
	fi
	traced "$@"
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		PY_TIMEOUTS=$((PY_TIMEOUTS + 1))
	fi
	report "$tag" nosym
	return $rc
}

# At most N background jobs at once.
throttle() {
	while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do
		wait -n 2>/dev/null || sleep 0.2
	done
}

finished=0
finish() {
	[ $finished -eq 1 ] && return
	finished=1
	wait
	echo "$(($(date +%s) - START))" >"$RAW/total.secs"
	say "comparing"
	python3 "$SRC/compare.py" "$RAW" "$RES" "$ROOT/include/cumtrace/format.h" \
		>"$RAW/compare.out" 2>"$RAW/compare.err"
	local rc=$?
	python3 "$SRC/features.py" "$RAW" "$FEAT" "$TRAIN" >"$RES/features-table.txt" 2>&1
	[ -d "$FEAT" ] && (cd "$WORK" && tar czf "$RES/features.tar.gz" features) 2>>"$LOG"
	# The logs: everything raw, dumps included while the archive stays well under 16 MiB.
	(cd "$WORK" && tar czf "$RES/gpu-logs.tar.gz" raw) 2>>"$LOG"
	if [ "$(stat -c %s "$RES/gpu-logs.tar.gz" 2>/dev/null || echo 0)" -gt $((14 * 1024 * 1024)) ]; then
		say "logs too large with dumps: leaving out dumps over 1 MiB"
		(cd "$WORK" && find raw -name '*.dump*' -size +1M >"$WORK/big" &&
			tar czf "$RES/gpu-logs.tar.gz" --exclude-from="$WORK/big" raw) 2>>"$LOG"
	fi
	if [ $rc -eq 0 ] && [ -s "$RES/gpu-table.txt" ]; then
		cat "$RES/gpu-table.txt" >>"$LOG"
		cat "$RES/gpu-table.txt"
	else
		say "compare.py failed (rc $rc):"
		tee -a "$LOG" <"$RAW/compare.err"
		cat "$RAW"/*.step 2>/dev/null | tee -a "$LOG"
	fi
	say "results in $RES (raw files under $WORK)"
}
SRC=$ROOT/tests/gpu
[ -f "$SRC/compare.py" ] || SRC=$KIT/src
trap 'finish; exit 130' INT TERM

# ---- the kit -------------------------------------------------------------------------
if [ ! -f "$SHIM" ]; then
	say "gpu-kit/libcumtrace.so is missing: run 'bash scripts/gpu-pack.sh' on the build machine and carry gpu-kit"
fi
[ -x "$REPORT" ] || say "gpu-kit/cumtrace-report is missing: the table's cumtrace column comes from the raw dump decoder"

# Libraries of the kit's lib-extra/ are used only where the system lacks them.
KITLIB=$KIT/lib
if [ -d "$KIT/lib-extra" ]; then
	need=()
	for f in "$KIT"/lib-extra/*; do
		[ -e "$f" ] || continue
		n=${f##*/}
		ldconfig -p 2>/dev/null | grep -q "[[:space:]]$n (" || need+=("$f")
	done
	if [ ${#need[@]} -gt 0 ]; then
		KITLIB=$WORK/lib
		mkdir -p "$KITLIB"
		cp -a "$KIT"/lib/. "$KITLIB"/ 2>/dev/null
		cp -a "${need[@]}" "$KITLIB"/
		say "system lacks ${need[*]##*/}: using the kit's copies"
	fi
fi

# Only our libraries are in KITLIB: the system's CUDA libraries stay the ones the loader
# finds. KITENV prefixes a command (timeout runs programs, not shell functions).
KITENV=(env "LD_LIBRARY_PATH=$KITLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_TOP=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
SAN=$(command -v compute-sanitizer)
for f in "$CUDA_TOP/bin/compute-sanitizer" "$CUDA_TOP/compute-sanitizer/compute-sanitizer"; do
	[ -n "$SAN" ] || [ ! -x "$f" ] || SAN=$f
done
SAN=${SAN:-compute-sanitizer}

say "cumtrace GPU validation: kit $KIT, results $RES, budget ${BUDGET}s"
run_step env.os 10 sh -c 'cat /etc/os-release; ldd --version | head -n 1; uname -a; nproc'
run_step env.gpu 30 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
run_step env.nvcc 20 "$NVCC" --version
run_step env.sanitizer 30 "$SAN" --version
run_step env.kit 10 cat "$KIT/MANIFEST.txt"
run_step env.ldd-shim 10 "${KITENV[@]}" ldd "$SHIM"
run_step env.ldd-report 10 "${KITENV[@]}" ldd "$REPORT"
run_step env.report-version 10 "${KITENV[@]}" "$REPORT" --version

# suite NAME: is that part of the run wanted?
suite() {
	case $SUITE in *" $1 "*) return 0 ;; esac
	return 1
}

# ---- build the programs, static and shared cudart --------------------------------------
PROGS="leak_malloc leak_pitch leak_async leak_host leak_managed leak_vmm clean"
suite validate || PROGS=""
if suite perf; then
	run_step build.async_loop 240 "$NVCC" -O2 -arch="$ARCH" -cudart shared -Xlinker -rpath \
		-Xlinker "$CUDA_TOP/lib64" -o "$BIN/async_loop" "$SRC/async_loop.cu" &
fi
CUDA_LIBDIR=$CUDA_TOP/lib64
[ -d "$CUDA_LIBDIR" ] || CUDA_LIBDIR=$CUDA_TOP/targets/x86_64-linux/lib
for p in $PROGS; do
	for c in static shared; do
		rpath=()
		[ $c = shared ] && rpath=(-Xlinker -rpath -Xlinker "$CUDA_LIBDIR")
		run_step "build.$p.$c" 240 "$NVCC" -O2 -g -lineinfo -arch="$ARCH" -Xcompiler -rdynamic \
			-cudart "$c" -DGT_CUDART="\"$c\"" -I"$SRC" -o "$BIN/$p.$c" "$SRC/$p.cu" \
			"${rpath[@]}" -lcuda &
		throttle "$BUILD_JOBS"
	done
done
wait

# ---- overhead: untraced and traced runs alternate, nothing else runs meanwhile ----------
TRAIN=$SRC/train.py
if suite perf; then
	for r in $(seq "$PERF_REPS"); do
		run_step "perf.async.plain.$r" 60 "$BIN/async_loop"
		traced "perf.async.traced.$r" 60 "$BIN/async_loop"
	done
	for m in default nocache; do
		for r in $(seq "$PERF_REPS"); do
			run_step "perf.resnet.$m.plain.$r" 100 python3 "$TRAIN" --model resnet50 --mode "$m" \
				--steps 60 --warmup 10
			traced "perf.resnet.$m.traced.$r" 100 python3 "$TRAIN" --model resnet50 --mode "$m" \
				--steps 60 --warmup 10
		done
	done
	run_step perf.resnet.default.history 100 python3 "$TRAIN" --model resnet50 --mode default \
		--steps 60 --warmup 10 --history
	run_step perf.resnet.default.sanitizer 200 "$SAN" --tool memcheck --leak-check full \
		--report-api-errors no --log-file "$RAW/perf.resnet.default.sanitizer.sanlog" \
		python3 "$TRAIN" --model resnet50 --mode default --steps 5 --warmup 1
fi

# ---- the C programs: untraced, traced, traced with cudaDeviceReset ---------------------
for c in shared static; do
	for p in $PROGS; do
		b=$BIN/$p.$c
		[ -x "$b" ] || continue
		run_step "c.$p.$c.plain" 60 "$b"
		traced "c.$p.$c.traced" 60 "$b"
		report "c.$p.$c.traced"
		traced "c.$p.$c.reset" 60 "$b" --reset
		report "c.$p.$c.reset" nosym
	done
done

# ---- compute-sanitizer (with cudaDeviceReset, as its documentation asks) ----------------
for c in shared static; do
	for p in $PROGS; do
		[ -x "$BIN/$p.$c" ] || continue
		sanitize "c.$p.$c.san" "$BIN/$p.$c" --reset &
		throttle "$JOBS"
	done
done
wait

if suite validate; then
	# ---- PyTorch -----------------------------------------------------------------------------
	for m in default expandable async nocache; do
		run_step "torch.$m.plain" 100 python3 "$TRAIN" --mode "$m"
		py_traced "torch.$m.traced" 100 python3 "$TRAIN" --mode "$m"
	done
	py_traced torch.nocache-leak.traced 100 python3 "$TRAIN" --mode nocache --leak-bytes "$LEAK_BYTES"
	py_traced torch.default-leak.traced 100 python3 "$TRAIN" --mode default --leak-bytes "$LEAK_BYTES"
	run_step torch.profile.plain 120 python3 "$TRAIN" --mode default --profile
	py_traced torch.profile.traced 120 python3 "$TRAIN" --mode default --profile

	# ---- CuPy and JAX -------------------------------------------------------------------------
	run_step cupy.plain 90 python3 "$SRC/cupy_jax.py" cupy
	py_traced cupy.traced 90 python3 "$SRC/cupy_jax.py" cupy
	run_step jax-noprealloc.plain 100 env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 "$SRC/cupy_jax.py" jax
	py_traced jax-noprealloc.traced 100 env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 "$SRC/cupy_jax.py" jax
	run_step jax-prealloc.plain 100 env -u XLA_PYTHON_CLIENT_PREALLOCATE python3 "$SRC/cupy_jax.py" jax
	py_traced jax-prealloc.traced 100 env -u XLA_PYTHON_CLIENT_PREALLOCATE python3 "$SRC/cupy_jax.py" jax

	# ---- extras: the CUPTI backend (CUMTRACE_BACKEND=cupti), for what interposition misses -----
	for c in static shared; do
		for p in $PROGS; do
			[ -x "$BIN/$p.$c" ] || continue
			traced "c.$p.$c.cupti" 60 env CUMTRACE_BACKEND=cupti "$BIN/$p.$c"
			report "c.$p.$c.cupti" nosym
		done
	done
	for m in default nocache; do
		py_traced "torch.$m.cupti" 100 env CUMTRACE_BACKEND=cupti python3 "$TRAIN" --mode "$m"
	done

	# ---- extras, last: sanitizer without reset, the shim inside compute-sanitizer --------------
	for p in $PROGS; do
		[ -x "$BIN/$p.shared" ] || continue
		sanitize "c.$p.shared.sannr" "$BIN/$p.shared" &
		throttle "$JOBS"
	done
	wait
	if [ -x "$BIN/leak_malloc.shared" ]; then
		traced c.leak_malloc.shared.tsan 150 "$SAN" --tool memcheck --leak-check full \
			--report-api-errors no --log-file "$RAW/c.leak_malloc.shared.tsan.sanlog" \
			"$BIN/leak_malloc.shared"
		report c.leak_malloc.shared.tsan
	fi
	dump=$(pick_dump torch.default.traced)
	if [ -n "$dump" ] && [ -x "$REPORT" ]; then
		run_step torch.default.traced.report-symbolized 120 "${KITENV[@]}" "$REPORT" leaks \
			--format json --top 0 "$dump"
	fi
fi

# ---- behaviour: the hostile programs, untraced and traced (issue 14) ----
if suite behaviour; then
	run_step behaviour 300 bash "$ROOT/tests/gpu/behaviour.sh" "$KIT" "$KIT/src/e2e" "$RAW/behaviour"
	grep -E "^(PASS|FAIL|SKIP) |^behaviour:" "$RAW/behaviour.out" | tee -a "$LOG"
fi

# ---- features: Python frames, OOM, exports, leak classes, HTML/Perfetto per allocator ----
# Each check script writes its own table or PASS/FAIL lines; their files go into
# features.tar.gz and their summaries into features-table.txt (tests/gpu/features.py).
FEAT=$WORK/features
if suite features; then
	mkdir -p "$FEAT"
	run_step feat.pyframes 300 env OUT="$FEAT" bash "$ROOT/scripts/gpu-pyframes.sh"
	run_step feat.oom 240 env OUT="$FEAT" bash "$ROOT/scripts/gpu-oom.sh"
	run_step feat.exports 300 "${KITENV[@]}" sh "$ROOT/tests/gpu/exports_check.sh" gpu-kit "$FEAT/exports"
	run_step feat.leak-classes 420 env OUT="$FEAT" bash "$ROOT/scripts/gpu-leak-classes.sh"
	run_step feat.ranks 180 bash "$ROOT/scripts/gpu-ranks.sh" "$FEAT/ranks"
	# torch's four allocator modes with NVTX steps and a leak planted in a list: the HTML
	# report, the Perfetto trace and the leaks (classes, growth) of each
	for m in default expandable async nocache; do
		traced "feat.torch.$m" 120 env NVTX_INJECTION64_PATH="$SHIM" python3 "$TRAIN" --mode "$m" \
			--nvtx --steps 30 --leak-bytes "$FEAT_LEAK_BYTES"
		dump=$(pick_dump "feat.torch.$m")
		[ -n "$dump" ] || continue
		run_step "feat.torch.$m.html" 120 "${KITENV[@]}" "$REPORT" html -o "$FEAT/torch-$m.html" "$dump"
		run_step "feat.torch.$m.perfetto" 120 "${KITENV[@]}" "$REPORT" perfetto \
			-o "$FEAT/torch-$m.perfetto.json" "$dump"
		run_step "feat.torch.$m.leaks" 120 "${KITENV[@]}" "$REPORT" leaks --format json --top 0 \
			-o "$FEAT/torch-$m.leaks.json" "$dump"
		run_step "feat.torch.$m.leaks-text" 120 "${KITENV[@]}" "$REPORT" leaks --python-only --top 8 \
			-o "$FEAT/torch-$m.leaks.txt" "$dump"
	done
fi

finish
exit 0
