#!/usr/bin/env python3
"""A small deterministic PyTorch training loop for cumtrace's GPU validation.

usage: train.py [--mode default|expandable|async|nocache] [--steps N] [--warmup N]
                [--leak-bytes B] [--profile] [--model mlp|resnet50] [--nvtx] [--history]

--mode sets the allocator before torch starts (without it, the environment decides):
  default     the caching allocator
  expandable  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  async       PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
  nocache     PYTORCH_NO_CUDA_MEMORY_CACHING=1
--leak-bytes B  plants a leak: every step appends a fresh CUDA tensor of B bytes to a
                list that is never cleared
--profile       runs the timed steps under torch.profiler (CPU + CUDA activities)
--model         mlp (default, below) or resnet50 (torchvision, random weights, synthetic
                224x224 images, batch --batch: a real model for the overhead figures)
--nvtx          wraps every step in torch.cuda.nvtx.range_push("step") / range_pop()
--history       torch.cuda.memory._record_memory_history(stacks="all") during the run
                (PyTorch's own memory snapshot, for the overhead comparison)

An MLP (1024 -> 2048 x4 -> 1024, fp32, Adam) trains on one fixed batch of 4096: a few
hundred MiB at the peak. At the end it prints one line

  GROUND_TRUTH {json}

with torch's own memory statistics (max_memory_reserved, memory_reserved,
max_memory_allocated, memory_allocated), the bytes of every CUDA tensor it still holds,
the planted leak, steps/s and the last loss. Every CUDA tensor is then kept alive
through interpreter shutdown, so what is live at exit is exactly what was measured.
"""
import argparse
import ctypes
import gc
import json
import os
import sys
import time

MODES = {
    "default": {},
    "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "nocache": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}
ALLOC_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING")


def mode_from_env():
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"):
        return "nocache"
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if "cudaMallocAsync" in conf:
        return "async"
    if "expandable_segments:True" in conf:
        return "expandable"
    return "default"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=sorted(MODES))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--leak-bytes", type=int, default=0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--model", choices=("mlp", "resnet50"), default="mlp")
    ap.add_argument("--nvtx", action="store_true")
    ap.add_argument("--history", action="store_true")
    ap.add_argument("--hidden", type=int, default=2048)
    args = ap.parse_args()
    if args.leak_bytes % 4:
        ap.error("--leak-bytes must be a multiple of 4 (float32 elements)")
    if args.batch is None:
        args.batch = 4096 if args.model == "mlp" else 64
    return args


def build(args, torch, dev, gen):
    """The model, its optimizer and one fixed batch (x, y) with its loss function."""
    if args.model == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None, num_classes=1000).to(dev)
        x = torch.randn(args.batch, 3, 224, 224, device=dev, generator=gen)
        y = torch.randint(0, 1000, (args.batch,), device=dev, generator=gen)
        return model, x, y, torch.nn.functional.cross_entropy
    h = args.hidden
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, h), torch.nn.GELU(),
        torch.nn.Linear(h, h), torch.nn.GELU(),
        torch.nn.Linear(h, h), torch.nn.GELU(),
        torch.nn.Linear(h, h), torch.nn.GELU(),
        torch.nn.Linear(h, 1024),
    ).to(dev)
    x = torch.randn(args.batch, 1024, device=dev, generator=gen)
    y = torch.randn(args.batch, 1024, device=dev, generator=gen)
    return model, x, y, torch.nn.functional.mse_loss


def pin_forever(*objs):
    """Take a reference that is never dropped: these objects, and the CUDA memory
    behind them, survive interpreter shutdown (the process exit releases it)."""
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]
    incref.restype = None
    for o in objs:
        incref(o)


def main():
    args = parse_args()
    if args.mode:
        for v in ALLOC_VARS:
            os.environ.pop(v, None)
        os.environ.update(MODES[args.mode])
    mode = mode_from_env()
    # Deterministic cuBLAS: must be set before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

    import torch

    torch.manual_seed(1234)
    # resnet50's adaptive pooling backward has no deterministic CUDA kernel.
    torch.use_deterministic_algorithms(args.model == "mlp")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)

    if args.history:
        torch.cuda.memory._record_memory_history(stacks="all")
    gen = torch.Generator(device=dev)
    gen.manual_seed(42)
    model, x, y, loss_fn = build(args, torch, dev, gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    leak = []
    leak_numel = args.leak_bytes // 4

    def step(i):
        if args.nvtx:
            torch.cuda.nvtx.range_push("step")
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if leak_numel:
            leak.append(torch.full((leak_numel,), float(i), device=dev))  # LEAK_LINE
        if args.nvtx:
            torch.cuda.nvtx.range_pop()
        return loss

    loss = None
    for i in range(args.warmup):
        loss = step(i)
    torch.cuda.synchronize()

    prof_info = {}
    t0 = time.perf_counter()
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        try:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(args.warmup, args.warmup + args.steps):
                    loss = step(i)
                torch.cuda.synchronize()
            events = prof.events()
            cuda_type = getattr(torch.autograd, "DeviceType", None)
            n_cuda = 0
            for e in events:
                dt = getattr(e, "device_type", None)
                if cuda_type is not None and dt == cuda_type.CUDA:
                    n_cuda += 1
            prof_info = {"profiler_events": len(events), "profiler_cuda_events": n_cuda}
        except Exception as e:  # reported, not fatal: the check reads it
            prof_info = {"profiler_error": f"{type(e).__name__}: {e}"}
    else:
        for i in range(args.warmup, args.warmup + args.steps):
            loss = step(i)
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    last_loss = float(loss.item())
    del loss
    gc.collect()
    torch.cuda.synchronize()

    # Every CUDA tensor the program still holds, counted once per storage.
    seen = {}

    def count(t):
        if isinstance(t, torch.Tensor) and t.is_cuda:
            s = t.untyped_storage()
            seen[s.data_ptr()] = s.nbytes()

    for p in model.parameters():
        count(p)
        count(p.grad)
    for st in opt.state.values():
        for v in st.values():
            count(v)
    for t in [x, y] + leak:
        count(t)

    def stat(fn):
        try:
            return int(fn(dev))
        except Exception:  # a statistic this allocator backend does not keep
            return None

    gt = {
        "program": "train",
        "pid": os.getpid(),
        "mode": mode,
        "alloc_env": {v: os.environ.get(v) for v in ALLOC_VARS},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(dev),
        "steps": args.steps,
        "warmup": args.warmup,
        "steps_per_s": args.steps / elapsed if elapsed > 0 else None,
        "last_loss": last_loss,
        "max_memory_reserved": stat(torch.cuda.max_memory_reserved),
        "memory_reserved": stat(torch.cuda.memory_reserved),
        "max_memory_allocated": stat(torch.cuda.max_memory_allocated),
        "memory_allocated": stat(torch.cuda.memory_allocated),
        "tensor_bytes": sum(seen.values()),
        "tensors": len(seen),
        "leak_tensor_bytes": args.leak_bytes,
        "leak_count": len(leak),
        "leak_bytes": args.leak_bytes * len(leak),
        "profile": args.profile,
        "model": args.model,
        "batch": args.batch,
        "nvtx": args.nvtx,
        "history": args.history,
    }
    gt.update(prof_info)
    print("GROUND_TRUTH " + json.dumps(gt), flush=True)
    pin_forever(model, opt, x, y, leak)
    return 0


if __name__ == "__main__":
    sys.exit(main())
