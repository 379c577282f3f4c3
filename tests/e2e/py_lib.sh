# Helpers for the Python tests: source it after tests/e2e/lib.sh.

# py_interpreters: one line "3.M PATH" per CPython 3 minor version found here,
# oldest first: python3.M on PATH when it runs (pyenv shims name interpreters
# that may not), else $PYENV_ROOT/versions/3.M.*/bin/python3.
py_interpreters() {
	for m in 6 7 8 9 10 11 12 13 14; do
		p=$(command -v "python3.$m" 2>/dev/null || true)
		if [ -z "$p" ] || ! "$p" -c pass >/dev/null 2>&1; then
			p=""
			for q in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3."$m".*/bin/python3; do
				[ -x "$q" ] && "$q" -c pass >/dev/null 2>&1 && p=$q
			done
		fi
		[ -n "$p" ] && echo "3.$m $p"
	done
	return 0
}

# py_sites_at_lines NAME TOP: run NAME's leaked sites (report --top TOP), each as (its
# bytes / 4096 - 1, its first Python frame's line), against the "k LINE" lines that the
# script printed into $T/NAME.lines (tests/e2e/py_memo.py, py_churn.py; other lines skipped)
py_sites_at_lines() {
	report "$T/$1.json" leaks --top "$2" "$(dump_of "$1")"
	expect_eq "$1: leaked sites at their lines" \
		"$(jget "$T/$1.json" 'sorted((s["bytes"] // 4096 - 1, [f["line"] for f in s["stack"] if f.get("python")][0]) for s in j["leaks"]["sites"])')" \
		"$(python3 -c 'import sys; print(sorted(tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.split()[0].isdigit()))' "$T/$1.lines")"
}
