#!/usr/bin/env python3
"""Issue 16's cost figures, taking turns: per allocator mode, four processes live at once
(untraced, traced with the framework layer on, traced with it off, and untraced under torch's
torch.cuda.memory._record_memory_history(stacks="python"), not in the cudaMallocAsync mode, which
refuses it), each warmed up, then ROUNDS rounds in which each process in turn (the order rotated
every round) runs PREROLL_S seconds of untimed steps (the GPU's clocks come back up after the
wait) and then one timed chunk of CHUNK_S seconds of the training loop while the others wait
idle, off the GPU. What drifts over the minutes (clocks, temperature, the machine's other work)
then falls on all alike.

Each configuration's figure is the median of its per-round ratios to the untraced chunk of the
same round, with a distribution-free 90% confidence interval of that median (order statistics of
the ratios, binomial ranks). Verdict per goal: PASS when the interval's lower end is at or above
the goal, FAIL when its upper end is below it, INCONCLUSIVE otherwise (the run was too noisy to
tell).

usage: python3 tests/gpu/fw_overhead_ab.py --kit gpu-kit --out DIR [--modes M,...] [--rounds R]
                                           [--chunk-seconds S] [--warmup-seconds W]
                                           [--preroll-seconds P] [--cpus LIST]
Goals (issue 16): on / untraced >= 0.97, off / untraced >= 0.99.

A second line per mode (from 2026-12-05) gives the same ratios of the main thread's CPU time per
step (steps per CPU second): where the loop sets the pace on the CPU, what the shim adds there,
without the waits on the GPU or on the host (a virtual machine's stolen time). A diagnostic, not
a verdict.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

from fw_overhead import CONFIGS, MODEL, MODES, child_env

# The training loop of fw_overhead.py (mlp4096), driven chunk by chunk from stdin.
CHILD = r'''
import json, sys, time, torch
chunk_s, warm_s, preroll_s = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
model_name = "mlp4096"
''' + MODEL + r'''
import os
if os.environ.get("AB_HISTORY") == "1":
    torch.cuda.memory._record_memory_history(stacks="python")
def timed(secs):
    """Steps/s over secs of steps, and the main thread's CPU seconds per step."""
    torch.cuda.synchronize()
    t0, c0 = time.perf_counter(), time.thread_time()
    k = 0
    while time.perf_counter() - t0 < secs:
        step()
        k += 1
    torch.cuda.synchronize()
    return k / (time.perf_counter() - t0), (time.thread_time() - c0) / k

