#!/bin/bash
# Do torch's allocations carry Python frames? One traced train.py run with a
# planted leak, then the leak and peak sites, Python frames only.
# Needs gpu-kit (scripts/gpu-pack.sh).
cd "$(dirname "$0")/.." || exit 2
KIT=$PWD/gpu-kit
out=${OUT:-/tmp}
rm -f /tmp/pyf.*.dump
env LD_PRELOAD="$KIT/libcumtrace.so" LD_LIBRARY_PATH="$KIT/lib:${LD_LIBRARY_PATH:-}" CUMTRACE_OUTPUT=/tmp/pyf.%p.dump PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
	timeout 120 python3 tests/gpu/train.py --mode nocache --steps 10 --leak-bytes 1048588 | grep -c GROUND_TRUTH
dump=$(ls /tmp/pyf.*.dump | head -n 1)
for cmd in leaks peak; do
	LD_LIBRARY_PATH=$KIT/lib timeout 60 "$KIT/cumtrace-report" "$cmd" --python-only --top 3 "$dump" 2>&1 | head -n 40
done | tee "$out/pyframes.txt"
