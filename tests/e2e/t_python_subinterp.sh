# A traced call from a sub-interpreter (tests/e2e/py_subinterp.py) on every
# CPython 3.12+ found here: its Python stack is the sub-interpreter's
# (sub_alloc at line 6 of its "<string>"), read through the thread's current
# thread state (python.c: ct_py_current_tstate), not the auto one, whose
# frames are the main interpreter's (the script's run_string line).
. tests/e2e/lib.sh
. tests/e2e/py_lib.sh
py_interpreters >"$T/pys"
n=0
while read -r ver p; do
	m=${ver#3.}
	[ "$m" -ge 12 ] || continue
	n=$((n + 1))
	traced "s$n" "$p" "$ROOT/tests/e2e/py_subinterp.py" "$FAKE" 2>"$T/s$n.err" ||
		fail "$ver: py_subinterp.py exited $?: $(cat "$T/s$n.err")"
	report "$T/s$n.json" leaks "$(dump_of "s$n")"
	expect_eq "$ver: the leak's Python frames" \
		"$(jget "$T/s$n.json" '[(f["function"], f["file"], f["line"]) for s in j["leaks"]["sites"] for f in s["stack"] if f.get("python")]')" \
		"[('sub_alloc', '<string>', 6), ('<module>', '<string>', 7)]"
done <"$T/pys"
[ "$n" -gt 0 ] || { echo "no CPython 3.12+ found"; exit 77; }
