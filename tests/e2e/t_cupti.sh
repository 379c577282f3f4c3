# The CUPTI backend (preload/hooks/cupti.c) against the fake libcupti.so.13, which
# the program cupti_emit drives with the callbacks the real CUPTI would make:
# events, nesting, the callback ids enabled, InitializeInjection, and the
# fallback to interposition when CUPTI is taken.
. tests/e2e/lib.sh

[ -f "$FAKE/libcupti.so.13" ] || fail "no fake CUPTI: build $FAKE/libcupti.so.13 (make tests)"

# evq DUMP EXPR: a Python expression over the dump: ev (the events, in file
# order, each a dict with names for api/op/kind/layer), proc (the PROCESS
# record's key=value strings), stacks (id -> list of ips).
cat >"$T/ev.py" <<'EOF'
import re, struct, sys
root, dump, expr = sys.argv[1:4]
fmt = open(root + "/include/cumtrace/format.h").read()
api_list = fmt[fmt.index("#define CT_API_LIST(X)"):fmt.index("enum ct_api {")]
apis = [name for name, _ in re.findall(r"X\((\w+), (\w+)\)", api_list)]
def enum(prefix):
    return {int(v): k.lower() for k, v in re.findall(r"CT_%s_(\w+) = (\d+)" % prefix, fmt)}
ops, kinds, layers = enum("OP"), enum("KIND"), enum("LAYER")
sys.path.insert(0, root + "/bin")
import ctdump
ev, proc, stacks = [], {}, {}
E = struct.Struct("<6Q2IiIHBBhBB")
for _, rtype, _, body in ctdump.records(open(dump, "rb").read()):
    if rtype == 1:
        for s in body[32:].split(b"\0"):
            if b"=" in s:
                k, v = s.decode().split("=", 1)
                proc.setdefault(k, v)
    elif rtype == 2:
        f = E.unpack_from(body)
        ev.append(dict(ts=f[0], dur=f[1], ptr=f[2], size=f[3], stream=f[4], aux=f[5], tid=f[6],
                       stack=f[7], result=f[8], flags=f[9], api=apis[f[10]], op=ops[f[11]],
                       kind=kinds[f[12]], device=f[13], layer=layers[f[14]]))
    elif rtype == 3:
        sid, depth = struct.unpack_from("<IH", body)
        stacks[sid] = list(struct.unpack_from("<%dQ" % depth, body, 8))
at = lambda p: [(e["api"], e["op"]) for e in ev if e["ptr"] == p]
print(eval(expr))
EOF
evq() { python3 "$T/ev.py" "$ROOT" "$1" "$2"; }
# val FILE KEY: the value the program printed for KEY
val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
# warnings FILE: the shim's lines on stderr
warnings() { grep -c '^cumtrace:' "$1" || true; }

# ---- CUMTRACE_BACKEND=cupti under LD_PRELOAD ------------------------------------------------
traced cupti env CUMTRACE_BACKEND=cupti "$PROGS/cupti_emit" preload >"$T/cupti.out" 2>"$T/cupti.err" ||
	fail "cupti_emit preload exited $?: $(cat "$T/cupti.err")"