print("STARTED", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "warm":
        for _ in range(30):
            step()
        timed(warm_s)
        print("READY", flush=True)
    elif cmd == "run":
        if preroll_s > 0:
            timed(preroll_s)
        print("RATE %r %r" % timed(chunk_s), flush=True)
    else:
        break
'''


def expect(p, word):
    """The child's next line, which must start with word; None when it ended."""
    line = p.stdout.readline()
    if not line.startswith(word):
        return None
    return line[len(word):].strip()


def ab_configs(mode):
    """(key, traced, framework layer, torch history) of each process of a mode's run."""
    out = [(key, traced, layer, False) for key, traced, layer in CONFIGS]
    if mode != "async":  # cudaMallocAsync refuses _record_memory_history
        out.append(("history", False, False, True))
    return out


def run_mode(args, script, mode):
    procs = {}
    configs = ab_configs(mode)
    for key, traced, layer, history in configs:
        cmd = [sys.executable, script, str(args.chunk_seconds), str(args.warmup_seconds), str(args.preroll_seconds)]
        if args.cpus:
            cmd = ["taskset", "-c", args.cpus] + cmd
        env = child_env(args, mode, traced, layer, "ab")
        env["AB_HISTORY"] = "1" if history else "0"
        procs[key] = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rates = {k: [] for k in procs}
    cpu = {k: [] for k in procs}  # the main thread's CPU seconds per step, chunk by chunk
    try:
        for key, p in procs.items():
            if expect(p, "STARTED") is None:
                raise RuntimeError("%s %s did not start: %s" % (mode, key, p.stderr.read()[-300:]))
        for key, p in procs.items():  # one at a time: the others wait off the GPU
            p.stdin.write("warm\n")
            p.stdin.flush()
            if expect(p, "READY") is None:
                raise RuntimeError("%s %s: warm-up failed: %s" % (mode, key, p.stderr.read()[-300:]))
        keys = [k for k, _, _, _ in configs]
        for r in range(args.rounds):
            for i in range(len(keys)):
                key = keys[(i + r) % len(keys)]
                p = procs[key]
                p.stdin.write("run\n")
                p.stdin.flush()
                v = expect(p, "RATE ")
                if v is None:
                    raise RuntimeError("%s %s: chunk failed: %s" % (mode, key, p.stderr.read()[-300:]))
                rate, per_step = v.split()
                rates[key].append(float(rate))
                cpu[key].append(float(per_step))
    finally:
        for p in procs.values():
            try:
                p.stdin.write("quit\n")
                p.stdin.flush()
            except OSError:
                pass
        for p in procs.values():
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
    return rates, cpu


def ratio_line(v, base, goals):
    """' | key median: ratio [interval] verdict' for each key of goals (key -> goal or None)
    found in v, the ratio being each round's value over base's of the same round; and the number
    of verdicts other than PASS."""
    line, fails = "", 0
    for key, goal in goals:
        if key not in v:
            continue
        m, lo, hi = median_ci([a / u for a, u in zip(v[key], base)])
        v_ = verdict(lo, hi, goal)
        fails += bool(v_) and not v_.startswith(" PASS")
        line += " | %s %.1f: %.3f [%.3f, %.3f]%s" % (key, statistics.median(v[key]), m, lo, hi, v_)
    return line, fails


def verdict(lo, hi, goal):
    """' PASS (goal G)' when the interval [lo, hi] is at or above goal, ' FAIL ...' when below it,
    ' INCONCLUSIVE ...' otherwise; '' without a goal (None)."""
    if goal is None:
        return ""
    v = "PASS" if lo >= goal else "FAIL" if hi < goal else "INCONCLUSIVE"
    return " %s (goal %.2f)" % (v, goal)


def spread_of(v):
    return ", ".join("%s %.1f%%" % (k, 100 * (max(x) - min(x)) / statistics.median(x))
                     for k, x in v.items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--chunk-seconds", type=float, default=1.0)
    ap.add_argument("--warmup-seconds", type=float, default=2.0)
    ap.add_argument("--preroll-seconds", type=float, default=0.5)
    ap.add_argument("--cpus", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "overhead_ab_child.py")
    open(script, "w").write(CHILD)
    fails = 0
    print("per mode: steps/s (medians of the chunks), then each configuration's median per-round ratio to the"
          " untraced chunk of the same round [90%% confidence interval] and the verdict against its goal; %d rounds,"
          " %.1f s chunks after %.1f s untimed" % (args.rounds, args.chunk_seconds, args.preroll_seconds), flush=True)
    for mode in args.modes.split(","):
        try:
            v, cpu = run_mode(args, script, mode)
        except RuntimeError as e:
            print("FAIL %s: %s" % (mode, e), flush=True)
            fails += 1
            continue
        goals = (("on", 0.97), ("off", 0.99), ("history", None))
        line, n = ratio_line(v, v["untraced"], goals)
        fails += n
        print("%-11s untraced %.1f%s | chunk spread %s" % (mode, statistics.median(v["untraced"]), line,
                                                           spread_of(v)), flush=True)
        # The main thread's CPU time per step, as the same ratio (untraced over traced: above 1 is
        # faster): what the shim adds where the loop runs, without the GPU's or the host's waits.
        # A diagnostic beside the steps/s verdicts, not one of the goals.
        steps_per_cpu_s = {k: [1.0 / x for x in xs] for k, xs in cpu.items()}
        line, _ = ratio_line(steps_per_cpu_s, steps_per_cpu_s["untraced"], [(k, None) for k, _ in goals])
        print("%-11s main thread, steps per CPU second: untraced %.1f%s | chunk spread %s"
              % (mode, statistics.median(steps_per_cpu_s["untraced"]), line, spread_of(steps_per_cpu_s)),
              flush=True)
        print("RAW %s %s" % (mode, json.dumps(v)), flush=True)
        print("RAWCPU %s %s" % (mode, json.dumps(cpu)), flush=True)
    return 1 if fails else 0


def ci_rank(n, level=0.90):
    """median_ci's rank k for n values (at least 1) and the confidence its interval then has:
    1 - 2 P(Binomial(n, 1/2) < k), below level when n is too small for it (fewer than 5 at 90%)."""
    k, cum = 0, 0.0
    while k < n:
        p = math.comb(n, k) / 2.0 ** n
        if cum + p > (1 - level) / 2:
            break
        cum += p
        k += 1
    if k == 0:
        return 1, 1 - 2 / 2.0 ** n
    return k, 1 - 2 * cum


def median_ci(xs, level=0.90):
    """The median of xs and a distribution-free confidence interval of it: the order statistics
    x(k) and x(n+1-k), k the largest rank with P(Binomial(n, 1/2) < k) <= (1 - level) / 2."""
    xs = sorted(xs)
    n = len(xs)
    k = ci_rank(n, level)[0]
    return statistics.median(xs), xs[k - 1], xs[n - k]


if __name__ == "__main__":
    sys.exit(main())
