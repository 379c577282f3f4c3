# The man pages (issue 18, "Packaging"): build/man/cumtrace.1 and cumtrace-report.1,
# made by make from docs/man/pages.in and the programs' --help, list every command and
# option that --help lists and no other, and render without a groff warning
# (tests/man_check.py); the checker refuses pages that disagree.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
command -v groff >/dev/null || { echo "groff not found (Debian: groff-base)"; exit 77; }
CHECK="python3 $ROOT/tests/man_check.py"
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
W=$ROOT/$BUILD/man/cumtrace.1
R=$ROOT/$BUILD/man/cumtrace-report.1
"$ROOT/$BUILD/cumtrace" --help >"$T/w.help"
"$REPORT" --help >"$T/r.help"
$CHECK "$W" "$T/w.help" "$T/r.help" || fail "cumtrace.1 and cumtrace --help disagree"
$CHECK "$R" "$T/r.help" || fail "cumtrace-report.1 and cumtrace-report --help disagree"
# Every command of commands.def and every option of each --help, counted on their own.
expect_eq report_commands "$(grep -c '^CT_COMMAND(' analyzer/commands/commands.def)" \
	"$(sed -n '/^commands:/,/^$/p' "$T/r.help" | grep -c '^  [a-z]')"
expect_eq report_page "$($CHECK "$R" "$T/r.help" | cut -d' ' -f2-)" \
	"$(grep -Eo '^  -[A-Za-z-]+(, -[A-Za-z-]+)?' "$T/r.help" | tr ',' '\n' | grep -c -- -) options, $(($(grep -c '^CT_COMMAND(' analyzer/commands/commands.def) + 1)) commands, 11 sections"
expect_eq wrapper_page "$($CHECK "$W" "$T/w.help" "$T/r.help" | cut -d' ' -f2-)" "18 options, 2 commands, 11 sections"

# The checker refuses a page that disagrees with --help, or that groff warns about (all
# the changed pages in one python3: its start-up would be most of the test's time).
python3 - "$R" "$T/r.help" "$T/bad.1" >"$T/refused" <<'PY' || fail "the checker took a wrong page: $(cat "$T/refused")"
import re, sys
sys.path.insert(0, "tests")
from man_check import problems
page, help_file, bad = sys.argv[1:]
good, text = open(page).read(), open(help_file).read()
def drop(s, word):  # the item WORD taken out
    return re.sub(r"\.TP\n\\fB%s\\fR[^\n]*\n[^\n]*\n" % re.escape(word.replace("-", "\\-")), "", s, count=1)
changes = {
    "an option less": lambda s: drop(s, "--top"),
    "a command less": lambda s: drop(s, "peak"),
    "an option more": lambda s: s.replace(".SH OPTIONS\n", ".SH OPTIONS\n.TP\n\\fB\\-\\-bogus\\fR\nnothing\n"),
    "a command more": lambda s: s.replace(".SH COMMANDS\n", ".SH COMMANDS\n.TP\n\\fBbogus\\fR\nnothing\n"),
    "an unknown option named": lambda s: s.replace("show this help and exit", "see \\fB\\-\\-frobnicate\\fR", 1),
    "another synopsis": lambda s: s.replace("\\fIDUMP\\fR...", "\\fIDUMPS\\fR...", 1),
    "no EXIT STATUS": lambda s: s.replace(".SH EXIT STATUS\n", ""),
    "a groff warning": lambda s: s.replace(".SH OPTIONS\n", ".SH OPTIONS\n.bogus\n"),
}
took = 0
for name, change in changes.items():
    s = change(good)
    assert s != good, "no change: " + name
    open(bad, "w").write(s)
    errs, _ = problems(bad, [text])
    print("%s: %s" % (name, errs[0] if errs else "TAKEN"))
    took += not errs
# ... and a --help that lists an option the page does not have
errs, _ = problems(page, [text.replace("\n  --top N ", "\n  --topmost N")])
print("a help with --topmost: %s" % "; ".join(errs))
took += errs[:2] != ["option --topmost: in --help, not an item of the page", "option --top: an item of the page, not in --help"]
sys.exit(took)
PY
cat "$T/refused"
