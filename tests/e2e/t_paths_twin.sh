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

untraced "$PROGS/paths_twin" "$LIB" >"$T/plain.txt" || fail "paths_twin exited $? untraced"
traced c "$PROGS/paths_twin" "$LIB" >"$T/traced.txt" || fail "paths_twin exited $? traced"
soft diff -u "$T/plain.txt" "$T/traced.txt"
# The runtime's 45 calls (3 fail) x 7 ways, the driver's 46 (5 fail) x 34 ways
# (29 of them lookups by base name), 4 direct calls x 2: each one event.
soft expect_eq c_calls "$(calls "$T/plain.txt" | wc -l)" 1887
soft expect_eq c_failed_calls "$(calls "$T/plain.txt" | awk '$2 != 0' | wc -l)" 191
analyze c "$(dump_of c)"
calls "$T/plain.txt" >"$T/c.want"
events c >"$T/c.got"
soft diff -u "$T/c.want" "$T/c.got"

# Two libraries loaded RTLD_LOCAL with two copies of the runtime (libcudart.so.13
# and .so.12, tests/e2e/libs/twin.c built twice): each reaches its own copy (a
# failing call sets only its own copy's last error). The library's 279 calls
# (28 fail) x 3, 2 failing cudaFree.
LIB12=$ROOT/$BUILD/tests/libs/libcttwin12.so
untraced "$PROGS/paths_twin" "$LIB" copies "$LIB12" >"$T/copies-plain.txt" || fail "paths_twin copies exited $? untraced"
traced copies "$PROGS/paths_twin" "$LIB" copies "$LIB12" >"$T/copies-traced.txt" ||
	fail "paths_twin copies exited $? traced"
soft diff -u "$T/copies-plain.txt" "$T/copies-traced.txt"
soft expect_eq copies_last_errors "$(sed -n 's/^aux cudaGetLastError \(.*\) rc=\(.*\)/\1:\2/p' "$T/copies-plain.txt" | tr '\n' ' ')" \
	"13:712 12:712 12:0 13:1 13:0 12:1 "
soft expect_eq copies_calls "$(calls "$T/copies-plain.txt" | wc -l)" 839
soft expect_eq copies_failed_calls "$(calls "$T/copies-plain.txt" | awk '$2 != 0' | wc -l)" 86
analyze copies "$(dump_of copies)"
calls "$T/copies-plain.txt" >"$T/copies.want"
events copies >"$T/copies.got"
soft diff -u "$T/copies.want" "$T/copies.got"

command -v python3 >/dev/null || fail "python3 not found"
untraced python3 tests/e2e/paths_twin.py "$LIB" >"$T/py-plain.txt" || fail "paths_twin.py exited $? untraced"
traced py python3 tests/e2e/paths_twin.py "$LIB" >"$T/py-traced.txt" || fail "paths_twin.py exited $? traced"
soft diff -u "$T/py-plain.txt" "$T/py-traced.txt"
# The library's 279 calls (28 fail), 7 runtime calls (1 fails) and 5 x 3
# driver calls (5 fail) through ctypes.
soft expect_eq py_calls "$(calls "$T/py-plain.txt" | wc -l)" 301
soft expect_eq py_failed_calls "$(calls "$T/py-plain.txt" | awk '$2 != 0' | wc -l)" 34
analyze py "$(dump_of py)"
calls "$T/py-plain.txt" >"$T/py.want"
events py >"$T/py.got"
soft diff -u "$T/py.want" "$T/py.got"
finish
