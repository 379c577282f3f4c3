#!/usr/bin/env bash
# Issue 14 on real CUDA: the hostile programs of the end-to-end tests, built here
# against the system's libcudart and libcuda, run untraced and traced; every case
# must print the same lines, exit the same way and leave its own files the same.
# One line per case: "PASS|FAIL|SKIP behaviour.NAME detail", then
# "behaviour: N passed, N failed, N skipped".
#
#   bash tests/gpu/behaviour.sh KIT SRC OUTDIR
#
# KIT: gpu-kit (libcumtrace.so, cumtrace-report, lib/); SRC: the end-to-end sources
# (gpu-kit/src/e2e: progs/*.c, libs/twin.c, paths_twin.py); OUTDIR: logs and dumps.
# CUDA_HOME (default /usr/local/cuda) gives the headers, CUDA_LIBDIR (default
# $CUDA_HOME/lib64) the libraries linked against: tests/gpu/dryrun.sh points it at the
# fake runtime to check the plumbing without a GPU.
set -u
KIT=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
OUTDIR=$3
mkdir -p "$OUTDIR/bin"
OUTDIR=$(cd "$OUTDIR" && pwd)
BIN=$OUTDIR/bin
CUDA=${CUDA_HOME:-/usr/local/cuda}
SHIM=$KIT/libcumtrace.so
REPORT=$KIT/cumtrace-report
export LD_LIBRARY_PATH=$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CUMTRACE_QUIET=1 PYTHONDONTWRITEBYTECODE=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
passed=0 failed=0 skipped=0

verdict() { # PASS|FAIL|SKIP NAME DETAIL
	echo "$1 behaviour.$2 $3"
	case $1 in PASS) passed=$((passed + 1)) ;; FAIL) failed=$((failed + 1)) ;; *) skipped=$((skipped + 1)) ;; esac
}

CFLAGS="-O1 -g -I$CUDA/include -I$SRC/progs"
LIBDIR=${CUDA_LIBDIR:-$CUDA/lib64}
LIBS="-L$LIBDIR -L$LIBDIR/stubs -Wl,-rpath,$LIBDIR -lcudart -lcuda -ldl -lpthread"
build() { # NAME SOURCE [EXTRA...]
	local name=$1 src=$2
	shift 2
	[ -f "$src" ] || return 1
	gcc $CFLAGS -o "$BIN/$name" "$src" "$@" >"$OUTDIR/build.${name//\//-}.log" 2>&1
}
# The twin programs leave out the one call whose result real CUDA does not define
# (a second cuCtxDestroy of the same context: 201 or 709, by the heap's layout);
# the *_full builds keep it, for the heap probe below.
build paths_twin "$SRC/progs/paths_twin.c" -DTWIN_DEFINED_CALLS_ONLY -ldl
gcc $CFLAGS -DTWIN_DEFINED_CALLS_ONLY -shared -fPIC -Wl,-soname,libcttwin.so -o "$BIN/libcttwin.so" \
	"$SRC/libs/twin.c" $LIBS >"$OUTDIR/build.libcttwin.log" 2>&1
mkdir -p "$BIN/full"
build full/paths_twin "$SRC/progs/paths_twin.c" -ldl
gcc $CFLAGS -shared -fPIC -Wl,-soname,libcttwin.so -o "$BIN/full/libcttwin.so" "$SRC/libs/twin.c" \
	$LIBS >"$OUTDIR/build.libcttwin-full.log" 2>&1
# A preloaded library that only mallocs 64 KiB in its constructor: it moves the heap, nothing else
printf '#include <stdlib.h>\nstatic void *keep;\n__attribute__((constructor)) static void shift(void) { keep = malloc(65536); }\n' \
	>"$BIN/shift.c"
gcc -O1 -shared -fPIC -o "$BIN/libshift.so" "$BIN/shift.c" >"$OUTDIR/build.shift.log" 2>&1
for p in hostile_fds hostile_limits; do
	build "$p" "$SRC/progs/$p.c" $LIBS
done
# hostile_signal exports its gethostname, which the shim calls during start-up
build hostile_signal "$SRC/progs/hostile_signal.c" -rdynamic $LIBS

# events DUMP: the number of calls the dump recorded (every API, failures too)
events() {
	"$REPORT" summary --format json "$1" 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin); print(sum(v["calls"] for v in j["summary"]["apis"].values()))' 2>/dev/null
}

