# Driven by tests/e2e/t_python.sh: allocations from Python through ctypes.
# PyDLL keeps the GIL held during the foreign call (CDLL releases it, and
# cumtrace records Python frames only for a thread holding the GIL).
import ctypes
import os
import sys

lib = ctypes.PyDLL(os.path.join(sys.argv[1], "libcudart.so.13"))


def leaky():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 1 << 20)  # LEAK-LINE
    return p


def freed():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 4096)
    lib.cudaFree(p)


class Holder:
    def grab(self):
        return leaky()


def main():
    freed()
    Holder().grab()


main()
