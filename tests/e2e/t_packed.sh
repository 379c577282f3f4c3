# Packed events (CT_REC_EVENTS, issue 15): the same events written packed and
# as CT_REC_EVENT records give the same reports byte for byte (but the dump's
# own size), the packed dump is smaller, bin/ctdump.py decodes them to the same
# records; the shim packs unless CUMTRACE_PACK=0; a corrupt packed run is an
# error naming its offset, a cut one a truncated dump.
. tests/e2e/lib.sh
GENDUMP=$ROOT/$BUILD/gendump
CTDUMP=$ROOT/bin/ctdump.py
outer() { python3 "$ROOT/tests/e2e/ctrec.py" outer "$1" "$2"; }

# gendump, both layouts of one seed under one name (reports name the dump)
mkdir "$T/p" "$T/u"
(cd "$T/p" && "$GENDUMP" -n 60000 -t 3 -l 3000 -s 300 -d 8 -r 7 -P 1 g.dump >/dev/null) || fail "gendump -P 1"
(cd "$T/u" && "$GENDUMP" -n 60000 -t 3 -l 3000 -s 300 -d 8 -r 7 -P 0 g.dump >/dev/null) || fail "gendump -P 0"
psize=$(wc -c <"$T/p/g.dump")
usize=$(wc -c <"$T/u/g.dump")
[ "$psize" -lt "$usize" ] || fail "packed $psize bytes, unpacked $usize"
echo "ok: packed $psize bytes, unpacked $usize"
for cmd in "summary" "summary --format json" "leaks" "leaks --format json" "peak --format json" \
	"timeline --format json" "frag" "streams --format json" "flamegraph" "headline"; do
	f=$(echo "$cmd" | tr ' ' _)
	(cd "$T/p" && "$REPORT" $cmd g.dump >"$T/p/$f" 2>&1) || fail "packed: $cmd exited $?"
	(cd "$T/u" && "$REPORT" $cmd g.dump >"$T/u/$f" 2>&1) || fail "unpacked: $cmd exited $?"
	# the dump's own size is all that may differ
	sed -i -E "s/\b$psize\b/SIZE/g; s/(dump: g\.dump \()[0-9.]+ [KMG]?i?B/\1SIZE/" "$T/p/$f"
	sed -i -E "s/\b$usize\b/SIZE/g; s/(dump: g\.dump \()[0-9.]+ [KMG]?i?B/\1SIZE/" "$T/u/$f"
	cmp -s "$T/p/$f" "$T/u/$f" || fail "$cmd differs: $(diff "$T/p/$f" "$T/u/$f" | head -5)"
done
echo "ok: 10 reports identical"
python3 "$CTDUMP" "$T/p/g.dump" | grep ' event ' | sed 's/^ *[0-9+#]* //' >"$T/p.events"
python3 "$CTDUMP" "$T/u/g.dump" | grep ' event ' | sed 's/^ *[0-9+#]* //' >"$T/u.events"
expect_eq ctdump_events "$(wc -l <"$T/p.events")" 60000
cmp -s "$T/p.events" "$T/u.events" || fail "ctdump.py decodes the packed events differently"

# The shim: packed by default, CT_REC_EVENT records with CUMTRACE_PACK=0
traced on env CUMTRACE_COMPRESS=0 "$PROGS/threads" 2 3000 >/dev/null
traced off env CUMTRACE_COMPRESS=0 CUMTRACE_PACK=0 "$PROGS/threads" 2 3000 >/dev/null
on=$(dump_of on)
off=$(dump_of off)
[ "$(outer 16 "$on")" -gt 0 ] || fail "no CT_REC_EVENTS in a packed dump"
expect_eq packed_event_records "$(outer 2 "$on")" 0
expect_eq unpacked_runs "$(outer 16 "$off")" 0
report "$T/on.json" leaks "$on"
report "$T/off.json" leaks "$off"
facts='(j["allocations"], j["frees"], j["leaks"]["count"], j["leaks"]["bytes"], j["dumps"][0]["events"], j["dumps"][0]["truncated"])'
expect_eq shim_facts "$(jget "$T/on.json" "$facts")" "$(jget "$T/off.json" "$facts")"

# A corrupt run: an error naming the run's offset; a cut one: truncated, what came before kept
(cd "$T" && "$GENDUMP" -n 20000 -t 2 -l 200 -z 0 c.dump >/dev/null) || fail "gendump -z 0"
python3 - "$T/c.dump" "$T" <<'PY' >"$T/offsets" || fail "cannot corrupt the dump"
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
pos, runs = struct.unpack_from("<H", data, 10)[0], []
while pos < len(data):
    if struct.unpack_from("<H", data, pos)[0] == 16:
        runs.append(pos)
    pos += struct.unpack_from("<I", data, pos + 4)[0]
off = runs[0]
size = struct.unpack_from("<I", data, off + 4)[0]
count, nbytes = struct.unpack_from("<II", data, off + 12)
def write(name, buf):
    open("%s/%s.dump" % (sys.argv[2], name), "wb").write(buf)
bad = bytearray(data)
struct.pack_into("<I", bad, off + 12, count + 1)  # one event more than the bytes hold
write("more", bad)
bad = bytearray(data)
struct.pack_into("<I", bad, off + 16, size)  # bytes past the record
write("over", bad)
bad = bytearray(data)
bad[off + 24] = 0x80  # the first event says its record header changed...
bad[off + 25:off + 35] = b"\x01" * 10  # ...to a type, a size that are not an event's
write("rest", bad)
last = runs[-1]
write("cut", data[:last + struct.unpack_from("<I", data, last + 4)[0] // 2])
print(off, count)
PY
read -r off count <"$T/offsets"
for name in more over rest; do
	rc=0
	"$REPORT" summary "$T/$name.dump" >/dev/null 2>"$T/$name.err" || rc=$?
	[ "$rc" -eq 2 ] || fail "$name: cumtrace-report exited $rc, not 2: $(cat "$T/$name.err")"
	grep -q "corrupt record at offset $off: packed event" "$T/$name.err" ||
		fail "$name: cumtrace-report said: $(cat "$T/$name.err")"
	echo "ok: $name: $(cat "$T/$name.err")"
done
"$REPORT" summary --format json -o "$T/cut.json" "$T/cut.dump" || fail "a cut dump exited $?"
expect_eq cut_truncated "$(jget "$T/cut.json" 'j["dumps"][0]["truncated"]')" True
[ "$(jget "$T/cut.json" 'j["dumps"][0]["events"]')" -gt 0 ] || fail "a cut dump lost the events before the cut"
echo "ok: t_packed"
