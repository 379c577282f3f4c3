#!/usr/bin/env python3
"""Check a pickle written by `cumtrace-report memviz`.

    check_memviz.py SNAPSHOT.pickle [SUMMARY.json]

Exits 1 with one line per violation, else writes a summary (JSON) of what
the snapshot holds, for the tests to assert exact values on.

What is checked, without torch (which the machine running the tests may
not have; see docs/report.md for the command that runs torch's own tool):
  - the opcodes are among those that MemoryViz.js's unpickle() implements
    (torch/utils/viz/MemoryViz.js), and no MARK..APPENDS/SETITEMS batch
    holds more than 1000 items (the viewer spreads a batch into one call);
  - pickle.load reads it, and every key and type that torch/cuda/
    _memory_viz.py reads is there: the functions segments, memory, segsum
    (with its assertions) and trace are run as written there, minus the
    flamegraph.pl and HTML steps;
  - external_annotations (torch/csrc/cuda/memory_snapshot.cpp writes them:
    its record_function callbacks' {"name", "stage": "START"|"END"}, then
    "device" and "time_us"): every entry has those four keys and no other,
    times never go back, and per name every END follows a START and every
    START has its END (ENDs whose START fell out of the ring are allowed when
    allocator_settings says external_annotations_overflowed);
  - MemoryViz.js's annotate_snapshot, process_alloc_data (block and segment
    views) and the "Allocator State History" replay (simulate_memory, then
    the block-to-segment lookup of draw) run for every event of every device
    without finding a block outside the segments or a free of an unknown
    block.
"""
import io
import pickle
import pickletools
import sys

from exportcheck import err, exit_on_errors, write_summary

# Opcodes MemoryViz.js unpickle() handles (its switch statement).
JS_OPCODES = {
    "APPENDS", "BINGET", "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME",
    "LONG1", "LONG_BINGET", "MARK", "MEMOIZE", "PROTO", "SETITEMS", "SHORT_BINUNICODE", "STOP",
    "TUPLE2", "APPEND", "NEWFALSE", "BINPUT", "BINUNICODE", "EMPTY_TUPLE", "NEWTRUE", "NONE",
    "BINFLOAT", "TUPLE", "TUPLE1", "TUPLE3", "LONG_BINPUT", "LIST", "DICT", "SETITEM",
}
PUSH_ONE = {"BININT", "BININT1", "BININT2", "LONG1", "BINUNICODE", "SHORT_BINUNICODE",
            "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "NEWTRUE", "NEWFALSE", "NONE",
            "BINGET", "LONG_BINGET", "BINFLOAT"}


def check_opcodes(data):
    counts = [0]
    for op, arg, pos in pickletools.genops(data):
        name = op.name
        if name not in JS_OPCODES:
            err("opcode %s at %d is not read by MemoryViz.js" % (name, pos))
        if name == "PROTO" and arg not in (2, 3, 4):
            err("protocol %s (MemoryViz.js reads 2..4)" % arg)
        if name in PUSH_ONE:
            counts[-1] += 1
        elif name == "MARK":
            counts.append(0)
        elif name in ("APPENDS", "SETITEMS"):
            n = counts.pop()
            if name == "SETITEMS":
                n //= 2
            if n > 1000:
                err("%s at %d adds %d items in one batch" % (name, pos, n))
        elif name == "TUPLE2":
            counts[-1] -= 1


# ---- torch/cuda/_memory_viz.py, the functions that read a snapshot ----------------------

def frame_fmt(f, full_filename=False):
    i = f["line"]
    fname = f["filename"]
    if not full_filename:
        fname = fname.split("/")[-1]
    return "%s:%s:%s" % (fname, i, f["name"])


def frame_filter(name, filename):
    for of in ("unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
               "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"):
        if of in name:
            return False
    for of in ("core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
               "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
               "cpython/abstract.h"):
        if of in filename:
            return False
    return True


def frames_fmt(frames, full_filename=False, reverse=False):
    if reverse:
        frames = reversed(frames)
    return [frame_fmt(f, full_filename) for f in frames if frame_filter(f["name"], f["filename"])]


