#!/bin/sh
# hostile-signal-figures.sh SHIM RUNS OUT: the figures of docs/reliability.md "Issue 14.5":
# hostile_signal (tests/e2e/progs) on the null runtime under SHIM: start RUNS times, dlopen 3000
# RUNS times (counts of exit 0, hung and other), nested 200000 three times (calls made, recorded,
# counted as dropped). BUILD_DIR: the build folder with the test programs (default build/).
B=${BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}
[ $# -eq 3 ] || { echo "usage: $0 SHIM RUNS OUT" >&2; exit 2; }
SHIM=$1 RUNS=$2 OUT=$3
mkdir -p "$OUT"; rm -f "$OUT"/*
one() { # NAME LIMIT ARGS
	n=$1 lim=$2; shift 2
	LD_LIBRARY_PATH=$B/tests/nullrt LD_PRELOAD=$SHIM CUMTRACE_QUIET=1 CUMTRACE_OUTPUT="$OUT/$n.%p.dump" \
		timeout -s KILL "$lim" "$B/tests/progs/hostile_signal" "$@" >"$OUT/$n.out" 2>"$OUT/$n.err"
	echo $?
}
for mode in start dlopen; do
	ok=0 hung=0 other=0
	for i in $(seq "$RUNS"); do
		if [ $mode = start ]; then rc=$(one start$i 10 start); else rc=$(one dl$i 30 dlopen 3000 "$B/tests/libs/libcttls.so"); fi
		case $rc in 0) ok=$((ok+1));; 137) hung=$((hung+1));; *) other=$((other+1));; esac
		rm -f "$OUT"/*.dump
	done
	echo "$mode: $RUNS runs: $ok exit 0, $hung hung (killed after the limit), $other other"
done
for i in 1 2 3; do
	rc=$(one nested$i 120 nested 200000)
	made=$(awk '$1=="expect" && $2=="calls" {print $3}' "$OUT/nested$i.out")
	d=$(ls "$OUT"/nested$i.*.dump 2>/dev/null | head -1)
	rec=$([ -n "$d" ] && $B/cumtrace-report summary --format json "$d" 2>/dev/null | python3 -c '
import json,sys; j=json.load(sys.stdin); d=j["dumps"][0]
print(sum(a["calls"] for a in j["summary"]["apis"].values()), d.get("dropped_in_signal_handlers","n/a"), d.get("dropped_events","n/a"))')
	echo "nested run $i: exit $rc, calls made $made, recorded / dropped in handlers / dropped in all: $rec"
	rm -f "$OUT"/*.dump
done
