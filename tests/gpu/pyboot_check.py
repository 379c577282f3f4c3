#!/usr/bin/env python3
"""The Python bootstrap (preload/pyboot.c, python/cumtrace) with the real torch, CuPy and JAX,
on a GPU machine with the kit that scripts/gpu-pack.sh makes (gpu-kit/python holds the package).

usage: python3 tests/gpu/pyboot_check.py --kit gpu-kit --out DIR [--steps N] [--only NAME,...]

Run it from the repository root. Every line that matters starts with PASS, FAIL, INFO or SKIP;
each child's stdout, stderr and dump stay in DIR. The programs know nothing of cumtrace
unless said: plain LD_PRELOAD, no wrapper, no marks.

  optim       a training loop (Linear + SGD) keeping 4 MiB per step in a list, N steps, with
              PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor a cudaMalloc the CUDA layer sees):
              no bootstrap warning; the summary says "N from optimizer hooks"; the growth
              series is the optimizer's (kind optimizer, N-1 steps) and finds a growing site
              whose Python frames include the line that keeps the tensor
  optim-cache the same loop under the default caching allocator: the series is the
              optimizer's (growth itself is INFO: tensors live inside segments)
  explicit    the loop with two optimizers stepping and cumtrace.step() once per step
              (PYTHONPATH=kit/python): the series used is the explicit one, N-1 steps
  off         the optim loop with CUMTRACE_PYTHON_BOOT=0: no step is recorded
  cupy        CuPy's default pool: a first array (made before the bootstrap), then arrays
              kept and freed; at the exit mark (the teardown frees the rest after it) the live
              bytes of the dump's cupy_alloc / cupy_free events plus the first
              cupy.used_bytes counter must equal pool.used_bytes()
  jax         a few jitted steps with cumtrace.step() (XLA_PYTHON_CLIENT_PREALLOCATE=false):
              the last jax.bytes_in_use / peak_bytes_in_use counter of each device must equal
              memory_stats() read right after the last step
"""
import argparse
import json
import os
import re
import subprocess
import sys

results = []

CHILD = r'''
import os, sys
which, steps = sys.argv[1], int(sys.argv[2])
if which in ("optim", "optim-cache", "explicit", "off"):
    import torch
    model = torch.nn.Linear(1024, 1024).cuda()
    opts = [torch.optim.SGD(model.parameters(), lr=1e-3)]
    if which == "explicit":
        import cumtrace
        opts.append(torch.optim.Adam(model.parameters(), lr=1e-3))
    kept = []
    x = torch.randn(64, 1024, device="cuda")
    for i in range(steps):
        loss = model(x).square().mean()
        loss.backward()
        for o in opts:
            o.step()
            o.zero_grad()
        kept.append(torch.empty(1 << 20, dtype=torch.float32, device="cuda"))  # KEEP-LINE
        if which == "explicit":
            cumtrace.step()
    torch.cuda.synchronize()
    print("RESULT", json.dumps({"pid": os.getpid()}))
elif which == "cupy":
    import cupy
    pool = cupy.get_default_memory_pool()
    first = cupy.zeros(1 << 20, dtype=cupy.uint8)      # makes the first CUDA call: before the bootstrap
    for _ in range(3):
        pass                                            # the bootstrap runs here
    kept = []
    for i in range(40):
        a = cupy.ones((i + 1) * 4096, dtype=cupy.float32)
        if i % 3 == 0:
            kept.append(a)
        del a
    cupy.cuda.Device().synchronize()
    print("RESULT", json.dumps({"pid": os.getpid(), "used_bytes": pool.used_bytes()}))
elif which == "jax":
    import jax, jax.numpy as jnp
    import cumtrace
    f = jax.jit(lambda a: (a @ a).sum())
    keep = []
    for i in range(steps):
        keep.append(jnp.ones((1024, 256 * (i + 1)), dtype=jnp.float32))
        f(jnp.ones((512, 512))).block_until_ready()
        cumtrace.step()
    stats = {d.id: {k: d.memory_stats()[k] for k in ("bytes_in_use", "peak_bytes_in_use")}
             for d in jax.local_devices()}
    print("RESULT", json.dumps({"pid": os.getpid(), "stats": stats}))
'''


