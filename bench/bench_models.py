#!/usr/bin/env python3
"""Whole models: samebits against PyTorch's CPU build, one run.

For each model and thread count (1 and 2): the training step (forward,
cross-entropy, backward, SGD with momentum) and the inference forward (eval
mode, no grad) of the same model, once converted to samebits (strict=True)
and once as plain PyTorch in this process; median ms over the timed steps
and the ratio PyTorch/samebits (above 1: samebits is faster). After the
timed steps the samebits parameters must have the same hash at every thread
count (the benchmark fails otherwise); the last line of each model says
whether PyTorch's did.

The models (random init from samebits.init_module, no downloads):
  resnet18       torchvision, images (N,3,S,S), default batch 128 at 32x32
  mobilenet_v2   torchvision, images (N,3,S,S), default batch 128 at 32x32
  lstm           nn.LSTM(64, 256, 2 layers, batch_first) over (N,T=64,64),
                 its last step into nn.Linear(256, 10), default batch 32

    SB_BUILD=build python3 bench/bench_models.py [--models resnet18,lstm]
        [--batch N] [--size S] [--seq T] [--steps 3] [--threads 1,2]

`make bench` runs every model at its default size under the PyTorch of the
project's PyPI test environment when it exists (scripts/bench.sh); resnet18's
224x224 batch-16 figure is `--models resnet18 --batch 16 --size 224`."""
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

CLASSES = 10


class LSTMClassifier(torch.nn.Module):
    """A sequence classifier: the LSTM's output at the last time step, then
    a linear layer. x is (N, T, features)."""

    def __init__(self, features=64, hidden=256, layers=2):
        super().__init__()
        self.lstm = torch.nn.LSTM(features, hidden, num_layers=layers, batch_first=True)
        self.head = torch.nn.Linear(hidden, CLASSES)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def image_model(name):
    def build(a, gen):
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=CLASSES)
        x = torch.rand(a.batch or 128, 3, a.size, a.size, generator=gen)
        desc = f"batch {x.shape[0]}, 3x{a.size}x{a.size}"
        return model, x, desc
    return build


def lstm_model(a, gen):
    model = LSTMClassifier()
    x = torch.rand(a.batch or 32, a.seq, 64, generator=gen)
    desc = f"batch {x.shape[0]}, {a.seq} steps of 64 features, hidden 256, 2 layers"
    return model, x, desc


MODELS = {
    "resnet18": image_model("resnet18"),
    "mobilenet_v2": image_model("mobilenet_v2"),
    "lstm": lstm_model,
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batch", type=int, default=0, help="batch size (0: the model's default)")
    p.add_argument("--size", type=int, default=32, help="image side of the image models")
    p.add_argument("--seq", type=int, default=64, help="sequence length of the LSTM")
    p.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    p.add_argument("--threads", default="1,2")
    a = p.parse_args()
    a.models = a.models.split(",")
    unknown = [m for m in a.models if m not in MODELS]
    if unknown:
        p.error(f"--models: unknown {unknown}; known: {list(MODELS)}")
    if a.batch == 1 or a.batch < 0 or a.size < 32 or a.seq < 1 or a.steps < 1:
        p.error("--batch must be >= 2 (batch norm), --size >= 32, --seq >= 1, --steps >= 1")
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


def bench_model(name, a):
    """Prints one model's table; True when samebits' parameters agree at
    every thread count."""
    gen = torch.Generator().manual_seed(0)
    model, x, desc = MODELS[name](a, gen)
    y = torch.randint(0, CLASSES, (x.shape[0],), generator=gen)
    base = samebits.init_module(model, 0)
    print(f"{name}, {desc}, SGD(lr=0.01, momentum=0.9); torch {torch.__version__}, "
          f"samebits isa {samebits.utils.isa()}; median of {a.steps} steps")
    print(f"{'threads':>7} {'':>9} {'samebits ms':>12} {'PyTorch ms':>11} {'PyTorch/samebits':>17}")
    hashes = {"samebits": set(), "PyTorch": set()}
    for t in a.threads:
        # samebits computes on its own threads; PyTorch's intra-op threads
        # only move data for it (strict mode), and at t > 1 they spin
        # between parallel regions on the cores samebits' threads need
        torch.set_num_threads(1)
        samebits.set_num_threads(t)
        samebits.manual_seed(0)
        sb_model = samebits.from_torch_module(copy.deepcopy(base), strict=True)
        sb = run(sb_model, samebits.optim.SGD(sb_model.parameters(), lr=0.01, momentum=0.9),
                 samebits.nn.functional.cross_entropy, x, y, a.steps)
        torch.set_num_threads(t)
        pt_model = copy.deepcopy(base)
        pt = run(pt_model, torch.optim.SGD(pt_model.parameters(), lr=0.01, momentum=0.9),
                 torch.nn.functional.cross_entropy, x, y, a.steps)
        for label, i in (("train", 0), ("inference", 1)):
            print(f"{t:>7} {label:>9} {sb[i]:>12.1f} {pt[i]:>11.1f} {pt[i] / sb[i]:>16.2f}x")
        hashes["samebits"].add(sb[2])
        hashes["PyTorch"].add(pt[2])
    same_sb = len(hashes["samebits"]) == 1
    print(f"{name} parameters after the steps at {a.threads} threads: samebits "
          f"{'identical' if same_sb else 'DIFFERENT'}, PyTorch "
          f"{'identical' if len(hashes['PyTorch']) == 1 else 'different'}")
    return same_sb


def main():
    a = parse_args()
    ok = [bench_model(name, a) for name in a.models]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
