# Many dumps of one job: a fake torchrun (tests/e2e/fake_torchrun.sh) starts
# four ranks of rank_worker under the shim; each dump records the launcher's
# variables, and summary, leaks and peak merge the four into one report:
# ranks from the environment (whatever the order of the files), sites merged
# by identity across processes loaded at different addresses, a share per rank.
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
MiB=1048576
export CUMTRACE_FAKE_DEVICES=4
traced job sh "$ROOT/tests/e2e/fake_torchrun.sh" --nproc_per_node 4 "$PROGS/rank_worker" ||
	fail "the job failed"
set -- "$T"/job.*.dump
expect_eq dumps $# 4
# the files in reverse order: ranks come from the dumps, not from the order
D=$(for f in "$@"; do echo "$f"; done | sort -r | tr '\n' ' ')
# shellcheck disable=SC2086
set -- $D

# The PROCESS record has the launcher's variables (bin/ctdump.py reads it too).
python3 "$ROOT/bin/ctdump.py" "$1" >"$T/rec.txt" || fail "ctdump.py cannot read the dump"
soft grep -q ' env\.RANK=[0-3] env\.LOCAL_RANK=[0-3] env\.WORLD_SIZE=4 env\.LOCAL_WORLD_SIZE=4 env\.GROUP_RANK=0 ' "$T/rec.txt"
soft grep -q ' env\.TORCHELASTIC_RUN_ID=fake-[0-9]* ' "$T/rec.txt"

report "$T/l.json" leaks "$@"
soft expect_eq ranks \
	"$(jget "$T/l.json" '[(r["rank"], r["rank_source"], r["local_rank"], r["world_size"], r["local_world_size"], r["node_rank"], r["peak_bytes"], r["leak_bytes"], r["leak_sites"], r["events"], r["complete"]) for r in j["ranks"]]')" \
	"[(0, 'RANK', 0, 4, 4, 0, $((80 * MiB)), $((64 * MiB)), 1, 4, True), (1, 'RANK', 1, 4, 4, 0, $((96 * MiB)), $((64 * MiB)), 1, 4, True), (2, 'RANK', 2, 4, 4, 0, $((112 * MiB)), $((64 * MiB)), 1, 4, True), (3, 'RANK', 3, 4, 4, 0, $((160 * MiB)), $((96 * MiB)), 2, 5, True)]"
soft expect_eq rank_pids "$(jget "$T/l.json" 'all(("job.%d.dump" % r["pid"]) in r["path"] for r in j["ranks"]) and len(set(r["run_id"] for r in j["ranks"])) == 1')" True
soft expect_eq leak_totals "$(jget "$T/l.json" '(j["leaks"]["count"], j["leaks"]["bytes"], j["allocations"], j["frees"])')" \
	"(5, $((288 * MiB)), 9, 4)"
merged='[(s["bytes"], s["count"], s["ranks"], [(p["rank"], p["count"], p["bytes"]) for p in s["per_rank"]], s.get("class"), s["stack"][0]["function"]) for s in j[K]["merged"]["sites"]]'
soft expect_eq leaks_merged "$(jget "$T/l.json" "$(echo "$merged" | sed 's/\[K\]/["leaks"]/')")" \
	"[($((256 * MiB)), 4, 4, [(0, 1, $((64 * MiB))), (1, 1, $((64 * MiB))), (2, 1, $((64 * MiB))), (3, 1, $((64 * MiB)))], 'leaked', 'leak_shared'), ($((32 * MiB)), 1, 1, [(3, 1, $((32 * MiB)))], 'leaked', 'leak_extra')]"
