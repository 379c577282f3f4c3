# NCCL's memory per communicator (issue 19, 5): tests/e2e/progs/nccl_comms.c against the fake
# libnccl.so.2 ($BUILD/tests/nccl, tests/fake/nccl.c, NCCL's cuMem path through the fake driver), linked: the NCCL
# calls reach cumtrace's exports and the CUDA calls NCCL makes inside them are recorded. Four
# communicators (two inits 4 MiB each, destroyed; a third init 4 MiB, never destroyed; a split
# 2 MiB, aborted), each with its exact bytes; the connection buffer an all-reduce makes (stack in
# libnccl, outside any init) counted apart; ncclMemAlloc's buffer (3 MiB asked, 4 MiB made) and
# its free matched, registrations and windows shown; no unmatched free (NCCL frees with
# cuMemRetainAllocationHandle + two cuMemRelease); the one leak is the live communicator's 4 MiB.
. tests/e2e/lib.sh
MiB=1048576
untraced "$PROGS/nccl_comms" >"$T/plain.txt" || fail "untraced run exited $?"
traced nc "$PROGS/nccl_comms" >"$T/traced.txt" || fail "traced run exited $?"
cmp -s "$T/plain.txt" "$T/traced.txt" || fail "the traced program printed otherwise: $(diff "$T/plain.txt" "$T/traced.txt")"
echo "ok: same output traced"
d=$(dump_of nc)
report "$T/sum.json" summary "$d"
report "$T/leaks.json" leaks "$d"
n='j["dumps"][0]["nccl"]'
expect_eq "communicators (made by, rank, nranks, ended by, allocations, bytes, live at end)" \
	"$(jget "$T/sum.json" "[(c['made_by'], c.get('rank'), c.get('nranks'), c['ended_by'], c['allocations'], c['bytes'], c['live_bytes_at_end']) for c in $n['communicators']]")" \
	"[('ncclCommInitRank', 0, 1, 'ncclCommDestroy', 1, $((4 * MiB)), 0), ('ncclCommInitRankConfig', 0, 1, 'ncclCommDestroy', 1, $((4 * MiB)), 0), ('ncclCommInitRank', 0, 1, None, 1, $((4 * MiB)), $((4 * MiB))), ('ncclCommSplit', None, None, 'ncclCommAbort', 1, $((2 * MiB)), 0)]"
expect_eq "the split's parent is the third" \
	"$(jget "$T/sum.json" "$n['communicators'][3]['parent'] == $n['communicators'][2]['comm']")" True
expect_eq "distinct ids" "$(jget "$T/sum.json" "len(set(c.get('id_hash') for c in $n['communicators'][:3]))")" 3
expect_eq "outside init" "$(jget "$T/sum.json" "$n['outside_init']")" \
	"{'allocations': 1, 'bytes': $((2 * MiB)), 'live_bytes_at_end': 0}"
expect_eq "ncclMemAlloc" "$(jget "$T/sum.json" "$n['mem_alloc']")" \
	"{'calls': 1, 'bytes_asked': $((3 * MiB)), 'frees': 1, 'allocations': 1, 'bytes': $((4 * MiB)), 'live_bytes_at_end': 0}"
expect_eq "registered, windows" "$(jget "$T/sum.json" "($n['registered'], $n['windows'])")" \
	"({'registrations': 1, 'bytes': $((3 * MiB)), 'deregistrations': 1}, {'registrations': 1, 'bytes': $((3 * MiB)), 'deregistrations': 1})"
expect_eq "unmatched frees, allocations over a live block" \
	"$(jget "$T/sum.json" '(j["dumps"][0]["unmatched_frees"], j["dumps"][0]["double_allocations"])')" "(0, 0)"
expect_eq "NCCL calls (calls, failures)" \
	"$(jget "$T/sum.json" 'sorted((a, v["calls"], v["failures"]) for a, v in j["summary"]["apis"].items() if a.startswith("nccl"))')" \
	"[('ncclCommAbort', 1, 0), ('ncclCommDeregister', 1, 0), ('ncclCommDestroy', 2, 0), ('ncclCommInitRank', 2, 0), ('ncclCommInitRankConfig', 1, 0), ('ncclCommRegister', 1, 0), ('ncclCommSplit', 2, 0), ('ncclCommWindowDeregister', 1, 0), ('ncclCommWindowRegister', 1, 0), ('ncclMemAlloc', 1, 0), ('ncclMemFree', 1, 0)]"
