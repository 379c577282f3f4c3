"""Drive the stand-in for PyTorch's libc10_cuda.so (tests/fake/c10_cuda.cc) through
ctypes as PyTorch drives its caching allocator (tests/e2e/t_torch_tracker.sh).

usage: torch_fake.py FAKE_DIR SITE SCENARIO OUT_JSON      (TORCH_FAKE_STEPS=N: STEPS)

FAKE_DIR holds the fake CUDA runtime; SITE a torch/lib/libc10_cuda.so beside a
torch/version.py, as a wheel lays them out. Scenarios:
  basic    torch's lazy init, then STEPS (default 20) steps of tensors of several
           sizes on two streams, a memory pool, a free completed late, a tensor on
           device 1, an out-of-memory, and empty_cache on both devices
  late     the CUDA runtime's cudaMalloc / cudaFree first, torch loaded after, then basic
  never    the CUDA runtime only: torch is never loaded
  threads  basic's tensors from two more threads at once; a free requested on one
           thread completes on another
  fork     a step of tensors, then a fork child makes two steps of its own (its JSON
           in OUT_JSON.child, its log only what it made) and the parent one more
  bench    STEPS steps of 32 tensors allocated and freed (the dump's bytes per event)
  sites    STEPS steps of one tensor from each of TORCH_FAKE_SITES (128) call sites,
           reached through call chains of different depths: ns per tensor (scripts/bench.sh)
  layout   blocks torch hands out whole (a rest of at most 1 MiB in the large pool:
           one best fit, one nearly whole segment), split blocks joined again, a
           free completed late, 3 blocks made before the loop and held (a model's
           weights), and 4 MiB kept per step for STEPS steps
           (TORCH_FAKE_KEEP=0: none kept); TORCH_FAKE_OPTIM=1: an optimizer step of the
           stand-in torch package (tests/e2e/pyfw on PYTHONPATH) ends each step

OUT_JSON gets what the stand-in reported: {"log": [[action, device, addr, size, stream,
pool_a, pool_b, tid], ...] (torch's action numbers), "stats": {device: [allocated,
peak allocated, reserved, peak reserved]} (torch.cuda.memory_stats), "trackers": the trackers attached,
"file": this file, "alloc_line": the line that allocates, "threads": native ids of the
threads that allocated}.
"""
import ctypes
import json
import os
import sys
import threading

