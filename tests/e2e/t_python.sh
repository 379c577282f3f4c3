# Python frames: a CPython script allocating through ctypes (PyDLL: the GIL
# stays held) shows its own file, function and line at the leak site.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
script=$ROOT/tests/e2e/py_leaky.py
line=$(grep -n 'LEAK-LINE' "$script" | cut -d: -f1)
traced py python3 "$script" "$FAKE"
dump=$(dump_of py)
report "$T/mixed.json" leaks "$dump"
report "$T/pyonly.json" leaks --python-only "$dump"
report "$T/native.json" leaks --native "$dump"
expect_eq leak_count "$(jget "$T/mixed.json" 'j["leaks"]["count"]')" 1
# Mixed view: the first Python frame is the leaking line; native frames of
# ctypes come before it, the interpreter's own frames are gone.
expect_eq leak_py_frame \
	"$(jget "$T/mixed.json" '[(f["file"], f["function"], f["line"]) for f in j["leaks"]["sites"][0]["stack"] if f.get("python")][0]')" \
	"('$script', 'leaky', $line)"
expect_eq py_callers \
	"$(jget "$T/mixed.json" '[f["function"] for f in j["leaks"]["sites"][0]["stack"] if f.get("python")]')" \
	"['leaky', 'Holder.grab', 'main', '<module>']"
expect_eq mixed_has_native \
	"$(jget "$T/mixed.json" 'any(not f.get("python") for f in j["leaks"]["sites"][0]["stack"])')" True
expect_eq no_eval_frames \
	"$(jget "$T/mixed.json" 'any((f.get("function") or "").startswith("_PyEval_EvalFrame") for f in j["leaks"]["sites"][0]["stack"])')" False
# --python-only: Python frames alone.
expect_eq pyonly_all_python \
	"$(jget "$T/pyonly.json" 'all(f.get("python") for f in j["leaks"]["sites"][0]["stack"]) and len(j["leaks"]["sites"][0]["stack"])')" 4
expect_eq pyonly_first \
	"$(jget "$T/pyonly.json" '(lambda f: (f["file"], f["function"], f["line"]))(j["leaks"]["sites"][0]["stack"][0])')" \
	"('$script', 'leaky', $line)"
# --native: no Python frames, the interpreter's frames are there.
expect_eq native_no_python \
	"$(jget "$T/native.json" 'any(f.get("python") for s in j["leaks"]["sites"] for f in s["stack"])')" False
expect_eq native_has_stack \
	"$(jget "$T/native.json" 'len(j["leaks"]["sites"][0]["stack"]) > 3')" True
# Text view shows the Python frame.
"$REPORT" leaks "$dump" >"$T/leaks.txt"
grep -q "py leaky ($script:$line)" "$T/leaks.txt" || fail "text report lacks the Python frame: $(cat "$T/leaks.txt")"
echo "ok: text report"
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
# CUMTRACE_PYTHON=0: no Python frames.
CUMTRACE_PYTHON=0 traced py3 python3 "$script" "$FAKE"
report "$T/off.json" leaks "$(dump_of py3)"
expect_eq off_no_python \
	"$(jget "$T/off.json" 'any(f.get("python") for s in j["leaks"]["sites"] for f in s["stack"])')" False
# A native program (no Python symbols) is unaffected.
traced nat "$PROGS/basic" >/dev/null
expect_eq native_prog_pystacks "$(python3 "$ROOT/tests/e2e/ctrec.py" count 11 "$(dump_of nat)")" 0
