# Driven by tests/e2e/t_pypkg.sh: every function of the cumtrace package.
# argv: MODE: "api" (prints what active() says, then marks, a range, steps, a
# counter, a flush); "kill" (a mark, a flush, then SIGKILL: the flush must
# have written the mark).
import ctypes
import os
import signal
import sys

import cumtrace

mode = sys.argv[1]
print("active", cumtrace.active())
if mode == "api":
    cumtrace.mark("phase one")
    with cumtrace.range("outer"):
        with cumtrace.range(b"inner"):
            pass
    cumtrace.step()
    cumtrace.step("epoch")
    cumtrace.counter("my.bytes", 1234, device=0)
    cumtrace.flush()
    print("ok")
elif mode == "kill":
    rt = ctypes.CDLL("libcudart.so.13")
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), 256)
    cumtrace.mark("flushed before the kill")
    cumtrace.flush()
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)
