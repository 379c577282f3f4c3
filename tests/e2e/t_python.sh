# Python frames: a CPython script allocating through ctypes shows its own
# file, function and line at the leak site, with the GIL held during the call
# (ctypes.PyDLL) and released (ctypes.CDLL).
. tests/e2e/lib.sh
. tests/e2e/py_lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
script=$ROOT/tests/e2e/py_leaky.py
line=$(grep -n 'LEAK-LINE' "$script" | cut -d: -f1)
for mode in pydll cdll; do
	traced "py_$mode" python3 "$script" "$FAKE" "$mode"
	dump=$(dump_of "py_$mode")
	report "$T/mixed.json" leaks "$dump"
	report "$T/pyonly.json" leaks --python-only "$dump"
	report "$T/native.json" leaks --native "$dump"
	expect_eq "$mode leak_count" "$(jget "$T/mixed.json" 'j["leaks"]["count"]')" 1
	# Mixed view: the first Python frame is the leaking line; native frames of
	# ctypes come before it, the interpreter's own frames are gone.
	expect_eq "$mode leak_py_frame" \
		"$(jget "$T/mixed.json" '[(f["file"], f["function"], f["line"]) for f in j["leaks"]["sites"][0]["stack"] if f.get("python")][0]')" \
		"('$script', 'leaky', $line)"
	expect_eq "$mode py_callers" \
		"$(jget "$T/mixed.json" '[f["function"] for f in j["leaks"]["sites"][0]["stack"] if f.get("python")]')" \
		"['leaky', 'Holder.grab', 'main', '<module>']"
	expect_eq "$mode mixed_has_native" \
		"$(jget "$T/mixed.json" 'any(not f.get("python") for f in j["leaks"]["sites"][0]["stack"])')" True
	expect_eq "$mode no_eval_frames" \
		"$(jget "$T/mixed.json" 'any((f.get("function") or "").startswith("_PyEval_EvalFrame") for f in j["leaks"]["sites"][0]["stack"])')" False
	# --python-only: Python frames alone.
	expect_eq "$mode pyonly_all_python" \
		"$(jget "$T/pyonly.json" 'all(f.get("python") for f in j["leaks"]["sites"][0]["stack"]) and len(j["leaks"]["sites"][0]["stack"])')" 4
	expect_eq "$mode pyonly_first" \
		"$(jget "$T/pyonly.json" '(lambda f: (f["file"], f["function"], f["line"]))(j["leaks"]["sites"][0]["stack"][0])')" \
		"('$script', 'leaky', $line)"
	# --native: no Python frames, the interpreter's frames are there.
	expect_eq "$mode native_no_python" \
		"$(jget "$T/native.json" 'any(f.get("python") for s in j["leaks"]["sites"] for f in s["stack"])')" False
	expect_eq "$mode native_has_stack" \
		"$(jget "$T/native.json" 'len(j["leaks"]["sites"][0]["stack"]) > 3')" True
	# Text view shows the Python frame, the script relative to the directory it ran in, and the
	# site's label is that frame.
	"$REPORT" leaks "$dump" >"$T/leaks.txt"
	grep -q "^      py leaky (tests/e2e/py_leaky.py:$line)\$" "$T/leaks.txt" ||
		fail "$mode: text report lacks the Python frame: $(cat "$T/leaks.txt")"
	grep -q "^      site: leaky (tests/e2e/py_leaky.py:$line)\$" "$T/leaks.txt" ||
		fail "$mode: text report lacks the site label: $(cat "$T/leaks.txt")"
	echo "ok: $mode text report"
done
# A fork child's dump starts empty: its Python strings and stacks are written
# again there, although the parent made the same ones before the fork.
# (ThreadSanitizer: not in a fork child, see tsan_build in lib.sh.)
if tsan_build; then
	echo "skip: fork part (ThreadSanitizer does not support the child's writer thread)"
else
	cat >"$T/fork.py" <<'PY'
import ctypes, os, sys
lib = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
def grab(n):
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), n)
    return p