fake_dir, site, scenario, out = sys.argv[1:5]
steps = int(os.environ.get("TORCH_FAKE_STEPS", "20"))
# RTLD_GLOBAL, as torch's _load_global_deps() loads the CUDA runtime: the stand-in
# links it, and the shim finds the real functions behind its exports in the global scope.
rt = ctypes.CDLL(os.path.join(fake_dir, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
torch = None


class Event(ctypes.Structure):
    _fields_ = [("action", ctypes.c_int32), ("device", ctypes.c_int32), ("addr", ctypes.c_uint64),
                ("size", ctypes.c_uint64), ("stream", ctypes.c_uint64), ("pool0", ctypes.c_uint64),
                ("pool1", ctypes.c_uint64), ("tid", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


def load_torch():
    global torch
    torch = ctypes.CDLL(os.path.join(site, "torch", "lib", "libc10_cuda.so"))
    torch.fake_torch_alloc.restype = ctypes.c_void_p
    torch.fake_torch_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    torch.fake_torch_free.argtypes = [ctypes.c_void_p]
    torch.fake_torch_alloc_deep.restype = ctypes.c_void_p
    torch.fake_torch_alloc_deep.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
    torch.fake_torch_free_deferred.argtypes = [ctypes.c_void_p]
    torch.fake_torch_set_pool.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
    torch.fake_torch_trackers.restype = ctypes.c_long
    torch.fake_torch_log_count.restype = ctypes.c_long
    torch.fake_torch_log_copy.restype = ctypes.c_long
    torch.fake_torch_log_copy.argtypes = [ctypes.c_long, ctypes.POINTER(Event), ctypes.c_long]
    assert torch.fake_torch_init() == 0


def alloc(n, stream=0):
    return torch.fake_torch_alloc(n, stream)  # ALLOC-LINE


def free(p):
    assert torch.fake_torch_free(p) == 0


def runtime_calls():
    """cudaMalloc / cudaFree straight through the runtime (not torch)."""
    p = ctypes.c_void_p()
    for n in (4096, 1 << 20):
        assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
        assert rt.cudaFree(p) == 0


def tensors(nsteps):
    keep = []
    for _ in range(nsteps):
        ts = [alloc(n) for n in (512, 4096, 100000, 3 << 20)]
        keep.append(alloc(1000, 0x77))
        for p in ts:
            free(p)
    return keep


def basic():
    keep = tensors(steps)
    torch.fake_torch_set_pool(0, 1)  # a torch.cuda.MemPool
    free(alloc(7 << 20))
    torch.fake_torch_set_pool(0, 0)
    late = alloc(2048)
    assert torch.fake_torch_free_deferred(late) == 0  # completes at the next call
    assert alloc(1 << 40) is None  # out of memory
    for p in keep:
        free(p)
    torch.fake_torch_set_device(1)
    free(alloc(1 << 20))
    torch.fake_torch_empty_cache()
    torch.fake_torch_set_device(0)
    torch.fake_torch_empty_cache()


def threads():
    ids, errors = [], []
    lock = threading.Lock()
    handed = {}

    def worker(k):
        try:
            with lock:
                ids.append(threading.get_native_id())
            tensors(5)
            p = alloc(8192)
            if k == 0:
                assert torch.fake_torch_free_deferred(p) == 0
                handed["p"] = True
            else:
                free(p)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    free(alloc(4096))  # completes the deferred free of thread 0, on this thread
    torch.fake_torch_empty_cache()
    return ids


def bench():
    sizes = [512 * (1 + (k * 7) % 64) for k in range(32)]
    for _ in range(steps):
        ts = [alloc(n) for n in sizes]
        for p in ts:
            free(p)


def sites():
    """TORCH_FAKE_SITES (default 128) call sites of their own, each reached through a
    native call chain of its own (as ATen's ops reach the allocator), STEPS
    steps of one tensor from each, freed at the step's end; the timed steps' ns per
    tensor (alloc + free) into OUT_JSON's "ns_per_tensor" (scripts/bench.sh)."""
    import time
    nsites = int(os.environ.get("TORCH_FAKE_SITES", "128"))
    # each its own Python function and a native chain of k frames to the allocator
    src = ["def site_%d(n):\n    return deep(n, 0, %d)\n" % (k, k) for k in range(nsites)]
    scope = {"deep": torch.fake_torch_alloc_deep}
    exec("".join(src), scope)
    calls = [scope["site_%d" % k] for k in range(nsites)]
    for _ in range(2):  # warm: every block in the cache
        for p in [c(512 * (1 + k % 32)) for k, c in enumerate(calls)]:
            free(p)
    t0 = time.perf_counter()
    for _ in range(steps):
        for p in [c(512 * (1 + k % 32)) for k, c in enumerate(calls)]:
            free(p)
    return (time.perf_counter() - t0) / (steps * nsites) * 1e9


def layout():
    keep = []
    keeping = os.environ.get("TORCH_FAKE_KEEP", "1") == "1"
    opt = None
    if os.environ.get("TORCH_FAKE_OPTIM", "0") == "1":
        import torch as torch_py  # the stand-in package: torch.optim's global step hooks
        opt = torch_py.optim.SGD([])
    weights = [alloc(n) for n in (1 << 20, 3 << 20, 4096)]  # WEIGHTS-LINE: made once, held to the end
    for _ in range(steps):
        big = [alloc(6 << 20) for _ in range(3)]  # 18 MiB of a 20 MiB segment
        whole = alloc(3 << 19)  # 1.5 MiB: the 2 MiB rest, handed out whole
        nearly = alloc((20 << 20) - 700000)  # a segment of its own, handed out whole
        small = [alloc(n) for n in (700, 5000, 333333)]
        kept = alloc(4 << 20)  # KEEP-LINE
        if keeping:
            keep.append(kept)
        else:
            free(kept)
        late = alloc(2048)
        assert torch.fake_torch_free_deferred(late) == 0
        for p in big + [whole, nearly] + small:
            free(p)
        if opt:
            opt.step()
    return weights + keep


class Holder(object):
    def __init__(self, blocks):
        self.blocks = blocks

    def __del__(self):
        for p in self.blocks:
            free(p)


def write(path, start=0):
    log = []
    if torch is not None:
        n = torch.fake_torch_log_count() - start
        buf = (Event * max(n, 1))()
        assert torch.fake_torch_log_copy(start, buf, n) == n
        log = [[e.action, e.device, e.addr, e.size, e.stream, e.pool0, e.pool1, e.tid] for e in buf[:n]]
    line = next(i for i, text in enumerate(open(__file__), 1) if text.rstrip().endswith("# ALLOC-LINE"))
    stats = {}
    for d in range(2):
        v = (ctypes.c_ulonglong * 4)()
        if torch is not None and torch.fake_torch_stats(d, v) == 0:
            stats[str(d)] = list(v)
    json.dump({"log": log, "stats": stats, "trackers": torch.fake_torch_trackers() if torch is not None else 0,
               "file": os.path.abspath(__file__), "alloc_line": line, "threads": threads_seen,
               "ns_per_tensor": ns_per_tensor},
              open(path, "w"))


threads_seen = [threading.get_native_id()]
ns_per_tensor = None
if scenario == "never":
    runtime_calls()
else:
    if scenario == "late":
        runtime_calls()
    load_torch()
    if scenario in ("basic", "late"):
        basic()
    elif scenario == "threads":
        threads_seen += threads()
    elif scenario == "fork":
        tensors(1)
        at_fork = torch.fake_torch_log_count()
        pid = os.fork()
        if pid == 0:
            tensors(2)
            threads_seen = [threading.get_native_id()]
            write(out + ".child", at_fork)
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        tensors(1)
    elif scenario == "bench":
        bench()
    elif scenario == "sites":
        ns_per_tensor = sites()
    elif scenario == "layout":
        # freed only by the interpreter's teardown (module globals cleared), after the
        # program's own code ended: as tensors a script keeps in a global list
        holder = Holder(layout())
    else:
        sys.exit("unknown scenario " + scenario)
write(out)
