# The html command on traced programs: a self-contained page that passes
# tests/e2e/check_html.py (well-formed, nothing loaded from outside, the
# Content-Security-Policy hashes, charts whose lines reach their maxima and
# their peak dots, mark ticks and names that do not run into each other, the
# lead block), whose figures equal the JSON reports'; the lead names the
# leaks and peak text reports' #1; the time axes start at the first record;
# the stream-ordered pools' reserved bytes drawn; each range counted once;
# the dump's strings escaped; the options honoured; the same bytes each run;
# and the checker rejects broken pages (so that it can fail).
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
CHECK=$ROOT/tests/e2e/check_html.py
traced basic "$PROGS/basic" '</title><script>alert("x")</script>' "a&b 'q'" >/dev/null
traced lc "$PROGS/leak_classes" >/dev/null
traced demo "$PROGS/demo_train" >/dev/null
traced frag "$PROGS/frag" >/dev/null
traced st "$PROGS/streams" >/dev/null
basic=$(dump_of basic)
lc=$(dump_of lc)
demo=$(dump_of demo)
frag=$(dump_of frag)
st=$(dump_of st)

# html OUT SUMMARY ARGS...: write the page and check it
html() {
	out=$1 sum=$2
	shift 2
	"$REPORT" html -o "$out" "$@" || fail "html $* exited $?"
	python3 "$CHECK" "$out" "$sum" || fail "check_html.py rejected $out"
}
D='j["dumps"][0]'

# Leak classes: the rows are the leaks report's sites, each labelled with its innermost frame.
html "$T/lc.html" "$T/lc.sum" "$lc"
report "$T/lc.json" leaks "$lc"
expect_eq lc_leaks "$(jget "$T/lc.sum" "[(l['class'], l['bytes'], l['count']) for l in $D['leaks']]")" \
	"$(jget "$T/lc.json" '[(s["class"], s["bytes"], s["count"]) for s in j["leaks"]["sites"]]')"
# The site's label is its innermost frame of the program's own code (in the stack shown), not the allocator's.
expect_eq lc_sites "$(jget "$T/lc.sum" "[l['site'].split(' (')[0] for l in $D['leaks']]")" \
	"['main', 'main', 'user_leak', 'main', 'reset_device_1']"
python3 - "$T/lc.sum" "$T/lc.json" <<'PY' || fail "a site label is not a frame of its stack"
import json, sys
h, r = (json.load(open(p)) for p in sys.argv[1:])
for l, s in zip(h["dumps"][0]["leaks"], r["leaks"]["sites"]):
    fn, line = l["site"].split(" (")[0], int(l["site"].rsplit(":", 1)[1].rstrip(")"))
    assert (fn, line) in [(f["function"], f["line"]) for f in s["stack"]] and l["frames"] == len(s["stack"]), (l, s["stack"])
PY
# The peak and the sites live then; each timeline series reaches its (kind, device) peak.
expect_eq lc_peak "$(jget "$T/lc.sum" "$D['peak_bytes']")" "$(jget "$T/lc.json" 'j["peak"]["bytes"]')"
expect_eq lc_peak_sites "$(jget "$T/lc.sum" "[s['bytes'] for s in $D['peak_sites']]")" \
	"$(jget "$T/lc.json" '[s["bytes"] for s in j["peak"]["sites"]]')"
expect_eq lc_timeline "$(jget "$T/lc.sum" "sorted((s['label'].split(':')[0], s['max']) for s in $D['charts'][0]['series'])")" \
	"$(jget "$T/lc.json" 'sorted(("%s dev %s" % (k, d), s["peak_bytes"]) for k, kv in j["summary"]["kinds"].items() for d, s in kv["devices"].items())')"
expect_eq lc_sections "$(jget "$T/lc.sum" "$D['sections']")" \
	"['d1-timeline', 'd1-peak', 'd1-leaks', 'd1-frag', 'd1-streams']"

# basic: the out-of-memory row and its marker; argv with markup shown as text, no script.
html "$T/basic.html" "$T/basic.sum" "$basic"
expect_eq basic_oom "$(jget "$T/basic.sum" "[(o['bytes'], o['site'].split(' (')[0]) for o in $D['ooms']]")" "[(68719476736, 'main')]"
expect_eq basic_oom_marker "$(jget "$T/basic.sum" "$D['charts'][0]['markers']")" 1
expect_eq argv_text "$(jget "$T/basic.sum" "$D['title'].endswith('basic </title><script>alert(\"x\")</script> a&b \'q\'')")" True
expect_eq no_script "$(jget "$T/basic.sum" 'j["scripts"]')" 0
grep -q '&lt;/title&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; a&amp;b &#39;q&#39;' "$T/basic.html" ||
	fail "argv is not escaped as expected"