keep = [grab(4096), grab(4096)]
pid = os.fork()
if pid == 0:
    keep = [grab(4096), grab(4096)]
    os._exit(0)
os.waitpid(pid, 0)
PY
	traced fork python3 "$T/fork.py" "$FAKE"
	for d in "$T"/fork.*.dump; do
		report "$T/f.json" leaks --python-only "$d"
		expect_eq "fork: $(jget "$T/f.json" '"child" if j["dumps"][0]["forked"] else "parent"') frames" \
			"$(jget "$T/f.json" '[(f["file"], f["function"], f["line"]) for f in j["leaks"]["sites"][0]["stack"]]')" \
			"[('$T/fork.py', 'grab', 5), ('$T/fork.py', '<module>', $(jget "$T/f.json" '10 if j["dumps"][0]["forked"] else 7'))]"
	done
	expect_eq fork_dumps "$(ls "$T"/fork.*.dump | wc -l)" 2
fi
# Interning: the same Python stack twice costs one PYSTACK record.
traced py2 python3 -c '
import ctypes, os, sys
lib = ctypes.PyDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
def a():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 256)
    lib.cudaFree(p)
for i in range(100):
    a()
' "$FAKE"
dump2=$(dump_of py2)
n=$(python3 "$ROOT/tests/e2e/ctrec.py" count 11 "$dump2")
expect_eq pystack_records "$n" 1
# The memo of whole Python stacks keeps a loop's stacks: 24 allocating lines in
# turn, 50 rounds. After the first round every walk finds its stack in the memo,
# less any of the 24 whose memo set overflowed (more than 4 in one of 64 sets:
# p < 0.3%, one line then). The memo of before, 64 entries direct-mapped,
# found 57-82% (the native stack cache plays no part: off under TSan).
CUMTRACE_SELFTIME=1 traced memo python3 "$ROOT/tests/e2e/py_memo.py" "$FAKE" 50 >"$T/memo.lines" 2>"$T/memo.err" ||
	fail "py_memo.py exited $?: $(cat "$T/memo.err")"
calls=$(sed -n 's/^cumtrace: self time: \([0-9]*\) calls with stacks.*/\1/p' "$T/memo.err")
found=$(sed -n 's/.* \([0-9]*\) found in the memo, .*/\1/p' "$T/memo.err")
expect_eq "memo: calls with stacks" "$calls" 1200
[ -n "$found" ] && [ "$found" -ge 1130 ] && [ "$found" -le 1176 ] ||
	fail "memo: $found of 1200 walks found in the memo, expected 1130-1176: $(cat "$T/memo.err")"
# the steady calls apart: every one of them had Python frames from the memo (one thread, all in Python)
steady=$(self_steady "$T/memo.err")
expect_eq "memo: steady calls with Python frames, without" \
	"$(self_apart "$T/memo.err")" "$steady 0"
expect_eq "memo: calls not walked" "$(self_nowalk "$T/memo.err")" 0
# and what it hands out is right: the last round's allocation of function k,
# 4096 * (k + 1) bytes, leaks at k's own line, as py_memo.py printed them.
py_sites_at_lines memo 30
# More stacks than the memo holds (600 lines, 256 entries): entries leave their sets
# all the time, and every leaked site is still at its own line.
traced memo600 python3 "$ROOT/tests/e2e/py_memo.py" "$FAKE" 3 600 >"$T/memo600.lines" ||
	fail "py_memo.py 600 exited $?"
py_sites_at_lines memo600 700
# CUMTRACE_PYTHON=0: no Python frames.
CUMTRACE_PYTHON=0 traced py3 python3 "$script" "$FAKE"
report "$T/off.json" leaks "$(dump_of py3)"
expect_eq off_no_python \
	"$(jget "$T/off.json" 'any(f.get("python") for s in j["leaks"]["sites"] for f in s["stack"])')" False
