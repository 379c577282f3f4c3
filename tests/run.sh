#!/bin/sh
# Run every test, each in its own process with a time limit, and print one
# closing line "N passed, N failed". BUILD names the build directory.
#   tests/run.sh [PATTERN]     run only tests whose name contains PATTERN
BUILD=${BUILD:-build}
export BUILD
pattern=${1:-}
passed=0
failed=0
skipped=0
failed_names=""
log_dir=$BUILD/tests/logs
mkdir -p "$log_dir"
# ThreadSanitizer builds (SANITIZE=thread): a race fails the test; see tests/e2e/lib.sh.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:suppressions=$(pwd)/tests/tsan.supp}

run_one() { # name, command...
	name=$1
	shift
	case $name in *"$pattern"*) ;; *) return 0 ;; esac
	mkdir -p "$(dirname "$log_dir/$name.log")"
	timeout 300 "$@" >"$log_dir/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "PASS $name"
	elif [ $rc -eq 77 ]; then
		# exit 77: the test cannot run on this machine, and says why
		skipped=$((skipped + 1))
		echo "SKIP $name: $(tail -n 1 "$log_dir/$name.log")"
	else
		failed=$((failed + 1))
		failed_names="$failed_names $name"
		echo "FAIL $name (log: $log_dir/$name.log)"
		sed 's/^/    | /' "$log_dir/$name.log" | tail -n 25
	fi
}

for unit in "$BUILD"/tests/unit/test_*; do
	[ -x "$unit" ] || continue
	# CK_FORK=yes: each Check test case runs in its own process.
	run_one "unit/$(basename "$unit")" env CK_FORK=yes CK_DEFAULT_TIMEOUT=60 "$unit"
done

for t in tests/e2e/t_*.sh; do
	run_one "e2e/$(basename "$t" .sh)" sh "$t"
done

echo
if [ "$failed" -gt 0 ]; then
	echo "failed:$failed_names"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
