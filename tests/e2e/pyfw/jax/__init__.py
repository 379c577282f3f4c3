# Stand-in for jax (tests/e2e/pyfw/README.md): devices whose memory_stats() the driver sets.
__version__ = "0.0.0+stand-in"

_stats = {0: {"bytes_in_use": 0, "peak_bytes_in_use": 0}, 1: {"bytes_in_use": 0, "peak_bytes_in_use": 0}}


class Device(object):
    def __init__(self, i):
        self.id = i
        self.platform = "gpu"

    def memory_stats(self):
        s = dict(_stats[self.id])
        s.update(num_allocs=1, bytes_limit=1 << 34)
        return s


def local_devices():
    return [Device(i) for i in sorted(_stats)]


def _use(dev, nbytes):
    s = _stats[dev]
    s["bytes_in_use"] = nbytes
    s["peak_bytes_in_use"] = max(s["peak_bytes_in_use"], nbytes)
