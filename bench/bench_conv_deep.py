#!/usr/bin/env python3
"""conv2d on ResNet-18's CIFAR-size shapes: samebits against PyTorch, one run.

Runs bench_conv_deep --csv (samebits' fast op at 1 and 2 threads, each
result checked against the reference kernel's bits), times the same layers
and passes in PyTorch in this process (torch.set_num_threads(T), best of
several runs; the gradients through aten's convolution_backward, one output
at a time), and prints the ratios PyTorch ms / samebits ms (above 1: samebits
is faster). Layer names encode the geometry: "C->O KxK[/S] @H", padding K//2.

The build directory comes from $SB_BUILD (default: build)."""
import os, re, subprocess, sys, time

import torch

BUILD = os.environ.get("SB_BUILD", "build")
BATCH = 32
MIN_S = 0.3


def geometry(name):
    m = re.search(r"(\d+)->(\d+) (\d+)x\d+(?:/(\d+))? @(\d+)", name)
    c, o, k, s, h = (int(v) if v else 1 for v in m.groups())
    return c, o, k, s, h


def best_ms(fn):
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or (spent < MIN_S and runs < 200):
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        best, spent, runs = min(best, t), spent + t, runs + 1
    return best * 1e3


def torch_ms(name, pass_, threads):
    torch.set_num_threads(threads)
    c, o, k, s, h = geometry(name)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(BATCH, c, h, h, generator=g) - 0.5
    w = torch.rand(o, c, k, k, generator=g) - 0.5
    y = torch.nn.functional.conv2d(x, w, stride=s, padding=k // 2)
    dy = torch.rand(y.shape, generator=g) - 0.5
    if pass_ == "forward":
        fn = lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=k // 2)
    else:
        mask = [pass_ == "input grad", pass_ == "weight grad", False]
        fn = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [k // 2] * 2,
                                                         [1, 1], False, [0, 0], 1, mask)
    with torch.no_grad():
        return best_ms(fn)


def main():
    quick = "--quick" in sys.argv
    global MIN_S
    if quick:
        MIN_S = 0.05
    cmd = [os.path.join(BUILD, "bench", "bench_conv_deep"), "--csv"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    rows = [line.split(",") for line in out.stdout.splitlines() if line.count(",") == 4]
    if not rows:
        sys.exit("bench_conv_deep.py: no output from %s: %s" % (cmd[0], out.stderr))
    print("conv2d, ResNet-18 at 32x32, batch %d: PyTorch %s / samebits, best ms (ratio > 1: "
          "samebits faster)" % (BATCH, torch.__version__))
    print("%-22s %-12s %8s %8s %6s %8s %8s %6s  %s" % ("layer", "pass", "torch 1t", "sb 1t", "x 1t",
                                                      "torch 2t", "sb 2t", "x 2t", "bits"))
    for name, pass_, sb1, sb2, bits in rows:
        t1, t2 = torch_ms(name, pass_, 1), torch_ms(name, pass_, 2)
        sb1, sb2 = float(sb1), float(sb2)
        print("%-22s %-12s %8.3f %8.3f %6.2f %8.3f %8.3f %6.2f  %s" %
              (name, pass_, t1, sb1, t1 / sb1, t2, sb2, t2 / sb2, bits))
    sys.exit(out.returncode)


if __name__ == "__main__":
    main()
