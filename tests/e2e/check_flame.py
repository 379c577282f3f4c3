#!/usr/bin/env python3
"""Check the output of `cumtrace-report flamegraph`.

    check_flame.py folded FILE [SUMMARY.json]
    check_flame.py speedscope FILE [SUMMARY.json]

Exits 1 with one line per violation, else writes a summary (JSON): the
total, the bytes per stack ("root;...;leaf", as a folded line reads), the
same by function ("by_function": frames reduced to their function, as the
folded output shows native frames), and each profile's samples in their
order ("order": the leaf's caller and the bytes, speedscope), so that a test
can compare the two formats and the report's totals.

folded (flamegraph.pl's input): every line is "frame;...;frame VALUE" with a
positive integer value, no empty frame, no control character.

speedscope: valid against speedscope's own schema (tests/data/speedscope-
file-format-schema.json, from the npm package speedscope 1.25.0, through
tests/schemas.py; a note on stderr, not a failure, where no jsonschema
module can be had); plus what the importer relies on: as many weights as
samples, every frame index in range, positive weights, and endValue -
startValue equal to the sum of the weights; a frame's line and col, when
present, whole numbers from 1.
"""
import json
import os
import re
import sys
from collections import defaultdict

from exportcheck import err, exit_on_errors, write_summary

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import schemas  # noqa: E402  (tests/schemas.py)

# a Python frame of the folded output: "function (file:line)"
PY_FRAME = re.compile(r"(.*) \((.*):([0-9]+)\)")


def by_function(stacks):
    """The stacks with each Python frame's " (file:line)" dropped, bytes summed."""
    out = defaultdict(int)
    for stack, v in stacks.items():
        out[";".join(PY_FRAME.sub(r"\1", f) if PY_FRAME.fullmatch(f) else f
                     for f in stack.split(";"))] += v
    return dict(out)


def folded(path):
    stacks = defaultdict(int)
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        m = re.fullmatch(r"(.+) ([0-9]+)\n", line)
        if not m:
            err("line %d is not 'stack value': %r" % (n, line))
            continue
        stack, value = m.group(1), int(m.group(2))
        if value <= 0:
            err("line %d: value %d" % (n, value))
        frames = stack.split(";")
        if any(not f for f in frames):
            err("line %d: empty frame" % n)
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in stack):
            err("line %d: control character" % n)
        if stack in stacks:
            err("line %d: stack repeated (folded output sums equal stacks)" % n)
        stacks[stack] += value
    return [{"name": "folded", "total": sum(stacks.values()), "stacks": dict(stacks),
             "by_function": by_function(stacks)}]


def speedscope(path):
    doc = json.load(open(path, encoding="utf-8"))
    rc, lines = schemas.validate("speedscope", path)
    if rc == schemas.NO_JSONSCHEMA:
        sys.stderr.write("\n".join(lines) + "\n")
    elif rc:
        for line in lines:
            err(line)
        return []
    frames = doc["shared"]["frames"]
    for i, f in enumerate(frames):
        for k in ("line", "col"):
            if k in f and (not isinstance(f[k], int) or isinstance(f[k], bool) or f[k] < 1):
                err("frame %d: %s %r" % (i, k, f[k]))

    def label(f):
        return "%s (%s:%d)" % (f["name"], f.get("file", "?"), f["line"]) if "line" in f else f["name"]

    profiles = []
    for i, p in enumerate(doc["profiles"]):
        if p["type"] != "sampled":
            err("profile %d is not sampled" % i)
            continue
        if p["unit"] != "bytes":
            err("profile %d unit %s" % (i, p["unit"]))
        if len(p["samples"]) != len(p["weights"]):
            err("profile %d: %d samples, %d weights" % (i, len(p["samples"]), len(p["weights"])))
        stacks, functions, order = defaultdict(int), defaultdict(int), []
        for s, w in zip(p["samples"], p["weights"]):
            if w <= 0 or any(not isinstance(x, int) or x < 0 or x >= len(frames) for x in s):
                err("profile %d: bad sample %r weight %r" % (i, s, w))
                continue
            stacks[";".join(label(frames[x]) for x in s)] += w
            functions[";".join(frames[x]["name"] for x in s)] += w
            order.append([frames[s[-2]]["name"] if len(s) > 1 else "", w])
        total = sum(p["weights"])
        if p["endValue"] - p["startValue"] != total:
            err("profile %d: endValue - startValue %s != sum of weights %s" %
                (i, p["endValue"] - p["startValue"], total))
        profiles.append({"name": p["name"], "total": total, "stacks": dict(stacks),
                         "by_function": dict(functions), "order": order})
    if doc.get("activeProfileIndex", 0) >= max(1, len(doc["profiles"])):
        err("activeProfileIndex out of range")
    return profiles


def main():
    kind, path = sys.argv[1], sys.argv[2]
    profiles = folded(path) if kind == "folded" else speedscope(path)
    exit_on_errors("flame")
    summary = {"total": sum(p["total"] for p in profiles), "profiles": profiles}
    write_summary(summary, sys.argv[3] if len(sys.argv) > 3 else None)


main()
