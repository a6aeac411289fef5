#!/usr/bin/env python3
"""torchvision's resnet18: samebits against PyTorch's CPU build, one run.

For each thread count (1 and 2): the training step (forward, cross-entropy,
backward, SGD with momentum) and the inference forward (eval mode, no
grad) of the same model, once converted to samebits (strict=True) and once
as plain PyTorch in this process; median ms over the timed steps and the
ratio PyTorch/samebits (above 1: samebits is faster). After the timed steps
the samebits parameters must have the same hash at every thread count (the
benchmark fails otherwise); the PyTorch column says whether PyTorch's did.

    SB_BUILD=build python3 bench/bench_resnet18.py [--batch 128] [--size 32]
        [--steps 3] [--threads 1,2]

`make bench` runs it at CIFAR size (batch 128, 32x32) under the PyTorch of
the project's PyPI test environment when it exists (scripts/bench.sh); the
224x224 batch-16 figure is `--batch 16 --size 224`."""
import argparse
import copy
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("SB_BUILD", os.path.join(HERE, "..", "build"))
os.environ.setdefault("SAMEBITS_LIB", os.path.join(BUILD, "libsamebits.so"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import samebits  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    p.add_argument("--threads", default="1,2")
    a = p.parse_args()
    if a.batch < 2 or a.size < 32 or a.steps < 1:
        p.error("--batch must be >= 2 (batch norm), --size >= 32, --steps >= 1")
    a.threads = [int(t) for t in a.threads.split(",")]
    return a


def timed(fn, steps):
    fn()                                     # warm-up: allocations, packing
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run(model, opt, loss_fn, x, y, steps):
    """(train step ms, inference ms, parameter hash after the steps)."""
    def train_step():
        model.train()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    def infer():
        model.eval()
        with torch.no_grad():
            model(x)
    train_ms = timed(train_step, steps)
    infer_ms = timed(infer, steps)
    return train_ms, infer_ms, samebits.get_hash([p.detach() for p in model.parameters()])


def main():
    import torchvision
    a = parse_args()
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(a.batch, 3, a.size, a.size, generator=gen)
    y = torch.randint(0, 10, (a.batch,), generator=gen)
    base = samebits.init_module(torchvision.models.resnet18(num_classes=10), 0)
    print(f"resnet18, batch {a.batch}, 3x{a.size}x{a.size}, SGD(lr=0.01, momentum=0.9); "
          f"torch {torch.__version__}, samebits isa {samebits.utils.isa()}; median of {a.steps} steps")
    print(f"{'threads':>7} {'':>9} {'samebits ms':>12} {'PyTorch ms':>11} {'PyTorch/samebits':>17}")
    hashes = {"samebits": set(), "PyTorch": set()}
    for t in a.threads:
        torch.set_num_threads(t)
        samebits.set_num_threads(t)
        samebits.manual_seed(0)
        sb_model = samebits.from_torch_module(copy.deepcopy(base), strict=True)
        sb = run(sb_model, samebits.optim.SGD(sb_model.parameters(), lr=0.01, momentum=0.9),
                 samebits.nn.functional.cross_entropy, x, y, a.steps)
        pt_model = copy.deepcopy(base)
        pt = run(pt_model, torch.optim.SGD(pt_model.parameters(), lr=0.01, momentum=0.9),
                 torch.nn.functional.cross_entropy, x, y, a.steps)
        for name, i in (("train", 0), ("inference", 1)):
            print(f"{t:>7} {name:>9} {sb[i]:>12.1f} {pt[i]:>11.1f} {pt[i] / sb[i]:>16.2f}x")
        hashes["samebits"].add(sb[2])
        hashes["PyTorch"].add(pt[2])
    same_pt = len(hashes["PyTorch"]) == 1
    print(f"parameters after the steps at {a.threads} threads: samebits "
          f"{'identical' if len(hashes['samebits']) == 1 else 'DIFFERENT'}, PyTorch "
          f"{'identical' if same_pt else 'different'}")
    return 0 if len(hashes["samebits"]) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
