#!/usr/bin/env python3
"""Check the output of `cumtrace-report flamegraph`.

    check_flame.py folded FILE [SUMMARY.json]
    check_flame.py speedscope FILE [SUMMARY.json]

Exits 1 with one line per violation, else writes a summary (JSON): the
total, and the bytes per stack ("root;...;leaf", as a folded line reads),
so that a test can compare the two formats and the report's totals.

folded (flamegraph.pl's input): every line is "frame;...;frame VALUE" with a
positive integer value, no empty frame, no control character.

speedscope: validated against the required properties, types and enums of
https://www.speedscope.app/file-format-schema.json (FileFormat.File,
FileFormat.Frame, FileFormat.SampledProfile, FileFormat.ValueUnit, as in
jlfwong/speedscope src/lib/file-format-spec.ts), restated below; plus what
the importer relies on: as many weights as samples, every frame index in
range, and endValue - startValue equal to the sum of the weights.
"""
import json
import re
import sys
from collections import defaultdict

from exportcheck import err, exit_on_errors, write_summary

# The schema's definitions used by a sampled profile file.
NUMBER = {"type": "number"}
SCHEMA = {
    "File": {
        "type": "object",
        "required": ["$schema", "profiles", "shared"],
        "properties": {
            "$schema": {"type": "string", "const": "https://www.speedscope.app/file-format-schema.json"},
            "activeProfileIndex": NUMBER,
            "exporter": {"type": "string"},
            "name": {"type": "string"},
            "profiles": {"type": "array", "items": {"anyOf": [{"$ref": "EventedProfile"},
                                                              {"$ref": "SampledProfile"}]}},
            "shared": {"type": "object", "required": ["frames"],
                       "properties": {"frames": {"type": "array", "items": {"$ref": "Frame"}}}},
        },
    },
    "Frame": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "file": {"type": "string"}, "line": NUMBER, "col": NUMBER},
    },
    "SampledProfile": {
        "type": "object",
        "required": ["endValue", "name", "samples", "startValue", "type", "unit", "weights"],
        "properties": {
            "endValue": NUMBER, "name": {"type": "string"},
            "samples": {"type": "array", "items": {"type": "array", "items": NUMBER}},
            "startValue": NUMBER, "type": {"type": "string", "const": "sampled"},
            "unit": {"$ref": "ValueUnit"}, "weights": {"type": "array", "items": NUMBER},
        },
    },
    "EventedProfile": {
        "type": "object",
        "required": ["endValue", "events", "name", "startValue", "type", "unit"],
        "properties": {"type": {"type": "string", "const": "evented"}},
    },
    "ValueUnit": {"type": "string",
                  "enum": ["bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"]},
}

TYPES = {"object": dict, "array": list, "string": str}


def validate(v, schema, path, out):
    if "$ref" in schema:
        return validate(v, SCHEMA[schema["$ref"]], path, out)
    if "anyOf" in schema:
        for s in schema["anyOf"]:
            sub = []
            validate(v, s, path, sub)
            if not sub:
                return
        out.append("%s matches none of its schemas" % path)
        return
    t = schema.get("type")
    if t == "number":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            out.append("%s is not a number" % path)
            return
    elif t and not isinstance(v, TYPES[t]):
        out.append("%s is not a %s" % (path, t))
        return
    if "const" in schema and v != schema["const"]:
        out.append("%s is not %r" % (path, schema["const"]))
    if "enum" in schema and v not in schema["enum"]:
        out.append("%s is not one of %s" % (path, schema["enum"]))
    for k in schema.get("required", []):
        if k not in v:
            out.append("%s lacks %s" % (path, k))
    for k, s in schema.get("properties", {}).items():
        if isinstance(v, dict) and k in v:
            validate(v[k], s, "%s.%s" % (path, k), out)
    if "items" in schema and isinstance(v, list):
        for i, x in enumerate(v):
            validate(x, schema["items"], "%s[%d]" % (path, i), out)


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
    return [{"name": "folded", "total": sum(stacks.values()), "stacks": dict(stacks)}]


def speedscope(path):
    doc = json.load(open(path, encoding="utf-8"))
    out = []
    validate(doc, SCHEMA["File"], "file", out)
    for m in out:
        err(m)
    if out:
        return []
    frames = doc["shared"]["frames"]

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
        stacks = defaultdict(int)
        for s, w in zip(p["samples"], p["weights"]):
            if w <= 0 or any(not isinstance(x, int) or x < 0 or x >= len(frames) for x in s):
                err("profile %d: bad sample %r weight %r" % (i, s, w))
                continue
            stacks[";".join(label(frames[x]) for x in s)] += w
        total = sum(p["weights"])
        if p["endValue"] - p["startValue"] != total:
            err("profile %d: endValue - startValue %s != sum of weights %s" %
                (i, p["endValue"] - p["startValue"], total))
        profiles.append({"name": p["name"], "total": total, "stacks": dict(stacks)})
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