# twin NAME CALLS_GREP CMD...: untraced in NAME/u, then traced in NAME/t: the same
# output, status and files (every file the program left in its folder); the dump
# (in NAME/) holds as many events as the program printed lines matching CALLS_GREP
twin() {
	local name=$1 calls=$2 rc_u rc_t f why=""
	shift 2
	local d=$OUTDIR/$name
	mkdir -p "$d/u" "$d/t"
	(cd "$d/u" && timeout 300 "$@" >../untraced.out 2>../untraced.err)
	rc_u=$?
	(cd "$d/t" && CUMTRACE_OUTPUT="$d/traced.%p.dump" LD_PRELOAD=$SHIM timeout 300 "$@" \
		>../traced.out 2>../traced.err)
	rc_t=$?
	[ $rc_u -eq $rc_t ] || why="exit $rc_u untraced, $rc_t traced; "
	cmp -s "$d/untraced.out" "$d/traced.out" ||
		why="${why}output differs ($(diff "$d/untraced.out" "$d/traced.out" | grep -c '^[<>]') lines); "
	for f in "$d"/u/* "$d"/t/*; do
		[ -f "$f" ] || continue
		f=${f##*/}
		cmp -s "$d/u/$f" "$d/t/$f" || why="${why}file $f differs; "
	done
	if [ -n "$why" ]; then
		verdict FAIL "$name" "$why"
		# the first differing lines, for the run's record
		diff "$d/untraced.out" "$d/traced.out" | head -n "${BEHAVIOUR_DIFF_LINES:-40}" | sed "s/^/  $name| /"
	elif [ -n "$calls" ]; then
		local want got dump
		want=$(grep -c "$calls" "$d/untraced.out")
		dump=$(ls "$d"/traced.*.dump 2>/dev/null | head -n 1)
		got=$([ -n "$dump" ] && events "$dump")
		if [ "$want" = "${got:-none}" ]; then
			verdict PASS "$name" "exit $rc_u, same output, $got calls recorded"
		else
			verdict FAIL "$name" "exit $rc_u, same output, $want calls made, ${got:-no dump} recorded"
		fi
	else
		verdict PASS "$name" "exit $rc_u, same output and files, $(ls "$d"/traced.*.dump 2>/dev/null | wc -l) dump(s)"
	fi
}

# 14.1: every way in, by export from a library loaded RTLD_LOCAL, dlsym on every kind
# of handle, cuGetProcAddress(_v2), cudaGetDriverEntryPoint*; then from Python ctypes.
if [ -x "$BIN/paths_twin" ] && [ -f "$BIN/libcttwin.so" ]; then
	twin rtld_local.c '^call ' "$BIN/paths_twin" "$BIN/libcttwin.so"
	if [ -f "$SRC/paths_twin.py" ]; then
		twin rtld_local.ctypes '^call ' python3 "$SRC/paths_twin.py" "$BIN/libcttwin.so"
	fi
else
	verdict FAIL rtld_local "did not build: $(tail -n 2 "$OUTDIR"/build.*twin*.log | tr '\n' ' ')"
fi

# The undefined call, untraced twice: plainly and with libshift.so preloaded (no
# cumtrace at all). Different lines there mean the driver's answer follows the heap.
if [ -x "$BIN/full/paths_twin" ] && [ -f "$BIN/libshift.so" ]; then
	d=$OUTDIR/heap_probe
	mkdir -p "$d"
	(cd "$d" && timeout 300 "$BIN/full/paths_twin" "$BIN/full/libcttwin.so" >plain.out 2>&1)
	(cd "$d" && LD_PRELOAD=$BIN/libshift.so timeout 300 "$BIN/full/paths_twin" "$BIN/full/libcttwin.so" \
		>shifted.out 2>&1)
	n=$(diff "$d/plain.out" "$d/shifted.out" | grep -c '^[<>]')
	other=$(diff "$d/plain.out" "$d/shifted.out" | grep '^[<>]' | grep -vc 'call cuCtxDestroy_v2 rc=\(201\|709\) ')
	echo "INFO behaviour.heap_probe untraced vs untraced with a 64 KiB malloc preloaded: $n lines differ, $other of them not a second cuCtxDestroy_v2"
	diff "$d/plain.out" "$d/shifted.out" | head -n 12 | sed "s/^/  heap_probe| /"
fi

