# kill -9: the dump loads and holds every event recorded more than one flush
# interval (50 ms) before the kill. Repeated with 1 and 4 threads.
. tests/e2e/lib.sh
for threads in 1 4 1 4; do
	rm -f "$T"/kill.*.dump
	# Started directly (not through a shell function) so $! is the program.
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/kill.%p.dump" \
		"$PROGS/killme" "$T/counter" "$threads" &
	pid=$!
	sleep 0.3
	before=$(od -An -tu8 -N8 "$T/counter" | tr -d ' ')
	sleep 0.25
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	dump=$(dump_of kill)
	"$REPORT" summary --format json -o "$T/s.json" "$dump" 2>"$T/err.txt" || fail "report failed: $(cat "$T/err.txt")"
	got=$(jget "$T/s.json" 'j["allocations"]')
	[ "$got" -ge "$before" ] || fail "threads=$threads: dump has $got allocations, $before were made 250 ms before the kill"
	expect_eq "threads=$threads clean_exit" "$(jget "$T/s.json" 'j["dumps"][0]["clean_exit"]')" False
	echo "ok: threads=$threads: $got allocations in the dump >= $before counted 250 ms before kill -9"
done
