#!/bin/sh
# `make bench`: every overhead figure of cumtrace in one table, each measured
# in this run (docs/bench.md says what each row means).
#
#   capture  tests/e2e/progs/bench_alloc: PAIRS allocation/free pairs 22 frames
#            deep on the fake CUDA runtime, untraced and traced; heaptrack
#            traces the same number of malloc/free pairs at the same depth.
#            Cost per pair = traced - untraced (wall time); per event = half.
#            "shim paused": the same loop with tracing paused
#            (cumtrace_bench_pause), the wrappers only forwarding: what
#            tests/gpu/fw_overhead_pair.py's untraced half still pays.
#            Python rows: tests/e2e/py_bench.py (ctypes, 10 Python frames);
#            tests/e2e/py_sites_bench.py (18 places, caches warm and cold):
#            the shim's own time per steady call (CUMTRACE_SELFTIME);
#            tests/e2e/py_threads_bench.py (50 short-lived threads): the
#            record part, huge-page rings on and off;
#            tests/e2e/py_noframe_bench.py (a thread with a Python thread
#            state and no frame, as torch's autograd thread): its steady calls.
#   loop     tests/e2e/progs/async_loop (issue #6) under callgrind: the shim's
#            instructions per allocation, stack cache on and off (LOOP_STEPS).
#   scaling  1, 2, 4, 8 threads at once, stacks off, on the null runtime
#            (tests/fake/nullrt.c: no lock): CPU time per event, traced -
#            untraced, of every thread of the process (the writer's included)
#            and of the allocating threads; on fewer cores than threads wall
#            time would measure the queueing.
#   analyzer cumtrace-report summary on a synthetic dump (build/gendump) of
#            BENCH_EVENTS events and of 10 times as many (skipped with
#            BENCH_BIG=0), against `cat DUMP >/dev/null` of the same file,
#            page-cached; peak RSS; dump bytes per event. Then
#            `cumtrace-report leaks` against heaptrack_print on HT_PAIRS
#            pairs 3 frames deep traced by each tool (time, peak RSS), and
#            on the same loop's dump written with CUMTRACE_PACK=0, taking turns
#            for HT_REPS rounds (11).
# Each capture figure is the median of REPS runs.
set -eu
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
prog=$root/$BUILD/tests/progs/bench_alloc
fake=$root/$BUILD/tests/fake
nullrt=$root/$BUILD/tests/nullrt
rtlib=$fake # the runtime bench_alloc runs on: the fake one, or the null one (scaling)
shim=$root/$BUILD/libcumtrace.so
report=$root/$BUILD/cumtrace-report
gendump=$root/$BUILD/gendump
pairs=${PAIRS:-200000}
reps=${REPS:-5}
events=${BENCH_EVENTS:-10000000}
big=${BENCH_BIG:-1}
heaptrack=${HEAPTRACK:-/usr/bin/heaptrack}
tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/cumtrace-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# calc EXPR: awk arithmetic, one decimal
calc() { awk "BEGIN { printf \"%.1f\", $1 }"; }
calc2() { awk "BEGIN { printf \"%.2f\", $1 }"; }
calc2_3() { awk "BEGIN { printf \"%.3f\", $1 }"; }
# met VALUE GOAL: yes when VALUE <= GOAL
met() { awk -v v="$1" -v g="$2" 'BEGIN { print (v + 0 <= g + 0) ? "yes" : "NO" }'; }
row() { printf '%-56s %10s %9s %4s\n' "$1" "$2" "${3:-}" "${4:-}"; }

