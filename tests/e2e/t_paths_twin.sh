# Issue 14.1, every way in next to its untraced twin: a program that links no
# CUDA library (tests/e2e/progs/paths_twin.c) and Python ctypes
# (tests/e2e/paths_twin.py) reach every traced function by export from a
# library loaded RTLD_LOCAL that links libcudart and libcuda, by dlsym on
# RTLD_LOCAL, RTLD_GLOBAL and RTLD_DEFAULT handles (and RTLD_NEXT), through
# cuGetProcAddress(_v2) with each flag and cudaGetDriverEntryPoint*. Traced and
# untraced, every return code, out-parameter and errno must be the same, and
# the dump holds one event per traced call, in order, with its return code.
# Two libraries loaded RTLD_LOCAL that link two copies of the runtime each
# reach their own.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
LIB=$ROOT/$BUILD/tests/libs/libcttwin.so

# calls FILE: "EVENT RC" of each traced call the program printed, in order
calls() { sed -n 's/^call \([^ ]*\) rc=\(-\{0,1\}[0-9]*\) .*/\1 \2/p' "$1"; }
# events NAME: "API RESULT" of each event of analyze NAME, in dump order
events() { awk '{ print $1, $4 }' "$T/$1.events"; }

# twin NAME CALLS FAILED CMD...: CMD untraced and traced print the same; it
# makes CALLS traced calls, FAILED of them failing; the dump holds them all.
twin() {
	tw_name=$1 tw_calls=$2 tw_failed=$3
	shift 3
	untraced "$@" >"$T/$tw_name-plain.txt" || fail "$tw_name exited $? untraced"
	traced "$tw_name" "$@" >"$T/$tw_name-traced.txt" || fail "$tw_name exited $? traced"
	soft diff -u "$T/$tw_name-plain.txt" "$T/$tw_name-traced.txt"
	soft expect_eq "$tw_name: calls" "$(calls "$T/$tw_name-plain.txt" | wc -l)" "$tw_calls"
	soft expect_eq "$tw_name: failed calls" "$(calls "$T/$tw_name-plain.txt" | awk '$2 != 0' | wc -l)" "$tw_failed"
	analyze "$tw_name" "$(dump_of "$tw_name")"
	calls "$T/$tw_name-plain.txt" >"$T/$tw_name.want"
	events "$tw_name" >"$T/$tw_name.got"
	soft diff -u "$T/$tw_name.want" "$T/$tw_name.got"
}

# The runtime's 45 calls (3 fail) x 8 ways, the driver's 46 (5 fail) x 35 ways
# (29 of them lookups by base name), 4 direct calls x 2: each one event.
twin c 1978 199 "$PROGS/paths_twin" "$LIB"

# Two libraries loaded RTLD_LOCAL with two copies of the runtime (libcudart.so.13
# and .so.12, tests/e2e/libs/twin.c built twice): each reaches its own copy (a
# failing call sets only its own copy's last error). The library's 279 calls
# (28 fail) x 3, 2 failing cudaFree.
twin copies 839 86 "$PROGS/paths_twin" "$LIB" copies "$ROOT/$BUILD/tests/libs/libcttwin12.so"
soft expect_eq copies_last_errors \
	"$(sed -n 's/^aux cudaGetLastError \(.*\) rc=\(.*\)/\1:\2/p' "$T/copies-plain.txt" | tr '\n' ' ')" \
	"13:712 12:712 12:0 13:1 13:0 12:1 "

# Python ctypes: the library's 279 calls (28 fail), 7 runtime calls (1 fails)
# and 5 x 3 driver calls (5 fail) through ctypes.
command -v python3 >/dev/null || fail "python3 not found"
twin py 301 34 python3 tests/e2e/paths_twin.py "$LIB"
finish