d=$(dump_of cupti)
o=$T/cupti.out
expect_eq "no warning" "$(warnings "$T/cupti.err")" 0
expect_eq "fake saw no forbidden call" "$(grep -c 'fakecupti: FAIL' "$T/cupti.err" || true)" 0
expect_eq setting.backend "$(evq "$d" 'proc["setting.backend"]')" cupti
expect_eq subscribed "$(val "$o" subscribed)" 1
expect_eq "cuptiSubscribe calls" "$(val "$o" subscribe_calls)" 1
# Exactly the ids of the issue, one by one (the fake exits 97 on cuptiEnableDomain).
expect_eq "enabled ids = the listed ones" "$(val "$o" enabled_match)" 1
expect_eq "ids enabled" "$(val "$o" enabled_count)" "$(val "$o" enabled_expected)"
expect_eq "no extra id" "$(grep -c '^enabled_extra' "$o" || true)" 0
expect_eq "not enabled: never delivered" "$(val "$o" memcpy_delivered)" 0
# Every event came through CUPTI: the wrappers (cudaSetDevice, the real
# cudaMalloc/cudaFree of L and M) recorded nothing.
expect_eq "layers" "$(evq "$d" 'sorted(set(e["layer"] for e in ev))')" "['cupti']"
expect_eq "events" "$(evq "$d" 'len(ev)')" 18
# A: cudaMalloc with a nested cuMemAlloc_v2 is one event, of the runtime call.
expect_eq "A: one event" "$(evq "$d" 'at(0x6d0000100000)')" "[('cudaMalloc', 'alloc')]"
expect_eq "A: fields" \
	"$(evq "$d" '[(e["kind"], e["size"], e["result"], e["stream"]) for e in ev if e["ptr"] == 0x6d0000100000]')" \
	"[('device', 3145728, 0, 0)]"
expect_eq "no nested driver event" "$(evq "$d" 'sum(e["api"] == "cuMemAlloc_v2" for e in ev)')" 2
# B, C: runtime and driver pairs.
expect_eq "B" "$(evq "$d" 'at(0x6d0000200000)')" "[('cudaMalloc', 'alloc'), ('cudaFree', 'free')]"
expect_eq "C" "$(evq "$d" 'at(0x6d0000400000)')" "[('cuMemAlloc_v2', 'alloc'), ('cuMemFree_v2', 'free')]"
expect_eq "C: size" "$(evq "$d" '[e["size"] for e in ev if e["ptr"] == 0x6d0000400000]')" "[2097152, 0]"
# D: a failure keeps its result and never reads the out-parameter.
expect_eq "D" "$(evq "$d" '[(e["api"], e["ptr"], e["size"]) for e in ev if e["result"] != 0]')" \
	"[('cudaMalloc', 0, 68719476736)]"
expect_eq "D: result" "$(evq "$d" '[e["result"] for e in ev if e["result"] != 0]')" "[2]"
# E: streams; _ptsz with stream 0 is the per-thread default stream (0x2).
expect_eq "E" "$(evq "$d" '[(e["api"], e["stream"]) for e in ev if e["ptr"] == 0x6d0000500000]')" \
	"[('cudaMallocAsync_ptsz', 2), ('cudaFreeAsync', 4660)]"
# F: cudaSetDevice through CUPTI sets the device of later events; pitch.
expect_eq "F: set_device" "$(evq "$d" '[e["device"] for e in ev if e["op"] == "set_device"]')" "[1, 0]"
expect_eq "F: pitch" \
	"$(evq "$d" '[(e["api"], e["size"], e["aux"], e["device"]) for e in ev if e["ptr"] == 0x6d0000600000]')" \
	"[('cudaMallocPitch', 10240, 1024, 1)]"
# G: stream creation.
expect_eq "G" \
	"$(evq "$d" '[(e["api"], e["op"], e["flags"], e["aux"]) for e in ev if e["ptr"] == 0x6d0000700000]')" \
	"[('cudaStreamCreateWithPriority', 'stream_create', 1, 18446744073709551615)]"
# H: VMM.
expect_eq "H: create" \
	"$(evq "$d" '[(e["api"], e["kind"], e["size"], e["device"]) for e in ev if e["ptr"] == 0x6d0000800000]')" \
	"[('cuMemCreate', 'vmm_physical', 2097152, 3)]"
expect_eq "H: map" \
	"$(evq "$d" '[(e["api"], e["ptr"] == 0x6d0000810000, e["aux"] == 0x6d0000800000) for e in ev if e["op"] == "map"]')" \
	"[('cuMemMap', True, True)]"
