# Helpers for end-to-end tests: source it from tests/e2e/t_*.sh.
# Every test gets a fresh directory $T; the shim and the fake CUDA runtime
# come from $BUILD. Failures print what differed and exit 1.
set -eu
BUILD=${BUILD:-build}
ROOT=$(pwd)
SHIM=$ROOT/$BUILD/libcumtrace.so
REPORT=$ROOT/$BUILD/cumtrace-report
PROGS=$ROOT/$BUILD/tests/progs
FAKE=$ROOT/$BUILD/tests/fake
T=$(mktemp -d "${TMPDIR:-/tmp}/cumtrace-test.XXXXXX")
trap '[ -n "${KEEP_T:-}" ] || rm -rf "$T"' EXIT
# CUMTRACE_QUIET stays unset: tests read the shim's warnings (t_basic checks that 1 silences them)
unset CUMTRACE_QUIET
# The analyzer leaves the system's separate debug files out (libc6-dbg where it is installed:
# 10 MB of compressed DWARF read again by every report that meets a libc frame, 60 ms each),
# as on a machine without them; t_symbols_debuginfo checks the variable itself.
export CUMTRACE_REPORT_DEBUGINFO_PATH=-

# Under AddressSanitizer its runtime must come first in the preload list.
PRELOAD=$SHIM
case ${SANITIZE:-} in
*address*) PRELOAD="$(${CC:-cc} -print-file-name=libasan.so):$SHIM" ;;
esac
case ${SANITIZE:-} in
*thread*) PRELOAD="$(${CC:-cc} -print-file-name=libtsan.so):$SHIM" ;;
esac
# The wrapper puts libcumtrace first in LD_PRELOAD; the instrumented test
# programs initialise ASan from their preinit array before any library runs.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0}
# ThreadSanitizer: a race report fails the test (exit 66); tests/tsan.supp
# holds the reports from third-party code (tests/run.sh sets the same).
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:suppressions=$ROOT/tests/tsan.supp}

# tsan_build: true in a ThreadSanitizer build. ThreadSanitizer does not support
# a thread started in the fork child of a threaded process (the shim's writer
# there): it dies, or with die_after_fork=0 finds the parent's writer's id
# reused ("dup thread with used id") and dies. Tests of traced fork children
# skip that part.
tsan_build() {
	case ${SANITIZE:-} in *thread*) return 0 ;; esac
	return 1
}

# sanitized_build: true in a build with any sanitizer (SANITIZE set).
sanitized_build() {
	[ -n "${SANITIZE:-}" ]
}

# no_fork_under_tsan: skip (exit 77) a test of traced fork children in a ThreadSanitizer build.
no_fork_under_tsan() {
	if tsan_build; then
		echo "ThreadSanitizer does not support threads started in a fork child: a traced fork child starts a writer thread"
		exit 77
	fi
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# traced NAME CMD...: run CMD under the shim; dumps land in $T/NAME.<pid>.dump
traced() {
	name=$1
	shift
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/$name.%p.dump" "$@"
}

# untraced CMD...: the same program against the fake runtime, no shim. Under
# ThreadSanitizer an uninstrumented interpreter (python3) that dlopens the
# instrumented fake runtime loads libtsan late, after glibc sized the static
# TLS block: keep room there for libtsan's thread-local data.
untraced() {
	if tsan_build; then
		LD_LIBRARY_PATH=$FAKE GLIBC_TUNABLES=glibc.rtld.optional_static_tls=1048576 "$@"
	else
		LD_LIBRARY_PATH=$FAKE "$@"
	fi
}

# dump_of NAME: the single dump a traced run left (fails if not exactly one)
dump_of() {
	set -- "$T/$1".*.dump
	[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one dump for $name, found: $*"
	echo "$1"
}

# report OUT.json CMD ARGS... DUMP: run the analyzer with --format json
report() {
	out=$1
	shift
	"$REPORT" "$@" --format json -o "$out" || fail "cumtrace-report $* exited $?"
}

# jget FILE EXPR: evaluate a Python expression over the JSON document j
jget() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# self_steady ERRFILE: the CUMTRACE_SELFTIME line's steady calls (stacks known, nothing new written)
self_steady() {
	sed -n 's/.*; steady (stacks known, nothing new written): \([0-9]*\) calls, .*/\1/p' "$1"
}

# self_nowalk ERRFILE: the CUMTRACE_SELFTIME line's calls whose Python frames were not looked
# for, their whole native stack lying outside the interpreter's object
self_nowalk() {
	sed -n 's/.* found in the memo, \([0-9]*\) not walked (a whole native stack outside the interpreter); .*/\1/p' "$1"
}

# self_apart ERRFILE: the CUMTRACE_SELFTIME line's steady calls with Python frames and those
# without, "WITH WITHOUT"
self_apart() {
	sed -n 's/.*; steady with Python frames: \([0-9]*\) calls, per call [0-9]* ns (.*), without: \([0-9]*\) calls, per call .*/\1 \2/p' "$1"
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
	echo "ok: $1 = $3"
}
