#!/bin/sh
# Issue 18's pytest plugin with real torch on the GPU machine: a test file with a test that
# keeps a tensor, one that frees its tensors (torch's cache keeps the memory: not a leak), one
# over its memory limit and one under it, run as users run it:
#   python3 -m pytest -p cumtrace.pytest_plugin --cumtrace
# with the kit's package on PYTHONPATH (no wrapper, no LD_PRELOAD set by hand).
#   sh tests/gpu/pytest_torch.sh KIT OUT
# When the machine's python3 has no pytest, the kit's copy of Debian's (gpu-kit/pydeps,
# scripts/gpu-pack.sh) is used. Prints PASS/FAIL lines; exits 1 on any FAIL.
set -u
KIT=$(cd "$1" && pwd)
OUT=$2
mkdir -p "$OUT"
fails=0
check() { # WHAT OK DETAIL
	if [ "$2" = 1 ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}
export PYTHONPATH="$KIT/python${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import pytest' 2>/dev/null || export PYTHONPATH="$PYTHONPATH:$KIT/pydeps"
export LD_LIBRARY_PATH="$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUMTRACE_LIB="$KIT/libcumtrace.so" CUMTRACE_REPORT="$KIT/cumtrace-report"
python3 -c 'import pytest, torch; print("pytest", pytest.__version__, "torch", torch.__version__)'
cat >"$OUT/test_torch_mem.py" <<'PY'
import pytest
import torch

kept = []


@pytest.mark.limit_cuda_leaks("0B")
def test_leaky():
    kept.append(torch.empty(1 << 20, device="cuda"))  # LEAK-LINE: 4 MiB kept


@pytest.mark.limit_cuda_leaks("0B")
def test_clean():
    x = torch.empty(1 << 20, device="cuda")
    y = x * 2
    del x, y


@pytest.mark.limit_cuda_memory("16 MiB")
def test_over_limit():
    x = torch.empty(8 << 20, device="cuda")  # 32 MiB at once
    del x


@pytest.mark.limit_cuda_memory("64 MiB")
def test_under_limit():
    x = torch.empty(8 << 20, device="cuda")
    del x
PY
line=$(grep -n "LEAK-LINE" "$OUT/test_torch_mem.py" | cut -d: -f1)
(cd "$OUT" && timeout 300 python3 -m pytest -p cumtrace.pytest_plugin --cumtrace -p no:cacheprovider \
	test_torch_mem.py >"$OUT/pytest.out" 2>&1)
rc=$?
cat "$OUT/pytest.out"
check "exit status 1 (tests failed)" "$([ $rc = 1 ] && echo 1)" "rc $rc"
check "2 failed, 2 passed" "$(grep -q '2 failed, 2 passed' "$OUT/pytest.out" && echo 1)" \
	"$(grep -E '[0-9]+ (passed|failed)' "$OUT/pytest.out" | tail -n 1)"
check "test_leaky failed at its line" \
	"$(grep -E "FAILED test_torch_mem.py::test_leaky" "$OUT/pytest.out" >/dev/null &&
		grep -q "4.0 MiB leaked by this test.*test_torch_mem.py:$line" "$OUT/pytest.out" && echo 1)" \
	"$(grep -m1 "leaked by this test" "$OUT/pytest.out")"
check "test_over_limit failed" "$(grep -q "FAILED test_torch_mem.py::test_over_limit" "$OUT/pytest.out" && echo 1)" \
	"$(grep -m1 "test_over_limit" "$OUT/pytest.out")"
check "test_clean passed (the cache is not a leak)" \
	"$(grep -q "FAILED test_torch_mem.py::test_clean" "$OUT/pytest.out" || echo 1)" ""
exit $((fails != 0))
