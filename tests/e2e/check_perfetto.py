#!/usr/bin/env python3
"""Check a Chrome JSON trace written by `cumtrace-report perfetto`.

    check_perfetto.py TRACE.json [SUMMARY.json]

Exits 1 with one line per violation, else writes a summary (JSON) of what
the trace holds, for the tests to assert exact values on.

The rules are those of the Trace Event Format and of Perfetto's JSON
importer (google/perfetto src/trace_processor/importers/json/
json_trace_tokenizer.cc, json_trace_parser_impl.cc), which the trace
processor cannot be run here to confirm:
  - the document is an object; "traceEvents" (an array of objects) comes
    first (older tokenizers skip the rest after an unknown key); no
    displayTimeUnit (Perfetto releases before 2022 read "ns" there as the
    unit of ts, not of the display);
  - the tokenizer reads "ts" and "dur" from each event's top level and
    fails on an array value there: ts comes first and no value is an array;
  - ph is one of M C b e B E i; pid and tid are integers;
  - "C": a category (cat, a non-empty string) and exactly one numeric arg;
    samples of a track (pid, name, key) have strictly increasing ts;
  - "b"/"e": cat, id and name are strings; on each track (pid, cat, id)
    every b has its e, with the same name, at ts >= b's; the next b of the
    track starts strictly after (slices on one track never overlap);
  - "B"/"E": nest per (pid, tid) in ts order, every B is closed;
  - "i": s is "t", "p" or "g"; "M": process_name or thread_name with a
    non-empty args.name.
"""
import json
import sys
from collections import defaultdict

from exportcheck import err, exit_on_errors, write_summary

