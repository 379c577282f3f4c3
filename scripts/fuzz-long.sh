#!/usr/bin/env bash
# A long fuzzing run of the dump fuzzer (tests/fuzz/fuzz_dump.c) on a machine with
# many cores: N libFuzzer jobs in parallel for a given time, then
#   - the corpus they grew, merged (minimized) with the seeds into OUT/merged/ (laid out
#     like tests/fuzz/corpus/: harness inputs, selector first; copy what you want to keep),
#   - every crash, leak, timeout or out-of-memory input copied to tests/fuzz/regress/,
#   - the total number of executions (the sum of each job's stat::number_of_executed_units).
#
#   bash scripts/fuzz-long.sh [--bin FUZZER] [--seconds S] [--jobs N] [--out DIR] [-- FLAGS...]
#
#   --bin FUZZER   a built fuzzer (gpu-kit/fuzz_dump from scripts/gpu-pack.sh on a machine
#                  without clang); default: `make fuzz-build`, then build/fuzz/fuzz_dump
#   --seconds S    fuzzing time of each job (default 500)
#   --jobs N       parallel jobs (default: the number of cores less 2, at least 1)
#   --out DIR      work directory (default fuzz-long/, in .gitignore); its corpus/ is kept
#                  and grows from one run to the next
#   FLAGS          more libFuzzer flags for every job
#
# The limits are those of `make fuzz` (tests/fuzz/run.sh): 256 MiB per allocation, 512 MiB
# per job, 5 s per input. A binary next to a lib/ (and lib-extra/) folder, as in gpu-kit/,
# runs with those libraries first on its library path: they are the ones it was linked with.
# Exit status: 0 when every job ran its time and found nothing, 1 otherwise, 2 on bad usage.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BIN=
SECONDS_EACH=500
JOBS=$(($(nproc) > 3 ? $(nproc) - 2 : 1))
OUT=$ROOT/fuzz-long
usage() {
	echo "usage: bash scripts/fuzz-long.sh [--bin FUZZER] [--seconds S] [--jobs N] [--out DIR] [-- FLAGS...]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--bin) [ $# -ge 2 ] || usage; BIN=$2; shift 2 ;;
	--seconds) [ $# -ge 2 ] || usage; SECONDS_EACH=$2; shift 2 ;;
	--jobs) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
case $SECONDS_EACH in '' | *[!0-9]*) echo "fuzz-long: --seconds: not a number: $SECONDS_EACH" >&2; exit 2 ;; esac
case $JOBS in '' | *[!0-9]* | 0) echo "fuzz-long: --jobs: not a positive number: $JOBS" >&2; exit 2 ;; esac
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac

if [ -z "$BIN" ]; then
	echo "fuzz-long: make fuzz-build"
	make -j"$(nproc)" fuzz-build >/dev/null || { echo "fuzz-long: the fuzzer did not build (clang?)" >&2; exit 1; }
	BIN=build/fuzz/fuzz_dump
