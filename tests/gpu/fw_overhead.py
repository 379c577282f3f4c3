#!/usr/bin/env python3
"""Issue 16's cost figures on a GPU machine: a torch training loop's steps/s traced over
untraced, with the framework layer on and off (CUMTRACE_TORCH=0), in PyTorch's four allocator
modes, beside torch's own torch.cuda.memory._record_memory_history(stacks="python"); and the
cost of one tensor allocation + free (ns) in each configuration.

usage: python3 tests/gpu/fw_overhead.py --kit gpu-kit --out DIR [--steps N] [--chunks C]
                                        [--reps R] [--cpus LIST] [--modes M,...] [--pairs P]
                                        [--model mlp2048|mlp4096]
                                        [--chunk-seconds S] [--warmup-seconds W]

Each measurement is one process: 30 warm-up steps, then C chunks of N timed steps of an MLP
(--model mlp2048: 4 x 2048, fp32, batch 256, Adam: a ~1.5 ms step bound by kernel launches, the
worst case for a cost per tensor; mlp4096: 6 x 4096, bf16, batch 1024, Adam: the GPU sets the
pace, as in real training) that also makes and drops a few small tensors per step, as
data pipelines do; the process's rate is the median of its chunks (a chunk that a machine
hiccup slowed does not move it). Per mode and repetition the three configurations run in an
order rotated by one each repetition (untraced first, then on first, then off first), so that
no configuration always runs first or last; the untraced process then runs C more chunks under
_record_memory_history (not with cudaMallocAsync, which refuses it: nan). With --cpus every
process is pinned to the same CPUs (taskset). The row's figures are the medians over the
repetitions. Goals (issue 16): on / untraced >= 0.97, off / untraced >= 0.99; a row that misses
one says FAIL.

Then, default mode only, P pairs of torch.empty(256 KiB) / del with no kernel in between (the
caching allocator's fast path), untraced, layer on and layer off run at the same time on CPUs of
their own (--pair-cpus, rotated each of --pair-rounds rounds): ns per pair, the difference being
the cost of recording the pair's three tensor events.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

# The training loop the timed processes run (a child script's text: model_name set before it);
# fw_overhead_ab.py runs it too.
MODEL = r'''
torch.manual_seed(0)
# mlp2048: 4 x 2048 fp32, batch 256 (a step of ~1.5 ms, bound by kernel launches: the worst case
# for a per-tensor cost); mlp4096: 6 x 4096 bf16, batch 1024 (GPU_NOTES' training loop: the GPU,
# not the launching thread, sets the pace, as in real training)
width, depth, batch, dtype = (2048, 4, 256, torch.float32) if model_name == "mlp2048" else \
    (4096, 6, 1024, torch.bfloat16)
layers = []
for _ in range(depth):
    layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
model = torch.nn.Sequential(*layers).to("cuda", dtype)
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
x = torch.randn(batch, width, device="cuda", dtype=dtype)

def step():
    opt.zero_grad(set_to_none=True)
    extra = [torch.empty(4096 * (k + 1), device="cuda") for k in range(4)]
    model(x).float().square().mean().backward()
    opt.step()
    del extra

'''

CHILD = r'''
import json, os, statistics, sys, time, torch
steps, chunks, history, what = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
model_name = sys.argv[5] if len(sys.argv) > 5 else "mlp2048"
# seconds per chunk and of warm-up: when > 0 a chunk runs whole steps until that long has passed
# (the rate is then steps / seconds of that chunk, synchronized at both ends)
chunk_s = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
warm_s = float(sys.argv[7]) if len(sys.argv) > 7 else 0.0
if what == "pairs":
    x = torch.empty(1, device="cuda")
    for _ in range(1000):
        del x
        x = torch.empty(65536, device="cuda")
    rates = []
    for _ in range(chunks):
        t0 = time.perf_counter()
        for _ in range(steps):
            del x
            x = torch.empty(65536, device="cuda")
        rates.append((time.perf_counter() - t0) / steps * 1e9)
    print("RESULT " + json.dumps({"ns_per_pair": statistics.median(rates), "chunks": rates}), flush=True)
    sys.exit(0)
''' + MODEL + r'''
done = [0]  # steps in timed chunks

def timed(n, secs=0.0, count=True):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    k = 0
    while (k < n) if secs <= 0 else (time.perf_counter() - t0 < secs):
        step()
        k += 1
    torch.cuda.synchronize()
    if count:
        done[0] += k
    return k / (time.perf_counter() - t0)

def warm_up():
    for _ in range(30):
        step()
    if warm_s > 0:
        timed(0, warm_s, count=False)

warm_up()
rates = [timed(steps, chunk_s) for _ in range(chunks)]
out = {"steps_per_s": statistics.median(rates), "chunks": rates, "timed_steps": done[0]}
if history:
    torch.cuda.memory._record_memory_history(stacks="python")
    warm_up()
    hrates = [timed(steps, chunk_s) for _ in range(chunks)]
    out["history_steps_per_s"] = statistics.median(hrates)
    torch.cuda.memory._record_memory_history(enabled=None)
print("RESULT " + json.dumps(out), flush=True)
'''

MODES = {
    "default": {},
    "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "nocache": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}


def measure(args, script, mode, traced, layer, history):
    cmd = [sys.executable, script, str(args.steps), str(args.chunks), "1" if history else "0", "train", args.model,
           str(args.chunk_seconds), str(args.warmup_seconds)]
    if args.cpus:
        cmd = ["taskset", "-c", args.cpus] + cmd
    p = subprocess.run(cmd, env=child_env(args, mode, traced, layer, "train"), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    r = result_of(p.stdout)
    if r is None:
        print("FAIL %s %s: rc %d %s" % (mode, "traced" if traced else "untraced", p.returncode, p.stderr[-300:]))
    return r


CONFIGS = (("untraced", False, False), ("on", True, True), ("off", True, False))


def child_env(args, mode, traced, layer, what):
    env = dict(os.environ)
    for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "LD_PRELOAD"):
        env.pop(k, None)
    env.update(MODES[mode])
    if traced:
        kit = os.path.abspath(args.kit)
        env["LD_PRELOAD"] = os.path.join(kit, "libcumtrace.so")
        env["LD_LIBRARY_PATH"] = os.path.join(kit, "lib") + (":" + env["LD_LIBRARY_PATH"]
                                                              if env.get("LD_LIBRARY_PATH") else "")
        env["CUMTRACE_OUTPUT"] = os.path.join(args.out, "ovh-%s-%s-%s.%%p.dump" % (what, mode, "on" if layer else "off"))
        env["CUMTRACE_TORCH"] = "1" if layer else "0"
    return env


def result_of(stdout):
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return None


def pairs(args, script):
    """torch.empty / del pairs (the caching allocator's fast path: no CUDA call, no kernel),
    the three configurations at the same time, each on a CPU of its own (rotated every
    round): what the machine does meanwhile slows all three alike."""
    cpus = [c for c in args.pair_cpus.split(",") if c]
    v = {"untraced": [], "on": [], "off": []}
    for rnd in range(args.pair_rounds):
        procs = []
        for i, (key, traced, layer) in enumerate(CONFIGS):
            cmd = [sys.executable, script, str(args.pairs), str(args.chunks), "0", "pairs"]
            if cpus:
                cmd = ["taskset", "-c", cpus[(i + rnd) % len(cpus)]] + cmd
            procs.append((key, subprocess.Popen(cmd, env=child_env(args, "default", traced, layer, "pairs"),
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        for key, p in procs:
            out, err = p.communicate(timeout=300)
            r = result_of(out)
            if r:
                v[key].append(r["ns_per_pair"])
            else:
                print("FAIL pairs %s: rc %d %s" % (key, p.returncode, err[-300:]), flush=True)
    if not all(v.values()):
        return
    med = {k: statistics.median(x) for k, x in v.items()}
    print("pairs (torch.empty 256 KiB + del, default mode, ns per pair, medians of %d rounds, the three at "
          "once): untraced %.0f, layer on %.0f (+%.0f = %.0f ns per tensor event: alloc, free_requested, "
          "free_completed), layer off %.0f (+%.0f)" % (
              args.pair_rounds, med["untraced"], med["on"], med["on"] - med["untraced"],
              (med["on"] - med["untraced"]) / 3, med["off"], med["off"] - med["untraced"]), flush=True)
    print("RAW pairs %s" % json.dumps(v), flush=True)
    return (med["on"] - med["untraced"]) / 3


def events_per_step(args, mode):
    """Framework events per training step in a layer-on run's dump (30 warm-up steps + the
    timed chunks; the model's set-up events are few against them)."""
    dumps = sorted(glob.glob(os.path.join(args.out, "ovh-train-%s-on.*.dump" % mode)))
    if not dumps or args.chunk_seconds > 0:  # timed chunks: the steps per process vary
        return None
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(os.path.abspath(args.kit), "lib")
    p = subprocess.run([os.path.join(args.kit, "cumtrace-report"), "summary", "--format", "json", dumps[0]],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        events = json.loads(p.stdout)["summary"].get("framework", {}).get("events", 0)
    except (ValueError, KeyError):
        return None
    return events / (30 + args.chunks * args.steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--chunks", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cpus", default="")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--model", choices=("mlp2048", "mlp4096"), default="mlp2048")
    ap.add_argument("--chunk-seconds", type=float, default=0.0,
                    help="each chunk runs whole steps for this long (0: --steps steps)")
    ap.add_argument("--warmup-seconds", type=float, default=0.0,
                    help="after the 30 warm-up steps, run this long untimed (clocks settle)")
    ap.add_argument("--no-history", action="store_true",
                    help="leave out torch's _record_memory_history runs (nan in its columns)")
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--pair-rounds", type=int, default=3)
    ap.add_argument("--pair-cpus", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "overhead_child.py")
    open(script, "w").write(CHILD)
    fails = 0
    rates = {}
    print("%-11s %10s %10s %10s %10s %8s %8s %8s" % ("mode", "untraced", "history", "on", "off",
                                                    "history", "on", "off"), flush=True)
    for mode in args.modes.split(","):
        v = {"untraced": [], "history": [], "on": [], "off": []}
        for rep in range(args.reps):
            for i in range(len(CONFIGS)):
                key, traced, layer = CONFIGS[(i + rep) % len(CONFIGS)]
                # torch's history needs its caching allocator (cudaMallocAsync refuses it)
                r = measure(args, script, mode, traced, layer,
                            key == "untraced" and mode != "async" and not args.no_history)
                if not r:
                    continue
                v[key].append(r["steps_per_s"])
                if "history_steps_per_s" in r:
                    v["history"].append(r["history_steps_per_s"])
        if not all(v[k] for k in ("untraced", "on", "off")):
            fails += 1
            continue
        med = {k: statistics.median(x) if x else float("nan") for k, x in v.items()}
        ratio = {k: med[k] / med["untraced"] for k in ("history", "on", "off")}
        ok = ratio["on"] >= 0.97 and ratio["off"] >= 0.99
        fails += not ok
        print("%-11s %10.1f %10.1f %10.1f %10.1f %8.3f %8.3f %8.3f  %s  (steps/s, medians of %d processes"
              " x %d chunks of %s of %s; ratios to untraced)" % (
                  mode, med["untraced"], med["history"], med["on"], med["off"], ratio["history"], ratio["on"],
                  ratio["off"], "PASS" if ok else "FAIL", args.reps, args.chunks,
                  "%.1f s" % args.chunk_seconds if args.chunk_seconds > 0 else "%d steps" % args.steps,
                  args.model), flush=True)
        print("RAW %s %s" % (mode, json.dumps(v)), flush=True)
        rates[mode] = med["untraced"]
    per_event = pairs(args, script) if args.pairs else None
    for mode, rate in rates.items():
        n = events_per_step(args, mode)
        if n is not None and per_event is not None:
            print("%s: %.1f tensor events per step; at %.0f ns each and %.1f steps/s untraced, recording them "
                  "costs %.2f%% of a step (the layer's share of on/untraced)" % (
                      mode, n, per_event, rate, 100.0 * n * per_event * 1e-9 * rate), flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