soft expect_eq peak_merged "$(jget "$T/l.json" "$(echo "$merged" | sed 's/\[K\]/["peak"]/')")" \
	"[($((256 * MiB)), 4, 4, [(0, 1, $((64 * MiB))), (1, 1, $((64 * MiB))), (2, 1, $((64 * MiB))), (3, 1, $((64 * MiB)))], None, 'leak_shared'), ($((160 * MiB)), 4, 4, [(0, 1, $((16 * MiB))), (1, 1, $((32 * MiB))), (2, 1, $((48 * MiB))), (3, 1, $((64 * MiB)))], None, 'step'), ($((32 * MiB)), 1, 1, [(3, 1, $((32 * MiB)))], None, 'leak_extra')]"
soft expect_eq peak_sum "$(jget "$T/l.json" 'j["peak"]["bytes"]')" $((448 * MiB))

# The same sites without symbols: module and offset, while the addresses differ
report "$T/ns.json" leaks --no-symbols "$@"
soft expect_eq leaks_merged_no_symbols "$(jget "$T/ns.json" '[(s["bytes"], [p["rank"] for p in s["per_rank"]], s["stack"][0]["function"]) for s in j["leaks"]["merged"]["sites"]]')" \
	"[($((256 * MiB)), [0, 1, 2, 3], None), ($((32 * MiB)), [3], None)]"
if [ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null || echo 0)" != 0 ]; then
	soft expect_eq addresses_differ "$(jget "$T/l.json" 'len(set(s["stack"][0]["ip"] for s in j["leaks"]["sites"] if s["bytes"] == 64 * 1048576))')" 4
fi

# Text: one report, the shares of each rank
"$REPORT" leaks "$@" >"$T/l.txt" || fail "leaks text exited $?"
soft grep -q '^cumtrace leaks: 5 allocations, 288.0 MiB (301989888 bytes) not freed in 4 ranks (0-3, world size 4) on host ' "$T/l.txt"
soft grep -q '^  leaked: 2 sites, 5 allocations, 288.0 MiB; ' "$T/l.txt"
soft grep -q '^#1   256.0 MiB in 4 allocations in 4 ranks (device, cudaMalloc, live at exit): leaked$' "$T/l.txt"
soft grep -q '^      ranks 0-3: 4 x 64.0 MiB$' "$T/l.txt"
soft grep -q '^#2   32.0 MiB in 1 allocation in 1 rank (device, cudaMalloc, live at exit): leaked$' "$T/l.txt"
soft grep -q '^      rank 3: 1 x 32.0 MiB$' "$T/l.txt"
soft grep -Eq '^      3  +[0-9]+  [^ ]+ +160.0 MiB +96.0 MiB +2 +5 +0  yes$' "$T/l.txt"
soft expect_eq leak_sections "$(grep -c '^cumtrace leaks' "$T/l.txt")" 1
"$REPORT" peak "$@" >"$T/p.txt" || fail "peak text exited $?"
soft grep -q '^cumtrace peak: 448.0 MiB (469762048 bytes) of device memory, the sum of each rank.s own peak, in 4 ranks ' "$T/p.txt"
soft grep -q '^  highest: rank 3, 160.0 MiB (167772160 bytes) at ' "$T/p.txt"
soft grep -q '^      rank 3: 1 x 64.0 MiB; rank 2: 1 x 48.0 MiB; rank 1: 1 x 32.0 MiB; rank 0: 1 x 16.0 MiB$' "$T/p.txt"
"$REPORT" "$@" >"$T/s.txt" || fail "summary text exited $?"
soft grep -q '^  events: 17 (allocations 9, frees 4, failed calls 0)$' "$T/s.txt"
soft grep -q '^  leaks: 5 allocations, 288.0 MiB (301989888 bytes) in 2 sites across the ranks ' "$T/s.txt"
# --per-dump: a section per dump, as before
"$REPORT" leaks --per-dump "$@" >"$T/pd.txt" || fail "--per-dump exited $?"
soft expect_eq per_dump_sections "$(grep -c '^cumtrace leaks: [0-9]* allocations*, .* not freed in pid ' "$T/pd.txt")" 4
report "$T/pd.json" leaks --per-dump "$@"
soft expect_eq per_dump_json "$(jget "$T/pd.json" '("ranks" in j, "merged" in j["leaks"], "merged" in j["peak"])')" "(False, False, False)"

