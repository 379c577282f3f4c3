# The progress line while dumps are read: on a terminal (script(1) of
# util-linux provides one), shown at once when CUMTRACE_REPORT_PROGRESS_AFTER_MS
# is 0, and erased before the end; never when standard error is not a
# terminal, whatever the variables say; not before the delay.
. tests/e2e/lib.sh
command -v script >/dev/null || { echo "script (util-linux) not found"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
export CUMTRACE_FAKE_DEVICES=4
traced job sh "$ROOT/tests/e2e/fake_torchrun.sh" --nproc_per_node 2 "$PROGS/rank_worker" ||
	fail "the job failed"
set -- "$T"/job.*.dump
[ $# -eq 2 ] || fail "expected 2 dumps, found $#"
"$REPORT" leaks -o "$T/plain.txt" "$@" 2>"$T/plain.err" || fail "report exited $?"

# on a terminal: script runs the command with a pseudo-terminal as its standard
# streams and copies what the terminal shows to its own standard output
on_tty() { # OUT, then the environment and command as one string
	out=$1
	shift
	script -qec "$*" /dev/null >"$out" </dev/null || fail "under script: exit $?"
}
on_tty "$T/tty.out" "CUMTRACE_REPORT_PROGRESS_AFTER_MS=0 CUMTRACE_REPORT_PROGRESS_MS=0 '$REPORT' leaks -o '$T/tty.txt' '$1' '$2'"
cmp -s "$T/plain.txt" "$T/tty.txt" || fail "the report differs on a terminal"
python3 - "$T/tty.out" "$1" "$2" <<'PY' || fail "progress line: $(od -c "$T/tty.out" | head -20)"
import os, re, sys
shown = open(sys.argv[1], "rb").read().decode()
names = [os.path.basename(p) for p in sys.argv[2:]]
lines = [l for l in shown.split("\r") if l.strip()]
for i, name in enumerate(names):
    want = r"reading %s \(%d/2\): \d+%% \([0-9.]+ [KMG]?i?B / [0-9.]+ [KMG]?i?B\), \d+ events *$" % (re.escape(name), i + 1)
    if not any(re.match(want, l) for l in lines):
        sys.exit("no line for %s in %r" % (name, lines))
last = [l for l in lines if l.startswith("reading %s (2/2)" % names[1])][-1]
if "100% (" not in last:
    sys.exit("the last line of the last dump is not at 100%%: %r" % last)
# erased at the end: carriage return, blanks as wide as the widest line, carriage return
width = max(len(l.rstrip()) for l in lines)
if not re.search(r"\r {%d,}\r$" % width, shown):
    sys.exit("the line is not erased at the end: %r" % shown[-80:])
print("ok: %d progress lines, erased" % len(lines))
PY

# the delay not reached (an hour): nothing on the terminal
on_tty "$T/late.out" "CUMTRACE_REPORT_PROGRESS_AFTER_MS=3600000 '$REPORT' leaks -o '$T/late.txt' '$1' '$2'"
[ ! -s "$T/late.out" ] || fail "progress before the delay: $(od -c "$T/late.out" | head)"
echo "ok: nothing before the delay"

# not a terminal: nothing, even when forced
CUMTRACE_REPORT_PROGRESS_AFTER_MS=0 CUMTRACE_REPORT_PROGRESS_MS=0 "$REPORT" leaks -o "$T/file.txt" "$@" 2>"$T/file.err" ||
	fail "report exited $?"
[ ! -s "$T/file.err" ] || fail "progress without a terminal: $(od -c "$T/file.err" | head)"
[ ! -s "$T/plain.err" ] || fail "stderr without a terminal: $(cat "$T/plain.err")"
echo "ok: nothing without a terminal"
