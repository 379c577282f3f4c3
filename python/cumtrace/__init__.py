"""cumtrace from Python: markers and step boundaries for the CUDA memory tracer.

Every function calls the shim's C API (include/cumtrace/cumtrace.h) through
ctypes when libcumtrace.so is loaded in this process (LD_PRELOAD, or the
``cumtrace run`` wrapper), and does nothing when it is not::

    import cumtrace
    for batch in data:
        with cumtrace.range("forward"):
            loss = model(batch)
        ...
        cumtrace.step()          # an explicit step boundary

Under the shim this package is also imported by the shim itself, once, on the
main thread (see _boot.py): it records torch optimizer steps, CuPy's pool
blocks and JAX's memory_stats() without any change to the program.
"""
import ctypes

__all__ = ["mark", "range", "step", "active", "flush", "counter", "STEP_EXPLICIT",
           "STEP_OPTIMIZER"]

STEP_EXPLICIT = 1   # cumtrace.h CUMTRACE_STEP_EXPLICIT
STEP_OPTIMIZER = 2  # cumtrace.h CUMTRACE_STEP_OPTIMIZER

_U64 = ctypes.c_ulonglong


def _load():
    """The shim's C API as ctypes functions, or None when it is not loaded."""
    try:
        lib = ctypes.CDLL(None)
        fns = {}
        for name, args, res in (
                ("cumtrace_mark", [ctypes.c_char_p], None),
                ("cumtrace_range_push", [ctypes.c_char_p], None),
                ("cumtrace_range_pop", [], None),
                ("cumtrace_step", [ctypes.c_int, ctypes.c_char_p], None),
                ("cumtrace_active", [], ctypes.c_int),
                ("cumtrace_flush", [], None),
                ("cumtrace_counter", [ctypes.c_char_p, ctypes.c_int, _U64], None),
                ("cumtrace_cupy_alloc", [ctypes.c_int, _U64, _U64, _U64], None),
                ("cumtrace_cupy_free", [ctypes.c_int, _U64, _U64], None),
                ("cumtrace_exit_point", [], None)):
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = res
            fns[name] = f
        return fns
    except (OSError, AttributeError):
        return None


_c = _load()


def _bytes(s):
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8", "replace")


def active():
    """True when the shim is loaded and this process records (or will, at its first CUDA call)."""
    return bool(_c and _c["cumtrace_active"]())


def mark(name):
    """Record a named instant (a phase change; the growth report can use a series of them)."""
    if _c:
        _c["cumtrace_mark"](_bytes(name))


class range(object):
    """``with cumtrace.range(name):`` a named range on the calling thread; ranges nest."""

    def __init__(self, name):
        self.name = _bytes(name)

    def __enter__(self):
        if _c:
            _c["cumtrace_range_push"](self.name)
        return self

    def __exit__(self, *exc):
        if _c:
            _c["cumtrace_range_pop"]()
        return False


def _step(source, name):
    """A step boundary, then the counters sampled at it (JAX)."""
    if not _c:
        return
    _c["cumtrace_step"](source, _bytes(name))
    from . import _boot
    _boot.sample_counters()


def step(name=None):
    """An explicit step (iteration) boundary: these win over optimizer steps in the growth report."""
    _step(STEP_EXPLICIT, name)


def counter(name, value, device=-1):
    """Record a named value (bytes in use, ...) of one device at this moment."""
    if _c:
        _c["cumtrace_counter"](_bytes(name), int(device), int(value) & (2**64 - 1))


def flush():
    """Write everything recorded so far to the dump before returning."""
    if _c:
        _c["cumtrace_flush"]()


def _bootstrap():
    """Called once by the shim (preload/pyboot.c), on the main thread: install the framework hooks."""
    from . import _boot
    _boot.install()
