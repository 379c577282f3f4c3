# Driven by tests/e2e/t_python_versions.sh on every CPython found: allocations
# through the fake runtime from many kinds of Python frames, most through
# ctypes.CDLL, which releases the GIL around the call. Each scenario leaks one
# block of a size of its own, and the script writes to OUT/expect.json what
# CPython itself says the stack was at that call (file, co_qualname or, before
# 3.11, co_name, and f_lineno of every frame, innermost first), for the test
# to compare with the leak sites that cumtrace reports.
#
#   py_frames.py FAKE_LIB_DIR OUT_DIR [C_THREAD_LIB]
import asyncio
import ctypes
import importlib.util
import json
import os
import sys
import threading

fake, out = sys.argv[1], sys.argv[2]
cdll = ctypes.CDLL(os.path.join(fake, "libcudart.so.13"))  # releases the GIL
pydll = ctypes.PyDLL(os.path.join(fake, "libcudart.so.13"))  # keeps it
expect = {}
SIZES = {}


def size_of(name):
    """A block size of the scenario's own."""
    return SIZES.setdefault(name, 65536 + 16 * len(SIZES))


def note(name, depth=1):
    """Record CPython's view of the caller's stack for scenario name."""
    frames = []
    f = sys._getframe(depth)
    while f is not None:
        co = f.f_code
        frames.append([co.co_filename, getattr(co, "co_qualname", co.co_name), f.f_lineno])
        f = f.f_back
    expect[name] = {"size": size_of(name), "frames": frames[:128]}


def via(lib, name):
    """Allocate for scenario name from here: the caller's frame is suspended at its call."""
    p = ctypes.c_void_p()
    note(name); lib.cudaMalloc(ctypes.byref(p), size_of(name))  # VIA-LINE
    return p


# 1, 2. Nested functions, GIL released (CDLL) and held (PyDLL).
def leaf(lib, name):
    p = ctypes.c_void_p()
    note(name); lib.cudaMalloc(ctypes.byref(p), size_of(name))  # LEAF-LINE
    return p


def middle(lib, name):
    return leaf(lib, name)  # MIDDLE-LINE


def outer(lib, name):
    return middle(lib, name)  # OUTER-LINE


outer(cdll, "cdll")
outer(pydll, "pydll")


# 3. A thread started by threading.
def worker():
    leaf(cdll, "thread")  # THREAD-LINE


t = threading.Thread(target=worker)
t.start()
t.join()


# 4, 5. A generator method and a nested class's method (qualified names).
class Holder:
    def blocks(self):
        yield leaf(cdll, "generator")  # GENERATOR-LINE

    class Inner:
        def method(self):
            p = ctypes.c_void_p()
            note("method"); cdll.cudaMalloc(ctypes.byref(p), size_of("method"))  # METHOD-LINE


list(Holder().blocks())
Holder.Inner().method()


# 6. A coroutine run by asyncio.
async def coro():
    await asyncio.sleep(0)
    leaf(cdll, "coroutine")


loop = asyncio.new_event_loop()
loop.run_until_complete(coro())
loop.close()

# 7. A comprehension (its own frame before 3.12, inlined since) and a lambda.
[leaf(cdll, "comprehension") for _ in range(1)]
(lambda: leaf(cdll, "lambda"))()


# 8. Deeper than the 128 frames recorded: the innermost 128.
def recurse(n):
    return recurse(n - 1) if n else leaf(cdll, "deep")


recurse(150)


# 9. Under a tracing function (f_trace set; bytecode instrumented on 3.12+).
def tracer(frame, event, arg):
    return tracer


sys.settrace(tracer)
leaf(cdll, "settrace")
sys.settrace(None)

# 10. Line tables with long jumps: a generated module whose calls lie far
# apart, follow long straight-line code, and span many lines (the call's line
# then lies before its arguments' lines).
src = ["import ctypes", "", "def far(via, lib):", "    a = 1"]
src.append("    x = " + " + ".join(["a"] * 200))
src += [""] * 300
src.append('    via(lib, "far1")')
src += ["    y = " + " + ".join(["x"] * 150)] * 3
src += ["    via("] + [""] * 140 + ["        lib,", "        'far2',", "    )"]
src += ["    z = [", "        x,"] + ["        y,"] * 300 + ["    ]"]
src.append('    via(lib, "far3")')
src += [""] * 5000 + ['    via(lib, "far4")']
path = os.path.join(out, "py_frames_far.py")
with open(path, "w") as f:
    f.write("\n".join(src) + "\n")
spec = importlib.util.spec_from_file_location("py_frames_far", path)
far = importlib.util.module_from_spec(spec)
spec.loader.exec_module(far)
far.far(via, cdll)


# 11. A call spread over lines in this file.
def spread():
    return via(
        cdll,
        "spread",
    )


spread()

# 12. A thread made by C code, with no Python state: no Python frames.
if len(sys.argv) > 3:
    helper = ctypes.CDLL(sys.argv[3])
    helper.alloc_in_c_thread.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    fn = ctypes.cast(cdll.cudaMalloc, ctypes.c_void_p).value
    expect["c_thread"] = {"size": size_of("c_thread"), "frames": []}
    assert helper.alloc_in_c_thread(fn, size_of("c_thread")) == 0

# A freed block: no leak site.
p = ctypes.c_void_p()
cdll.cudaMalloc(ctypes.byref(p), 4096)
cdll.cudaFree(p)

# ctypes.CDLL really releases the GIL around the call, and PyDLL keeps it.
gil = {
    "cdll": ctypes.CDLL(None).PyGILState_Check(),
    "pydll": ctypes.PyDLL(None).PyGILState_Check(),
}
with open(os.path.join(out, "expect.json"), "w") as f:
    json.dump({"scenarios": expect, "gil": gil, "script": os.path.abspath(__file__)}, f)
