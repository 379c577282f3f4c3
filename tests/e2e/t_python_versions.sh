# Python frames on every CPython 3.8..3.13 this machine has (python3.X on
# PATH, pyenv versions): one build of the shim reads them all; 3.7 and older
# are left alone (native frames only).
. tests/e2e/lib.sh
script=$ROOT/tests/e2e/py_leaky.py
line=$(grep -n 'LEAK-LINE' "$script" | cut -d: -f1)
pys=""
for m in 8 9 10 11 12 13; do
	p=$(command -v "python3.$m" 2>/dev/null || true)
	# pyenv shims name interpreters that may not run: keep those that do
	[ -n "$p" ] && "$p" -c pass >/dev/null 2>&1 && pys="$pys $p"
done
for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
	[ -x "$p" ] && pys="$pys $p"
done
[ -n "$pys" ] || { echo "no python3.X interpreters found"; exit 77; }
n=0
for p in $pys; do
	ver=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	n=$((n + 1))
	traced "v$n" "$p" "$script" "$FAKE"
	report "$T/v$n.json" leaks --python-only "$(dump_of "v$n")"
	got=$(jget "$T/v$n.json" '(lambda f: (f.get("python"), (f.get("function") or "?").split(".")[-1], f["line"]))(j["leaks"]["sites"][0]["stack"][0])')
	case $ver in
	3.[89] | 3.1[0-3]) expect_eq "python $ver ($p)" "$got" "(True, 'leaky', $line)" ;;
	*) expect_eq "python $ver ($p) has no Python frames" "$(echo "$got" | cut -c1-5)" "(None" ;;
	esac
done
