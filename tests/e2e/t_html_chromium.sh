# The html page in a browser (Debian's chromium, headless): it renders with
# no console message at all (no Content-Security-Policy refusal: the style
# sheet's hash is right and nothing else is inline), the DOM after parsing has
# every chart and series the page was written with, and a screenshot comes
# out. A page with an inline style the policy does not allow is refused, so
# the console check can fail. At a 1400x900 window the lead block's largest
# leak site and peak site and their bytes lie within 1400x900 (on screen
# without scrolling), and the mark names laid out by the browser do not
# overlap (a probe script, allowed by its hash, measures them); a page whose
# lead is pushed down fails the probe. Without chromium: skipped, but under
# CI (CI=true) a failure: scripts/install-deps.sh installs it.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	[ "${CI:-}" = true ] && fail "chromium not found under CI (scripts/install-deps.sh installs it)"
	echo "chromium not found (apt-get install chromium; scripts/install-deps.sh)"
	exit 77
fi
traced demo "$PROGS/demo_train" >/dev/null
traced basic "$PROGS/basic" >/dev/null
"$REPORT" html -o "$T/r.html" "$(dump_of demo)" "$(dump_of basic)" || fail "html exited $?"
python3 "$ROOT/tests/e2e/check_html.py" "$T/r.html" "$T/r.sum" || fail "check_html.py rejected the page"

# chrome LOG ARGS...: headless chromium, its log (console messages included) to LOG
chrome() {
	log=$1
	shift
	timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
		--user-data-dir="$T/profile" --enable-logging=stderr --v=0 "$@" 2>"$log"
}
console() { # LOG: the console messages and CSP reports of a run
	grep -E 'CONSOLE|Content Security Policy|Refused' "$1" || true
}

chrome "$T/shot.log" --screenshot="$T/shot.png" --window-size=1280,2000 "file://$T/r.html" >/dev/null ||
	fail "chromium --screenshot exited $?: $(tail -n 3 "$T/shot.log")"
expect_eq screenshot "$(python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read()
print(d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR", struct.unpack(">II", d[16:24]), len(d) > 20000)' "$T/shot.png")" \
	"True (1280, 2000) True"
[ -z "$(console "$T/shot.log")" ] || fail "console messages: $(console "$T/shot.log")"

chrome "$T/dom.log" --dump-dom "file://$T/r.html" >"$T/dom.html" || fail "chromium --dump-dom exited $?"
[ -z "$(console "$T/dom.log")" ] || fail "console messages: $(console "$T/dom.log")"
# The DOM the browser built has what the page was written with: sections, charts, series, stacks.
count() { python3 -c 'import re, sys; print(len(re.findall(sys.argv[2], open(sys.argv[1]).read())))' "$@"; }
for what in '<section class="dump"' '<svg class="chart' '<path class="s' '<details' '<tr class="leak"'; do
	expect_eq "dom: $what" "$(count "$T/dom.html" "$what")" "$(count "$T/r.html" "$what")"
done
expect_eq dom_series "$(count "$T/dom.html" '<path class="s')" "$(jget "$T/r.sum" 'sum(len(c["series"]) for d in j["dumps"] for c in d["charts"])')"

# An inline style the policy does not allow: refused, and said so on the console.
sed 's|</body>|<p style="color:red">x</p></body>|' "$T/r.html" >"$T/bad.html"
chrome "$T/bad.log" --dump-dom "file://$T/bad.html" >/dev/null || fail "chromium exited $?"
console "$T/bad.log" | grep -q 'Content Security Policy' || fail "no CSP refusal for an inline style"
echo "ok: an inline style is refused: $(console "$T/bad.log" | head -n 1 | cut -c1-160)"

# probe PAGE NAME: the page with a script (allowed by its hash) that writes the boxes of the lead's
# sites and bytes and of the charts' mark names into the DOM, opened at 1400x900; then checked.
probe() {
	python3 - "$1" "$T/$2.html" <<'PY'
import base64, hashlib, sys
js = r"""(function () {
  function box(e) { if (!e) return null; var b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }
  var o = {vw: window.innerWidth, lead: {}, names: []};
  ['leak', 'peak'].forEach(function (w) {
    var p = document.querySelector('.lead-' + w), s = p ? p.querySelectorAll('strong') : [];
    o.lead[w] = {site: box(p && p.querySelector('.site')), bytes: box(s.length ? s[s.length - 1] : null)};
  });
  document.querySelectorAll('svg.chart').forEach(function (svg, i) {
    svg.querySelectorAll('text.mark').forEach(function (t) {
      var b = t.getBoundingClientRect();
      o.names.push([i, b.left, b.right, t.textContent]);
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(o);
  document.body.appendChild(pre);
})();"""
h = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
t = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(t.replace("default-src 'none';", "default-src 'none'; script-src 'sha256-%s';" % h, 1)
                             .replace("</body>", "<script>%s</script></body>" % js, 1))
PY
	chrome "$T/$2.log" --window-size=1400,900 --dump-dom "file://$T/$2.html" >"$T/$2.dom" || fail "chromium --dump-dom exited $?"
	[ -z "$(console "$T/$2.log")" ] || fail "console messages: $(console "$T/$2.log")"
	python3 - "$T/$2.dom" <<'PY'
import html, json, re, sys
m = re.search(r'<pre id="probe">(.*?)</pre>', open(sys.argv[1]).read(), re.S)
assert m, "the probe wrote nothing"
o = json.loads(html.unescape(m.group(1)))
assert o["vw"] == 1400, o["vw"]
for w in ("leak", "peak"):
    for k in ("site", "bytes"):
        b = o["lead"][w][k]
        assert b and b[0] >= 0 and b[1] >= 0 and b[2] <= 1400 and b[3] <= 900, \
            "the lead's %s %s is not within 1400x900: %r" % (w, k, b)
for i in sorted(set(n[0] for n in o["names"])):
    xs = sorted(n[1:] for n in o["names"] if n[0] == i)
    for a, b in zip(xs, xs[1:]):
        assert a[1] <= b[0] + 0.01, "chart %d: the mark names %r and %r overlap" % (i, a, b)
print("lead at %s; %d mark names apart" % ([o["lead"][w]["site"][3] for w in ("leak", "peak")], len(o["names"])))
PY
}
out=$(probe "$T/r.html" probe) || fail "probe of the page: $out"
echo "ok: on screen at 1400x900: $out"
# html-marks: 50 steps, their names thinned: none overlaps in the browser either.
out=$(probe "$ROOT/tests/golden/html-marks.html" probem) || fail "probe of html-marks.html: $out"
echo "ok: html-marks: $out"
# The probe can fail: the lead pushed below the fold.
python3 -c 'import sys; t = open(sys.argv[1]).read(); open(sys.argv[2], "w").write(t.replace("<main>", "<main>" + "<p>x</p>" * 60, 1))' \
	"$T/r.html" "$T/low.html"
if out=$(probe "$T/low.html" probelow 2>&1); then fail "the probe accepted a lead below the fold: $out"; fi
echo "ok: a lead below the fold is refused: $(echo "$out" | tail -n 1)"
