# 32 threads released at once by a barrier, about a million events in all
# (32 x 15,625 cudaMalloc/cudaFree pairs + one leaked block each: 1,000,032
# events; the brief's 32 x 1M would be a 2.5 GB dump and minutes on 2 cores).
#  A. lossless, default buffer: exact allocations, frees, leaks; 0 dropped
#  B. lossless, CUMTRACE_BUFFER_MB=1 (16 private 64 KiB rings, the other 16
#     threads share the locked overflow ring), 2 waves of 32 threads so rings
#     of exited threads are reused: exact again, 0 dropped
#  C. drop mode, CUMTRACE_BUFFER_MB=1, a cumtrace_mark every 50 pairs, no
#     memory samples: events seen + dropped == made, exactly, and marks seen
#     + dropped records == marks made (a lost mark is not a dropped event)
. tests/e2e/lib.sh
export CUMTRACE_STACK_DEPTH=0
run() { # name settings threads pairs waves
	name=$1
	settings=$2
	shift 2
	# shellcheck disable=SC2086 # $settings is a list of VAR=VALUE words
	timeout 60 env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$T/$name.%p.dump" \
		$settings "$PROGS/hostile_threads" "$@" >"$T/$name.expect" || fail "$name: exit $?"
	dump=$(dump_of "$name")
	report "$T/$name.json" leaks "$dump"
	[ "$name" = B ] || rm -f "$dump" # A's is 80 MB; B's is kept for a failure
}
run A "CUMTRACE_DROP=0" 32 15625 1
run B "CUMTRACE_DROP=0 CUMTRACE_BUFFER_MB=1" 32 5000 2
run C "CUMTRACE_DROP=1 CUMTRACE_BUFFER_MB=1 CUMTRACE_MEMSAMPLE_MS=0" 32 15625 1 50
if python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
bad = []
def expect(name):
    return {l.split()[1]: int(l.split()[2]) for l in open(f"{T}/{name}.expect") if l.startswith("expect ")}
def check(what, got, want):
    print(("ok: " if got == want else "NOT OK: ") + f"{what} = {got}" + ("" if got == want else f", expected {want}"))
    if got != want:
        bad.append(what)
for name in "AB":
    j, e = json.load(open(f"{T}/{name}.json")), expect(name)
    check(f"{name} allocations", j["allocations"], e["allocations"])
    check(f"{name} frees", j["frees"], e["frees"])
    check(f"{name} leaks.count", j["leaks"]["count"], e["leak_count"])
    check(f"{name} leaks.bytes", j["leaks"]["bytes"], e["leak_bytes"])
    check(f"{name} dropped_events", j["dumps"][0]["dropped_events"], 0)
    check(f"{name} events", j["dumps"][0]["events"], e["events"])
    d = j["dumps"][0]
    print(f"{name}: late_events {d['late_events']} unmatched_frees {d['unmatched_frees']} "
          f"double_allocations {d['double_allocations']}")
j, e = json.load(open(f"{T}/C.json")), expect("C")
d = j["dumps"][0]
seen = d["events"]
check("C seen + dropped", seen + d["dropped_events"], e["events"])
check("C marks seen + dropped records", d["marks"] + d["dropped_records"], e["marks"])
print(f"C: made {e['events']}, seen {seen}, dropped {d['dropped_events']}; "
      f"marks made {e['marks']}, seen {d['marks']}, dropped {d['dropped_records']}")
if not d["dropped_records"]:
    print("NOT OK: no mark was dropped: the check above proved nothing")
    bad.append("C dropped_records")
sys.exit(1 if bad else 0)
PY
then
	:
else
	set -- "$T"/B.*.dump
	mkdir -p "$ROOT/$BUILD/tests/logs"
	cp "$1" "$ROOT/$BUILD/tests/logs/t_hostile_threads.B.dump"
	fail "counts differ; B's dump kept as $BUILD/tests/logs/t_hostile_threads.B.dump"
fi
