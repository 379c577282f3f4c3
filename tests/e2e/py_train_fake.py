#!/usr/bin/env python3
"""A stand-in for tests/gpu/train.py with the fake CUDA runtime.

The same arguments and shape: main() builds a model (tests/e2e/py_fakelib.py
stands in for torch), then a nested step(i) runs it and plants a leak every
step; it ends with one GROUND_TRUTH line. tests/e2e/t_python_gpucheck.sh runs
scripts/gpu-pyframes.sh with it, to try all that script does but torch.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import py_fakelib as nn  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--leak-bytes", type=int, default=0)
    args = ap.parse_args()
    model = nn.Sequential(nn.Linear(1024, 2048), nn.Linear(2048, 1024))
    leak = []

    def step(i):
        acts = model(4096)
        if args.leak_bytes:
            leak.append(nn.full(args.leak_bytes))
        for a in acts:
            a.free()

    for i in range(args.warmup):
        step(i)
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    print("GROUND_TRUTH " + json.dumps({"program": "train_fake", "leak_count": len(leak)}))


main()
