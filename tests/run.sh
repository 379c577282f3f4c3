#!/bin/sh
# Run every test, each in its own process with a time limit, JOBS at a time
# (default: the number of processors), and print one closing line
# "N passed, N failed". BUILD names the build directory.
#   tests/run.sh [PATTERN]     run only tests whose name contains PATTERN
#   JOBS=1 tests/run.sh        one test at a time, in the listed order
BUILD=${BUILD:-build}
export BUILD
log_dir=$BUILD/tests/logs
res_dir=$BUILD/tests/results
# ThreadSanitizer builds (SANITIZE=thread): a race fails the test; see tests/e2e/lib.sh.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:suppressions=$(pwd)/tests/tsan.supp}

# tests/run.sh --one NAME CMD...: run one test, print its verdict, and leave
# it in $res_dir (one file per test: pass, skip or fail).
if [ "${1:-}" = --one ]; then
	name=$2
	shift 2
	key=$(echo "$name" | tr / _)
	mkdir -p "$(dirname "$log_dir/$name.log")"
	if [ "$1" = skip-tsan ]; then
		echo skip >"$res_dir/$key"
		echo "SKIP $name: not run under ThreadSanitizer: one thread after the reading (tests/run.sh, tsan_skip)"
		exit 0
	fi
	if [ "$1" = skip-asan ]; then
		echo skip >"$res_dir/$key"
		echo "SKIP $name: not run under ASan+UBSan: a report's contents; the fuzz step runs every report under ASan+UBSan (tests/run.sh, asan_skip)"
		exit 0
	fi
	if [ "$1" = skip-plain-only ]; then
		echo skip >"$res_dir/$key"
		echo "SKIP $name: not run under a sanitizer: packaging, the same in every build; the plain pass runs it (tests/run.sh, plain_only)"
		exit 0
	fi
	start=$(date +%s)
	timeout 300 "$@" >"$log_dir/$name.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	if [ $rc -eq 0 ]; then
		echo pass >"$res_dir/$key"
		echo "PASS $name (${secs}s)"
	elif [ $rc -eq 77 ]; then
		# exit 77: the test cannot run on this machine, and says why
		echo skip >"$res_dir/$key"
		echo "SKIP $name: $(tail -n 1 "$log_dir/$name.log")"
	else
		echo fail >"$res_dir/$key"
		[ $rc -eq 124 ] && echo "timed out after ${secs}s" >>"$log_dir/$name.log"
		echo "FAIL $name (${secs}s, exit $rc; log: $log_dir/$name.log)"
	fi
	exit 0
fi

pattern=${1:-}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 1)}
mkdir -p "$log_dir"

# python3 as the interpreter itself: the tests start it a few thousand times, and where the
# python3 on PATH is a launcher (pyenv's shims: a shell script that picks the version, about
# 0.3 s a start here instead of 0.02 s) the launcher's time would be most of the suite's. The
# same interpreter, the one python3 resolves to, through a two-line script first on PATH.
py_real=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || py_real=
if [ -n "$py_real" ] && [ -x "$py_real" ]; then
	mkdir -p "$BUILD/tests/python3-bin"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$py_real" >"$BUILD/tests/python3-bin/python3"
	chmod +x "$BUILD/tests/python3-bin/python3"
	PATH=$(cd "$BUILD/tests/python3-bin" && pwd):$PATH
	export PATH
fi
rm -rf "$res_dir"
mkdir -p "$res_dir"

# The longest tests first (seconds under ASan on the 2-core VM), so that JOBS > 1
# does not end with one of them running alone.
slow_first="e2e/t_fuzz_regress e2e/t_html e2e/t_python_versions e2e/t_python e2e/t_torch_tracker
e2e/t_ranks e2e/t_hostile_dumpfd e2e/t_python_offsets e2e/t_growth e2e/t_export_flame unit/test_reader
e2e/t_bomb e2e/t_export_perfetto e2e/t_suppress e2e/t_hostile_dlopen e2e/t_html_chromium"

# Under ThreadSanitizer (SANITIZE=thread) only the tests where threads meet run:
# every traced program with threads, fork, exec, signals or the writer's error
# paths, the reader's read-ahead thread (unit/test_reader, t_fuzz_regress).
# These are left out there: they check what a report or export says, after the
# reading, on one thread, of programs with one thread (t_ranks: several such
# programs); the plain pass runs them all, the ASan+UBSan pass those not in
# asan_skip. Each prints SKIP with this reason.
tsan_skip="unit/test_analyzer unit/test_golden unit/test_leaks unit/test_ranks e2e/t_export_flame
e2e/t_export_golden e2e/t_export_memviz e2e/t_export_perfetto e2e/t_html e2e/t_html_chromium
e2e/t_ci_formats e2e/t_gate e2e/t_suppress e2e/t_diff e2e/t_frag e2e/t_peaks e2e/t_leak_classes
e2e/t_oom e2e/t_symbols e2e/t_symbols_cxx e2e/t_symbols_embed e2e/t_ctdump e2e/t_hostile_totals
e2e/t_hostile_memory e2e/t_hostile_output e2e/t_python_offsets e2e/t_python_gpucheck
e2e/t_python_versions e2e/t_growth e2e/t_streams e2e/t_bomb unit/test_symbols e2e/t_torch_layers
e2e/t_ranks e2e/t_pytest e2e/t_pypkg e2e/t_usage e2e/t_labels e2e/t_header_only e2e/t_symbols_debuginfo
e2e/t_imports e2e/t_nccl_comms"
# (t_imports and t_nccl_comms, issue 19: one-threaded programs, then what the reports say of
# their imported memory and NCCL communicators.)
# (t_pypkg calls the C API from Python's one thread: no two threads meet there; t_pyboot's
# thread scenario, first CUDA call on another thread than the bootstrap's, runs under TSan.)
# (t_bomb checks the reorder window's memory bound on compressed bombs: the
# reader's thread is the same one unit/test_reader and t_fuzz_regress run there.)