# alloc MODE DEPTH THREADS [ENV...]: median wall, process CPU and calling
# threads' CPU ns per pair ("W C T"; bench_alloc.c says what each is)
alloc() {
	mode=$1 d=$2 th=$3
	shift 3
	: >"$tmp/runs"
	i=0
	while [ $i -lt "$reps" ]; do
		out=$(cd "$tmp" && env LD_LIBRARY_PATH="$rtlib" CUMTRACE_OUTPUT="$tmp/b.%p.dump" \
			CUMTRACE_QUIET=1 "$@" "$prog" "$pairs" "$d" "$th" "$mode" 2>/dev/null |
			sed -n 's/^bench_alloc wall=\([0-9.]*\) cpu=\([0-9.]*\) thread=\([0-9.]*\)$/\1 \2 \3/p')
		[ -n "$out" ] || { echo "bench: bench_alloc $mode $d $th $* failed" >&2; exit 1; }
		echo "$out" >>"$tmp/runs"
		i=$((i + 1))
	done
	for f in 1 2 3; do cut -d' ' -f$f "$tmp/runs" | median; done | tr '\n' ' ' | sed 's/ $//'
}
wall() { echo "$1" | cut -d' ' -f1; }
cpu() { echo "$1" | cut -d' ' -f2; }
thr() { echo "$1" | cut -d' ' -f3; }
# keep_dump NAME: move the last traced run's dump aside (for bytes per event)
keep_dump() { for f in "$tmp"/b.*.dump; do [ -f "$f" ] && mv "$f" "$tmp/$1.dump"; done; rm -f "$tmp"/b.*.dump; }

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "cumtrace benchmark, $(date -u +%Y-%m-%d), $(nproc) cores ($cpu_model), fake CUDA runtime"
echo "PAIRS=$pairs REPS=$reps BENCH_EVENTS=$events BENCH_BIG=$big; medians of REPS runs"
row "figure" "value" "goal" "met"

# ---- capture at depth 22: cumtrace against heaptrack -----------------------------------
base=$(alloc cuda 22 1)
d22=$(alloc cuda 22 1 LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=22)
keep_dump d22
ct22=$(calc "$(wall "$d22") - $(wall "$base")")
clock=$(tr '\0' '\n' <"$tmp/d22.dump" | sed -n 's/^setting.clock=//p' | head -n 1)
compress=$(tr '\0' '\n' <"$tmp/d22.dump" | sed -n 's/^setting.compress=//p' | head -n 1)
row "capture d22: untraced cudaMalloc+cudaFree, ns/pair" "$(wall "$base")"
row "capture d22: cumtrace ns/pair (clock $clock, $compress)" "$ct22"
row "capture d22: cumtrace process CPU ns/pair (+ writer)" "$(calc "$(cpu "$d22") - $(cpu "$base")")"
row "capture d22: cumtrace calling thread's CPU ns/pair" "$(calc "$(thr "$d22") - $(thr "$base")")"
# what fw_overhead_pair.py's untraced half still pays: the wrappers forwarding (cumtrace_bench_pause)
paused=$(alloc cuda 22 1 LD_PRELOAD="$shim" BENCH_PAUSED=1)
rm -f "$tmp"/b.*.dump
row "capture d22: shim paused, forwarding only: ns/pair" "$(calc "$(wall "$paused") - $(wall "$base")")"
if [ -x "$heaptrack" ]; then
	mbase=$(alloc malloc 22 1)
	ht=$(alloc malloc 22 1 "$heaptrack" -o "$tmp/ht")
	rm -f "$tmp"/ht*
	htc=$(calc "$(wall "$ht") - $(wall "$mbase")")
	row "capture d22: untraced malloc+free, ns/pair" "$(wall "$mbase")"
	row "capture d22: heaptrack ns/pair (malloc+free)" "$htc"
	row "capture d22: heaptrack process CPU ns/pair" "$(calc "$(cpu "$ht") - $(cpu "$mbase")")"
	row "capture d22: heaptrack calling thread's CPU ns/pair" "$(calc "$(thr "$ht") - $(thr "$mbase")")"
	r=$(calc2 "$ct22 / $htc")
	row "capture d22: cumtrace / heaptrack (wall)" "${r}x" "<= 0.5x" "$(met "$r" 0.5)"
	r=$(calc2 "($(cpu "$d22") - $(cpu "$base")) / ($(cpu "$ht") - $(cpu "$mbase"))")
	row "capture d22: cumtrace / heaptrack (process CPU)" "${r}x" "<= 0.5x" "$(met "$r" 0.5)"
	r=$(calc2 "($(thr "$d22") - $(thr "$base")) / ($(thr "$ht") - $(thr "$mbase"))")
	row "capture d22: cumtrace / heaptrack (calling thread CPU)" "${r}x" "<= 0.5x" "$(met "$r" 0.5)"
