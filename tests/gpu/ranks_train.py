#!/usr/bin/env python3
"""One rank of a small torchrun job, for cumtrace's report of many ranks (scripts/gpu-ranks.sh).

usage: torchrun --standalone --nproc_per_node 2 ranks_train.py [--steps N] [--leak-mib M]

Every rank trains a small MLP on cuda:(LOCAL_RANK % device_count) -- on a machine with one
GPU the ranks share it -- and averages its loss with the other ranks over gloo, with CPU
tensors (NCCL refuses two ranks on one GPU). Each step also holds a scratch tensor of
(RANK + 1) x 16 MiB, so that every rank has a peak of its own. Planted leaks, never freed:

  every rank:   plant_shared   M MiB         (one site, the same in every rank)
  rank 1 only:  plant_extra    2 x M MiB

PYTORCH_NO_CUDA_MEMORY_CACHING=1 is set before torch starts (unless already set), so that
each tensor is one cudaMalloc of its own size and a kept tensor is a leak of exactly its
bytes. The leaks are kept through interpreter shutdown. Prints one line

  GROUND_TRUTH {json}

with the rank, local rank, world size, pid, device and the planted bytes.
"""
import argparse
import json
import os
import sys

os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cupy_jax import pin_forever  # beside this file (tests/gpu, gpu-kit/src)  # noqa: E402

MiB = 1 << 20


def plant_shared(torch, dev, mib):
    return torch.empty(mib * MiB, dtype=torch.uint8, device=dev)


def plant_extra(torch, dev, mib):
    return torch.empty(mib * MiB, dtype=torch.uint8, device=dev)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--leak-mib", type=int, default=8)
    args = ap.parse_args()

    import torch
    import torch.distributed as dist

    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("gloo")
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 512)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512, device=dev)
    leaks = [plant_shared(torch, dev, args.leak_mib)]
    if rank == 1:
        leaks.append(plant_extra(torch, dev, 2 * args.leak_mib))
    loss_avg = 0.0
    for _ in range(args.steps):
        scratch = torch.ones((rank + 1) * 16 * MiB // 4, device=dev)
        loss = (model(x) ** 2).mean() + scratch[0] * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
        del scratch
        t = loss.detach().cpu()
        dist.all_reduce(t)
        loss_avg = float(t) / world
    torch.cuda.synchronize()
    planted = {"shared": args.leak_mib * MiB, "extra": 2 * args.leak_mib * MiB if rank == 1 else 0}
    print("GROUND_TRUTH " + json.dumps({"program": "ranks_train", "rank": rank, "local_rank": local,
                                        "world_size": world, "pid": os.getpid(), "device": str(dev),
                                        "planted": planted, "loss": loss_avg}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    pin_forever(*leaks)


if __name__ == "__main__":
    main()
