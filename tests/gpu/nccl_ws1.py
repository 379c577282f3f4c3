#!/usr/bin/env python3
"""torch.distributed with NCCL, world size 1, traced: every free matched (issue 19, 4 and 5).

usage: python3 tests/gpu/nccl_ws1.py --kit gpu-kit --out DIR [--steps N]

One process (rank 0 of 1, a FileStore in DIR, no network) trains a small MLP on cuda:0 and
all-reduces its gradients and an 8 MiB tensor over NCCL for N steps (default 5), then
destroys the process group. NCCL's cuMem path is its default (NCCL_CUMEM_ENABLE unset); NVLink
multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1: never cuMulticastCreate on these machines). Runs:

  plain     untraced: the result line (the all-reduced values) to compare with
  traced    LD_PRELOAD=libcumtrace.so, NCCL's default (cuMem) path
  cudamalloc traced with NCCL_CUMEM_ENABLE=0 (NCCL's cudaMalloc path), for comparison

Checks (PASS/FAIL lines, then a table):
  - each run exited 0 and printed the same result as the untraced run;
  - the traced dumps: unmatched frees == 0 (issue 19 measured 194 before the retain model),
    allocations over a live block == 0;
  - NCCL's memory per communicator: a communicator, rank 0 of 1, with bytes > 0;
  - INFO: the imported/shared figures (retains of NCCL's ncclCuMemFree and their releases),
    the cuMem calls, the leaks, every communicator's figures, NCCL's NVTX ranges ("NCCL/...").
Exits 1 on any FAIL.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

CHILD = r'''
import json, os, sys, torch, torch.distributed as dist
out, steps = sys.argv[1], int(sys.argv[2])
torch.cuda.set_device(0)
store = dist.FileStore(os.path.join(out, "store.%d" % os.getpid()), 1)
dist.init_process_group("nccl", store=store, rank=0, world_size=1, device_id=torch.device("cuda", 0))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 512, device="cuda")
big = torch.ones(2 * 1024 * 1024, device="cuda")  # 8 MiB of float32
for _ in range(steps):
    opt.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    dist.all_reduce(big)
    opt.step()
torch.cuda.synchronize()
res = {"loss": round(float(loss.item()), 4), "big": float(big[0].item()), "steps": steps}
dist.destroy_process_group()
print("RESULT " + json.dumps(res, sort_keys=True), flush=True)
'''

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
fails = 0
rows = []


def verdict(ok, what, detail):
    global fails
    word = "PASS" if ok is True else "FAIL" if ok is False else "INFO"
    if ok is False:
        fails += 1
    print("%s nccl: %s: %s" % (word, what, detail), flush=True)
    if ok is not None:
        rows.append((word, what, detail))


def run(args, tag, traced, extra_env):
    env = dict(os.environ)
    env.update(NO_MULTICAST)
    env.update(extra_env)
    env.setdefault("NCCL_DEBUG", "WARN")
    if traced:
        env["LD_PRELOAD"] = os.path.join(args.kit, "libcumtrace.so")
        env["CUMTRACE_OUTPUT"] = os.path.join(args.out, tag + ".%p.dump")
        env["CUMTRACE_QUIET"] = "1"
        env["NVTX_INJECTION64_PATH"] = env["LD_PRELOAD"]  # NCCL's ranges as marks (issue 19, 5)
    for old in glob.glob(os.path.join(args.out, tag + ".*.dump")):
        os.unlink(old)
    script = os.path.join(args.out, "nccl_child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    try:
        p = subprocess.run([sys.executable, script, args.out, str(args.steps)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=args.timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", e.stderr or ""
        out = out if isinstance(out, str) else out.decode(errors="replace")
        err = err if isinstance(err, str) else err.decode(errors="replace")
    with open(os.path.join(args.out, tag + ".out"), "w") as f:
        f.write(out)
    with open(os.path.join(args.out, tag + ".err"), "w") as f:
        f.write(err)
    result = [l for l in out.splitlines() if l.startswith("RESULT ")]
    verdict(rc == 0 and len(result) == 1, "%s: ran" % tag, "exit %d%s" % (rc, "" if rc == 0 else ": " + err.strip()[-300:]))
    dumps = sorted(glob.glob(os.path.join(args.out, tag + ".*.dump")))
    return (result[0] if result else None), dumps


def report(args, cmd, dump):
    p = subprocess.run([os.path.join(args.kit, "cumtrace-report"), cmd, "--format", "json", dump],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": (p.stderr or p.stdout).strip()[-300:]}


def check_dump(args, tag, dumps, plain):
    if len(dumps) != 1:
        verdict(False, "%s: one dump" % tag, "found %d: %s" % (len(dumps), dumps))
        return
    d = dumps[0]
    s = report(args, "summary", d)
    if "error" in s:
        verdict(False, "%s: summary" % tag, s["error"])
        return
    dj = (s.get("dumps") or [{}])[0]
    um, da = dj.get("unmatched_frees"), dj.get("double_allocations")
    verdict(um == 0, "%s: unmatched frees == 0" % tag, "%s (issue 19 measured 194 before)" % um)
    verdict(da == 0, "%s: allocations over a live block == 0" % tag, "%s" % da)
    apis = s.get("summary", {}).get("apis", {})
    cumem = {a: (v["calls"], v["failures"]) for a, v in apis.items()
             if a.startswith("cuMem") or a.startswith("cudaIpc") or a.startswith("cuIpc") or a.startswith("cuMulticast")}
    verdict(None, "%s: cuMem and IPC calls (calls, failures)" % tag, json.dumps(cumem, sort_keys=True))
    verdict(None, "%s: imported/shared" % tag, json.dumps(dj.get("imported"), sort_keys=True))
    verdict("cuMulticastCreate" not in apis, "%s: no cuMulticastCreate" % tag, "%s" % apis.get("cuMulticastCreate"))
    lk = report(args, "leaks", d).get("leaks", {})
    verdict(None, "%s: leaks" % tag, "%s allocations, %s bytes" % (lk.get("count"), lk.get("bytes")))
    nccl = dj.get("nccl") or {}
    comms = nccl.get("communicators", [])
    verdict(None, "%s: NCCL memory per communicator" % tag, json.dumps(nccl, sort_keys=True)[:1500])
    ok = any(c.get("nranks") == 1 and c.get("rank") == 0 and c.get("bytes", 0) > 0 for c in comms)
    verdict(ok, "%s: a communicator (rank 0 of 1) with its memory" % tag,
            "; ".join("%s %s rank %s/%s: %s bytes in %s allocations, %s live at end, ended by %s" % (
                c.get("comm"), c.get("made_by"), c.get("rank"), c.get("nranks"), c.get("bytes"),
                c.get("allocations"), c.get("live_bytes_at_end"), c.get("ended_by")) for c in comms)
            + "; outside init %s" % json.dumps(nccl.get("outside_init")))
    marks = [m["name"] for m in s.get("marks", []) if m.get("name", "").startswith("NCCL/")]
    verdict(None, "%s: NCCL's NVTX ranges (NVTX_INJECTION64_PATH)" % tag,
            "%d, e.g. %s" % (len(marks), sorted(set(marks))[:5]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=180)
    args = ap.parse_args()
    args.kit = os.path.abspath(args.kit)
    os.makedirs(args.out, exist_ok=True)
    args.out = os.path.abspath(args.out)
    os.environ["LD_LIBRARY_PATH"] = os.path.join(args.kit, "lib") + (
        ":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
    plain, _ = run(args, "plain", False, {})
    verdict(None, "plain: result", plain)
    for tag, extra in (("traced", {}), ("cudamalloc", {"NCCL_CUMEM_ENABLE": "0"})):
        res, dumps = run(args, tag, True, extra)
        verdict(res is not None and res == plain, "%s: same result as untraced" % tag, "%s vs %s" % (res, plain))
        check_dump(args, tag, dumps, plain)
    print("\n%-5s %s" % ("", "nccl_ws1: %d checks, %d failed" % (len(rows), fails)))
    for word, what, detail in rows:
        print("%-5s %-50s %s" % (word, what, " ".join(str(detail).split())[:100]))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
