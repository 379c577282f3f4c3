# t_python: a thread that libpynoframe.so starts (pyrun_thread) runs Python
# code through PyRun_SimpleString: N cudaMalloc/cudaFree pairs, then one block
# of 999 bytes left, at the code's CTHREAD-LEAK-LINE. The thread's native
# stacks run through the interpreter, so its calls carry their Python frames.
# Then the main thread leaves 888 bytes 40 C frames down (deep_malloc), at the
# line marked DEEP-LEAK-LINE: a native stack cut at the depth limit before the
# interpreter.
# Prints the two lines, in the code and in this file.
#   py_cthread.py FAKE_LIB_DIR LIBPYNOFRAME N
import ctypes
import sys

source = """import ctypes
lib = ctypes.PyDLL(%r + "/libcudart.so.13")
p = ctypes.c_void_p()
for _ in range(%d):
    lib.cudaMalloc(ctypes.byref(p), 256)
    lib.cudaFree(p)
lib.cudaMalloc(ctypes.byref(p), 999)  # CTHREAD-LEAK-LINE
""" % (sys.argv[1], int(sys.argv[3]))
helper = ctypes.CDLL(sys.argv[2])  # CDLL: the GIL is let go during the call
rc = helper.pyrun_thread(source.encode())
lib = ctypes.PyDLL(sys.argv[1] + "/libcudart.so.13")
m = ctypes.cast(lib.cudaMalloc, ctypes.c_void_p).value
deep = helper.deep_malloc(ctypes.c_void_p(m), 40, ctypes.c_size_t(888))  # DEEP-LEAK-LINE
with open(__file__) as me:
    here = [i for i, line in enumerate(me, 1) if "# DEEP" + "-LEAK-LINE" in line][0]
print(1 + [i for i, line in enumerate(source.splitlines()) if "CTHREAD-LEAK-LINE" in line][0], here)
sys.exit(rc or deep)
