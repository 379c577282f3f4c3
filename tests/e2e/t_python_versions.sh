# Python frames on every CPython this machine has (tests/e2e/py_lib.sh): one
# build of the shim reads 3.8..3.13, whether or not the allocating thread
# holds the GIL; 3.7 and older are left alone (native frames only).
# tests/e2e/py_frames.py allocates from nested functions through ctypes.CDLL
# (GIL released) and PyDLL (held), a threading.Thread, a generator, a nested
# class, a coroutine, a comprehension, a lambda, 150 frames deep, under
# sys.settrace, from a generated module with far-apart and many-line calls,
# and from a thread made by C; each leak site's Python frames must equal what
# CPython itself reported at the call (py_frames_check.py), and a few are
# also checked here against the script's marked lines.
. tests/e2e/lib.sh
. tests/e2e/py_lib.sh
script=$ROOT/tests/e2e/py_frames.py
mark() { grep -n "# $1\$" "$script" | cut -d: -f1; }
${CC:-cc} -shared -fPIC -o "$T/cthread.so" "$ROOT/tests/e2e/py_cthread.c" -lpthread ||
	fail "cannot build the C-thread helper"
py_interpreters >"$T/pys"
[ -s "$T/pys" ] || { echo "no python3.X interpreters found"; exit 77; }
# frames NAME [N]: (function, line) of the (first N) Python frames of scenario NAME's leak site
frames() {
	python3 - "$dir/r.json" "$dir/expect.json" "$1" "${2:-1000}" <<'PY'
import json, sys
r, e, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
size = e["scenarios"][name]["size"]
site = [s for s in r["leaks"]["sites"] if s["bytes"] == size][0]
print([(f["function"], f["line"]) for f in site["stack"] if f.get("python")][:int(sys.argv[4])])
PY
}
n=0
while read -r ver p; do
	n=$((n + 1))
	dir=$T/v$n
	mkdir -p "$dir"
	traced "v$n" "$p" "$script" "$FAKE" "$dir" "$T/cthread.so" || fail "$ver: py_frames.py exited $?"
	report "$dir/r.json" leaks --python-only "$(dump_of "v$n")"
	case $ver in
	3.[89] | 3.1[0-3]) ;;
	*)
		expect_eq "python $ver ($p) has no Python frames" \
			"$(jget "$dir/r.json" 'sum(1 for s in j["leaks"]["sites"] for f in s["stack"] if f.get("python"))')" 0
		continue
		;;
	esac
	echo "== python $ver ($p)"
	python3 "$ROOT/tests/e2e/py_frames_check.py" "$dir/r.json" "$dir/expect.json" ||
		fail "python $ver: Python frames differ from CPython's own"
	expect_eq "$ver: GIL held during the call (CDLL, PyDLL)" \
		"$(jget "$dir/expect.json" '(j["gil"]["cdll"], j["gil"]["pydll"])')" "(0, 1)"
	m=${ver#3.}
	qual() { if [ "$m" -ge 11 ]; then echo "$1"; else echo "${1##*.}"; fi; }
	nested="('leaf', $(mark LEAF-LINE)), ('middle', $(mark MIDDLE-LINE)), ('outer', $(mark OUTER-LINE))"
	expect_eq "$ver: CDLL (GIL released)" "$(frames cdll)" \
		"[$nested, ('<module>', $(grep -n '^outer(cdll, "cdll")$' "$script" | cut -d: -f1))]"
	expect_eq "$ver: PyDLL (GIL held)" "$(frames pydll)" \
		"[$nested, ('<module>', $(grep -n '^outer(pydll, "pydll")$' "$script" | cut -d: -f1))]"
	expect_eq "$ver: thread" "$(frames thread 2)" \
		"[('leaf', $(mark LEAF-LINE)), ('worker', $(mark THREAD-LINE))]"
	expect_eq "$ver: generator" "$(frames generator 2)" \
		"[('leaf', $(mark LEAF-LINE)), ('$(qual Holder.blocks)', $(mark GENERATOR-LINE))]"
	expect_eq "$ver: nested class" "$(frames method 1)" \
		"[('$(qual Holder.Inner.method)', $(mark METHOD-LINE))]"
	expect_eq "$ver: deep" "$(frames deep | grep -o "('recurse'" | wc -l)" 127
	expect_eq "$ver: C thread" "$(frames c_thread)" "[]"
done <"$T/pys"
