# preload/core/pyoffsets.h against the headers of every CPython 3.8..3.13 found
# here: tests/e2e/py_offsets_probe.c, compiled with that version's
# python3.X-config --includes and Py_BUILD_CORE, compares each value with
# offsetof(). A version whose headers (or internal headers) are not installed
# is skipped; exit 77 when no version could be checked.
. tests/e2e/lib.sh
. tests/e2e/py_lib.sh
cc=${CC:-cc}
probe=$ROOT/tests/e2e/py_offsets_probe.c
checked=""
skipped=""
py_interpreters >"$T/pys"
while read -r ver p; do
	m=${ver#3.}
	[ "$m" -ge 8 ] && [ "$m" -le 13 ] || continue
	kind=$("$p" -c 'import sys, sysconfig
v = sysconfig.get_config_var
print("debug" if v("Py_DEBUG") else "free-threaded" if v("Py_GIL_DISABLED") else "release")')
	bin=$(dirname "$p")
	config=""
	for c in "$bin/python$ver-config" "$bin/python3-config"; do
		[ -x "$c" ] && config=$c && break
	done
	inc=$("$p" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	need=$inc/Python.h
	[ "$m" -ge 11 ] && need=$inc/internal/pycore_frame.h
	if [ "$kind" != release ] || [ -z "$config" ] || [ ! -f "$need" ]; then
		echo "skip $ver ($p): $kind build, config '${config:-none}', $need $([ -f "$need" ] && echo present || echo absent)"
		skipped="$skipped $ver"
		continue
	fi
	# shellcheck disable=SC2046
	$cc -std=gnu11 -Wall -Wextra -Werror $("$config" --includes) -I"$ROOT/preload/core" \
		-o "$T/probe$m" "$probe" || fail "probe for $ver does not compile"
	"$T/probe$m" >"$T/probe$m.txt" || { cat "$T/probe$m.txt"; fail "pyoffsets.h disagrees with the headers of $ver ($p)"; }
	tail -n 1 "$T/probe$m.txt"
	checked="$checked $ver"
	# The probe can fail: a table with one offset moved must be refused.
	if [ ! -f "$T/selftest" ]; then
		$cc -std=gnu11 -DCT_PROBE_SELFTEST $("$config" --includes) -I"$ROOT/preload/core" \
			-o "$T/probe_selftest" "$probe" || fail "self-test probe does not compile"
		if "$T/probe_selftest" >"$T/selftest.txt"; then
			fail "the probe accepted a wrong thread_id offset for $ver"
		fi
		grep -q 'ts_thread_id .*MISMATCH' "$T/selftest.txt" || fail "self-test: no mismatch named"
		touch "$T/selftest"
	fi
done <"$T/pys"
[ -n "$checked" ] || { echo "no CPython 3.8..3.13 with headers found (skipped:${skipped:- none})"; exit 77; }
echo "checked:$checked; skipped:${skipped:- none}"
