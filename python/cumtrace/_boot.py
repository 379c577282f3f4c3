"""What the shim's bootstrap installs (preload/pyboot.c calls install() once, on the main thread).

- torch: a global optimizer step post hook
  (torch.optim.optimizer.register_optimizer_step_post_hook): every optimizer
  step is a step boundary of source "optimizer", named after the optimizer's
  class. Explicit steps and marks win over them in the growth report.
- cupy: a cupy.cuda.memory_hook.MemoryHook entered on the thread that imported
  cupy (CuPy's hooks are per thread): every pool block handed out and given
  back becomes a framework event (cupy_alloc, cupy_free); the default pool's
  used_bytes() and total_bytes() become counters ("cupy.used_bytes", ...)
  when the bootstrap finds cupy imported and at every step boundary.
- jax: at every step boundary, each local device's memory_stats()
  bytes_in_use and peak_bytes_in_use as counters ("jax.bytes_in_use", ...).

None of them is imported here. A module already imported is hooked at once;
one imported later is hooked right after its own code ran, by a finder at the
front of sys.meta_path that answers only for the watched names (it asks the
other finders, and wraps that one module's loader for that one import); one
whose import is under way when the bootstrap runs is hooked by that finder at
the next import of anything once it is complete. A
hook that cannot be installed is one warning on stderr; nothing here raises
into the program.
"""
import atexit
import os
import sys
import threading

from . import STEP_OPTIMIZER, _c, _step, counter

_installed = False
_warned = False
_done = set()
_keep = []  # hook handles and objects, alive for the process's lifetime


def _warn(what):
    global _warned
    if _warned or os.environ.get("CUMTRACE_QUIET", "") not in ("", "0"):
        return
    _warned = True
    try:
        os.write(2, ("cumtrace: %s\n" % what).encode("utf-8", "replace"))
    except OSError:
        pass


def _hook_torch(opt_mod):
    def post(optimizer, args, kwargs):
        try:
            _step(STEP_OPTIMIZER, type(optimizer).__name__)
        except Exception:
            pass

    _keep.append(opt_mod.register_optimizer_step_post_hook(post))


def _hook_cupy(cupy_mod):
    import importlib
    memory_hook = importlib.import_module("cupy.cuda.memory_hook")  # imported by cupy already
    alloc, free = _c["cumtrace_cupy_alloc"], _c["cumtrace_cupy_free"]

    class CumtraceHook(memory_hook.MemoryHook):
        name = "cumtrace"

        def malloc_postprocess(self, **kw):
            try:
                alloc(int(kw.get("device_id", -1)), int(kw.get("mem_ptr", 0)),
                      int(kw.get("mem_size", 0)), int(kw.get("size", 0)))
            except Exception:
                pass

        def free_postprocess(self, **kw):
            try:
                free(int(kw.get("device_id", -1)), int(kw.get("mem_ptr", 0)),
                     int(kw.get("mem_size", 0)))
            except Exception:
                pass

    hook = CumtraceHook()
    hook.__enter__()
    _keep.append(hook)


_WATCH = {"torch.optim.optimizer": _hook_torch, "cupy": _hook_cupy}


def _initializing(module):
    """Is module still running its own code (imported on this thread, under way)?"""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _retry():
    """Hook the watched modules that were found half imported and are complete now."""
    for name in _WATCH:
        module = sys.modules.get(name)
        if name not in _done and module is not None and not _initializing(module):
            _on_import(name, module)


def _on_import(name, module):
    if name in _done:
        return
    _done.add(name)
    try:
        _WATCH[name](module)
    except Exception as e:
        _warn("cannot hook %s (%s: %s)" % (name, type(e).__name__, e))


class _Finder(object):
    """Finds nothing itself: hooks the watched modules right after their import."""

    def __init__(self):
        self._busy = threading.local()

    def find_spec(self, name, path=None, target=None):
        if len(_done) < len(_WATCH):
            _retry()
        if name not in _WATCH or name in _done or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.on = False
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return None
        run = loader.exec_module

        def exec_module(module):
            try:
                run(module)
            finally:
                try:
                    del loader.exec_module
                except AttributeError:
                    pass
            _on_import(name, module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            return None
        return spec


def _sample_cupy():
    """The default pool's used and total bytes on the current device, once CuPy is hooked."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return
    try:
        pool = cupy.get_default_memory_pool()
        dev = cupy.cuda.Device().id
        counter("cupy.used_bytes", pool.used_bytes(), dev)
        counter("cupy.total_bytes", pool.total_bytes(), dev)
    except Exception:
        pass


def sample_counters():
    """At a step boundary: CuPy's default pool and JAX's allocator figures, for those imported."""
    _sample_cupy()
    jax = sys.modules.get("jax")
    if jax is None or not _c:
        return
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None) == {}:
        return  # no backend yet: asking would start one
    try:
        for dev in jax.local_devices():
            stats = dev.memory_stats()
            if not stats:
                continue
            for key in ("bytes_in_use", "peak_bytes_in_use"):
                if key in stats:
                    counter("jax." + key, stats[key], getattr(dev, "id", -1))
    except Exception:
        pass


def install():
    global _installed
    if _installed or not _c:
        return
    _installed = True
    # where the program's own code ends: the interpreter's teardown frees every tensor a
    # module still holds after this, so blocks still handed out here are leaked at exit
    # (registered first, this handler runs after the program's own atexit handlers)
    atexit.register(_c["cumtrace_exit_point"])
    # a module still being imported (the bootstrap ran in the middle of its code) is hooked
    # by the finder once it is complete: at the next import of anything
    _retry()
    # blocks handed out before the hook (the first CuPy call's, at least) are only in this figure
    _sample_cupy()
    if len(_done) < len(_WATCH):
        sys.meta_path.insert(0, _Finder())
