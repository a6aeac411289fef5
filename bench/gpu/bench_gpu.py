#!/usr/bin/env python3
"""`make bench-gpu`: samebits on its OpenCL device next to PyTorch on the
same device, from one run.

bench_gpu (bench/gpu/bench_gpu.c) times SGEMM (n x n times n x n) and the
LeNet-5 training step (batch 100: forward, cross-entropy, backward, Adam) on
the OpenCL device and checks the device's products against the CPU's bits.
This script times the same work in PyTorch on the same device: CUDA (cuBLAS,
TF32 off) when the OpenCL device is a GPU and PyTorch sees one, else the CPU.
Under PoCL the OpenCL device *is* this CPU, so the figures are CPU figures
and the ratio compares samebits' GPU kernels run by PoCL with PyTorch's CPU
kernels: a check that the benchmark runs, not a GPU measurement.

Environment: SB_BUILD (default build), SB_BENCH_GPU_SIZES (default
1024,2048,4096,8192 on a GPU, 256,512,1024 under PoCL), SB_BENCH_GPU_STEPS
(default 10 on a GPU, 3 under PoCL)."""
import os, subprocess, sys, time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from bench_lenet import lenet5, load  # noqa: E402  (the same model and data)

BUILD = os.environ.get("SB_BUILD", "build")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def torch_sgemm_ms(n, device):
    g = torch.Generator().manual_seed(7)
    a = (torch.rand(n, n, generator=g) * 2 - 1).to(device)
    b = (torch.rand(n, n, generator=g) * 2 - 1).to(device)
    best, spent, r = 1e30, 0.0, 0
    torch.matmul(a, b)
    sync(device)
    while r < 20 and (r < 2 or spent < 2000.0):
        t0 = time.perf_counter()
        torch.matmul(a, b).cpu()  # brought back, as samebits' product is
        t = (time.perf_counter() - t0) * 1e3
        spent, best, r = spent + t, min(best, t), r + 1
    return best


def torch_lenet_step_ms(device, steps, warmup=2):
    torch.manual_seed(0)
    x, y = load(True)
    model = lenet5().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for s in range(warmup + steps):
        b = (s * 100) % (x.shape[0] - 100)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[b:b + 100].to(device)), y[b:b + 100].to(device))
        loss.backward()
        opt.step()
        loss.item()  # the loss brought back, as samebits' is
        if s >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    binary = os.path.join(BUILD, "bench", "gpu", "bench_gpu")
    probe = subprocess.run([binary, "--probe"], capture_output=True, text=True, check=True)
    name = probe.stdout.split(" ", 1)[1].strip()
    if probe.stdout.startswith("device none"):
        print("no OpenCL device: " + name)
        return
    pocl = "Portable Computing Language" in name
    sizes = os.environ.get("SB_BENCH_GPU_SIZES", "256,512,1024" if pocl else "1024,2048,4096,8192")
    steps = int(os.environ.get("SB_BENCH_GPU_STEPS", "3" if pocl else "10"))
    run = subprocess.run([binary, "--sizes", sizes, "--steps", str(steps)], capture_output=True,
                         text=True)
    lines = run.stdout.splitlines()
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        sys.exit("bench_gpu failed (exit %d)" % run.returncode)
    gpu = not pocl and torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"OpenCL device: {name}")
    print(f"PyTorch {torch.__version__} on {device}" +
          (f" ({torch.cuda.get_device_name()})" if gpu else f", {torch.get_num_threads()} threads"))
    if pocl:
        print("PoCL runs OpenCL on this CPU: these are CPU figures (samebits' GPU kernels under "
              "PoCL against PyTorch's CPU kernels), not GPU measurements.")
    print(f"\n{'SGEMM n':>8} {'samebits ms':>12} {'GFLOP/s':>8} {'PyTorch ms':>11} "
          f"{'GFLOP/s':>8} {'PyTorch/samebits':>17}  bits vs CPU")
    for line in lines[1:]:
        f = line.split()
        if f[0] == "sgemm":
            n, ms, bits = int(f[2]), float(f[4]), f[8]
            pt = torch_sgemm_ms(n, device)
            flop = 2.0 * n ** 3
            print(f"{n:>8} {ms:>12.2f} {flop / ms / 1e6:>8.1f} {pt:>11.2f} {flop / pt / 1e6:>8.1f} "
                  f"{pt / ms:>16.2f}x  {bits}")
        elif f[0] == "lenet5_step_ms":
            ms = float(f[1])
            pt = torch_lenet_step_ms(device, steps)
            print(f"\nLeNet-5 training step, batch 100: samebits {ms:.2f} ms, PyTorch {pt:.2f} ms, "
                  f"PyTorch/samebits {pt / ms:.2f}x")


if __name__ == "__main__":
    main()
