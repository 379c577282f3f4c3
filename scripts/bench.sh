#!/bin/sh
# Capture cost per event against the fake CUDA runtime, measured in one run:
# the same program untraced and traced, stacks off and at depth 22.
# Each figure is the median of REPS runs; the cost per event is
# (traced - untraced) / 2 per pair (a pair is one alloc and one free event).
set -eu
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
prog=$root/$BUILD/tests/progs/bench_alloc
fake=$root/$BUILD/tests/fake
shim=$root/$BUILD/libcumtrace.so
pairs=${PAIRS:-200000}
reps=${REPS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# measure DEPTH THREADS [ENV...]: median ns per pair
measure() {
	d=$1
	th=$2
	shift 2
	i=0
	while [ $i -lt "$reps" ]; do
		env LD_LIBRARY_PATH="$fake" CUMTRACE_OUTPUT="$tmp/b.%p.dump" CUMTRACE_QUIET=1 "$@" \
			"$prog" "$pairs" "$d" "$th"
		rm -f "$tmp"/b.*.dump
		i=$((i + 1))
	done | median
}

echo "cumtrace capture benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, fake CUDA runtime)"
echo "pairs per run: $pairs x threads, median of $reps runs"
printf '%-34s %12s %12s\n' "configuration" "ns/pair" "ns/event"
base22=$(measure 22 1)
printf '%-34s %12s %12s\n' "untraced, depth 22" "$base22" "-"
for cfg in "0:stacks off" "22:stack depth 22"; do
	depth=${cfg%%:*}
	label=${cfg#*:}
	t=$(measure 22 1 LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH="$depth")
	per=$(echo "$t $base22" | awk '{ printf "%.1f", ($1 - $2) / 2 }')
	printf '%-34s %12s %12s\n' "traced, $label" "$t" "$per"
done
for th in 1 2 4 8; do
	b=$(measure 22 "$th")
	t=$(measure 22 "$th" LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=0)
	per=$(echo "$t $b" | awk '{ printf "%.1f", ($1 - $2) / 2 }')
	printf '%-34s %12s %12s\n' "traced, stacks off, $th threads" "$t" "$per"
done
# Python: the same pairs from CPython through ctypes, 10 frames deep
# (tests/e2e/py_bench.py measures inside the interpreter), with the GIL held
# during the call (ctypes.PyDLL) and released (ctypes.CDLL). The runs of the
# three configurations of a loader alternate, so that a change in the machine's
# load hits them alike. Python frames are captured for allocations only: their
# cost per allocation is the difference per pair between frames on and off.
if command -v python3 >/dev/null 2>&1; then
	pyb=$root/tests/e2e/py_bench.py
	pypairs=${PY_PAIRS:-100000}
	pyrun() { # LOADER [ENV...]: ns per pair of one run
		loader=$1
		shift
		env LD_LIBRARY_PATH="$fake" CUMTRACE_OUTPUT="$tmp/p.%p.dump" CUMTRACE_QUIET=1 "$@" \
			python3 "$pyb" "$fake" "$pypairs" "$loader"
		rm -f "$tmp"/p.*.dump
	}
	for cfg in "pydll:GIL held" "cdll:GIL released"; do
		loader=${cfg%%:*}
		gil=${cfg#*:}
		rm -f "$tmp"/py.*
		i=0
		while [ $i -lt "$reps" ]; do
			pyrun "$loader" >>"$tmp/py.base"
			pyrun "$loader" LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=22 CUMTRACE_PYTHON=0 >>"$tmp/py.off"
			pyrun "$loader" LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=22 CUMTRACE_PYTHON=1 >>"$tmp/py.on"
			i=$((i + 1))
		done
		pb=$(median <"$tmp/py.base")
		off=$(median <"$tmp/py.off")
		on=$(median <"$tmp/py.on")
		printf '%-34s %12s %12s\n' "python $loader, untraced" "$pb" "-"
		for t in "Python frames off:$off" "Python frames on:$on"; do
			per=$(echo "${t#*:} $pb" | awk '{ printf "%.1f", ($1 - $2) / 2 }')
			printf '%-34s %12s %12s\n' "traced, ${t%%:*}" "${t#*:}" "$per"
		done
		echo "$on $off" | awk -v g="$gil" '{ printf "  Python frames (%s): %.1f ns per allocation\n", g, $1 - $2 }'
	done
fi
