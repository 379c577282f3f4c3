#!/usr/bin/env python3
"""Where the traced training loop's time goes in the shim, per allocator mode: the loop of
fw_overhead.py (mlp4096) run untraced, then traced with the framework layer on and off under
CUMTRACE_SELFTIME=1, which makes the shim add up its own time in every call that takes stacks
(from the real call's return to the end of the recording: native stack, Python frames, the
record) and print it at exit. Unlike steps/s ratios, these figures do not move with the GPU's
queue or the machine's other work.

usage: python3 tests/gpu/fw_selftime.py --kit gpu-kit --out DIR [--modes M,...] [--steps N]

Prints per mode and configuration: calls with stacks per step, ns per call in the shim (and
its parts), us per step, and that time as a share of the untraced step. The counts include the
warm-up and the model's set-up (30 + N steps are run; with N = 300 the set-up's few calls do
not move the per-step figures). Time outside those calls (frees, the writer thread) is not in
it: the A/B steps/s runs (fw_overhead_ab.py) measure everything together.

A "steady" line (shims from 2026-12-05 on) gives the same for the calls whose native and Python
stacks were both known and which wrote nothing but the event: what a long run pays per call.
The means above also hold each place's first calls (a libunwind unwind, interning, new string
records: tens of microseconds each), which a run of a few hundred steps does not amortize.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fw_overhead import MODEL, MODES, child_env  # noqa: E402

CHILD = r'''
import json, resource, sys, time, torch
steps = int(sys.argv[1])
model_name = "mlp4096"
''' + MODEL + r'''
for _ in range(30):
    step()
torch.cuda.synchronize()
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
for _ in range(steps):
    step()
torch.cuda.synchronize()
secs = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
# what the kernel did to the process over the timed steps: page faults, context switches
usage = {k: getattr(r1, k) - getattr(r0, k) for k in ("ru_minflt", "ru_majflt", "ru_nvcsw", "ru_nivcsw")}
usage["cpu_s"] = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
print("RESULT " + json.dumps({"steps": steps, "secs": secs, "usage": usage}), flush=True)
'''

SELF = re.compile(r"self time: (\d+) calls with stacks, per call (\d+) ns in the shim after the real "
                  r"call \(native stack (\d+), Python frames (\d+), record (\d+)\), real call (\d+) ns; "
                  r"stacks: (\d+) unwound, (\d+) known to the stack cache")
# the inner parts (shims from 2026-12-05 on): cache hits and their lookup and checks, Python walks
# and their thread state and frames
PARTS = re.compile(r"parts: (\d+) cache hits \(lookup (\d+) ns, checks (\d+) ns\), (\d+) Python walks "
                   r"\(thread state (\d+) ns, frames to their key (\d+) ns\)")
# the steady calls (shims from 2026-12-05 on): both stacks known, nothing new written. The means
# above include each place's first calls (unwinding, interning, new strings), paid once: in a
# run of a few hundred steps they weigh on them; a long training run pays the steady figure.
# walks that found no frame (shims from stop 23 on: torch's autograd threads keep a thread state
# without frames), then those found in the memo
MEMO = re.compile(r"frames to their key \d+ ns\), (?:(\d+) with no frame, )?"
                  r"(?:(\d+) found by code pointers alone, )?(\d+) found in the memo"
                  r"(?:, (\d+) not walked)?")
# how the Python thread state was found, and what one of the marks' clock reads costs (shims from
# stop 24 on): every part of a timed call ends with one, about eight in a steady call's figures
CLOCK = re.compile(r"Python thread state ([^;]*); clock reads \(([^)]*)\) (\d+) ns each")
STEADY = re.compile(r"steady \(stacks known, nothing new written\): (\d+) calls, per call (\d+) ns "
                    r"\(native stack (\d+), Python frames (\d+), record (\d+)\)")
# the steady calls apart (shims from stop 30 on): those with Python frames (the memo's), those
# without (no thread state, or one without frames: torch's autograd thread, on whose critical path
# the backward pass's allocations lie)
FRAMED = re.compile(r"steady with Python frames: (\d+) calls, per call (\d+) ns \(native stack (\d+), "
                    r"Python frames (\d+), record (\d+)\), without: (\d+) calls, per call (\d+) ns "
                    r"\(native stack (\d+), Python (\d+), record (\d+)\)")


def run(args, script, mode, traced, layer):
    env = child_env(args, mode, traced, layer, "selftime")
    if traced:
        env["CUMTRACE_SELFTIME"] = "1"
    cmd = [sys.executable, script, str(args.steps)]
    if args.cpus:
        cmd = ["taskset", "-c", args.cpus] + cmd
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    res = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
    m = SELF.search(p.stderr)
    if res is None or (traced and m is None):
        print("FAIL %s %s: rc %d %s" % (mode, "traced" if traced else "untraced", p.returncode,
                                        p.stderr[-400:]))
        return None
    if m:
        res["self"] = [int(x) for x in m.groups()]
    parts = PARTS.search(p.stderr)
    if parts:
        res["parts"] = [int(x) for x in parts.groups()]
    memo = MEMO.search(p.stderr)
    if memo:
        res["memo"] = int(memo.group(3))
        if memo.group(1) is not None:
            res["noframe"] = int(memo.group(1))
        if memo.group(2) is not None:
            res["quick"] = int(memo.group(2))
        # shims from stop 32 on: calls whose whole native stack lies outside the interpreter
        if memo.group(4) is not None:
            res["nowalk"] = int(memo.group(4))
    clock = CLOCK.search(p.stderr)
    if clock:
        res["clock"] = [clock.group(1), clock.group(2), int(clock.group(3))]
    steady = STEADY.search(p.stderr)
    if steady:
        res["steady"] = [int(x) for x in steady.groups()]
    framed = FRAMED.search(p.stderr)
    if framed:
        res["framed"] = [int(x) for x in framed.groups()]
    return res


def print_usage(mode, name, res):
    """What the kernel did to a process over its timed steps (res["usage"]), when it says."""
    u = res.get("usage")
    if u:
        print("%-11s %-7s timed steps: %.2f s CPU in %.2f s, minor faults %d, major %d, "
              "context switches %d voluntary, %d involuntary"
              % (mode, name, u["cpu_s"], res["secs"], u["ru_minflt"], u["ru_majflt"], u["ru_nvcsw"],
                 u["ru_nivcsw"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--modes", default="default,expandable,async,nocache")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--cpus", default=os.environ.get("OVH_CPUS", ""))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "selftime_child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    raw = {}
    fails = 0  # processes that failed (a FAIL line each)
    print("mode        config  steps/s  calls/step  ns/call in shim (stack, Python, record)  "
          "real ns/call  shim us/step  share of untraced step")
    for mode in args.modes.split(","):
        base = run(args, script, mode, False, False)
        raw[mode] = {"untraced": base}
        if not base:
            fails += 1
            continue
        step_us = base["secs"] / base["steps"] * 1e6
        print("%-11s untraced %7.1f" % (mode, base["steps"] / base["secs"]))
        print_usage(mode, "untraced", base)
        for name, layer in (("on", True), ("off", False)):
            r = run(args, script, mode, True, layer)
            raw[mode][name] = r
            if not r:
                fails += 1
                continue
            calls, per, st, py, rec, real, unwound, known = r["self"]
            per_step = calls / (r["steps"] + 30)
            us = per_step * per / 1000.0
            print("%-11s %-7s %7.1f  %10.1f  %5d (%d, %d, %d)  %27d  %12.1f  %6.2f%%   "
                  "stacks unwound %.1f%%, id from the stack cache %.1f%%"
                  % (mode, name, r["steps"] / r["secs"], per_step, per, st, py, rec, real, us,
                     100.0 * us / step_us, 100.0 * unwound / calls, 100.0 * known / calls))
            if "parts" in r:
                hits, look, checks, walks, pyst, pywalk = r["parts"]
                print("%-11s %-7s parts: %d cache hits (lookup %d ns, checks %d ns), %d Python walks "
                      "(thread state %d ns, frames %d ns)" % (mode, name, hits, look, checks, walks, pyst,
                                                             pywalk)
                      + (", %d with no frame" % r["noframe"] if "noframe" in r else "")
                      + (", %d by code pointers alone" % r["quick"] if "quick" in r else "")
                      + (", %d found in the memo" % r["memo"] if "memo" in r else "")
                      + (", %d not walked" % r["nowalk"] if "nowalk" in r else ""))
            if "steady" in r:
                n, sper, sst, spy, srec = r["steady"]
                sus = per_step * sper / 1000.0
                print("%-11s %-7s steady: %d of %d calls (%.1f%%), %d ns a call (%d, %d, %d): %.1f us "
                      "a step, %.2f%% of the untraced step" % (mode, name, n, calls, 100.0 * n / calls,
                                                              sper, sst, spy, srec, sus,
                                                              100.0 * sus / step_us))
                if "framed" in r:
                    f = r["framed"]
                    print("%-11s %-7s steady apart: %d with Python frames, %d ns a call (%d, %d, %d); %d "
                          "without (autograd threads), %d ns a call (%d, %d, %d)" % ((mode, name) + tuple(f)))
                if "clock" in r:
                    how, clk, read = r["clock"]
                    less = max(sper - 8 * read, 0)
                    print("%-11s %-7s clock reads (%s) %d ns each: the steady call less eight of them "
                          "%d ns, %.2f%% of the untraced step; thread state %s"
                          % (mode, name, clk, read, less, 100.0 * per_step * less / 1000.0 / step_us,
                             how))
            print_usage(mode, name, r)
    print("RAW " + json.dumps(raw))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
