#!/usr/bin/env python3
"""CuPy and JAX workloads for cumtrace's GPU validation.

usage: cupy_jax.py cupy | jax

cupy: allocations through CuPy's default memory pool, one free_all_blocks() (real frees)
      in the middle; prints the pool's total_bytes() at its largest and at the end, and
      used_bytes(). The pool and its arrays are kept through interpreter shutdown, so
      what the pool holds at the end is what is live at exit.
jax:  a few arrays and a matmul; prints the device's memory_stats(). Run it with
      XLA_PYTHON_CLIENT_PREALLOCATE=false and without (XLA then reserves 75% of the
      GPU memory up front).

Each prints one line: GROUND_TRUTH {json}
"""
import ctypes
import json
import os
import sys


def pin_forever(*objs):
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]
    incref.restype = None
    for o in objs:
        incref(o)


def run_cupy():
    import cupy as cp

    pool = cp.get_default_memory_pool()
    peak = 0
    marks = []

    def mark(what):
        nonlocal peak
        cp.cuda.Device().synchronize()
        total = pool.total_bytes()
        peak = max(peak, total)
        marks.append([what, total, pool.used_bytes()])

    a = cp.arange(16 << 20, dtype=cp.float32)  # 64 MiB
    mark("a")
    b = cp.ones((4096, 4096), dtype=cp.float64)  # 128 MiB
    mark("b")
    c = float((a * 2).sum())  # a temporary of 64 MiB, returned to the pool
    mark("a*2")
    d = b + 1.0  # 128 MiB
    mark("d")
    s = c + float(d.sum())
    mark("d.sum")
    del b, d
    pool.free_all_blocks()  # unused chunks go back to CUDA: real frees
    mark("free_all_blocks")
    e = cp.zeros(32 << 20, dtype=cp.uint8)  # 32 MiB
    e += 1
    mark("e")
    s += float(e.sum())
    mark("e.sum")
    gt = {
        "program": "cupy",
        "pid": os.getpid(),
        "cupy": cp.__version__,
        "pool_total_peak": peak,
        "pool_total_end": pool.total_bytes(),
        "pool_used_end": pool.used_bytes(),
        "marks": marks,
        "result": s,
    }
    print("GROUND_TRUTH " + json.dumps(gt), flush=True)
    pin_forever(pool, a, e)


def run_jax():
    import jax
    import jax.numpy as jnp

    dev = jax.devices()[0]
    x = jnp.ones((8192, 8192), jnp.float32)  # 256 MiB
    y = (x @ x).block_until_ready()  # 256 MiB more, plus cuBLAS workspace
    z = float(jnp.sin(y[:1024, :1024]).sum())
    del y
    w = jnp.arange(1 << 24, dtype=jnp.float32).block_until_ready()  # 64 MiB
    stats = dev.memory_stats() or {}
    gt = {
        "program": "jax",
        "pid": os.getpid(),
        "jax": jax.__version__,
        "device": str(dev),
        "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "(default: true)"),
        "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "(default)"),
        "memory_stats": {k: int(v) for k, v in stats.items()},
        "result": z + float(w[-1]),
    }
    print("GROUND_TRUTH " + json.dumps(gt), flush=True)
    pin_forever(x, w)


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("cupy", "jax"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    (run_cupy if sys.argv[1] == "cupy" else run_jax)()
    return 0


if __name__ == "__main__":
    sys.exit(main())