def block_extra(b):
    if "frames" not in b:
        if "history" in b:
            return b["history"][0].get("frames", []), b["history"][0]["real_size"]
        return [], b.get("requested_size", b["size"])
    return b["frames"], b["requested_size"]


def write_blocks(f, prefix, blocks):
    for b in blocks:
        frames, size = block_extra(b)
        fr = ";".join(frames_fmt(frames, reverse=True)) if frames else "<non-python>"
        f.write("%s;%s;%s %d\n" % (prefix, b["state"], fr, size))
        gaps = b["size"] - size
        if gaps:
            f.write("%s;%s;<gaps> %d\n" % (prefix, b["state"], gaps))


def segments_lines(snapshot):
    f = io.StringIO()
    for seg in snapshot["segments"]:
        write_blocks(f, "stream_%s;seg_%s" % (seg["stream"], seg["address"]), seg["blocks"])
    return f.getvalue()


def memory_lines(snapshot):
    f = io.StringIO()
    for seg in snapshot["segments"]:
        write_blocks(f, "stream_%s" % seg["stream"], seg["blocks"])
    return f.getvalue()


def segsum(data):
    total_reserved = total_allocated = free_external = free_internal = 0
    for seg in sorted(data["segments"], key=lambda x: (x["total_size"], sum(
            b["size"] for b in x["blocks"] if b["state"] == "active_allocated"))):
        total_reserved += seg["total_size"]
        seg_free_external = seg_free_internal = seg_allocated = 0
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                _, allocated_size = block_extra(b)
                seg_allocated += allocated_size
                seg_free_internal += b["size"] - allocated_size
            else:
                seg_free_external += b["size"]
        total_allocated += seg_allocated
        free_external += seg_free_external
        free_internal += seg_free_internal
        if seg_free_external + seg_free_internal + seg_allocated != seg["total_size"]:
            err("segsum: segment at %s: blocks do not add up to total_size" % seg["address"])
    if free_internal + free_external + total_allocated != total_reserved:
        err("segsum: totals do not add up")
    return total_reserved, total_allocated


def trace_text(data):
    out = io.StringIO()
    for i, d in enumerate(data["device_traces"]):
        if not d:
            continue
        out.write("Device %d\n" % i)
        for e in d:
            a = e["action"]
            if a in ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"):
                out.write("%s %s %s\n" % (a, e["addr"], e["size"]))
            elif a == "oom":
                out.write("oom %s %s\n" % (e["size"], e["device_free"]))
            else:
                out.write("%r\n" % e)
    for seg in data["segments"]:
        seg["address"], seg["allocated_size"]
    return out.getvalue()


# ---- torch/utils/viz/MemoryViz.js (and process_alloc_data.js), in Python -----------------

def annotate(snapshot):
    block_version, segment_version = {}, {}

    def version(space, addr, inc):
        r = space.get(addr, 0)
        if inc:
            space[addr] = r + 1
        return r

    stream_names = {0: 0}

    def stream_name(s):
        if s not in stream_names:
            stream_names[s] = len(stream_names)
        return stream_names[s]

    traces = []
    for device_trace in snapshot["device_traces"]:
        new = []
        for t in device_trace:
            t = dict(t)
            t.setdefault("frames", [])
            t["stream"] = stream_name(t["stream"])
            a = t["action"]
            if a == "free_completed":
                t["version"] = version(block_version, t["addr"], True)
                if new and new[-1]["action"] == "free_requested" and new[-1]["addr"] == t["addr"]:
                    new[-1]["action"] = "free"
                    continue
            elif a in ("free_requested", "alloc"):
                t["version"] = version(block_version, t["addr"], False)
            elif a in ("segment_free", "segment_unmap"):
                t["version"] = version(segment_version, t["addr"], True)
            elif a in ("segment_alloc", "segment_map"):
                t["version"] = version(segment_version, t["addr"], False)
            t["idx"] = len(new)
            new.append(t)
        traces.append(new)
    segs = []
    for seg in snapshot["segments"]:
        seg = dict(seg)
        seg["stream"] = stream_name(seg["stream"])
        addr = seg["address"]
        blocks = []
        for b in seg["blocks"]:
            b = dict(b)
            b["addr"] = addr
            if "frames" not in b:
                b["frames"] = []
                b["requested_size"] = b.get("requested_size") or b["size"]
            blocks.append(b)
            addr += b["size"]
        seg["blocks"] = blocks
        segs.append(seg)
    return {"segments": segs, "device_traces": traces}


