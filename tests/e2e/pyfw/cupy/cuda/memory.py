# A memory pool as CuPy's: blocks rounded up to 512 bytes, carved from chunks the
# CUDA runtime gives (cudaMalloc, here the fake one), the thread's hooks called.
import ctypes

from . import memory_hook

_rt = ctypes.CDLL("libcudart.so.13")
_CHUNK = 1 << 20


class MemoryPool(object):
    def __init__(self, device_id=0):
        self.device_id = device_id
        self.chunks = []
        self.free_list = {}  # size -> [ptr]
        self.used = {}  # ptr -> size
        self.top = 0
        self.end = 0

    def _carve(self, size):
        if self.top + size > self.end:
            p = ctypes.c_void_p()
            n = max(_CHUNK, size)
            if _rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0:
                raise MemoryError("out of memory")
            self.chunks.append(p.value)
            self.top, self.end = p.value, p.value + n
        ptr = self.top
        self.top += size
        return ptr

    def malloc(self, size):
        mem_size = (size + 511) // 512 * 512
        hooks = list(memory_hook.get_memory_hooks().values())
        for h in hooks:
            h.malloc_preprocess(device_id=self.device_id, size=size, mem_size=mem_size)
        lst = self.free_list.get(mem_size)
        ptr = lst.pop() if lst else self._carve(mem_size)
        self.used[ptr] = mem_size
        for h in hooks:
            h.malloc_postprocess(device_id=self.device_id, size=size, mem_size=mem_size,
                                 mem_ptr=ptr, pmem_id=id(self))
        return ptr

    def free(self, ptr):
        mem_size = self.used.pop(ptr)
        hooks = list(memory_hook.get_memory_hooks().values())
        for h in hooks:
            h.free_preprocess(device_id=self.device_id, mem_size=mem_size, mem_ptr=ptr,
                              pmem_id=id(self))
        self.free_list.setdefault(mem_size, []).append(ptr)
        for h in hooks:
            h.free_postprocess(device_id=self.device_id, mem_size=mem_size, mem_ptr=ptr,
                               pmem_id=id(self))

    def used_bytes(self):
        return sum(self.used.values())

    def total_bytes(self):
        return sum(self.used.values()) + sum(len(v) * k for k, v in self.free_list.items())