else
	row "capture d22: heaptrack" "not installed" "" ""
fi

# ---- stacks off and Python frames ---------------------------------------------------------
off=$(alloc cuda 22 1 LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=0)
keep_dump off
e=$(calc "($(wall "$off") - $(wall "$base")) / 2")
row "capture, stacks off: ns/event (wall)" "$e" "<= 50" "$(met "$e" 50)"
e=$(calc "($(thr "$off") - $(thr "$base")) / 2")
row "capture, stacks off: calling thread's CPU ns/event" "$e" "<= 50" "$(met "$e" 50)"
row "capture, stacks off: process CPU ns/event (+ writer)" "$(calc "($(cpu "$off") - $(cpu "$base")) / 2")"
nz=$(alloc cuda 22 1 LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=0 CUMTRACE_COMPRESS=0)
rm -f "$tmp"/b.*.dump
row "capture, stacks off, COMPRESS=0: process CPU ns/event" "$(calc "($(cpu "$nz") - $(cpu "$base")) / 2")"
mono=$(alloc cuda 22 1 LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=0 CUMTRACE_CLOCK=monotonic)
rm -f "$tmp"/b.*.dump
row "capture, stacks off, CLOCK=monotonic: thread CPU ns/event" "$(calc "($(thr "$mono") - $(thr "$base")) / 2")"
if command -v python3 >/dev/null 2>&1; then
	pyb=$root/tests/e2e/py_bench.py
	pypairs=${PY_PAIRS:-100000}
	pyrun() { # CMD...: one run's ns per pair
		(cd "$tmp" && env LD_LIBRARY_PATH="$fake" CUMTRACE_OUTPUT="$tmp/p.%p.dump" CUMTRACE_QUIET=1 "$@")
		rm -f "$tmp"/p.*.dump
	}
	# GIL held during the call (ctypes.PyDLL) and released (ctypes.CDLL): the
	# walk is the same code; frames are captured for allocations only, so their
	# cost per allocation is the difference per pair between frames on and off.
	# The three configurations take turns, REPS rounds: what the machine does
	# meanwhile (this VM has slow phases of tens of seconds) falls on each alike,
	# and the frames' cost is the median of the rounds' own differences.
	for loader in pydll cdll; do
		: >"$tmp/py.b"
		: >"$tmp/py.0"
		: >"$tmp/py.1"
		: >"$tmp/py.d"
		i=0
		while [ $i -lt "$reps" ]; do
			b=$(pyrun python3 "$pyb" "$fake" "$pypairs" "$loader")
			f0=$(pyrun env CUMTRACE_STACK_DEPTH=22 CUMTRACE_PYTHON=0 LD_PRELOAD="$shim" \
				python3 "$pyb" "$fake" "$pypairs" "$loader")
			f1=$(pyrun env CUMTRACE_STACK_DEPTH=22 CUMTRACE_PYTHON=1 LD_PRELOAD="$shim" \
				python3 "$pyb" "$fake" "$pypairs" "$loader")
			echo "$b" >>"$tmp/py.b"
			echo "$f0" >>"$tmp/py.0"
			echo "$f1" >>"$tmp/py.1"
			calc "$f1 - $f0" >>"$tmp/py.d"
			echo >>"$tmp/py.d"
			i=$((i + 1))
		done
		pb=$(median <"$tmp/py.b")
		pf0=$(median <"$tmp/py.0")
		pf1=$(median <"$tmp/py.1")
		row "capture, python3 $loader d22, Python frames off: ns/event" "$(calc "($pf0 - $pb) / 2")"
		row "capture, python3 $loader d22, Python frames on: ns/event" "$(calc "($pf1 - $pb) / 2")"
		row "capture, python3 $loader: Python frames, ns per allocation" "$(median <"$tmp/py.d")"
	done
	# A loop over 18 places (tests/e2e/py_sites_bench.py), with the caches warm and with 4096
	# pages touched between calls: the shim's own figures (CUMTRACE_SELFTIME) for its steady
	# calls, both stacks known and nothing new written, as in a long training run; and for
	# every call, each place's first calls (unwinding, interning) included. The two
	# configurations take turns, REPS rounds; medians.
	# selftime ERRFILE [VAR=VALUE...] CMD...: CMD traced with CUMTRACE_SELFTIME=1 in $tmp on the
	# fake runtime, its stderr (the shim's line) in ERRFILE
	selftime() {
		err=$1
		shift
		(cd "$tmp" && env LD_LIBRARY_PATH="$fake" CUMTRACE_OUTPUT="$tmp/p.%p.dump" \
			CUMTRACE_SELFTIME=1 LD_PRELOAD="$shim" "$@" >/dev/null 2>"$err")
		rm -f "$tmp"/p.*.dump
	}
	# turns FUNC VALUE...: REPS rounds, each calling FUNC VALUE for every VALUE in turn; FUNC
	# appends its figures to $tmp/FUNC.VALUE (emptied first)
	turns() {
		f=$1
		shift
		for v in "$@"; do : >"$tmp/$f.$v"; done
		i=0
		while [ $i -lt "$reps" ]; do
			for v in "$@"; do "$f" "$v"; done
			i=$((i + 1))
		done
	}
	psb=$root/tests/e2e/py_sites_bench.py
	# steady ERRFILE: the self-time line's calls, every call's mean ns, steady calls, steady ns,
	# and its native stack, Python frames and record ns
	steady() {
		sed -n 's/^cumtrace: self time: \([0-9]*\) calls with stacks, per call \([0-9]*\) ns .*; steady (stacks known, nothing new written): \([0-9]*\) calls, per call \([0-9]*\) ns (native stack \([0-9]*\), Python frames \([0-9]*\), record \([0-9]*\))$/\1 \2 \3 \4 \5 \6 \7/p' "$1"
	}
	sites() { # PAGES
		selftime "$tmp/ps.err" python3 "$psb" "$fake" "${PS_STEPS:-300}" "$1"
		steady "$tmp/ps.err" >>"$tmp/sites.$1"
	}
	# col FILE N: the median of column N of FILE (steady's figures, a line per run)
	col() { awk -v c="$2" '{ print $c }' "$1" | median; }
	# phases FILE: the row of the steady calls' native stack, Python frames and record
	phases() { row "  native stack / Python frames / record" "$(col "$1" 5) / $(col "$1" 6) / $(col "$1" 7)"; }
	turns sites 0 4096
	for pages in 0 4096; do
		f=$tmp/sites.$pages
		[ -s "$f" ] || { row "capture, python3, 18 places, $pages pages apart" "no figures"; continue; }
		row "capture, python3, 18 places, $pages pages apart: steady ns" "$(col "$f" 4)"
		phases "$f"
		row "  steady calls, % / every call's mean ns" "$(calc "100 * $(col "$f" 3) / $(col "$f" 1)") / $(col "$f" 2)"
	done
	# The same loop, 4096 pages apart, on the newest CPython 3.12+ found (tests/e2e/py_lib.sh):
	# the memo by code pointers alone (the bootstrap's code watcher) against the memo that reads
	# each frame's code object (CUMTRACE_PYTHON_BOOT=0: no watcher); taking turns, medians.
	py12=$(. "$root/tests/e2e/py_lib.sh" && py_interpreters | awk '$1 ~ /^3\.1[2-9]$/ { p = $2 } END { print p }')
	watch() { # CUMTRACE_PYTHON_BOOT
		selftime "$tmp/pw.err" CUMTRACE_PYTHON_BOOT="$1" "$py12" "$psb" "$fake" "${PS_STEPS:-300}" 4096
		steady "$tmp/pw.err" >>"$tmp/watch.$1"
	}
	if [ -n "$py12" ]; then
		turns watch 1 0
		pyname=$("$py12" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
		for boot in 1 0; do
			f=$tmp/watch.$boot
			what="watcher $([ "$boot" = 1 ] && echo on || echo off)"
			[ -s "$f" ] || { row "capture, $pyname, $what" "no figures"; continue; }
			row "capture, $pyname, 4096 pages apart, $what: steady ns" "$(col "$f" 4)"
			phases "$f"
		done
	else
		row "capture, CPython 3.12+, code watcher on / off" "none here"
	fi
	# Short-lived threads (tests/e2e/py_threads_bench.py: 5 rounds of 10 threads, 400 calls
	# each): the record part of a call (CUMTRACE_SELFTIME), each new ring's first event in it,
	# with huge-page rings (for the first 4 threads) and without; taking turns, medians.
	ptb=$root/tests/e2e/py_threads_bench.py
	threads() { # CUMTRACE_HUGE_PAGES
		selftime "$tmp/pt.err" CUMTRACE_HUGE_PAGES="$1" python3 "$ptb" "$fake"
		sed -n 's/^cumtrace: self time: .*, record \([0-9]*\)), real call .*/\1/p' "$tmp/pt.err" >>"$tmp/threads.$1"
	}
	turns threads 1 0
	row "capture, 50 short threads: record ns, huge / plain" "$(median <"$tmp/threads.1") / $(median <"$tmp/threads.0")"
	# A thread with a Python thread state and no frame, as torch's autograd thread makes the
	# backward pass's allocations (tests/e2e/py_noframe_bench.py: 1000 pairs, 32,768 pages
	# touched between calls, the fake call 3 us: the setting in which this VM's figures match
	# the H200's, docs/cost.md): its steady calls' figures ("without" Python frames in the self-time
	# line), medians of REPS runs, on the newest CPython 3.12+ found (as torch's wheels run;
	# python3 when none). On the H200 these calls are about half a training step's, and the
	# stacks' cost fell mostly on that thread (run 42).
	nfb=$root/tests/e2e/py_noframe_bench.py
	noframe() { # PAGES
		selftime "$tmp/nf.err" CUMTRACE_FAKE_SPIN_NS=3000 "${py12:-python3}" "$nfb" "$fake" \
			"$root/$BUILD/tests/libs/libpynoframe.so" 1000 "$1"
		sed -n 's/.*; steady with Python frames: .*, without: [0-9]* calls, per call \([0-9]*\) ns (native stack \([0-9]*\), Python \([0-9]*\), record \([0-9]*\)); steady .*/\1 \2 \3 \4/p' \
			"$tmp/nf.err" >>"$tmp/noframe.$1"
	}
	turns noframe 32768
	f=$tmp/noframe.32768
	if [ -s "$f" ]; then
		row "capture, a thread with no Python frame, 32768 pages: steady ns" "$(col "$f" 1)"
		row "  native stack / Python (thread state, no frame) / record" "$(col "$f" 2) / $(col "$f" 3) / $(col "$f" 4)"
	else
		row "capture, a thread with no Python frame" "no figures"
	fi
fi

# ---- the framework layer: tensors of the stand-in for PyTorch's caching allocator -------------
# tests/e2e/torch_fake.py "sites": one tensor from each of 128 call sites a step (each its own
# native call chain, as ATen's ops reach the allocator), allocated and freed; ns per tensor
# (its alloc, free_requested and free_completed events) untraced, with the layer on, and off
# (CUMTRACE_TORCH=0: the CUDA layer only, which the cache-served tensors never reach).
c10=$root/$BUILD/tests/torch/libc10_cuda.so
if command -v python3 >/dev/null 2>&1 && [ -f "$c10" ]; then
	site=$tmp/torchsite
	mkdir -p "$site/torch/lib"
	cp "$c10" "$site/torch/lib/"
	printf "__version__ = '2.11.0+cu130'\n" >"$site/torch/version.py"
	fwsteps=${FW_STEPS:-300}
	fwmeasure() {
		i=0
		while [ $i -lt "$reps" ]; do
			(cd "$tmp" && env LD_LIBRARY_PATH="$fake" CUMTRACE_OUTPUT="$tmp/f.%p.dump" CUMTRACE_QUIET=1 \
				TORCH_FAKE_STEPS="$fwsteps" "$@" python3 "$root/tests/e2e/torch_fake.py" "$fake" "$site" \
				sites "$tmp/f.json" >/dev/null 2>&1 &&
				python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ns_per_tensor"])' "$tmp/f.json")
			rm -f "$tmp"/f.*.dump
			i=$((i + 1))
		done | median
	}
	fb=$(fwmeasure)
	fon=$(fwmeasure LD_PRELOAD="$shim")
	foff=$(fwmeasure LD_PRELOAD="$shim" CUMTRACE_TORCH=0)
	row "framework layer, 128 sites: untraced ns/tensor" "$(calc "$fb")"
	row "framework layer on: ns per tensor event (3 a tensor)" "$(calc "($fon - $fb) / 3")"
	row "framework layer off (CUMTRACE_TORCH=0): ns per tensor" "$(calc "$foff - $fb")"
	row "framework layer: tensors/s traced / untraced, on / off" "$(calc2_3 "$fb / $fon") / $(calc2_3 "$fb / $foff")"
fi

# ---- the stream-ordered loop of issue #6, counted by callgrind ------------------------------
# Instructions inside run() (8 cudaMallocAsync + 8 cudaFreeAsync a step, 6 frames
# deep, -O2) traced - untraced, per allocation with its free: exact where time is noisy.
if command -v valgrind >/dev/null 2>&1; then
	loop=$root/$BUILD/tests/progs/async_loop
	steps=${LOOP_STEPS:-5000}
	allocs=$((8 * (steps + steps / 10)))
	# irs [ENV...]: instructions callgrind counts in run(), the program run under ENV
	irs() {
		(cd "$tmp" && LD_LIBRARY_PATH="$fake" valgrind --tool=callgrind --trace-children=yes \
			--toggle-collect=run --callgrind-out-file="$tmp/cg.%p" env CUMTRACE_QUIET=1 \
			CUMTRACE_OUTPUT="$tmp/l.%p.dump" "$@" "$loop" "$steps" >/dev/null 2>"$tmp/cg.err")
		rm -f "$tmp"/cg.[0-9]* "$tmp"/l.*.dump
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.err" | tail -n 1
	}
	lbase=$(irs)
	lon=$(irs LD_PRELOAD="$shim")
	loff=$(irs LD_PRELOAD="$shim" CUMTRACE_STACK_CACHE=0)
	row "loop d5 -O2 (callgrind): instructions/alloc, cache on" "$(calc "($lon - $lbase) / $allocs")"
	row "loop d5 -O2 (callgrind): instructions/alloc, cache off" "$(calc "($loff - $lbase) / $allocs")"
else
	row "loop d5 -O2 (callgrind)" "no valgrind" "" ""
fi

# ---- scaling: CPU time per event, on the null runtime ------------------------------------
# The fake runtime serialises every allocation on one mutex: with more threads
# than cores, untraced runs spend CPU in futex contention that traced runs
# (spaced out by the tracer) partly avoid, and a difference measured the mutex
# (it came out negative). The null runtime (tests/fake/nullrt.c) takes no lock,
# so traced - untraced is the tracer's own cost at each thread count.
rtlib=$nullrt
one= one_t=
for th in 1 2 4 8; do
	b=$(alloc cuda 22 "$th")
	t=$(alloc cuda 22 "$th" LD_PRELOAD="$shim" CUMTRACE_STACK_DEPTH=0)
	c=$(calc "($(cpu "$t") - $(cpu "$b")) / 2")
	ct=$(calc "($(thr "$t") - $(thr "$b")) / 2")
	[ -n "$one" ] || { one=$c; one_t=$ct; }
	row "scaling, $th threads: CPU ns/event, process / threads" "$c / $ct"
done
rtlib=$fake
if awk -v a="$one" -v b="$c" 'BEGIN { exit !(a > 0 && b > 0) }'; then
	r=$(calc2 "$c / $one")
	row "scaling: 8 threads / 1 thread, process CPU per event" "${r}x" "<= 2x" "$(met "$r" 2)"
	r=$(calc2 "$ct / $one_t")
	row "scaling: 8 threads / 1 thread, threads' CPU per event" "${r}x" "<= 2x" "$(met "$r" 2)"
else
	row "scaling: 8 threads / 1 thread, CPU per event" "n/a" "<= 2x" "-"
fi

# ---- the analyzer ----------------------------------------------------------------------------
# secs CMD...: wall seconds CMD takes (ns clock); its output goes to /dev/null
secs() {
	s0=$(date +%s%N)
	"$@" >/dev/null
	s1=$(date +%s%N)
	calc2_3 "($s1 - $s0) / 1e9"
}
# analyze N: "SECONDS CAT_SECONDS RSS_KIB BYTES" for a synthetic dump of N events
analyze() {
	dump=$tmp/g.dump
	"$gendump" -n "$1" "$dump" >/dev/null
	bytes=$(wc -c <"$dump")
	cat "$dump" >/dev/null
	best_cat=
	for i in 1 2 3; do
		s=$(secs cat "$dump")
		best_cat=$(awk -v a="$s" -v b="${best_cat:-$s}" 'BEGIN { print (a < b) ? a : b }')
	done
	s=$(secs /usr/bin/time -f '%M' -o "$tmp/t" "$report" summary "$dump")
	rm -f "$dump"
	echo "$s $best_cat $(cat "$tmp/t") $bytes"
}
# analyzer_rows N: the rows for a synthetic dump of N events; sets rss (KiB)
analyzer_rows() {
	set -- "$1" $(analyze "$1")
	row "analyzer, $1 events: seconds (cat: $3 s)" "$2"
	r=$(calc "$2 / $3")
	row "analyzer, $1 events: time / cat" "${r}x" "<= 3x" "$(met "$r" 3)"
	row "analyzer, $1 events: peak RSS, MiB" "$(calc "$4 / 1024")"
	r=$(calc2 "$5 / $1")
	row "dump bytes/event, synthetic $1 events" "$r" "<= 12" "$(met "$r" 12)"
	rss=$4
}
analyzer_rows "$events"
if [ "$big" = 1 ]; then
	rss1=$rss
	analyzer_rows $((events * 10))
	r=$(calc2 "$rss / $rss1")
	row "analyzer: peak RSS $((events * 10)) / $events events" "${r}x" "<= 2x" "$(met "$r" 2)"
fi
# ---- the analyzer against heaptrack_print, on the same number of events ------------------------
# HT_PAIRS allocation/free pairs 3 frames deep (bench_alloc), traced by
# cumtrace on the fake runtime and by heaptrack on malloc; then
# `cumtrace-report leaks` on the dump against `heaptrack_print` on its file:
# median wall and CPU (user + sys) seconds of HT_REPS rounds (default 11) in
# which the commands take turns (this VM has slow phases of tens of seconds:
# each falls on all alike), and peak RSS. Wall time is read in nanoseconds
# (/usr/bin/time's own is in hundredths, a 5% step at these 0.2 s). On a
# shared machine wall time measures the queue for the cores: CPU time is the
# steadier figure.
# one_run FILE CMD...: append "WALL_S CPU_S RSS_KIB" of one run of CMD, its output to /dev/null
one_run() {
	f=$1
	shift
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$tmp/t" "$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	awk -v w="$((t1 - t0))" '{ printf "%.4f %.2f %s\n", w / 1e9, $1 + $2, $3 }' "$tmp/t" >>"$f"
}
# stats FILE: "WALL CPU RSS_KIB", the medians of one_run's lines
stats() { for k in 1 2 3; do cut -d' ' -f$k "$1" | median; done | tr '\n' ' ' | sed 's/ $//'; }
htprint=${HEAPTRACK_PRINT:-/usr/bin/heaptrack_print}
htpairs=${HT_PAIRS:-2000000}
if [ -x "$heaptrack" ] && [ -x "$htprint" ] && [ -x /usr/bin/time ]; then
	(cd "$tmp" && env LD_LIBRARY_PATH="$fake" LD_PRELOAD="$shim" CUMTRACE_QUIET=1 \
		CUMTRACE_OUTPUT="$tmp/hc.%p.dump" "$prog" "$htpairs" 3 1 cuda >/dev/null 2>&1) || :
	(cd "$tmp" && env LD_LIBRARY_PATH="$fake" "$heaptrack" -o "$tmp/hh" "$prog" "$htpairs" 3 1 malloc \
		>/dev/null 2>&1) || :
	# the same loop with events as 80-byte records (CUMTRACE_PACK=0, the layout before issue 15)
	(cd "$tmp" && env LD_LIBRARY_PATH="$fake" LD_PRELOAD="$shim" CUMTRACE_QUIET=1 CUMTRACE_PACK=0 \
		CUMTRACE_OUTPUT="$tmp/hu.%p.dump" "$prog" "$htpairs" 3 1 cuda >/dev/null 2>&1) || :
	set -- "$tmp"/hc.*.dump
	ctdump=$1
	set -- "$tmp"/hu.*.dump
	ctdump_unpacked=$1
	set -- "$tmp"/hh.*
	htfile=$1
	if [ -f "$ctdump" ] && [ -f "$htfile" ]; then
		for k in c h c2 c0; do : >"$tmp/rs.$k"; done
		i=0
		while [ $i -lt "${HT_REPS:-11}" ]; do
			one_run "$tmp/rs.c" "$report" leaks "$ctdump"
			one_run "$tmp/rs.h" "$htprint" "$htfile"
			# reading on a second thread (read/pipe.h), on by default from 3 CPUs
			one_run "$tmp/rs.c2" env CUMTRACE_REPORT_PIPELINE=1 "$report" leaks "$ctdump"
			[ -f "$ctdump_unpacked" ] && one_run "$tmp/rs.c0" "$report" leaks "$ctdump_unpacked"
			i=$((i + 1))
		done
		c=$(stats "$tmp/rs.c")
		h=$(stats "$tmp/rs.h")
		c2=$(stats "$tmp/rs.c2")
		lbl="leaks vs heaptrack_print, $htpairs pairs d3"
		row "$lbl: cumtrace-report leaks wall / CPU s" "$(wall "$c") / $(cpu "$c")"
		if [ -f "$ctdump_unpacked" ]; then
			c0=$(stats "$tmp/rs.c0")
			row "$lbl: ... dump written with CUMTRACE_PACK=0, wall / CPU s" "$(wall "$c0") / $(cpu "$c0")"
			row "$lbl: dump bytes/event, packed / CUMTRACE_PACK=0" \
				"$(calc2 "$(wc -c <"$ctdump") / ($htpairs * 2)") / $(calc2 "$(wc -c <"$ctdump_unpacked") / ($htpairs * 2)")"
		fi
		row "$lbl: ... CUMTRACE_REPORT_PIPELINE=1 wall / CPU s" "$(wall "$c2") / $(cpu "$c2")"
		row "$lbl: heaptrack_print wall / CPU s" "$(wall "$h") / $(cpu "$h")"
		row "$lbl: peak RSS MiB, cumtrace / heaptrack" "$(calc "$(thr "$c") / 1024") / $(calc "$(thr "$h") / 1024")"
		r=$(calc2_3 "$(wall "$c") / $(wall "$h")")
		row "$lbl: cumtrace / heaptrack_print (wall)" "${r}x" "<= 0.5x" "$(met "$r" 0.5)"
		r=$(calc2 "$(cpu "$c") / $(cpu "$h")")
		row "$lbl: cumtrace / heaptrack_print (CPU)" "${r}x" "<= 0.5x" "$(met "$r" 0.5)"
		r=$(calc2 "$(thr "$c") / $(thr "$h")")
		row "$lbl: cumtrace / heaptrack_print (peak RSS)" "${r}x" "<= 1x" "$(met "$r" 1)"
	else
		row "leaks vs heaptrack_print" "no dump" "" ""
	fi
	rm -f "$tmp"/hc.*.dump "$tmp"/hu.*.dump "$tmp"/hh.*
else
	row "leaks vs heaptrack_print" "not installed" "" ""
fi

# What the capture runs above wrote (one stack, one address: compresses best).
for d in off d22; do
	nev=$("$report" summary --format json "$tmp/$d.dump" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["dumps"][0]["events"])' 2>/dev/null || echo 0)
	[ "$nev" -gt 0 ] 2>/dev/null &&
		row "dump bytes/event, bench_alloc ($d)" "$(calc2 "$(wc -c <"$tmp/$d.dump") / $nev")"
done
exit 0
