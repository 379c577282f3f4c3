#!/bin/sh
# The bundled demo: a simulated training job traced by cumtrace.
# On a machine without a GPU this runs against the FAKE CUDA runtime that the
# test suite builds (tests/fake): host memory standing in for device memory.
set -eu
BUILD=${BUILD:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${DEMO_DIR:-$root/$BUILD/demo}
mkdir -p "$out"
rm -f "$out"/demo.*.dump*
echo "==================================================================="
echo " cumtrace demo -- FAKE CUDA runtime (tests/fake), no GPU involved"
echo "==================================================================="
LD_LIBRARY_PATH=$root/$BUILD/tests/fake CUMTRACE_LIB=$root/$BUILD/libcumtrace.so \
	CUMTRACE_REPORT=$root/$BUILD/cumtrace-report \
	sh "$root/bin/cumtrace" run -o "$out/demo.%p.dump" -- "$root/$BUILD/tests/progs/demo_train"
dump=$(ls "$out"/demo.*.dump | head -n 1)
for view in leaks peak timeline; do
	echo
	echo "---- cumtrace-report $view $dump"
	"$root/$BUILD/cumtrace-report" "$view" "$dump"
done
"$root/$BUILD/cumtrace-report" timeline --format csv -o "$out/timeline.csv" "$dump"
echo
echo "demo: dump $dump, CSV timeline $out/timeline.csv"
