# Driven by tests/e2e/t_pyboot.sh: a Python program that knows nothing of
# cumtrace (unless the scenario says so), run with the stand-in frameworks of
# tests/e2e/pyfw on PYTHONPATH and the fake CUDA runtime through ctypes.
# argv: SCENARIO
#   optim      import torch, then a loop of 12 optimizer steps that keeps 1 MiB
#              per step (KEEP-LINE) and frees a temporary: no marks at all
#   late       the same, torch imported after the first CUDA call
#   explicit   two optimizer steps per iteration, cumtrace.step() once per
#              iteration (the package's explicit boundary)
#   cupy       CuPy's default pool: 6 blocks taken (the first before the
#              bootstrap), 4 freed on the main thread, 1 taken and freed on a
#              thread of its own (CuPy hooks are per thread: not seen), then
#              cumtrace.step()
#   jax        3 cumtrace.step() with the stand-in jax's stats set
#   plain      one allocation and free; prints sys.path
#   thread     the first CUDA call on a thread of its own, then the optim loop
#   fork       2 optimizer steps, then a fork: the child makes 3 and leaves
#              with os._exit, the parent 4 more after waiting for it
# It prints the same lines traced or not.
import ctypes
import sys
import threading

rt = ctypes.CDLL("libcudart.so.13")
kept = []


def cuda_alloc(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    return p


def train(opt, steps, per_iteration=1, explicit=False):
    for i in range(steps):
        tmp = cuda_alloc(4096)
        kept.append(cuda_alloc(1 << 20))  # KEEP-LINE
        rt.cudaFree(tmp)
        for _ in range(per_iteration):
            opt.step()
        if explicit:
            import cumtrace
            cumtrace.step()


scenario = sys.argv[1]
if scenario == "optim":
    import torch
    train(torch.optim.SGD([]), 12)
elif scenario == "late":
    rt.cudaFree(cuda_alloc(256))
    for _ in range(3):
        pass  # the bootstrap runs between two bytecodes, before torch is imported
    import torch
    train(torch.optim.SGD([]), 12)
elif scenario == "explicit":
    import torch
    train(torch.optim.Adam([]), 10, per_iteration=2, explicit=True)
elif scenario == "cupy":
    import cupy
    pool = cupy.get_default_memory_pool()
    blocks = [pool.malloc(1000 * (i + 1)) for i in range(6)]  # the first before the bootstrap
    for b in blocks[:4]:
        pool.free(b)
    t = threading.Thread(target=lambda: pool.free(pool.malloc(3000)))
    t.start()
    t.join()
    import cumtrace
    cumtrace.step()
    print("pool used bytes", pool.used_bytes())
elif scenario == "jax":
    import cumtrace
    import jax
    rt.cudaFree(cuda_alloc(256))
    for i in range(3):
        jax._use(0, (i + 1) << 20)
        jax._use(1, 5 << 20)
        cumtrace.step()
elif scenario == "thread":
    import torch
    worker = threading.Thread(target=lambda: rt.cudaFree(cuda_alloc(256)))
    worker.start()
    worker.join()
    train(torch.optim.SGD([]), 12)
elif scenario == "fork":
    import os
    import torch
    opt = torch.optim.SGD([])
    train(opt, 2)
    pid = os.fork()
    if pid == 0:
        train(opt, 3)
        os._exit(0)
    os.waitpid(pid, 0)
    train(opt, 4)
elif scenario == "plain":
    rt.cudaFree(cuda_alloc(256))
    for _ in range(3):
        pass
    print("sys.path", sys.path)
print("done", scenario, len(kept))
