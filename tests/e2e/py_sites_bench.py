# scripts/bench.sh: a loop that allocates from many places, as a training
# step does, rather than py_bench.py's one: each step makes one
# cudaMalloc/cudaFree pair at each of LEVELS native depths (every map() and
# lambda between Python calls adds C frames: a distinct native stack and
# Python stack per depth). Between two calls it touches PAGES pages of a
# buffer of its own (one byte each, with a stride of a page), as a training
# loop's own work pushes the shim's tables and ring out of the caches and
# the TLB between its allocations. Run under CUMTRACE_SELFTIME=1: the shim's
# figures are in its line at exit; this prints the steps' wall ns per pair.
#
#   py_sites_bench.py FAKE_LIB_DIR STEPS PAGES [LEVELS]
#
# tests/gpu/fw_overhead_pair.py imports make_step for its fake workload.
import ctypes
import os
import sys
import time


def make_step(lib_dir, pages, levels=18):
    """The loop's step(s) on the fake runtime in lib_dir: one pair of calls at each of levels
    native depths, pages touched between two calls."""
    lib = ctypes.PyDLL(os.path.join(lib_dir, "libcudart.so.13"))
    buf = bytearray(pages * 4096 + 4096)
    ones = b"\1" * pages
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    malloc, free = lib.cudaMalloc, lib.cudaFree

    def touch(k):
        if pages:
            o = (k * 64) % 4096  # a different line of each page each time
            buf[o:o + pages * 4096:4096] = ones

    def pair(k):
        malloc(ref, 256)
        touch(k)
        free(p)
        touch(k + 1)
        return 0

    def nest(level, k):
        if level == 0:
            return pair(k)
        return list(map(lambda _: nest(level - 1, k), (0,)))[0]

    def step(s):
        for lv in range(levels):
            nest(lv, s * 2 * levels + 2 * lv)

    return step


if __name__ == "__main__":
    steps, levels = int(sys.argv[2]), int(sys.argv[4]) if len(sys.argv) > 4 else 18
    step = make_step(sys.argv[1], int(sys.argv[3]), levels)
    for s in range(5):
        step(s)
    t0 = time.perf_counter_ns()
    for s in range(steps):
        step(s)
    print("%.1f" % ((time.perf_counter_ns() - t0) / steps / levels))
