#!/usr/bin/env bash
# The shim's own time per traced call (fw_selftime.py) for several builds of the shim in one
# device call: the kit's own libcumtrace.so ("kit") and every KIT/variants/NAME.so (a shim built
# from another tree, copied there after scripts/gpu-pack.sh). Each runs in a kit of its own
# (its .so beside links to the kit's lib/ and python/), in the order kit, A, B, ... and then
# reversed, so that what comes from a process's place in the sequence (runs 31-33: the first
# traced process of a step read a slower native-stack phase) falls on every build alike.
#
#   bash tests/gpu/selftime_variants.sh KIT MODES STEPS [CPUS]
set -u
KIT=$(cd "$1" && pwd)
MODES=$2 STEPS=$3 CPUS=${4:-}
HERE=$(cd "$(dirname "$0")" && pwd)
names=(kit)
for so in "$KIT"/variants/*.so; do
	[ -f "$so" ] || continue
	name=$(basename "$so" .so)
	d=/tmp/selftime-kit-$name
	rm -rf "$d" && mkdir -p "$d" || exit 1
	cp "$so" "$d/libcumtrace.so" && ln -s "$KIT/lib" "$d/lib" && ln -s "$KIT/python" "$d/python" || exit 1
	names+=("$name")
done
if [ ${#names[@]} -eq 1 ]; then
	echo "selftime_variants: no $KIT/variants/*.so: only the kit's own shim runs" >&2
fi
order=("${names[@]}")
for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[i]}"); done
n=0
for name in "${order[@]}"; do
	n=$((n + 1))
	kit=$KIT
	[ "$name" = kit ] || kit=/tmp/selftime-kit-$name
	echo "== run $n: $name ($(date -u +%T))"
	python3 "$HERE/fw_selftime.py" --kit "$kit" --out "/tmp/selftime-$n-$name" --modes "$MODES" \
		--steps "$STEPS" ${CPUS:+--cpus "$CPUS"} | grep -v '^RAW'
done
