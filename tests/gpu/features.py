#!/usr/bin/env python3
"""The perf and features parts of scripts/gpu-validate.sh as two tables.

usage: features.py RAW_DIR FEATURES_DIR TRAIN_PY

RAW_DIR holds each step's TAG.step / TAG.out / TAG.err (run_step); FEATURES_DIR what
the feature checks wrote (pyframes.txt, oom lines, exports/, leak-classes.txt,
torch-MODE.{html,perfetto.json,leaks.json,leaks.txt}). Prints:

  overhead: figure | untraced | traced | ratio | goal | met   (medians of the reps)
  features: check | expected | got | match

Every figure is read from the programs' own output (steps_per_s in GROUND_TRUTH,
ASYNC_LOOP); nothing is assumed. A missing step gives n/a.
"""
import glob
import json
import os
import re
import statistics
import sys


def step(raw, tag):
    """(rc, seconds, status) of a step, None when it did not run."""
    try:
        parts = open(os.path.join(raw, tag + ".step")).read().strip().split("\t")
    except OSError:
        return None
    return parts[1], parts[2], parts[3] if len(parts) > 3 else ""


def line_json(raw, tag, prefix):
    try:
        for line in open(os.path.join(raw, tag + ".out"), errors="replace"):
            if line.startswith(prefix + " "):
                return json.loads(line[len(prefix) + 1:])
    except (OSError, ValueError):
        pass
    return None


def rate(raw, tag):
    """Steps per second a run printed (train.py's GROUND_TRUTH, async_loop's ASYNC_LOOP)."""
    for prefix in ("GROUND_TRUTH", "ASYNC_LOOP"):
        j = line_json(raw, tag, prefix)
        if j and j.get("steps_per_s"):
            return float(j["steps_per_s"])
    return None


def median_rate(raw, pattern):
    vals = [r for r in (rate(raw, os.path.basename(p)[:-5])
                        for p in sorted(glob.glob(os.path.join(raw, pattern + ".step")))) if r]
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def fmt(v, digits=3):
    return "n/a" if v is None else f"{v:.{digits}f}"


def overhead(raw):
    rows = []

    def add(name, plain, traced, goal=None, note=""):
        ratio = traced / plain if plain and traced else None
        met = "n/a" if ratio is None or goal is None else ("yes" if ratio >= goal else "no")
        rows.append((name, fmt(plain, 2), fmt(traced, 2), fmt(ratio), f">= {goal}" if goal else "-",
                     met, note))

    p, n1 = median_rate(raw, "perf.async.plain.*")
    t, n2 = median_rate(raw, "perf.async.traced.*")
    add("cudaMallocAsync loop, steps/s", p, t, 0.95, f"median of {n1}/{n2} runs")
    for mode, goal in (("default", 0.99), ("nocache", 0.97)):
        p, n1 = median_rate(raw, f"perf.resnet.{mode}.plain.*")
        t, n2 = median_rate(raw, f"perf.resnet.{mode}.traced.*")
        add(f"ResNet-50 training ({mode}), steps/s, cumtrace", p, t, goal,
            f"median of {n1}/{n2} runs")
    p, _ = median_rate(raw, "perf.resnet.default.plain.*")
    add("ResNet-50 (default), torch _record_memory_history(stacks='all')", p,
        rate(raw, "perf.resnet.default.history"), None, "one run")
    add("ResNet-50 (default), compute-sanitizer --leak-check full", p,
        rate(raw, "perf.resnet.default.sanitizer"), None, "one run, 5 steps")
    return rows


