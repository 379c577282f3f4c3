#!/usr/bin/env bash
# Build cumtrace here and put into gpu-kit/ everything the GPU machine needs to run
# scripts/gpu-validate.sh (see docs/gpu-results.md):
#
#   gpu-kit/libcumtrace.so, gpu-kit/cumtrace-report   the binaries built here
#   gpu-kit/fuzz_dump   the dump fuzzer (clang here; its libFuzzer and sanitizer runtimes
#                       are static), for bash scripts/fuzz-long.sh --bin gpu-kit/fuzz_dump
#   gpu-kit/lib/        shared libraries they need that the GPU machine (Ubuntu 24.04)
#                       lacks: libunwind, libdw, libelf
#   gpu-kit/lib-extra/  their other non-glibc dependencies (liblzma, zlib, ...): used
#                       there only where the system has no library of that name
#   gpu-kit/src/        tests/gpu (the validation programs and scripts)
#   gpu-kit/python/     the Python package (python/cumtrace), beside the shim as its
#                       bootstrap wants it (tests/gpu/pyboot_check.py)
#   gpu-kit/pydeps/     Debian's pytest and its pure-Python dependencies (tests/gpu/pytest_torch.sh)
#   gpu-kit/MANIFEST.txt what was packed, from which build, and what is missing
#
# gpu-kit/ is ignored through .git/info/exclude. Exit status: 0 when the shim is in
# the kit (the analyzer may be missing: gpu-validate.sh then decodes dumps itself),
# 1 when the shim could not be built.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
KIT=$ROOT/gpu-kit
BUILD=${BUILD:-build}
MAX_BYTES=$(((${GPU_PACK_BENCH:-0} == 1 ? 40 : 20) * 1024 * 1024)) # the benchmark files take 15 MiB

# Libraries to ship in lib/ (known to be absent there), by soname prefix.
SHIP_PREFIXES="libunwind libdw libelf"
# Never shipped: glibc, the C++ runtime and CUDA, which the GPU machine has.
is_system_lib() {
	case $1 in
	linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
		libresolv.so* | libutil.so* | libanl.so* | libmvec.so* | libstdc++.so* | libgcc_s.so* | \
		libcuda.so* | libcudart.so* | libnvidia*) return 0 ;;
	esac
	return 1
}

echo "gpu-pack: make -k in $ROOT"
make -k -j"$(nproc)" "$BUILD/libcumtrace.so" "$BUILD/cumtrace-report"
make_rc=$?
if command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
	make -j"$(nproc)" "$BUILD/fuzz/fuzz_dump" >/dev/null || echo "gpu-pack: the fuzzer did not build" >&2
fi

grep -qxF '/gpu-kit/' .git/info/exclude 2>/dev/null || {
	mkdir -p .git/info && echo '/gpu-kit/' >>.git/info/exclude
}

rm -rf "$KIT"
mkdir -p "$KIT/lib" "$KIT/lib-extra" "$KIT/src"
missing=()
for f in "$BUILD/libcumtrace.so" "$BUILD/cumtrace-report" "$BUILD/fuzz/fuzz_dump"; do
	if [ -f "$f" ]; then
		cp "$f" "$KIT/"
	else
		missing+=("$f")
	fi
done

# Dependencies, from ldd on the binaries and then on each library copied (closure).
declare -A seen=()
queue=()
for f in "$KIT/libcumtrace.so" "$KIT/cumtrace-report" "$KIT/fuzz_dump"; do
	[ -f "$f" ] && queue+=("$f")