def process_alloc_data(snapshot, device, plot_segments):
    elements, initially_allocated, actions, addr_to_alloc = [], [], [], {}
    alloc = "segment_alloc" if plot_segments else "alloc"
    free, free_completed = ("segment_free", "segment_free") if plot_segments else ("free", "free_completed")
    for e in snapshot["device_traces"][device]:
        if e["action"] == alloc:
            elements.append(e)
            addr_to_alloc[e["addr"]] = len(elements) - 1
            actions.append(len(elements) - 1)
        elif e["action"] in (free, free_completed):
            if e["addr"] in addr_to_alloc:
                actions.append(addr_to_alloc.pop(e["addr"]))
            else:
                elements.append(e)
                initially_allocated.append(len(elements) - 1)
                actions.append(len(elements) - 1)
    for seg in snapshot["segments"]:
        if seg["device"] != device:
            continue
        if plot_segments:
            if seg["address"] not in addr_to_alloc:
                elements.append({"action": "alloc", "addr": seg["address"], "size": seg["total_size"]})
                initially_allocated.append(len(elements) - 1)
        else:
            for b in seg["blocks"]:
                if b["state"] == "active_allocated" and b["addr"] not in addr_to_alloc:
                    elements.append({"action": "alloc", "addr": b["addr"], "size": b["requested_size"]})
                    initially_allocated.append(len(elements) - 1)
    total, peak, current = 0, 0, []
    for i in initially_allocated:
        total += elements[i]["size"]
        current.append(i)
    peak = total
    for i in actions:
        if i in current:
            current.remove(i)
            total -= elements[i]["size"]
        else:
            current.append(i)
            total += elements[i]["size"]
        peak = max(peak, total)
    if total < 0:
        err("process_alloc_data: device %d ends with negative memory" % device)
    return peak, total


def map_segment(segments, merge, seg):
    """MemoryView's map_segment: put seg back (in address order); an expandable segment's
    range (merge) joins its neighbours of the same stream that touch it."""
    idx = next((k for k, x in enumerate(segments) if x["addr"] > seg["addr"]), -1)
    if not merge:
        segments.insert(idx if idx >= 0 else len(segments) - 1, seg)  # JS splice(-1, 0, x)
        return
    if idx == -1:
        idx = len(segments)
    segments.insert(idx, seg)
    if idx + 1 < len(segments):
        nxt = segments[idx + 1]
        if seg["addr"] + seg["size"] == nxt["addr"] and seg["stream"] == nxt["stream"]:
            seg["size"] += nxt["size"]
            del segments[idx + 1]
    if idx > 0:
        prev = segments[idx - 1]
        if prev["addr"] + prev["size"] == seg["addr"] and prev["stream"] == seg["stream"]:
            prev["size"] += seg["size"]
            del segments[idx]


def unmap_segment(segments, merge, seg):
    """MemoryView's unmap_segment: take seg away; a range (merge) is cut out of the segment
    holding it. False where the viewer would find none (its findIndex gives -1)."""
    if not merge:
        idx = [k for k, x in enumerate(segments) if x["addr"] == seg["addr"]]
        if not idx:
            return False
        segments.pop(idx[0])
        return True
    end = seg["addr"] + seg["size"]
    idx = [k for k, x in enumerate(segments) if x["addr"] <= seg["addr"] and end <= x["addr"] + x["size"]]
    if not idx:
        return False
    ex = segments[idx[0]]
    ex_end = ex["addr"] + ex["size"]
    if ex["addr"] == seg["addr"]:
        ex["addr"] += seg["size"]
        ex["size"] -= seg["size"]
        if ex["size"] == 0:
            segments.pop(idx[0])
    elif ex_end == end:
        ex["size"] -= seg["size"]
    else:
        ex["size"] = seg["addr"] - ex["addr"]
        segments.insert(idx[0] + 1, {"addr": end, "size": ex_end - end, "stream": seg["stream"]})
    return True


