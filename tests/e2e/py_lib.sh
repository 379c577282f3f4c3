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
