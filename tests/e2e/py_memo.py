# Driven by tests/e2e/t_python.sh: a loop over N functions (default 24), each
# allocating and freeing on lines of its own (N Python stacks), ROUNDS times;
# in the last round each keeps its allocation, 4096 * (k + 1) bytes from
# function k. Prints each function's allocation line in py_memo_sites.py:
# "k LINE".
#   py_memo.py FAKE_LIB_DIR ROUNDS [N]
import ctypes
import os
import sys

lib = ctypes.PyDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
rounds = int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 24
src = []
for k in range(n):
    src += ["def f%d(keep):" % k,
            "    p = ctypes.c_void_p()",
            "    lib.cudaMalloc(ctypes.byref(p), %d)" % (4096 * (k + 1)),
            "    if not keep:",
            "        lib.cudaFree(p)"]
code = compile("\n".join(src) + "\n", "py_memo_sites.py", "exec")
names = {"ctypes": ctypes, "lib": lib}
exec(code, names)
for k in range(n):
    print(k, 5 * k + 3)
for r in range(rounds):
    for k in range(n):
        names["f%d" % k](r == rounds - 1)
