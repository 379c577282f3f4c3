# scripts/bench.sh: N cudaMalloc/cudaFree pairs from a Python function 10
# frames deep, through ctypes.PyDLL (the GIL stays held during each call) or,
# with "cdll", ctypes.CDLL (the GIL is released). Prints ns per pair.
#
#   py_bench.py FAKE_LIB_DIR PAIRS [pydll|cdll]
import ctypes
import os
import sys
import time

loader = ctypes.CDLL if sys.argv[3:] == ["cdll"] else ctypes.PyDLL
lib = loader(os.path.join(sys.argv[1], "libcudart.so.13"))
pairs = int(sys.argv[2])


def loop(n):
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    malloc, free = lib.cudaMalloc, lib.cudaFree
    t0 = time.perf_counter_ns()
    for _ in range(n):
        malloc(ref, 256)
        free(p)
    return time.perf_counter_ns() - t0


def deep(k, n):
    return deep(k - 1, n) if k > 1 else loop(n)


deep(9, 1000)  # warm up
print("%.1f" % (deep(9, pairs) / pairs))