def features(raw, feat, train):
    rows = []

    def add(check, expected, got, ok):
        rows.append((check, str(expected), str(got), "n/a" if ok is None else ("yes" if ok else "no")))

    st = step(raw, "feat.pyframes")
    add("Python frames on torch (scripts/gpu-pyframes.sh)", "exit 0",
        "n/a" if not st else f"exit {st[0]}", None if not st else st[0] == "0")
    st = step(raw, "feat.oom")
    lines = []
    try:
        lines = [l.strip() for l in open(os.path.join(raw, "feat.oom.out")) if l.startswith(("PASS", "FAIL"))]
    except OSError:
        pass
    npass = sum(l.startswith("PASS") for l in lines)
    add("OOM report on the real driver (scripts/gpu-oom.sh)", "all PASS",
        f"{npass} PASS, {len(lines) - npass} FAIL" if lines else "n/a",
        None if not lines else npass == len(lines))
    st = step(raw, "feat.exports")
    add("exports checked by torch's _memory_viz (tests/gpu/exports_check.sh)", "exit 0",
        "n/a" if not st else f"exit {st[0]}", None if not st else st[0] == "0")
    st = step(raw, "feat.leak-classes")
    add("leak classes and growth (scripts/gpu-leak-classes.sh)", "exit 0",
        "n/a" if not st else f"exit {st[0]}", None if not st else st[0] == "0")

    st = step(raw, "feat.ranks")
    add("torchrun, 2 ranks, merged reports (scripts/gpu-ranks.sh)", "exit 0",
        "n/a" if not st else f"exit {st[0]}", None if not st else st[0] == "0")

    leak_line = None
    try:
        for i, l in enumerate(open(train), 1):
            if "LEAK_LINE" in l:
                leak_line = i
    except OSError:
        pass
    for mode in ("default", "expandable", "async", "nocache"):
        html = os.path.join(feat, f"torch-{mode}.html")
        try:
            text = open(html, errors="replace").read()
            ok = "<svg" in text and "</html>" in text and not re.search(r'(src|href)="https?:', text)
            got = f"{len(text)} bytes, svg {'yes' if '<svg' in text else 'no'}"
        except OSError:
            ok, got = None, "n/a"
        add(f"torch {mode}: HTML report (self-contained, with SVG)", "written", got, ok)
        try:
            tr = json.load(open(os.path.join(feat, f"torch-{mode}.perfetto.json")))
            ev = tr.get("traceEvents", [])
            counters = sum(e.get("ph") == "C" for e in ev)
            slices = sum(e.get("ph") == "b" for e in ev)
            nvtx = sum(e.get("ph") == "B" for e in ev)
            add(f"torch {mode}: Perfetto trace", "counters, slices, NVTX steps",
                f"{counters} C, {slices} b, {nvtx} B", counters > 0 and slices > 0 and nvtx > 0)
        except (OSError, ValueError):
            add(f"torch {mode}: Perfetto trace", "counters, slices, NVTX steps", "n/a", None)
        try:
            lk = json.load(open(os.path.join(feat, f"torch-{mode}.leaks.json")))["leaks"]
            classes = lk.get("classes", {})
            leaked = classes.get("leaked", {}).get("sites")
            add(f"torch {mode}: leak sites classed leaked (user code)", 0, leaked, leaked == 0)
            sites = (lk.get("growth") or {}).get("sites", [])
            hit = [s for s in sites if any(f.get("python") and str(f.get("file", "")).endswith("train.py")
                                           and f.get("line") == leak_line for f in s.get("stack", []))]
            add(f"torch {mode}: planted list leak found as growth at train.py:{leak_line}", ">= 1 site",
                f"{len(hit)} of {len(sites)} growth sites", len(hit) >= 1)
        except (OSError, ValueError, KeyError, TypeError):
            add(f"torch {mode}: leak classes / growth", "report", "n/a", None)
    return rows


def table(title, head, rows):
    out = [title]
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    out.append("  ".join(str(h).ljust(w[i]) for i, h in enumerate(head)))
    for r in rows:
        out.append("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))
    return "\n".join(out)


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    raw, feat, train = sys.argv[1:]
    print(table("overhead (traced / untraced, same machine, same run)",
                ("figure", "untraced", "traced", "ratio", "goal", "met", "note"), overhead(raw)))
    print()
    rows = features(raw, feat, train)
    print(table("features on real CUDA", ("check", "expected", "got", "match"), rows))
    bad = [r for r in rows if r[3] == "no"]
    print(f"\nSUMMARY: {len(rows) - len(bad)} of {len(rows)} feature checks not failed; failed: "
          + (", ".join(r[0] for r in bad) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
