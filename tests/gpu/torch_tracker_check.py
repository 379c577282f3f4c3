#!/usr/bin/env python3
"""The framework layer (PyTorch's caching allocator events) against torch's own
counters, on a GPU machine with torch and the kit that scripts/gpu-pack.sh makes.

usage: python3 tests/gpu/torch_tracker_check.py --kit gpu-kit --out DIR [--steps N] [--reps R]
                                                [--perf-steps N] [--modes default,expandable]

Run it from the repository root. Every line it prints that matters starts with PASS,
FAIL, INFO or SKIP; everything each step printed, and its dump, stay in DIR.

  probe        tests/gpu/torch_offsets_probe.cc compiled against the installed torch's
               headers: preload/hooks/torchoffsets.h's row for that version (TraceEntry offsets,
               vtable slots, the Action numbers) must be what the compiler says
  tensors      (each mode) a loop of tensors of 512-byte multiples up to 1 MiB, some kept:
               at a mark, the dump's torch_alloc / torch_free_requested events must number
               torch.cuda.memory_stats()["allocation.all.allocated"] / [...freed], and the
               bytes of the blocks allocated and not freed must be torch.cuda.memory_allocated()
               (such blocks are never rounded or left unsplit) and
               memory_stats()["requested_bytes.all.current"]
  mlp          (each mode) a bf16 MLP training loop (6 x 4096, Adam): the same counts and
               requested bytes; memory_allocated() is INFO (large blocks may be bigger than
               asked for); torch's segments against torch_segment_alloc (default mode)
  overhead     (default mode) the MLP (--perf-steps timed steps) untraced, traced with
               CUMTRACE_TORCH=0 and traced, R times each, alternating: steps/s traced with the framework layer off over
               untraced must be >= 0.99 (medians); on over untraced is INFO
  bytes        dump bytes per framework event, compression on: (dump with the layer -
               dump without) / framework events of the same MLP loop, must be <= 16

No framework-layer warning may appear on stderr in the traced runs (a warning means the
layer stayed off: every count check then fails too).
"""
import argparse
import glob
import json
import os
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODES = {"default": "", "expandable": "expandable_segments:True"}
MARK = b"torch_tracker_check"


# ---- the child: a workload under torch, its counters at a mark ------------------------------

def child(workload, steps):
    import ctypes

    import torch

    dev = torch.device("cuda", 0)
    mark = getattr(ctypes.CDLL(None), "cumtrace_mark", None) if os.environ.get("LD_PRELOAD") else None
    t_steps = None
    if workload == "tensors":
        keep = []
        sizes = [512 * k for k in (1, 2, 3, 7, 8, 64, 100, 1024, 2048)]
        for i in range(steps):
            ts = [torch.empty(n, dtype=torch.uint8, device=dev) for n in sizes]
            keep.append(ts[i % len(ts)])
            del ts
        torch.cuda.synchronize()
    else:
        torch.manual_seed(0)
        h = 4096
        layers = []
        for _ in range(6):
            layers += [torch.nn.Linear(h, h), torch.nn.GELU()]
        model = torch.nn.Sequential(*layers).to(dev, torch.bfloat16)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        x = torch.randn(1024, h, device=dev, dtype=torch.bfloat16)

        def step():
            opt.zero_grad(set_to_none=True)
            model(x).float().square().mean().backward()
            opt.step()

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        t_steps = steps / (time.perf_counter() - t0)
    stats = torch.cuda.memory_stats(dev)
    out = {
        "pid": os.getpid(),
        "torch": torch.__version__,
        "workload": workload,
        "allocated_count": stats.get("allocation.all.allocated"),
        "freed_count": stats.get("allocation.all.freed"),
        "segments": stats.get("segment.all.allocated"),
        "requested_current": stats.get("requested_bytes.all.current"),
        "memory_allocated": torch.cuda.memory_allocated(dev),
        "steps_per_s": t_steps,
        "marked": mark is not None,
    }
    if mark is not None:
        mark(MARK)  # after the counters were read: every event they count lies before it
    print("TORCH_TRACKER " + json.dumps(out), flush=True)
    return 0


# ---- the parent --------------------------------------------------------------------------------

def load_ctdump(kit):
    for d in (os.path.join(ROOT, "bin"), kit):
        if os.path.exists(os.path.join(d, "ctdump.py")):
            sys.path.insert(0, d)
            import ctdump
            return ctdump
    sys.exit("no ctdump.py (scripts/ or the kit)")


results = []


def verdict(kind, what, detail=""):
    line = "%-4s %s%s" % (kind, what, (": " + detail) if detail else "")
    results.append(line)
    print(line, flush=True)