expect_eq "leaks" "$(jget "$T/leaks.json" '(j["leaks"]["count"], j["leaks"]["bytes"])')" "(1, $((4 * MiB)))"
"$REPORT" summary "$d" >"$T/sum.txt"
grep -q "^  nccl: communicator 0x[0-9a-f]* (ncclCommSplit, device 0): 2.0 MiB in 1 allocation, 0 B live at end; ncclCommAbort$" "$T/sum.txt" ||
	fail "summary text: $(grep nccl: "$T/sum.txt")"
grep -q "^  nccl: outside init: 2.0 MiB in 1 allocation, 0 B live at end; ncclMemAlloc: 1 call, 4.0 MiB$" "$T/sum.txt" ||
	fail "summary text: $(grep nccl: "$T/sum.txt")"
echo "ok: summary text"
# Looked up with dlsym too: libnccl dlopen'ed RTLD_LOCAL by ctypes, its functions found with dlsym
# on its handle: one communicator, its 4 MiB, destroyed.
cat >"$T/dl.py" <<'PY'
import ctypes, os
class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
rt = ctypes.CDLL("libcudart.so.13")
assert rt.cudaSetDevice(0) == 0 and rt.cudaFree(None) == 0
lib = ctypes.CDLL(os.environ["FAKE_NCCL"])
uid, comm = UniqueId(), ctypes.c_void_p()
assert lib.ncclGetUniqueId(ctypes.byref(uid)) == 0
assert lib.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
assert lib.ncclCommDestroy(comm) == 0
print("dlsym: ok")
PY
FAKE_NCCL=$ROOT/$BUILD/tests/nccl/libnccl.so.2 CUMTRACE_PYTHON_BOOT=0 traced dl python3 "$T/dl.py" >"$T/dl.txt" || fail "ctypes run exited $?"
report "$T/dl.json" summary "$(dump_of dl)"
expect_eq "dlsym path: communicators" \
	"$(jget "$T/dl.json" "[(c['made_by'], c['ended_by'], c['bytes']) for c in $n['communicators']]")" \
	"[('ncclCommInitRank', 'ncclCommDestroy', $((4 * MiB)))]"
# As torch calls it: a library loaded RTLD_LOCAL (Python's extension modules are) that links
# libnccl calls ncclCommInitRank through its PLT: the call binds to cumtrace's export, which
# forwards to the libnccl of the caller's own tree (one communicator, 4 MiB, destroyed).
cat >"$T/front.c" <<'C'
#include "nccl.h"
int front(void)
{
	ncclUniqueId id;
	ncclComm_t c;
	if (ncclGetUniqueId(&id) || ncclCommInitRank(&c, 1, id, 0))
		return 1;
	return ncclCommDestroy(c);
}
C
${CC:-cc} -shared -fPIC -I"$ROOT/tests/fake" -I"${CUDA_HOME:-/usr/local/cuda}/include" -o "$T/libfront.so" "$T/front.c" \
	-L"$ROOT/$BUILD/tests/nccl" -l:libnccl.so.2 -Xlinker -rpath -Xlinker "$ROOT/$BUILD/tests/nccl" \
	-Xlinker -rpath-link -Xlinker "$FAKE" || fail "building the front library"
cat >"$T/front.py" <<'PY'
import ctypes, sys
rt = ctypes.CDLL("libcudart.so.13")
assert rt.cudaSetDevice(0) == 0 and rt.cudaFree(None) == 0
assert ctypes.CDLL(sys.argv[1]).front() == 0  # RTLD_LOCAL, ctypes' default
print("front: ok")
PY
CUMTRACE_PYTHON_BOOT=0 traced front python3 "$T/front.py" "$T/libfront.so" >"$T/front.txt" || fail "front run exited $?"
report "$T/front.json" summary "$(dump_of front)"
expect_eq "RTLD_LOCAL caller: communicators" \
	"$(jget "$T/front.json" "[(c['made_by'], c['ended_by'], c['bytes']) for c in $n['communicators']]")" \
	"[('ncclCommInitRank', 'ncclCommDestroy', $((4 * MiB)))]"
