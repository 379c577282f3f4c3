#!/usr/bin/env python3
"""Issue 16's cost figures, taking turns: per allocator mode, three processes live at once
(untraced, traced with the framework layer on, traced with it off), each warmed up, then ROUNDS
rounds in which each process in turn (the order rotated every round) runs one timed chunk of
CHUNK_S seconds of the training loop while the other two wait idle, off the GPU. What drifts over
the minutes (clocks, temperature, the machine's other work) then falls on the three alike; what
differs between processes (their memory layout) does not go away, so the per-chunk spread and the
per-round ratios are printed beside the medians.

usage: python3 tests/gpu/fw_overhead_ab.py --kit gpu-kit --out DIR [--modes M,...] [--rounds R]
                                           [--chunk-seconds S] [--warmup-seconds W] [--cpus LIST]
Goals (issue 16): on / untraced >= 0.97, off / untraced >= 0.99, as medians of the chunk rates.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from fw_overhead import CONFIGS, MODEL, MODES, child_env

# The training loop of fw_overhead.py (mlp4096), driven chunk by chunk from stdin.
CHILD = r'''
import json, sys, time, torch
chunk_s, warm_s = float(sys.argv[1]), float(sys.argv[2])
model_name = "mlp4096"
''' + MODEL + r'''
def timed(secs):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < secs:
        step()
        k += 1
    torch.cuda.synchronize()
    return k / (time.perf_counter() - t0)

print("STARTED", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "warm":
        for _ in range(30):
            step()
        timed(warm_s)
        print("READY", flush=True)
    elif cmd == "run":
        print("RATE %r" % timed(chunk_s), flush=True)
    else:
        break
'''


def expect(p, word):
    """The child's next line, which must start with word; None when it ended."""
    line = p.stdout.readline()
    if not line.startswith(word):
        return None
    return line[len(word):].strip()


def run_mode(args, script, mode):
    procs = {}
    for key, traced, layer in CONFIGS:
        cmd = [sys.executable, script, str(args.chunk_seconds), str(args.warmup_seconds)]
        if args.cpus:
            cmd = ["taskset", "-c", args.cpus] + cmd
        procs[key] = subprocess.Popen(cmd, env=child_env(args, mode, traced, layer, "ab"), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rates = {k: [] for k in procs}
    try:
        for key, p in procs.items():
            if expect(p, "STARTED") is None:
                raise RuntimeError("%s %s did not start: %s" % (mode, key, p.stderr.read()[-300:]))
        for key, p in procs.items():  # one at a time: the others wait off the GPU
            p.stdin.write("warm\n")
            p.stdin.flush()
            if expect(p, "READY") is None:
                raise RuntimeError("%s %s: warm-up failed: %s" % (mode, key, p.stderr.read()[-300:]))
        keys = [k for k, _, _ in CONFIGS]
        for r in range(args.rounds):
            for i in range(len(keys)):
                key = keys[(i + r) % len(keys)]
                p = procs[key]
                p.stdin.write("run\n")
                p.stdin.flush()
                v = expect(p, "RATE ")
                if v is None:
                    raise RuntimeError("%s %s: chunk failed: %s" % (mode, key, p.stderr.read()[-300:]))
                rates[key].append(float(v))
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
    return rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--chunk-seconds", type=float, default=1.0)
    ap.add_argument("--warmup-seconds", type=float, default=2.0)
    ap.add_argument("--cpus", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "overhead_ab_child.py")
    open(script, "w").write(CHILD)
    fails = 0
    print("%-11s %9s %9s %9s %8s %8s  %s" % ("mode", "untraced", "on", "off", "on", "off",
                                             "(steps/s, medians of the chunks; ratios to untraced)"), flush=True)
    for mode in args.modes.split(","):
        try:
            v = run_mode(args, script, mode)
        except RuntimeError as e:
            print("FAIL %s: %s" % (mode, e), flush=True)
            fails += 1
            continue
        med = {k: statistics.median(x) for k, x in v.items()}
        on, off = med["on"] / med["untraced"], med["off"] / med["untraced"]
        # per round: each configuration against the untraced chunk of the same round
        pr_on = statistics.median(a / u for a, u in zip(v["on"], v["untraced"]))
        pr_off = statistics.median(a / u for a, u in zip(v["off"], v["untraced"]))
        spread = {k: (max(x) - min(x)) / statistics.median(x) for k, x in v.items()}
        ok = on >= 0.97 and off >= 0.99
        fails += not ok
        print("%-11s %9.1f %9.1f %9.1f %8.3f %8.3f  %s  (%d rounds of %.1f s; per-round ratios on %.3f, off %.3f;"
              " chunk spread untraced %.1f%%, on %.1f%%, off %.1f%%)" % (
                  mode, med["untraced"], med["on"], med["off"], on, off, "PASS" if ok else "FAIL", args.rounds,
                  args.chunk_seconds, pr_on, pr_off, 100 * spread["untraced"], 100 * spread["on"],
                  100 * spread["off"]), flush=True)
        print("RAW %s %s" % (mode, json.dumps(v)), flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
