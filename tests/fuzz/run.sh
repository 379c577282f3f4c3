#!/bin/sh
# Run the dump fuzzer (built by `make fuzz`) for FUZZ_SECONDS over the seed
# corpus and every regression input, then keep each crashing, leaking,
# timing-out or out-of-memory input in tests/fuzz/regress/ and fail.
# The seeds are given to the fuzzer once per command (tests/fuzz/seed.sh
# expand): each seed's selector picks one command, and mutating the first
# byte of a few-KiB input is rare.
#   FUZZ=build/fuzz/fuzz_dump FUZZ_SECONDS=60 sh tests/fuzz/run.sh [EXTRA LIBFUZZER FLAGS]
# Environment: FUZZ (binary), FUZZ_DIR (work dir), FUZZ_SECONDS (default 60),
# FUZZ_JOBS (parallel fuzzing jobs, default 1).
set -u
FUZZ=${FUZZ:-build/fuzz/fuzz_dump}
FUZZ_DIR=${FUZZ_DIR:-$(dirname "$FUZZ")}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_JOBS=${FUZZ_JOBS:-1}
SEEDS=tests/fuzz/corpus
REGRESS=tests/fuzz/regress
work=$FUZZ_DIR/corpus
art=$FUZZ_DIR/artifacts
expanded=$FUZZ_DIR/seeds
mkdir -p "$work" "$art" "$REGRESS"
rm -rf "$expanded"
sh tests/fuzz/seed.sh expand "$SEEDS" "$expanded" || exit 1
rm -f "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* "$art"/slow-unit-*

# The limits are part of the contract: no input may make the analyzer use
# more than 256 MiB in one allocation or 512 MiB in all, or take 5 s.
flags="-rss_limit_mb=512 -malloc_limit_mb=256 -timeout=5 -max_len=65536 -print_final_stats=1"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# 1. every regression input and seed once (fast, deterministic)
echo "fuzz: replaying $(find "$REGRESS" "$SEEDS" -type f ! -name README.md | wc -l) regression inputs and seeds"
# shellcheck disable=SC2086
"$FUZZ" $flags -artifact_prefix="$art/" $(find "$REGRESS" "$SEEDS" -type f ! -name README.md) \
	>"$FUZZ_DIR/replay.log" 2>&1
replay=$?

# 2. fuzz for FUZZ_SECONDS; new coverage goes to $work, seeds are read only
fuzz=0
if [ "$replay" -eq 0 ] && [ "$FUZZ_SECONDS" -gt 0 ]; then
	if [ "$FUZZ_JOBS" -gt 1 ]; then
		par="-jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS"
	else
		par=
	fi
	# shellcheck disable=SC2086
	"$FUZZ" $flags $par -max_total_time="$FUZZ_SECONDS" -artifact_prefix="$art/" "$@" \
		"$work" "$expanded" "$REGRESS" >"$FUZZ_DIR/fuzz.log" 2>&1
	fuzz=$?
	grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE' "$FUZZ_DIR/fuzz.log" || tail -n 5 "$FUZZ_DIR/fuzz.log"
fi

# 3. keep every finding as a regression input
found=0
for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* "$art"/slow-unit-*; do
	[ -f "$f" ] || continue
	found=$((found + 1))
	cp "$f" "$REGRESS/$(basename "$f")"
	echo "fuzz: FOUND $(basename "$f") -> $REGRESS/$(basename "$f")"
done
if [ "$replay" -ne 0 ] || [ "$fuzz" -ne 0 ] || [ "$found" -gt 0 ]; then
	echo "fuzz: FAILED (replay rc $replay, fuzz rc $fuzz, $found new inputs in $REGRESS)" >&2
	[ "$replay" -ne 0 ] && tail -n 40 "$FUZZ_DIR/replay.log" >&2
	[ "$fuzz" -ne 0 ] && tail -n 60 "$FUZZ_DIR/fuzz.log" >&2
	exit 1
fi
echo "fuzz: ok, no crash, leak, timeout or oom"