def replay_history(snapshot, device):
    """MemoryView: undo events from the end down to each index; every block must lie in a segment."""
    segments = sorted(({"addr": s["address"], "size": s["total_size"], "stream": s["stream"]}
                       for s in snapshot["segments"] if s["device"] == device), key=lambda s: s["addr"])
    blocks = {}
    for s in snapshot["segments"]:
        if s["device"] != device:
            continue
        for b in s["blocks"]:
            if b["state"] in ("active_pending_free", "active_allocated"):
                blocks[b["addr"]] = {"addr": b["addr"], "size": b["size"], "free_requested": False}
    events = snapshot["device_traces"][device]

    def check(idx):
        by_addr = sorted(segments, key=lambda s: s["addr"])
        for b in blocks.values():
            lo, hi, found = 0, len(by_addr) - 1, None
            while lo <= hi:
                mid = (lo + hi) // 2
                s = by_addr[mid]
                if b["addr"] < s["addr"]:
                    hi = mid - 1
                elif b["addr"] >= s["addr"] + s["size"]:
                    lo = mid + 1
                else:
                    found = s
                    break
            if found is None:
                err("history of device %d at event %d: block %#x is in no segment" % (device, idx, b["addr"]))
                return False
        return True

    if not check(len(events) - 1):
        return
    for i in range(len(events) - 1, 0, -1):  # undo event i, giving the state at i - 1
        e = events[i]
        a = e["action"]
        if a == "free":
            blocks[e["addr"]] = {"addr": e["addr"], "size": e["size"], "free_requested": False}
        elif a == "free_requested":
            if e["addr"] not in blocks:
                err("history of device %d: free_requested of unknown block %#x" % (device, e["addr"]))
                return
            blocks[e["addr"]]["free_requested"] = False
        elif a == "free_completed":
            blocks[e["addr"]] = {"addr": e["addr"], "size": e["size"], "free_requested": True}
        elif a == "alloc":
            blocks.pop(e["addr"], None)
        elif a in ("segment_free", "segment_unmap"):
            map_segment(segments, a == "segment_unmap",
                        {"addr": e["addr"], "size": e["size"], "stream": e["stream"]})
        elif a in ("segment_alloc", "segment_map"):
            if not unmap_segment(segments, a == "segment_map",
                                 {"addr": e["addr"], "size": e["size"], "stream": e["stream"]}):
                err("history of device %d: %s of unknown segment %#x" % (device, a, e["addr"]))
                return
        if not check(i - 1):
            return


def check_annotations(data):
    anns = data.get("external_annotations")
    if not isinstance(anns, list):
        err("external_annotations is not a list")
        return []
    overflowed = (data.get("allocator_settings") or {}).get("external_annotations_overflowed", False)
    last, open_ = None, {}
    for i, a in enumerate(anns):
        if not isinstance(a, dict) or sorted(a) != ["device", "name", "stage", "time_us"]:
            err("external_annotations[%d] is not {name, stage, device, time_us}: %r" % (i, a))
            continue
        if not isinstance(a["name"], str) or a["stage"] not in ("START", "END") or \
                not isinstance(a["device"], int) or a["device"] < 0 or not isinstance(a["time_us"], int):
            err("external_annotations[%d]: bad values %r" % (i, a))
            continue
        if last is not None and a["time_us"] < last:
            err("external_annotations[%d]: time_us %d before %d" % (i, a["time_us"], last))
        last = a["time_us"]
        n = open_.get(a["name"], 0) + (1 if a["stage"] == "START" else -1)
        if n < 0 and not overflowed:
            err("external_annotations[%d]: END of %r without a START" % (i, a["name"]))
        open_[a["name"]] = max(n, 0)
    for name, n in sorted(open_.items()):
        if n:
            err("external_annotations: %d START of %r without an END" % (n, name))
    return [[a.get("name"), a.get("stage"), a.get("device"), a.get("time_us")] for a in anns if isinstance(a, dict)]


