# A dump that holds only its header (issue 17): the shim wrote the file header and
# the process record, then the process died before its writer's first round (made
# here by cutting a real dump after its process record, and after its 16-byte file
# header). Its reports are empty, not clean: the text says "nothing recorded" and
# why, one note on stderr for every format, "header only" in the summary and in
# the rank table of several dumps. Like a truncated dump it is no error: the exit
# status is the report's and the gate's over what was read, the note on stderr
# keeps a gate from passing silently.
. tests/e2e/lib.sh
traced ok "$PROGS/basic" >/dev/null
dump=$(dump_of ok)
pid=${dump##*ok.}
pid=${pid%.dump}
# the process record's size: the 32-bit field at offset 20 (the record after the 16-byte file header)
size=$(od -An -tu4 -j20 -N4 "$dump" | tr -d ' ')
head -c $((16 + size)) "$dump" >"$T/hdr.dump"
head -c 16 "$dump" >"$T/bare.dump"
note="holds only its header: the process wrote no events (killed before its first writer round?)"

"$REPORT" leaks "$T/hdr.dump" >"$T/out" 2>"$T/err" || fail "leaks of a header-only dump exited $?"
expect_eq "leaks: text" "$(cat "$T/out")" "cumtrace leaks: nothing recorded in pid $pid ($PROGS/basic)
  note: $T/hdr.dump $note"
expect_eq "leaks: stderr" "$(cat "$T/err")" "cumtrace-report: note: $T/hdr.dump $note"
"$REPORT" leaks "$T/bare.dump" >"$T/out" 2>"$T/err" || fail "leaks of a bare header exited $?"
expect_eq "bare header: text" "$(head -n 1 "$T/out")" "cumtrace leaks: nothing recorded in an unknown process (no process record)"
expect_eq "bare header: stderr" "$(cat "$T/err")" "cumtrace-report: note: $T/bare.dump $note"
"$REPORT" summary "$T/hdr.dump" >"$T/out" 2>/dev/null
grep -q "^  dump: $T/hdr.dump ([0-9]* B, header only)\$" "$T/out" || fail "summary: $(cat "$T/out")"
# every format says it on stderr (JSON: "clean_exit": false)
"$REPORT" peak --format json -o "$T/p.json" "$T/hdr.dump" 2>"$T/err"
expect_eq "json: stderr" "$(cat "$T/err")" "cumtrace-report: note: $T/hdr.dump $note"
grep -q '"clean_exit": false' "$T/p.json" || fail "json: clean_exit is not false"
# several dumps: the rank table and the notes
"$REPORT" leaks "$dump" "$T/hdr.dump" >"$T/out" 2>/dev/null || true
grep -q "^  note: dumps holding only their header (no events: killed before the first writer round?): rank 1\$" "$T/out" ||
	fail "merged: no note: $(cat "$T/out")"
grep -q "^      1\* .* header only\$" "$T/out" || fail "merged: no 'header only' in the table: $(cat "$T/out")"
# the gate: judged over what was read, never silently: the note is on stderr
set +e
"$REPORT" leaks --fail-on-leak "$T/hdr.dump" >/dev/null 2>"$T/err"
rc=$?
set -e
expect_eq "gate over a header-only dump: exit" "$rc" 0
expect_eq "gate over a header-only dump: stderr" "$(cat "$T/err")" "cumtrace-report: note: $T/hdr.dump $note"
# a whole dump has no such note
"$REPORT" leaks "$dump" >"$T/out" 2>"$T/err" || true
! grep -q "only its header" "$T/out" "$T/err" || fail "a whole dump said header only"
echo "ok: a header-only dump says so (text, stderr, summary, rank table), the gate says it on stderr"
