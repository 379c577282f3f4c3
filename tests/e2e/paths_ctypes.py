#!/usr/bin/env python3
"""Capture path: Python ctypes (tests/e2e/t_paths_ctypes.sh).

ctypes.CDLL loads libcudart.so.13 RTLD_LOCAL and finds each function with
dlsym on that handle. N cudaMalloc calls of (i + 1) * 64 KiB, cudaFree of the
even-numbered ones, one cudaFree of a bad pointer (fails). Prints return codes
only, so the output is the same with and without the shim.

usage: paths_ctypes.py [N]      (default 10)
"""
import ctypes
import sys

KIB = 1024


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rt = ctypes.CDLL("libcudart.so.13")
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaMalloc.restype = ctypes.c_int
    rt.cudaFree.argtypes = [ctypes.c_void_p]
    rt.cudaFree.restype = ctypes.c_int
    ptrs = []
    for i in range(n):
        p = ctypes.c_void_p()
        rc = rt.cudaMalloc(ctypes.byref(p), (i + 1) * 64 * KIB)
        print(f"cudaMalloc {(i + 1) * 64} KiB rc={rc} null={p.value is None}")
        if rc != 0:
            sys.exit(3)
        ptrs.append(p.value)
    for i in range(0, n, 2):
        print(f"cudaFree #{i} rc={rt.cudaFree(ptrs[i])}")
    print(f"cudaFree bad rc={rt.cudaFree(0x1234)}")
    leaked = sum((i + 1) * 64 * KIB for i in range(1, n, 2))
    print(f"leaked {n // 2} blocks, {leaked} bytes")


if __name__ == "__main__":
    main()