# A native program (no Python symbols) is unaffected.
traced nat "$PROGS/basic" >/dev/null
expect_eq native_prog_pystacks "$(python3 "$ROOT/tests/e2e/ctrec.py" count 11 "$(dump_of nat)")" 0
# A thread with a Python thread state and no frame (torch's autograd threads keep
# one): its 101 calls with stacks (cudaFree takes none) find no frame, count as steady when their native stack is known,
# and carry no Python stack; the main thread's carry theirs. Where the stack cache
# knows the thread's whole native stack (a pthread of libpynoframe.so: no frame in
# the interpreter's object) its calls do not even walk (ct_py_outside); without the
# cache (ThreadSanitizer) each walks to find no frame.
nf=$ROOT/tests/e2e/py_noframe.py
CUMTRACE_SELFTIME=1 traced noframe python3 "$nf" "$FAKE" "$ROOT/$BUILD/tests/libs/libpynoframe.so" 100 \
	2>"$T/noframe.err" || fail "py_noframe.py exited $?: $(cat "$T/noframe.err")"
known=$(sed -n 's/.* \([0-9]*\) known to the stack cache; Python thread state [^;]*; clock reads [^;]*; parts: .*/\1/p' "$T/noframe.err")
expect_eq "noframe: calls not walked, walks with no frame (stack cache knew $known)" \
	"$(self_nowalk "$T/noframe.err") $(sed -n 's/.*, \([0-9]*\) with no frame, .*/\1/p' "$T/noframe.err")" \
	"$([ "$known" -gt 0 ] && echo "101 0" || echo "0 101")"
# Steady: every call whose native stack the cache knew, but the leaking line's
# (its Python stack is new); none without the cache (ThreadSanitizer).
steady=$(self_steady "$T/noframe.err")
expect_eq "noframe: steady calls (stack cache knew $known)" "$steady" "$((known > 0 ? known - 1 : 0))"
# and apart: the main thread's steady calls had Python frames, the other thread's none; each
# made 100 pairs from one place, its first call and the leaking one not steady: half each
expect_eq "noframe: steady calls with Python frames, without" \
	"$(self_apart "$T/noframe.err")" \
	"$((steady / 2)) $((steady - steady / 2))"
report "$T/noframe.json" leaks "$(dump_of noframe)"
expect_eq "noframe: leaked blocks' Python lines" \
	"$(jget "$T/noframe.json" 'sorted((s["bytes"], [f["line"] for f in s["stack"] if f.get("python")][:1]) for s in j["leaks"]["sites"])')" \
	"[(555, [$(grep -n NOFRAME-LEAK-LINE "$nf" | tail -1 | cut -d: -f1)]), (777, [])]"
# A thread the C library starts that runs Python code (PyRun_SimpleString): its
# native stacks run through the interpreter's object, so every call is walked and
# the leak carries its line in that code; and a call 40 C frames below Python, its
# native stack cut at the depth limit (32) above the interpreter: walked too. Under
# each CPython found whose interpreter lives in another object (python3's
# libpython, or the executable itself).
for pyx in python3 /usr/bin/python3.11 /usr/bin/python3.12; do
	command -v "$pyx" >/dev/null 2>&1 || continue
	ct=ct$(basename "$pyx" | tr -d .)
	CUMTRACE_SELFTIME=1 traced "$ct" "$pyx" "$ROOT/tests/e2e/py_cthread.py" "$FAKE" \
		"$ROOT/$BUILD/tests/libs/libpynoframe.so" 50 >"$T/$ct.line" 2>"$T/$ct.err" ||
		fail "py_cthread.py ($pyx) exited $?: $(cat "$T/$ct.err")"
	expect_eq "$ct: calls not walked" "$(self_nowalk "$T/$ct.err")" 0
	report "$T/$ct.json" leaks "$(dump_of "$ct")"
	expect_eq "$ct: leaked blocks' Python lines" \
		"$(jget "$T/$ct.json" 'sorted((s["bytes"], [f["line"] for f in s["stack"] if f.get("python")][:1]) for s in j["leaks"]["sites"])')" \
		"$(read -r cl dl <"$T/$ct.line" && echo "[(888, [$dl]), (999, [$cl])]")"
done
