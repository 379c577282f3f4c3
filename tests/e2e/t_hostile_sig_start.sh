# Issue 14.5, first attack: a signal handler calls CUDA (cudaFree(0)) on the
# thread that is inside tracing's start-up (raised from gethostname, which the
# shim calls there). The handler must not wait for the start-up it
# interrupted: its call goes through untraced, counted as dropped in a signal
# handler, and the report says so. The program's own three calls are
# recorded.
. tests/e2e/lib.sh
. tests/e2e/sig_lib.sh
sig_run start 20 start
sig_counts start
expect_eq "dropped in signal handlers" "$(jget "$T/start.json" 'j["dumps"][0]["dropped_in_signal_handlers"]')" 1
expect_eq "calls recorded" "$(jget "$T/start.json" 'sum(a["calls"] for a in j["summary"]["apis"].values())')" 3
"$REPORT" summary "$(dump_of start)" >"$T/start.txt" || fail "summary exited $?"
grep -q "1 call made inside a signal handler was not recorded" "$T/start.txt" ||
	fail "the summary does not say that a call was lost: $(cat "$T/start.txt")"
echo "ok: the summary says: $(grep "signal handler" "$T/start.txt")"
