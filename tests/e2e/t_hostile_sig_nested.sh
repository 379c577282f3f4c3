# Issue 14.5, third attack: signal handlers that interrupt traced calls
# (200,000 cudaMalloc/cudaFree pairs, a second thread signalling without
# pause, each handler making a pair of its own). A handler's calls that
# interrupt the shim's own bookkeeping cannot be recorded (the ring may be
# mid-write): they must be counted as dropped in signal handlers, and the
# others recorded. Before the fix they were passed through as if nested in
# the interrupted call, neither recorded nor counted.
. tests/e2e/lib.sh
. tests/e2e/sig_lib.sh
sig_run nested 120 nested 200000
sig_unwrapped_under_tsan
sig_counts nested
"$REPORT" summary "$(dump_of nested)" >"$T/nested.txt" || fail "summary exited $?"
if [ "$(jget "$T/nested.json" 'j["dumps"][0]["dropped_in_signal_handlers"]')" != 0 ]; then
	grep -q "made inside signal handlers were not recorded" "$T/nested.txt" ||
		fail "the summary does not say that calls were lost: $(cat "$T/nested.txt")"
	echo "ok: the summary says: $(grep "signal handler" "$T/nested.txt")"
fi
