# The framework layer (preload/hooks/torch.c): PyTorch's caching allocator events in
# the dump, from a stand-in for libc10_cuda.so (tests/fake/c10_cuda.cc) that
# calls its trace trackers as torch does, driven from Python through ctypes
# (tests/e2e/torch_fake.py) and compared event by event with what it reported
# (tests/e2e/torch_check.py): default and expandable segments, torch loaded
# late or never, threads, a fork child, the version table (a measured row, rows
# read from headers, unknown versions, a vtable that disagrees), another
# backend, CUMTRACE_TORCH=0, the analyzer's count, and the dump's bytes per
# framework event.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
C10=$ROOT/$BUILD/tests/torch/libc10_cuda.so
[ -f "$C10" ] || fail "no stand-in libc10_cuda.so: build $C10 (make tests)"
DRIVER=$ROOT/tests/e2e/torch_fake.py
CHECK=$ROOT/tests/e2e/torch_check.py
OFF="framework layer off, CUDA layer only"

# site VERSION: a torch/ laid out as a wheel's, its version.py saying VERSION
site() {
	d=$T/site-$1
	mkdir -p "$d/torch/lib"
	cp "$C10" "$d/torch/lib/"
	printf "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version']\n__version__ = '%s'\ndebug = False\ncuda: Optional[str] = '13.0'\n" \
		"$1" >"$d/torch/version.py"
	echo "$d"
}
# run NAME SITE SCENARIO [VAR=VALUE...]: the driver, traced; its stderr in $T/NAME.err
run() {
	rn=$1 rs=$2 rsc=$3
	shift 3
	traced "$rn" env "$@" python3 "$DRIVER" "$FAKE" "$rs" "$rsc" "$T/$rn.json" 2>"$T/$rn.err" ||
		{ cat "$T/$rn.err"; fail "$rn: the driver failed"; }
}
check() {
	cn=$1
	shift
	python3 "$CHECK" "$(dump_of "$cn")" "$T/$cn.json" "$@" || fail "$cn: $*"
}
# one_warning NAME TEXT: stderr is exactly that one line
one_warning() {
	expect_eq "$1 warning" "$(cat "$T/$1.err")" "cumtrace: $2"
}
no_warning() {
	expect_eq "$1 stderr" "$(cat "$T/$1.err")" ""
}

S211=$(site 2.11.0+cu130)

# Default mode: every event as made, stacks where memory is handed out, the
# CUDA layer unchanged (one cudaMalloc per segment), trackers on both devices.
run basic "$S211" basic
check basic same stacks segments cuda=5 trackers=2 \
	"counts=alloc=103 free_requested=103 free_completed=103 segment_alloc=5 segment_free=5 oom=1"
no_warning basic
# The analyzer counts them apart and never as CUDA allocations.
dump=$(dump_of basic)
"$REPORT" summary "$dump" >"$T/summary.txt"
grep -qxF "  framework events: 320 (torch: alloc 103, free_requested 103, free_completed 103, segment_alloc 5, segment_free 5, oom 1)" "$T/summary.txt" ||
	fail "summary: $(cat "$T/summary.txt")"
echo "ok: summary line"
report "$T/basic.sum.json" summary "$dump"
# framework: events, torch_alloc, torch_oom; CUDA layer: allocations, frees, events, torch in its APIs
expect_eq basic_json "$(jget "$T/basic.sum.json" '(j["summary"]["framework"]["events"], j["summary"]["framework"]["by_api"]["torch_alloc"], j["summary"]["framework"]["by_api"]["torch_oom"], j["allocations"], j["frees"], j["dumps"][0]["events"], "torch_alloc" in j["summary"]["apis"], j["dumps"][0]["leak_count"])')" \
	"(320, 103, 1, 5, 5, 13, False, 0)"

# Threads: each event on the thread that made it, a free completed on another thread.
run threads "$S211" threads
check threads same stacks cross-thread
expect_eq threads_count "$(jget "$T/threads.json" 'len(set(j["threads"]))')" 3

# Under a sanitizer the runs that take the tracker's paths have run (basic: the attach,
# every action, stacks, two devices, the writer thread against the tracker's; threads);
# the rest (other modes, versions, refusals) run in the plain pass.
if sanitized_build; then
	echo "$SANITIZE: basic and threads ran; the other runs are in the plain pass"
	exit 0
fi