# 14.2, 14.3: descriptors taken back by the program; its own files must be untouched.
if [ -x "$BIN/hostile_fds" ]; then
	for mode in closeall dup2 pipe; do
		twin "fds.$mode" '' "$BIN/hostile_fds" "$mode" log 2000
	done
	twin fds.firstfd '' "$BIN/hostile_fds" firstfd
else
	verdict SKIP fds "hostile_fds did not build"
fi

# 14.4: a small RLIMIT_NOFILE set before the first CUDA call.
if [ -x "$BIN/hostile_limits" ]; then
	for n in 16 32 64; do
		twin "nofile.$n" '' "$BIN/hostile_limits" nofile "$n" 200
	done
	# RLIMIT_AS (ulimit -v, KiB) set before the program starts: the shim's stack cache and
	# dump buffers take their small sizes; the same lines traced and untraced. The CUDA
	# driver reserves address space of its own, so a small limit fails cuInit the same
	# way in both (still a twin); the larger ones let the program run.
	for kib in 67108864 268435456 1073741824; do
		twin "vm.$kib" '' sh -c 'ulimit -v "$1" && exec "$2" vm 64 200' sh "$kib" "$BIN/hostile_limits"
	done
else
	verdict SKIP nofile "hostile_limits did not build"
fi

# 14.5: signal handlers that call CUDA.
if [ -x "$BIN/hostile_signal" ]; then
	# start raises its signal from inside tracing's start-up: traced only (untraced it
	# says that the shim never called gethostname and exits 4); it must exit 0, and
	# every call is recorded or counted as made in a handler.
	d=$OUTDIR/signal.start
	mkdir -p "$d"
	(cd "$d" && CUMTRACE_OUTPUT="$d/traced.%p.dump" LD_PRELOAD=$SHIM timeout -s KILL 60 \
		"$BIN/hostile_signal" start >traced.out 2>traced.err)
	rc=$?
	dump=$(ls "$d"/traced.*.dump 2>/dev/null | head -n 1)
	made=$(awk '$1 == "expect" && $2 == "calls" { print $3 }' "$d/traced.out")
	seen=$([ -n "$dump" ] && "$REPORT" summary --format json "$dump" 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(sum(a["calls"] for a in j["summary"]["apis"].values()) + j["dumps"][0]["dropped_in_signal_handlers"])' 2>/dev/null)
	if [ $rc -eq 0 ] && [ -n "$made" ] && [ "$made" = "${seen:-none}" ]; then
		verdict PASS signal.start "traced: exit 0, $made calls made = recorded + counted in handlers"
	else
		verdict FAIL signal.start "traced: exit $rc (137: hung), $made made, ${seen:-no dump} recorded + counted"
	fi
	for mode in ${SIGNAL_MODES-api}; do
		twin "signal.$mode" '' "$BIN/hostile_signal" "$mode"
	done
else
	verdict SKIP signal "hostile_signal did not build"
fi

# Crashes on real CUDA (tests/e2e/t_hostile_crash.sh): the program's own handlers and the
# default action, exit status and output as untraced; with the default action in the middle of
# a writer round (a round every millisecond), every allocation made before the crash in the dump.
build hostile_crash "$SRC/progs/hostile_crash.c" $LIBS
if [ -x "$BIN/hostile_crash" ]; then
	for mode in segv abort segvdfl; do
		twin "crash.$mode" '' "$BIN/hostile_crash" "$mode" 1000
	done
	short=""
	for i in 1 2 3 4 5 6 7 8 9 10; do
		d=$OUTDIR/crash.round.$i
		mkdir -p "$d"
		(cd "$d" && CUMTRACE_OUTPUT="$d/traced.%p.dump" CUMTRACE_FLUSH_MS=1 LD_PRELOAD=$SHIM \
			timeout -s KILL 60 "$BIN/hostile_crash" segvdfl 1000 >/dev/null 2>&1)
		dump=$(ls "$d"/traced.*.dump 2>/dev/null | head -n 1)
		got=$([ -n "$dump" ] && "$REPORT" summary --format json "$dump" 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["allocations"])' 2>/dev/null)
		[ "$got" = 1000 ] || short="$short $i(${got:-no dump})"
	done
	if [ -z "$short" ]; then
		verdict PASS crash.rounds "10 crashes with a round every millisecond: 1000 allocations in each dump"
	else
		verdict FAIL crash.rounds "allocations lost: runs$short"
	fi
else
	verdict SKIP crash "hostile_crash did not build"
fi

echo "behaviour: $passed passed, $failed failed, $skipped skipped"
