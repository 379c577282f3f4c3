"""Compare a dump's framework events with what the stand-in libc10_cuda.so reported
(tests/e2e/torch_fake.py's JSON), for tests/e2e/t_torch_tracker.sh.

usage: torch_check.py DUMP DRIVER_JSON CHECK...

Checks (each prints "ok: ..." or the difference; exit 1 when any failed):
  same          every event the stand-in made is in the dump, per thread in the
                same order, with its action, device, address, size, stream, pool
                id and thread; nothing else is
  same-nopool   the same, the dump having no pool ids (a version without them)
  none          the dump has no framework event
  stacks        alloc, segment_alloc, segment_map and oom events carry a native stack
                whose first frame lies in libc10_cuda.so and a Python stack whose
                innermost frame is the driver's allocating line; the others carry none
  cuda=N        the CUDA layer recorded N successful allocation calls (op alloc or map)
  segments      every segment_alloc / segment_map has its CUDA call (cudaMalloc /
                cuMemMap) at the same address and size in the dump
  counts[=TEXT] prints the number of events per action, "counts: alloc=N ..."; with
                TEXT, that line must be "counts: TEXT"
  trackers=N    the stand-in had N trackers attached at the end
  cross-thread  some free_completed was recorded on another thread than its free_requested
"""
import json
import os
import struct
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin"))
import ctdump  # noqa: E402

ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom"]
WITH_STACKS = {"alloc", "segment_alloc", "segment_map", "oom"}

dump_path, driver_path = sys.argv[1:3]
data = open(dump_path, "rb").read()
driver = json.load(open(driver_path))
fw = ctdump.framework_events(data)
bad = 0


def ok(what, cond, detail=""):
    global bad
    if cond:
        print("ok: " + what)
    else:
        bad += 1
        print("FAIL: %s %s" % (what, detail))


def cuda_events():
    out = []
    for _off, rtype, _flags, body in ctdump.records(data):
        if rtype == 2:
            f = ctdump.EVENT.unpack_from(body)
            if f[14] != ctdump.LAYER_FRAMEWORK:
                out.append(dict(api=ctdump.api_name(f[10]), op=f[11], ptr=f[2], size=f[3],
                                result=f[8]))
    return out


def modules():
    out = []
    for _off, rtype, _flags, body in ctdump.records(data):
        if rtype == 4:
            base, lo, hi, _ts, blen, plen = struct.unpack_from("<4QHH", body)
            path = body[40 + blen:40 + blen + plen].split(b"\0")[0].decode(errors="replace")
            out.append((lo, hi, path))
    return out


def per_thread(rows):
    d = defaultdict(list)
    for r in rows:
        d[r[-1]].append(r)
    return dict(d)


def expected(pools):
    rows = []
    for action, device, addr, size, stream, pa, pb, tid in driver["log"]:
        if ACTIONS[action] == "snapshot":
            continue
        rows.append((ACTIONS[action], device, addr, size, stream, (pa, pb) if pools else None, tid))
    return rows


for check in sys.argv[3:]:
    if check in ("same", "same-nopool"):
        want = per_thread(expected(check == "same"))
        got = per_thread([(e["action"], e["device"], e["ptr"], e["size"], e["stream"], e["pool"],
                           e["tid"]) for e in fw])
        diff = ""
        if want != got:
            for tid in sorted(set(want) | set(got)):
                w, g = want.get(tid, []), got.get(tid, [])
                if w != g:
                    i = next((k for k in range(min(len(w), len(g))) if w[k] != g[k]), min(len(w), len(g)))
                    diff = "thread %s: %d events made, %d in the dump; first difference at %d: %s vs %s" % (
                        tid, len(w), len(g), i, w[i] if i < len(w) else None, g[i] if i < len(g) else None)
                    break
        ok("%s: %d events, %d threads, all as made" % (check, len(fw), len(got)),
           want == got and len(fw) > 0, diff)
    elif check == "none":
        ok("no framework events", not fw, "%d found" % len(fw))
    elif check == "stacks":
        c10 = [(lo, hi) for lo, hi, path in modules() if os.path.basename(path).startswith("libc10_cuda.so")]
        line = (driver["file"], "alloc", driver["alloc_line"])
        wrong = []
        for e in fw:
            if e["action"] in WITH_STACKS:
                native_ok = bool(e["ips"]) and any(lo <= e["ips"][0] < hi for lo, hi in c10)
                if not native_ok or not e["py"] or e["py"][0] != line:
                    wrong.append((e["action"], bool(e["ips"]), native_ok, e["py"][:1]))
            elif e["stack"] or e["py"]:
                wrong.append((e["action"], e["stack"], e["py"][:1]))
        n = sum(e["action"] in WITH_STACKS for e in fw)
        ok("stacks: %d events with native (from libc10_cuda.so) and Python stacks at %s:%d, "
           "%d without" % (n, os.path.basename(line[0]), line[2], len(fw) - n),
           not wrong and n > 0 and c10, "wrong: %s" % wrong[:3])
    elif check.startswith("cuda="):
        n = sum(1 for e in cuda_events() if e["op"] in (1, 16) and e["result"] == 0)
        ok("CUDA layer: %d allocation calls" % n, n == int(check[5:]), "want %s" % check[5:])
    elif check == "segments":
        calls = {(e["ptr"], e["size"]) for e in cuda_events()
                 if e["api"] in ("cudaMalloc", "cuMemMap") and e["result"] == 0}
        segs = [(e["ptr"], e["size"]) for e in fw if e["action"] in ("segment_alloc", "segment_map")]
        # a segment is one cudaMalloc; an expandable segment's range is mapped a granule at a
        # time (a cuMemMap each, as torch does): the calls inside it cover it exactly
        missing = [(p, n) for p, n in segs
                   if sum(cn for cp, cn in calls if p <= cp and cp + cn <= p + n) != n]
        ok("segments: %d, each covered by its CUDA calls" % len(segs), segs and not missing,
           "not covered: %s" % missing[:3])
    elif check.startswith("counts"):
        c = Counter(e["action"] for e in fw)
        line = "counts: " + " ".join("%s=%d" % (a, c[a]) for a in ACTIONS if c[a])
        if check.startswith("counts="):
            ok(line, line == "counts: " + check[7:], "want counts: " + check[7:])
        else:
            print(line)
    elif check.startswith("trackers="):
        ok("trackers: %d attached" % driver["trackers"], driver["trackers"] == int(check[9:]),
           "want %s" % check[9:])
    elif check == "cross-thread":
        req = {}
        cross = 0
        for e in sorted(fw, key=lambda e: e["ts"]):  # threads' records interleave in the file
            if e["action"] == "free_requested":
                req[e["ptr"]] = e["tid"]
            elif e["action"] == "free_completed" and req.get(e["ptr"], e["tid"]) != e["tid"]:
                cross += 1
        ok("cross-thread: %d frees completed on another thread" % cross, cross > 0)
    else:
        sys.exit("unknown check " + check)
sys.exit(1 if bad else 0)
