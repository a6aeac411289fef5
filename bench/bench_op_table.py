#!/usr/bin/env python3
"""The op table of the performance issue: samebits against PyTorch's CPU
build, one run.

Each row is a PyTorch module (convolutions of ResNet/MobileNet shapes,
softmax, GELU, layer norm, a linear layer), run as it is and converted to
samebits (strict=True), at 1 and 2 threads: best-of-N ms of the forward
(no grad) and, where the row has one, of the backward (forward + backward
minus forward), and the ratio PyTorch/samebits (above 1: samebits is
faster). Every samebits output and input gradient must have the bits of
the scalar ISA level at 1 thread (the fast kernels reproduce the contract
at every level and thread count); the benchmark fails otherwise.

    SB_BUILD=build python3 bench/bench_op_table.py [--repeat 5] [--threads 1,2]
        [--rows conv3x3,softmax]
"""
import argparse
import copy
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("SB_BUILD", os.path.join(HERE, "..", "build"))
os.environ.setdefault("SAMEBITS_LIB", os.path.join(BUILD, "libsamebits.so"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import samebits  # noqa: E402

nn = torch.nn


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


# name: (what the issue calls it, module, input shape, backward timed)
ROWS = {
    "conv3x3": ("3x3 conv 64->64 at 56x56, batch 8", lambda: nn.Conv2d(64, 64, 3, padding=1),
                (8, 64, 56, 56), True),
    "conv3x3s2": ("3x3 stride-2 conv 64->128 at 56x56", lambda: nn.Conv2d(64, 128, 3, 2, 1),
                  (8, 64, 56, 56), True),
    "conv1x1": ("1x1 conv 256->64 at 56x56", lambda: nn.Conv2d(256, 64, 1), (8, 256, 56, 56), True),
    "stem7x7": ("7x7 stride-2 stem 3->64 at 224x224", lambda: nn.Conv2d(3, 64, 7, 2, 3),
                (8, 3, 224, 224), True),
    "depthwise": ("depthwise 3x3, 96 channels at 56x56",
                  lambda: nn.Conv2d(96, 96, 3, padding=1, groups=96), (8, 96, 56, 56), True),
    "softmax": ("softmax 96x128x128 (last dim)", Softmax, (96, 128, 128), False),
    "gelu": ("GELU 512x3072", nn.GELU, (512, 3072), False),
    "layernorm": ("layer norm 512x768", lambda: nn.LayerNorm(768), (512, 768), False),
    "linear": ("linear 512x768->3072", lambda: nn.Linear(768, 3072), (512, 768), True),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="timed calls per figure (best is kept)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rows", default=",".join(ROWS))
    a = p.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    a.rows = a.rows.split(",")
    bad = [r for r in a.rows if r not in ROWS]
    if bad or a.repeat < 1:
        p.error("--rows: unknown %s (known: %s); --repeat >= 1" % (bad, list(ROWS)))
    return a


def best_ms(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def timings(module, x, dy, backward, repeat):
    """(forward ms, backward ms or None, output, input gradient or None)."""
    def fwd():
        with torch.no_grad():
            return module(x)

    def fwd_bwd():
        xg = x.detach().requires_grad_(True)
        out = module(xg)
        out.backward(dy)
        return out, xg.grad
    f = best_ms(fwd, repeat)
    b = best_ms(fwd_bwd, repeat) - f if backward else None
    out, dx = fwd_bwd() if backward else (fwd(), None)
    return f, b, out, dx


def main():
    a = parse_args()
    gen = torch.Generator().manual_seed(0)
    best_isa = samebits.utils.isa()
    print(f"torch {torch.__version__}, samebits isa {best_isa}; best of {a.repeat}; "
          f"ratio = PyTorch ms / samebits ms")
    print(f"{'op':<40} {'thr':>3} {'pass':>8} {'samebits':>9} {'PyTorch':>9} {'ratio':>7}")
    ok = True
    for name in a.rows:
        what, make, shape, backward = ROWS[name]
        base = samebits.init_module(make(), 0)
        x = torch.rand(shape, generator=gen) * 4 - 2
        samebits.manual_seed(0)
        sb = samebits.from_torch_module(copy.deepcopy(base), strict=True)
        pt = copy.deepcopy(base)
        dy = torch.rand(tuple(pt(x).shape), generator=gen) - 0.5
        # the reference bits: the scalar level at 1 thread
        samebits.utils.set_isa("scalar")
        samebits.set_num_threads(1)
        _, _, ref_out, ref_dx = timings(sb, x, dy, backward, 1)
        ref = samebits.get_hash([ref_out] + ([ref_dx] if backward else []))
        samebits.utils.set_isa(best_isa)
        for t in a.threads:
            # PyTorch's threads only move data for samebits' modules, and at
            # t > 1 they spin between regions on the cores samebits needs
            torch.set_num_threads(1)
            samebits.set_num_threads(t)
            sf, sbk, out, dx = timings(sb, x, dy, backward, a.repeat)
            torch.set_num_threads(t)
            pf, pbk, _, _ = timings(pt, x, dy, backward, a.repeat)
            same = samebits.get_hash([out] + ([dx] if backward else [])) == ref
            ok &= same
            flag = "" if same else "  DIFFERENT BITS from the scalar level"
            print(f"{what:<40} {t:>3} {'forward':>8} {sf:>9.2f} {pf:>9.2f} {pf / sf:>6.2f}x{flag}")
            if backward:
                print(f"{'':<40} {t:>3} {'backward':>8} {sbk:>9.2f} {pbk:>9.2f} "
                      f"{pbk / sbk:>6.2f}x")
    print("every samebits result has the scalar level's bits" if ok else
          "SOME SAMEBITS RESULTS DIFFER FROM THE SCALAR LEVEL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
