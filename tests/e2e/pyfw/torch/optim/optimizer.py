# torch.optim.optimizer's global step post hooks, as torch 2.x calls them.
import itertools
import os

if os.environ.get("PYFW_CUDA_AT_IMPORT"):
    # a CUDA call while this module's code runs: the bootstrap then runs in its middle
    import ctypes
    _p = ctypes.c_void_p()
    ctypes.CDLL("libcudart.so.13").cudaMalloc(ctypes.byref(_p), 256)
    for _ in range(3):
        pass

_global_optimizer_post_hooks = {}
_ids = itertools.count()


class RemovableHandle(object):
    def __init__(self, hooks):
        self.hooks = hooks
        self.id = next(_ids)

    def remove(self):
        self.hooks.pop(self.id, None)


def register_optimizer_step_post_hook(hook):
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


class Optimizer(object):
    def __init__(self, params=(), **defaults):
        self.params = list(params)

    def step(self, *args, **kwargs):
        out = self._update()
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
        return out
