"""torch with a captured torch.cuda.CUDAGraph (issue 19 §2 and §6; tests/gpu/graph_check.sh runs it
traced, once with the default caching allocator and once with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, where the tensors made during capture are graph
memory nodes). A 4-layer 2048-wide MLP in bf16: warm-up on a side stream, capture of one forward
pass, 10 replays, then torch.cuda.empty_cache() and the graph's deletion. Prints one line:

  TORCH device=D allocated=A reserved=R max_allocated=MA max_reserved=MR graph_used=U
        graph_used_high=UH graph_reserved=GR graph_reserved_high=GRH mem_used=M

(torch's own figures, cudaDeviceGetGraphMemAttribute's at the end read through the libcudart
that torch loaded, and cudaMemGetInfo's total minus free)."""
import ctypes
import sys

import torch


def graph_attrs(dev):
    rt = None
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError:
            continue
    vals = []
    for attr in range(4):  # UsedMemCurrent, UsedMemHigh, ReservedMemCurrent, ReservedMemHigh
        v = ctypes.c_uint64(0)
        rc = rt.cudaDeviceGetGraphMemAttribute(ctypes.c_int(dev), ctypes.c_int(attr), ctypes.byref(v)) if rt else -1
        vals.append(v.value if rc == 0 else -1)
    return vals


def main():
    dev = 0
    torch.cuda.set_device(dev)
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048, dtype=torch.bfloat16, device="cuda")
                                  for _ in range(4)])
    static_in = torch.randn(512, 2048, dtype=torch.bfloat16, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_out = model(static_in)
    for _ in range(10):
        static_in.copy_(torch.randn_like(static_in))
        g.replay()
    torch.cuda.synchronize()
    checksum = float(static_out.float().sum())
    del static_out, g
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    used, used_high, resv, resv_high = graph_attrs(dev)
    free, total = torch.cuda.mem_get_info(dev)
    print("TORCH device=%d allocated=%d reserved=%d max_allocated=%d max_reserved=%d graph_used=%d "
          "graph_used_high=%d graph_reserved=%d graph_reserved_high=%d mem_used=%d" % (
              dev, torch.cuda.memory_allocated(dev), torch.cuda.memory_reserved(dev),
              torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev),
              used, used_high, resv, resv_high, total - free))
    print("checksum finite: %s" % (checksum == checksum))
    return 0


if __name__ == "__main__":
    sys.exit(main())
