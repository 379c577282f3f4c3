# Driven by tests/e2e/t_python_churn.sh: code objects that die and are made
# again, most likely at the freed one's address. Round k compiles the same
# function after k blank lines, so its bytecode (and the allocating call's
# offset in it) is the same every round but its line is not, calls it from
# the same line here (the same stack around it), keeps the block it
# allocated (4096 * (k + 1) bytes) and drops the function, whose code object
# dies; then allocates and frees once from a function that lives throughout
# (its stack is in the memo, from before the death). At the end, STEADY more
# pairs from that one with no code object dying. Prints "k LINE" per round
# (the allocating line in py_churn_src.py), then "reused N": the rounds whose
# code object took the address of the round before's.
#   py_churn.py FAKE_LIB_DIR ROUNDS STEADY
import ctypes
import gc
import os
import sys

lib = ctypes.PyDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
rounds, steady = int(sys.argv[2]), int(sys.argv[3])
SRC = "def f():\n    p = ctypes.c_void_p()\n    lib.cudaMalloc(ctypes.byref(p), size)\n"
reused, last = 0, None


def stable():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 512)
    lib.cudaFree(p)


for k in range(rounds):
    names = {"ctypes": ctypes, "lib": lib, "size": 4096 * (k + 1)}
    exec(compile("\n" * k + SRC, "py_churn_src.py", "exec"), names)
    f = names["f"]
    here = id(f.__code__)
    reused += here == last
    last = here
    f()  # CALL-LINE
    print(k, k + 3)
    del f, names
    gc.collect()
    stable()
for _ in range(steady):
    stable()
print("reused", reused)