# One line per test: NAME and the command that runs it (words without spaces).
all_tests() {
	for unit in "$BUILD"/tests/unit/test_*; do
		[ -x "$unit" ] || continue
		# CK_FORK=yes: each Check test case runs in its own process.
		echo "unit/$(basename "$unit") env CK_FORK=yes CK_DEFAULT_TIMEOUT=60 $unit"
	done
	for t in tests/e2e/t_*.sh; do
		echo "e2e/$(basename "$t" .sh) sh $t"
	done
}
list_tests() {
	all_tests >"$res_dir/all"
	for name in $slow_first; do
		grep "^$name " "$res_dir/all" || true
	done
	slow_one=$(echo $slow_first)
	while read -r name cmd; do
		case " $slow_one " in *" $name "*) ;; *) echo "$name $cmd" ;; esac
	done <"$res_dir/all"
	rm -f "$res_dir/all"
}

# Under ASan+UBSan (SANITIZE=address,undefined) these are left out: they check what
# a report or export says (against its consumer) of small single-threaded
# programs that other tests trace too; the analyzer code they run is what the
# fuzz step of .ci/run runs under ASan+UBSan, every command and format, and the
# plain pass runs them (t_fuzz_regress: its inputs are the ones the fuzz step
# replays under ASan+UBSan first; t_python_versions: the offset tables per
# version, which t_python's run under ASan+UBSan reads with the same code;
# t_ranks and t_torch_layers: reports of several dumps and of framework events,
# whose seeds the fuzz step runs; t_pytest: the pytest plugin, Python driving the
# windows report, which the fuzz step runs; t_bomb: the reorder window's memory bound on
# compressed bombs, which the fuzz step's ASan+UBSan run reads too). Each prints
# SKIP with this reason.
asan_skip="e2e/t_fuzz_regress e2e/t_python_versions e2e/t_ranks e2e/t_torch_layers e2e/t_export_flame e2e/t_export_golden e2e/t_export_memviz e2e/t_export_perfetto e2e/t_html
e2e/t_html_chromium e2e/t_ci_formats e2e/t_gate e2e/t_suppress e2e/t_diff e2e/t_frag e2e/t_peaks
e2e/t_leak_classes e2e/t_oom e2e/t_streams e2e/t_growth e2e/t_bomb e2e/t_pytest"

# Under any sanitizer these are left out: they check packaging (make install and
# uninstall, the man pages against --help, the CI examples of docs/ci/), which is
# the same in every build, and make install takes the plain build. Each prints
# SKIP with this reason.
plain_only="e2e/t_install e2e/t_man e2e/t_ci_examples"

# Under a sanitizer a test of its skip list runs as "NAME skip-tsan", "NAME
# skip-asan" or "NAME skip-plain-only": --one says why it is left out.
tsan_filter() {
	# the lists on one line each, once
	tsan_one=$(echo $tsan_skip)
	asan_one=$(echo $asan_skip)
	while read -r name cmd; do
		case "${SANITIZE:-}: $plain_only " in
		?*:*" $name "*)
			echo "$name skip-plain-only"
			continue
			;;
		esac
		case "${SANITIZE:-}: $tsan_one " in
		thread:*" $name "*) echo "$name skip-tsan" ;;
		*)
			case "${SANITIZE:-}: $asan_one " in
			*address*:*" $name "*) echo "$name skip-asan" ;;
			*) echo "$name $cmd" ;;
			esac
			;;
		esac
	done
}

list_tests | tsan_filter | while read -r name cmd; do
	case $name in *"$pattern"*) echo "$name $cmd" ;; esac
done | xargs -P "$jobs" -L 1 sh tests/run.sh --one

passed=0
failed=0
skipped=0
failed_names=""
for f in "$res_dir"/*; do
	[ -f "$f" ] || continue
	case $(cat "$f") in
	pass) passed=$((passed + 1)) ;;
	skip) skipped=$((skipped + 1)) ;;
	*)
		failed=$((failed + 1))
		name=$(basename "$f" | sed 's|_|/|')
		failed_names="$failed_names $name"
		echo
		echo "FAIL $name (log: $log_dir/$name.log)"
		sed 's/^/    | /' "$log_dir/$name.log" | tail -n 25
		;;
	esac
done

echo
if [ "$failed" -gt 0 ]; then
	echo "failed:$failed_names"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
