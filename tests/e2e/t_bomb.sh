# Dumps a few KiB long whose compressed runs hold millions of events ("zstd
# bombs", tests/e2e/mkbomb.py): the analyzer reads every event, and its memory
# does not grow with them. Each says its rings are 64 GiB (setting.buffer_mb),
# which the reorder window must not believe: it stops at 2 Mi events (192 MiB).
. tests/e2e/lib.sh
bomb() { # NAME EVENTS PATTERN BUFFER_MB
	python3 tests/e2e/mkbomb.py "$T/$1.ct" "$2" "$3" "$4" >/dev/null || fail "mkbomb $1"
	echo "ok: $1: $2 events in $(wc -c <"$T/$1.ct") bytes"
}
# rss NAME: peak RSS in KiB of `cumtrace-report summary --format json` over it
rss() {
	python3 - "$REPORT" "$T/$1.ct" "$T/$1.json" <<'PY'
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], [sys.argv[1], "summary", "--format", "json", sys.argv[2]])
_, status, usage = os.wait4(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit("cumtrace-report exited %d" % os.waitstatus_to_exitcode(status))
print(usage.ru_maxrss)
PY
}
bomb small 2000000 same 65536
bomb big 8000000 same 65536
bomb reverse 4000000 reverse 65536
bomb threads 200000 threads 64
for b in small big reverse threads; do
	kb=$(rss $b) || fail "$b: the analyzer failed"
	eval "rss_$b=$kb"
	echo "ok: $b: peak RSS $((kb / 1024)) MiB"
done
expect_eq "big: events" "$(jget "$T/big.json" 'j["dumps"][0]["events"]')" 8000000
expect_eq "big: allocations over a live block" "$(jget "$T/big.json" 'j["double_allocations"]')" 7999999
expect_eq "reverse: events" "$(jget "$T/reverse.json" 'j["dumps"][0]["events"]')" 4000000
expect_eq "threads: events" "$(jget "$T/threads.json" 'j["dumps"][0]["events"]')" 200000
expect_eq "threads: leaks" "$(jget "$T/threads.json" 'j["dumps"][0]["leak_count"]')" 200000

# 4x the events, the same memory: the window is full in both (a window sized
# from the dump held 8 Mi events, 768 MiB, here)
[ $((rss_big * 4)) -le $((rss_small * 5)) ] ||
	fail "8M events took $rss_big KiB, 2M events $rss_small KiB: memory grows with the events"
echo "ok: 8M events in $((rss_big / 1024)) MiB, 2M in $((rss_small / 1024)) MiB"
# the absolute bound (window, its arrays' growth, buffers); sanitizers add their own
case ${SANITIZE:-} in
'')
	for b in big reverse threads; do
		eval "kb=\$rss_$b"
		[ "$kb" -le $((320 * 1024)) ] || fail "$b: peak RSS $((kb / 1024)) MiB, above 320 MiB"
	done
	echo "ok: every bomb under 320 MiB"
	;;
*) echo "note: absolute RSS bound not checked under SANITIZE=$SANITIZE" ;;
esac
