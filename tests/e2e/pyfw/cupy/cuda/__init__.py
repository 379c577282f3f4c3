from . import memory_hook  # noqa: F401
from .memory import MemoryPool  # noqa: F401


class Device(object):
    def __init__(self, device=None):
        self.id = 0 if device is None else device