def main():
    raw = open(sys.argv[1], "rb").read()
    check_opcodes(raw)
    data = pickle.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list) or \
            not isinstance(data.get("device_traces"), list):
        err("not a snapshot dict with segments and device_traces")
    else:
        for seg in data["segments"]:
            for k, t in (("device", int), ("address", int), ("total_size", int), ("allocated_size", int),
                         ("active_size", int), ("requested_size", int), ("stream", int),
                         ("segment_type", str), ("segment_pool_id", tuple), ("is_expandable", bool),
                         ("frames", list), ("blocks", list)):
                if not isinstance(seg.get(k), t):
                    err("segment %r: %s is not %s" % (seg.get("address"), k, t.__name__))
            for b in seg.get("blocks", []):
                for k, t in (("address", int), ("size", int), ("requested_size", int), ("state", str),
                             ("frames", list)):
                    if not isinstance(b.get(k), t):
                        err("block %r: %s is not %s" % (b.get("address"), k, t.__name__))
        for d, trace in enumerate(data["device_traces"]):
            if not isinstance(trace, list):
                err("device_traces[%d] is not a list" % d)
                continue
            for e in trace:
                key = "device_free" if e.get("action") == "oom" else "addr"
                for k, t in (("action", str), (key, int), ("size", int), ("stream", int),
                             ("frames", list), ("time_us", int)):
                    if not isinstance(e.get(k), t):
                        err("device %d entry %r: %s is not %s" % (d, e.get("action"), k, t.__name__))
        for frames in [s["frames"] for s in data["segments"]] + \
                [b["frames"] for s in data["segments"] for b in s["blocks"]] + \
                [e["frames"] for t in data["device_traces"] for e in t]:
            for f in frames:
                if not (isinstance(f.get("filename"), str) and isinstance(f.get("line"), int) and
                        isinstance(f.get("name"), str)):
                    err("frame %r lacks filename/line/name" % (f,))
        annotations = check_annotations(data)
    exit_on_errors("memviz")
    seg_text = segments_lines(data)
    memory_lines(data)
    reserved, allocated = segsum(data)
    trace_text(data)
    ann = annotate(data)
    views = {}
    for dev in range(len(ann["device_traces"])):
        views[dev] = {"blocks": process_alloc_data(ann, dev, False),
                      "segments": process_alloc_data(ann, dev, True)}
        replay_history(ann, dev)
    pickle.dumps(data)  # what _format_viz does first
    exit_on_errors("memviz")
    summary = {
        "segments": len(data["segments"]),
        "segment_bytes": reserved,
        "allocated_bytes": allocated,
        "segments_by_device": {},
        "actions": [{} for _ in data["device_traces"]],
        "ooms": [[e["size"] for e in t if e["action"] == "oom"] for t in data["device_traces"]],
        "views": {str(d): v for d, v in views.items()},
        "flamegraph_lines": len(seg_text.splitlines()),
        "block_frames": sorted({";".join(f["name"] for f in b["frames"])
                                for s in data["segments"] for b in s["blocks"]}),
        "allocator_settings": data.get("allocator_settings"),
        "annotations": annotations,
        "trace_times": [[[e["action"], e["time_us"]] for e in t] for t in data["device_traces"]],
    }
    for s in data["segments"]:
        d = summary["segments_by_device"].setdefault(str(s["device"]), [0, 0])
        d[0] += 1
        d[1] += s["total_size"]
    for d, t in enumerate(data["device_traces"]):
        for e in t:
            summary["actions"][d][e["action"]] = summary["actions"][d].get(e["action"], 0) + 1
    write_summary(summary, sys.argv[2] if len(sys.argv) > 2 else None)


main()
