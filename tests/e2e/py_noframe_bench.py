# scripts/bench.sh: N cudaMalloc/cudaFree pairs on a thread with a Python thread
# state and no frame, as torch's autograd thread makes the backward pass's
# (libpynoframe.so's noframe_bench), PAGES pages touched between two calls.
# Run under CUMTRACE_SELFTIME=1: the shim's line at exit gives those steady
# calls apart ("without"); a few pairs on the main thread first, whose calls
# are the "with".
#   py_noframe_bench.py FAKE_LIB_DIR LIBPYNOFRAME N PAGES
import ctypes
import sys

lib = ctypes.PyDLL(sys.argv[1] + "/libcudart.so.13")
helper = ctypes.CDLL(sys.argv[2])  # CDLL: the GIL is let go during the call
n, pages = int(sys.argv[3]), int(sys.argv[4])
p = ctypes.c_void_p()
for _ in range(10):
    lib.cudaMalloc(ctypes.byref(p), 256)
    lib.cudaFree(p)
m = ctypes.cast(lib.cudaMalloc, ctypes.c_void_p).value
f = ctypes.cast(lib.cudaFree, ctypes.c_void_p).value
sys.exit(helper.noframe_bench(ctypes.c_void_p(m), ctypes.c_void_p(f), n, pages))
