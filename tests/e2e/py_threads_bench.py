# scripts/bench.sh: short-lived threads that each record a few hundred events,
# as a thread pool's workers do: ROUNDS rounds of 10 threads at once, each
# making 200 pairs of cudaMalloc/cudaFree from two Python functions and
# exiting. Run under CUMTRACE_SELFTIME=1: the shim's own figures are in its
# line at exit (a new ring's first event is in the record part).
#   py_threads_bench.py FAKE_LIB_DIR [ROUNDS]
import ctypes
import os
import sys
import threading

lib = ctypes.PyDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def a():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 4096)
    return p


def b():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 8192)
    return p


def work():
    for _ in range(200):
        lib.cudaFree(a())
        lib.cudaFree(b())


for _ in range(rounds):
    ts = [threading.Thread(target=work) for _ in range(10)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
