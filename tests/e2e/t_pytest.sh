# The pytest plugin (python/cumtrace/pytest_plugin.py) on tests/e2e/pytest_cuda.py: the
# fake CUDA runtime through ctypes and the stand-in for PyTorch's caching allocator.
#   - --cumtrace without the shim: the interpreter runs again once under it; a leaking
#     test, a test over its memory limit and a tensor kept fail with the site and bytes,
#     a tensor freed into the cache, a clean test and one within its limits pass, the
#     unmarked test that leaks is listed in the summary; exit status 1; one dump;
#   - the same under a shim loaded already (no second run), exit status 0 when all pass;
#   - what the windows report says about the framework layer of that dump;
#   - no loop when the preload does not take (exit 4, one line), none without the shim;
#   - without --cumtrace, with and without the shim: markers known, nothing checked, a note;
#   - installed (make install): pytest loads the plugin by its entry point, no -p.
. tests/e2e/lib.sh
PY=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import pytest' 2>/dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || { echo "pytest not installed (Debian: python3-pytest, scripts/install-deps.sh)"; exit 77; }
C10=$ROOT/$BUILD/tests/torch/libc10_cuda.so
[ -f "$C10" ] || fail "no stand-in libc10_cuda.so: build $C10 (make tests)"
mkdir -p "$T/site/torch/lib" "$T/run" "$T/tmp"
cp "$C10" "$T/site/torch/lib/"
printf "__version__ = '2.11.0+cu130'\n" >"$T/site/torch/version.py"
cp "$ROOT/tests/e2e/pytest_cuda.py" "$T/run/"
printf '[pytest]\n' >"$T/run/pytest.ini"
export CT_TORCH_SITE="$T/site" PYTHONDONTWRITEBYTECODE=1
line() { grep -n "# SITE-$1\$" "$T/run/pytest_cuda.py" | cut -d: -f1; }

# pt NAME [ENV=VALUE...] -- PYTEST ARGS: pytest on the copy in $T/run (the fake runtime on
# the library path, the build's package on PYTHONPATH): output in $T/NAME.out, status in $rc
pt() {
	ptn=$1
	shift
	ptenv=
	while [ "$1" != -- ]; do
		ptenv="$ptenv $1" # values without spaces
		shift
	done
	shift
	set +e
	# shellcheck disable=SC2086
	(cd "$T/run" && env TMPDIR="$T/tmp" LD_LIBRARY_PATH="$FAKE" PYTHONPATH="${PYPATH:-$ROOT/$BUILD/python}" $ptenv \
		"$PY" -m pytest -q -p no:cacheprovider -c pytest.ini "$@" pytest_cuda.py) >"$T/$ptn.out" 2>&1
	rc=$?
	set -e
}
has() { # NAME LINE: the output of run NAME has LINE
	grep -qxF "$2" "$T/$1.out" || { cat "$T/$1.out"; fail "$1: no line '$2'"; }
	echo "ok: $1: $2"
}
counts() { # NAME: pytest's last line without its time
	tail -n 1 "$T/$1.out" | sed 's/ in [0-9.]*s.*$//'
}
verdicts() { # NAME: the lines of the checks, as pytest shows them
	has "$1" "cumtrace: 4.0 MiB leaked by this test (limit 0 B): 1 site, largest 4.0 MiB at pytest_cuda.py:$(line LEAKY) in test_leaky"
	has "$1" "cumtrace: peak 12.0 MiB of CUDA memory in this test (limit 8.0 MiB): 1 site live then, largest 12.0 MiB at pytest_cuda.py:$(line OVER) in test_over_memory"
	has "$1" "cumtrace: 2.0 MiB leaked by this test (limit 0 B): 1 site, largest 2.0 MiB at pytest_cuda.py:$(line TORCH) in test_torch_kept"
	has "$1" "cumtrace: 1 test left CUDA memory allocated at its end:"
	has "$1" "  2.0 MiB pytest_cuda.py::test_unmarked_leak (1 site, largest 2.0 MiB at pytest_cuda.py:$(line UNMARKED) in test_unmarked_leak)"
	expect_eq "$1: failed" "$(sed -n 's/^FAILED //p' "$T/$1.out" | tr '\n' ' ')" \
		"pytest_cuda.py::test_leaky pytest_cuda.py::test_over_memory pytest_cuda.py::test_torch_kept "
	expect_eq "$1: counts" "$(counts "$1")" "3 failed, 4 passed"
	expect_eq "$1: exit status" "$rc" 1
}

