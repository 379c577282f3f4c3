#!/usr/bin/env bash
# The analyzer against heaptrack_print on a machine with more cores than the 2-core development VM
# (issue 15: cumtrace-report leaks at most 0.5x heaptrack_print's time and 1x its peak RSS).
#
#   bash tests/gpu/analyzer_bench.sh KIT [REPS]
#
# KIT/bench/ comes from GPU_PACK_BENCH=1 bash scripts/gpu-pack.sh: bench.dump (bench_alloc
# 2000000 3 1 traced on the fake runtime: 4M events), bench.heaptrack.zst (heaptrack's file of the
# same loop) and heaptrack_print with its Boost libraries. Runs, REPS times each (default 9),
# alternating: cumtrace-report leaks reading on one thread plus the zstd read-ahead
# (CUMTRACE_REPORT_PIPELINE=0), reading on a second thread (=1), with the default choice (unset),
# and heaptrack_print; on every CPU of the machine and again pinned to two CPUs (taskset -c 0,1,
# the development VM's count). Prints the medians (wall, CPU = user + sys, peak RSS) and the ratios.
set -u
KIT=$(cd "$1" && pwd)
REPS=${2:-9}
B=$KIT/bench
for f in "$B/bench.dump" "$B/bench.heaptrack.zst" "$B/heaptrack_print" "$KIT/cumtrace-report"; do
	[ -f "$f" ] || { echo "analyzer_bench: FAIL: $f missing (pack with GPU_PACK_BENCH=1)"; exit 1; }
done
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUMTRACE_REPORT_DEBUGINFO_PATH=-
tmp=$(mktemp -d)
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
"$B/heaptrack_print" "$B/bench.heaptrack.zst" | grep -m1 'calls to allocation functions' || true
"$KIT/cumtrace-report" summary "$B/bench.dump" | head -n 3
for pin in all 0,1; do
	: >"$tmp/res"
	for ((i = 0; i < REPS; i++)); do
		for c in one two auto ht; do
			case $c in
			one) cmd=(env CUMTRACE_REPORT_PIPELINE=0 "$KIT/cumtrace-report" leaks "$B/bench.dump") ;;
			two) cmd=(env CUMTRACE_REPORT_PIPELINE=1 "$KIT/cumtrace-report" leaks "$B/bench.dump") ;;
			auto) cmd=("$KIT/cumtrace-report" leaks "$B/bench.dump") ;;
			ht) cmd=("$B/heaptrack_print" "$B/bench.heaptrack.zst") ;;
			esac
			[ "$pin" = all ] || cmd=(taskset -c "$pin" "${cmd[@]}")
			/usr/bin/time -f "$c %e %U %S %M" -o "$tmp/t" "${cmd[@]}" >/dev/null 2>&1
			cat "$tmp/t" >>"$tmp/res"
		done
	done
	echo "== CPUs: $pin, $REPS runs each, medians"
	python3 - "$tmp/res" <<'PY'
import statistics as st, sys
rows = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) != 5:
        continue
    c, w, u, s, m = f
    rows.setdefault(c, []).append((float(w), float(u) + float(s), int(m)))
med = {c: tuple(st.median(x[i] for x in v) for i in range(3)) for c, v in rows.items()}
names = {"one": "leaks, pipeline off", "two": "leaks, pipeline on", "auto": "leaks, default", "ht": "heaptrack_print"}
for c in ("one", "two", "auto", "ht"):
    if c in med:
        w, cpu, rss = med[c]
        print("%-22s wall %.3f s  CPU %.3f s  peak RSS %6.1f MiB   (wall range %.3f-%.3f)" % (
            names[c], w, cpu, rss / 1024, min(x[0] for x in rows[c]), max(x[0] for x in rows[c])))
if "ht" in med:
    h = med["ht"]
    for c in ("one", "two", "auto"):
        if c in med:
            m = med[c]
            ok = m[0] / h[0] <= 0.5 and m[2] / h[2] <= 1
            print("%-22s / heaptrack_print: wall %.2fx  CPU %.2fx  RSS %.2fx  goal (<= 0.5x wall, <= 1x RSS): %s" % (
                names[c], m[0] / h[0], m[1] / h[1], m[2] / h[2], "met" if ok else "NOT met"))
PY
done
rm -rf "$tmp"
