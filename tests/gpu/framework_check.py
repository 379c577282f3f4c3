#!/usr/bin/env python3
"""Issue 16's acceptance on a GPU machine: the two-level reports of a train.py as people
write it (no marks, plain LD_PRELOAD), with the kit that scripts/gpu-pack.sh makes.

usage: python3 tests/gpu/framework_check.py --kit gpu-kit --out DIR [--steps N] [--only NAME,...]

Run it from the repository root. Every line that matters starts with PASS, FAIL, INFO or SKIP;
each child's output and dump stay in DIR.

  train-MODE    (MODE: default, expandable, async = backend:cudaMallocAsync, nocache =
                PYTORCH_NO_CUDA_MEMORY_CACHING=1) an MLP trained with Adam for N steps that
                keeps 4 MiB per step in a list (the KEEP line): the leaks report has a site
                that is not "cache" at the KEEP line, leaked, with N blocks, and a growth site
                there; in default and expandable also: the framework layer's peak allocated
                == torch.cuda.max_memory_allocated(), peak reserved == max_memory_reserved(),
                held at exit == memory_allocated() at the end of the script, no size estimated
  clean-MODE    the same script without the list: no site but "cache" in the leaks report
                (the weights, Adam's state and the warm cache are not leaks), no growth site
  ranks         torchrun, 2 ranks on one GPU (gloo for the all-reduce), default allocator;
                rank 1 keeps 8 MiB per step, each step inside an NVTX range "step": growth
                and a leaked site at its KEEP line on rank 1, neither on rank 0
  cupy          CuPy's default pool: the framework layer's used bytes at exit and at its peak,
                plus the pool's used bytes counted before the hook (the bootstrap's first
                cupy.used_bytes counter), == pool.used_bytes() at the end and its highest
                value read after each allocation
"""
import argparse
import glob
import json
import os
import pickle
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyboot_check as pb  # noqa: E402  (verdict, check, run, report and the results list)

TRAIN = r'''
import os, sys, torch
which, steps, keep = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
kept = []
for i in range(steps):
    x = torch.randn(256, 1024, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    if keep:
        kept.append(torch.empty(1 << 20, dtype=torch.float32, device="cuda"))  # KEEP-LINE
torch.cuda.synchronize()
try:
    segs = [(s["address"], s["total_size"]) for s in torch.cuda.memory_snapshot()]
except Exception:  # backend:cudaMallocAsync keeps no snapshot
    segs = []
print("RESULT", json.dumps({"pid": os.getpid(), "max_allocated": torch.cuda.max_memory_allocated(),
                            "max_reserved": torch.cuda.max_memory_reserved(),
                            "allocated": torch.cuda.memory_allocated(),
                            "reserved": torch.cuda.memory_reserved(), "segments": segs}))
'''

RANKS = r'''
import os, sys, torch, torch.distributed as dist
which, steps = sys.argv[1], int(sys.argv[2])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(0)
model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
kept = []
for i in range(steps):
    torch.cuda.nvtx.range_push("step")
    loss = model(torch.randn(64, 1024, device="cuda")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    t = loss.detach().cpu()
    dist.all_reduce(t)
    if rank == 1:
        kept.append(torch.empty(2 << 20, dtype=torch.float32, device="cuda"))  # KEEP-LINE
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
dist.destroy_process_group()
print("RESULT", json.dumps({"pid": os.getpid(), "rank": rank}))
'''

CUPY = r'''
import os, sys, cupy
pool = cupy.get_default_memory_pool()
first = cupy.zeros(1 << 20, dtype=cupy.uint8)  # the first CUDA call: before the bootstrap
for _ in range(3):
    pass                                        # the bootstrap runs here
highest = pool.used_bytes()
kept = []
for i in range(60):
    a = cupy.ones((i + 1) * 8192, dtype=cupy.float32)
    highest = max(highest, pool.used_bytes())
    if i % 4 == 0:
        kept.append(a)
    del a
cupy.cuda.Device().synchronize()
print("RESULT", json.dumps({"pid": os.getpid(), "used_bytes": pool.used_bytes(), "highest": highest}))
'''