# --cumtrace, no shim: run again under it, the dump kept where --cumtrace-output says.
pt exec -- -p cumtrace.pytest_plugin --cumtrace --cumtrace-output "$T/exec.%p.dump"
verdicts exec
set -- "$T"/exec.*.dump
expect_eq "exec: dumps" "$#" 1
has exec "cumtrace: dump: $1 (cumtrace-report leaks, peak, windows)"
# The framework layer decided: the kept tensor is a torch_block; the freed one left a cached
# segment behind, not counted.
"$REPORT" windows --format json --window 'pytest pytest_cuda.py::test_torch_*' -o "$T/exec.json" "$1" ||
	fail "windows exited $?"
expect_eq "exec: torch windows" \
	"$(jget "$T/exec.json" '(j["framework_layer"], [(w["name"], w["allocations"], w["live_bytes"], [s["kind"] for s in w["sites"]]) for w in j["windows"]])')" \
	"(True, [('pytest pytest_cuda.py::test_torch_cached', 1, 0, []), ('pytest pytest_cuda.py::test_torch_kept', 1, 2097152, ['torch_block'])])"

# Under a shim loaded already: checked in place, the dump where CUMTRACE_OUTPUT says.
pt loaded LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$T/loaded.%p.dump" -- -p cumtrace.pytest_plugin --cumtrace
verdicts loaded
set -- "$T"/loaded.*.dump
expect_eq "loaded: dumps" "$#" 1
# All within their limits: exit status 0 through the second run; the dump removed at the end.
pt pass -- -p cumtrace.pytest_plugin --cumtrace -k "clean or within or cached"
expect_eq "pass: counts" "$(counts pass)" "3 passed, 4 deselected"
expect_eq "pass: exit status" "$rc" 0
expect_eq "pass: temporary files left" "$(ls "$T/tmp" | wc -l)" 0

# The preload does not take: the second run says so, and never runs a third.
pt noshim CUMTRACE_LIB="$T/none.so" -- -p cumtrace.pytest_plugin --cumtrace
has noshim "ERROR: --cumtrace: $T/none.so was preloaded but is not loaded in this process"
expect_eq "noshim: exit status" "$rc" 4
expect_eq "noshim: temporary files left" "$(ls "$T/tmp" | wc -l)" 0

# Without --cumtrace, with and without the shim: nothing checked, the markers known.
for how in plain traced; do
	if [ $how = plain ]; then
		pt $how -- -p cumtrace.pytest_plugin --strict-markers
	else
		pt $how LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$T/traced.%p.dump" -- -p cumtrace.pytest_plugin --strict-markers
	fi
	has $how "cumtrace: 6 tests with limit_cuda_leaks / limit_cuda_memory not checked: run pytest with --cumtrace"
	expect_eq "$how: counts" "$(counts $how)" "7 passed"
	expect_eq "$how: exit status" "$rc" 0
done

# Installed: the entry point in the site folder registers the plugin (no -p).
make -s BUILD="$BUILD" install PREFIX="$T/pfx" PYTHON_SITE="$T/pysite" >"$T/install.out" 2>&1 ||
	{ cat "$T/install.out"; fail "make install"; }
PYPATH=$T/pysite pt installed -- --cumtrace
verdicts installed
