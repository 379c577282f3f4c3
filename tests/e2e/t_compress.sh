# Compressed dumps (CT_REC_ZSTD, CUMTRACE_COMPRESS): the same report as an
# uncompressed dump of the same run; compressed runs only where libzstd.so.1
# loads; bin/ctdump.py reads them too.
. tests/e2e/lib.sh
zstd_records() { python3 "$ROOT/tests/e2e/ctrec.py" outer 9 "$1"; }
setting() { tr '\0' '\n' <"$1" | sed -n "s/^setting.$2=//p"; }
# facts JSON: what must not depend on compression (nor on the threads' interleaving)
facts() {
	jget "$1" '(j["allocations"], j["frees"], j["failed_calls"], j["leaks"]["count"], j["leaks"]["bytes"], sorted((s["api"], s["count"], s["bytes"]) for s in j["leaks"]["sites"]), j["dumps"][0]["events"], j["dumps"][0]["clean_exit"], j["dumps"][0]["truncated"])'
}

# Events as 80-byte records (CUMTRACE_PACK=0) in both: what zstd makes of them is measured
# below; packed events (the default) are t_packed's, and every other test's dumps.
traced on env CUMTRACE_PACK=0 "$PROGS/threads" 4 20000 >"$T/on.txt"
traced off env CUMTRACE_COMPRESS=0 CUMTRACE_PACK=0 "$PROGS/threads" 4 20000 >"$T/off.txt"
on=$(dump_of on)
off=$(dump_of off)
expect_eq on_setting "$(setting "$on" compress)" zstd
expect_eq off_setting "$(setting "$off" compress)" off
[ "$(zstd_records "$on")" -gt 0 ] || fail "no CT_REC_ZSTD in a compressed dump"
expect_eq off_zstd_records "$(zstd_records "$off")" 0
report "$T/on.json" leaks "$on"
report "$T/off.json" leaks "$off"
want=$(awk '$1 == "expect" && $2 == "allocations" { print $3 }' "$T/on.txt")
expect_eq on_allocations "$(jget "$T/on.json" 'j["allocations"]')" "$want"
expect_eq same_report "$(facts "$T/on.json")" "$(facts "$T/off.json")"
# 160,004 events of 80 bytes: the compressed dump is much smaller
on_size=$(wc -c <"$on")
off_size=$(wc -c <"$off")
[ $((on_size * 4)) -lt "$off_size" ] || fail "compressed $on_size bytes, uncompressed $off_size"
echo "ok: $on_size bytes compressed, $off_size uncompressed"

# ctdump.py expands the compressed runs: the same records as the uncompressed dump
expect_eq ctdump_events "$(python3 "$ROOT/bin/ctdump.py" --stats "$on" | awk '$1 == "event" { print $2 }')" \
	"$(jget "$T/on.json" 'j["dumps"][0]["events"]')"

# Without a usable libzstd.so.1 (here one that lacks the functions), the dump
# is written as it is, silently, and the program is unchanged.
mkdir "$T/nozstd"
echo 'int ct_not_zstd;' >"$T/nozstd/empty.c"
${CC:-cc} -shared -fPIC -o "$T/nozstd/libzstd.so.1" "$T/nozstd/empty.c"
LD_LIBRARY_PATH=$T/nozstd:$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/nozstd.%p.dump" \
	"$PROGS/threads" 4 20000 >"$T/nozstd.txt" 2>"$T/nozstd.err"
nz=$(dump_of nozstd)
expect_eq nozstd_setting "$(setting "$nz" compress)" off
expect_eq nozstd_zstd_records "$(zstd_records "$nz")" 0
expect_eq nozstd_stderr "$(wc -c <"$T/nozstd.err")" 0
expect_eq nozstd_stdout "$(cat "$T/nozstd.txt")" "$(cat "$T/on.txt")"
report "$T/nozstd.json" leaks "$nz"
expect_eq nozstd_report "$(facts "$T/nozstd.json")" "$(facts "$T/off.json")"

# A compressed dump cut inside a compressed record: truncated, never corrupt.
cut=$((on_size - 100))
head -c "$cut" "$on" >"$T/cut.dump"
"$REPORT" summary --format json -o "$T/cut.json" "$T/cut.dump" || fail "a cut dump exited $?"
expect_eq cut_truncated "$(jget "$T/cut.json" 'j["dumps"][0]["truncated"]')" True
