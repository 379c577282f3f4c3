# cumtrace-report symbolize: a dump symbolized where the binary is, then
# analyzed after the binary is gone, has the same frames; without symbolize
# (the control) they degrade to module+offset. Symbolizing twice gives the
# same bytes, -o leaves the input alone, the mode is kept, a truncated dump is
# copied up to its last complete record, and bad usage exits 2.
. tests/e2e/lib.sh
mkdir "$T/bin"
cp "$PROGS/symbols_cxx" "$T/bin/symbols_cxx"
traced embed "$T/bin/symbols_cxx" >/dev/null
dump=$(dump_of embed)
cp "$dump" "$T/raw.dump"
cp "$dump" "$T/inplace.dump"
chmod 640 "$T/inplace.dump"

# frames of every leak site: function, file, line, inlined, module, offset, ip
frames() {
	jget "$1" "'\n'.join('%s|%s|%s|%s|%s|%s|%s' % (f['function'], f['file'], f['line'], f['inlined'], f['module'], f['offset'], f['ip']) for s in j['leaks']['sites'] for f in s['stack'])"
}
report "$T/before.json" leaks "$T/raw.dump"
frames "$T/before.json" >"$T/before.txt"
grep -q "^ns::Foo<int>::bar(int)|.*symbols_cxx.cc|" "$T/before.txt" || fail "no symbols before removal"

# What symbolize must count: the distinct addresses of the stacks (here all
# of them are leak sites), resolved = with a function or a file.
want=$(jget "$T/before.json" "'%d resolved, %d unresolved' % (lambda a: (sum(1 for v in a.values() if v), sum(1 for v in a.values() if not v)))({(f['module'], f['ip']): bool(f['function'] or f['file']) for s in j['leaks']['sites'] for f in s['stack']})")
"$REPORT" symbolize "$T/raw.dump" -o "$T/sym.dump" >"$T/sym.out" 2>"$T/sym.err" || fail "symbolize -o exited $?"
[ ! -s "$T/sym.err" ] || fail "symbolize wrote to stderr: $(cat "$T/sym.err")"
expect_eq summary_line "$(sed 's/ (.*//' "$T/sym.out")" "$T/sym.dump: $(echo "$want" | sed 's/ resolved/ addresses resolved/')"
cmp -s "$dump" "$T/raw.dump" || fail "symbolize -o changed its input"
"$REPORT" symbolize "$T/inplace.dump" >/dev/null || fail "symbolize in place exited $?"
cmp "$T/sym.dump" "$T/inplace.dump" || fail "in place and -o results differ"
expect_eq mode_kept "$(stat -c %a "$T/inplace.dump")" 640
[ -z "$(find "$T" -name '*.symbolize.*')" ] || fail "temporary files left behind"

# A truncated dump: copied up to its last complete record, then the symbols.
size=$(stat -c %s "$T/raw.dump")
head -c $((size - 5)) "$T/raw.dump" >"$T/trunc.dump"
report "$T/trunc.json" summary "$T/trunc.dump" 2>/dev/null
cut=$(jget "$T/trunc.json" 'j["dumps"][0]["truncated_offset"]')
"$REPORT" symbolize "$T/trunc.dump" -o "$T/trunc.sym" >/dev/null 2>"$T/trunc.err" || fail "symbolize of a truncated dump exited $?"
expect_eq trunc_warning "$(cat "$T/trunc.err")" \
	"cumtrace-report: warning: $T/trunc.dump: truncated at offset $cut (partial record); copied the records before it"
cmp -n "$cut" "$T/raw.dump" "$T/trunc.sym" || fail "the records before the cut were not copied"
report "$T/trunc2.json" leaks "$T/trunc.sym"
expect_eq trunc_now_complete "$(jget "$T/trunc2.json" 'j["dumps"][0]["truncated"]')" False
expect_eq trunc_symbols "$(jget "$T/trunc2.json" 'j["dumps"][0]["embedded_symbols"]')" \
	"$(echo "$want" | cut -d' ' -f1)"

