# A stand-in for torch in tests/e2e/py_train_fake.py: tensors of device
# memory from the fake CUDA runtime through ctypes.CDLL (which, like torch's
# operators, releases the GIL before allocating), and modules whose __call__
# goes through _call_impl to forward, as torch.nn.Module's does.
import ctypes

lib = ctypes.CDLL("libcudart.so.13")


class Tensor:
    def __init__(self, nbytes):
        self.ptr = ctypes.c_void_p()
        if lib.cudaMalloc(ctypes.byref(self.ptr), nbytes):
            raise MemoryError(nbytes)

    def free(self):
        lib.cudaFree(self.ptr)


def full(nbytes):
    return Tensor(nbytes)


class Module:
    def __call__(self, *args):
        return self._call_impl(*args)

    def _call_impl(self, *args):
        return self.forward(*args)


class Linear(Module):
    def __init__(self, n_in, n_out):
        self.weight = Tensor(n_in * n_out * 4)
        self.n_out = n_out

    def forward(self, batch):
        return Tensor(batch * self.n_out * 4)


class Sequential(Module):
    def __init__(self, *layers):
        self.layers = layers

    def forward(self, batch):
        return [layer(batch) for layer in self.layers]