# demo: streams, fragmentation per device, phases; the same bytes on a second run.
html "$T/demo.html" "$T/demo.sum" "$demo"
report "$T/demo.json" streams "$demo"
expect_eq demo_streams "$(jget "$T/demo.sum" "len($D['streams'])")" "$(jget "$T/demo.json" 'len(j["streams"]["streams"])')"
report "$T/demo.f.json" frag "$demo"
expect_eq demo_frag_charts "$(jget "$T/demo.sum" "len([c for c in $D['charts'] if c['kind'] == ['frag']])")" \
	"$(jget "$T/demo.f.json" 'len(j["frag"]["devices"])')"
# The dots at the device's peak are the frag report's state at that peak.
FIELDS="('bytes', 'span_bytes', 'free_bytes', 'largest_hole_bytes', 'pool_used_bytes', 'pool_reserved_bytes', 'vmm_mapped_bytes', 'vmm_physical_bytes')"
expect_eq demo_frag_dots "$(jget "$T/demo.sum" "sorted(set(v for v in [c for c in $D['charts'] if c['kind'] == ['frag']][0]['dots'] if v))")" \
	"$(jget "$T/demo.f.json" "sorted(set(v for k, v in j['frag']['devices'][0]['at_peak'].items() if k in $FIELDS and v))")"
expect_eq demo_leak "$(jget "$T/demo.sum" "[(l['class'], l['count'], l['site'].split(' (')[0]) for l in $D['leaks']]")" \
	"[('leaked', 4, 'save_metrics')]"
# The lead (first thing under the title): the leaks and peak text reports' #1, bytes and site.
"$REPORT" leaks "$demo" >"$T/demo.leaks.txt" || fail "leaks exited $?"
"$REPORT" peak "$demo" >"$T/demo.peak.txt" || fail "peak exited $?"
python3 "$CHECK" "$T/demo.html" /dev/null --leaks-text "$T/demo.leaks.txt" --peak-text "$T/demo.peak.txt" ||
	fail "the lead is not the text reports' #1"
expect_eq demo_lead "$(jget "$T/demo.sum" "($D['lead']['leak']['shown'], $D['lead']['leak']['site'].split(' (')[0], $D['lead']['peak']['shown'], $D['lead']['peak']['site'].split(' (')[0])")" \
	"('8.0 MiB', 'save_metrics', '128.0 MiB', 'alloc_weights')"
# The time axes start at the first record (event or mark), not at the process start.
first=$(python3 "$ROOT/bin/ctdump.py" "$demo" | awk '$2 == "event" || $2 == "mark" { sub("ts=", "", $3); print $3 }' | sort -n | head -n 1)
report "$T/demo.s.json" summary "$demo"
expect_eq demo_t0 "$(jget "$T/demo.sum" "sorted(set(int(c['t0']) for c in $D['charts']))")" \
	"[$((first - $(jget "$T/demo.s.json" 'j["dumps"][0]["start_monotonic_ns"]')))]"
# The bytes the stream-ordered pool holds (cudaMallocAsync): a series of the timeline whose most
# is the frag report's most reserved (samples, peak, end), though its blocks are freed each step.
expect_eq demo_pool "$(jget "$T/demo.sum" "[s['max'] for s in $D['charts'][0]['series'] if s['pool']]")" \
	"$(jget "$T/demo.f.json" "[max([s['state']['pool_reserved_bytes'] for s in j['frag']['devices'][0]['samples']] + [j['frag']['devices'][0][k]['pool_reserved_bytes'] for k in ('at_peak', 'at_end')])]")"
# Its 40 step marks: ticks 3 units apart at least, names fewer (each clear of the next: check_html.py).
expect_eq demo_marks "$(jget "$T/demo.sum" "($D['marks']['entries'], 0 < $D['marks']['named'] < $D['marks']['ticks'] <= 40)")" "(40, True)"
"$REPORT" html "$demo" >"$T/demo2.html" || fail "html to standard output"
cmp -s "$T/demo.html" "$T/demo2.html" || fail "two runs wrote different pages"
echo "ok: deterministic"

# Growing sites: the rows are the leaks report's growth sites.
traced grow "$PROGS/growth" mark >/dev/null
html "$T/grow.html" "$T/grow.sum" "$(dump_of grow)"
report "$T/grow.json" leaks "$(dump_of grow)"
expect_eq growth "$(jget "$T/grow.sum" "[(g['bytes'], g['site'].split(' (')[0]) for g in $D['growth']]")" \
	"$(jget "$T/grow.json" '[(s["growth_bytes"], s["stack"][0]["function"]) for s in j["leaks"]["growth"]["sites"]]')"
