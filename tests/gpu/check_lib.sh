# Shared by the GPU check scripts that take KIT OUTDIR (ipc_check.sh, array_check.sh): source it
# with CHECK_NAME set. Sets KIT, OUT (absolute), SRC (tests/gpu), CUDA, LIBDIR, the kit's
# libraries on LD_LIBRARY_PATH, and check WHAT OK DETAIL, which prints "PASS|FAIL NAME: ..."
# and counts the failures in $fails.
set -u
KIT=$(cd "$1" && pwd)
OUT=$2
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SRC=$(cd "$(dirname "$0")" && pwd)
CUDA=${CUDA_HOME:-/usr/local/cuda}
LIBDIR=${CUDA_LIBDIR:-$CUDA/lib64}
export LD_LIBRARY_PATH="$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fails=0
check() { # WHAT OK DETAIL
	if [ "$2" = 1 ]; then
		echo "PASS $CHECK_NAME: $1: $3"
	else
		echo "FAIL $CHECK_NAME: $1: $3"
		fails=$((fails + 1))
	fi
}
