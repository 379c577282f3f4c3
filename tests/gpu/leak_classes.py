#!/usr/bin/env python3
"""Workloads for the leak-class and growth check on a GPU (scripts/gpu-leak-classes.sh).

usage: leak_classes.py torch [--steps N] [--leak-bytes B] [--nvtx] | cupy | jax | nccl

torch: an MLP trained for N steps (default 12); each step starts with
       cumtrace_mark("step") (or, with --nvtx, runs inside
       torch.cuda.nvtx.range_push("iteration")); --leak-bytes B appends a fresh
       CUDA tensor of B bytes to a list every step (the planted growth leak).
       The caching allocator's mode comes from the environment.
cupy:  arrays through CuPy's default memory pool, kept.
jax:   arrays and a matmul through XLA's allocator, kept.
nccl:  a one-process NCCL group (torch.distributed) and an all_reduce.

Each prints one line: GROUND_TRUTH {json}. Tensors and arrays are kept
through interpreter shutdown so that the caches hold them at exit.
"""
import argparse
import ctypes
import json
import os
import sys

from cupy_jax import pin_forever  # beside this file (tests/gpu, gpu-kit/src)


def marker():
    """cumtrace_mark when the shim is preloaded, else a no-op."""
    try:
        fn = ctypes.CDLL(None).cumtrace_mark
    except AttributeError:
        return lambda name: None
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    return lambda name: fn(name.encode())


def run_torch(args):
    import torch

    dev = torch.device("cuda", 0)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(),
                                torch.nn.Linear(2048, 1024)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(2048, 1024, device=dev)
    y = torch.randn(2048, 1024, device=dev)
    mark = marker()
    history = []
    numel = args.leak_bytes // 4
    for i in range(args.steps):
        if args.nvtx:
            torch.cuda.nvtx.range_push("iteration")
        else:
            mark("step")
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if numel:
            history.append(torch.full((numel,), float(i), device=dev))  # the planted leak
        torch.cuda.synchronize()
        if args.nvtx:
            torch.cuda.nvtx.range_pop()
    if not args.nvtx:
        mark("step")
    gt = {"program": "torch", "pid": os.getpid(), "torch": torch.__version__,
          "steps": args.steps, "leak_bytes_per_step": args.leak_bytes,
          "nvtx": args.nvtx,
          "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
          "no_caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"),
          "memory_reserved": int(torch.cuda.memory_reserved(dev))}
    print("GROUND_TRUTH " + json.dumps(gt), flush=True)
    pin_forever(model, opt, x, y, history)


def run_cupy():
    import cupy as cp

    a = cp.arange(16 << 20, dtype=cp.float32)
    b = cp.ones((2048, 2048), dtype=cp.float64)
    s = float((a * 2).sum()) + float(b.sum())
    pool = cp.get_default_memory_pool()
    print("GROUND_TRUTH " + json.dumps({"program": "cupy", "pid": os.getpid(),
                                        "pool_total": pool.total_bytes(), "result": s}), flush=True)
    pin_forever(pool, a, b)


def run_jax():
    import jax
    import jax.numpy as jnp

    x = jnp.ones((4096, 4096), jnp.float32)
    y = (x @ x).block_until_ready()
    print("GROUND_TRUTH " + json.dumps({"program": "jax", "pid": os.getpid(),
                                        "result": float(y[0, 0])}), flush=True)
    pin_forever(x, y)


def run_nccl():
    import torch
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    t = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print("GROUND_TRUTH " + json.dumps({"program": "nccl", "pid": os.getpid(),
                                        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                                        "result": float(t[0])}), flush=True)
    pin_forever(t)
    os._exit(0)  # no destroy_process_group: the communicator's buffers stay live at exit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["torch", "cupy", "jax", "nccl"])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--leak-bytes", type=int, default=0)
    ap.add_argument("--nvtx", action="store_true")
    args = ap.parse_args()
    if args.what == "torch":
        run_torch(args)
    elif args.what == "cupy":
        run_cupy()
    elif args.what == "jax":
        run_jax()
    else:
        run_nccl()
    return 0


if __name__ == "__main__":
    sys.exit(main())