MODES = {
    "default": {},
    "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "nocache": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}


def keep_line(src):
    return 1 + [i for i, l in enumerate(src.splitlines()) if l.endswith("# KEEP-LINE")][0] + 1  # + "import json"


def at_line(sites, line):
    return [s for s in sites if any(f.get("python") and f.get("line") == line for f in s.get("stack", []))]


def train(args, mode, keep):
    tag = ("train-" if keep else "clean-") + mode
    info, dump, _ = pb.run(args, tag, tag, MODES[mode], child=TRAIN, argv=("1" if keep else "0",))
    if not dump:
        return
    j = pb.report(args, tag, "leaks", dump).get("leaks", {})
    line = keep_line(TRAIN)
    notcache = [s for s in j.get("sites", []) if s["class"] != "cache"]
    growth = j.get("growth", {}).get("sites", [])
    if keep:
        here = at_line(notcache, line)
        pb.check("%s: leaked at the KEEP line" % tag,
                 len(here) == 1 and here[0]["class"] == "leaked" and here[0]["count"] == args.steps,
                 "%s" % [(s["kind"], s["class"], s["count"], s["bytes"]) for s in here])
        pb.check("%s: growth at the KEEP line" % tag, bool(at_line(growth, line)),
                 "%d growing sites, series %s" % (len(growth), [(s["kind"], s["steps"]) for s in
                                                                 j.get("growth", {}).get("series", [])]))
    else:
        pb.check("%s: no leaked site" % tag, not notcache and not growth,
                 "not cache: %s; growth: %d" % ([(s["kind"], s["class"], s["bytes"]) for s in notcache],
                                                len(growth)))
    if mode in ("async", "nocache"):
        # each tensor one CUDA allocation: PyTorch's allocated bytes are its live CUDA allocations
        pk = pb.report(args, tag, "peak", dump).get("peak", {})
        un = pk.get("pytorch_uncached", [])
        got = un[0]["peak_allocated_bytes"] if un else None
        if mode == "async":
            pb.check("%s: peak allocated (no cache) == max_memory_allocated()" % tag, got == info["max_allocated"],
                     "%s vs %d" % (got, info["max_allocated"]))
        else:
            # torch's allocator keeps no statistics when PYTORCH_NO_CUDA_MEMORY_CACHING bypasses it
            pb.verdict("INFO", "%s: peak allocated (no cache)" % tag, "cumtrace %s, torch's max_memory_allocated() %d"
                       % (got, info["max_allocated"]))
    if mode in ("default", "expandable"):
        s = pb.report(args, tag, "summary", dump)
        devs = [d for d in s.get("summary", {}).get("framework", {}).get("devices", []) if d["framework"] == "pytorch"]
        if not devs:
            pb.check("%s: framework layer" % tag, False, "no PyTorch device in the summary")
            return
        d = devs[0]
        pb.check("%s: peak allocated == max_memory_allocated()" % tag, d["peak_allocated_bytes"] == info["max_allocated"],
                 "%d vs %d" % (d["peak_allocated_bytes"], info["max_allocated"]))
        pb.check("%s: peak reserved == max_memory_reserved()" % tag, d["peak_reserved_bytes"] == info["max_reserved"],
                 "%d vs %d" % (d["peak_reserved_bytes"], info["max_reserved"]))
        pb.check("%s: held at exit == memory_allocated()" % tag, d["exit_bytes"] == info["allocated"],
                 "%d vs %d (exit marked: %s)" % (d["exit_bytes"], info["allocated"], d["exit_marked"]))
        pb.check("%s: no block size estimated" % tag, d["sizes_estimated"] == 0,
                 "%d of %d" % (d["sizes_estimated"], d["blocks"]))
        steps = (s.get("dumps") or [{}])[0].get("steps", {})
        pb.check("%s: the dump's steps (optimizer)" % tag, steps.get("optimizer") == args.steps, "%s" % steps)
        exports(args, tag, dump, info)


def mode_of(tag):
    return tag.split("-", 1)[1]


def exports(args, tag, dump, info):
    """memviz with torch's blocks, read by torch's own _memory_viz; Perfetto's block slices."""
    pickle_path = os.path.join(args.out, tag + ".pickle")
    pb.report(args, tag, "memviz", dump, json_out=False, extra=("-o", pickle_path))
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e")
    for what, cmd in (("check_memviz.py", [sys.executable, os.path.join(src, "check_memviz.py"), pickle_path]),
                      ("torch _memory_viz stats", [sys.executable, "-m", "torch.cuda._memory_viz", "stats", pickle_path]),
                      ("torch _memory_viz segment_plot", [sys.executable, "-m", "torch.cuda._memory_viz", "segment_plot",
                                                          pickle_path, "-o", pickle_path + ".segments.html"]),
                      ("torch _memory_viz trace_plot", [sys.executable, "-m", "torch.cuda._memory_viz", "trace_plot",
                                                        pickle_path, "-o", pickle_path + ".trace.html"])):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pb.check("%s: memviz read by %s" % (tag, what), p.returncode == 0, p.stderr.strip()[-300:])
    try:
        snap = pickle.load(open(pickle_path, "rb"))
    except (OSError, pickle.UnpicklingError, EOFError) as e:
        pb.check("%s: memviz pickle" % tag, False, str(e))
        return
    actions = {}
    for t in snap["device_traces"]:
        for e in t:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
    # torch's segments: inside the ranges of torch's own memory_snapshot() at the end of the
    # script; the others are CUDA allocations outside its allocator (cuBLAS's workspaces)
    ranges = [(a, a + n) for a, n in info.get("segments", [])]
    torch_segs = [g for g in snap["segments"]
                  if any(a <= g["address"] and g["address"] + g["total_size"] <= e for a, e in ranges)]
    allocated = sum(b["size"] for g in torch_segs for b in g["blocks"] if b["state"] == "active_allocated")
    pb.verdict("INFO", "%s: memviz" % tag, "%d segments (%d of torch's; torch's snapshot: %d), actions %s" % (
        len(snap["segments"]), len(torch_segs), len(ranges), actions))
    pb.check("%s: memviz: torch's segments' allocated blocks == memory_allocated()" % tag,
             allocated == info["allocated"], "%d vs %d" % (allocated, info["allocated"]))
    pb.check("%s: memviz: torch's segments == memory_reserved()" % tag,
             sum(g["total_size"] for g in torch_segs) == info["reserved"],
             "%d vs %d" % (sum(g["total_size"] for g in torch_segs), info["reserved"]))
    if mode_of(tag) == "default":
        pb.check("%s: memviz: segments == torch's memory_snapshot() segments" % tag,
                 sorted((g["address"], g["total_size"]) for g in torch_segs) == sorted(map(tuple, info["segments"])),
                 "%d vs %d" % (len(torch_segs), len(ranges)))
    pf = os.path.join(args.out, tag + ".perfetto.json")
    pb.report(args, tag, "perfetto", dump, json_out=False, extra=("-o", pf))
    try:
        ev = json.load(open(pf))["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        pb.check("%s: perfetto" % tag, False, str(e))
        return
    live = [e for e in ev if e.get("ph") == "b" and e.get("cat") == "alloc.torch_block"
            and e["args"]["end"] == "live at exit"]
    pb.check("%s: perfetto torch_block slices live at exit == memory_allocated()" % tag,
             sum(e["args"]["size"] for e in live) == info["allocated"],
             "%d in %d slices vs %d" % (sum(e["args"]["size"] for e in live), len(live), info["allocated"]))


def ranks(args):
    env = dict(MODES["default"])
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    info, dump, err = pb.run(args, "ranks", "ranks", env, child=RANKS, launcher=launcher)
    line = keep_line(RANKS)
    dumps = sorted(glob.glob(os.path.join(args.out, "ranks.*.dump")))
    rank_of = {}
    for l in open(os.path.join(args.out, "ranks.out")).read().splitlines():
        if l.startswith("RESULT "):
            r = json.loads(l[len("RESULT "):])
            rank_of[r["pid"]] = r["rank"]
    seen = {}
    for d in dumps:
        rank = rank_of.get(int(os.path.basename(d).split(".")[1]))
        if rank is None:
            continue  # torchrun's own process
        j = pb.report(args, "ranks-%s" % os.path.basename(d), "leaks", d).get("leaks", {})
        growth = at_line(j.get("growth", {}).get("sites", []), line)
        leaked = at_line([x for x in j.get("sites", []) if x["class"] == "leaked"], line)
        series = [(x["name"], x["kind"], x["steps"]) for x in j.get("growth", {}).get("series", [])]
        seen[rank] = (bool(growth), bool(leaked), series)
    pb.verdict("INFO", "ranks", "dumps %d, per rank (growth, leaked, series): %s" % (len(dumps), seen))
    pb.check("ranks: growth and leak on rank 1", seen.get(1, (0, 0))[:2] == (True, True), "%s" % (seen.get(1),))
    pb.check("ranks: none on rank 0", seen.get(0, (1, 1))[:2] == (False, False), "%s" % (seen.get(0),))


def cupy_check(args):
    try:
        import cupy  # noqa: F401
    except ImportError:
        pb.verdict("SKIP", "cupy", "cupy is not installed")
        return
    info, dump, _ = pb.run(args, "fw-cupy", "cupy", child=CUPY)
    if not dump:
        return
    s = pb.report(args, "fw-cupy", "summary", dump)
    devs = [d for d in s.get("summary", {}).get("framework", {}).get("devices", []) if d["framework"] == "cupy"]
    counters = [c for c in (s.get("dumps") or [{}])[0].get("counters", []) if c["name"] == "cupy.used_bytes"]
    # one sample (no steps): the bootstrap's, the pool's bytes before the hook
    before = counters[0]["last"] if len(counters) == 1 and counters[0]["samples"] == 1 else 0
    if not devs:
        pb.check("cupy: framework layer", False, "no CuPy device in the summary")
        return
    d = devs[0]
    pb.verdict("INFO", "cupy counters", "%s" % counters)
    pb.check("cupy: used at exit == pool.used_bytes()", d["exit_bytes"] + before == info["used_bytes"],
             "%d + %d before the hook vs %d" % (d["exit_bytes"], before, info["used_bytes"]))
    pb.check("cupy: peak used == highest pool.used_bytes()", d["peak_allocated_bytes"] + before == info["highest"],
             "%d + %d vs %d" % (d["peak_allocated_bytes"], before, info["highest"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only
    for mode in MODES:
        if want("train-" + mode):
            train(args, mode, True)
        if want("clean-" + mode):
            train(args, mode, False)
    if want("ranks"):
        ranks(args)
    if want("cupy"):
        cupy_check(args)
    fails = sum(1 for r in pb.results if r.startswith("FAIL"))
    print("framework_check: %d checks, %d failed" % (sum(1 for r in pb.results if r[:4] in ("PASS", "FAIL")), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
