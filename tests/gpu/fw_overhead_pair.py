#!/usr/bin/env python3
"""Issue 16's cost figures, traced and untraced in one process: each configuration (allocator mode,
framework layer on or off, the kit's shim or a variant) is one traced process that runs its training
loop in blocks of K steps, tracing paused (cumtrace_bench_pause(1): every traced call is forwarded
untraced) and running in turns, ABBA (traced then paused, then paused then traced, ...), each
block synchronized with the GPU at both ends. A pair's ratio is its paused block's time over its
traced block's (steps/s traced / untraced); the figure is the median of the pairs' ratios with a
distribution-free 90% confidence interval. The verdict is on the same figure less the spill-over:
where paused blocks after a traced block ran slower than those after a paused one (the traced
block's records written meanwhile, the caches it left cold), that difference is charged once to
each pair (report() says how). PASS when the interval's lower end is at or above the goal, FAIL
when its upper end is below, INCONCLUSIVE otherwise (--workload fake: no verdict).

Why: fw_overhead_ab.py's separate processes take turns second by second, and on the H200 host
their untraced chunks alone spread by 17-35% (runs 31, 36): its intervals could not decide a 1%
goal. Here both halves of a pair run 0.1 s apart in the same process (same memory layout, same GPU
context, same warm caches), so what drifts falls on both.

What the paused half still runs: the shim's wrappers (each call reads one word and forwards), its
writer thread (idle but for the traced blocks' records, which may spill into the next block:
charged back, above), the Python package's hooks (an optimizer step mark a step), and with the
layer on torch's own trace entries for the attached tracker, which the tracker then drops (torch
has no detach; in the cudaMallocAsync and no-caching modes there is no tracker to attach). So the figure is the traced
call's cost; the wrappers' forwarding is measured apart (scripts/bench.sh, "paused shim"), and
fw_overhead_ab.py stays the whole-process comparison.

Torch's own _record_memory_history(stacks="python") is toggled the same way in an untraced process
(not in the cudaMallocAsync mode, which refuses it), for the figure beside which the goals are read.

A second line per configuration gives the same ratios of CPU time per step, the main thread's and
the whole process's (torch's autograd thread runs the backward pass; the writer thread is counted
there too), diagnostics. --workload fake runs py_sites_bench.py's 18-place loop on the kit's fake CUDA runtime
instead (no GPU, no torch: the development machine's check of this script, and the shim's cost on
a CPU alone).

usage: python3 tests/gpu/fw_overhead_pair.py --kit gpu-kit --out DIR [--modes async,...]
           [--layers off,on] [--variants] [--seconds 30] [--block-seconds 0.1]
           [--warmup-seconds 3] [--cpus LIST] [--workload torch|fake] [--pages N] [--processes N]
           [--model mlp4096|mlp2048] [--env NAME:VAR=VALUE[,VAR=VALUE...]]...
--env adds a configuration NAME: the kit's shim with those variables set in its traced process
(CUMTRACE_PYTHON=0, CUMTRACE_STACK_DEPTH=0, ...: what a part of the traced call costs), taken in
the rounds with the others.
With --processes N each configuration runs in N processes, in rounds that take the configurations
in turn, each round starting one configuration later; a last line per configuration takes the N
processes' figures as the units (report_pooled), and the verdicts are on those lines.
       python3 tests/gpu/fw_overhead_pair.py --pool REGEX FILE...
--pool runs nothing: it reads the RAW lines of recorded outputs, takes those whose "FILE:LABEL"
matches REGEX (the same shim build, from several calls or days) and gives their lines and one line
over them all, as --processes does within a run.
Goals (issue 16): on / untraced >= 0.97, off / untraced >= 0.99.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys

from fw_overhead import MODEL, MODES, child_env
from fw_overhead_ab import ci_rank, median_ci, verdict
from host_bench import sites_bench_path

GOALS = {"on": 0.97, "off": 0.99, "history": None}

CHILD_HEAD = r'''
import ctypes, json, os, sys, time
seconds, block_s, warm_s, workload = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
history = os.environ.get("PAIR_HISTORY") == "1"
if history:
    import torch
    def pause(on):
        if on:
            torch.cuda.memory._record_memory_history(enabled=None)
        else:
            torch.cuda.memory._record_memory_history(stacks="python")
        return 0
else:
    fn = getattr(ctypes.CDLL(None), "cumtrace_bench_pause", None)
    if fn is None:
        print("NOTRACED no cumtrace_bench_pause in this process (not preloaded, or a shim before it)",
              flush=True)
        sys.exit(3)
    fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
    pause = fn
'''

CHILD_TORCH = r'''
import torch
model_name = os.environ["PAIR_MODEL"]
''' + MODEL + r'''
sync = torch.cuda.synchronize
'''

CHILD_FAKE = r'''
sys.path.insert(0, os.environ["PAIR_SITES_DIR"])
import py_sites_bench
sites_step, ctr = py_sites_bench.make_step(os.environ["PAIR_FAKE"], int(os.environ["PAIR_PAGES"])), [0]

def step():
    ctr[0] += 1
    sites_step(ctr[0])

def sync():
    pass
'''

CHILD_TAIL = r'''
def block(paused, k):
    """k steps with tracing paused or running: (wall s, main thread CPU s, process CPU s)."""
    if pause(1 if paused else 0) != 0:
        print("NOTRACED cumtrace_bench_pause returned an error: this process does not record", flush=True)
        sys.exit(3)
    sync()
    t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
    for _ in range(k):
        step()
    sync()
    return time.perf_counter() - t0, time.thread_time() - c0, time.process_time() - p0

for _ in range(30):
    for paused in (0, 1):
        block(paused, 1)
# warm-up in turns; the untraced rate sets the block's steps
n, t = 0, 0.0
t_end = time.perf_counter() + warm_s
while time.perf_counter() < t_end:
    block(0, 5)
    w = block(1, 5)[0]
    n, t = n + 5, t + w
k = max(2, int(round(block_s * n / t))) if t > 0 else 2
rows = []
t_end = time.perf_counter() + seconds
i = 0
prev = 1
while time.perf_counter() < t_end or len(rows) < 10:
    order = (0, 1) if i % 2 == 0 else (1, 0)  # ABBA
    got = {}
    for paused in order:
        got[paused] = block(paused, k) + (prev,)
        prev = paused
    # traced wall, traced main-thread CPU, paused wall, paused CPU, what came before the paused
    # block (0 traced, 1 paused), traced process CPU, paused process CPU
    rows.append(tuple(round(x, 7) for x in (got[0][0], got[0][1], got[1][0], got[1][1])) + (got[1][3],) +
                (round(got[0][2], 7), round(got[1][2], 7)))
    i += 1
pause(0)
print("RESULT " + json.dumps({"steps_per_block": k, "rows": rows}), flush=True)
'''


def ratio(rows, j_paused, j_traced):
    return median_ci([r[j_paused] / r[j_traced] for r in rows])


def run_one(args, script, mode, key, layer, shim, extra):
    if args.workload == "fake":
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env["PAIR_FAKE"] = os.path.join(os.path.abspath(args.kit), "fake")
        env["PAIR_PAGES"] = str(args.pages)
        env["PAIR_SITES_DIR"] = os.path.dirname(sites_bench_path())
        env["LD_LIBRARY_PATH"] = env["PAIR_FAKE"] + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        if key != "history":
            env["CUMTRACE_OUTPUT"] = os.path.join(args.out, "pair-fake-%s.%%p.dump" % key)
    else:
        env = child_env(args, mode, key != "history", layer, "pair")
    if key != "history":
        env["LD_PRELOAD"] = shim
        env.update(extra)
    env["PAIR_HISTORY"] = "1" if key == "history" else "0"
    env["PAIR_MODEL"] = args.model
    cmd = [sys.executable, script, str(args.seconds), str(args.block_seconds), str(args.warmup_seconds),
           args.workload]
    if args.cpus:
        cmd = ["taskset", "-c", args.cpus] + cmd
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=args.seconds + args.warmup_seconds + 90)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
        if line.startswith("NOTRACED "):
            raise RuntimeError(line[len("NOTRACED "):])
    raise RuntimeError("exit %d: %s" % (p.returncode, p.stderr[-400:].strip()))


def steady_blocks(rows):
    """A diagnostic beside the verdict, with no charge: each traced block that follows a traced one
    (a TP pair after a PT pair) over the mean of the neighbouring paused blocks that follow a paused
    one (those PT pairs' first blocks): what runs traced and untraced throughout would time, a
    linear drift cancelled. Half the blocks, two apart: about twice a pair's interval. Its median,
    interval and count, None with too few."""
    xs = [(rows[j - 1][2] + rows[j + 1][2]) / 2 / rows[j][0] for j in range(1, len(rows) - 1)
          if rows[j][4] == 0 and rows[j - 1][4] == 1 and rows[j + 1][4] == 1]
    return median_ci(xs) + (len(xs),) if xs else None


def unmet(v):
    """1 for a verdict other than PASS, 0 for PASS or none (no goal)."""
    return 0 if not v or " PASS" in v else 1


def figures(res):
    """One process's recorded blocks (its RESULT, or a RAW line's JSON) reduced to what report()
    prints and report_pooled() takes: the pairs' median and interval, the same less the spill-over
    and the spill-over's inputs, the time added a step, the untraced rate and the pairs' spread."""
    rows, k = res["rows"], res["steps_per_block"]
    m, lo, hi = ratio(rows, 2, 0)
    untraced = statistics.median(k / r[2] for r in rows)
    spread = statistics.median(abs(r[2] / r[0] - m) for r in rows)
    after_t = [r[2] for r in rows if r[4] == 0]
    after_p = [r[2] for r in rows if r[4] == 1]
    # The spill-over: what a traced block costs the block after it (its records written meanwhile,
    # the caches it left cold). ABBA gives T P | P T | T P ...: in a pair that begins with its
    # traced block both blocks follow a traced one and carry it, P + s over T + s; in the other
    # neither does, and its traced block's own spill falls outside it. S, how much slower the
    # paused blocks after a traced one were, is charged once in each pair: (P - s) / T in the
    # first kind, P / (T + s) in the second, and the verdict is on that figure. (Until run 37 the
    # first kind was charged (P - s) / (T + s), twice, and the second not at all.) The first pair
    # is the exception: its traced block follows the warm-up's last block, a paused one, so it is
    # charged as if it carried s: one pair of the 70-95 a configuration, toward a lower figure.
    s = statistics.median(after_t) - statistics.median(after_p) if after_t and after_p else 0.0
    s = max(s, 0.0)
    charged = median_ci([(r[2] - s) / r[0] if r[4] == 0 else r[2] / (r[0] + s) for r in rows])
    # what tracing adds to a step, in microseconds: each pair's traced less paused time over its steps
    added = median_ci([(r[0] - r[2]) / k * 1e6 for r in rows])
    spill = (statistics.median(after_t) / statistics.median(after_p), len(after_t), len(after_p)) \
        if after_t and after_p else None
    return {"pairs": len(rows), "k": k, "untraced": untraced, "raw": (m, lo, hi), "charged": charged,
            "added": added, "spread": spread, "spill": spill}


def report(label, res, goal):
    """One process's lines; its figures: the pairs' median, that less the spill-over, the time added
    a step, and whether its verdict was other than PASS (goal None: no verdict)."""
    rows = res["rows"]
    f = figures(res)
    (m, lo, hi), (cm_, clo_, chi_), (am, alo, ahi) = f["raw"], f["charged"], f["added"]
    v = verdict(clo_, chi_, goal)
    spill = (" | paused block after a traced one / after a paused one: %.4f (%d, %d blocks)" % f["spill"]
             if f["spill"] else "")
    print("%-22s %d pairs of %d-step blocks, untraced %.1f steps/s: traced/untraced %.4f [%.4f, %.4f], less the"
          " spill-over %.4f [%.4f, %.4f]%s | added per step %.2f us [%.2f, %.2f] | pairs' median deviation %.4f%s"
          % (label, f["pairs"], f["k"], f["untraced"], m, lo, hi, cm_, clo_, chi_, v, am, alo, ahi, f["spread"],
             spill), flush=True)
    cm, clo, chi = ratio(rows, 3, 1)
    pm, plo, phi = ratio(rows, 6, 5)
    sm = steady_blocks(rows)
    steady = (", steady blocks %.4f [%.4f, %.4f] (%d)" % sm) if sm else ""
    print("%-22s steps per CPU second traced/untraced: main thread %.4f [%.4f, %.4f], process (every thread, the"
          " writer's too) %.4f [%.4f, %.4f]%s" % (label, cm, clo, chi, pm, plo, phi, steady), flush=True)
    return {"fail": unmet(v), "ratio": m, "charged": cm_, "added_us": am}


def report_pooled(label, figs, goal):
    """With --processes N: the configuration's N processes as the units. Each process's figure
    (its median pair) is one value; the line gives them, their median and the distribution-free
    interval of that median (median_ci over the processes: the lowest and highest of them below
    five processes, at the coverage it then has), and the verdict on the figures less the
    spill-over. Processes drift apart by more than a pair's interval (run 39 on the H200: one
    build's eight processes read 0.978-0.996 in one hour), so this is the figure to decide on."""
    raw = [f["ratio"] for f in figs]
    ch = [f["charged"] for f in figs]
    m, lo, hi = median_ci(raw)
    cm, clo, chi = median_ci(ch)
    v = verdict(clo, chi, goal)
    print("%-22s over %d processes (%.0f%% interval): traced/untraced %.4f [%.4f, %.4f], less the spill-over"
          " %.4f [%.4f, %.4f]%s | each process: %s | added per step, median of the processes %.2f us"
          % (label, len(figs), 100 * ci_rank(len(figs))[1], m, lo, hi, cm, clo, chi, v,
             " ".join("%.4f/%.4f" % (a, b) for a, b in zip(raw, ch)),
             statistics.median(f["added_us"] for f in figs)), flush=True)
    return unmet(v)