# A full disk (a one-page tmpfs in a private mount namespace, where one is
# allowed): exit 2 with one line, the dump unchanged, no temporary file left.
mkdir "$T/small"
if unshare -m sh -c "mount -t tmpfs -o size=4k tmpfs '$T/small'" 2>/dev/null; then
	set +e
	unshare -m sh -c "mount -t tmpfs -o size=4k tmpfs '$T/small' && cp '$T/raw.dump' '$T/small/d.dump' &&
		{ '$REPORT' symbolize '$T/small/d.dump' >'$T/full.out' 2>'$T/full.err'; echo \$? >'$T/full.rc'; } &&
		cmp -s '$T/raw.dump' '$T/small/d.dump' && ls -A '$T/small' >'$T/full.ls'"
	set -e
	expect_eq full_disk_exit "$(cat "$T/full.rc")" 2
	expect_eq full_disk_message "$(cat "$T/full.err")" \
		"cumtrace-report: $(cd "$T" && pwd -P)/small/d.dump: write error: No space left on device"
	expect_eq full_disk_files "$(cat "$T/full.ls")" d.dump
else
	echo "note: no tmpfs can be mounted here: the full-disk case was not run"
fi

# The binary is gone: the symbolized dump still has every frame.
rm -r "$T/bin"
report "$T/after.json" leaks "$T/sym.dump"
frames "$T/after.json" >"$T/after.txt"
cmp "$T/before.txt" "$T/after.txt" || { diff "$T/before.txt" "$T/after.txt"; fail "frames differ after removal"; }
echo "ok: $(wc -l <"$T/after.txt") frames identical after the binary was removed"
expect_eq embedded_symbols "$(jget "$T/after.json" 'j["dumps"][0]["embedded_symbols"]')" \
	"$(echo "$want" | cut -d' ' -f1)"
expect_eq inline_after "$(grep -c '^leak_inline|.*|True|' "$T/after.txt")" 1
# --no-symbols still means module+offset
report "$T/nosym.json" leaks --no-symbols "$T/sym.dump"
expect_eq no_symbols "$(jget "$T/nosym.json" 'sum(1 for s in j["leaks"]["sites"] for f in s["stack"] if f["function"])')" 0

# Control: the unsymbolized dump has lost its program frames.
report "$T/control.json" leaks "$T/raw.dump"
expect_eq control_top "$(jget "$T/control.json" '[(s["stack"][0]["function"], s["stack"][0]["file"]) for s in j["leaks"]["sites"]]')" \
	"[(None, None), (None, None)]"
expect_eq control_frames "$(jget "$T/control.json" 'sum(1 for s in j["leaks"]["sites"] for f in s["stack"] if f["module"].endswith("/bin/symbols_cxx") and f["function"])')" 0

# Again, now without the binary: the embedded symbols are kept, same bytes.
"$REPORT" symbolize "$T/sym.dump" -o "$T/sym2.dump" >/dev/null || fail "second symbolize exited $?"
cmp "$T/sym.dump" "$T/sym2.dump" || fail "symbolize twice differs"
echo "ok: symbolize twice gives the same bytes"

# Usage errors and unreadable dumps: exit 2, one line, nothing written.
usage() {
	set +e
	"$REPORT" symbolize "$@" >"$T/u.out" 2>"$T/u.err"
	rc=$?
	set -e
	expect_eq "exit of symbolize $*" "$rc" 2
	expect_eq "stderr lines of symbolize $*" "$(wc -l <"$T/u.err")" 1
	[ ! -s "$T/u.out" ] || fail "symbolize $* wrote to stdout"
}
usage
usage "$T/raw.dump" "$T/sym.dump"
usage --bogus "$T/raw.dump"
usage "$T/raw.dump" -o
usage "$T/raw.dump" -o ""
usage "$T/missing.dump"
printf 'CUMTRACE\001\000\020\000\000\000\000\000\003\000\000\000\377\377\377\377' >"$T/corrupt.dump"
cp "$T/corrupt.dump" "$T/corrupt.orig"
usage "$T/corrupt.dump"
cmp "$T/corrupt.dump" "$T/corrupt.orig" || fail "a corrupt dump was rewritten"
[ -z "$(find "$T" -name '*.symbolize.*')" ] || fail "temporary files left behind"
grep -q "corrupt record at offset 16" "$T/u.err" || fail "no offset in: $(cat "$T/u.err")"
echo "ok: bad usage and corrupt dumps exit 2 with one line"
