# cupy/cuda/memory_hook.pyx: hooks live in a thread-local OrderedDict.
import collections
import threading

_state = threading.local()


def get_memory_hooks():
    if not hasattr(_state, "hooks"):
        _state.hooks = collections.OrderedDict()
    return _state.hooks


class MemoryHook(object):
    name = "MemoryHook"

    def __enter__(self):
        hooks = get_memory_hooks()
        if self.name in hooks:
            raise RuntimeError("Memory hook %s already exists" % self.name)
        hooks[self.name] = self
        return self

    def __exit__(self, *exc):
        del get_memory_hooks()[self.name]

    def malloc_preprocess(self, **kwargs):
        pass

    def malloc_postprocess(self, **kwargs):
        pass

    def free_preprocess(self, **kwargs):
        pass

    def free_postprocess(self, **kwargs):
        pass