def raw_ok(res):
    """Whether res (a RAW line's JSON) is what run_one returns, so figures() can take it: a positive
    steps_per_block and at least one row of seven numbers."""
    def num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    return (isinstance(res, dict) and isinstance(res.get("steps_per_block"), int)
            and res["steps_per_block"] > 0 and isinstance(res.get("rows"), list) and len(res["rows"]) > 0
            and all(isinstance(r, list) and len(r) == 7 and all(num(x) for x in r) for r in res["rows"]))


def pool(regex, files):
    """--pool: no run. Every RAW line (one process's recorded blocks) in the files whose
    "FILE:LABEL" (the file's base name, a colon, the line's label: mode/build/key, and /#N with
    --processes) regex matches (re.search) is reported again and the lot pooled as
    one configuration's processes (report_pooled): runs of the same shim build on other days or in
    other calls become one figure. Which labels are the same build is the caller's to say (a
    variant copied under another name, a kit with its shims swapped); the labels must share their
    key (off, on or history), whose goal the verdict takes (none for the fake workload)."""
    try:
        rx = re.compile(regex)
    except re.error as e:
        print("fw_overhead_pair: --pool: bad regular expression %r: %s" % (regex, e), file=sys.stderr)
        return 2
    if not files:
        print("fw_overhead_pair: --pool needs the files to read", file=sys.stderr)
        return 2
    got, keys, fake = [], set(), False
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError as e:
            print("fw_overhead_pair: %s: %s" % (path, e.strerror), file=sys.stderr)
            return 2
        for n, line in enumerate(lines, 1):
            parts = line.split(" ", 2)
            if len(parts) < 3 or parts[0] != "RAW" or not rx.search(os.path.basename(path) + ":" + parts[1]):
                continue
            try:
                res = json.loads(parts[2])
            except ValueError:
                res = None
            if not raw_ok(res):
                print("fw_overhead_pair: %s:%d: a RAW line this script did not write (%s)" % (path, n, parts[1]),
                      file=sys.stderr)
                return 2
            comps = [c for c in parts[1].split("/") if not c.startswith("#")]
            keys.add(comps[-1])
            fake = fake or comps[0] == "fake"
            got.append(("%s:%d %s" % (os.path.basename(path), n, parts[1]), res))
    if not got:
        print("fw_overhead_pair: --pool: no RAW line's FILE:LABEL matches %r in the %d files" % (regex, len(files)),
              file=sys.stderr)
        return 2
    if len(keys) > 1 or not keys <= set(GOALS):
        print("fw_overhead_pair: --pool: the matched labels mix keys (%s): pool one of off, on, history"
              % ", ".join(sorted(keys)), file=sys.stderr)
        return 2
    goal = None if fake else GOALS[keys.pop()]  # the fake workload: no verdict, as in a run
    print("pool: %d processes whose FILE:LABEL matches %r, from %d files" % (len(got), regex, len(files)), flush=True)
    figs = [report(label, res, goal) for label, res in got]
    return report_pooled("pooled", figs, goal)