# Expandable segments: segments are mapped ranges (cuMemMap through the driver entry point).
run expandable "$S211" basic PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
check expandable same stacks segments \
	"counts=alloc=103 free_requested=103 free_completed=103 segment_map=5 segment_unmap=5 oom=1"

# torch imported late, after the program made CUDA calls of its own.
run late "$S211" late
check late same stacks cuda=7

# torch never loaded: the CUDA layer alone, nothing said.
run never "$S211" never
check never none cuda=2
no_warning never

# A fork child records into its own dump through the tracker it inherited.
if tsan_build; then
	echo "skip: fork part (ThreadSanitizer does not support the child's writer thread)"
else
	run fork "$S211" fork
	set -- "$T"/fork.*.dump
	expect_eq fork_dumps $# 2
	for d in "$@"; do
		case $(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import ctdump, struct
for _, t, _, b in ctdump.records(open(sys.argv[2], "rb").read()):
    if t == 1:
        print("child" if struct.unpack_from("<I", b, 28)[0] else "parent"); break' "$ROOT/bin" "$d") in
		child) python3 "$CHECK" "$d" "$T/fork.json.child" same || fail "fork child" ;;
		*) python3 "$CHECK" "$d" "$T/fork.json" same || fail "fork parent" ;;
		esac
	done
fi

# Versions the table does not know, or whose version.py is missing: one line, the CUDA layer alone.
for v in 2.99.0 2.11.0a0+git70d99e9 2.12.0.dev20260101; do
	run "unknown-$v" "$(site "$v")" basic
	check "unknown-$v" none cuda=5 trackers=0
	one_warning "unknown-$v" "torch $v not known: $OFF"
done
rm "$S211/torch/version.py"
run noversion "$S211" basic
check noversion none cuda=5
one_warning noversion "no torch version found beside $S211/torch/lib/libc10_cuda.so: $OFF"
S211=$(site 2.11.0+cu130)

# Another backend: name() is not "native" (its attach would throw and abort).
run async "$S211" basic PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
check async none
one_warning async "torch 2.11.0+cu130: the allocator backend is \"cudaMallocAsync\", not \"native\": $OFF"
# the CUDA layer goes on: 103 cudaMallocAsync and the one that ran out of memory
expect_eq async_cuda "$(python3 "$ROOT/bin/ctdump.py" "$(dump_of async)" | grep -c ' api=11 ')" 104

# CUMTRACE_TORCH=0: nothing attached, nothing said.
run off "$S211" basic CUMTRACE_TORCH=0
check off none cuda=5 trackers=0
no_warning off

# Rows read from headers (2.8, 2.3): off by default, attached with CUMTRACE_TORCH=2;
# 2.3's TraceEntry has no pool id.
S28=$(site 2.8.0+cu126)
run v28 "$S28" basic CUMTRACE_FAKE_TORCH_LAYOUT=2.8
check v28 none
one_warning v28 "torch 2.8.0+cu126 not known: $OFF"
run v28on "$S28" basic CUMTRACE_FAKE_TORCH_LAYOUT=2.8 CUMTRACE_TORCH=2
check v28on same stacks trackers=2
run v23on "$(site 2.3.1)" basic CUMTRACE_FAKE_TORCH_LAYOUT=2.3 CUMTRACE_TORCH=2
check v23on same-nopool stacks
# A library whose vtable does not match its version's row: refused, no crash.
run mismatch "$S28" basic CUMTRACE_FAKE_TORCH_LAYOUT=2.11 CUMTRACE_TORCH=2
check mismatch none cuda=5 trackers=0
one_warning mismatch "torch 2.8.0+cu126: its allocator has 50 virtual functions, 44 expected: $OFF"

# Dump bytes per framework event, compression on (the default): the same run
# with and without the framework layer.
run bench-on "$S211" bench TORCH_FAKE_STEPS=500
run bench-off "$S211" bench TORCH_FAKE_STEPS=500 CUMTRACE_TORCH=0
events=$(jget "$T/bench-on.json" 'len(j["log"])')
on=$(wc -c <"$(dump_of bench-on)")
off=$(wc -c <"$(dump_of bench-off)")
python3 - "$events" "$on" "$off" <<'PY' || fail "bytes per framework event"
import sys
events, on, off = map(int, sys.argv[1:])
per = (on - off) / events
print("ok: %.2f dump bytes per framework event (%d events, %d - %d bytes)" % (per, events, on, off))
sys.exit(0 if events >= 500 * 32 * 3 and per <= 16 else 1)
PY
