# t_python: N cudaMalloc/cudaFree pairs on the main thread (Python frames), then
# N on a thread with a Python thread state and no frame (libpynoframe.so).
# Each leaks one block: 555 bytes here (NOFRAME-LEAK-LINE), 777 there.
#   py_noframe.py FAKE_LIB_DIR LIBPYNOFRAME N
import ctypes
import sys

lib = ctypes.PyDLL(sys.argv[1] + "/libcudart.so.13")
helper = ctypes.CDLL(sys.argv[2])  # CDLL: the GIL is let go during the call
n = int(sys.argv[3])
p = ctypes.c_void_p()
for _ in range(n):
    lib.cudaMalloc(ctypes.byref(p), 256)
    lib.cudaFree(p)
lib.cudaMalloc(ctypes.byref(p), 555)  # NOFRAME-LEAK-LINE
# the shim's wrappers (ctypes found them through dlsym), called from C
m = ctypes.cast(lib.cudaMalloc, ctypes.c_void_p).value
f = ctypes.cast(lib.cudaFree, ctypes.c_void_p).value
sys.exit(helper.noframe_worker(ctypes.c_void_p(m), ctypes.c_void_p(f), n))