def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def pairs_hook(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            err("duplicate key %r" % k)
        d[k] = v
    d["__order__"] = [k for k, _ in pairs]
    return d


def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k != "__order__"}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    if not text.lstrip().startswith("{"):
        err("the document is not an object")
    doc = json.loads(text, object_pairs_hook=pairs_hook,
                     parse_constant=lambda c: err("constant %s" % c))
    order = doc["__order__"]
    if not order or order[0] != "traceEvents":
        err("traceEvents is not the first key: %s" % order)
    if "displayTimeUnit" in doc:
        err("displayTimeUnit %r: older Perfetto reads it as the unit of ts" % doc["displayTimeUnit"])
    if "otherData" in doc and not isinstance(doc["otherData"], dict):
        err("otherData is not an object")
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        err("traceEvents is not an array")
        events = []

    procs, threads = {}, {}
    counters = {}
    async_tracks = defaultdict(list)
    thread_tracks = defaultdict(list)
    instants, ooms = [], []
    for i, e in enumerate(events):
        where = "event %d" % i
        if not isinstance(e, dict):
            err("%s is not an object" % where)
            continue
        keys = e["__order__"]
        if not keys or keys[0] != "ts":
            err("%s: ts is not the first key (%s)" % (where, keys))
        for k in keys:
            if isinstance(e[k], list):
                err("%s: top-level array value for %r" % (where, k))
        ts, ph = e.get("ts"), e.get("ph")
        if not is_num(ts):
            err("%s: ts %r" % (where, ts))
            continue
        if ph not in ("M", "C", "b", "e", "B", "E", "i"):
            err("%s: ph %r" % (where, ph))
            continue
        pid = e.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid < 0:
            err("%s: pid %r" % (where, pid))
            continue
        tid = e.get("tid")
        if ph in ("B", "E", "i", "M") and (not isinstance(tid, int) or isinstance(tid, bool)):
            err("%s: tid %r" % (where, tid))
            continue
        name = e.get("name")
        args = e.get("args")
        if args is not None and not isinstance(args, dict):
            err("%s: args is not an object" % where)
            continue
        if ph == "M":
            if name not in ("process_name", "thread_name") or not args or \
                    not isinstance(args.get("name"), str) or not args["name"]:
                err("%s: bad metadata %r" % (where, strip(e)))
                continue
            (procs if name == "process_name" else threads)[(pid if name == "process_name" else (pid, tid))] = args["name"]
        elif ph == "C":
            vals = [k for k in args or {} if k != "__order__"]
            if not isinstance(name, str) or len(vals) != 1 or not is_num(args[vals[0]]):
                err("%s: counter needs a name and one numeric arg: %r" % (where, strip(e)))
                continue
            if not isinstance(e.get("cat"), str) or not e["cat"]:
                err("%s: counter without a category: %r" % (where, strip(e)))
                continue
            key = (pid, name, vals[0])
            c = counters.setdefault(key, {"cat": e["cat"], "samples": 0, "max": None, "last": None, "ts": None,
                                          "values": []})
            if c["ts"] is not None and ts <= c["ts"]:
                err("%s: counter %s ts %s not after %s" % (where, key, ts, c["ts"]))
            c["ts"] = ts
            v = args[vals[0]]
            c["samples"] += 1
            c["max"] = v if c["max"] is None else max(c["max"], v)
            c["last"] = v
            c["values"].append(v)
        elif ph in ("b", "e"):
            cat, aid = e.get("cat"), e.get("id")
            if not isinstance(cat, str) or not isinstance(aid, str) or not isinstance(name, str):
                err("%s: async event needs string cat, id and name: %r" % (where, strip(e)))
                continue
            async_tracks[(pid, cat, aid)].append((ts, i, ph, name, strip(args) if args else {}, tid))
        elif ph in ("B", "E"):
            if ph == "B" and not isinstance(name, str):
                err("%s: B without a name" % where)
                continue
            thread_tracks[(pid, tid)].append((ts, i, ph, name))
        else:
            if e.get("s") not in ("t", "p", "g") or not isinstance(name, str):
                err("%s: instant needs s t/p/g and a name: %r" % (where, strip(e)))
                continue
            rec = {"pid": pid, "tid": tid, "s": e["s"], "cat": e.get("cat"), "name": name,
                   "ts": ts, "args": strip(args) if args else {}}
            (ooms if e.get("cat") == "oom" else instants).append(rec)

    slices = defaultdict(lambda: {"count": 0, "bytes": 0, "tracks": 0})
    slice_ends = defaultdict(int)
    ranges = []
    for key, evs in async_tracks.items():
        evs.sort(key=lambda x: (x[0], x[1]))
        open_, last_end = None, None
        for ts, i, ph, name, args, tid in evs:
            if ph == "b":
                if open_ is not None:
                    err("track %s: b at %s while %r (from %s) is open" % (key, ts, open_[3], open_[0]))
                if last_end is not None and ts <= last_end:
                    err("track %s: b at %s not after the previous e at %s" % (key, ts, last_end))
                open_ = (ts, i, ph, name, args, tid)
            else:
                if open_ is None:
                    err("track %s: e at %s without a b" % (key, ts))
                    continue
                if name != open_[3]:
                    err("track %s: e name %r does not match b name %r" % (key, name, open_[3]))
                if ts < open_[0]:
                    err("track %s: e at %s before its b at %s" % (key, ts, open_[0]))
                bargs = open_[4]
                if key[1].startswith("alloc."):
                    s = slices[key[1][6:]]
                    s["count"] += 1
                    size = bargs.get("size")
                    if not isinstance(size, int):
                        err("track %s: slice without an integer size" % (key,))
                    else:
                        s["bytes"] += size
                    for a in ("ptr", "stream", "site", "end"):
                        if not isinstance(bargs.get(a), str):
                            err("track %s: slice arg %s missing" % (key, a))
                    if not isinstance(bargs.get("device"), int) or not isinstance(bargs.get("stack_id"), int):
                        err("track %s: slice args device/stack_id missing" % (key,))
                    slice_ends[bargs.get("end")] += 1
                else:
                    ranges.append({"pid": key[0], "cat": key[1], "name": open_[3], "b_tid": open_[5],
                                   "e_tid": tid, "start": open_[0], "end": ts, "args": bargs})
                last_end = ts
                open_ = None
        if open_ is not None:
            err("track %s: b at %s never ends" % (key, open_[0]))
        if key[1].startswith("alloc."):
            slices[key[1][6:]]["tracks"] += 1

    nested = []
    for key, evs in thread_tracks.items():
        evs.sort(key=lambda x: (x[0], x[1]))
        stack = []
        for ts, i, ph, name in evs:
            if ph == "B":
                stack.append(name)
                nested.append({"pid": key[0], "tid": key[1], "name": name, "depth": len(stack)})
            elif not stack:
                err("thread %s: E at %s without a B" % (key, ts))
            else:
                top = stack.pop()
                if name is not None and name != top:
                    err("thread %s: E %r closes B %r" % (key, name, top))
        if stack:
            err("thread %s: %d B never end" % (key, len(stack)))

    exit_on_errors("perfetto")
    summary = {
        "events": len(events),
        "processes": {str(k): v for k, v in procs.items()},
        "threads": {"%d/%d" % k: v for k, v in threads.items()},
        "counters": {"%d/%s %s" % k: {x: v for x, v in c.items() if x != "ts"} for k, c in counters.items()},
        "slices": dict(slices),
        "slice_ends": dict(slice_ends),
        "ranges": ranges,
        "nested": nested,
        "instants": instants,
        "ooms": ooms,
        "otherData": strip(doc.get("otherData", {})),
    }
    write_summary(summary, sys.argv[2] if len(sys.argv) > 2 else None)


main()