done
unresolved=()
while [ ${#queue[@]} -gt 0 ]; do
	obj=${queue[0]}
	queue=("${queue[@]:1}")
	while read -r name arrow path _; do
		[ "$arrow" = "=>" ] || continue
		is_system_lib "$name" && continue
		[ -n "${seen[$name]:-}" ] && continue
		seen[$name]=1
		if [ "$path" = "not" ] || [ ! -f "$path" ]; then
			unresolved+=("$name (needed by ${obj##*/})")
			continue
		fi
		dest=$KIT/lib-extra
		for p in $SHIP_PREFIXES; do
			case $name in "$p".so* | "$p"-*.so*) dest=$KIT/lib ;; esac
		done
		cp -L "$path" "$dest/$name"
		queue+=("$dest/$name")
	done < <(ldd "$obj" 2>/dev/null)
done

cp -r tests/gpu/. "$KIT/src/"
# the Python package, where the shim's bootstrap looks for it beside libcumtrace.so
mkdir -p "$KIT/python"
cp -r python/cumtrace "$KIT/python/"
rm -rf "$KIT/python/cumtrace/__pycache__"
# Debian's pytest (pure Python), for tests/gpu/pytest_torch.sh where the GPU machine's
# python3 has none (python3-pytest installed here by scripts/install-deps.sh)
mkdir -p "$KIT/pydeps"
for m in pytest _pytest pluggy iniconfig py py.py packaging attr attrs; do
	[ -e "/usr/lib/python3/dist-packages/$m" ] && cp -r "/usr/lib/python3/dist-packages/$m" "$KIT/pydeps/"
done
find "$KIT/pydeps" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$KIT/src/__pycache__"
# the hostile programs of the end-to-end tests, for tests/gpu/behaviour.sh
mkdir -p "$KIT/src/e2e"
cp -r tests/e2e/progs tests/e2e/libs tests/e2e/paths_twin.py tests/e2e/py_sites_bench.py "$KIT/src/e2e/"
# the fake CUDA runtime for tests/gpu/host_bench.py (the shim's cost on the GPU machine's CPU alone)
mkdir -p "$KIT/fake"
make -j"$(nproc)" "$BUILD/tests/fake/libcudart.so.13" "$BUILD/tests/fake/libcuda.so.1" >/dev/null &&
	cp -L "$BUILD/tests/fake/libcudart.so.13" "$BUILD/tests/fake/libcuda.so.1" "$KIT/fake/" ||
	missing+=("fake runtime")
# GPU_PACK_BENCH=1: the analyzer benchmark against heaptrack_print (tests/gpu/analyzer_bench.sh):
# a 4M-event dump of bench_alloc (2M pairs, 3 frames) traced on the fake runtime, heaptrack's
# file of the same loop, heaptrack_print and the Boost libraries it needs
if [ "${GPU_PACK_BENCH:-0}" = 1 ] && [ -x /usr/bin/heaptrack ] && [ -x /usr/bin/heaptrack_print ]; then
	make -j"$(nproc)" "$BUILD/tests/progs/bench_alloc" "$BUILD/tests/fake/libcudart.so.13" >/dev/null
	bdir=$KIT/bench
	mkdir -p "$bdir/lib"
	btmp=$(mktemp -d)
	(cd "$btmp" && env LD_LIBRARY_PATH="$ROOT/$BUILD/tests/fake" LD_PRELOAD="$ROOT/$BUILD/libcumtrace.so" \
		CUMTRACE_QUIET=1 CUMTRACE_OUTPUT="$bdir/bench.dump" "$ROOT/$BUILD/tests/progs/bench_alloc" 2000000 3 1 cuda \
		>/dev/null 2>&1 &&
		env LD_LIBRARY_PATH="$ROOT/$BUILD/tests/fake" heaptrack -o "$btmp/ht" \
			"$ROOT/$BUILD/tests/progs/bench_alloc" 2000000 3 1 malloc >/dev/null 2>&1)
	cp "$btmp"/ht.* "$bdir/bench.heaptrack.zst" 2>/dev/null
	rm -rf "$btmp"
	cp /usr/bin/heaptrack_print "$bdir/"
	ldd /usr/bin/heaptrack_print | awk '/libboost/ { print $3 }' | xargs -r -I{} cp -L {} "$bdir/lib/"
fi
# ctdump.py reads the record types out of format.h, beside it in the kit
[ -f bin/ctdump.py ] && cp bin/ctdump.py include/cumtrace/format.h "$KIT/"

{
	echo "cumtrace gpu-kit"
	# shellcheck source=/dev/null
	echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -n 1))"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)$(git diff --quiet HEAD -- 2>/dev/null || echo ' + uncommitted changes')"
	echo "make exit status: $make_rc"
	echo "missing: ${missing[*]:-none}"
	echo "unresolved libraries: ${unresolved[*]:-none}"
	echo
	(cd "$KIT" && find . -type f ! -name MANIFEST.txt -print0 | sort -z | xargs -0 sha256sum)
	for f in "$KIT/libcumtrace.so" "$KIT/cumtrace-report" "$KIT/fuzz_dump"; do
		[ -f "$f" ] || continue
		echo
		echo "ldd ${f##*/} (here):"
		ldd "$f"
	done
} >"$KIT/MANIFEST.txt"

size=$(du -sb "$KIT" | cut -f1)
echo "gpu-pack: gpu-kit/ holds $(find "$KIT" -type f | wc -l) files, $((size / 1024)) KiB:"
(cd "$KIT" && find . -maxdepth 2 -type f ! -path './src/*' | sort | sed 's/^\.\//  /')
echo "  src/: $(find "$KIT/src" -type f | wc -l) files from tests/gpu"
status=0
if [ "$size" -gt "$MAX_BYTES" ]; then
	echo "gpu-pack: WARNING: the kit is over $((MAX_BYTES >> 20)) MiB" >&2
fi
if [ ${#unresolved[@]} -gt 0 ]; then
	echo "gpu-pack: WARNING: unresolved libraries: ${unresolved[*]}" >&2
fi
for f in "${missing[@]}"; do
	case $f in
	*fuzz_dump)
		echo "gpu-pack: MISSING $f: no fuzzer in the kit (clang missing here?); scripts/fuzz-long.sh needs one" >&2
		;;
	*libcumtrace.so)
		echo "gpu-pack: MISSING $f: the shim did not build; the kit cannot trace" >&2
		status=1
		;;
	*)
		echo "gpu-pack: MISSING $f: the analyzer did not build; gpu-validate.sh will decode the dumps itself (marked '(raw)')" >&2
		;;
	esac
done
[ $status -eq 0 ] && echo "gpu-pack: done. On the GPU machine, with gpu-kit carried: bash scripts/gpu-validate.sh"
exit $status
