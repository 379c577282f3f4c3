# Site labels (issue 17): each site's first line is "site: FUNC (FILE:LINE)",
# its label frame (the user's Python frame, else the user's native frame; the
# frames text stacks fold are never one). Two sites that share a helper (the
# same top frame, different callers) get labels that tell them apart: the
# caller is named. The label is in JSON ("label", "label_frame" with the path
# as recorded), CSV (a "label" column), JUnit testcase names and SARIF
# messages; files are shown relative to the traced process's directory.
. tests/e2e/lib.sh
src=tests/e2e/progs/shared_helper.c
line() { grep -n "$1" "$ROOT/$src" | cut -d: -f1; }
H=$(line HELPER_LINE)
W=$(line WEIGHTS_LINE)
B=$(line BUFFER_LINE)
O=$(line OWN_LINE)
S1=$(line STEP_ONE_LINE)
S2=$(line STEP_TWO_LINE)
traced sh "$PROGS/shared_helper" >/dev/null
dump=$(dump_of sh)
"$REPORT" leaks "$dump" >"$T/l.txt"
grep '^      site: ' "$T/l.txt" >"$T/sites.txt" || fail "no site lines: $(cat "$T/l.txt")"
expect_eq text_sites "$(cat "$T/sites.txt")" "      site: helper ($src:$H) from load_weights ($src:$W)
      site: helper ($src:$H) from make_buffer ($src:$B)
      site: own_site ($src:$O)
      site: helper ($src:$H) from step_one ($src:$S1)
      site: helper ($src:$H) from step_two ($src:$S2)"
# the site line comes first, right after the site's header line
expect_eq first_line "$(sed -n 4p "$T/l.txt")" "      site: helper ($src:$H) from load_weights ($src:$W)"
# JSON: the label, its frame with the file as recorded (the debug info's, never shortened)
report "$T/l.json" leaks "$dump"
expect_eq json_labels "$(jget "$T/l.json" '[s["label"] for s in j["leaks"]["sites"]]')" \
	"['helper ($src:$H) from load_weights ($src:$W)', 'helper ($src:$H) from make_buffer ($src:$B)', 'own_site ($src:$O)', 'helper ($src:$H) from step_one ($src:$S1)', 'helper ($src:$H) from step_two ($src:$S2)']"
expect_eq json_label_frame "$(jget "$T/l.json" '[(f["function"], f["line"], f["python"]) for f in [s["label_frame"] for s in j["leaks"]["sites"]]]')" \
	"[('helper', $H, False), ('helper', $H, False), ('own_site', $O, False), ('helper', $H, False), ('helper', $H, False)]"
expect_eq json_label_file_as_recorded "$(jget "$T/l.json" 'all(s["label_frame"]["file"] == s["stack"][0]["file"] for s in j["leaks"]["sites"])')" True
# CSV: a label column
"$REPORT" leaks --format csv "$dump" | python3 -c '
import csv, sys
got = [r["label"] for r in csv.DictReader(sys.stdin)]
sys.exit(0 if got == sys.argv[1:] else "csv labels: %r" % got)' \
	"helper ($src:$H) from load_weights ($src:$W)" "helper ($src:$H) from make_buffer ($src:$B)" "own_site ($src:$O)" \
	"helper ($src:$H) from step_one ($src:$S1)" "helper ($src:$H) from step_two ($src:$S2)"
echo "ok: csv labels"
# a leak with evidence: the site line still comes first, before "why:"
traced lc "$PROGS/leak_classes" >/dev/null
"$REPORT" leaks "$(dump_of lc)" >"$T/lc.txt"
expect_eq site_before_why "$(grep -A1 '^#1 ' "$T/lc.txt" | sed -n 2p | cut -c1-12)" "      site: "
# peak and oom-free reports label the same sites the same way
"$REPORT" peak "$dump" >"$T/p.txt"
grep -q "^      site: helper ($src:$H) from make_buffer ($src:$B)\$" "$T/p.txt" || fail "peak: $(cat "$T/p.txt")"
echo "ok: peak labels"
# JUnit: testcase names are the labels
"$REPORT" leaks --format junit "$dump" >"$T/l.xml"
grep -q "name=\"helper ($src:$H) from load_weights ($src:$W) \[" "$T/l.xml" || fail "junit: $(cat "$T/l.xml")"
grep -q "name=\"own_site ($src:$O) \[" "$T/l.xml" || fail "junit: $(cat "$T/l.xml")"
echo "ok: junit names"
# SARIF: the location is the label frame's file and line, the message ends with the label
"$REPORT" leaks --format sarif "$dump" >"$T/l.sarif"
expect_eq sarif "$(jget "$T/l.sarif" '[(r["message"]["text"].split(") at ", 1)[1], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in j["runs"][0]["results"]]')" \
	"[('helper ($src:$H) from load_weights ($src:$W)', $H), ('helper ($src:$H) from make_buffer ($src:$B)', $H), ('own_site ($src:$O)', $O), ('helper ($src:$H) from step_one ($src:$S1)', $H), ('helper ($src:$H) from step_two ($src:$S2)', $H)]"

# Python: the label is the Python frame, the script's path relative to the process's directory,
# and a helper called from two places names its callers.
command -v python3 >/dev/null || { echo "python3 not found: the Python part is skipped"; exit 0; }
py=tests/e2e/py_leaky.py
pl() { grep -n "$1" "$ROOT/$py" | cut -d: -f1; }
traced py python3 "$ROOT/$py" "$FAKE" pydll twice
pdump=$(dump_of py)
"$REPORT" leaks "$pdump" >"$T/py.txt"
expect_eq py_sites "$(grep '^      site: ' "$T/py.txt")" \
	"      site: leaky ($py:$(pl LEAK-LINE)) from Holder.grab ($py:$(pl GRAB-LINE))
      site: leaky ($py:$(pl LEAK-LINE)) from warm_up ($py:$(pl WARM-LINE))"
grep -q "^      py leaky ($py:$(pl LEAK-LINE))\$" "$T/py.txt" || fail "python frame path not relative: $(cat "$T/py.txt")"
echo "ok: python frames relative"
report "$T/py.json" leaks "$pdump"
expect_eq py_label_file "$(jget "$T/py.json" 'sorted(set(s["label_frame"]["file"] for s in j["leaks"]["sites"]))')" "['$ROOT/$py']"
# The headline names the label frame whatever the view: under --native the interpreter's frames
# (libpython, with line information where it was built from source) are never the site.
"$REPORT" headline --native "$pdump" >"$T/hl.txt"
expect_eq headline_native "$(sed -n 1p "$T/hl.txt" | sed 's/.* at //')" "py_leaky.py:$(pl LEAK-LINE) in leaky"
