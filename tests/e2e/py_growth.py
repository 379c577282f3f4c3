# Driven by tests/e2e/t_growth.sh: a training loop in Python (ctypes to the
# fake runtime; PyDLL keeps the GIL, so allocations carry Python frames).
# Each iteration appends a 1 MiB buffer to a list that is never trimmed (the
# planted growth leak) and uses a steady cache (libtorch_cuda.so: 4 MiB
# taken in the first iteration and reused); cumtrace_mark("iteration")
# separates the iterations (PY_GROWTH_MARK below). argv: FAKE_DIR LIBS_DIR
import ctypes
import os
import sys

rt = ctypes.PyDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
torch = ctypes.PyDLL(os.path.join(sys.argv[2], "libtorch_cuda.so"))
torch.fake_torch_empty.restype = ctypes.c_void_p
torch.fake_torch_empty.argtypes = [ctypes.c_size_t]
torch.fake_torch_release.argtypes = [ctypes.c_void_p]
mark = ctypes.CDLL(None).cumtrace_mark
mark.argtypes = [ctypes.c_char_p]

history = []


def train_step():
    buf = torch.fake_torch_empty(4 << 20)
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), 1 << 20)  # GROWTH-LINE
    history.append(p)
    torch.fake_torch_release(buf)


# PY_GROWTH_MARK: the marks' name, "%d" replaced by the iteration's number ("step %d": step 0,
# step 1, ...); default "iteration"
name = os.environ.get("PY_GROWTH_MARK", "iteration")
for i in range(10):
    mark((name.replace("%d", str(i))).encode())
    train_step()
mark((name.replace("%d", "10")).encode())