# J: an exit without its enter records nothing.
expect_eq "J" "$(evq "$d" 'at(0x6d0000900000)')" "[]"
# K: a thread's open call does not hide another thread's.
expect_eq "K" "$(evq "$d" 'at(0x6d0000a00000) + at(0x6d0000b00000)')" \
	"[('cudaMalloc', 'alloc'), ('cuMemAlloc_v2', 'alloc')]"
expect_eq "K: two threads" \
	"$(evq "$d" 'len(set(e["tid"] for e in ev if e["ptr"] in (0x6d0000a00000, 0x6d0000b00000)))')" 2
# L: a real call inside its callbacks: once, with the pointer the runtime returned.
real_l=$(val "$o" real_ptr_l)
expect_eq "L" "$(evq "$d" "[(e['api'], e['op'], e['size'], e['layer']) for e in ev if e['ptr'] == $real_l]")" \
	"[('cudaMalloc', 'alloc', 12288, 'cupti'), ('cudaFree', 'free', 0, 'cupti')]"
# M: the wrappers are silent while CUPTI records.
expect_eq "M" "$(evq "$d" 'sum(e["size"] == 20480 for e in ev)')" 0
# Stacks start at the program, not inside libcupti.
report "$T/cupti-leaks.json" leaks "$d"
expect_eq "A: leak site's innermost frame" \
	"$(jget "$T/cupti-leaks.json" '[s["stack"][0]["function"] for s in j["leaks"]["sites"] if s["bytes"] == 3145728]')" \
	"['leak_site_a']"

# ---- CUDA_INJECTION64_PATH: no preload, the driver calls InitializeInjection ---------------
INJ_PRELOAD=
[ "$PRELOAD" = "$SHIM" ] || INJ_PRELOAD=${PRELOAD%:"$SHIM"} # a sanitizer runtime only
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$INJ_PRELOAD CUDA_INJECTION64_PATH=$SHIM \
	CUMTRACE_OUTPUT="$T/inject.%p.dump" "$PROGS/cupti_emit" inject >"$T/inject.out" 2>"$T/inject.err" ||
	fail "cupti_emit inject exited $?: $(cat "$T/inject.err")"
d=$(dump_of inject)
o=$T/inject.out
expect_eq "inject: InitializeInjection" "$(val "$o" inject_rc)" 1
expect_eq "inject: no warning" "$(warnings "$T/inject.err")" 0
expect_eq "inject: setting.backend" "$(evq "$d" 'proc["setting.backend"]')" cupti
expect_eq "inject: enabled ids" "$(val "$o" enabled_match)" 1
expect_eq "inject: layers" "$(evq "$d" 'sorted(set(e["layer"] for e in ev))')" "['cupti']"
expect_eq "inject: events" "$(evq "$d" 'len(ev)')" 18
expect_eq "inject: A" "$(evq "$d" 'at(0x6d0000100000)')" "[('cudaMalloc', 'alloc')]"

# ---- CUPTI taken (nsys, torch.profiler, ...): one warning, interposition records --------
traced taken env CUMTRACE_BACKEND=cupti CUMTRACE_FAKE_CUPTI_TAKEN=1 "$PROGS/cupti_emit" preload \
	>"$T/taken.out" 2>"$T/taken.err" || fail "cupti_emit (taken) exited $?: $(cat "$T/taken.err")"
d=$(dump_of taken)
o=$T/taken.out
expect_eq "taken: one warning" "$(warnings "$T/taken.err")" 1
expect_eq "taken: the warning" "$(grep '^cumtrace:' "$T/taken.err")" \
	"cumtrace: CUPTI is taken by another tool (Nsight Systems (fake): CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); tracing by interposition"
