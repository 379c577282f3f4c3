# C++ symbols: demangled names and inline frames of a g++ -O2 -g program
# (tests/e2e/progs/symbols_cxx.cc), in JSON, text and CSV.
. tests/e2e/lib.sh
src=tests/e2e/progs/symbols_cxx.cc
line_of() { grep -n "// $1\$" "$src" | cut -d: -f1; }
l_template=$(line_of SITE_TEMPLATE)
l_inline=$(line_of SITE_INLINE)
l_caller=$(line_of SITE_CALLER)
traced cxx "$PROGS/symbols_cxx" >/dev/null
dump=$(dump_of cxx)
report "$T/leaks.json" leaks "$dump"
# frame I of the site that leaked BYTES: "function|file name|line|inlined"
frame() {
	jget "$T/leaks.json" "[('%s|%s|%d|%s' % (f['function'], (f['file'] or '').split('/')[-1], f['line'], f['inlined'])) for s in j['leaks']['sites'] if s['bytes'] == $1 for f in [s['stack'][$2]]][0]"
}
# ns::Foo<int>::bar(int): 1024 * 4 bytes
expect_eq template_frame "$(frame 4096 0)" "ns::Foo<int>::bar(int)|symbols_cxx.cc|$l_template|False"
expect_eq template_caller "$(frame 4096 1)" "main|symbols_cxx.cc|$(grep -n 'foo.bar(1024)' "$src" | cut -d: -f1)|False"
# leak_inline, inlined into inline_caller(unsigned long): 2047 + 1 bytes
expect_eq inline_frame "$(frame 2048 0)" "leak_inline|symbols_cxx.cc|$l_inline|True"
expect_eq inline_caller "$(frame 2048 1)" "inline_caller(unsigned long)|symbols_cxx.cc|$l_caller|False"
expect_eq inline_main "$(frame 2048 2)" "main|symbols_cxx.cc|$(grep -n 'inline_caller(2047)' "$src" | cut -d: -f1)|False"
# the inlined frame and its caller are one machine address
expect_eq same_ip "$(jget "$T/leaks.json" "[s['stack'][0]['ip'] == s['stack'][1]['ip'] for s in j['leaks']['sites'] if s['bytes'] == 2048][0]")" True

"$REPORT" leaks "$dump" >"$T/leaks.txt"
grep -qF "at leak_inline (tests/e2e/progs/symbols_cxx.cc:$l_inline)  in symbols_cxx  (inlined)" "$T/leaks.txt" ||
	fail "text report lacks the inlined frame: $(cat "$T/leaks.txt")"
grep -qxF "      at inline_caller (tests/e2e/progs/symbols_cxx.cc:$l_caller)  in symbols_cxx" "$T/leaks.txt" ||
	fail "text report lacks the caller frame (not marked inlined): $(cat "$T/leaks.txt")"
# text shortens C++ names (parameter lists dropped); --full-stacks and JSON keep them whole
"$REPORT" leaks --full-stacks "$dump" >"$T/full.txt"
grep -qxF "      at inline_caller(unsigned long) (tests/e2e/progs/symbols_cxx.cc:$l_caller)  in symbols_cxx" "$T/full.txt" ||
	fail "--full-stacks lacks the full name: $(cat "$T/full.txt")"
echo "ok: text report shows the inlined frame and its caller"
"$REPORT" leaks --format csv "$dump" >"$T/leaks.csv"
grep -qF "leak_inline (tests/e2e/progs/symbols_cxx.cc:$l_inline) in symbols_cxx [inlined];inline_caller(unsigned long) (tests/e2e/progs/symbols_cxx.cc:$l_caller) in symbols_cxx;" "$T/leaks.csv" ||
	fail "CSV lacks the inline frames: $(cat "$T/leaks.csv")"
echo "ok: CSV shows the inlined frame and its caller"
