#!/bin/bash
# Is torch's max_memory_reserved under backend:cudaMallocAsync the same from
# run to run without the shim? Runs train.py --mode async untraced and traced,
# alternating, and prints the figure of each run. Needs gpu-kit (scripts/gpu-pack.sh).
cd "$(dirname "$0")/.." || exit 2
KIT=$PWD/gpu-kit
out=${OUT:-/tmp}/async-variance.txt
for i in 1 2 3; do
	for how in untraced traced; do
		if [ $how = traced ]; then
			pre=(env LD_PRELOAD="$KIT/libcumtrace.so" LD_LIBRARY_PATH="$KIT/lib:${LD_LIBRARY_PATH:-}"
				CUMTRACE_OUTPUT=/tmp/async.%p.dump)
		else
			pre=(env)
		fi
		r=$("${pre[@]}" python3 tests/gpu/train.py --mode async 2>/dev/null | grep GROUND_TRUTH |
			python3 -c 'import json,sys; g=json.loads(sys.stdin.read().split(" ",1)[1]); print(g["max_memory_reserved"], g["max_memory_allocated"], round(g["steps_per_s"],1))')
		echo "run $i $how max_reserved/max_allocated/steps_per_s: $r" | tee -a "$out"
	done
done
