#!/usr/bin/env python3
"""Which results stay the same bits? PyTorch vs samebits for mm, div, sqrt.

    PYTHONPATH=python python3 examples/reproducible_ops.py

For each op it computes the result with PyTorch and with samebits at 1 and
at 2 threads (and on CUDA when a GPU is present), then prints which pairs
agree bit for bit. div and sqrt are single IEEE operations, so every
implementation agrees; a matrix product is a long sum whose order PyTorch's
BLAS chooses per machine, thread count and device, while samebits fixes it
(one fmaf chain over k ascending, docs/CONTRACT.md).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import samebits  # noqa: E402


def bits(t):
    return t.detach().cpu().contiguous().numpy().view(np.uint32)


def same(a, b):
    return a.shape == b.shape and np.array_equal(bits(a), bits(b))


def inputs(seed=0):
    # Philox data, so the inputs themselves are the same everywhere
    a = torch.from_numpy(samebits.random.normal((257, 1031), seed, 1))
    b = torch.from_numpy(samebits.random.normal((1031, 129), seed, 2))
    c = torch.from_numpy(samebits.random.uniform((257, 1031), seed, 3, 0.5, 2.0))
    return a, b, c


OPS = {
    "mm": (lambda a, b, c: torch.mm(a, b), lambda a, b, c: samebits.ops.mm(a, b)),
    "div": (lambda a, b, c: torch.div(a, c), lambda a, b, c: samebits.ops.div(a, c)),
    "sqrt": (lambda a, b, c: torch.sqrt(c), lambda a, b, c: samebits.ops.sqrt(c)),
}


def main():
    a, b, c = inputs()
    cuda = torch.cuda.is_available()
    print("samebits %s (library %s, kernels %s); PyTorch %s%s"
          % (samebits.__version__, samebits.lib_path, samebits.utils.isa(), torch.__version__,
             ", CUDA %s" % torch.cuda.get_device_name(0) if cuda else ", no GPU"))
    for name, (torch_fn, sb_fn) in OPS.items():
        res = {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            samebits.set_num_threads(threads)
            res["torch/%dt" % threads] = torch_fn(a, b, c)
            res["samebits/%dt" % threads] = sb_fn(a, b, c)
        if cuda:
            res["torch/cuda"] = torch_fn(a.cuda(), b.cuda(), c.cuda()).cpu()
            try:
                sb_fn(a.cuda(), b.cuda(), c.cuda())
            except samebits.UnsupportedDeviceError as e:
                print("  samebits on CUDA: %s" % e)
        checks = [("torch 1 vs 2 threads", "torch/1t", "torch/2t"),
                  ("samebits 1 vs 2 threads", "samebits/1t", "samebits/2t"),
                  ("torch vs samebits", "torch/1t", "samebits/1t")]
        if cuda:
            checks.append(("torch CPU vs CUDA", "torch/1t", "torch/cuda"))
        print("%s:" % name)
        for label, x, y in checks:
            print("  %-26s %s" % (label + ":", "same bits" if same(res[x], res[y])
                                  else "DIFFERENT bits"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
