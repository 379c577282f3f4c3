#!/usr/bin/env python3
"""Where the framework layer's cost goes, on a GPU machine: ns per tensor of a mix of torch
ops that each make a new tensor (the allocator's fast path: blocks from its cache; small
kernels), untraced and traced in several configurations, all at the same time, each process
on a CPU of its own (rotated every round), so that what the machine does meanwhile slows
them alike; medians over the rounds.

usage: python3 tests/gpu/fw_cost.py --kit gpu-kit --out DIR [--tensors N] [--rounds R]
           [--cpus 2,4,6,...] [--config NAME=ENV,ENV...]...

Default configurations: untraced; on (the kit's shim, framework layer on); off
(CUMTRACE_TORCH=0); nostack (on, CUMTRACE_STACK_DEPTH=0); nocache (on, CUMTRACE_STACK_CACHE=0).
A --config SHIM=path entry preloads another build of the shim. Prints one line per
configuration: ns per tensor and the difference to untraced, then RAW.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import json, statistics, sys, time, torch
n, chunks = int(sys.argv[1]), int(sys.argv[2])
x = torch.randn(64, 256, device="cuda")
ops = [lambda: torch.empty(4096, device="cuda"), lambda: torch.empty_like(x), lambda: x + 1,
       lambda: x * 2, lambda: x.clone(), lambda: torch.cat([x, x]), lambda: x.t().contiguous(),
       lambda: x.sum(0), lambda: x.relu(), lambda: torch.sigmoid(x), lambda: x.pow(2),
       lambda: x.new_zeros(128), lambda: x[:, :64].contiguous(), lambda: torch.stack([x, x]),
       lambda: x.mean(1), lambda: torch.where(x > 0, x, x * 0.5)]
def run(k):
    keep = []
    for i in range(k):
        keep.append(ops[i % len(ops)]())
        if len(keep) > 32:
            keep.clear()
for _ in range(3):
    run(2000)
torch.cuda.synchronize()
rates = []
for _ in range(chunks):
    t0 = time.perf_counter()
    run(n)
    torch.cuda.synchronize()
    rates.append((time.perf_counter() - t0) / n * 1e9)
print("RESULT " + json.dumps({"ns": statistics.median(rates), "chunks": rates}), flush=True)
'''


def main():
    ap = argparse.ArgumentParser()
    for name, kw in (("--kit", {"required": True}), ("--out", {"required": True}),
                     ("--tensors", {"type": int, "default": 20000}), ("--chunks", {"type": int, "default": 5}),
                     ("--rounds", {"type": int, "default": 3}), ("--cpus", {"default": "2,4,6,8,10,12"}),
                     ("--config", {"action": "append", "default": []})):
        ap.add_argument(name, **kw)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kit = os.path.abspath(args.kit)
    configs = [("untraced", None), ("on", {}), ("off", {"CUMTRACE_TORCH": "0"}),
               ("nostack", {"CUMTRACE_STACK_DEPTH": "0"}), ("nocache", {"CUMTRACE_STACK_CACHE": "0"})]
    for c in args.config:
        name, _, rest = c.partition("=")
        configs.append((name, dict(kv.split("=", 1) for kv in rest.split(",") if kv)))
    script = os.path.join(args.out, "cost_child.py")
    open(script, "w").write(CHILD)
    cpus = [c for c in args.cpus.split(",") if c]
    v = {name: [] for name, _ in configs}
    for rnd in range(args.rounds):
        procs = []
        for i, (name, extra) in enumerate(configs):
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            if extra is not None:
                env["LD_PRELOAD"] = extra.pop("SHIM", None) if "SHIM" in extra else os.path.join(kit, "libcumtrace.so")
                env["LD_LIBRARY_PATH"] = os.path.join(kit, "lib")
                env["CUMTRACE_OUTPUT"] = os.path.join(args.out, "cost-%s.%%p.dump" % name)
                env.update(extra)
                extra["SHIM"] = env["LD_PRELOAD"]
            cmd = [sys.executable, script, str(args.tensors), str(args.chunks)]
            if cpus:
                cmd = ["taskset", "-c", cpus[(i + rnd) % len(cpus)]] + cmd
            procs.append((name, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 text=True)))
        for name, p in procs:
            out, err = p.communicate(timeout=300)
            r = [json.loads(l[7:]) for l in out.splitlines() if l.startswith("RESULT ")]
            if r:
                v[name].append(r[0]["ns"])
            else:
                print("FAIL %s: rc %d %s" % (name, p.returncode, err[-300:]), flush=True)
    base = statistics.median(v["untraced"]) if v["untraced"] else float("nan")
    for name, _ in configs:
        if v[name]:
            m = statistics.median(v[name])
            print("%-10s %8.0f ns per tensor  %+7.0f vs untraced  (ratio %.3f)" % (name, m, m - base, base / m),
                  flush=True)
    print("RAW " + json.dumps(v), flush=True)


if __name__ == "__main__":
    sys.exit(main())
