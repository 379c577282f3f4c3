# tests/e2e/t_python_subinterp.sh: a cudaMalloc made by code running in a
# sub-interpreter (CPython 3.12+), on the main thread. The thread's current
# thread state is then the sub-interpreter's, not its auto (gilstate) one: the
# allocation's Python stack must be the sub-interpreter's frames (sub_alloc
# in "<string>"), not the main interpreter's (this file's run_string line).
#
#   py_subinterp.py FAKE_LIB_DIR
import sys

try:
    import _xxsubinterpreters as si  # 3.12
except ImportError:
    import _interpreters as si  # 3.13+

fake = sys.argv[1]
# a legacy (not isolated) sub-interpreter: ctypes loads in it
iid = si.create(isolated=False) if sys.version_info < (3, 13) else si.create("legacy")
code = """
import ctypes, os
lib = ctypes.CDLL(os.path.join(%r, "libcudart.so.13"))
p = ctypes.c_void_p()
def sub_alloc():
    lib.cudaMalloc(ctypes.byref(p), 4321)
sub_alloc()
""" % fake
si.run_string(iid, code)  # MAIN-LINE
