#!/usr/bin/env python3
"""LeNet-5 on Fashion-MNIST: samebits against PyTorch's CPU build, one run.

1. The training step (batch 100: forward, cross-entropy, backward, Adam) at
   1 and 2 threads: samebits through bench_lenet_step, PyTorch in this
   process with torch.set_num_threads(T). Median ms and the ratio.
2. The whole default run, 2 epochs plus the test-set evaluation:
   `samebits train` against the same loop in PyTorch, wall time and ratio
   (skipped with --step-only).

The build directory comes from $SB_BUILD (default: build)."""
import gzip, os, struct, subprocess, sys, time

import numpy as np
import torch
import torch.nn as nn

BUILD = os.environ.get("SB_BUILD", "build")
DATA = "/usr/share/datasets/fashion-mnist"


def lenet5():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def read_idx(name):
    path = os.path.join(DATA, name)
    opener = gzip.open if os.path.exists(path + ".gz") else open
    with opener(path + ".gz" if opener is gzip.open else path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(train):
    prefix = "train" if train else "t10k"
    try:
        x = read_idx(f"{prefix}-images-idx3-ubyte").astype(np.float32) / np.float32(255)
        y = read_idx(f"{prefix}-labels-idx1-ubyte").astype(np.int64)
    except OSError:
        n = 1000
        x = np.random.default_rng(1).random((n, 28, 28), dtype=np.float32)
        y = np.arange(n) % 10
    return torch.from_numpy(x.copy()).unsqueeze(1), torch.from_numpy(y.copy())


def torch_step_ms(threads, steps=30, warmup=3):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load(True)
    model = lenet5()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for s in range(warmup + steps):
        b = (s * 100) % (x.shape[0] - 100)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[b:b + 100]), y[b:b + 100])
        loss.backward()
        opt.step()
        if s >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def samebits_step_ms(threads, steps=30):
    out = subprocess.run([os.path.join(BUILD, "bench", "bench_lenet_step"), "--threads",
                          str(threads), "--steps", str(steps)],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[1]), out[out.index("isa") + 1]


def torch_full_run_s(threads, epochs=2):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    x, y = load(True)
    xt, yt = load(False)
    model = lenet5()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(x.shape[0], generator=g)
        for b in range(0, x.shape[0], 100):
            idx = perm[b:b + 100]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(xt[b:b + 1000]).argmax(1) == yt[b:b + 1000]).sum())
                      for b in range(0, xt.shape[0], 1000))
    return time.perf_counter() - t0, correct / xt.shape[0]


def samebits_full_run_s(threads):
    t0 = time.perf_counter()
    out = subprocess.run([os.path.join(BUILD, "samebits"), "train", "--threads", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    elapsed = time.perf_counter() - t0
    acc = [l for l in out.splitlines() if "accuracy" in l]
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                          "lenet5-default.txt")
    if os.path.exists(golden):
        with open(golden) as f:
            same = f.read() == out
        print("  samebits train output: " + ("identical to tests/golden/lenet5-default.txt"
                                             if same else "DIFFERS from the golden run"))
    return elapsed, acc[0].split()[-1] if acc else "?"


def main():
    full = "--step-only" not in sys.argv
    print(f"LeNet-5 training step, batch 100 (torch {torch.__version__})")
    print(f"{'threads':>8} {'samebits ms':>12} {'PyTorch ms':>11} {'PyTorch/samebits':>17}  isa")
    for t in (1, 2):
        sb, isa = samebits_step_ms(t)
        pt = torch_step_ms(t)
        print(f"{t:>8} {sb:>12.2f} {pt:>11.2f} {pt / sb:>16.2f}x  {isa}")
    if full:
        t = os.cpu_count() or 1
        t = min(t, 2)
        print(f"\nfull default run (2 epochs + test evaluation), {t} threads")
        sb_s, sb_acc = samebits_full_run_s(t)
        pt_s, pt_acc = torch_full_run_s(t)
        print(f"  samebits train: {sb_s:7.1f} s (accuracy {sb_acc})")
        print(f"  PyTorch       : {pt_s:7.1f} s (accuracy {pt_acc:.4f})")
        print(f"  PyTorch/samebits: {pt_s / sb_s:.2f}x")


if __name__ == "__main__":
    main()
