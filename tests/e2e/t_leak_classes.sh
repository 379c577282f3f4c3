# Leak classes end to end: a program whose allocations come through stand-ins
# for PyTorch's caching allocator (libtorch_cuda.so, C++ in namespace
# c10::cuda::CUDACachingAllocator), cuBLAS (libcublas.so.13) and NCCL
# (libnccl.so.2), a plain user leak and an allocation live at cudaDeviceReset:
# each site's class, allocator and evidence (which frame matched which rule).
. tests/e2e/lib.sh
traced lc "$PROGS/leak_classes" >/dev/null
dump=$(dump_of lc)
report "$T/l.json" leaks "$dump"
sites='[(s["class"], s["allocator"], s["bytes"], s["device"], s["api"]) for s in j["leaks"]["sites"]]'
expect_eq sites "$(jget "$T/l.json" "$sites")" \
	"[('cache', 'nccl', 6291456, 0, 'cuMemAlloc_v2'), ('cache', 'cublas', 4194304, 0, 'cudaMalloc'), ('leaked', None, 3145728, 0, 'cudaMalloc'), ('cache', 'pytorch', 2097152, 0, 'cudaMalloc'), ('teardown', None, 1048576, 1, 'cudaMalloc')]"
expect_eq reasons "$(jget "$T/l.json" '[s["reason"] for s in j["leaks"]["sites"]]')" \
	"['live at exit', 'live at exit', 'live at exit', 'live at exit', 'live at cudaDeviceReset']"
evidence='[(s["evidence"]["frame"], s["evidence"]["field"], s["evidence"]["pattern"], s["evidence"]["value"]) if s["evidence"] else None for s in j["leaks"]["sites"]]'
expect_eq evidence "$(jget "$T/l.json" "$evidence")" \
	"[(0, 'module', 'libnccl*.so*', 'libnccl.so.2'), (0, 'module', 'libcublas.so*', 'libcublas.so.13'), None, (0, 'function', 'c10::cuda::CUDACachingAllocator::*', 'c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)'), None]"
expect_eq classes "$(jget "$T/l.json" '[(k, v["sites"], v["count"], v["bytes"]) for k, v in j["leaks"]["classes"].items()]')" \
	"[('leaked', 1, 1, 3145728), ('cache', 3, 3, 12582912), ('teardown', 1, 1, 1048576), ('growth', 0, 0, 0)]"
expect_eq fails_gate "$(jget "$T/l.json" '[s["fails_gate"] for s in j["leaks"]["sites"]]')" \
	"[False, False, True, False, False]"
expect_eq gate "$(jget "$T/l.json" 'j["leaks"]["gate"]')" \
	"{'fail_on': ['leaked'], 'failing_sites': 1, 'failing_leak_bytes': 3145728}"
# The frame that matched is the allocator's own, the user's call is further out.
expect_eq torch_stack "$(jget "$T/l.json" '[f["function"] for f in j["leaks"]["sites"][3]["stack"][:3]]')" \
	"['c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)', 'fake_torch_empty', 'main']"
# Without symbols the module rule recognises PyTorch (no function names).
report "$T/ns.json" leaks --no-symbols "$dump"
expect_eq nosym_evidence "$(jget "$T/ns.json" '[(s["allocator"], s["evidence"] and s["evidence"]["pattern"]) for s in j["leaks"]["sites"]]')" \
	"[('nccl', 'libnccl*.so*'), ('cublas', 'libcublas.so*'), (None, None), ('pytorch', 'libtorch_cuda*.so'), (None, None)]"
# Text: each site's class and the evidence line.
"$REPORT" leaks "$dump" >"$T/l.txt"
grep -q '^  leaked: 1 site, 1 allocation, 3.0 MiB; held by an allocator cache: 3 sites, 3 allocations, 12.0 MiB; freed by context teardown: 1 site, 1 allocation, 1.0 MiB$' "$T/l.txt" ||
	fail "class line: $(sed -n 2p "$T/l.txt")"
grep -q '): held by an allocator cache (PyTorch caching allocator)$' "$T/l.txt" || fail "no PyTorch class line"
grep -q '^      why: frame #0 c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long) in libtorch_cuda.so matches function "c10::cuda::CUDACachingAllocator::\*"$' "$T/l.txt" ||
	fail "no evidence line for PyTorch: $(grep why "$T/l.txt")"
grep -q 'live at cudaDeviceReset, device 1): freed by context teardown$' "$T/l.txt" || fail "no teardown line"
echo "ok: text classes and evidence"
# CSV carries the class and the allocator.
"$REPORT" leaks --format csv "$dump" | python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
got = [(r["class"], r["allocator"], r["fails_gate"]) for r in rows]
want = [("cache", "nccl", "0"), ("cache", "cublas", "0"), ("leaked", "", "1"), ("cache", "pytorch", "0"), ("teardown", "", "0")]
sys.exit(0 if got == want else "csv: %r" % got)'
echo "ok: csv classes"
# Only "leaked" fails by default; the classes of --fail-on add theirs.
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
expect_eq default_gate "$(code "$REPORT" leaks --fail-on-leak "$dump")" 1
expect_eq default_reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: 1 leak site fails (leaked: 1 site, 3.0 MiB), not suppressed"
expect_eq cache_gate "$(code "$REPORT" summary --fail-on=cache,teardown "$dump")" 1
expect_eq cache_reason "$(cat "$T/err.txt")" \
	"cumtrace-report: gate failed: 4 leak sites fail (cache: 3 sites, 12.0 MiB, teardown: 1 site, 1.0 MiB), not suppressed"
