#!/usr/bin/env bash
# Dry run of the GPU kit on a machine without a GPU: scripts/gpu-validate.sh runs against
# the fake CUDA runtime of tests/fake/ (host memory standing in for device memory).
# Stand-ins, made in a temporary folder: an `nvcc` that compiles the programs as plain
# C++ with -DGT_HOST_ONLY (no kernels) against the fake libraries (both "cudart" builds
# link the fake libcudart.so.13), a few runtime functions the fake lacks, and a
# `compute-sanitizer` that runs the program and reports its planted device leaks.
# PyTorch, CuPy and JAX rows come out n/a unless they are installed.
#
#     bash scripts/gpu-pack.sh && bash tests/gpu/dryrun.sh [OUT_DIR]
#
# What it checks: the script's plumbing, cumtrace-report's JSON as compare.py reads it,
# compare.py against its own dump decoder, and the table. Not the GPU behaviour.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
FAKE=$ROOT/build/tests/fake
make "$FAKE/libcudart.so.13" "$FAKE/libcuda.so.1" >/dev/null || exit 1
[ -f gpu-kit/libcumtrace.so ] || {
	echo "dryrun: run scripts/gpu-pack.sh first" >&2
	exit 1
}
T=$(mktemp -d /tmp/gpu-dryrun.XXXXXX)
mkdir -p "$T/bin" "$T/fake"
# Only the runtime and the driver: the fake libcupti beside them would take the CUPTI
# backend's place and report nothing (the tests drive it; nothing does here), where
# the GPU machine's real one reports everything.
ln -s "$FAKE/libcudart.so.13" "$FAKE/libcuda.so.1" "$T/fake/"
FAKE=$T/fake

cat >"$T/stubs.c" <<'EOF'
#include <stddef.h>
#include <string.h>
int cudaDeviceGetAttribute(int *v, int attr, int dev) { *v = 1; return 0; }
int cudaEventCreateWithFlags(void **e, unsigned f) { static int x; *e = &x; return 0; }
int cudaEventRecord(void *e, void *s) { return 0; }
int cudaEventDestroy(void *e) { return 0; }
int cudaStreamWaitEvent(void *s, void *e, unsigned f) { return 0; }
int cudaMemset2D(void *p, size_t pitch, int v, size_t w, size_t h)
{
	for (size_t i = 0; i < h; i++)
		memset((char *)p + i * pitch, v, w);
	return 0;
}
struct pp { void *ptr; size_t pitch, xsize, ysize; };
struct ext { size_t width, height, depth; };
int cudaMemset3D(struct pp p, int v, struct ext e) { return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) { *v = 1; return 0; }
EOF
cc -shared -fPIC -o "$T/libstubs.so" "$T/stubs.c" || exit 1

cat >"$T/bin/nvcc" <<EOF
#!/usr/bin/env bash
out= src= defs=()
while [ \$# -gt 0 ]; do
	case \$1 in
	--version) echo "dry-run nvcc (g++ against tests/fake)"; exit 0 ;;
	-o) out=\$2; shift ;;
	-D*) defs+=("\$1") ;;
	*.cu) src=\$1 ;;
	-Xlinker | -Xcompiler | -cudart) shift ;;
	esac
	shift
done
exec g++ -x c++ -O1 -g -DGT_HOST_ONLY "\${defs[@]}" -I/usr/local/cuda/include -o "\$out" "\$src" \\
	-x none -L$T -lstubs -L$FAKE -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath,$T:$FAKE -rdynamic
EOF

cat >"$T/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && { echo "dry-run compute-sanitizer"; exit 0; }
log=/dev/stdout
while [ $# -gt 0 ]; do
	case $1 in
	--log-file) log=$2; shift 2 ;;
	--tool | --leak-check | --report-api-errors) shift 2 ;;
	*) break ;;
	esac
done
out=$("$@")
rc=$?
echo "$out"
python3 - "$out" >"$log" <<'PY'
import json, sys
g = next((json.loads(l[13:]) for l in sys.argv[1].splitlines() if l.startswith("GROUND_TRUTH ")), None)
sizes = g["kinds"].get("device", {}).get("leaked_sizes", []) if g else []
print("========= COMPUTE-SANITIZER")
for s in sizes:
    print(f"========= Leaked {s} bytes at 0x7f0000000000")
if sizes:
    print(f"========= LEAK SUMMARY: {sum(sizes)} bytes leaked in {len(sizes)} allocations")
print(f"========= ERROR SUMMARY: {len(sizes)} errors")
PY
exit $rc
EOF
chmod +x "$T/bin/nvcc" "$T/bin/compute-sanitizer"

OUT_DIR=${1:-$T/out}
echo "dryrun: stand-ins in $T, results in $OUT_DIR"
PATH=$T/bin:$PATH LD_LIBRARY_PATH=$FAKE OUT=$OUT_DIR GPU_ARCH=sm_90 bash scripts/gpu-validate.sh |
	tail -n 3
grep -q '^SUMMARY: .* 0 no,' "$OUT_DIR/gpu-table.txt"