ENV_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")
ENV_SET = re.compile(r"([A-Z][A-Z0-9_]*)=([^,]*)\Z")


def env_config(spec, taken):
    """--env NAME:VAR=VALUE[,VAR=VALUE...]: (NAME, {VAR: VALUE}), or a one-line reason it is not one.
    NAME names the configuration in the lines and RAW labels (a lower-case word, not one of taken:
    the kit's, the variants', the ones before it, and the labels' other words: torch, history, on,
    off)."""
    name, sep, sets = spec.partition(":")
    if not sep or not ENV_NAME.match(name):
        return None, "--env %r: give NAME:VAR=VALUE[,VAR=VALUE...], NAME a lower-case word" % spec
    if name in taken:
        return None, "--env %r: the configuration %s is already taken" % (spec, name)
    got = {}
    for item in sets.split(","):
        m = ENV_SET.match(item)
        if not m:
            return None, "--env %r: %r is not VAR=VALUE" % (spec, item)
        got[m.group(1)] = m.group(2)
    return (name, got), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit")
    ap.add_argument("--out")
    ap.add_argument("--modes", default="async")
    ap.add_argument("--layers", default="off,on")
    ap.add_argument("--variants", action="store_true", help="also each KIT/variants/NAME.so")
    ap.add_argument("--history", action="store_true", help="torch's history toggled too (not async)")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--block-seconds", type=float, default=0.1)
    ap.add_argument("--warmup-seconds", type=float, default=3.0)
    ap.add_argument("--cpus", default="")
    ap.add_argument("--workload", choices=("torch", "fake"), default="torch")
    ap.add_argument("--model", choices=("mlp4096", "mlp2048"), default="mlp4096",
                    help="the torch workload's loop (fw_overhead.py's MODEL): mlp2048 is bound by kernel launches")
    ap.add_argument("--pages", type=int, default=0, help="fake workload: pages touched between calls")
    ap.add_argument("--processes", type=int, default=1,
                    help="processes per configuration, in rounds that each start one configuration later")
    ap.add_argument("--env", action="append", default=[], metavar="NAME:VAR=VALUE[,VAR=VALUE...]",
                    help="a configuration NAME: the kit's shim with these set in its traced process")
    ap.add_argument("--pool", metavar="REGEX",
                    help="no run: pool the RAW lines in the FILEs given (recorded outputs) whose FILE:LABEL matches REGEX")
    ap.add_argument("files", nargs="*", metavar="FILE")
    args = ap.parse_args()
    if args.pool is not None:
        return pool(args.pool, args.files)
    if args.files or not args.kit or not args.out:
        print("fw_overhead_pair: give --kit and --out (or --pool REGEX FILE...), and no files without --pool",
              file=sys.stderr)
        return 2
    kit = os.path.abspath(args.kit)
    shims = [("kit", os.path.join(kit, "libcumtrace.so"), {})]
    if args.variants:
        shims += [(os.path.basename(s)[:-3], s, {})
                  for s in sorted(glob.glob(os.path.join(kit, "variants", "*.so")))]
    for spec in args.env:
        got, why = env_config(spec, {s[0] for s in shims} | {"torch", "history", "on", "off"})
        if why:
            print("fw_overhead_pair: " + why, file=sys.stderr)
            return 2
        shims.append((got[0], shims[0][1], got[1]))
    for _, s, _ in shims:
        if not os.path.isfile(s):
            print("fw_overhead_pair: %s is missing" % s, file=sys.stderr)
            return 2
    modes = [m for m in args.modes.split(",") if m]
    layers = [x for x in args.layers.split(",") if x]
    bad = [m for m in modes if m not in MODES] + [x for x in layers if x not in ("on", "off")]
    if bad:
        print("fw_overhead_pair: unknown mode or layer: %s" % ", ".join(bad), file=sys.stderr)
        return 2
    if args.processes < 1:
        print("fw_overhead_pair: --processes must be 1 or more, not %d" % args.processes, file=sys.stderr)
        return 2
    if args.workload == "fake":
        modes = ["fake"]
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(args.out, "overhead_pair_child.py")
    body = CHILD_TORCH if args.workload == "torch" else CHILD_FAKE
    open(script, "w").write(CHILD_HEAD + body + CHILD_TAIL)
    if args.workload == "torch":
        print("training loop: %s" % args.model, flush=True)
    print("per configuration: one process, blocks of K steps (about %.2f s) traced and paused in turns (ABBA),"
          " %.0f s after %.0f s of warm-up; steps/s traced/untraced = the median pair's paused time over its"
          " traced time [90%% interval]" % (args.block_seconds, args.seconds, args.warmup_seconds), flush=True)
    for name, _, extra in shims[1:]:
        if extra:
            print("configuration %s: the kit's shim with %s in its traced process"
                  % (name, " ".join("%s=%s" % kv for kv in sorted(extra.items()))), flush=True)
    fails = 0
    for mode in modes:
        configs = [(layer, layer == "on", name, so, extra) for name, so, extra in shims for layer in layers]
        if args.history and mode != "async" and args.workload == "torch":
            configs.append(("history", False, "torch", "", {}))
        figs = {}
        # N rounds, each running every configuration once, round r starting at configuration r:
        # a drift of the host over the minutes falls on every configuration alike
        for r in range(args.processes):
            for j in range(len(configs)):
                key, layer, name, so, extra = configs[(j + r) % len(configs)]
                label = "%s %s %s" % (mode, name, key) if key != "history" else "%s history" % mode
                tag = label + (" #%d" % (r + 1) if args.processes > 1 else "")
                try:
                    res = run_one(args, script, mode, key, layer, so, extra)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print("FAIL %s: %s" % (tag, e), flush=True)
                    fails += 1
                    continue
                goal = GOALS.get(key) if args.workload == "torch" else None
                if r == 0 and mode in ("async", "nocache") and key == "on":
                    print("%s: torch's allocator gives the framework layer nothing to attach to in this mode (each"
                          " tensor is a CUDA call): the same recording as off" % label, flush=True)
                got = report(tag, res, goal)
                print("RAW %s %s" % (tag.replace(" ", "/"), json.dumps(res)), flush=True)
                figs.setdefault(label, (goal, []))[1].append(got)
                if args.processes == 1:
                    fails += got["fail"]
        if args.processes > 1:
            for label, (goal, got) in figs.items():
                fails += report_pooled(label, got, goal)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
