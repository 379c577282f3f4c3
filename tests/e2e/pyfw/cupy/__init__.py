# Stand-in for cupy (tests/e2e/pyfw/README.md).
from . import cuda  # noqa: F401

_pool = None


def get_default_memory_pool():
    global _pool
    if _pool is None:
        _pool = cuda.MemoryPool()
    return _pool