expect_eq growth_rows "$(jget "$T/grow.sum" "len($D['growth'])")" 1

# Four dumps: an overview, then one section each, in order.
html "$T/four.html" "$T/four.sum" "$basic" "$lc" "$frag" "$st"
report "$T/four.json" summary "$basic" "$lc" "$frag" "$st"
expect_eq four_pids "$(jget "$T/four.sum" '[d["pid"] for d in j["dumps"]]')" "$(jget "$T/four.json" '[d["pid"] for d in j["dumps"]]')"
expect_eq four_peaks "$(jget "$T/four.sum" '[d["peak_bytes"] for d in j["dumps"]]')" \
	"$(jget "$T/four.json" '[d["peak_bytes"] for d in j["dumps"]]')"
grep -q '<section class="dump" id="overview">' "$T/four.html" || fail "no overview"

# Options: --top 1 cuts every list and says how much; --buckets N is N steps; --no-symbols.
html "$T/top.html" "$T/top.sum" --top 1 --buckets 7 "$lc"
expect_eq top1 "$(jget "$T/top.sum" "(len($D['leaks']), len($D['peak_sites']))")" "(1, 1)"
expect_eq top1_more "$(jget "$T/top.sum" "$D['more_rows'][0]")" "... and 4 more sites: 10.0 MiB (--top 0 shows all)"
expect_eq buckets "$(jget "$T/top.sum" "set(s['points'] for s in $D['charts'][0]['series'])")" "{14}"
html "$T/nosym.html" "$T/nosym.sum" --no-symbols "$lc"
expect_eq nosym "$(jget "$T/nosym.sum" "all('+0x' in l['site'] and '(' not in l['site'] for l in $D['leaks'])")" True

# Python frames (<module> is markup to escape); --native shows the interpreter's frames instead.
if python3 -c 'import ctypes' 2>/dev/null; then
	traced py python3 "$ROOT/tests/e2e/py_leaky.py" "$FAKE"
	py=$(dump_of py)
	html "$T/py.html" "$T/py.sum" "$py"
	expect_eq py_site "$(jget "$T/py.sum" "$D['leaks'][0]['site'].split(' (')[0]")" leaky
	grep -q '<code>&lt;module&gt;</code>' "$T/py.html" || fail "no escaped <module> frame"
	html "$T/pyn.html" "$T/pyn.sum" --native "$py"
	# the site's label is the user's frame in every view, as in the text reports (render.h:
	# ct_site_label); the stack under it is native only
	expect_eq native_site "$(jget "$T/pyn.sum" "$D['leaks'][0]['site'].split(' (')[0]")" leaky
	! grep -q '&lt;module&gt;' "$T/pyn.html" || fail "--native still shows Python frames"
fi

# The golden pages (tests/golden/html-*.html, of the golden cases html-*) pass too.
for g in "$ROOT"/tests/golden/html-*.html; do
	python3 "$CHECK" "$g" "$T/g.sum" || fail "check_html.py rejected $g"
done
echo "ok: golden pages"
# html-marks: 50 steps (and a sync mark beside each, its tick thinned away), "train" pushed twice
# and "epoch 1" started and marked at once: each counted once; the axes start at the first record
# (40 ms after the process start); the pool keeps 4 MiB.
python3 "$CHECK" "$ROOT/tests/golden/html-marks.html" "$T/gm.sum" || fail "check_html.py rejected html-marks.html"
expect_eq golden_marks "$(jget "$T/gm.sum" "($D['marks'], [int(c['t0']) for c in $D['charts']])")" \
	"({'entries': 102, 'named': 17, 'ticks': 52}, [40000000, 40000000])"
expect_eq golden_marks_fact "$(jget "$T/gm.sum" "$D['facts']['marks']")" \
	"107 (3 ranges, 51 instants); 102 marks and ranges counted once each (2 recorded twice)"
expect_eq golden_pool "$(jget "$T/gm.sum" "[s['max'] for s in $D['charts'][0]['series'] if s['pool']]")" "[4194304]"

# Usage errors
"$REPORT" html --format json "$lc" 2>"$T/err" && fail "--format json accepted"
grep -q "html: no json output" "$T/err" || fail "unexpected error: $(cat "$T/err")"
echo "ok: usage errors"

# The checker rejects broken pages, and accepts a script whose hash the policy carries.
python3 - "$T/lc.html" "$T" "$ROOT/tests/golden/html-marks.html" <<'PY'
import base64, hashlib, re, sys
t, out = open(sys.argv[1]).read(), sys.argv[2]
def h(s):
    return base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()
