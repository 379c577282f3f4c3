#!/bin/sh
# Record types come from one table (format.h's CT_REC_LIST): a record of every
# type cut shorter than its fixed part is named by that table's name in the
# reader's error and in bin/ctdump.py's, and both give the same message.
. tests/e2e/lib.sh
CTDUMP=$ROOT/bin/ctdump.py
python3 - "$ROOT/include/cumtrace/format.h" "$T" <<'PY' >"$T/types" || fail "cannot write the dumps"
import re, struct, sys
header, out = sys.argv[1:3]
rows = open(header).read().split("#define CT_REC_LIST(X)")[1].split("enum ct_rec_type")[0]
for _NAME, num, name, _struct, size, _ticks in re.findall(
        r"X\((\w+), (\d+), (\w+), (\w+), (\d+), ([01])\)", rows):
    if int(size) <= 8:
        continue  # a bare record header is all there is to a pad
    with open("%s/short-%s.dump" % (out, name), "wb") as f:
        f.write(b"CUMTRACE" + struct.pack("<HHI", 1, 16, 0) + struct.pack("<HHI", int(num), 0, 8))
    print(name, size)
PY
[ "$(wc -l <"$T/types")" -ge 13 ] || fail "format.h lists $(wc -l <"$T/types") record types with a fixed part"
while read -r name size; do
	want="corrupt record at offset 16: $name record of 8 bytes is shorter than its fixed part ($size bytes)"
	rc=0
	"$REPORT" summary "$T/short-$name.dump" >/dev/null 2>"$T/report.err" || rc=$?
	[ "$rc" -eq 2 ] || fail "$name: cumtrace-report exited $rc, not 2"
	grep -qF "$want" "$T/report.err" || fail "$name: cumtrace-report said: $(cat "$T/report.err")"
	python3 "$CTDUMP" "$T/short-$name.dump" >/dev/null 2>"$T/ctdump.err"
	[ "$(cat "$T/ctdump.err")" = "ctdump: $want" ] || fail "$name: ctdump.py said: $(cat "$T/ctdump.err")"
	echo "ok $name"
done <"$T/types"
