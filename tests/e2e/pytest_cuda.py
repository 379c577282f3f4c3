"""Tests for the pytest plugin (tests/e2e/t_pytest.sh runs pytest on this file).

CUDA is the fake runtime (tests/fake) through ctypes; "torch" is the stand-in for
PyTorch's caching allocator (tests/fake/c10_cuda.cc) in CT_TORCH_SITE/torch/lib, as
in a wheel. Each test's expected verdict under --cumtrace is in its docstring's
first word; the line numbers t_pytest.sh expects are the lines marked # SITE-...
"""
import ctypes
import os

import pytest

MIB = 1 << 20
rt = ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)  # as torch loads it
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
kept = []  # what a leaking test keeps, freed by nobody


def malloc(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), n) == 0
    return p.value


def free(p):
    assert rt.cudaFree(p) == 0


@pytest.mark.limit_cuda_leaks("0B")
def test_clean():
    """passes: everything it allocates is freed"""
    free(malloc(4 * MIB))


@pytest.mark.limit_cuda_leaks("0B")
def test_leaky():
    """fails: keeps 4 MiB"""
    kept.append(malloc(4 * MIB))  # SITE-LEAKY


@pytest.mark.limit_cuda_memory("8 MiB")
def test_over_memory():
    """fails: 12 MiB at once, although all of it is freed"""
    blocks = [malloc(4 * MIB) for _ in range(3)]  # SITE-OVER
    for p in blocks:
        free(p)


@pytest.mark.limit_cuda_memory("12MB")
@pytest.mark.limit_cuda_leaks(0)
def test_within_limits():
    """passes: 12 MiB at once is the limit, not over it"""
    blocks = [malloc(4 * MIB) for _ in range(3)]
    for p in blocks:
        free(p)


def test_unmarked_leak():
    """passes (no marker): listed in the terminal summary as leaving 2 MiB"""
    kept.append(malloc(2 * MIB))  # SITE-UNMARKED


torch = None


def torch_alloc(n):
    global torch
    if torch is None:
        torch = ctypes.CDLL(os.path.join(os.environ["CT_TORCH_SITE"], "torch", "lib", "libc10_cuda.so"))
        torch.fake_torch_alloc.restype = ctypes.c_void_p
        torch.fake_torch_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        torch.fake_torch_free.argtypes = [ctypes.c_void_p]
        assert torch.fake_torch_init() == 0
    p = torch.fake_torch_alloc(n, 0)
    assert p
    return p


@pytest.mark.limit_cuda_leaks("0B")
def test_torch_cached():
    """passes: the tensor is freed; the segment the caching allocator keeps is no leak"""
    p = torch_alloc(3 * MIB)
    assert torch.fake_torch_free(p) == 0


@pytest.mark.limit_cuda_leaks("0B")
def test_torch_kept():
    """fails: a tensor still allocated (in the segment cached by the test before)"""
    kept.append(torch_alloc(2 * MIB))  # SITE-TORCH
