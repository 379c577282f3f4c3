#!/bin/bash
# Python frames on torch: one traced tests/gpu/train.py run (--mode nocache, so
# that every tensor is its own cudaMalloc, with a leak planted every step),
# then the leak and peak sites with Python frames only: the top 5 of each as
# text, for reading, and the check of scripts/pyframes-check.py over all of
# them: the planted leak's site names train.py's leak line, and some leak site
# and some peak site name both train.py and torch's own Python code. Output
# in $OUT/pyframes.txt (default /tmp). Exit 0 when the check passes, 1 when it
# fails, 2 when no dump was made. Needs gpu-kit (scripts/gpu-pack.sh).
#
# A dry run with the fake CUDA runtime (tests/e2e/t_python_gpucheck.sh) sets
# KIT (a kit whose lib/ holds the fake libcudart), TRAIN (a stand-in script
# taking train.py's arguments) and LIB (the stand-in library's path fragment).
cd "$(dirname "$0")/.." || exit 2
KIT=${KIT:-$PWD/gpu-kit}
TRAIN=${TRAIN:-tests/gpu/train.py}
LIB=${LIB:-/torch/}
out=${OUT:-/tmp}
leak_bytes=1048588
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
env LD_PRELOAD="$KIT/libcumtrace.so" LD_LIBRARY_PATH="$KIT/lib:${LD_LIBRARY_PATH:-}" \
	CUMTRACE_OUTPUT="$tmp/pyf.%p.dump" CUMTRACE_QUIET=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
	timeout 300 python3 "$TRAIN" --mode nocache --steps 10 --leak-bytes "$leak_bytes" >"$tmp/train.txt"
echo "train exit status $?: $(grep -c GROUND_TRUTH "$tmp/train.txt") GROUND_TRUTH line(s)"
dump=$(ls "$tmp"/pyf.*.dump 2>/dev/null | head -n 1)
[ -n "$dump" ] || { echo "no dump was made"; exit 2; }
report() { LD_LIBRARY_PATH=$KIT/lib timeout 120 "$KIT/cumtrace-report" "$@" "$dump"; }
{
	for cmd in leaks peak; do
		report "$cmd" --python-only --top 5 2>&1 | head -n 60
		report "$cmd" --python-only --top 0 --format json -o "$tmp/$cmd.json"
	done
	python3 scripts/pyframes-check.py "$tmp/leaks.json" "$tmp/peak.json" --script "$TRAIN" \
		--leak-line "$(grep -n 'leak.append(' "$TRAIN" | head -n 1 | cut -d: -f1)" \
		--leak-bytes "$leak_bytes" --lib "$LIB"
} >"$tmp/pyframes.txt" 2>&1
rc=$?
cp "$tmp/pyframes.txt" "$out/pyframes.txt"
cat "$out/pyframes.txt"
exit $rc