def verdict(kind, what, detail=""):
    line = "%-4s %s%s" % (kind, what, (": " + detail) if detail else "")
    results.append(line)
    print(line, flush=True)


def run(args, tag, which, extra_env=None, steps=None, child=None, argv=(), launcher=()):
    """One traced child: (its RESULT dict or None, its dump or None, stderr). child: the
    program's source (default: CHILD), argv: more arguments, launcher: a command before
    python (torchrun; the RESULT line of the first rank that prints one counts)."""
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    kit = os.path.abspath(args.kit)
    env["LD_PRELOAD"] = os.path.join(kit, "libcumtrace.so")
    env["LD_LIBRARY_PATH"] = os.path.join(kit, "lib") + (":" + env["LD_LIBRARY_PATH"]
                                                          if env.get("LD_LIBRARY_PATH") else "")
    env["CUMTRACE_OUTPUT"] = os.path.join(args.out, tag + ".%p.dump")
    env.update(extra_env or {})
    script = os.path.join(args.out, "child.py" if child is None else tag + ".py")
    with open(script, "w") as f:
        f.write("import json\n" + (CHILD if child is None else child))
    cmd = list(launcher or [sys.executable]) + [script, which, str(steps or args.steps)] + list(argv)
    p = subprocess.run(cmd, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    open(os.path.join(args.out, tag + ".out"), "w").write(p.stdout)
    open(os.path.join(args.out, tag + ".err"), "w").write(p.stderr)
    info = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            info = json.loads(line[len("RESULT "):])
    dump = None
    if info:
        cand = os.path.join(args.out, "%s.%d.dump" % (tag, info["pid"]))
        dump = cand if os.path.exists(cand) else None
    if p.returncode != 0 or info is None or dump is None:
        verdict("FAIL", "%s ran" % tag, "rc %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    if "Python bootstrap failed" in p.stderr:
        verdict("FAIL", "%s: bootstrap warning" % tag, p.stderr.strip()[-300:])
    return info, dump, p.stderr


def report(args, tag, what, dump, json_out=True, extra=()):
    cmd = [os.path.join(args.kit, "cumtrace-report"), what, dump] + list(extra)
    if json_out:
        cmd += ["--format", "json"]
    env = dict(os.environ)
    # the report needs the kit's libdw/libelf/libunwind (the GPU machine has none)
    lib = os.path.join(os.path.abspath(args.kit), "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    open(os.path.join(args.out, "%s.%s.%s" % (tag, what, "json" if json_out else "txt")), "w").write(p.stdout)
    if p.returncode != 0:
        verdict("FAIL", "%s: cumtrace-report %s" % (tag, what), "rc %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
        return {} if json_out else ""
    return json.loads(p.stdout) if json_out else p.stdout


def check(what, ok, detail=""):
    verdict("PASS" if ok else "FAIL", what, detail)


def optim(args, tag, which, env, want_kind, growth_needed):
    info, dump, _ = run(args, tag, which, env)
    if not dump:
        return
    n = args.steps
    text = report(args, tag, "summary", dump, json_out=False)
    opt_steps = n * (2 if which == "explicit" else 1)
    want = "  steps: %d explicit (cumtrace.step), %d from optimizer hooks" % (
        n if which == "explicit" else 0, opt_steps)
    check("%s summary steps" % tag, want in text.splitlines(), want)
    j = report(args, tag, "leaks", dump)
    series = j.get("leaks", {}).get("growth", {}).get("series", [])
    got = [(s["kind"], s["steps"]) for s in series]
    check("%s series" % tag, got == [(want_kind, n - 1)], "got %s, want %s" % (got, [(want_kind, n - 1)]))
    sites = j.get("leaks", {}).get("growth", {}).get("sites", [])
    src = open(os.path.join(args.out, "child.py")).read().splitlines()
    line = 1 + [i for i, l in enumerate(src) if l.endswith("# KEEP-LINE")][0]
    at_line = [s for s in sites if any(f.get("python") and f.get("line") == line for f in s["stack"])]
    (check if growth_needed else lambda w, ok, d="": verdict("INFO", w, d))(
        "%s growth at the KEEP line" % tag, bool(at_line),
        "%d growing sites, %d at line %d" % (len(sites), len(at_line), line))


def off(args):
    info, dump, _ = run(args, "off", "optim", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
                                               "CUMTRACE_PYTHON_BOOT": "0"})
    if dump:
        text = report(args, "off", "summary", dump, json_out=False)
        check("off: no steps", "steps:" not in text)


def cupy_check(args):
    try:
        import cupy  # noqa: F401
    except ImportError:
        verdict("SKIP", "cupy", "cupy is not installed")
        return
    info, dump, _ = run(args, "cupy", "cupy")
    if not dump:
        return
    ctdump = os.path.join(args.kit, "ctdump.py")
    out = subprocess.run([sys.executable, ctdump, dump], stdout=subprocess.PIPE, text=True).stdout
    live = {}
    first_counter = None
    for l in out.splitlines():
        if re.search(r" mark ts=\d+ (exit|kind6) ", l):
            break  # the program's exit point: the interpreter's teardown frees the rest
        m = re.search(r"framework ts=\d+ (cupy_alloc|cupy_free) ptr=(0x[0-9a-f]+) size=(\d+)", l)
        if m:
            if m.group(1) == "cupy_alloc":
                live[m.group(2)] = int(m.group(3))
            else:
                live.pop(m.group(2), None)
        m = re.search(r"counter ts=\d+ cupy\.used_bytes=(\d+)", l)
        if m and first_counter is None:
            first_counter = int(m.group(1))
    got = sum(live.values()) + (first_counter or 0)
    check("cupy used bytes at exit", got == info["used_bytes"],
          "dump %d (+ %s before the hook) vs pool.used_bytes() %d" % (
              sum(live.values()), first_counter, info["used_bytes"]))


def jax_check(args):
    try:
        import jax  # noqa: F401
    except ImportError:
        verdict("SKIP", "jax", "jax is not installed")
        return
    pkg = os.path.join(os.path.abspath(args.kit), "python")
    info, dump, _ = run(args, "jax", "jax", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                                             "PYTHONPATH": pkg})
    if not dump:
        return
    j = report(args, "jax", "summary", dump)
    counters = {(c["name"], c["device"]): c for c in j["dumps"][0].get("counters", [])}
    for dev, st in info["stats"].items():
        for key in ("bytes_in_use", "peak_bytes_in_use"):
            c = counters.get(("jax." + key, int(dev)))
            check("jax device %s %s" % (dev, key), c is not None and c["last"] == st[key]
                  and c["samples"] == args.steps,
                  "counter %s vs memory_stats %d" % (c and (c["samples"], c["last"]), st[key]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not os.path.exists(os.path.join(args.kit, "python", "cumtrace", "__init__.py")):
        verdict("FAIL", "kit", "no %s/python/cumtrace: scripts/gpu-pack.sh packs it" % args.kit)
    only = set(filter(None, args.only.split(",")))
    want = lambda name: not only or name in only
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
        verdict("SKIP", "torch checks", "torch is not installed")
    if have_torch and want("optim"):
        optim(args, "optim", "optim", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, "optimizer", True)
    if have_torch and want("optim-cache"):
        optim(args, "optim-cache", "optim-cache", {}, "optimizer", False)
    if have_torch and want("explicit"):
        optim(args, "explicit", "explicit", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
                                             "PYTHONPATH": os.path.join(os.path.abspath(args.kit), "python")},
              "step", True)
    if have_torch and want("off"):
        off(args)
    if want("cupy"):
        cupy_check(args)
    if want("jax"):
        jax_check(args)
    fails = sum(1 for r in results if r.startswith("FAIL"))
    print("pyboot_check: %d checks, %d failed" % (sum(1 for r in results if r[:4] in ("PASS", "FAIL")), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