bad = {
    "an unclosed cell": t.replace("</td>", "", 1),
    "an external image": t.replace("<main>", '<main><img src="https://example.com/x.png" alt="">', 1),
    "a changed style sheet": t.replace("body{", "body{color:red;", 1),
    "a script without its hash": t.replace("</body>", "<script>alert(1)</script></body>", 1),
    "a script with another hash": t.replace("default-src 'none';", "default-src 'none'; script-src 'sha256-%s';" % h("x"), 1)
                                   .replace("</body>", "<script>alert(1)</script></body>", 1),
    "a series drawn below its maximum": re.sub(r'data-max="(\d+)"', lambda m: 'data-max="%d"' % (2 * int(m.group(1)) + 65536), t, 1),
    "a div inside a p": t.replace('<p class="muted">', '<p class="muted"><div>x</div>', 1),
    "a link to no element": t.replace('href="#d1-peak"', 'href="#nowhere"', 1),
    "an event handler": t.replace("<main>", '<main onclick="x()">', 1),
    "a policy that allows inline scripts": t.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1),
    "no lead block": re.sub(r'<div class="lead".*?</div>\n', "", t, 1, re.S),
    "a lead that names another leak": re.sub(r'(class="lead-leak" id="d1-lead-leak" data-bytes=")\d+', r"\g<1>1", t, 1),
    "a lead that names another peak site": t.replace('<code class="site">', '<code class="site">x', 2).replace('<code class="site">x', '<code class="site">', 1),
    # above the chart: no line has a point there (a shift along x can land on a plateau's next point)
    "a peak dot off its line": re.sub(r'(<circle class="at-peak" cx="[\d.]+" cy=")([\d.]+)', lambda m: m.group(1) + "-7.0", t, 1),
    "a time axis without its start": re.sub(r' data-t0="\d+"', "", t, 1),
}
g = open(sys.argv[3]).read()  # html-marks: ticks and names
ticks = re.findall(r'<line class="mark" x1="([\d.]+)"', g)
bad.update({
    "mark names that run into each other": re.sub(r'(<text class="mark" [^>]*>)step<', r"\g<1>step step step step<", g, 1),
    "mark ticks closer than 3 units": g.replace('<line class="mark" x1="%s" y1="16" x2="%s"' % (ticks[2], ticks[2]),
                                                '<line class="mark" x1="%.1f" y1="16" x2="%s"' % (float(ticks[1]) + 1, ticks[2]), 1),
    "a range drawn twice": re.sub(r'(<g class="marks">\n)(<line class="mark"[^\n]*data-name="train"[^\n]*\n)',
                                  lambda m: m.group(1) + m.group(2) + m.group(2).replace('x1="76.0"', 'x1="79.5"', 1), g, 1),
})
for i, (what, page) in enumerate(bad.items()):
    assert page != t, what
    open("%s/bad%d.html" % (out, i), "w").write(page)
    open("%s/bad%d.what" % (out, i), "w").write(what)
s = "document.title = 'ok';"
open(out + "/good-script.html", "w").write(
    t.replace("default-src 'none';", "default-src 'none'; script-src 'sha256-%s';" % h(s), 1)
     .replace("</body>", "<script>%s</script></body>" % s, 1))
PY
n=0
for f in "$T"/bad*.html; do
	what=$(cat "${f%.html}.what")
	if python3 "$CHECK" "$f" /dev/null 2>"$T/err"; then fail "checker accepted $what"; fi
	echo "ok: rejects $what: $(head -n 1 "$T/err")"
	n=$((n + 1))
done
expect_eq rejected "$n" 18
python3 "$CHECK" "$T/good-script.html" "$T/good.sum" || fail "checker rejected a hashed script"
expect_eq hashed_script "$(jget "$T/good.sum" 'j["scripts"]')" 1

# Every fuzzing seed and regression input that reads: a page that passes the checker (arbitrary bytes escaped).
n=0
for f in tests/fuzz/regress/* tests/fuzz/corpus/*; do
	case $f in *.md) continue ;; esac
	sh tests/fuzz/seed.sh dump "$f" "$T/fz.dump" # the dump part, without the harness's selector
	"$REPORT" html -o "$T/fz.html" "$T/fz.dump" 2>/dev/null || continue
	python3 "$CHECK" "$T/fz.html" /dev/null || fail "check_html.py rejected the page of $f"
	n=$((n + 1))
done
[ "$n" -gt 10 ] || fail "only $n fuzzing inputs read"
echo "ok: $n pages of fuzzing inputs"
