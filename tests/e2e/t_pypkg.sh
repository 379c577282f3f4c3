# The cumtrace Python package (python/cumtrace, build/python): mark, range,
# step, counter, active, flush through the shim's C API; without the shim
# every function does nothing and active() is False; CUMTRACE_DISABLE=1
# makes active() False; flush() has written everything before it returns.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
SCRIPT=$ROOT/tests/e2e/pypkg_api.py
PKG=$ROOT/$BUILD/python

# Without the shim: nothing happens, nothing fails.
out=$(PYTHONPATH=$PKG python3 "$SCRIPT" api) || fail "untraced: the script failed"
expect_eq untraced "$(echo $out)" "active False ok"
# With it: active, and every record in the dump.
out=$(traced api env PYTHONPATH="$PKG" python3 "$SCRIPT" api) || fail "traced: the script failed"
expect_eq traced "$(echo $out)" "active True ok"
python3 "$ROOT/bin/ctdump.py" "$(dump_of api)" | grep -o ' mark .*\| counter .*' | sed 's/^ //; s/ts=[0-9]* //; s/ *tid=[0-9]*//' >"$T/api.recs"
expect_eq records "$(cat "$T/api.recs")" "mark instant name='phase one'
mark push name='outer'
mark push name='inner'
mark pop name=''
mark pop name=''
mark step name='step' source=explicit
mark step name='epoch' source=explicit
counter my.bytes=1234 dev=0
mark exit name='exit'"
report "$T/api.json" summary "$(dump_of api)"
expect_eq api_json "$(jget "$T/api.json" '(j["dumps"][0]["steps"], [(m["name"], m["kind"], m.get("source")) for m in j["marks"] if m["kind"] == "step"])')" \
	"({'explicit': 2, 'optimizer': 0, 'unknown': 0, 'inferred': 0}, [('step', 'step', 'explicit'), ('epoch', 'step', 'explicit')])"
# Tracing off.
out=$(traced off env CUMTRACE_DISABLE=1 PYTHONPATH="$PKG" python3 "$SCRIPT" api) || fail "disabled: the script failed"
expect_eq disabled "$(echo $out)" "active False ok"
# flush(): the mark is in the file although the process is killed at once
# (the writer's round is up to 100 ms away).
traced kill env CUMTRACE_FLUSH_MS=100 PYTHONPATH="$PKG" python3 "$SCRIPT" kill >/dev/null 2>&1 && fail "kill: not killed"
python3 "$ROOT/bin/ctdump.py" "$(dump_of kill)" | grep -q "name='flushed before the kill'" ||
	fail "kill: the flushed mark is not in the dump"
echo "ok: flushed mark survives SIGKILL"