def run(args, tag, workload, mode, traced, torch_env="1", steps=None):
    """One child run: (its TORCH_TRACKER dict or None, its dump path or None, stderr)."""
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if MODES[mode]:
        env["PYTORCH_CUDA_ALLOC_CONF"] = MODES[mode]
    if traced:
        kitlib = os.path.join(args.kit, "lib")
        env["LD_PRELOAD"] = os.path.join(args.kit, "libcumtrace.so")
        env["LD_LIBRARY_PATH"] = kitlib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["CUMTRACE_OUTPUT"] = os.path.join(args.out, tag + ".%p.dump")
        env["CUMTRACE_TORCH"] = torch_env
    else:
        env.pop("LD_PRELOAD", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", workload,
           "--steps", str(steps or args.steps)]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    open(os.path.join(args.out, tag + ".out"), "w").write(p.stdout)
    open(os.path.join(args.out, tag + ".err"), "w").write(p.stderr)
    info = None
    for line in p.stdout.splitlines():
        if line.startswith("TORCH_TRACKER "):
            info = json.loads(line[len("TORCH_TRACKER "):])
    dump = None
    if traced and info:
        cand = os.path.join(args.out, "%s.%d.dump" % (tag, info["pid"]))
        dump = cand if os.path.exists(cand) else None
    if p.returncode != 0 or info is None:
        verdict("FAIL", "%s ran" % tag, "rc %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    return info, dump, p.stderr


def mark_ts(ctdump, data):
    for _off, rtype, _flags, body in ctdump.records(data):
        if rtype == 8:
            ts, _aux, _tid, _kind, nlen = struct.unpack_from("<QQIHH", body)
            if body[24:24 + nlen].split(b"\0")[0] == MARK:
                return ts
    return None


def compare(args, ctdump, tag, info, dump, stderr, exact_allocated):
    warn = [l for l in stderr.splitlines() if l.startswith("cumtrace:")]
    verdict("PASS" if not warn else "FAIL", "%s: no framework-layer warning" % tag, "; ".join(warn))
    if not dump:
        verdict("FAIL", "%s: dump" % tag, "none found")
        return None
    data = open(dump, "rb").read()
    t_mark = mark_ts(ctdump, data)
    if t_mark is None:
        verdict("FAIL", "%s: mark" % tag, "not in the dump")
        return None
    fw = ctdump.framework_events(data)
    before = sorted((e for e in fw if e["ts"] <= t_mark), key=lambda e: e["ts"])
    count = {}
    live = {}
    for e in before:
        count[e["action"]] = count.get(e["action"], 0) + 1
        if e["action"] == "alloc":
            live[(e["device"], e["ptr"])] = e["size"]
        elif e["action"] == "free_requested":
            live.pop((e["device"], e["ptr"]), None)
    live_bytes = sum(live.values())

    def same(what, got, want):
        verdict("PASS" if got == want else "FAIL", "%s: %s" % (tag, what), "dump %s, torch %s" % (got, want))

    same("torch_alloc events = allocation.all.allocated", count.get("alloc", 0), info["allocated_count"])
    same("torch_free_requested events = allocation.all.freed", count.get("free_requested", 0),
         info["freed_count"])
    same("live requested bytes = requested_bytes.all.current", live_bytes, info["requested_current"])
    if exact_allocated:
        same("live bytes = memory_allocated()", live_bytes, info["memory_allocated"])
    else:
        verdict("INFO", "%s: live requested bytes vs memory_allocated()" % tag,
                "dump %d, torch %d (torch counts whole blocks)" % (live_bytes, info["memory_allocated"]))
    segs = count.get("segment_alloc", 0) + count.get("segment_map", 0)
    verdict("INFO", "%s: events before the mark" % tag,
            " ".join("%s=%d" % kv for kv in sorted(count.items())) +
            "; torch segment.all.allocated=%s" % info["segments"])
    if "segment_alloc" in count or not count.get("segment_map"):
        same("torch_segment_alloc events = segment.all.allocated", count.get("segment_alloc", 0),
             info["segments"])
    with_stacks = [e for e in before if e["action"] == "alloc"]
    py = sum(1 for e in with_stacks if e["py"])
    verdict("PASS" if with_stacks and all(e["stack"] for e in with_stacks) and py else "FAIL",
            "%s: torch_alloc events carry stacks" % tag,
            "%d of %d native, %d Python" % (sum(1 for e in with_stacks if e["stack"]), len(with_stacks), py))
    return len(fw)


def probe(args):
    """Compile the offsets probe against the installed torch's headers and run it."""
    try:
        q = subprocess.run([sys.executable, "-c", "import torch, os, sys\n"
                            "print(torch.__version__); print(os.path.dirname(torch.__file__));"
                            "print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        version, tdir, abi = q.stdout.split()
    except Exception as e:  # noqa: BLE001 - reported
        verdict("SKIP", "probe", "torch not importable: %s" % e)
        return
    major, minor = version.split(".")[:2]
    incs = [os.path.join(tdir, "include"), os.path.join(tdir, "include", "torch", "csrc", "api", "include")]
    cuda_inc = [d for d in ([os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")] +
                            glob.glob(os.path.join(os.path.dirname(tdir), "nvidia", "*", "include")))
                if os.path.exists(os.path.join(d, "cuda_runtime_api.h"))]
    exe = os.path.join(args.out, "torch_offsets_probe")
    cmd = (["g++", "-std=c++17", "-O0", "-D_GLIBCXX_USE_CXX11_ABI=" + abi, "-DTORCH_MAJOR=" + major,
            "-DTORCH_MINOR=" + minor, "-I" + os.path.join(ROOT, "preload", "hooks")] + ["-I" + d for d in incs + cuda_inc[:1]] +
           ["-o", exe, os.path.join(ROOT, "tests", "gpu", "torch_offsets_probe.cc")])
    c = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(args.out, "probe.build.txt"), "w").write(" ".join(cmd) + "\n" + c.stdout)
    if c.returncode != 0:
        verdict("SKIP", "probe: torch %s headers" % version,
                "does not compile (probe.build.txt): %s" % (c.stdout.strip().splitlines() or ["?"])[0][:200])
        return
    r = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in r.stdout.splitlines():
        print(line)
        results.append(line)
    if r.returncode != 0 and not r.stdout.strip():
        verdict("FAIL", "probe ran", "rc %d" % r.returncode)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kit", default="gpu-kit")
    ap.add_argument("--out", default="torch-tracker-out")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--perf-steps", type=int, default=300)
    ap.add_argument("--modes", default="default,expandable")
    ap.add_argument("--child", choices=("tensors", "mlp"))
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.steps)
    args.kit = os.path.abspath(args.kit)
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    if not os.path.exists(os.path.join(args.kit, "libcumtrace.so")):
        sys.exit("no %s/libcumtrace.so: run scripts/gpu-pack.sh and carry the kit" % args.kit)
    ctdump = load_ctdump(args.kit)

    probe(args)
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        info, dump, err = run(args, "tensors-" + mode, "tensors", mode, True, steps=200)
        if info:
            compare(args, ctdump, "tensors-" + mode, info, dump, err, True)
        info, dump, err = run(args, "mlp-" + mode, "mlp", mode, True)
        if info:
            compare(args, ctdump, "mlp-" + mode, info, dump, err, False)

    # overhead and bytes: the MLP in the default mode, alternating
    rates = {"plain": [], "off": [], "on": []}
    sizes = {"off": [], "on": []}
    events = []
    for rep in range(args.reps):
        for kind in ("plain", "off", "on"):
            tag = "perf-%s-%d" % (kind, rep)
            info, dump, _err = run(args, tag, "mlp", "default", kind != "plain",
                                   torch_env="0" if kind == "off" else "1", steps=args.perf_steps)
            if info and info.get("steps_per_s"):
                rates[kind].append(info["steps_per_s"])
            if dump and kind != "plain":
                sizes[kind].append(os.path.getsize(dump))
                if kind == "on":
                    events.append(len(ctdump.framework_events(open(dump, "rb").read())))
    med = {k: statistics.median(v) for k, v in rates.items() if v}
    if "plain" in med and "off" in med:
        r = med["off"] / med["plain"]
        verdict("PASS" if r >= 0.99 else "FAIL", "overhead: steps/s traced, framework layer off / untraced >= 0.99",
                "%.4f (%.1f / %.1f steps/s, medians of %d)" % (r, med["off"], med["plain"], len(rates["off"])))
    if "plain" in med and "on" in med:
        verdict("INFO", "overhead: steps/s traced, framework layer on / untraced",
                "%.4f (%.1f / %.1f steps/s)" % (med["on"] / med["plain"], med["on"], med["plain"]))
    if sizes["on"] and sizes["off"] and events and min(events):
        per = (statistics.median(sizes["on"]) - statistics.median(sizes["off"])) / statistics.median(events)
        verdict("PASS" if per <= 16 else "FAIL", "bytes: dump bytes per framework event <= 16",
                "%.2f (%d events; dumps %d and %d bytes, medians)" % (
                    per, statistics.median(events), statistics.median(sizes["on"]),
                    statistics.median(sizes["off"])))
    fails = sum(1 for r in results if r.startswith("FAIL"))
    open(os.path.join(args.out, "torch-tracker-results.txt"), "w").write("\n".join(results) + "\n")
    print("torch_tracker_check: %d PASS, %d FAIL, %d INFO, %d SKIP (all lines in %s)" % (
        sum(r.startswith("PASS") for r in results), fails, sum(r.startswith("INFO") for r in results),
        sum(r.startswith("SKIP") for r in results), os.path.join(args.out, "torch-tracker-results.txt")))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
