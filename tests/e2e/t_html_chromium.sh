# The html page in a browser (Debian's chromium, headless): it renders with
# no console message at all (no Content-Security-Policy refusal: the style
# sheet's hash is right and nothing else is inline), the DOM after parsing has
# every chart and series the page was written with, and a screenshot comes
# out. A page with an inline style the policy does not allow is refused, so
# the console check can fail. Without chromium: skipped, but under CI
# (CI=true) a failure: scripts/install-deps.sh installs it.
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