expect_eq "taken: setting.backend" "$(evq "$d" 'proc["setting.backend"]')" interpose
expect_eq "taken: subscribed" "$(val "$o" subscribed)" 0
expect_eq "taken: cuptiSubscribe calls" "$(val "$o" subscribe_calls)" 1
expect_eq "taken: nothing enabled" "$(val "$o" enabled_count)" 0
# cudaSetDevice, L's and M's cudaMalloc/cudaFree, each once, at the runtime level.
expect_eq "taken: interposed events" "$(evq "$d" '[(e["api"], e["layer"]) for e in ev]')" \
	"[('cudaSetDevice', 'runtime'), ('cudaMalloc', 'runtime'), ('cudaFree', 'runtime'), ('cudaMalloc', 'runtime'), ('cudaFree', 'runtime')]"
expect_eq "taken: sizes" "$(evq "$d" '[e["size"] for e in ev if e["op"] == "alloc"]')" "[12288, 20480]"

# ---- any other CUPTI error: the same fallback -----------------------------------------------
traced fail15 env CUMTRACE_BACKEND=cupti CUMTRACE_FAKE_CUPTI_FAIL=15 "$PROGS/cupti_emit" preload \
	>"$T/fail15.out" 2>"$T/fail15.err" || fail "cupti_emit (fail) exited $?: $(cat "$T/fail15.err")"
d=$(dump_of fail15)
expect_eq "error: the warning" "$(grep '^cumtrace:' "$T/fail15.err")" \
	"cumtrace: CUPTI is not available (cuptiSubscribe: CUPTI_ERROR_NOT_INITIALIZED); tracing by interposition"
expect_eq "error: setting.backend" "$(evq "$d" 'proc["setting.backend"]')" interpose
expect_eq "error: interposed events" "$(evq "$d" 'len(ev)')" 5

# ---- cumtrace_bench_pause: the same 18 callbacks while paused record nothing ----------------
traced paused env CUMTRACE_BACKEND=cupti "$PROGS/cupti_emit" paused >"$T/paused.out" 2>"$T/paused.err" ||
	fail "cupti_emit paused exited $?: $(cat "$T/paused.err")"
expect_eq "paused: rc" "$(val "$T/paused.out" pause_rc) $(val "$T/paused.out" resume_rc)" "0 0"
expect_eq "paused: subscribed" "$(val "$T/paused.out" subscribed)" 1
expect_eq "paused: events" "$(evq "$(dump_of paused)" 'len(ev)')" 0

# ---- never on by default; a bad value warns and means interpose -----------------------------
traced default "$PROGS/cupti_emit" preload >"$T/default.out" 2>"$T/default.err" ||
	fail "cupti_emit (default) exited $?: $(cat "$T/default.err")"
d=$(dump_of default)
expect_eq "default: no warning" "$(warnings "$T/default.err")" 0
expect_eq "default: CUPTI untouched" "$(val "$T/default.out" subscribe_calls)" 0
expect_eq "default: setting.backend" "$(evq "$d" 'proc["setting.backend"]')" interpose
expect_eq "default: interposed events" "$(evq "$d" 'len(ev)')" 5

traced bogus env CUMTRACE_BACKEND=bogus "$PROGS/cupti_emit" preload >"$T/bogus.out" 2>"$T/bogus.err" ||
	fail "cupti_emit (bogus) exited $?: $(cat "$T/bogus.err")"
expect_eq "bogus: the warning" "$(grep '^cumtrace:' "$T/bogus.err")" \
	"cumtrace: ignoring CUMTRACE_BACKEND=bogus (want interpose or cupti); using interpose"
expect_eq "bogus: CUPTI untouched" "$(val "$T/bogus.out" subscribe_calls)" 0

# CUMTRACE_DISABLE wins: nothing is subscribed.
traced off env CUMTRACE_BACKEND=cupti CUMTRACE_DISABLE=1 "$PROGS/cupti_emit" preload >"$T/off.out" 2>&1 ||
	fail "cupti_emit (disabled) exited $?"
expect_eq "disabled: CUPTI untouched" "$(val "$T/off.out" subscribe_calls)" 0
