#!/usr/bin/env python3
"""Every way in from Python ctypes, next to its untraced twin (tests/e2e/t_paths_twin.sh).

The interpreter links no CUDA library. ctypes.CDLL loads with RTLD_LOCAL:
libcttwin.so (argv[1]), which links libcudart and libcuda and makes every
traced call by export (tests/e2e/progs/twin_calls.h); libcudart.so.13 and
libcuda.so.1, whose functions ctypes finds with dlsym on their handles;
cudaGetDriverEntryPoint and cuGetProcAddress_v2 (cudaVersion 12000, each
flag) hand out driver functions called through ctypes. Lines as in
twin_calls.h: "call EVENT rc=R errno=E" for each traced call, never a raw
pointer; errno is set to 4242 before each call.

usage: paths_twin.py LIBCTTWIN
"""
import ctypes
import sys

ERRNO = 4242
MIB = 1024 * 1024
c_void_pp = ctypes.POINTER(ctypes.c_void_p)
libc = ctypes.CDLL(None)


def flush():
    sys.stdout.flush()
    libc.fflush(None)


def call(what, name, fn, *args):
    ctypes.set_errno(ERRNO)
    rc = fn(*args)
    print(f"{what} {name} rc={rc} errno={ctypes.get_errno()}")
    return rc


def state(p):
    return "set" if p.value else "null"


def probe(when):
    """What the global handle finds (ctypes.CDLL(None) is dlopen(NULL))."""
    glob = ctypes.CDLL(None, use_errno=True)
    found = [n for n in ("cudaMalloc", "cudaFree", "cuMemAlloc_v2", "cuGetProcAddress_v2",
                         "cudaGetDriverEntryPoint") if hasattr(glob, n)]
    print(f"== probe {when}: found {found}")


def runtime(rt):
    print("== ctypes: dlsym(RTLD_LOCAL libcudart)")
    for n in ("cudaMalloc", "cudaMallocHost"):
        getattr(rt, n).argtypes = [c_void_pp, ctypes.c_size_t]
    rt.cudaMallocPitch.argtypes = [c_void_pp, ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                                   ctypes.c_size_t]
    for n in ("cudaFree", "cudaFreeHost"):
        getattr(rt, n).argtypes = [ctypes.c_void_p]
    d, h, p = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    pitch = ctypes.c_size_t(7)
    call("call", "cudaMalloc", rt.cudaMalloc, ctypes.byref(d), MIB)
    print(f"  ptr={state(d)}")
    call("call", "cudaFree", rt.cudaFree, d)
    call("call", "cudaFree", rt.cudaFree, 0x1234)
    call("call", "cudaMallocHost", rt.cudaMallocHost, ctypes.byref(h), 4096)
    print(f"  ptr={state(h)}")
    call("call", "cudaFreeHost", rt.cudaFreeHost, h)
    call("call", "cudaMallocPitch", rt.cudaMallocPitch, ctypes.byref(p), ctypes.byref(pitch), 100, 10)
    print(f"  ptr={state(p)} pitch={pitch.value}")
    call("call", "cudaFree", rt.cudaFree, p)


ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, use_errno=True)
FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, use_errno=True)


def driver_pair(label, alloc, free):
    """cuMemAlloc_v2 and cuMemFree_v2 as handed out, called through ctypes."""
    print(f"== ctypes: {label}")
    d = ctypes.c_uint64(0x10)
    call("call", "cuMemAlloc_v2", ALLOC(alloc), ctypes.byref(d), 2 * MIB)
    print(f"  ptr={'set' if d.value not in (0, 0x10) else d.value}")
    call("call", "cuMemFree_v2", FREE(free), d.value)
    call("call", "cuMemFree_v2", FREE(free), 0x1234)


def driver(cu, rt):
    print("== ctypes: driver context")
    dev, ctx = ctypes.c_int(-1), ctypes.c_void_p()
    call("aux", "cuInit", cu.cuInit, 0)
    call("aux", "cuDeviceGet", cu.cuDeviceGet, ctypes.byref(dev), 0)
    call("aux", "cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain, ctypes.byref(ctx), dev)
    call("aux", "cuCtxSetCurrent", cu.cuCtxSetCurrent, ctx)
    cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    addr = ctypes.cast
    driver_pair("dlsym(RTLD_LOCAL libcuda)", addr(cu.cuMemAlloc_v2, ctypes.c_void_p).value,
                addr(cu.cuMemFree_v2, ctypes.c_void_p).value)

    gpa = cu.cuGetProcAddress_v2
    gpa.argtypes = [ctypes.c_char_p, c_void_pp, ctypes.c_int, ctypes.c_uint64,
                    ctypes.POINTER(ctypes.c_int)]
    for flags in (0, 1, 2):
        fns = []
        for base in (b"cuMemAlloc", b"cuMemFree"):
            p, st = ctypes.c_void_p(), ctypes.c_int(77)
            call("aux", f"cuGetProcAddress_v2({base.decode()}, 12000, {flags})", gpa, base,
                 ctypes.byref(p), 12000, flags, ctypes.byref(st))
            print(f"  status={st.value} pfn={state(p)}")
            fns.append(p.value)
        driver_pair(f"cuGetProcAddress_v2 flags={flags}", *fns)

    gep = rt.cudaGetDriverEntryPoint
    gep.argtypes = [ctypes.c_char_p, c_void_pp, ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int)]
    fns = []
    for base in (b"cuMemAlloc", b"cuMemFree"):
        p, st = ctypes.c_void_p(), ctypes.c_int(77)
        call("aux", f"cudaGetDriverEntryPoint({base.decode()})", gep, base, ctypes.byref(p), 0,
             ctypes.byref(st))
        print(f"  status={st.value} pfn={state(p)}")
        fns.append(p.value)
    driver_pair("cudaGetDriverEntryPoint", *fns)


def main():
    probe("nothing global")
    lib = ctypes.CDLL(sys.argv[1], use_errno=True)
    flush()
    lib.twin_export(b"ctypes: export from RTLD_LOCAL library")
    flush()
    rt = ctypes.CDLL("libcudart.so.13", use_errno=True)
    cu = ctypes.CDLL("libcuda.so.1", use_errno=True)
    runtime(rt)
    driver(cu, rt)
    probe("after loading")
    flush()


if __name__ == "__main__":
    main()
