# Driven by tests/e2e/t_python.sh: allocations from Python through ctypes,
# PyDLL (the GIL stays held during the foreign call) or, with a second
# argument "cdll", CDLL (the GIL is released). A third argument "twice":
# leaky() is called from a second place too (tests/e2e/t_labels.sh: two
# sites that share a helper).
import ctypes
import os
import sys

loader = ctypes.CDLL if sys.argv[2:3] == ["cdll"] else ctypes.PyDLL
lib = loader(os.path.join(sys.argv[1], "libcudart.so.13"))


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
        return leaky()  # GRAB-LINE


def warm_up():
    return leaky()  # WARM-LINE


def main():
    freed()
    Holder().grab()
    if sys.argv[3:] == ["twice"]:
        warm_up()


main()