# Every other command takes the four dumps too.
for cmd in timeline oom frag streams; do
	soft "$REPORT" "$cmd" "$@" -o "$T/$cmd.txt"
	report "$T/$cmd.json" "$cmd" "$@"
	soft expect_eq "${cmd}_json_ranks" "$(jget "$T/$cmd.json" 'len(j["ranks"])')" 4
done
soft "$REPORT" flamegraph "$@" -o "$T/f.folded"
soft "$REPORT" perfetto "$@" -o "$T/p.perfetto.json"
# The gate over the merged dumps
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
soft expect_eq gate_leak "$(code "$REPORT" leaks --fail-on-leak "$@")" 1
soft expect_eq gate_peak_over "$(code "$REPORT" peak --max-peak-bytes 159M "$@")" 1
soft expect_eq gate_peak_ok "$(code "$REPORT" peak --max-peak-bytes 160M "$@")" 0

# A dump cut short: the table says so, a note names the rank.
r1=$(jget "$T/l.json" '[r["path"] for r in j["ranks"] if r["rank"] == 1][0]')
head -c $(($(wc -c <"$r1") - 5)) "$r1" >"$T/cut.dump"
others=$(jget "$T/l.json" '" ".join(r["path"] for r in j["ranks"] if r["rank"] != 1)')
# shellcheck disable=SC2086
"$REPORT" leaks $others "$T/cut.dump" >"$T/cut.txt" 2>"$T/cut.err" || fail "truncated dump: exit $?"
soft grep -Eq '^      1  +[0-9]+  .*  truncated$' "$T/cut.txt"
soft grep -q '^  note: truncated dumps (the process died while writing): rank 1; ' "$T/cut.txt"

# Dumps without the launcher's variables (written before they were recorded:
# the fuzz seeds) still load; they are numbered by position, after the ranks taken.
old=$T/old
mkdir -p "$old"
for s in basic clean; do # the dump part of the seeds, without the harness's selector
	sh "$ROOT/tests/fuzz/seed.sh" dump "$ROOT/tests/fuzz/corpus/$s.seed" "$old/$s.seed"
done
report "$T/old.json" leaks "$old/basic.seed" "$old/clean.seed"
soft expect_eq old_dumps "$(jget "$T/old.json" '[(r["rank"], r["rank_source"], r["world_size"]) for r in j["ranks"]]')" \
	"[(0, 'order', None), (1, 'order', None)]"
"$REPORT" summary "$old/basic.seed" "$old/clean.seed" >"$T/old.txt" || fail "old dumps: exit $?"
soft grep -q '^  note: \* no rank in the dump.s environment: numbered by position: ranks 0-1$' "$T/old.txt"
report "$T/mixed.json" leaks "$old/basic.seed" "$@"
soft expect_eq mixed "$(jget "$T/mixed.json" '[(r["rank"], r["rank_source"]) for r in j["ranks"]]')" \
	"[(0, 'RANK'), (1, 'RANK'), (2, 'RANK'), (3, 'RANK'), (4, 'order')]"
# Slurm's rank when there is no RANK
SLURM_PROCID=7 SLURM_NTASKS=8 traced slurm "$PROGS/basic" >/dev/null || fail "basic under Slurm's variables failed"
report "$T/slurm.json" summary "$(dump_of slurm)" "$1"
soft expect_eq slurm "$(jget "$T/slurm.json" '[(r["rank"], r["rank_source"], r["world_size"]) for r in j["ranks"]]')" \
	"[($(jget "$T/l.json" '[r["rank"] for r in j["ranks"] if r["path"] == "'"$1"'"][0]'), 'RANK', 4), (7, 'SLURM_PROCID', 8)]"
finish
