#!/usr/bin/env python3
"""Check that the leak and peak sites of a traced training run name its Python lines.

usage: pyframes-check.py LEAKS.json PEAK.json --script PATH --leak-line N --leak-bytes B
                         --lib FRAGMENT

LEAKS.json and PEAK.json: `cumtrace-report leaks|peak --python-only --top 0 --format json`
of one dump. Passes (exit 0) when
  - the planted leak (the sites whose blocks are all B bytes) is found, and the first
    frame of PATH in each of its sites is at line N;
  - some leak site names both PATH and a file whose path contains FRAGMENT (the
    library's own Python code, e.g. "/torch/");
  - some peak site does too.
Prints one line per site (bytes, count, its innermost frame of PATH and of the
library) and one line per check; exits 1 when a check fails, 2 on bad input.
Used by scripts/gpu-pyframes.sh (torch on a GPU) and tests/e2e/t_python_gpucheck.sh
(a stand-in with the fake CUDA runtime).
"""
import argparse
import json
import os
import sys


def python_frames(site):
    return [f for f in site["stack"] if f.get("python")]


def first(frames, pred):
    for f in frames:
        if pred(f.get("file") or ""):
            return f
    return None


def show(f):
    return "%s (%s:%d)" % (f["function"], f["file"], f["line"]) if f else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("leaks")
    ap.add_argument("peak")
    ap.add_argument("--script", required=True)
    ap.add_argument("--leak-line", type=int, required=True)
    ap.add_argument("--leak-bytes", type=int, required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    try:
        leaks = json.load(open(a.leaks))["leaks"]["sites"]
        peak = json.load(open(a.peak))["peak"]["sites"]
    except (OSError, ValueError, KeyError) as e:
        print("pyframes-check: cannot read the reports: %s" % e)
        return 2
    script = os.path.realpath(a.script)

    def is_script(path):
        return path == script or (path and os.path.realpath(path) == script)

    def is_lib(path):
        return a.lib in path

    ok = True

    def check(what, passed):
        nonlocal ok
        print("%s: %s" % ("ok" if passed else "FAIL", what))
        ok = ok and passed

    for name, sites in (("leaks", leaks), ("peak", peak)):
        with_py = [s for s in sites if python_frames(s)]
        print("%s: %d sites, %d with Python frames (%d of %d bytes)" % (
            name, len(sites), len(with_py), sum(s["bytes"] for s in with_py),
            sum(s["bytes"] for s in sites)))
        for s in sites:
            fr = python_frames(s)
            print("  %12d bytes in %5d: script %s; library %s" % (
                s["bytes"], s["count"], show(first(fr, is_script)), show(first(fr, is_lib))))

    planted = [s for s in leaks if s["count"] and s["bytes"] == s["count"] * a.leak_bytes]
    check("the planted leak (%d-byte blocks) is in %d site(s), %d blocks" % (
        a.leak_bytes, len(planted), sum(s["count"] for s in planted)), bool(planted))
    for s in planted:
        f = first(python_frames(s), is_script)
        check("planted leak site names %s:%d (got %s)" % (a.script, a.leak_line, show(f)),
              f is not None and f["line"] == a.leak_line)
    for name, sites in (("leak", leaks), ("peak", peak)):
        both = [s for s in sites
                if first(python_frames(s), is_script) and first(python_frames(s), is_lib)]
        check("%d %s site(s) name both %s and %s" % (len(both), name, a.script, a.lib),
              bool(both))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