fi
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
[ -x "$BIN" ] || { echo "fuzz-long: $BIN: not an executable" >&2; exit 2; }
bindir=$(dirname "$BIN")
for d in "$bindir/lib-extra" "$bindir/lib"; do
	[ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

SEEDS=tests/fuzz/corpus
REGRESS=tests/fuzz/regress
mkdir -p "$OUT/corpus" "$OUT/artifacts" "$OUT/logs" "$REGRESS"
rm -rf "$OUT/seeds" "$OUT/merged" "$OUT"/logs/* "$OUT"/artifacts/*
sh tests/fuzz/seed.sh expand "$SEEDS" "$OUT/seeds" || exit 1

flags=(-rss_limit_mb=512 -malloc_limit_mb=256 -timeout=5 -max_len=65536 -print_final_stats=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# 1. every regression input and seed once: a binary that cannot run here fails now
mapfile -t known < <(find "$REGRESS" "$SEEDS" -type f ! -name README.md)
echo "fuzz-long: $BIN: replaying ${#known[@]} regression inputs and seeds"
if ! "$BIN" "${flags[@]}" -artifact_prefix="$OUT/artifacts/" "${known[@]}" >"$OUT/logs/replay.log" 2>&1; then
	tail -n 30 "$OUT/logs/replay.log" >&2
	echo "fuzz-long: FAILED: the replay (log: $OUT/logs/replay.log)" >&2
	rc=1
else
	rc=0
fi

# 2. N jobs, each for S seconds; they share OUT/corpus (each writes its new inputs there
# and picks up the others'). libFuzzer writes job K's output to fuzz-K.log in its directory.
start=$(date +%s)
if [ $rc -eq 0 ]; then
	echo "fuzz-long: $JOBS jobs x ${SECONDS_EACH} s (logs: $OUT/logs/fuzz-*.log)"
	(cd "$OUT/logs" && "$BIN" "${flags[@]}" -jobs="$JOBS" -workers="$JOBS" \
		-max_total_time="$SECONDS_EACH" -artifact_prefix="$OUT/artifacts/" "$@" \
		"$OUT/corpus" "$OUT/seeds" "$ROOT/$REGRESS" >"$OUT/logs/main.log" 2>&1)
fi
wall=$(($(date +%s) - start))

# 3. the totals, from each job's final statistics
total=0
jobs_done=0
for log in "$OUT"/logs/fuzz-*.log; do
	[ -f "$log" ] || continue
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
	if [ -n "$n" ]; then
		jobs_done=$((jobs_done + 1))
		total=$((total + n))
		echo "  $(basename "$log"): $n executions, peak RSS ${rss:-?} MiB"
	else
		echo "  $(basename "$log"): no final statistics (the job stopped early):" >&2
		grep -E 'ERROR|SUMMARY|DEADLYSIGNAL|==[0-9]+==' "$log" | head -n 5 >&2
		rc=1
	fi
done

# 4. every finding becomes a regression input
found=0
for f in "$OUT"/artifacts/crash-* "$OUT"/artifacts/leak-* "$OUT"/artifacts/timeout-* \
	"$OUT"/artifacts/oom-* "$OUT"/artifacts/slow-unit-*; do
	[ -f "$f" ] || continue
	found=$((found + 1))
	cp "$f" "$REGRESS/"
	echo "fuzz-long: FOUND $(basename "$f") -> $REGRESS/$(basename "$f")"
	# the input itself, so that it survives where only this output comes back (a remote run)
	echo "fuzz-long: $(basename "$f") in base64 (base64 -d > FILE):"
	base64 -w 76 "$f"
done
if [ $found -ne 0 ]; then
	rc=1
	echo "fuzz-long: the jobs' reports:"
	grep -h -A40 -E 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)' \
		"$OUT"/logs/fuzz-*.log | head -n 400
fi

# 5. the grown corpus, minimized together with the seeds
if [ "$(find "$OUT/corpus" -type f | wc -l)" -gt 0 ]; then
	mkdir -p "$OUT/merged"
	if "$BIN" "${flags[@]}" -merge=1 "$OUT/merged" "$OUT/seeds" "$OUT/corpus" >"$OUT/logs/merge.log" 2>&1; then
		echo "fuzz-long: merged corpus: $(find "$OUT/merged" -type f | wc -l) inputs in $OUT/merged" \
			"(from $(find "$OUT/corpus" -type f | wc -l) found and $(find "$OUT/seeds" -type f | wc -l) seeds)"
	else
		echo "fuzz-long: the merge failed (log: $OUT/logs/merge.log)" >&2
		rc=1
	fi
fi

echo "fuzz-long: total executions: $total ($jobs_done of $JOBS jobs reported, ${wall} s wall," \
	"$((total / (wall > 0 ? wall : 1))) executions/s together)"
if [ $rc -eq 0 ]; then
	echo "fuzz-long: ok, no crash, leak, timeout or oom"
else
	echo "fuzz-long: FAILED ($found new inputs in $REGRESS)" >&2
fi
exit $rc
