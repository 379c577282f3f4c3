# tests/e2e/t_python_versions.sh: compare the leak sites of a py_frames.py run
# (cumtrace-report leaks --python-only --format json) with the stacks that the
# script recorded from CPython itself. Prints one line per scenario; exits 1
# on the first difference.
#
#   py_frames_check.py REPORT.json EXPECT.json
import json
import sys

report = json.load(open(sys.argv[1]))
expect = json.load(open(sys.argv[2]))
sites = report["leaks"]["sites"]
bad = 0
for name, e in sorted(expect["scenarios"].items()):
    mine = [s for s in sites if s["bytes"] == e["size"]]
    if len(mine) != 1 or mine[0]["count"] != 1:
        print("FAIL %s: %d sites of %d bytes" % (name, len(mine), e["size"]))
        bad = 1
        continue
    stack = mine[0]["stack"]
    got = [[f["file"], f["function"], f["line"]] for f in stack if f.get("python")]
    want = e["frames"]
    if got != want:
        print("FAIL %s: %d Python frames, expected %d" % (name, len(got), len(want)))
        for i in range(max(len(got), len(want))):
            g = got[i] if i < len(got) else None
            w = want[i] if i < len(want) else None
            print("  %s #%d got %s expected %s" % ("  " if g == w else "!!", i, g, w))
        bad = 1
        continue
    if not want and not stack:
        print("FAIL %s: no frames at all" % name)
        bad = 1
        continue
    print("ok %s: %d Python frames, innermost %s" % (name, len(got), got[0] if got else None))
# every leak is a scenario's, and the freed block is none of them
expect_bytes = sorted(e["size"] for e in expect["scenarios"].values())
got_bytes = sorted(s["bytes"] for s in sites)
if got_bytes != expect_bytes:
    print("FAIL leak sites %s, expected %s" % (got_bytes, expect_bytes))
    bad = 1
sys.exit(bad)
