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
	gcc $CFLAGS -o "$BIN/$name" "$src" "$@" >"$OUTDIR/build.$name.log" 2>&1
}
build paths_twin "$SRC/progs/paths_twin.c" -ldl
gcc $CFLAGS -shared -fPIC -Wl,-soname,libcttwin.so -o "$BIN/libcttwin.so" "$SRC/libs/twin.c" \
	$LIBS >"$OUTDIR/build.libcttwin.log" 2>&1
for p in hostile_fds hostile_limits hostile_signal; do
	build "$p" "$SRC/progs/$p.c" $LIBS
done

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
else
	verdict SKIP nofile "hostile_limits did not build"
fi

# 14.5: signal handlers that call CUDA.
if [ -x "$BIN/hostile_signal" ]; then
	for mode in ${SIGNAL_MODES:-}; do
		twin "signal.$mode" '' "$BIN/hostile_signal" "$mode"
	done
else
	verdict SKIP signal "hostile_signal did not build"
fi

echo "behaviour: $passed passed, $failed failed, $skipped skipped"
